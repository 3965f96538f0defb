"""Classroom: one zoom, themes, presentation mode, shortcuts help, session files, export.

:class:`Classroom` is made by the main window from the views it built (:class:`Panes`) and
puts together

- :mod:`.appearance`: the look follows the preferences (zoom, theme, presentation's sizes);
- :mod:`.layout`: splitters remembered, Reset layout, the side panel, the verdict's details;
- :mod:`.presentation`: presentation mode;
- :mod:`.sessions`: open and save sessions, the last one kept for the next start, the bar
  that asks before a session's own Function runs;
- :mod:`.exports`: plots, heatmaps, Jacobians and the window written to files;
- :mod:`.menus`: the menu entries and keys of all of the above.

Zoom, theme and the presentation panels are :class:`~playground.state.preferences.Preferences`
(remembered in ``classroom.ini`` in the config folder); the last session is
``last-session.json`` next to it. A session never imports a Function file (or module) without
the user's click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QStatusBar, QTabWidget, QWidget

from playground.features.classroom.appearance import Appearance
from playground.features.classroom.dialogs import FileDialogs
from playground.features.classroom.exports import Exports
from playground.features.classroom.layout import PaneLayout
from playground.features.classroom.menus import make_actions
from playground.features.classroom.presentation import Presentation
from playground.features.classroom.sessions import SessionFiles
from playground.state.preferences import PANELS
from playground.views import theme
from playground.views.shortcuts import ShortcutsDialog

__all__ = ["PANELS", "Classroom", "Panes"]


@dataclass(frozen=True)
class Panes:
    """The window's views the classroom works with."""

    status: QStatusBar
    left: QWidget  # LeftPane: the picker and the forms
    side_tabs: QTabWidget
    splitters: dict  # "main", "side" (the loss plot and the side tabs), "area" (MainArea)
    readout_holder: QWidget  # where presentation mode shows the step and loss
    controls: QWidget  # ControlsBar
    loss_plot: QWidget
    jacobian: QWidget
    explainer: QWidget  # the Step tab
    pending_bar: QWidget  # PendingSessionBar
    panels: dict  # PANELS key -> the widgets presentation mode hides for it


class Classroom(QObject):
    """The classroom features of ``window``; ``window.classroom``.

    ``show_settings(settings)``: the window's views take settings read from a session file.
    """

    def __init__(self, session, preferences, *, window, commands, menus, panes: Panes,
                 show_settings: Callable) -> None:
        super().__init__(window)
        self.window = window
        self.session = session
        self.preferences = preferences
        self.explainer = panes.explainer
        self.actions: dict[str, QAction] = {}
        self.dialogs = FileDialogs(window, lambda: self.sessions.session_path)
        self.appearance = Appearance(
            preferences, window=window, session=session, status=panes.status,
            controls=panes.controls, jacobian=panes.jacobian, left=panes.left, parent=self)
        self.layout = PaneLayout(
            preferences, splitters=panes.splitters, left=panes.left, side_tabs=panes.side_tabs,
            loss_plot=panes.loss_plot, jacobian=panes.jacobian, actions=self.actions,
            parent=self)
        self.presentation = Presentation(
            preferences, window=window, panels=panes.panels, upper=panes.splitters["side"],
            readout_holder=panes.readout_holder, controls=panes.controls,
            loss_plot=panes.loss_plot, main_area=panes.splitters["area"], layout=self.layout,
            actions=self.actions, parent=self)
        self.sessions = SessionFiles(
            session, preferences, bar=panes.pending_bar, dialogs=self.dialogs,
            status=panes.status, show_settings=show_settings, parent=self)
        self.exports = Exports(
            session, window=window, loss_plot=panes.loss_plot, jacobian=panes.jacobian,
            dialogs=self.dialogs, status=panes.status, actions=self.actions, parent=self)
        made = make_actions(self, commands, menus)
        self.export_menu, self.theme_menu, self.panels_menu = (
            made["export"], made["theme"], made["panels"])
        self.exports.add_context_menus()

    # ---- the look ---------------------------------------------------------------------------
    @property
    def zoom(self) -> int:
        return self.preferences.zoom

    @property
    def theme(self) -> str:
        return self.preferences.theme

    @property
    def presenting(self) -> bool:
        return self.preferences.presenting

    def set_zoom(self, percent: float, remember: bool = True) -> int:
        """Every pane at ``percent`` % of the start font size (50-300)."""
        return self.preferences.set_zoom(percent, remember)

    def set_theme(self, name: str, remember: bool = True) -> str:
        """Switch to theme ``name`` (light, dark, high-contrast)."""
        return self.preferences.set_theme(name, remember)

    def set_presentation(self, on: bool, fullscreen: bool = True) -> None:
        self.presentation.set_presentation(on, fullscreen)

    def restore_prefs(self) -> None:
        """Apply the remembered theme and zoom, pane sizes and banner details."""
        self.layout.restore()
        prefs = self.preferences
        prefs.set_theme(prefs.remembered_theme(theme.THEMES), remember=False)
        prefs.set_zoom(prefs.remembered_zoom(), remember=False)

    # ---- sessions ---------------------------------------------------------------------------
    @property
    def restored(self) -> bool:
        """Whether the last session was reopened at the start."""
        return self.sessions.restored

    def open_session(self, path, what: str = "Session"):
        return self.sessions.open_session(path, what)

    def save_session(self, path=None, ask: bool = False):
        return self.sessions.save_session(path, ask)

    def restore_last_session(self) -> bool:
        return self.sessions.restore_last_session()

    def window_closing(self) -> None:
        """The window closes: remember the session for the next start."""
        self.sessions.save_last_session()

    # ---- help, explainer --------------------------------------------------------------------
    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.shortcuts_dialog = dialog
        return dialog

    def show_explainer(self) -> None:
        self.layout.show_side_tab(self.explainer)
