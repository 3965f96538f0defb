"""One widget per pane and the helper modules the panes share.

Panes: ``jacobian/`` (the heatmaps, a package of its parts), ``loss_plot``, ``form``,
``code_view``, ``editor``, ``inspector_view``, ``picker``, ``error_banner``, ``explainer``,
``shortcuts``. Helpers: ``fonts``, ``fitting`` (text that fits), ``pacing`` (paced repaints),
``theme``, ``zoom``, ``export``, ``fields`` (checked text fields), ``code_editor`` (the code
widget both code panes show), ``pyqtgraph_compat`` and ``qtpy_compat`` (patches of those
libraries, applied here, before any view imports them).

No pane imports another, and no helper imports a pane (import-linter contracts in
pyproject.toml). Views draw from the session's signals and call its methods; they never start
workers themselves.
"""

from playground.views.pyqtgraph_compat import deferred_parts, lazy_qt_mirrors
from playground.views.qtpy_compat import lighter_qtpy

lazy_qt_mirrors()  # before any view imports pyqtgraph: its Qt mirrors filled as used
deferred_parts()  # and the parts of it the app does not use imported when asked for
lighter_qtpy()  # qtpy's Qt modules (superqt's) without their star imports of PySide6
