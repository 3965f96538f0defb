"""Features made of several views and the session: your own Functions (files, editor,
inspector) and the classroom (presentation, zoom, themes, session files, export)."""
