"""Text that fits: tick labels thinned to what fits an axis (never overlapping), and a scroll
area as tall as the text in it needs, up to a share of a pane (wrapped text is never cut,
and never pushes the pane's graphics below a readable size)."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QFrame, QScrollArea, QSizePolicy, QWidget

__all__ = ["FitScroll", "FittedTickSpacing", "fitted_tick_levels"]


def fitted_tick_levels(levels: list[tuple[float, float]], low: float, high: float,
                       length: float, text_height: float) -> list[tuple[float, float]]:
    """Tick levels (pyqtgraph's [(spacing, offset)], coarsest first) thinned so that no two
    labels of a vertical axis ``length`` pixels long overlap: every spacing kept is at least
    one label (``text_height`` pixels, plus a gap) apart on screen; if none is, the nicest
    (1, 2 or 5 times a power of ten) spacing that is."""
    span = abs(high - low)
    if span == 0 or length <= 0 or text_height <= 0:
        return levels
    least = text_height * 1.2 * span / length  # a label's height and a gap, in axis units
    kept = [(spacing, offset) for spacing, offset in levels if spacing >= least]
    power = 10.0 ** math.floor(math.log10(least))
    nice = next(float(f"{m * power:.12g}") for m in (1, 2, 5, 10) if m * power >= least)
    low, high = min(low, high), max(low, high)
    if kept and (_ticks(*kept[-1], low, high) >= 2 or _ticks(nice, 0.0, low, high) < 2):
        return kept
    # none fits, or those that do label one value (a short loss axis at 150 %: "0.5" alone
    # said nothing of the scale): the finest 1, 2 or 5 that fits
    return [(nice, 0.0)]


def _ticks(spacing: float, offset: float, low: float, high: float) -> int:
    """How many multiples of ``spacing`` (shifted by ``offset``) lie in [low, high]."""
    return max(0, math.floor((high - offset) / spacing) - math.ceil((low - offset) / spacing)
               + 1)


class FittedTickSpacing:
    """An axis' tickSpacing (set it on the axis: ``axis.tickSpacing = FittedTickSpacing(axis)``):
    pyqtgraph's, thinned to labels that fit the axis' length in its tick font (see
    :func:`fitted_tick_levels`). Only for vertical axes: one label is a line of text tall."""

    def __init__(self, axis: pg.AxisItem):
        self._axis = axis

    def __call__(self, low: float, high: float, size: float) -> list[tuple[float, float]]:
        axis = self._axis
        levels = pg.AxisItem.tickSpacing(axis, low, high, size)
        font = axis.style.get("tickFont") or QFont()
        return fitted_tick_levels(levels, low, high, size, QFontMetrics(font).height())


class FitScroll(QScrollArea):
    """Shows ``content`` whole where it fits in ``share`` of ``pane``'s height, else that
    much of it, scrolled (never less than ``lines`` lines while it has them). With ``most``
    (a number of lines) instead of a pane, whole up to that many lines of its font: a height
    that follows the text, the width and the font, never the height of what holds it (laid
    out in a column, the column's height would then depend on itself)."""

    def __init__(self, content: QWidget, pane: QWidget | None = None, share: float = 0.3,
                 lines: int = 2, most: int | None = None):
        super().__init__()
        self._pane, self._share, self._lines, self._most = pane, share, lines, most
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        # the pane's colours show through (a banner's background)
        self.viewport().setAutoFillBackground(False)
        content.setAutoFillBackground(False)
        content.installEventFilter(self)
        if pane is not None and most is None:
            pane.installEventFilter(self)

    def _needed(self) -> int:
        content = self.widget()
        width = self.viewport().width() if self.isVisible() else self.width()
        layout = content.layout()
        slack = 2 * self.frameWidth() + 2  # rounding: no scroll bar for what fits
        if layout is not None and layout.hasHeightForWidth() and width > 0:
            return layout.totalHeightForWidth(width) + slack
        if content.hasHeightForWidth() and width > 0:
            return content.heightForWidth(width) + slack
        return content.sizeHint().height() + slack

    def sizeHint(self) -> QSize:
        if self._most is not None or self._pane is None:
            cap = (self._most or self._lines) * self.fontMetrics().height()
        else:
            cap = max(self._lines * self.fontMetrics().height(),
                      int(self._pane.height() * self._share))
        return QSize(super().sizeHint().width(), min(self._needed(), cap))

    def minimumSizeHint(self) -> QSize:
        least = self._lines * self.fontMetrics().height()
        return QSize(0, min(self._needed(), least))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (watched is self.widget() and event.type() == QEvent.Type.LayoutRequest) or (
                watched is self._pane and event.type() == QEvent.Type.Resize):
            self.updateGeometry()
        return False

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.updateGeometry()  # another width: another height for the wrapped text
