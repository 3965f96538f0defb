"""Help > Keyboard shortcuts: a table made from the window's actual QActions; Escape leaves
a text field, so that the one-key shortcuts (Space, S, R, C) act again."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from playground.views import app_filters

__all__ = ["ShortcutsDialog", "TextFieldEscape", "is_text_field", "shortcut_rows"]


def is_text_field(widget: QWidget | None) -> bool:
    """Whether ``widget`` takes typed text (a line edit, spin box, editable combo box or
    text editor): one-key shortcuts type into it instead of acting."""
    if isinstance(widget, (QLineEdit, QAbstractSpinBox)):
        return True
    if isinstance(widget, QComboBox):
        return widget.isEditable()
    if isinstance(widget, (QPlainTextEdit, QTextEdit)):
        return not widget.isReadOnly()
    return False


class TextFieldEscape(QObject):
    """Escape in a text field, combo box or button of ``window`` gives the keyboard back to
    ``home`` (a widget that types nothing): Space, S, R and C act again. Escape stays what
    it is elsewhere (leaving presentation mode, closing a popup).

    And a button reached with Tab is pressed by Space, Return or Enter, as in any dialog:
    the window's one-key shortcut Space (Play) took the key before the button (a teacher
    tabbing to an error's Details pressed Play instead), and a push button outside a dialog
    ignores Return. A button that took the focus from a click leaves Space to Play, as a
    teacher clicking a button and then pressing Space expects."""

    _PRESSING = (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)
    _BY_KEYS = (Qt.FocusReason.TabFocusReason, Qt.FocusReason.BacktabFocusReason)

    def __init__(self, window: QWidget, home: QWidget):
        super().__init__(window)
        self._window = window
        self._home = home
        #: the button that the keyboard's Tab gave the focus to, while it has it
        self._tabbed: QObject | None = None
        app_filters.install(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.FocusIn:
            if isinstance(watched, QAbstractButton):
                self._tabbed = watched if event.reason() in self._BY_KEYS else None
            return False
        if kind == QEvent.Type.ShortcutOverride:
            if watched is self._tabbed and self._pressing(event):
                event.accept()  # the button's key, not the window's shortcut
                return True
            return False
        if kind != QEvent.Type.KeyPress:
            return False
        if watched is self._tabbed and self._pressing(event) \
                and event.key() != Qt.Key.Key_Space:  # Space: the button's own press
            if watched.isEnabled():
                watched.animateClick()
            return True
        if event.key() == Qt.Key.Key_Escape \
                and isinstance(watched, QWidget) and watched.window() is self._window:
            field = watched
            if isinstance(field.parentWidget(), (QAbstractSpinBox, QComboBox)):
                field = field.parentWidget()  # the line edit inside a spin or combo box
            if is_text_field(field) or (isinstance(field, (QComboBox, QAbstractButton))
                                        and field is not self._home):
                # a combo box or a button reached with Tab takes Space too (a combo box
                # opens its list, a button is pressed): Escape gives the keys back there too
                self._home.setFocus(Qt.FocusReason.OtherFocusReason)
                return True
        return False

    def _pressing(self, event: QEvent) -> bool:
        return (event.key() in self._PRESSING and isinstance(self._tabbed, QWidget)
                and self._tabbed.hasFocus() and self._tabbed.window() is self._window
                and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier)


def _menu_places(window) -> dict[int, tuple[int, str]]:
    """id(action) -> (position in menu order, "Menu > Submenu") for actions in the menus."""
    found: dict[int, tuple[int, str]] = {}

    def walk(menu: QMenu, trail: str) -> None:
        for action in menu.actions():
            sub = action.menu()
            if sub is not None:
                walk(sub, f"{trail} > {_plain(action.text())}")
            elif not action.isSeparator():
                found.setdefault(id(action), (len(found), trail))

    for action in window.menuBar().actions():
        if action.menu() is not None:
            walk(action.menu(), _plain(action.text()))
    return found


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…. ")


def shortcut_rows(window) -> list[tuple[str, str, str]]:
    """(keys, action, menu) for every action of ``window`` that has a shortcut, in menu
    order; actions that are in no menu come last."""
    places = _menu_places(window)
    rows, seen = [], set()
    for action in window.findChildren(QAction):
        keys = [k for k in action.shortcuts() if not k.isEmpty()]
        if not keys or id(action) in seen:
            continue
        seen.add(id(action))
        text = ", ".join(k.toString(QKeySequence.SequenceFormat.NativeText) for k in keys)
        order, menu = places.get(id(action), (len(places) + len(rows), ""))
        rows.append((order, text, _plain(action.text()), menu))
    rows.sort(key=lambda r: r[0])
    return [r[1:] for r in rows]


class ShortcutsDialog(QDialog):
    """A table of keys, what they do, and where the same command is in the menus."""

    def __init__(self, window):
        super().__init__(window)
        self.setWindowTitle("Keyboard shortcuts")
        rows = shortcut_rows(window)
        self.table = QTableWidget(len(rows), 3)
        self.table.setHorizontalHeaderLabels(["Keys", "Action", "Menu"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                self.table.setItem(r, c, QTableWidgetItem(text))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        note = QLabel("Also: Ctrl + mouse wheel zooms everything.")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(note)
        layout.addWidget(buttons)
        metrics = self.fontMetrics()
        table_height = (self.table.verticalHeader().length()
                        + self.table.horizontalHeader().sizeHint().height() + 6)
        extra = note.sizeHint().height() + buttons.sizeHint().height() + 40
        screen = window.screen().availableGeometry() if window.screen() else None
        most = int(screen.height() * 0.85) if screen else 900
        self.resize(metrics.horizontalAdvance("M") * 60, min(table_height + extra, most))
