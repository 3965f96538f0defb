"""What is drawn over the Jacobian heatmaps: the mismatches (each outlined, or a translucent
amber mask where there are too many), the ring on the worst entry, each diagnosed block's
dashed outline with its words (above the matrix, in the room :attr:`Heatmaps.top_pad` keeps
free: over it they hid the top row's cells), and the square on the hovered entry."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QPalette
from PySide6.QtWidgets import QWidget

from playground.views.fonts import scaled
from playground.views.jacobian.heatmaps import Heatmaps
from playground.views.jacobian.items import Image, Scatter

if TYPE_CHECKING:
    import torch

    from customgrad.checking.jacobian import Report

__all__ = ["SCAN_ENTRIES", "SCATTER_LIMIT", "Marks", "tag_place"]

#: More mismatches than this are shown as a translucent mask image instead of outlines.
SCATTER_LIMIT = 5000
#: Mismatches are outlined one by one only where the failing blocks hold at most this many
#: entries (else the mask is laid over the difference as an image).
SCAN_ENTRIES = 1 << 20

_HALO = QColor(255, 255, 255, 190)
_MISMATCH = QColor("#111111")
_MASK = (250, 200, 0, 150)  # amber wash for masks too dense to outline one by one
_HOVER = QColor("#00a0a0")
#: a diagnosis tag's margin around its words, and the pixels between it and the matrix
_TAG_MARGIN, _TAG_GAP = 2, 2


class Marks:
    """The marks on ``heatmaps``, sized from the font of ``owner`` (the pane)."""

    def __init__(self, heatmaps: Heatmaps, owner: QWidget):
        self._heatmaps = heatmaps
        self._owner = owner
        self.mode = ""  # how mismatches are marked: "outline", "wash" or "" (none)
        self.diagnosis_items: list = []  # the outlines and words of mark_diagnoses
        self._worst_style: tuple | None = None  # (font pixels, failed) the rings are styled for
        self._worst_cell: tuple[float, float] | None = None  # (col, row) of the ring
        self._tags: list = []  # (label, (x, y, w, h) of its block) of mark_diagnoses
        self.mismatch_markers = Scatter(pxMode=True, symbol="s", brush=None)
        self.mismatch_markers.setZValue(7)
        self.mismatch_overlay = Image(axisOrder="row-major", autoDownsample=True)
        self.mismatch_overlay.setTransform(pg.QtGui.QTransform().translate(-0.5, -0.5))
        lut = np.array([[0, 0, 0, 0]] + [list(_MASK)] * 255, dtype=np.uint8)
        self.mismatch_overlay.setLookupTable(lut)
        self.mismatch_overlay.setZValue(1)
        diff_plot = heatmaps.panels[2].plot
        diff_plot.addItem(self.mismatch_overlay, ignoreBounds=True)
        diff_plot.addItem(self.mismatch_markers, ignoreBounds=True)

    def clear(self) -> None:
        self.mismatch_markers.clear()
        self.mismatch_overlay.clear()
        self.mode = ""
        for panel in self._heatmaps.panels:
            panel.worst.clear()
            panel.worst_halo.clear()
        for item in self.diagnosis_items:
            self._heatmaps.panels[2].plot.removeItem(item)
        self.diagnosis_items = []
        self._tags = []
        self._worst_cell = None

    def clear_mismatches(self) -> None:
        self.mismatch_markers.clear()
        self.mismatch_overlay.clear()

    def mark_mismatches(self, report: Report, mask: np.ndarray,
                        pooled: torch.Tensor | None = None, step: int = 1) -> None:
        """Outline each mismatch, or, when there are many or finding them would mean
        scanning a big mask, lay the mask (``pooled`` by ``step``, if given) over the
        difference as an amber wash."""
        count = report.mismatches
        failing = [b for b in report.blocks if b.mismatches]
        scan = sum(b.size for b in failing)
        if count > SCATTER_LIMIT or scan > SCAN_ENTRIES:
            self.mode = "wash"
            step = 1 if pooled is None else step
            wash = mask if pooled is None else pooled.numpy()
            # levels (0, 1/255): zoomed out, pyqtgraph averages the mask, and any pixel with
            # a mismatch in it still maps to the amber end of the lookup table
            self.mismatch_overlay.setImage(wash.view(np.uint8), autoLevels=False,
                                           levels=(0.0, 1.0 / 255))
            transform = pg.QtGui.QTransform().translate(-0.5, -0.5)
            transform.scale(step, step)
            self.mismatch_overlay.setTransform(transform)
            return
        self.mode = "outline"
        xs, ys = [], []
        for block in failing:  # only the failing blocks are looked at
            o, i = block.output, block.input
            rows, cols = np.nonzero(mask[o.offset:o.offset + o.size, i.offset:i.offset + i.size])
            ys.append(rows + o.offset)
            xs.append(cols + i.offset)
        self.mismatch_markers.setData(x=np.concatenate(xs).astype(float),
                                      y=np.concatenate(ys).astype(float))

    def mark_worst(self, report: Report) -> None:
        """Ring the report's worst entry on all three heatmaps."""
        worst = report.worst
        if worst is None:
            return
        for panel in self._heatmaps.panels:
            for item in (panel.worst_halo, panel.worst):
                item.setData(x=[float(worst.col)], y=[float(worst.row)])
        self._worst_cell = (float(worst.col), float(worst.row))
        self.style_worst(not report.passed)
        self._place_tags()

    def mark_diagnoses(self, report: Report) -> None:
        """On the difference heatmap: each diagnosed block outlined (dashed), with what
        looks wrong written at its top left."""
        blocks = {b.name: b for b in report.blocks}
        plot = self._heatmaps.panels[2].plot
        palette = self._owner.palette()
        colour = palette.color(QPalette.ColorRole.WindowText)
        for d in report.diagnoses:
            block = blocks.get(d.block)
            if block is None:
                continue
            x, y = block.input.offset - 0.5, block.output.offset - 0.5
            w, h = block.input.size, block.output.size
            box = pg.PlotCurveItem([x, x + w, x + w, x, x], [y, y, y + h, y + h, y],
                                   pen=pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine))
            label = pg.TextItem(d.kind.replace("_", " "), color=colour, anchor=(0, 1),
                                fill=pg.mkBrush(palette.color(QPalette.ColorRole.Base)))
            label.textItem.document().setDocumentMargin(_TAG_MARGIN)
            label.setFont(scaled(self._owner.font(), 1.0))
            label.setToolTip(d.detail)
            self._tags.append((label, (x, y, w, h)))
            for item in (box, label):
                item.setZValue(12)
                plot.addItem(item, ignoreBounds=True)
                self.diagnosis_items.append(item)
        self._place_tags()

    def tag_height(self) -> int:
        """The pixels the diagnosis tags need above the matrix (0: none shown)."""
        heights = [label.textItem.boundingRect().height() for label, _ in self._tags]
        return math.ceil(max(heights)) + _TAG_GAP if heights else 0

    def _place_tags(self) -> None:
        """Each diagnosis' words above the matrix, over its block's columns: at its block's
        left edge, or its right edge where the ring on a worst entry in the top row reaches
        up there; side by side where two blocks' tags would meet."""
        if not self._tags:
            return
        vb = self._heatmaps.panels[2].plot.getViewBox()
        try:
            px, py = vb.viewPixelSize()
        except Exception:  # not laid out yet: fit_size places them again
            px = py = 0.0
        (low, high), _rows = vb.viewRange()
        ring = QFontMetrics(self._owner.font()).height() * 0.75 + 4  # its radius and halo
        top = -0.5 - _TAG_GAP * py  # a little above the matrix's top edge
        end = low
        for label, rect in sorted(self._tags, key=lambda t: t[1][0]):
            text = label.textItem.boundingRect()
            size = (text.width() * px, text.height() * py) if px > 0 and py > 0 else \
                (rect[2] / 2, 1.0)
            reach = (ring * px, ring * py) if px > 0 and py > 0 else (1.0, 1.0)
            left = tag_place(rect, self._worst_cell, size, reach, top)
            # inside the view, whole (a narrow block's tag ran past the view's edge, cut:
            # "transpos" at 1280x720, 150 %), and clear of the tag before it
            left = max(low, end, min(left, high - size[0]))
            label.setAnchor((0, 1))
            label.setPos(left, top)
            end = left + size[0] + 4 * px

    def set_hover(self, cell: tuple[int, int] | None) -> None:
        """The square on the hovered entry (row, col), on all three heatmaps."""
        for panel in self._heatmaps.panels:
            if cell is None:
                panel.hover.clear()
            else:
                panel.hover.setData(x=[float(cell[1])], y=[float(cell[0])])

    # ------------------------------------------------------------------ sizes, pens

    def restyle(self, failed: bool) -> None:
        """Pens as thick as the pane's font asks (``failed``: the worst entry failed)."""
        pixels = QFontMetrics(self._owner.font()).height()
        for label, _rect in self._tags:
            label.setFont(scaled(self._owner.font(), 1.0))
        for panel in self._heatmaps.panels:
            panel.hover.setPen(pg.mkPen(_HOVER, width=max(2.0, pixels / 7)))
        self.mismatch_markers.setPen(pg.mkPen(_MISMATCH, width=max(1.5, pixels / 10)))
        self.style_worst(failed)
        self.fit_size()

    def style_worst(self, failed: bool) -> None:
        pixels = QFontMetrics(self._owner.font()).height()
        if (pixels, failed) == self._worst_style:
            return  # re-styling six markers re-renders their symbols: about 1 ms a report
        self._worst_style = (pixels, failed)
        size = pixels * (1.5 if failed else 1.25)
        for panel in self._heatmaps.panels:
            if failed:
                panel.worst_halo.setPen(pg.mkPen(_HALO, width=max(5.0, pixels / 3)))
                panel.worst.setPen(pg.mkPen("#000000", width=max(2.5, pixels / 6)))
            else:
                panel.worst_halo.setPen(pg.mkPen(QColor(255, 255, 255, 150),
                                                 width=max(3.0, pixels / 5)))
                panel.worst.setPen(pg.mkPen(QColor(60, 60, 60, 200), width=1.5,
                                            style=Qt.PenStyle.DashLine))
            panel.worst_halo.setSize(size)
            panel.worst.setSize(size)

    def fit_size(self, *_args) -> None:
        """Cell outlines follow the zoom, but never shrink below a visible size."""
        vb = self._heatmaps.view_box
        try:
            px, py = vb.viewPixelSize()
        except Exception:  # not laid out yet
            return
        cell = min(1.0 / px, 1.0 / py) if px > 0 and py > 0 else 10.0
        pixels = QFontMetrics(self._owner.font()).height()
        minimum = max(6.0, pixels * 0.45)
        self.mismatch_markers.setSize(max(minimum, cell * 0.8))
        for panel in self._heatmaps.panels:
            panel.hover.setSize(max(minimum + 2, cell + 2))
        self._place_tags()


def tag_place(rect: tuple[float, float, float, float], worst: tuple[float, float] | None,
              size: tuple[float, float], reach: tuple[float, float], top: float) -> float:
    """Where a block's diagnosis tag (``size`` in cells) starts, its bottom at ``top`` (above
    the matrix): at the left edge of ``rect`` (x, y, w, h; rows down), or ending at its
    right edge where the tag at the left would touch the ring around ``worst`` (col, row;
    reaching ``reach`` cells: a worst entry in the top row rings up into the tags' room);
    where both would, the edge farther from it."""
    x, _y, w, _h = rect
    tw, th = size
    starts = [x, x + w - tw]
    if worst is None:
        return starts[0]
    col, row = worst
    rx, ry = reach

    def clear(left: float) -> bool:
        return (col + rx < left or col - rx > left + tw
                or row + ry < top - th or row - ry > top)

    for left in starts:
        if clear(left):
            return left
    return max(starts, key=lambda left: abs(left + tw / 2 - col))
