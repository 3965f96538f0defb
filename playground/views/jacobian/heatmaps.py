"""The Jacobian pane's graphics: three linked heatmaps (analytic, numerical, difference) in one
pyqtgraph layout, with the row-label column, the block lines and the two colour bars.

Columns of the layout: row labels | analytic | numerical | colour bar | difference | colour
bar. The row labels have a column of their own, so the three views are built alike and share
the width equally. What is drawn over the heatmaps (mismatches, rings, outlines) is
:mod:`.marks`; the block labels and titles are :mod:`.labels`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QWidget

from customgrad.checking.jacobian.report import FINITE_DIFFERENCES, REFERENCE
from playground.support import preview
from playground.views.fitting import FittedTickSpacing
from playground.views.fonts import point_size, scaled
from playground.views.jacobian.geometry import cell_aspect, compact_tick_strings, grid_lines
from playground.views.jacobian.items import Curve, Image, Scatter, ignore_text_width
from playground.views.pyqtgraph_compat import lighter_plots
from playground.views.theme import mix

if TYPE_CHECKING:
    import torch

    from customgrad.checking.jacobian import Axis, Report

__all__ = ["Heatmaps", "Panel"]

lighter_plots()  # its plots build what their first paint does not show when used

_GRID = QColor(25, 25, 25)
_HALO = QColor(255, 255, 255, 190)
_TITLES = (("analytic", "Analytic (backward)"),
           ("numerical", "Numerical (finite diff.)"),
           ("difference", "Difference (a − n)"))
#: the second order's: backward differentiated by autograd, and by finite differences
#: (where they do not fit, the words before " (": "Double backward", "Numerical")
_SECOND_TITLES = (("analytic", "Double backward (analytic)"),
                  ("numerical", "Numerical (finite diff. of backward)"),
                  ("difference", "Difference (a − n)"))
#: the middle panel's title by the order and how its matrix was made (Report.method.name):
#: the verified reference (autograd through forward, or through backward for the second
#: order), or finite differences. "Numerical" either way, as the README, the rule
#: (|a − n|), the "Difference (a − n)" title and the worst entry's line call it: the middle
#: heatmap was "Numerical" while a check ran and "Reference" once it was done
_NUMERICAL_TITLES = {
    (1, REFERENCE): "Numerical (autograd of forward, verified)",
    (1, FINITE_DIFFERENCES): _TITLES[1][1],
    (2, REFERENCE): "Numerical (autograd of backward, verified)",
    (2, FINITE_DIFFERENCES): _SECOND_TITLES[1][1],
}
_COLUMNS = {"analytic": 1, "numerical": 2, "difference": 4}


@dataclass
class Panel:
    """One heatmap: its plot, image and overlay items."""

    key: str
    title: str
    plot: pg.PlotItem
    image: pg.ImageItem
    grid_halo: pg.PlotCurveItem
    grid: pg.PlotCurveItem
    hover: pg.ScatterPlotItem
    worst_halo: pg.ScatterPlotItem
    worst: pg.ScatterPlotItem
    shown_title: str = ""
    #: the title where not even the words before " (" fit all three ("Analytic",
    #: "Numerical", "Difference")
    short: str = ""

    def __post_init__(self) -> None:
        self.short = self.short or self.key.capitalize()


class Heatmaps:
    """The graphics widget (``graphics``) and what is in it. ``owner`` is the pane whose font
    and palette it follows."""

    def __init__(self, owner: QWidget):
        self._owner = owner
        #: the views' size on screen in device pixels (the largest's: JacobianView sets it)
        self.pixels = preview.PREVIEW_PIXELS
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setMinimumSize(300, 160)
        self.graphics.ci.layout.setContentsMargins(4, 4, 4, 4)
        self.graphics.ci.layout.setHorizontalSpacing(4)
        self.panels = [self._build_panel(key, title) for key, title in _TITLES]
        self.analytic_image, self.numerical_image, self.difference_image = (
            p.image for p in self.panels)
        first = self.panels[0].plot
        for panel in self.panels[1:]:
            panel.plot.setXLink(first)
            panel.plot.setYLink(first)
        self.rows_plot = self._build_rows()
        self.row_axis = self.rows_plot.getAxis("left")
        self._quiet_axes()
        self.colorbar, self.difference_colorbar = self._build_bars()
        layout = self.graphics.ci.layout
        for col, stretch in enumerate((0, 1, 1, 0, 1, 0)):
            layout.setColumnStretchFactor(col, stretch)
        self.outputs: list[Axis] = []
        self.inputs: list[Axis] = []
        self.shape = (0, 0)
        self.text_color = "#000000"
        #: pixels the views keep free above the matrix (the diagnosis tags sit there: over
        #: the matrix they hid its top row's cells); 0 where there is no tag
        self.top_pad = 0
        self._bar_width = 16
        self._tick_offset = 3

    def set_order(self, order: int, method: str = FINITE_DIFFERENCES) -> None:
        """The panels' titles for the first order (1) or the second (2, double backward),
        the middle one saying how its matrix was made (``method``: a
        :class:`~customgrad.checking.jacobian.report.Method`'s name); :meth:`BlockLabels.
        fit_titles` shows them."""
        for panel, (_key, title) in zip(self.panels, _SECOND_TITLES if order == 2
                                        else _TITLES):
            panel.title = title
        middle = self.panels[1]
        middle.title = _NUMERICAL_TITLES.get((order, method), middle.title)
        middle.short = middle.title.split(" (")[0]

    @property
    def view_box(self) -> pg.ViewBox:
        """The analytic heatmap's view box: the other two are linked to it."""
        return self.panels[0].plot.vb

    # ------------------------------------------------------------------ construction

    def _build_panel(self, key: str, title: str) -> Panel:
        plot = pg.PlotItem(enableMenu=False)  # (its view box then builds no menu at all)
        self.graphics.addItem(plot, row=0, col=_COLUMNS[key])
        plot.invertY(True)
        plot.setDefaultPadding(0.0)
        plot.hideButtons()
        # no left axis: the row labels have their own column, so the three plots are
        # built alike and the layout gives their views equal widths
        plot.showAxes((False, False, False, True), showValues=(False, False, False, True))
        plot.setMinimumWidth(60)
        plot.setPreferredWidth(60)  # the same for all three: equal stretch, equal widths
        plot.vb.disableAutoRange()
        ignore_text_width(plot.titleLabel)
        image = Image(axisOrder="row-major", autoDownsample=True)
        image.setTransform(pg.QtGui.QTransform().translate(-0.5, -0.5))
        image.setZValue(0)
        plot.addItem(image)
        grid_halo = Curve(connect="pairs", antialias=False)
        grid = Curve(connect="pairs", antialias=False)
        grid_halo.setZValue(5)
        grid.setZValue(6)
        hover = Scatter(pxMode=True, symbol="s", brush=None)
        hover.setZValue(9)
        worst_halo = Scatter(pxMode=True, symbol="o", brush=None)
        worst = Scatter(pxMode=True, symbol="o", brush=None)
        worst_halo.setZValue(10)
        worst.setZValue(11)
        for item in (grid_halo, grid, hover, worst_halo, worst):
            plot.addItem(item, ignoreBounds=True)
        return Panel(key, title, plot, image, grid_halo, grid, hover, worst_halo, worst)

    def _build_rows(self) -> pg.PlotItem:
        """The row labels: a plot with the same rows as the panels (title, view, bottom axis)
        whose view is one pixel wide and follows the analytic view's rows."""
        rows = pg.PlotItem(enableMenu=False)
        self.graphics.addItem(rows, row=0, col=0)
        rows.invertY(True)
        rows.hideButtons()
        rows.setMouseEnabled(x=False, y=False)
        rows.showAxes((True, False, False, True), showValues=(True, False, False, False))
        rows.getAxis("bottom").setTicks([[], []])
        rows.getAxis("bottom").setPen(pg.mkPen(None))
        rows.vb.setXRange(0, 1, padding=0)
        rows.layout.setColumnFixedWidth(1, 1)
        rows.setYLink(self.panels[0].plot)
        return rows

    def _quiet_axes(self) -> None:
        for axis in (self.row_axis, *(p.plot.getAxis("bottom") for p in self.panels)):
            axis.setTicks([[], []])  # block labels only, none before there are blocks
        # pyqtgraph updates every axis at each change of range, hidden ones included, and
        # re-typesets its (here unused) unit label there: tens of milliseconds per resize
        shown = {self.rows_plot: ("left", "bottom"),
                 **{p.plot: ("bottom",) for p in self.panels}}
        for plot, names in shown.items():
            for name in ("left", "right", "top", "bottom"):
                axis = plot.getAxis(name)
                axis.enableAutoSIPrefix(False)
                if name not in names:
                    axis.unlinkFromView()

    def _build_bars(self) -> tuple[pg.ColorBarItem, pg.ColorBarItem]:
        """Analytic and numerical share one diverging colour scale; the difference has its
        own."""
        cmap = pg.colormap.get("CET-D1")
        colorbar = pg.ColorBarItem(values=(-1.0, 1.0), colorMap=cmap, interactive=False,
                                   colorMapMenu=False, width=16)
        colorbar.setImageItem([self.analytic_image, self.numerical_image])
        difference = pg.ColorBarItem(values=(-1.0, 1.0), colorMap=cmap, interactive=False,
                                     colorMapMenu=False, width=16)
        difference.setImageItem(self.difference_image)
        for col, bar in ((3, colorbar), (5, difference)):
            self.graphics.addItem(bar, row=0, col=col)
            bar.axis.tickStrings = compact_tick_strings
            # no unit label to scale: without this each change of levels re-typesets it
            # (about 4 ms a bar, on the GUI thread, a few times a second while computing)
            bar.axis.enableAutoSIPrefix(False)
            bar.axis.setTickDensity(0.4)
            bar.axis.tickSpacing = FittedTickSpacing(bar.axis)
            bar.getAxis("left").setWidth(1)
        return colorbar, difference

    # ------------------------------------------------------------------ matrices

    def set_blocks(self, outputs: list[Axis], inputs: list[Axis]) -> None:
        """A new matrix layout: its blocks, its shape and the lines between its blocks."""
        self.outputs, self.inputs = list(outputs), list(inputs)
        self.shape = (sum(a.size for a in outputs), sum(a.size for a in inputs))
        gx, gy = grid_lines(outputs, inputs)
        for panel in self.panels:
            panel.grid_halo.setData(gx, gy)
            panel.grid.setData(gx, gy)

    def forget_blocks(self) -> None:
        """No blocks to name or draw lines between (another Function's matrix is coming);
        the shape stays, and with it the pane's height, until that matrix arrives."""
        self.outputs, self.inputs = [], []
        for panel in self.panels:
            panel.grid_halo.setData(np.array([], float), np.array([], float))
            panel.grid.setData(np.array([], float), np.array([], float))

    @staticmethod
    def show_matrix(image: pg.ImageItem, shown: np.ndarray | None, step: int) -> None:
        """Show a matrix (or its preview: every step-th row and column, drawn step cells
        wide) with cell (r, c) centred on (c, r)."""
        if shown is None or shown.size == 0:
            image.clear()
            return
        image.setImage(shown, autoLevels=False)
        transform = pg.QtGui.QTransform().translate(-0.5, -0.5)
        if step != 1:
            transform.scale(step, step)
        if image.transform() != transform:
            image.setTransform(transform)

    def show(self, analytic: np.ndarray | None, numerical: np.ndarray | None,
             difference: np.ndarray | None, step: int) -> None:
        for image, matrix in ((self.analytic_image, analytic),
                              (self.numerical_image, numerical),
                              (self.difference_image, difference)):
            self.show_matrix(image, matrix, step)

    def show_report(self, report: Report, analytic: np.ndarray, numerical: np.ndarray,
                    step: int) -> torch.Tensor | None:
        """Draw the report's matrices pooled ``step`` x ``step`` (largest magnitude per cell,
        computed by the worker: see :func:`~playground.support.preview.drawing_steps`), or
        whole for step 1; returns the mismatch mask pooled alike (None: whole). Big matrices
        are never handed to pyqtgraph whole: it would average them down on every repaint, on
        the GUI thread."""
        shown = report.overview(step) if step > 1 else None
        if shown is None:
            self.show(analytic, numerical, preview.as_array(report.difference()), step)
            return None
        self.show(shown.analytic.numpy(), shown.numerical.numpy(), shown.difference.numpy(),
                  step)
        return shown.mismatches

    def cell_at(self, pos: QPointF) -> tuple[int, int] | None:
        """The entry (row, col) under the scene position ``pos`` on any of the heatmaps."""
        rows, cols = self.shape
        for panel in self.panels:
            vb = panel.plot.vb
            if vb.sceneBoundingRect().contains(pos):
                point = vb.mapSceneToView(pos)
                row, col = math.floor(point.y() + 0.5), math.floor(point.x() + 0.5)
                if 0 <= row < rows and 0 <= col < cols:
                    return row, col
        return None

    def clear(self) -> None:
        for image in (self.analytic_image, self.numerical_image, self.difference_image):
            image.clear()
        for bar in (self.colorbar, self.difference_colorbar):
            bar.setLevels((-1.0, 1.0))

    # ------------------------------------------------------------------ colour bars

    def set_levels(self, bar: pg.ColorBarItem, peak: float, grow_only: bool = False,
                   computing: bool = False) -> None:
        """Levels ±``peak``; while ``computing`` with ``grow_only``, kept while they hold
        the peak (and are not four times too wide)."""
        peak = peak if math.isfinite(peak) and peak > 0 else 1.0
        high = bar.levels()[1]
        if grow_only and computing and high >= peak and high <= 4 * peak:
            return
        bar.setLevels((-peak, peak))
        self.fit_bar(bar, grow_only=computing)

    def fit_bar(self, bar: pg.ColorBarItem, grow_only: bool = False) -> None:
        """Make a colour bar's axis just wide enough for its tick labels (while computing,
        only wider: levels that grow a few times a second should not make the views jump)."""
        font = bar.axis.style["tickFont"] or self._owner.font()
        metrics = QFontMetrics(font)
        low, high = bar.levels()
        length = bar.axis.height() if bar.axis.height() > 40 else 300
        texts = ["0"]
        for size in (length, 2 * length):  # the labels at this height or a taller one
            for spacing, values in bar.axis.tickValues(low, high, size):
                texts += compact_tick_strings(values, 1.0, spacing)
        width = max(metrics.horizontalAdvance(t) for t in texts) + self._tick_offset + 6
        if grow_only:
            width = max(width, getattr(bar.axis, "fixedWidth", None) or 0)
        if getattr(bar.axis, "fixedWidth", None) != width or bar.maximumWidth() != (
                width + self._bar_width + 4):
            bar.axis.setWidth(width)
            bar.setFixedWidth(width + self._bar_width + 4)

    def fit_bars(self, grow_only: bool = False) -> None:
        for bar in (self.colorbar, self.difference_colorbar):
            self.fit_bar(bar, grow_only=grow_only)

    # ------------------------------------------------------------------ view range

    def update_aspect(self) -> None:
        """Lock the cells' aspect (square, or stretched where square cells would leave most
        of the view empty); the three views are linked, so they all get the same."""
        vb = self.view_box
        rows, cols = self.shape
        ratio = cell_aspect(rows, cols, vb.width(), self.matrix_height())
        for panel in self.panels:
            panel.plot.vb.setAspectLocked(True, ratio=ratio)

    def matrix_height(self) -> float:
        """The views' height less :attr:`top_pad`: what the matrix may take."""
        return self.view_box.height() - self.pad_pixels()

    def pad_pixels(self) -> float:
        """:attr:`top_pad`, but never more than a third of the views' height."""
        return min(float(self.top_pad), self.view_box.height() / 3)

    def refit(self) -> None:
        """Show the whole matrix (2 % of its size free around it), :attr:`top_pad` pixels
        free above it."""
        rows, cols = self.shape
        if not (rows and cols):
            return
        margin = 0.02
        x, y = margin * cols, margin * rows
        pad, height = self.pad_pixels(), self.view_box.height()
        # the pad in rows at the scale the views will have: (rows + 2y + p) / height rows a
        # pixel, p of them the pad. Where the width limits the scale instead, the aspect's
        # lock widens the range around its centre, and the pad only grows
        top = pad * (rows + 2 * y) / (height - pad) if pad > 0 else 0.0
        self.view_box.setRange(xRange=(-0.5 - x, cols - 0.5 + x),
                               yRange=(-0.5 - y - top, rows - 0.5 + y), padding=0.0)

    # ------------------------------------------------------------------ fonts, colours

    def restyle(self, base: QFont, palette: QPalette, title_height: int) -> None:
        """Axes, colour bars and block lines in sizes derived from ``base`` and colours from
        ``palette``; the title row ``title_height`` pixels tall."""
        bg = palette.color(QPalette.ColorRole.Base)
        fg = palette.color(QPalette.ColorRole.Text)
        self.graphics.setBackground(bg)
        self.text_color = fg.name()
        points = point_size(base)
        tick_font = scaled(base, 1.0)
        offset = max(3, round(points * 0.4))
        bottom_height = QFontMetrics(tick_font).height() + offset + 4
        line = mix(fg, bg, 0.5)
        axes = [self.row_axis]
        for panel in self.panels:
            panel.shown_title = ""
            panel.plot.titleLabel.setMaximumHeight(title_height)
            panel.plot.layout.setRowFixedHeight(0, title_height)
            axes += [panel.plot.getAxis("left"), panel.plot.getAxis("bottom")]
        for axis in axes:
            axis.setPen(line)
            axis.setTextPen(fg)
            axis.setStyle(tickFont=tick_font, tickTextOffset=offset,
                          tickLength=-max(4, round(points * 0.5)), autoExpandTextSpace=False)
        self.rows_plot.layout.setRowFixedHeight(0, title_height)
        self.rows_plot.getAxis("bottom").setHeight(bottom_height)
        self._restyle_bars(tick_font, offset, fg, line, title_height, bottom_height)
        for panel in self.panels:
            panel.plot.getAxis("bottom").setHeight(bottom_height)
        grid_width = max(1.5, QFontMetrics(base).height() / 9)
        for panel in self.panels:
            panel.grid_halo.setPen(pg.mkPen(_HALO, width=grid_width + 2.5))
            panel.grid.setPen(pg.mkPen(_GRID, width=grid_width))

    def _restyle_bars(self, tick_font: QFont, offset: int, fg: QColor, line: QColor,
                      title_height: int, bottom_height: int) -> None:
        """Compact colour bars: the bar about one line of text wide, the axis as wide as its
        labels (see fit_bar)."""
        self._bar_width = max(12, QFontMetrics(tick_font).height())
        self._tick_offset = offset
        for bar in (self.colorbar, self.difference_colorbar):
            bar.layout.setRowFixedHeight(0, title_height)
            bar.layout.setColumnFixedWidth(1, self._bar_width)
            bar.axis.setStyle(tickFont=tick_font, tickTextOffset=offset)
            bar.axis.setTextPen(fg)
            bar.axis.setPen(line)
            for side in ("left", "top", "bottom"):
                bar.getAxis(side).setPen(line)
            bar.getAxis("bottom").setHeight(bottom_height)
            self.fit_bar(bar)
