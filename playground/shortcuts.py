"""Help > Keyboard shortcuts: a table made from the window's actual QActions."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

__all__ = ["ShortcutsDialog", "shortcut_rows"]


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
