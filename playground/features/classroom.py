"""Classroom: one zoom, themes, presentation mode, shortcuts help, sessions, export.

``install(window)`` adds the actions, the Step tab and the session confirmation bar, and
keeps ``window.classroom`` (a :class:`Classroom`). Zoom, theme and the presentation panels are
remembered in ``classroom.ini`` in the config folder; the last session in ``last-session.json``
next to it. A session never imports a Function file (or module) without the user's click.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QScrollArea,
    QWidget,
)

from playground.state import paths, session_files
from playground.support.discard import held
from playground.views import export, theme, zoom
from playground.views.explainer import StepExplainer
from playground.views.shortcuts import ShortcutsDialog

__all__ = ["PANELS", "Classroom", "install"]

#: panels presentation mode can hide: key -> menu text
PANELS = {
    "picker": "Function picker and inputs",
    "code": "Code and Step tabs",
    "loss": "Loss plot",
    "heatmaps": "Jacobian heatmaps",
    "status": "Status bar",
}
DEFAULT_HIDDEN = ("picker", "code", "status")
PRESENT_READOUT = 2.8  # step/loss readout size in presentation mode (times the font)
PRESENT_JACOBIAN = 1.25  # the verdict line, relative to its size outside presentation
_NORMAL_READOUT = 1.8
#: used when another part of the window already has the first choice
FALLBACK_KEYS = {"open_session": "Ctrl+Alt+O", "save_session": "Ctrl+Alt+S",
                 "export_window": "Ctrl+Alt+E"}


def _truthy(value) -> bool:
    """A bool QSettings read back (an INI file gives "true"/"false" strings)."""
    return value is True or str(value).lower() in ("true", "1")


def _restore_default() -> bool:
    return not os.environ.get("AUTOGRAD_PLAYGROUND_NO_RESTORE")


def install(window, restore_prefs: bool | None = None,
            restore_session: bool | None = None) -> Classroom:
    """Add zoom, theme, presentation, help, session and export actions to ``window``."""
    window.classroom = Classroom(window)
    if restore_prefs if restore_prefs is not None else _restore_default():
        window.classroom.restore_prefs()
    if restore_session if restore_session is not None else _restore_default():
        window.classroom.restore_last_session()
    return window.classroom


class Classroom(QObject):
    """The classroom features of one window; ``window.classroom``."""

    last_report = held("last_report")  # for export; a replaced one is freed off the GUI thread

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.session = window.session
        self.prefs = QSettings(str(paths.config_dir() / "classroom.ini"),
                               QSettings.Format.IniFormat)
        self.zoom = 100
        self.theme = "light"
        self.presenting = False
        self.hidden_panels: set[str] = set(self._stored_panels())
        self.session_path: Path | None = None
        self.pending: session_files.Loaded | None = None
        self._placeholder: str | None = None
        self.last_report = None
        self.restored = False
        self._before_present: dict = {}
        self._left_min = window.picker.parentWidget().minimumWidth()
        zoom.base_point_size()

        self.explainer = StepExplainer(self.session)
        window.side_tabs.addTab(self.explainer, "Step")
        window.side_tabs.setTabToolTip(window.side_tabs.indexOf(self.explainer),
                                       "The last step of gradient descent, in numbers")
        window.explainer = self.explainer
        self._build_pending_bar()
        self.actions: dict[str, QAction] = {}
        self._make_actions()
        self._context_menus()

        self._layout_timer = QTimer(self, singleShot=True, interval=500)
        self._layout_timer.timeout.connect(self._save_layout)
        for splitter in window.splitters.values():
            splitter.splitterMoved.connect(self._splitter_moved)
        window.jacobian.detailsToggled.connect(self._details_toggled)

        self._fit_left()  # the form whole at the start size too, not only after a zoom

        self._wheel = zoom.WheelZoom(window, self.zoom_by)
        QApplication.instance().installEventFilter(self._wheel)
        window.installEventFilter(self)
        self._autosave = QTimer(self, singleShot=True, interval=1500)
        self._autosave.timeout.connect(self.save_last_session)
        # bound methods, not lambdas: Qt drops them when this object goes before the session
        self.session.settingsChanged.connect(self._settings_changed)
        self.session.targetChanged.connect(self._target_changed)
        self.session.jacobianReady.connect(self._report)

    # ---- actions ----------------------------------------------------------------------------
    def _action(self, name: str, text: str, keys=(), slot=None, menu: QMenu | None = None,
                checkable: bool = False, tip: str = "") -> QAction:
        w = self.window
        action = QAction(text, w)
        if keys:
            action.setShortcuts(self._free_keys(name, keys))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.setCheckable(checkable)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        if slot is not None:
            action.triggered.connect(slot)
        w.addAction(action)  # shortcuts work with the menu bar hidden too
        if menu is not None:
            menu.addAction(action)
        self.actions[name] = action
        w.actions_by_name[name] = action
        return action

    def _free_keys(self, name: str, keys) -> list[QKeySequence]:
        """``keys`` less those another action of the window already has (two actions on one
        key would both stop working), plus this action's fallback if that left none."""
        taken = {k.toString() for a in self.window.findChildren(QAction)
                 for k in a.shortcuts()}
        free = [QKeySequence(k) for k in keys if QKeySequence(k).toString() not in taken]
        if not free and name in FALLBACK_KEYS:
            fallback = QKeySequence(FALLBACK_KEYS[name])
            if fallback.toString() not in taken:
                free = [fallback]
        return free

    def _make_actions(self) -> None:
        w = self.window
        file_menu, view, help_menu = w.menus["file"], w.menus["view"], w.menus["help"]

        session_menu = QMenu("Sessions", w)  # built here, moved into File below
        self._action("open_session", "Open session…", ["Ctrl+Shift+O"],
                     lambda: self.open_session_dialog(), session_menu,
                     tip="Open a saved session: Function, inputs, seed, loop, zoom and theme")
        self._action("save_session", "Save session", ["Ctrl+S"], lambda: self.save_session(),
                     session_menu, tip="Save the session (asks for a file the first time)")
        self._action("save_session_as", "Save session as…", ["Ctrl+Shift+S"],
                     lambda: self.save_session(ask=True), session_menu)
        export_menu = QMenu("Export", w)
        self.export_menu = export_menu
        for name, text, slot in (
                ("export_loss_png", "Loss plot as PNG…", lambda: self.export_loss("png")),
                ("export_loss_svg", "Loss plot as SVG…", lambda: self.export_loss("svg")),
                ("export_loss_csv", "Loss history as CSV…", lambda: self.export_loss_csv()),
                ("export_heatmaps_png", "Heatmaps as PNG…", lambda: self.export_heatmaps("png")),
                ("export_heatmaps_svg", "Heatmaps as SVG…", lambda: self.export_heatmaps("svg")),
                ("export_jacobians_npy", "Jacobians as .npy…",
                 lambda: self.export_jacobians("npy")),
                ("export_jacobians_csv", "Jacobians as CSV…",
                 lambda: self.export_jacobians("csv"))):
            self._action(name, text, (), slot, export_menu)
        export_menu.addSeparator()
        self._action("export_window", "Window screenshot (PNG)…", ["Ctrl+Shift+E"],
                     lambda: self.export_window(), export_menu)
        quit_action = w.actions_by_name.get("quit")
        before = quit_action if quit_action in file_menu.actions() else None
        items = file_menu.actions()
        previous = items[items.index(before) - 1] if before in items[1:] else (
            items[-1] if items and before is None else None)
        if previous is not None and not previous.isSeparator():
            file_menu.insertSeparator(before)
        for action in session_menu.actions():
            file_menu.insertAction(before, action)
        file_menu.insertSeparator(before)
        file_menu.insertMenu(before, export_menu)
        file_menu.insertSeparator(before)

        self._action("zoom_in", "Zoom in", ["Ctrl+=", "Ctrl++"], lambda: self.zoom_by(1), view)
        self._action("zoom_out", "Zoom out", ["Ctrl+-"], lambda: self.zoom_by(-1), view)
        self._action("zoom_reset", "Actual size (100 %)", ["Ctrl+0"],
                     lambda: self.set_zoom(100), view)
        view.addSeparator()
        theme_menu = view.addMenu("Theme")
        self.theme_menu = theme_menu
        group = QActionGroup(w)
        group.setExclusive(True)
        for name, item in theme.THEMES.items():
            action = self._action(f"theme_{name}", item.title, (),
                                  lambda _c=False, n=name: self.set_theme(n), theme_menu,
                                  checkable=True)
            group.addAction(action)
        self.actions["theme_light"].setChecked(True)
        theme_menu.addSeparator()
        self._action("next_theme", "Next theme", ["F2"], self.cycle_theme, theme_menu,
                     tip="Light, dark, high contrast")
        view.addSeparator()
        self._action("presentation", "Presentation mode", ["F5"], self.toggle_presentation,
                     view, checkable=True,
                     tip="Full screen, large readout, chosen panels hidden (F5 or Esc leaves)")
        leave = self._action("leave_presentation", "Leave presentation mode", ["Esc"],
                             lambda: self.set_presentation(False), view)
        leave.setEnabled(False)
        panels = view.addMenu("Presentation panels")
        self.panels_menu = panels
        panels.setToolTipsVisible(True)
        for key, text in PANELS.items():
            action = self._action(f"hide_{key}", f"Hide {text.lower()}", (),
                                  lambda on, k=key: self.set_panel_hidden(k, on), panels,
                                  checkable=True)
            action.setChecked(key in self.hidden_panels)
        self._action("fullscreen", "Full screen", ["F11"], self.toggle_fullscreen, view,
                     checkable=True)
        view.addSeparator()
        side = self._action("side_panel", "Side panel (code, editor, inspector, step)", ["F9"],
                            self.toggle_side_panel, view, checkable=True,
                            tip="Show or hide the tabs beside the loss plot")
        side.setChecked(True)
        self._action("jacobian_details", "Jacobian details", (),
                     lambda on: self.window.jacobian.set_details_shown(on), view,
                     checkable=True,
                     tip="The verdict's numbers, the worst entry, notes and tolerances")
        self._action("reset_layout", "Reset layout", (), self.reset_layout, view,
                     tip="Panes back to their first sizes: the heatmaps get their room")
        view.addSeparator()
        self._action("show_explainer", "Step explainer", (), self.show_explainer, view,
                     tip="Explain the last step: loss, gradient, update")
        self._action("shortcuts", "Keyboard shortcuts", ["F1"], self.show_shortcuts, help_menu)

    # ---- zoom -------------------------------------------------------------------------------
    def set_zoom(self, percent: float, remember: bool = True) -> int:
        """Every pane at ``percent`` % of the start font size (50-300)."""
        self.zoom = zoom.clamp(percent)
        self._apply_fonts()
        if remember:
            self.prefs.setValue("view/zoom", self.zoom)
            self.prefs.sync()
            self._autosave.start()
        self.window.status.showMessage(f"Zoom {self.zoom} %", 2000)
        QTimer.singleShot(0, self._check_fits)
        return self.zoom

    def _check_fits(self) -> None:
        """Say so when the window no longer fits its screen at this zoom."""
        w = self.window
        screen = w.screen()
        if screen is None or QApplication.platformName() == "offscreen" or not w.isVisible():
            return
        room, need = screen.availableGeometry(), w.minimumSizeHint()
        if need.width() > room.width() or need.height() > room.height():
            self.session.notice.emit(
                f"At {self.zoom} % the window needs {need.width()}×{need.height()} pixels and "
                f"the screen has {room.width()}×{room.height()}: hide panels in presentation "
                "mode (F5, View > Presentation panels) or zoom out (Ctrl+-).")

    def zoom_by(self, direction: int) -> int:
        return self.set_zoom(zoom.step_zoom(self.zoom, direction))

    def _apply_fonts(self) -> None:
        w = self.window
        w.controls.readout_scale = PRESENT_READOUT if self.presenting else _NORMAL_READOUT
        font = zoom.apply_zoom(w, self.zoom)
        if self.presenting:
            # the verdict larger; the heatmaps' labels stay at the zoom: the cells need the room
            w.jacobian.apply_font(font, verdict_scale=PRESENT_JACOBIAN)
        self._fit_left()
        QTimer.singleShot(0, self._fit_left)  # again once the layouts have caught up

    def _fit_left(self) -> None:
        """Keep the left pane wide enough for the form at this zoom (it never scrolls
        sideways, so it would clip instead)."""
        left = self.window.picker.parentWidget()
        holder = self.window.inputs.parentWidget()
        scroll = holder
        while scroll is not None and not isinstance(scroll, QScrollArea):
            scroll = scroll.parentWidget()
        if left is None or scroll is None:
            return
        m = left.layout().contentsMargins() if left.layout() else None
        needed = (holder.minimumSizeHint().width()
                  + scroll.verticalScrollBar().sizeHint().width() + 2 * scroll.frameWidth()
                  + (m.left() + m.right() if m else 0) + 4)
        left.setMinimumWidth(max(self._left_min, needed))

    # ---- theme ------------------------------------------------------------------------------
    def set_theme(self, name: str, remember: bool = True) -> str:
        """Switch to theme ``name`` (light, dark, high-contrast)."""
        theme.apply_theme(self.window, name)
        self.theme = name
        self.actions[f"theme_{name}"].setChecked(True)
        if remember:
            self.prefs.setValue("view/theme", name)
            self.prefs.sync()
            self._autosave.start()
        self.window.status.showMessage(f"Theme: {theme.get(name).title}", 2000)
        return name

    def cycle_theme(self) -> str:
        return self.set_theme(theme.next_theme(self.theme))

    # ---- layout -----------------------------------------------------------------------------
    def _splitter_moved(self, *_args) -> None:
        if not self.presenting:  # presentation's panes are laid out for the projector
            self._layout_timer.start()  # once the drag has stopped

    def _save_layout(self) -> None:
        for name, splitter in self.window.splitters.items():
            self.prefs.setValue(f"layout/{name}", splitter.saveState())
        self.prefs.setValue("layout/area_set", self.window._area_user_set)
        self.prefs.sync()

    def _restore_layout(self) -> None:
        w = self.window
        for name, splitter in w.splitters.items():
            state = self.prefs.value(f"layout/{name}")
            if isinstance(state, QByteArray) and not state.isEmpty():
                splitter.restoreState(state)
        w._area_user_set = _truthy(self.prefs.value("layout/area_set", False))
        w.jacobian.set_details_shown(_truthy(self.prefs.value("view/jacobian_details",
                                                              False)))

    def reset_layout(self) -> None:
        """Panes back to their first sizes, the heatmaps given their room; forgotten."""
        w = self.window
        self.prefs.remove("layout")
        self.prefs.sync()
        main = w.splitters["main"]
        total = sum(main.sizes())
        left = max(w.picker.parentWidget().minimumWidth(), 380)
        main.setSizes([left, max(0, total - left)])
        side = w.splitters["side"]
        half = sum(side.sizes()) // 2
        side.setSizes([half, half])
        w.reset_main_area()

    def _details_toggled(self, shown: bool) -> None:
        self.actions["jacobian_details"].setChecked(shown)
        self.prefs.setValue("view/jacobian_details", shown)
        self.prefs.sync()
        self.window._fit_timer.start()

    def toggle_side_panel(self) -> None:
        self.set_side_panel(self.window.side_tabs.isHidden())

    def set_side_panel(self, shown: bool) -> None:
        """Show or hide the side panel (code, editor, inspector and step tabs): F9."""
        w = self.window
        w.side_tabs.setVisible(shown)
        w.loss_plot.parentWidget().setVisible(shown or not w.loss_plot.isHidden())
        self._sync_side_action()
        w._fit_timer.start()

    def _sync_side_action(self) -> None:
        self.actions["side_panel"].setChecked(not self.window.side_tabs.isHidden())

    def restore_prefs(self) -> None:
        """Apply the remembered theme and zoom, pane sizes and banner details."""
        self._restore_layout()
        name = self.prefs.value("view/theme", "light")
        self.set_theme(name if name in theme.THEMES else "light", remember=False)
        try:
            percent = float(self.prefs.value("view/zoom", 100))
        except (TypeError, ValueError):
            percent = 100
        self.set_zoom(percent, remember=False)

    # ---- presentation -----------------------------------------------------------------------
    def _stored_panels(self) -> list[str]:
        value = self.prefs.value("presentation/hidden", None)
        if value is None:
            return list(DEFAULT_HIDDEN)
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        return [v for v in value if v in PANELS]

    def panel_widgets(self, key: str) -> list[QWidget]:
        w = self.window
        if key == "picker":
            return [w.picker.parentWidget()]
        if key == "code":
            return [w.side_tabs]
        if key == "loss":
            return [w.loss_plot]
        if key == "heatmaps":
            return [w.jacobian.graphics, w.jacobian.hover_label]
        if key == "status":
            return [w.status]
        raise KeyError(key)

    def set_panel_hidden(self, key: str, hidden: bool) -> None:
        """Choose whether presentation mode hides panel ``key`` (applies at once there)."""
        if hidden:
            self.hidden_panels.add(key)
        else:
            self.hidden_panels.discard(key)
        action = self.actions[f"hide_{key}"]
        if action.isChecked() != hidden:
            action.setChecked(hidden)
        self.prefs.setValue("presentation/hidden", ",".join(sorted(self.hidden_panels)))
        self.prefs.sync()
        if self.presenting:
            self._show_panels()

    def _show_panels(self) -> None:
        visible = self._before_present.get("visible", {})
        for key in PANELS:
            for widget in self.panel_widgets(key):
                shown = key not in self.hidden_panels and visible.get(id(widget), True)
                widget.setVisible(shown)
        upper = self.window.loss_plot.parentWidget()
        upper.setVisible(not {"loss", "code"} <= self.hidden_panels)
        self._place_readout()
        self._sync_side_action()
        self.window._fit_timer.start()

    def _place_readout(self) -> None:
        """Presenting with the loss plot shown: the step and loss beside it, one above the
        other (the heatmaps get the row they took); else beside the buttons."""
        w = self.window
        w.loss_plot.set_compact(self.presenting)
        holder = w.readout_holder
        beside = self.presenting and not w.loss_plot.isHidden()
        if beside == (w.controls.readout.parentWidget() is holder):
            return
        w.controls.lend_readout(holder.layout() if beside else None)
        if beside:
            holder.layout().addStretch(1)
        else:
            while holder.layout().count():
                holder.layout().takeAt(0)
            holder.layout().addStretch(1)
        holder.setVisible(beside)
        if beside:
            split = w.splitters["side"]
            split.setCollapsible(2, False)
            total = sum(split.sizes())
            need = holder.sizeHint().width()
            sizes = split.sizes()
            split.setSizes([max(0, total - need - sizes[1]), sizes[1], need])

    def set_presentation(self, on: bool, fullscreen: bool = True) -> None:
        """Presentation mode: full screen, big readout and verdict, chosen panels hidden."""
        w = self.window
        on = bool(on)
        if on == self.presenting:
            self.actions["presentation"].setChecked(on)
            return
        if on:
            widgets = [x for key in PANELS for x in self.panel_widgets(key)]
            self._before_present = {
                "visible": {id(x): not x.isHidden() for x in widgets},
                "fullscreen": w.isFullScreen(), "maximized": w.isMaximized(),
                "area": (w._area_user_set, w.main_area.saveState())}
            w._area_user_set = False  # the heatmaps get their room on the projector
            self._before_present["menu"] = not w.menuBar().isHidden()
            w.menuBar().hide()  # every command keeps its key (F5 or Esc leaves)
            self.presenting = True
            self._show_panels()
            if fullscreen and not w.isFullScreen():
                w.showFullScreen()
            if fullscreen and w.screen() is not None:
                # the whole screen, also where no window manager applies full screen (a
                # bare X server), and once the panels presentation hides no longer need room
                QTimer.singleShot(0, self, self._fill_screen)
        else:
            self.presenting = False
            visible = self._before_present.get("visible", {})
            for key in PANELS:
                for widget in self.panel_widgets(key):
                    widget.setVisible(visible.get(id(widget), True))
            self.window.loss_plot.parentWidget().setVisible(True)
            if w.isFullScreen() and not self._before_present.get("fullscreen"):
                w.showMaximized() if self._before_present.get("maximized") else w.showNormal()
            w.menuBar().setVisible(self._before_present.get("menu", True))
            self._place_readout()
            user_set, state = self._before_present.get("area", (False, None))
            if user_set and state is not None:
                w.main_area.restoreState(state)
            w._area_user_set = user_set
            self._before_present = {}
            self._sync_side_action()
            w._fit_timer.start()
        self._apply_fonts()
        self.actions["presentation"].setChecked(on)
        self.actions["leave_presentation"].setEnabled(on)
        self.actions["fullscreen"].setChecked(w.isFullScreen())

    def _fill_screen(self) -> None:
        w = self.window
        if self.presenting and w.isFullScreen() and w.screen() is not None \
                and w.geometry() != w.screen().geometry():
            w.setGeometry(w.screen().geometry())

    def toggle_presentation(self) -> None:
        self.set_presentation(not self.presenting)

    def toggle_fullscreen(self) -> None:
        w = self.window
        if w.isFullScreen():
            w.showNormal()
        else:
            w.showFullScreen()
        self.actions["fullscreen"].setChecked(w.isFullScreen())

    # ---- help, explainer --------------------------------------------------------------------
    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.shortcuts_dialog = dialog
        return dialog

    def show_explainer(self) -> None:
        tabs = self.window.side_tabs
        tabs.setVisible(True)
        tabs.parentWidget().setVisible(True)
        tabs.setCurrentWidget(self.explainer)
        self._sync_side_action()

    # ---- sessions ---------------------------------------------------------------------------
    def session_data(self) -> dict:
        """The session as saved: the pending one while it waits for confirmation."""
        if self.pending is not None:
            p = self.pending
            data = session_files.make(p.settings, p.function.name, self.zoom, self.theme)
            data["function"] = p.function.to_dict()
            return data
        target = self.session.target
        return session_files.make(self.session.settings, target.label if target else "",
                             self.zoom, self.theme)

    def save_session(self, path: str | os.PathLike | None = None, ask: bool = False):
        """Write the session to ``path`` (or the file it came from; else ask). The path."""
        if path is None:
            path = None if ask else self.session_path
            if path is None:
                path = self.ask_save_path("Save session", "Sessions (*.json)",
                                          "session.json")
                if not path:
                    return None
                if not str(path).lower().endswith(".json"):
                    path = f"{path}.json"
        try:
            written = session_files.write(path, self.session_data())
        except OSError as exc:
            self._problem(f"Could not save the session: {exc}")
            return None
        self.session_path = Path(written)
        self.window.status.showMessage(f"Session saved to {written}", 4000)
        return written

    def save_last_session(self) -> None:
        """Remember the session for the next start (quietly)."""
        self._autosave.stop()
        try:
            session_files.write(session_files.last_session_path(), self.session_data())
        except OSError:
            pass

    def open_session_dialog(self) -> None:
        path = self.ask_open_path("Open session", "Sessions (*.json);;All files (*)")
        if path:
            self.open_session(path)

    def open_session(self, path: str | os.PathLike, what: str = "Session") -> session_files.Loaded:
        """Open a session file: view and settings at once; a Function file waits for a click.

        A damaged file still opens: what is valid is used, defaults for the rest, and the
        notice says what was wrong.
        """
        path = Path(path)
        loaded = session_files.read(path, tuple(theme.THEMES))
        if loaded.raw is not None and what == "Session":
            self.session_path = path
        if loaded.theme:
            self.set_theme(loaded.theme, remember=False)
        if loaded.zoom:
            self.set_zoom(loaded.zoom, remember=False)
        if loaded.problems:
            self.session.notice.emit(
                f"{what} {path.name}: " + "; ".join(loaded.problems)
                + ". The valid parts were used, defaults for the rest.")
        if loaded.function.needs_confirmation:
            self._set_pending(loaded)
        else:
            self._clear_pending()
            self._apply(loaded.settings)
        return loaded

    def restore_last_session(self) -> bool:
        """Reopen the session of the last run, if there is one."""
        path = session_files.last_session_path()
        if not path.exists():
            return False
        self.open_session(path, what="The last session")
        self.session_path = None
        self.restored = self.session.target is not None or self.pending is not None
        return self.restored

    def _apply(self, settings) -> None:
        w = self.window
        w.inputs.forget_typed()
        w.jacobian.set_tolerances(settings.eps, settings.atol, settings.rtol)
        self.session.load_settings(settings)

    def _build_pending_bar(self) -> None:
        w = self.window
        bar = QFrame()
        bar.setObjectName("SessionConfirm")
        bar.setStyleSheet("#SessionConfirm { background: #e8f0fe; border: 2px solid #1a56b8;"
                          " border-radius: 6px; } #SessionConfirm QLabel { color: #0c2a5b; }")
        self.pending_label = QLabel(wordWrap=True)
        self.pending_label.setTextFormat(Qt.TextFormat.RichText)
        self.load_button = QPushButton("Load")
        self.load_button.setToolTip("Run this Function's Python code and open the session")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.setToolTip("Keep the current Function; forget this session")
        row = QHBoxLayout(bar)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.pending_label, 1)
        row.addWidget(self.load_button)
        row.addWidget(self.dismiss_button)
        self.load_button.clicked.connect(self.load_pending)
        self.dismiss_button.clicked.connect(self._dismiss_pending)
        bar.hide()
        self.pending_bar = bar
        layout = w.notice.parentWidget().layout()
        layout.insertWidget(layout.indexOf(w.notice) + 1, bar)

    def _set_pending(self, loaded: session_files.Loaded) -> None:
        import html

        self.pending = loaded
        ref = loaded.function
        where = ref.file if ref.kind in ("file", "editor") else ref.spec
        what = {"editor": "a Function written in the editor",
                "file": "a Function from a file", "import": "a Function from a module"}
        self.pending_label.setText(
            f"This session uses {what.get(ref.kind, 'a Function')}: "
            f"<b>{html.escape(ref.display_name)}</b><br><small>{html.escape(where or '')}"
            "</small><br>Loading it runs its Python code. Load it only if you trust it.")
        self.load_button.setText(f"Load {ref.button_target}")
        self.pending_bar.show()
        if self.session.target is None:
            self._placeholder = session_files.describe(self.session.settings.target).spec
            self.session.set_target(self.session.settings.target)
        else:
            self._placeholder = self.session.target.spec
        self._autosave.start()

    def load_pending(self) -> None:
        """The user chose to run the pending session's Function: open it."""
        loaded = self.pending
        if loaded is None:
            return
        ref = session_files.write_editor_source(loaded.function)
        settings = copy.deepcopy(loaded.settings)
        settings.target = ref.spec
        self._clear_pending()
        self._apply(settings)

    def _dismiss_pending(self) -> None:
        self._clear_pending()
        self._autosave.start()

    def _clear_pending(self) -> None:
        self.pending = None
        self._placeholder = None
        self.pending_bar.hide()

    def _target_changed(self, target) -> None:
        self.last_report = None
        if self.pending is not None and self._placeholder is not None \
                and target.spec != self._placeholder:
            self._clear_pending()  # the user chose another Function meanwhile
        self._autosave.start()

    def _settings_changed(self, _settings) -> None:
        self._autosave.start()

    def _report(self, report) -> None:
        self.last_report = report

    # ---- export -----------------------------------------------------------------------------
    def _context_menus(self) -> None:
        w = self.window
        menu = w.loss_plot.plot_item.vb.menu
        if menu is not None:
            menu.addSeparator()
            for name in ("export_loss_png", "export_loss_svg", "export_loss_csv"):
                menu.addAction(self.actions[name])
        graphics = w.jacobian.graphics
        graphics.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        graphics.customContextMenuRequested.connect(
            lambda pos: self.heatmap_menu(pos).popup(graphics.mapToGlobal(pos)))

    def heatmap_plots(self) -> dict[str, object]:
        """title -> PlotItem of each heatmap."""
        j = self.window.jacobian
        plots = {}
        for key, image in (("analytic", j.analytic_image), ("numerical", j.numerical_image),
                           ("difference", j.difference_image)):
            item = image.getViewBox()
            while item is not None and not hasattr(item, "getAxis"):
                item = item.parentItem()
            if item is not None:
                plots[key] = item
        return plots

    def heatmap_menu(self, pos=None) -> QMenu:
        """The right-click menu of the heatmaps (the one under ``pos`` first)."""
        menu = QMenu(self.window)
        graphics = self.window.jacobian.graphics
        if pos is not None:
            scene_pos = graphics.mapToScene(pos)
            for key, plot in self.heatmap_plots().items():
                if plot.sceneBoundingRect().contains(scene_pos):
                    for fmt in ("png", "svg"):
                        action = menu.addAction(f"This heatmap ({key}) as {fmt.upper()}…")
                        action.triggered.connect(
                            lambda _c=False, k=key, f=fmt: self.export_heatmaps(f, k))
                    menu.addSeparator()
        for name in ("export_heatmaps_png", "export_heatmaps_svg", "export_jacobians_npy",
                     "export_jacobians_csv"):
            menu.addAction(self.actions[name])
        return menu

    def ask_save_path(self, title: str, filters: str, suggested: str) -> str | None:
        start = str(self.session_path.parent / suggested) if self.session_path else suggested
        path, _ = QFileDialog.getSaveFileName(self.window, title, start, filters)
        return path or None

    def ask_open_path(self, title: str, filters: str) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self.window, title, "", filters)
        return path or None

    def _ask(self, title: str, fmt: str, suggested: str, path=None) -> str | None:
        """``path`` (or one the user picks) ending in ``.fmt``; None if the user cancels."""
        if path is None:
            path = self.ask_save_path(title, f"{fmt.upper()} (*.{fmt})", f"{suggested}.{fmt}")
        if path and not str(path).lower().endswith(f".{fmt}"):
            path = f"{path}.{fmt}"
        return path or None

    def _problem(self, text: str) -> None:
        self.session.notice.emit(text)

    def _done(self, paths_written) -> None:
        names = ", ".join(Path(p).name for p in paths_written)
        self.window.status.showMessage(f"Saved {names}", 5000)

    def export_loss(self, fmt: str, path=None):
        path = self._ask(f"Save the loss plot as {fmt.upper()}", fmt, "loss", path)
        if path:
            return self._try(lambda: [export.export_item(self.window.loss_plot.plot_item,
                                                         path)])
        return None

    def export_loss_csv(self, path=None):
        path = self._ask("Save the loss history as CSV", "csv", "loss", path)
        if path:
            return self._try(lambda: [export.save_loss_csv(self.window.loss_plot, path)])
        return None

    def export_heatmaps(self, fmt: str, which: str | None = None, path=None):
        """All three heatmaps (with colour bars) or just ``which`` as PNG or SVG."""
        name = f"jacobian_{which}" if which else "jacobians"
        path = self._ask(f"Save the heatmaps as {fmt.upper()}", fmt, name, path)
        if not path:
            return None
        item = (self.heatmap_plots()[which] if which
                else self.window.jacobian.graphics.ci)
        return self._try(lambda: [export.export_item(item, path)])

    def export_jacobians(self, fmt: str, path=None):
        """The last comparison's analytic, numerical and difference matrices, one file each."""
        if self.last_report is None or self.last_report.analytic is None:
            self._problem("No Jacobian comparison to export yet: open a Function and let the "
                          "check finish.")
            return None
        path = self._ask(f"Save the Jacobians as {fmt.upper()} (three files)", fmt,
                         "jacobian", path)
        if path:
            return self._try(lambda: list(export.save_jacobians(self.last_report, path,
                                                                fmt).values()))
        return None

    def export_window(self, path=None):
        path = self._ask("Save a screenshot of the window", "png", "playground", path)
        if path:
            return self._try(lambda: [export.save_window(self.window, path)])
        return None

    def _try(self, write):
        try:
            written = write()
        except (OSError, ValueError) as exc:
            self._problem(f"Export failed: {exc}")
            return None
        self._done(written)
        return written

    # ---- events -----------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.Close:
            self.save_last_session()
        return False
