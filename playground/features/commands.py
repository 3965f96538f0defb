"""The window's commands: named QActions whose keys work anywhere in the window.

The window and each feature add their actions through one :class:`Commands`, which keeps
them all by name (``MainWindow.actions_by_name``: tests and the shortcuts help read it) and
never gives a key to two actions (both would stop working).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

__all__ = ["Commands"]


class Commands:
    """Adds actions to ``window``: a shortcut acts window-wide (with the menu bar hidden too),
    the menu entry goes where asked, and ``by_name`` has every action added so far."""

    def __init__(self, window: QWidget) -> None:
        self.window = window
        self.by_name: dict[str, QAction] = {}

    def add(self, name: str, text: str, keys=(), slot=None, menu: QMenu | None = None, *,
            before: QAction | None = None, checkable: bool = False, tip: str = "",
            fallback: str | None = None) -> QAction:
        """A new action ``name``: ``keys`` less those taken (``fallback`` if that left none),
        ``slot`` on trigger, in ``menu`` (before ``before``, else at the end)."""
        action = QAction(text, self.window)
        if keys:
            action.setShortcuts(self.free_keys(keys, fallback))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.setCheckable(checkable)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        if slot is not None:
            action.triggered.connect(slot)
        self.window.addAction(action)
        if menu is not None:
            menu.insertAction(before, action)
        self.by_name[name] = action
        return action

    def free_keys(self, keys, fallback: str | None = None) -> list[QKeySequence]:
        """``keys`` less those an action added before already has, plus ``fallback`` if
        that left none (and it is free)."""
        taken = {k.toString() for a in self.by_name.values() for k in a.shortcuts()}
        free = [QKeySequence(k) for k in keys if QKeySequence(k).toString() not in taken]
        if not free and fallback and QKeySequence(fallback).toString() not in taken:
            free = [QKeySequence(fallback)]
        return free
