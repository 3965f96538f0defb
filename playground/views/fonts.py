"""Font helpers shared by the panes (every pane scales from one font: see zoom.py)."""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication


def point_size(font: QFont) -> float:
    """The font's point size; the application's when the font is sized in pixels."""
    size = font.pointSizeF()
    if size > 0:
        return size
    app_size = QApplication.font().pointSizeF()
    return app_size if app_size > 0 else 10.0
