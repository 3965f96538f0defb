"""The loss plot widget: the live loss curve of a gradient-descent run, with fainter overlays
of earlier runs.

Points live in growing numpy buffers (amortized doubling, see :mod:`.runs`). A curve is fed
the points themselves up to runs.DIRECT_POINTS; past that, while the view follows the run,
its envelope (min and max of buckets kept in step as points arrive, :class:`.runs.Envelope`),
so a redraw costs the same at a million points as at ten million; zoomed or panned by hand,
the points again, which pyqtgraph clips to the view and peak-downsamples. Curves are drawn as
line segments past runs.PATH_POINTS, not one path: Qt strokes a wide anti-aliased path point by
point with its joins (27-175 ms for 2,600 points here), separate segments in about 1 ms; a
short curve stays one path, where segments would show their overlapping ends as dots.

Non-finite losses (NaN/Inf) are dropped from the plotted data and counted; in log mode
pyqtgraph skips zero and negative losses.
"""

from __future__ import annotations

import csv
import math
import os
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QSize, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from playground.views.fitting import FittedTickSpacing
from playground.views.fonts import css_size, point_size, scaled
from playground.views.loss_plot.runs import (
    Run,
    csv_rows,
    legend_corner,
    overlay_hue,
    quiet_corner,
    stepped_range,
)
from playground.views.pacing import paint_later
from playground.views.pyqtgraph_compat import lighter_plots
from playground.views.theme import mix

__all__ = ["LossPlot"]

lighter_plots()  # its plots build what their first paint does not show when used

_MIN_FLUSH_INTERVAL = 1 / 10  # seconds between two redraws of the live curve, at least

_CURRENT_LIGHT = "#0b4fa8"  # deep blue: high contrast on a light background
_CURRENT_DARK = "#5fb4ff"  # light blue: high contrast on a dark background
_OVERLAY_STRENGTH = 0.65  # overlay colour = this much hue, the rest background


def _cache_axes(plot_item: pg.PlotItem) -> None:
    """The axes and their grid as pixmaps, redrawn when they change: replaying their pictures
    at each redraw of the curve took 7 ms a frame."""
    for name in ("bottom", "left"):
        plot_item.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


def whole_steps(levels: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """pyqtgraph's tick levels (spacing, offset) for the step axis, without those finer than
    one step (steps are whole numbers: a run of one or two points showed 0.2, 0.4...)."""
    return [(spacing, offset) for spacing, offset in levels if spacing >= 1] or [(1.0, 0.0)]


class LossPlot(QWidget):
    """Loss against step for the current run, earlier runs as fainter overlays."""

    #: Emitted with the new state when log y is switched on or off.
    logYChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None, max_overlays: int = 8) -> None:
        super().__init__(parent)
        self.max_overlays = max_overlays
        self._build_toolbar()
        self._build_plot()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        layout.addWidget(self.toolbar)
        layout.addWidget(self.plot_widget, 1)

        self._compact = False
        self._short = False  # too short for the toolbar (see resizeEvent)
        self._pending = False
        self._last_flush = 0.0
        self._min_interval = _MIN_FLUSH_INTERVAL
        self._shown_nonfinite = 0
        # The view follows the data in steps (see _step_range), so the axes are re-rendered
        # only when the range must change: repainting axes every frame would take the GIL
        # from the descent worker. Zooming or panning by hand stops following; the "A"
        # button resumes it.
        self._follow = True
        self._fresh = True  # the first points of a run fit the view exactly
        self.plot_item.vb.disableAutoRange()
        self.plot_item.vb.sigRangeChangedManually.connect(lambda *_: self._set_following(False))
        self.plot_item.autoBtn.clicked.connect(self.follow)
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self.flush)

        self._current = self._new_run(None)
        self.overlay_curves: list[pg.PlotDataItem] = []
        self._overlays: list[Run] = []

        self.log_checkbox.toggled.connect(self.set_log_y)
        # Keep our checkbox in step with pyqtgraph's own context-menu checkbox.
        self.plot_item.ctrl.logYCheck.toggled.connect(self._on_menu_log_y)
        self.clear_button.clicked.connect(self.clear_history)
        self.plot_item.vb.sigResized.connect(self._rerender_legend)  # wrapped where narrow

        self._apply_colors()
        self._apply_graphics_font(self.font())
        self._update_status()
        self._sync_legend()

    def _build_toolbar(self) -> None:
        """Toolbar row: log y, clear history, and a live count of points."""
        self.log_checkbox = QCheckBox(
            "log y", toolTip="Logarithmic loss axis (zero and negative losses are hidden)")
        self.clear_button = QPushButton(
            "Clear history", toolTip="Remove the faded curves of earlier runs")
        self.status_label = QLabel("", toolTip="Points in the current run")

        self.toolbar = QWidget()
        bar = QHBoxLayout(self.toolbar)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.log_checkbox)
        bar.addWidget(self.clear_button)
        bar.addStretch(1)
        bar.addWidget(self.status_label)

    def _build_plot(self) -> None:
        self.plot_widget = pg.PlotWidget()
        self.plot_item: pg.PlotItem = self.plot_widget.getPlotItem()
        self.plot_item.setTitle(None)
        self.plot_item.showGrid(x=True, y=True, alpha=0.25)
        self.plot_item.setLabel("bottom", "step")
        self.plot_item.setLabel("left", "loss")
        for name in ("bottom", "left"):
            # "loss (x0.001)" style rescaling only confuses an audience: show real values.
            self.plot_item.getAxis(name).enableAutoSIPrefix(False)
        # a short plot (presentation mode on a small screen) shows fewer loss labels, never
        # overlapping ones
        left = self.plot_item.getAxis("left")
        left.tickSpacing = FittedTickSpacing(left)
        bottom = self.plot_item.getAxis("bottom")
        bottom.tickSpacing = lambda low, high, size: whole_steps(
            pg.AxisItem.tickSpacing(bottom, low, high, size))
        self.plot_item.layout.setContentsMargins(6, 6, 14, 6)
        # A million points stay smooth: draw only the visible x range, and at most
        # about two points (min and max) per pixel column. Curves added later
        # (PlotItem.addItem) inherit these settings.
        self.plot_item.setClipToView(True)
        self.plot_item.setDownsampling(auto=True, mode="peak")
        _cache_axes(self.plot_item)
        self.legend: pg.LegendItem = self.plot_item.addLegend(offset=(-12, 12))
        self.legend_corner = "top"  # moved to the bottom when the curve ends high (see flush)

    # ------------------------------------------------------------------ runs

    @property
    def current_curve(self) -> pg.PlotDataItem:
        """The curve of the current run (brought up to date with every appended point)."""
        self.flush()
        return self._current.curve

    @property
    def current_label(self) -> str | None:
        return self._current.label

    @property
    def nonfinite_count(self) -> int:
        """Non-finite (NaN/Inf) points dropped from the current run so far."""
        return self._current.nonfinite

    @property
    def point_count(self) -> int:
        """Points plotted in the current run."""
        return self._current.n

    def start_run(self, label: str) -> None:
        """Begin a new current run; the previous one becomes a faded overlay.

        A previous run without any points is simply discarded.
        """
        self._cancel_flush()
        paint_later(self.plot_widget)  # not in the pass of the slot that started the run
        old = self._current
        self._current = self._new_run(label)
        if old.n == 0:
            self._remove_run(old)
        else:
            self._to_overlay(old)
        self.legend.addItem(self._current.curve, self._current.legend_text())
        self._fresh = True
        self._shown_nonfinite = 0
        self._sync_legend()
        self._apply_colors()
        self._update_status()

    def reset_current(self) -> None:
        """Empty the current run (same label), e.g. when Reset restarts it."""
        self._cancel_flush()
        run = self._current
        run.clear()
        self._fresh = True
        run.curve.setData(np.empty(0), np.empty(0))
        self._refresh_legend_label(run)
        self._sync_legend()
        self._update_status()

    def append(self, steps: np.ndarray, losses: np.ndarray) -> None:
        """Add a batch of points to the current run.

        Points whose step or loss is NaN/Inf are dropped and counted
        (:attr:`nonfinite_count`). Steps are expected to increase.

        The points go into the buffers at once; the curve is redrawn at most
        about 60 times a second, and less often when a redraw of a huge run
        gets expensive (:meth:`flush` forces it; :attr:`current_curve` flushes).
        """
        steps = np.asarray(steps, dtype=np.float64).ravel()
        losses = np.asarray(losses, dtype=np.float64).ravel()
        if steps.shape != losses.shape:
            raise ValueError(
                f"steps and losses differ in length: {steps.size} != {losses.size}"
            )
        if steps.size == 0:
            return
        self._current.extend(steps, losses)
        self._pending = True
        self._schedule_flush()

    def flush(self) -> None:
        """Hand the current run's new points to the curve now."""
        self._flush_timer.stop()
        if not self._pending:
            return
        self._pending = False
        run = self._current
        t0 = time.perf_counter()
        shown = run.feed(whole=self._follow)
        if self._follow:
            self._step_range(force=self._fresh)
            self._fresh = False
        self._place_legend(*shown)
        self._mark_lone_point(run)
        if not self.legend.isVisible():
            self._sync_legend()  # the first points: the legend has a curve to name
        if run.nonfinite != self._shown_nonfinite:
            self._refresh_legend_label(run)
        self._update_status()
        now = time.perf_counter()
        self._last_flush = now
        # setData costs O(points) (bounds, downsampling): keep it under a third of the time.
        self._min_interval = max(_MIN_FLUSH_INTERVAL, 3.0 * (now - t0))

    def _mark_lone_point(self, run: Run) -> None:
        """A run of one point has no line to draw: a dot marks it (one step, the first
        thing a teacher shows, drew nothing), in the curve's colour; gone with the second."""
        lone = run.n == 1
        if lone == (run.curve.opts["symbol"] is not None):
            return
        if lone:
            color = run.curve.opts["pen"].color()
            run.curve.setSymbol("o")
            run.curve.setSymbolSize(max(8, round(self.fontMetrics().height() * 0.6)))
            run.curve.setSymbolBrush(color)
            run.curve.setSymbolPen(color)
        else:
            run.curve.setSymbol(None)

    def _set_following(self, on: bool) -> None:
        """Follow the runs (their envelopes where long), or not (zoomed by hand: every point,
        for the detail)."""
        if self._follow != on:
            self._follow = on
            for run in (r for r in (*self._overlays, self._current) if r.n):
                run.feed(whole=on)

    def follow(self) -> None:
        """Fit the view to the data again and keep following it."""
        self._set_following(True)
        self.plot_item.vb.disableAutoRange()
        self._step_range(force=True)

    def _step_range(self, force: bool = False) -> None:
        """Keep every run in view, changing the range only in steps (see stepped_range)."""
        vb = self.plot_item.vb
        x, y = stepped_range((self._current, *self._overlays), vb.viewRange(), self.log_y(),
                             force)
        if x is not None:
            vb.setXRange(*x, padding=0.02)
        if y is not None:
            vb.setYRange(*y, padding=0.02 if self.log_y() else 0.04)

    def _schedule_flush(self) -> None:
        if self._flush_timer.isActive():
            return
        wait = self._min_interval - (time.perf_counter() - self._last_flush)
        if wait <= 0:
            self.flush()
        else:
            self._flush_timer.start(max(1, math.ceil(wait * 1000)))

    def _cancel_flush(self) -> None:
        self._flush_timer.stop()
        self._pending = False

    def clear_history(self) -> None:
        """Remove every overlay (earlier runs) and its legend entry."""
        for run in self._overlays:
            self._remove_run(run)
        self._overlays.clear()
        self.overlay_curves.clear()
        self._sync_legend()
        if not self._current.n:  # nothing left to show: not the last Function's range
            self.plot_item.vb.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)

    # ------------------------------------------------------------------ log y

    def log_y(self) -> bool:
        return self.log_checkbox.isChecked()

    def set_log_y(self, on: bool) -> None:
        """Logarithmic loss axis. Zero and negative losses are not drawn in log mode."""
        on = bool(on)
        if self.log_checkbox.isChecked() != on:
            self.log_checkbox.setChecked(on)  # re-enters through the toggled signal
            return
        self.plot_item.setLogMode(x=False, y=on)
        menu_check = self.plot_item.ctrl.logYCheck
        if menu_check.isChecked() != on:
            menu_check.blockSignals(True)
            menu_check.setChecked(on)
            menu_check.blockSignals(False)
        self.follow()
        self.logYChanged.emit(on)

    def _on_menu_log_y(self, on: bool) -> None:
        if self.log_checkbox.isChecked() != on:
            self.log_checkbox.setChecked(on)

    # ------------------------------------------------------------------ export

    def export_csv(self, path: str | os.PathLike[str]) -> None:
        """Write ``run,step,loss`` rows: the overlays (oldest first), then the current run.

        Dropped non-finite points are not written.
        """
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(("run", "step", "loss"))
            writer.writerows(csv_rows([*self._overlays, self._current]))

    def set_compact(self, on: bool) -> None:
        """Compact (presentation mode on a small screen): no toolbar and no axis titles, so
        the curve keeps its height; log y stays in the plot's right-click menu."""
        self._compact = bool(on)
        self.toolbar.setVisible(not on and not self._short)
        for name in ("bottom", "left"):
            self.plot_item.showLabel(name, not on)

    # ------------------------------------------------------------------ size

    def _plot_least(self) -> int:
        """The least height of the plot without the toolbar (margins included)."""
        margins = self.layout().contentsMargins()
        return margins.top() + margins.bottom() + self.plot_widget.minimumSizeHint().height()

    def minimumSizeHint(self) -> QSize:
        """As short as the plot may be: the toolbar gives way first (an error's banner above
        the window's main area takes its height from here, not from the heatmaps)."""
        return QSize(super().minimumSizeHint().width(), self._plot_least())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        short = self.height() < self._plot_least() + self.layout().spacing() \
            + self.toolbar.sizeHint().height()
        if short != self._short:
            self._short = short
            self.toolbar.setVisible(not self._compact and not short)

    # ------------------------------------------------------------------ fonts

    def apply_font(self, font: QFont) -> None:
        """Use ``font`` for the toolbar, tick labels, axis labels and legend."""
        self.setFont(font)  # the toolbar follows; changeEvent updates the plot
        self._apply_graphics_font(font)

    def changeEvent(self, event: QEvent) -> None:
        kind = event.type()
        if kind == QEvent.Type.FontChange:
            self._apply_graphics_font(self.font())
        elif kind == QEvent.Type.PaletteChange:
            self._apply_colors()
        super().changeEvent(event)

    def _apply_graphics_font(self, font: QFont) -> None:
        size = point_size(font)
        tick_font = scaled(font)
        label_size = css_size(font, 1.1)
        for name in ("bottom", "left"):
            axis = self.plot_item.getAxis(name)
            axis.setStyle(
                tickFont=tick_font,
                tickTextOffset=max(4, round(size * 0.5)),
                maxTickLevel=1,  # major and minor ticks/grid: cleaner and cheaper to draw
            )
            axis.setLabel(axis.labelText, **{**axis.labelStyle, "font-size": label_size})
            axis.showLabel(not self._compact)
            # pyqtgraph only grows the tick text space; let it fit the new font afresh.
            axis.textWidth = 30
            axis.textHeight = 18
            if name == "left":
                axis.setWidth(None)
            else:
                axis.setHeight(None)
        self.legend.setLabelTextSize(css_size(font))
        self._rerender_legend()

    # ------------------------------------------------------------------ colours

    def _apply_colors(self) -> None:
        pal = self.palette()
        bg = pal.color(QPalette.ColorRole.Base)
        fg = pal.color(QPalette.ColorRole.Text)
        dark = bg.lightnessF() < 0.5
        self.plot_widget.setBackground(bg)
        for name in ("bottom", "left"):
            axis = self.plot_item.getAxis(name)
            axis.setPen(mix(fg, bg, 0.55))
            axis.setTextPen(fg)
        self.legend.setBrush(QColor(bg.red(), bg.green(), bg.blue(), 215))
        self.legend.setPen(mix(fg, bg, 0.25))
        self.legend.setLabelTextColor(fg)
        self._rerender_legend()
        current = QColor(_CURRENT_DARK if dark else _CURRENT_LIGHT)
        self._current.curve.setPen(pg.mkPen(current, width=3.5))
        for run in self._overlays:
            run.curve.setPen(pg.mkPen(mix(QColor(run.hue), bg, _OVERLAY_STRENGTH), width=2))
        for run in (self._current, *self._overlays):  # a lone point's dot, as its line
            if run.curve.opts["symbol"] is not None:
                color = run.curve.opts["pen"].color()
                run.curve.setSymbolBrush(color)
                run.curve.setSymbolPen(color)
        self.legend.update()

    def _place_legend(self, steps: np.ndarray, losses: np.ndarray) -> None:
        """Where it covers least of the current run's curve as drawn (its envelope while
        following a long run), first where the curve does not end (see legend_corner)."""
        run = self._current
        if not run.n:
            return
        view = self.plot_item.vb.viewRange()
        preferred = legend_corner(float(run.losses[run.n - 1]), view[1], self.log_y())
        corner = quiet_corner(steps, losses, view, _legend_share(self.legend, self.plot_item.vb),
                              self.log_y(), preferred)
        if corner != self.legend_corner:
            self.legend_corner = corner
            x, y = int(not corner.endswith("left")), int(not corner.startswith("top"))
            self.legend.anchor((x, y), (x, y), offset=(12 - 24 * x, 12 - 24 * y))

    def _sync_legend(self) -> None:
        """No legend before there is a point to name (an empty box before the first run;
        "run 1" over an empty plot while a Function failed), and none cut at the plot's
        edges: a legend wider or taller than the plot (1280x720 at 150 %: "un 1: seed 0, lr
        1, sgd", its left cut off, over the whole curve) is hidden till there is room for it."""
        vb, legend = self.plot_item.vb, self.legend
        fits = legend.width() <= vb.width() - 8 and legend.height() <= vb.height() - 8
        drawn = any(run.n for run in (*self._overlays, self._current))
        legend.setVisible(bool(legend.items) and drawn and fits)

    def _rerender_legend(self) -> None:
        """pyqtgraph stores a new legend text size/colour but only uses it on setText; a
        label wider than the plot puts its NaN/Inf count on a second line."""
        room = self.plot_item.vb.width() - 24
        for run in (*self._overlays, self._current):
            label = self.legend.getLabel(run.curve)
            if label is not None:
                _fit_label(label, run, room)
        self.legend.updateSize()
        self._sync_legend()

    # ------------------------------------------------------------------ internals

    def _new_run(self, label: str | None) -> Run:
        curve = pg.PlotDataItem(np.empty(0), np.empty(0), skipFiniteCheck=True)
        curve.setZValue(10)  # the current run above the overlays
        # addItem applies the plot's log mode, clip-to-view and downsampling settings.
        self.plot_item.addItem(curve)
        return Run(label=label, curve=curve)

    def _to_overlay(self, run: Run) -> None:
        run.shrink()
        run.hue = overlay_hue(self._overlays)
        run.feed(whole=self._follow)  # views of the shrunk buffers, or the envelope
        run.curve.setZValue(1)
        if self.legend.getLabel(run.curve) is None:
            self.legend.addItem(run.curve, run.legend_text())
        self._overlays.append(run)
        self.overlay_curves.append(run.curve)
        while len(self._overlays) > self.max_overlays:
            oldest = self._overlays.pop(0)
            self.overlay_curves.pop(0)
            self._remove_run(oldest)

    def _remove_run(self, run: Run) -> None:
        self.legend.removeItem(run.curve)
        self.plot_item.removeItem(run.curve)

    def _refresh_legend_label(self, run: Run) -> None:
        if run is self._current:
            self._shown_nonfinite = run.nonfinite
        label = self.legend.getLabel(run.curve)
        if label is not None:
            _fit_label(label, run, self.plot_item.vb.width() - 24)
            self.legend.updateSize()
            self._sync_legend()

    def _update_status(self) -> None:
        self.status_label.setText(self._current.status_text())


def _fit_label(label, run: Run, room: float) -> None:
    """``run``'s legend text in ``label``, on two lines where one is wider than ``room``
    pixels with its sample (at 150 % in presentation mode, '… (12 NaN/Inf dropped)' was
    cut at the plot's edge)."""
    label.setText(run.legend_text())
    if run.nonfinite and label.item.boundingRect().width() + _SAMPLE_WIDTH > room:
        label.setText(run.legend_text(wrap=True))


#: the legend's line sample and its gap before the text, in pixels
_SAMPLE_WIDTH = 40


def _legend_share(legend, vb) -> tuple[float, float]:
    """The legend's width and height (with its 12 px offset) as fractions of the view's."""
    box = legend.boundingRect()
    return (box.width() + 12) / max(1.0, vb.width()), (box.height() + 12) / max(1.0, vb.height())
