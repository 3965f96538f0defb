"""Font helpers shared by the panes (every pane scales from one font: see zoom.py).

A pane's titles, notes and tick labels are the zoomed font times a factor: :func:`scaled`
makes them (in points, or in pixels for a font sized in pixels), :func:`css_size` writes the
same size for pyqtgraph's HTML labels, and :func:`code_font` is the monospace font the code
panes use at the same size.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontDatabase, QFontMetrics
from PySide6.QtWidgets import QApplication

__all__ = ["code_font", "css_size", "fitted", "point_size", "scaled"]


def point_size(font: QFont) -> float:
    """The font's point size; the application's when the font is sized in pixels."""
    size = font.pointSizeF()
    if size > 0:
        return size
    app_size = QApplication.font().pointSizeF()
    return app_size if app_size > 0 else 10.0


def scaled(font: QFont, factor: float = 1.0, *, bold: bool | None = None,
           italic: bool | None = None, minimum: float = 0.0) -> QFont:
    """A copy of ``font`` ``factor`` times its size, in the unit it is sized in (points, or
    whole pixels), at least ``minimum`` of that unit; bold or italic where asked."""
    out = QFont(font)
    if font.pointSizeF() > 0:
        out.setPointSizeF(max(minimum, font.pointSizeF() * factor))
    elif font.pixelSize() > 0:
        out.setPixelSize(max(1, round(minimum), round(font.pixelSize() * factor)))
    if bold is not None:
        out.setBold(bold)
    if italic is not None:
        out.setItalic(italic)
    return out


def fitted(font: QFont, text: str, width: int, least: float) -> QFont:
    """``font``, smaller where ``text`` is wider than ``width`` (to fit, but not below
    ``least`` of its size), as a slide's title shrinks to fit."""
    font = QFont(font)
    wide = QFontMetrics(font).horizontalAdvance(text)
    if wide <= width or width <= 0:
        return font
    points, pixels = font.pointSizeF(), font.pixelSize()
    if points > 0:
        font.setPointSizeF(max(least * points, points * width / wide))
    else:
        font.setPixelSize(max(round(least * pixels), pixels * width // wide))
    # sizes do not scale text's width exactly (hinting): a step smaller where it is over
    while QFontMetrics(font).horizontalAdvance(text) > width:
        if points > 0 and font.pointSizeF() - 0.5 >= least * points:
            font.setPointSizeF(font.pointSizeF() - 0.5)
        elif points <= 0 and font.pixelSize() - 1 >= least * pixels:
            font.setPixelSize(font.pixelSize() - 1)
        else:
            break
    return font


def css_size(font: QFont, factor: float = 1.0) -> str:
    """``factor`` times the font's size as a CSS size ("12.0pt", or "15px" for a font sized in
    pixels), for pyqtgraph's HTML labels and titles."""
    if font.pointSizeF() > 0:
        return f"{font.pointSizeF() * factor:.1f}pt"
    if font.pixelSize() > 0:
        return f"{font.pixelSize() * factor:.0f}px"
    return f"{point_size(font) * factor:.1f}pt"


def code_font(points: float) -> QFont:
    """The system's fixed-pitch font at ``points``, asked for as monospace twice over (the
    family, and the style hint): what a machine's fontconfig then picks is its own affair."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    font.setPointSizeF(points)
    return font
