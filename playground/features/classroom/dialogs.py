"""The file dialogs of session files and exports, in one object that tests replace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget

__all__ = ["FileDialogs"]


class FileDialogs:
    """Ask where to save or what to open; None when the user cancels.

    ``session_path()`` is the session file open now (or None): a save starts in its folder.
    """

    def __init__(self, parent: QWidget, session_path: Callable[[], Path | None]) -> None:
        self.parent = parent
        self._session_path = session_path

    def ask_save_path(self, title: str, filters: str, suggested: str) -> str | None:
        current = self._session_path()
        start = str(current.parent / suggested) if current else suggested
        path, _ = QFileDialog.getSaveFileName(self.parent, title, start, filters)
        return path or None

    def ask_open_path(self, title: str, filters: str) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self.parent, title, "", filters)
        return path or None

    def ask_export_path(self, title: str, fmt: str, suggested: str, path=None) -> str | None:
        """``path`` (or one the user picks) ending in ``.fmt``; None if the user cancels."""
        if path is None:
            path = self.ask_save_path(title, f"{fmt.upper()} (*.{fmt})", f"{suggested}.{fmt}")
        if path and not str(path).lower().endswith(f".{fmt}"):
            path = f"{path}.{fmt}"
        return path or None
