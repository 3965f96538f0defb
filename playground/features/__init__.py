"""Features made of several views and the session: your own Functions (``byof``: files,
editor, inspector, hot reload) and the classroom (``classroom``: zoom, themes, presentation,
session files, export), each a package of small parts. The main window makes them and hands
each the views, menus and :class:`~playground.features.commands.Commands` it works with; a
feature never looks for widgets itself."""
