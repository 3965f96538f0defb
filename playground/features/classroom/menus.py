"""The classroom's menu entries and keys: File > sessions and Export, View > zoom, theme,
presentation, panes and the Function search, Help > Keyboard shortcuts. Each action calls
one part of the :class:`~playground.features.classroom.Classroom`; the check marks follow the
preferences."""

from __future__ import annotations

from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import QMenu

from playground.state.preferences import PANELS
from playground.views import theme

__all__ = ["make_actions"]

#: used when another part of the window already has the first choice
FALLBACK_KEYS = {"open_session": "Ctrl+Alt+O", "save_session": "Ctrl+Alt+S",
                 "export_window": "Ctrl+Alt+E"}


def make_actions(room, commands, menus) -> dict[str, QMenu]:
    """Add ``room``'s actions to ``menus`` (key -> QMenu) through ``commands``; each also
    goes into ``room.actions``. The submenus made: export, theme and panels."""

    def add(name, text, keys=(), slot=None, menu=None, **options):
        action = commands.add(name, text, keys, slot, menu, fallback=FALLBACK_KEYS.get(name),
                              **options)
        room.actions[name] = action
        return action

    made = {"export": _file_menu(room, add, menus["file"], commands.by_name.get("quit")),
            "theme": _zoom_and_theme(room, add, menus["view"]),
            "panels": _presentation(room, add, menus["view"])}
    _panes(room, add, menus["view"])
    add("shortcuts", "Keyboard shortcuts", ["F1"], room.show_shortcuts, menus["help"])
    return made


def _file_menu(room, add, file_menu: QMenu, quit_action) -> QMenu:
    """Sessions and the Export submenu, above Quit (between separators)."""
    sessions, exports = room.sessions, room.exports
    before = quit_action if quit_action in file_menu.actions() else None
    items = file_menu.actions()
    previous = items[items.index(before) - 1] if before in items[1:] else (
        items[-1] if items and before is None else None)
    if previous is not None and not previous.isSeparator():
        file_menu.insertSeparator(before)
    add("open_session", "Open session…", ["Ctrl+Shift+O"], sessions.open_session_dialog,
        file_menu, before=before,
        tip="Open a saved session: Function, inputs, seed, loop, zoom and theme")
    add("save_session", "Save session", ["Ctrl+S"], lambda: sessions.save_session(),
        file_menu, before=before, tip="Save the session (asks for a file the first time)")
    add("save_session_as", "Save session as…", ["Ctrl+Shift+S"],
        lambda: sessions.save_session(ask=True), file_menu, before=before)
    file_menu.insertSeparator(before)
    export_menu = QMenu("Export", room.window)
    for name, text, slot in (
            ("export_loss_png", "Loss plot as PNG…", lambda: exports.export_loss("png")),
            ("export_loss_svg", "Loss plot as SVG…", lambda: exports.export_loss("svg")),
            ("export_loss_csv", "Loss history as CSV…", lambda: exports.export_loss_csv()),
            ("export_heatmaps_png", "Heatmaps as PNG…", lambda: exports.export_heatmaps("png")),
            ("export_heatmaps_svg", "Heatmaps as SVG…", lambda: exports.export_heatmaps("svg")),
            ("export_jacobians_npy", "Jacobians as .npy…",
             lambda: exports.export_jacobians("npy")),
            ("export_jacobians_csv", "Jacobians as CSV…",
             lambda: exports.export_jacobians("csv"))):
        add(name, text, (), slot, export_menu)
    export_menu.addSeparator()
    add("export_window", "Window screenshot (PNG)…", ["Ctrl+Shift+E"],
        lambda: exports.export_window(), export_menu)
    file_menu.insertMenu(before, export_menu)
    file_menu.insertSeparator(before)
    return export_menu


def _zoom_and_theme(room, add, view: QMenu) -> QMenu:
    prefs = room.preferences
    add("zoom_in", "Zoom in", ["Ctrl+=", "Ctrl++"], lambda: prefs.zoom_by(1), view)
    add("zoom_out", "Zoom out", ["Ctrl+-"], lambda: prefs.zoom_by(-1), view)
    add("zoom_reset", "Actual size (100 %)", ["Ctrl+0"], lambda: prefs.set_zoom(100), view)
    view.addSeparator()
    theme_menu = view.addMenu("Theme")
    group = QActionGroup(room.window)
    group.setExclusive(True)
    for name, item in theme.THEMES.items():
        action = add(f"theme_{name}", item.title, (),
                     lambda _c=False, n=name: prefs.set_theme(n), theme_menu, checkable=True)
        group.addAction(action)
    room.actions["theme_light"].setChecked(True)
    prefs.themeChanged.connect(lambda name: room.actions[f"theme_{name}"].setChecked(True))
    theme_menu.addSeparator()
    add("next_theme", "Next theme", ["F2"],
        lambda: prefs.set_theme(theme.next_theme(prefs.theme)), theme_menu,
        tip="Light, dark, high contrast")
    view.addSeparator()
    return theme_menu


def _presentation(room, add, view: QMenu) -> QMenu:
    prefs, presentation = room.preferences, room.presentation
    add("presentation", "Presentation mode", ["F5"], presentation.toggle_presentation, view,
        checkable=True,
        tip="Full screen, large readout, chosen panels hidden (F5 or Esc leaves)")
    leave = add("leave_presentation", "Leave presentation mode", ["Esc"],
                lambda: presentation.set_presentation(False), view)
    leave.setEnabled(False)
    panels = view.addMenu("Presentation panels")
    panels.setToolTipsVisible(True)
    for key, text in PANELS.items():
        action = add(f"hide_{key}", f"Hide {text.lower()}", (),
                     lambda on, k=key: prefs.set_panel_hidden(k, on), panels, checkable=True)
        action.setChecked(key in prefs.hidden_panels)
    add("fullscreen", "Full screen", ["F11"], presentation.toggle_fullscreen, view,
        checkable=True)
    view.addSeparator()
    return panels


def _panes(room, add, view: QMenu) -> None:
    layout = room.layout
    side = add("side_panel", "Side panel (code, editor, inspector, step)", ["F9"],
               layout.toggle_side_panel, view, checkable=True,
               tip="Show or hide the tabs beside the loss plot")
    side.setChecked(True)
    add("jacobian_details", "Jacobian details", (), layout.set_details_shown, view,
        checkable=True, tip="The verdict's numbers, the worst entry, notes and tolerances")
    add("find_function", "Find a Function", ["Ctrl+F"], room.find_function, view,
        tip="The Function search, its text selected: type, then Return opens the first match")
    add("reset_layout", "Reset layout", ["Ctrl+Shift+L"], room.reset_layout, view,
        tip="Panes back to their first sizes: the heatmaps get their room (in presentation "
            "mode too)")
    view.addSeparator()
    add("show_explainer", "Step explainer", (), room.show_explainer, view,
        tip="Explain the last step: loss, gradient, update")
