"""The dialogs of opening a Function: which of several, a file, an import path. The Byof
object keeps them as attributes (``chooser``, ``ask_open_file``, ``ask_import_path``) so tests
replace them instead of clicking through modal windows."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog, QInputDialog

__all__ = ["ask_import_path", "ask_open_file", "choose_function"]


def _can_show_dialogs() -> bool:
    app = QGuiApplication.instance()
    return app is not None and QGuiApplication.platformName() not in ("offscreen", "minimal")


def choose_function(parent, where: str, names: list[str]) -> str | None:
    """Ask which of several Functions to open; None when cancelled (or no screen)."""
    if not _can_show_dialogs():
        return None
    name, ok = QInputDialog.getItem(
        parent, "Choose a Function", f"{where} defines several autograd Functions.\n"
        "Which one do you want to open?", names, 0, False)
    return name if ok and name else None


def ask_open_file(parent, start: str) -> str | None:
    path, _ = QFileDialog.getOpenFileName(
        parent, "Open a Python file with a torch.autograd.Function", start,
        "Python files (*.py);;All files (*)")
    return path or None


def ask_import_path(parent) -> str | None:
    text, ok = QInputDialog.getText(
        parent, "Open import path", "A Function of an installed package, as "
        "package.module:Class (or package.module to choose):")
    return text.strip() if ok and text.strip() else None
