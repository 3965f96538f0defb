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

Zoom, theme and the presentation panels are state, not the classroom's: they live in
:class:`~playground.state.preferences.Preferences` (``window.preferences``, remembered in
``preferences.json`` in the config folder), which the menus edit and the look follows. The last
session is ``last-session.json`` next to it. A session never imports a Function file (or
module) without the user's click.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QStatusBar, QTabWidget, QWidget

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

    window: QMainWindow  # full screen, its menu bar; zoom and themes reach all inside it
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

    @property
    def upper(self):
        """The splitter of the loss plot, the side tabs and the readout holder."""
        return self.splitters["side"]

    @property
    def main_area(self):
        """The MainArea: the loss plot and side tabs above, the Jacobian pane below."""
        return self.splitters["area"]


class Classroom(QObject):
    """The classroom features of ``panes.window``; ``window.classroom``. Its parts are
    attributes (``appearance``, ``layout``, ``presentation``, ``sessions``, ``exports``,
    ``dialogs``); what the command line uses is here too.

    ``sessions.settingsLoading(settings)``: settings read from a session file are about to
    load (the window's views show them afresh).
    """

    def __init__(self, session, preferences, *, commands, menus, panes: Panes) -> None:
        super().__init__(panes.window)
        self.window = window = panes.window
        self.session = session
        self.preferences = preferences
        self.explainer = panes.explainer
        preferences.saveFailed.connect(session.notice)
        self.actions: dict[str, QAction] = {}
        #: the picker over the window while its own is hidden (find_function)
        self.search_popup: QWidget | None = None
        self.dialogs = FileDialogs(window, lambda: self.sessions.session_path)
        self.appearance = Appearance(preferences, panes, session=session, parent=self)
        self.layout = PaneLayout(preferences, panes, actions=self.actions, parent=self)
        self.presentation = Presentation(preferences, panes, layout=self.layout,
                                         actions=self.actions, parent=self)
        self.sessions = SessionFiles(session, preferences, panes, dialogs=self.dialogs,
                                     parent=self)
        self.exports = Exports(session, panes, dialogs=self.dialogs, actions=self.actions,
                               parent=self)
        made = make_actions(self, commands, menus)
        self.export_menu, self.theme_menu, self.panels_menu = (
            made["export"], made["theme"], made["panels"])
        self.exports.add_context_menus()
        self._bind_nondet_tol(panes.jacobian.tolerance_row)

    def _bind_nondet_tol(self, tolerances) -> None:
        """The tolerance bar's nondet_tol editor and the settings both ways, as the window
        binds eps, atol and rtol: typed, it re-checks; a session file's value is shown."""
        session = self.session
        tolerances.set_nondet_tol(session.settings.nondet_tol)
        tolerances.nondetTolChanged.connect(lambda tol: session.update(nondet_tol=tol))
        self.sessions.settingsLoading.connect(
            lambda settings: tolerances.set_nondet_tol(settings.nondet_tol))

    # ---- the look ----------------------------------------------------------------------------
    def restore_prefs(self) -> None:
        """Apply the remembered theme and zoom, pane sizes and banner details."""
        self.layout.restore()
        prefs = self.preferences
        with self.appearance.fonts_once():  # (the theme's and the zoom's in one pass)
            prefs.set_theme(prefs.remembered_theme(theme.THEMES), remember=False)
            prefs.set_zoom(prefs.remembered_zoom(), remember=False)
        if prefs.problems:
            self.session.notice.emit("Preferences: " + "; ".join(prefs.problems)
                                     + ". Defaults were used for those.")

    def reset_layout(self) -> None:
        """View > Reset layout (Ctrl+Shift+L): the layout of the mode the window is in,
        afresh; in presentation mode too, where the menu bar is hidden."""
        if self.preferences.presenting:
            self.presentation.reset_layout()
        else:
            self.layout.reset()

    # ---- sessions ---------------------------------------------------------------------------
    @property
    def restored(self) -> bool:
        """Whether the last session was reopened at the start."""
        return self.sessions.restored

    def open_session(self, path, what: str = "Session"):
        return self.sessions.open_session(path, what)

    def save_session(self, path=None, ask: bool = False):
        return self.sessions.save_session(path, ask)

    def restore_last_session(self, offer: bool = True) -> bool:
        return self.sessions.restore_last_session(offer)

    def window_closing(self) -> None:
        """The window closes: remember the session for the next start."""
        self.sessions.save_last_session()

    def find_function(self) -> None:
        """View > Find a Function (Ctrl+F): the picker's search has the keys, its text
        selected (with keys only there was no way to it but Tab from the right place).
        Where the picker is hidden (presentation mode hides it), it opens over the window:
        a teacher typed into a search no one saw."""
        from playground.views.picker import FunctionPicker, PickerPopup

        picker = getattr(self.window, "picker", None)  # (not a popup's: findChild)
        if not isinstance(picker, FunctionPicker):
            return
        if picker.isVisible():
            picker.focus_search()
            return
        popup = PickerPopup(self.window, picker)
        popup.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        popup.picked.connect(self.session.set_target)
        self.search_popup = popup
        popup.open_over(self.window)

    # ---- help, explainer --------------------------------------------------------------------
    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.shortcuts_dialog = dialog
        return dialog

    def show_explainer(self) -> None:
        self.layout.show_side_tab(self.explainer)
