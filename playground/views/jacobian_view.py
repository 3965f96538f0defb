"""Analytic vs numerical Jacobian, side by side, with the verdict in words.

Three heatmaps share zoom and pan: the Jacobian from the Function's own ``backward``
(analytic), the one from central finite differences (numerical) and their difference.
Analytic and numerical share one diverging colour scale; the difference has its own, with
every entry outside tolerance outlined. Rows are the outputs' elements, columns the inputs'
elements; block lines and axis labels show where each output and input lives.

While a comparison runs, :meth:`JacobianView.show_progress` fills the heatmaps in (entries
not computed yet are NaN and drawn transparent). Progress can arrive many times a second
with matrices of 8192 x 8192 entries, so no call copies or scans whole matrices: colour
levels fold in only the rows/columns finished since the last call, big matrices are drawn
from a small strided preview (their difference too) at most a few times a second.
:meth:`JacobianView.show_report` takes the difference and the mismatch mask from the report
(the worker computes them before handing the report over) and reads the full matrices only
through pyqtgraph's drawing: colour levels of big matrices come from the report's statistics
and a strided sample.

Layout: the row labels have a column of their own, so the three views are built alike and
share the width equally; block labels shorten to the bare name (or hide, with a legend in the
hint line) when the blocks are too narrow on screen for them.
"""

from __future__ import annotations

import bisect
import html
import math
import threading
import time
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QPointF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from customgrad.diagnosis import PHRASES
from customgrad.errors import SpecError
from customgrad.jacobian import ATOL, EPS, RTOL, Axis, Progress, Report
from playground.support import preview
from playground.support.discard import held
from playground.views.fields import setting_number
from playground.views.fitting import FitScroll, FittedTickSpacing
from playground.views.fonts import css_size, point_size, scaled
from playground.views.pacing import paint_later
from playground.views.theme import mix

#: More mismatches than this are shown as a translucent mask image instead of outlines.
SCATTER_LIMIT = 5000
#: Cells stay square while square cells fill at least this fraction of the view; else they
#: stretch along the matrix's short side just enough to fill it, ...
FILL_TARGET = 0.75
#: ... by at most this factor, ...
MAX_CELL_STRETCH = 3.0
#: ... unless the matrix would still fill less than this (a single row of 1000 entries).
MIN_FILL = 0.5
#: Mismatches are outlined one by one only where the failing blocks hold at most this many
#: entries (else the mask is laid over the difference as an image).
SCAN_ENTRIES = 1 << 20

_PHASES = {
    "numerical": "Finite differences (numerical)",
    "analytic": "Your backward (analytic)",
    "done": "Finishing",
}

# Banner colours: (background, border, text). Verdicts are also spelled out with a symbol,
# so nothing depends on telling green from red.
_PASS = ("#e3f3e6", "#1b7a36", "#0d4a1f")
_FAIL = ("#fde8e6", "#c0261c", "#7a110b")
_GRID = QColor(25, 25, 25)
_HALO = QColor(255, 255, 255, 190)
_MISMATCH = QColor("#111111")
_MASK = (250, 200, 0, 150)  # amber wash for masks too dense to outline one by one
_HOVER = QColor("#00a0a0")


@dataclass
class _Panel:
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


@dataclass
class _Live:
    """What progress calls have scanned so far of one comparison's matrices."""

    key: tuple
    cols: int = 0  # numerical columns scanned
    rows: int = 0  # analytic rows scanned
    value_max: float = 0.0  # largest finite |entry| of both matrices so far
    diff_max: float = 0.0  # largest finite |difference| drawn so far


class JacobianView(QWidget):
    """Verdict banner, tolerance editors, and the three linked heatmaps.

    Signals: ``tolerancesChanged(eps, atol, rtol)`` when the user commits valid tolerances,
    ``checkRequested()`` and ``cancelRequested()`` from the buttons, ``detailsToggled(shown)``
    when the banner is expanded or folded, ``idealHeightChanged()`` when
    :meth:`ideal_height` may have changed (a new matrix, another size).
    """

    tolerancesChanged = Signal(float, float, float)
    checkRequested = Signal()
    cancelRequested = Signal()
    detailsToggled = Signal(bool)
    idealHeightChanged = Signal()

    # a 2048 x 2048 report is about 100 MB: replaced ones are freed off the GUI thread
    _report = held("report")
    _analytic = held("analytic")
    _numerical = held("numerical")
    _mask = held("mask")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._computing = False
        self._paint_waiter: threading.Event | None = None  # see _await_paint
        self._styling = False
        self._verdict_scale = 1.0
        self._text_color = "#000000"
        self._outputs: list[Axis] = []
        self._inputs: list[Axis] = []
        self._layout_key: tuple | None = None
        self._preview_draws = 0  # how many times progress previews were drawn
        self._worst_style: tuple | None = None  # (font pixels, failed) the markers are styled for
        self._shape = (0, 0)
        self._row_starts: list[int] = []
        self._col_starts: list[int] = []
        self._analytic: np.ndarray | None = None
        self._numerical: np.ndarray | None = None
        self._report: Report | None = None
        self._live: _Live | None = None
        self._mask: np.ndarray | None = None
        self._mask_mode = ""  # how mismatches are marked: "outline", "wash" or "" (none)
        self._tick_labels: tuple[list, list] = ([], [])
        self._full_labels = True  # every block label shows "name [shape]"
        self._row_text_width = 0
        self._bar_width = 16
        self._tick_offset = 3
        self._title_font = QFont()
        self._title_height = 30
        self._title_style: dict = {}
        self._tolerances = (EPS, ATOL, RTOL)
        self._hover_cell: tuple[int, int] | None = None
        self._shown_step = 0  # the pooling the report's heatmaps are drawn with (0: none)
        self._last_refresh = -math.inf
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.timeout.connect(self._refresh_progress)
        self._deferred: Progress | None = None  # see show_progress
        self._defer_timer = QTimer(self)
        self._defer_timer.setSingleShot(True)
        self._defer_timer.setInterval(1)
        self._defer_timer.timeout.connect(self._show_deferred)
        self._build_banner()
        self._build_controls()
        self._build_graphics()
        self.hover_label = _ElidedLabel()
        self.hover_label.setObjectName("JacobianHover")
        self.hover_label.setMinimumWidth(10)
        self.hover_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(4)
        layout.addWidget(self.banner)
        layout.addWidget(self.tolerance_row)
        layout.addWidget(self.graphics, 1)
        layout.addWidget(self.hover_label)
        self.set_tolerances(*self._tolerances)
        self._restyle()
        self.clear()

    # ------------------------------------------------------------------ construction

    def _build_banner(self) -> None:
        """One line: the verdict, progress and Cancel while computing, and a Details toggle
        that shows the numbers, the worst entry, the notes and the tolerance editors."""
        self.banner = QFrame()
        self.banner.setObjectName("JacobianBanner")
        self.verdict_label = QLabel()
        self.verdict_label.setObjectName("JacobianVerdict")
        self.details_label = QLabel()
        self.worst_label = QLabel()
        self.notes_label = QLabel()
        for label in (self.verdict_label, self.details_label, self.worst_label,
                      self.notes_label):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setTextFormat(Qt.TextFormat.PlainText)
            # any width, and as tall as the wrapped text needs there: lines wrap, never
            # overlap (the height-for-width flag must be kept when the policy is replaced)
            policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            policy.setHeightForWidth(True)
            label.setSizePolicy(policy)
        self.details_button = QToolButton()
        self.details_button.setObjectName("JacobianDetails")
        self.details_button.setCheckable(True)
        self.details_button.setText("Details")
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolTip("Show the errors, the worst entry, the notes and the "
                                       "tolerances")
        self.details_button.toggled.connect(self.set_details_shown)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setTextVisible(True)
        self.progress_bar.setMinimumWidth(120)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the comparison")
        self.cancel_button.clicked.connect(self.cancelRequested)
        head = QHBoxLayout()
        head.setSpacing(8)
        head.addWidget(self.verdict_label, 3)
        head.addWidget(self.progress_bar, 2)
        head.addWidget(self.cancel_button)
        head.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignTop)
        self.details_box = QWidget()
        details = QVBoxLayout(self.details_box)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(3)
        details.addWidget(self.details_label)
        details.addWidget(self.worst_label)
        details.addWidget(self.notes_label)
        box = QVBoxLayout(self.banner)
        box.setContentsMargins(10, 4, 6, 4)
        box.setSpacing(3)
        box.addLayout(head)
        self.details_scroll = FitScroll(self.details_box, self, share=0.25)
        box.addWidget(self.details_scroll)
        self.progress_bar.hide()
        self.cancel_button.hide()

    def _build_controls(self) -> None:
        self.check_button = QPushButton("Check at current point")
        self.check_button.setToolTip("Compare your backward with finite differences at the "
                                     "current inputs")
        self.check_button.clicked.connect(self.checkRequested)
        self.tolerance_row = QWidget()
        row = QHBoxLayout(self.tolerance_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        row.addWidget(self.check_button)
        row.addSpacing(12)
        tips = {
            "eps": "Finite-difference step: (f(x + eps) − f(x − eps)) / 2·eps. Must be > 0.",
            "atol": "Absolute tolerance: entries agree when |a − n| ≤ atol + rtol·|n|.",
            "rtol": "Relative tolerance: entries agree when |a − n| ≤ atol + rtol·|n|.",
        }
        self._tolerance_edits: dict[str, QLineEdit] = {}
        for name in ("eps", "atol", "rtol"):
            label = QLabel(name)
            label.setToolTip(tips[name])
            edit = QLineEdit()
            edit.setObjectName(f"tolerance_{name}")
            edit.setToolTip(tips[name])
            edit.setProperty("invalid", False)
            edit.setProperty("tip", tips[name])
            edit.textEdited.connect(self._validate_edits)
            edit.editingFinished.connect(self._commit_tolerances)
            label.setBuddy(edit)
            row.addWidget(label)
            row.addWidget(edit)
            row.addSpacing(6)
            self._tolerance_edits[name] = edit
        self.eps_edit = self._tolerance_edits["eps"]
        self.atol_edit = self._tolerance_edits["atol"]
        self.rtol_edit = self._tolerance_edits["rtol"]
        self.tolerance_message = QLabel()
        self.tolerance_message.setStyleSheet("color: #b3261e;")
        self.tolerance_message.setSizePolicy(QSizePolicy.Policy.Ignored,
                                             QSizePolicy.Policy.Preferred)
        row.addWidget(self.tolerance_message, 1)
        self.set_details_shown(False)

    def details_shown(self) -> bool:
        """Whether the banner shows its details and the tolerance editors."""
        return self.details_button.isChecked()

    def set_details_shown(self, shown: bool) -> None:
        """Expand the banner (numbers, worst entry, notes, tolerances) or fold it to the
        verdict line; ``detailsToggled`` says so."""
        shown = bool(shown)
        if self.details_button.isChecked() != shown:
            self.details_button.setChecked(shown)  # comes back here through toggled
            return
        self.details_button.setArrowType(Qt.ArrowType.DownArrow if shown
                                         else Qt.ArrowType.RightArrow)
        self.details_scroll.setVisible(shown)
        self.tolerance_row.setVisible(shown)
        self.detailsToggled.emit(shown)

    def _build_graphics(self) -> None:
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setMinimumSize(300, 160)
        self.graphics.ci.layout.setContentsMargins(4, 4, 4, 4)
        self.graphics.ci.layout.setHorizontalSpacing(4)
        cmap = pg.colormap.get("CET-D1")
        titles = (("analytic", "Analytic (backward)"),
                  ("numerical", "Numerical (finite diff.)"),
                  ("difference", "Difference (a − n)"))
        # columns: row labels | analytic | numerical | colour bar | difference | colour bar
        columns = {"analytic": 1, "numerical": 2, "difference": 4}
        self._panels: list[_Panel] = []
        self._diagnosis_items: list = []  # the outlines and words of _mark_diagnoses
        for key, title in titles:
            plot = pg.PlotItem()
            self.graphics.addItem(plot, row=0, col=columns[key])
            plot.invertY(True)
            plot.setDefaultPadding(0.0)
            plot.hideButtons()
            plot.setMenuEnabled(False)
            # no left axis: the row labels have their own column, so the three plots are
            # built alike and the layout gives their views equal widths
            plot.showAxes((False, False, False, True), showValues=(False, False, False, True))
            plot.setMinimumWidth(60)
            plot.setPreferredWidth(60)  # the same for all three: equal stretch, equal widths
            plot.vb.disableAutoRange()
            _ignore_text_width(plot.titleLabel)
            image = _Image(axisOrder="row-major", autoDownsample=True)
            image.setTransform(pg.QtGui.QTransform().translate(-0.5, -0.5))
            image.setZValue(0)
            plot.addItem(image)
            grid_halo = _Curve(connect="pairs", antialias=False)
            grid = _Curve(connect="pairs", antialias=False)
            grid_halo.setZValue(5)
            grid.setZValue(6)
            hover = _Scatter(pxMode=True, symbol="s", brush=None)
            hover.setZValue(9)
            worst_halo = _Scatter(pxMode=True, symbol="o", brush=None)
            worst = _Scatter(pxMode=True, symbol="o", brush=None)
            worst_halo.setZValue(10)
            worst.setZValue(11)
            for item in (grid_halo, grid, hover, worst_halo, worst):
                plot.addItem(item, ignoreBounds=True)
            panel = _Panel(key, title, plot, image, grid_halo, grid, hover, worst_halo, worst)
            self._panels.append(panel)
        self.analytic_image = self._panels[0].image
        self.numerical_image = self._panels[1].image
        self.difference_image = self._panels[2].image
        first = self._panels[0].plot
        for panel in self._panels[1:]:
            panel.plot.setXLink(first)
            panel.plot.setYLink(first)

        # The row labels: a plot with the same rows as the panels (title, view, bottom axis)
        # whose view is one pixel wide and follows the analytic view's rows.
        rows = pg.PlotItem()
        self.graphics.addItem(rows, row=0, col=0)
        rows.invertY(True)
        rows.hideButtons()
        rows.setMenuEnabled(False)
        rows.setMouseEnabled(x=False, y=False)
        rows.showAxes((True, False, False, True), showValues=(True, False, False, False))
        rows.getAxis("bottom").setTicks([[], []])
        rows.getAxis("bottom").setPen(pg.mkPen(None))
        rows.vb.setXRange(0, 1, padding=0)
        rows.layout.setColumnFixedWidth(1, 1)
        rows.setYLink(first)
        self.rows_plot = rows
        self.row_axis = rows.getAxis("left")
        for axis in (self.row_axis, *(p.plot.getAxis("bottom") for p in self._panels)):
            axis.setTicks([[], []])  # block labels only, none before there are blocks
        # pyqtgraph updates every axis at each change of range, hidden ones included, and
        # re-typesets its (here unused) unit label there: tens of milliseconds per resize
        shown = {rows: ("left", "bottom"), **{p.plot: ("bottom",) for p in self._panels}}
        for plot, names in shown.items():
            for name in ("left", "right", "top", "bottom"):
                axis = plot.getAxis(name)
                axis.enableAutoSIPrefix(False)
                if name not in names:
                    axis.unlinkFromView()

        self.mismatch_markers = _Scatter(pxMode=True, symbol="s", brush=None)
        self.mismatch_markers.setZValue(7)
        self.mismatch_overlay = _Image(axisOrder="row-major", autoDownsample=True)
        self.mismatch_overlay.setTransform(pg.QtGui.QTransform().translate(-0.5, -0.5))
        lut = np.array([[0, 0, 0, 0]] + [list(_MASK)] * 255, dtype=np.uint8)
        self.mismatch_overlay.setLookupTable(lut)
        self.mismatch_overlay.setZValue(1)
        diff_plot = self._panels[2].plot
        diff_plot.addItem(self.mismatch_overlay, ignoreBounds=True)
        diff_plot.addItem(self.mismatch_markers, ignoreBounds=True)

        self.colorbar = pg.ColorBarItem(values=(-1.0, 1.0), colorMap=cmap, interactive=False,
                                        colorMapMenu=False, width=16)
        self.colorbar.setImageItem([self.analytic_image, self.numerical_image])
        self.difference_colorbar = pg.ColorBarItem(values=(-1.0, 1.0), colorMap=cmap,
                                                   interactive=False, colorMapMenu=False,
                                                   width=16)
        self.difference_colorbar.setImageItem(self.difference_image)
        for col, bar in ((3, self.colorbar), (5, self.difference_colorbar)):
            self.graphics.addItem(bar, row=0, col=col)
            bar.axis.tickStrings = _compact_tick_strings
            # no unit label to scale: without this each change of levels re-typesets it
            # (about 4 ms a bar, on the GUI thread, a few times a second while computing)
            bar.axis.enableAutoSIPrefix(False)
            bar.axis.setTickDensity(0.4)
            bar.axis.tickSpacing = FittedTickSpacing(bar.axis)
            bar.getAxis("left").setWidth(1)
        layout = self.graphics.ci.layout
        for col, stretch in enumerate((0, 1, 1, 0, 1, 0)):
            layout.setColumnStretchFactor(col, stretch)

        self._auto_fit = True  # keep the whole matrix in view until the user zooms or pans
        first.vb.sigResized.connect(self._view_resized)
        first.vb.sigRangeChanged.connect(self._update_ticks)
        first.vb.sigTransformChanged.connect(self._size_markers)
        for panel in self._panels:
            panel.plot.vb.sigRangeChangedManually.connect(self._user_zoomed)
        self.graphics.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.graphics.scene().sigMouseMoved.connect(self._mouse_moved)
        self.graphics.viewport().installEventFilter(self)
        self.graphics.installEventFilter(self)

    # ------------------------------------------------------------------ public API

    def set_tolerances(self, eps: float, atol: float, rtol: float) -> None:
        """Show these tolerances in the editors (emits nothing)."""
        self._tolerances = (float(eps), float(atol), float(rtol))
        for edit, value in zip(self._tolerance_edits.values(), self._tolerances):
            edit.setText(repr(value))  # shortest text that reads back as the same float
            self._mark(edit, None)
        self.tolerance_message.clear()

    def tolerances(self) -> tuple[float, float, float]:
        """The last committed (valid) tolerances."""
        return self._tolerances

    def start(self, message: str = "Computing…") -> None:
        """A comparison starts: empty heatmaps, progress bar at 0, Cancel shown."""
        self._drop_deferred()
        self._paint_next_pass()  # often from the slot that starts a run: the plot paints first
        self._computing = True
        self._report = None  # its verdict is about other matrices
        self._clear_data()
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat(f"{message}  %p%")
        self.progress_bar.show()
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)
        self.check_button.setEnabled(False)
        # the banner keeps its height while computing: the heatmaps below it must not jump
        # (nor be laid out again, which costs the GUI thread tens of milliseconds)
        for label in (self.details_label, self.worst_label, self.notes_label):
            label.setMinimumHeight(label.height() if label.isVisible() else 0)
        self._set_banner("neutral", message, "", "", "", keep_space=True)
        self.hover_label.setText("Entries fill in as they are computed: finite differences "
                                 "column by column, then your backward row by row.")

    def show_progress(self, progress: Progress) -> None:
        """Update the bar and fill the heatmaps in with the entries computed so far. Where
        the progress has a ``painted`` event (the worker waits for it), set it once the pane
        has painted a new matrix's layout or new entries; at once if there is neither (the
        same matrix again, not one entry computed yet)."""
        painted = getattr(progress, "painted", None)
        if painted is not None and progress.outputs and progress.inputs \
                and _layout_key(progress.outputs, progress.inputs) != self._layout_key \
                and self._on_screen():
            # a new matrix, and the worker waits: lay it out in a pass of the event loop of
            # its own (5 to 15 ms), not in one with whatever else came in meanwhile
            self._drop_deferred()
            self._deferred = progress
            self._defer_timer.start()
            return
        # a newer progress (its worker stopped waiting for the held one): the held one is
        # out of date, and this one lays the matrix out itself
        self._drop_deferred()
        self._show_progress_now(progress)

    def _show_deferred(self) -> None:
        progress, self._deferred = self._deferred, None
        if progress is not None:
            self._show_progress_now(progress)

    def _drop_deferred(self) -> None:
        """Forget a progress not shown yet (its comparison ended or another began), and
        let its worker go."""
        self._defer_timer.stop()
        progress, self._deferred = self._deferred, None
        if progress is not None:
            progress.painted.set()

    def _show_progress_now(self, progress: Progress) -> None:
        painted = getattr(progress, "painted", None)
        layout, draws = self._layout_key, self._preview_draws
        try:
            self._show_progress(progress)
        finally:
            if painted is not None:
                drew = self._preview_draws != draws and bool(progress.columns_done
                                                             or progress.rows_done)
                if self._layout_key != layout:
                    self._settle_layout()
                    self._paint_next_pass()
                if self._layout_key != layout or drew:
                    self._await_paint(painted)
                else:
                    painted.set()

    def _paint_next_pass(self) -> None:
        """Hold the heatmaps' repaint for a turn of the event loop (see playground.views.pacing).
        Setting a report or a new matrix's layout out takes the GUI thread 5 to 15 ms, and the
        repaint that follows as much again; in one pass they would keep input and timers
        waiting twice as long."""
        paint_later(self.graphics)

    @staticmethod
    def _settle_layout() -> None:
        """Apply the layout requests a new matrix posted (axes and labels change size) now,
        while the worker waits: left for later, they came after the first repaint and cost
        a second one of the whole pane, with the comparison competing for the cores."""
        for _ in range(3):  # a plot's new size asks its parent layout again
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)

    def _show_progress(self, progress: Progress) -> None:
        if not self._computing:
            self.start()
        fraction = min(1.0, max(0.0, float(progress.fraction)))
        self.progress_bar.setValue(round(fraction * 1000))
        phase = _PHASES.get(progress.phase, progress.phase.capitalize())
        self.progress_bar.setFormat(f"{phase}…  %p%")
        if not progress.outputs or not progress.inputs:
            return
        self._set_axes(progress.outputs, progress.inputs)
        analytic = preview.as_array(progress.analytic)
        numerical = preview.as_array(progress.numerical)
        if numerical is None or numerical.shape != self._shape:
            return
        if analytic is not None and analytic.shape != self._shape:
            analytic = None
        key = (preview.address(progress.numerical), preview.address(progress.analytic), self._shape)
        if self._live is None or self._live.key != key:
            self._live = _Live(key)
        live = self._live
        self._scan(live, analytic, numerical, progress, fraction)
        if progress.phase == "numerical" and live.rows == 0:
            analytic = None  # still all NaN: nothing to draw
        self._analytic, self._numerical = analytic, numerical
        if isinstance(progress, preview.PreparedProgress):  # previews made by the worker
            if progress.numerical_preview is not None:
                self._last_refresh = time.monotonic()
                if live.rows == 0:
                    self._draw_previews(None, progress.numerical_preview, progress.step)
                else:
                    self._draw_previews(progress.analytic_preview, progress.numerical_preview,
                                        progress.step, progress.difference_preview,
                                        progress.difference_peak)
            return
        # big matrices are redrawn a few times a second at most; a timer draws the last state
        wait = preview.REFRESH_SECONDS if numerical.size > preview.REFRESH_ENTRIES else 0.0
        since = time.monotonic() - self._last_refresh
        if since >= wait:
            self._refresh_progress()
        elif not self._refresh_timer.isActive():
            self._refresh_timer.start(max(1, round((wait - since) * 1000)))

    def _refresh_progress(self) -> None:
        self._refresh_timer.stop()
        live = self._live
        if not self._computing or live is None:
            return
        self._last_refresh = time.monotonic()
        step = preview.preview_step(self._shape)
        self._draw_previews(*preview.previews(self._analytic, self._numerical, step, live.rows,
                                       live.cols), step)

    def _draw_previews(self, analytic: np.ndarray | None, numerical: np.ndarray, step: int,
                       difference: np.ndarray | None = None, difference_peak: float = 0.0,
                       ) -> None:
        """Draw previews; ``difference`` (and its peak) where the worker made it already."""
        self._preview_draws += 1
        live = self._live
        if difference is None and analytic is not None and numerical is not None:
            difference = analytic - numerical  # of the preview only: small
            difference_peak = preview.absmax(difference)
        if difference is not None:
            live.diff_max = max(live.diff_max, difference_peak)
        self._show_matrix(self.analytic_image, analytic, step)
        self._show_matrix(self.numerical_image, numerical, step)
        self._show_matrix(self.difference_image, difference, step)
        self._set_levels(self.colorbar, live.value_max, grow_only=True)
        self._set_levels(self.difference_colorbar, max(live.diff_max, self._tolerances[1]),
                         grow_only=True)

    def show_report(self, report: Report) -> None:
        """The final verdict, heatmaps, mismatches and worst entry; hides the progress UI."""
        self._paint_next_pass()
        self._end_computing()
        self._report = report
        self._set_axes(report.outputs, report.inputs)
        self._show_verdict(report)
        self._clear_marks()
        analytic, numerical = preview.as_array(report.analytic), preview.as_array(report.numerical)
        if analytic is None or numerical is None or analytic.shape != self._shape:
            self._clear_data()
            self._mark_worst(report)  # where it is, even without the values
            self.hover_label.setText("The matrices were not kept for this check: "
                                     "verdict only.")
            return
        # peaks, difference, mask and overview are cached on the report: the worker that
        # made it computed them already (Report.prepare_display), so this is cheap
        value_max = report.value_peak()
        w = report.worst
        if w is not None:  # the ringed entry is never off the scale
            value_max = max([value_max, *(abs(v) for v in (w.analytic, w.numerical)
                                          if math.isfinite(v))])
        mask = preview.as_array(report.mismatch_mask()) if report.mismatches else None
        diff_max = report.difference_peak()
        self._live = None
        self._analytic, self._numerical, self._mask = analytic, numerical, mask
        self._shown_step = 0
        self._show_pooled(self._fit_step() if self._auto_fit else preview.preview_step(self._shape))
        self._set_levels(self.colorbar, value_max)
        self._set_levels(self.difference_colorbar, max(diff_max, report.atol))
        self._mark_worst(report)
        self._mark_diagnoses(report)
        cell, self._hover_cell = self._hover_cell, None
        rows, cols = self._shape
        if cell is not None and cell[0] < rows and cell[1] < cols:
            self._set_hover(cell)  # the mouse still rests there: show the new values
        else:
            self._set_hover(None)
            self.hover_label.setText(self._hover_hint())

    def show_failure(self, message: str) -> None:
        """No verdict: hide the progress UI and say why in the banner."""
        self._end_computing()
        self._report = None
        self._set_banner("neutral", f"Jacobian not computed: {message}", "", "", "")

    def clear(self) -> None:
        """Back to the empty state."""
        self._end_computing()
        self._report = None
        self._clear_data()
        self._set_banner("neutral", "No Jacobian yet",
                         "Press “Check at current point” to compare your backward with "
                         "finite differences.", "", "")
        self.hover_label.setText(self._hover_hint())

    def preparing(self) -> None:
        """The inputs are being drawn (a comparison still running was cancelled for them):
        the comparison starts once they are ready."""
        self._end_computing()
        self._set_banner("neutral", "Preparing inputs…",
                         "The Jacobian comparison starts as soon as they are ready.", "", "",
                         keep_space=True)

    def is_computing(self) -> bool:
        return self._computing

    def hover_text(self, row: int, col: int) -> str:
        """What hovering over entry (row, col) shows; empty outside the matrix."""
        rows, cols = self._shape
        if not (0 <= row < rows and 0 <= col < cols) or not self._outputs:
            return ""
        out = self._outputs[bisect.bisect_right(self._row_starts, row) - 1]
        inp = self._inputs[bisect.bisect_right(self._col_starts, col) - 1]
        text = f"{_label(out, row - out.offset)}  /  {_label(inp, col - inp.offset)}"
        a = None if self._analytic is None else float(self._analytic[row, col])
        n = None if self._numerical is None else float(self._numerical[row, col])
        d = None if a is None or n is None else a - n
        live = self._live if self._computing else None
        done = {"analytic": live is None or row < live.rows,
                "numerical": live is None or col < live.cols}
        done["difference"] = done["analytic"] and done["numerical"]
        for name, value in (("analytic", a), ("numerical", n), ("difference", d)):
            if self._computing and (value is None or math.isnan(value) or not done[name]):
                text += f"   {name} not computed yet"
            elif value is not None:
                text += f"   {name} {_number(value)}"
        report = self._report
        if report is not None and a is not None and n is not None:
            bad = self._mask is not None and bool(self._mask[row, col])
            text += "   ✘ outside tolerance" if bad else "   ✔ within tolerance"
        return text

    def ideal_height(self) -> int:
        """The pane's height at which the heatmaps' cells are square and the three views use
        the whole width they have: what the window gives the pane first. Before a matrix
        arrives, that of a square one (most are, and the pane need not move when it comes)."""
        rows, cols = self._shape if all(self._shape) else (1, 1)
        vb = self._panels[0].plot.vb
        width = vb.width()
        if width < 2 or not self.graphics.isVisible():
            return self.sizeHint().height()
        return math.ceil(self.height() - vb.height() + width * rows / cols)

    def apply_font(self, font: QFont, verdict_scale: float = 1.0) -> None:
        """Use ``font`` (and sizes derived from it) everywhere, heatmap axes included; the
        verdict line ``verdict_scale`` times its usual size (presentation mode)."""
        self._verdict_scale = float(verdict_scale)
        self.setFont(font)
        self._restyle()

    # ------------------------------------------------------------------ Qt events

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.PaletteChange):
            self._restyle()
        super().changeEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.graphics.viewport() and event.type() == QEvent.Type.Paint \
                and self._paint_waiter is not None:
            QTimer.singleShot(0, self._release_paint_wait)  # once this paint is done
        elif watched is self.graphics.viewport() and event.type() == QEvent.Type.Leave:
            self._set_hover(None)
        elif watched is self.graphics and event.type() == QEvent.Type.Resize:
            self._fit_row_axis()  # its width depends on the width there is
            for bar in (self.colorbar, self.difference_colorbar):
                self._fit_bar(bar, grow_only=self._computing)
        return super().eventFilter(watched, event)

    # ------------------------------------------------------------------ data

    def _clear_data(self) -> None:
        self._analytic = self._numerical = self._mask = None
        self._shown_step = 0
        self._live = None
        for image in (self.analytic_image, self.numerical_image, self.difference_image):
            image.clear()
        for bar in (self.colorbar, self.difference_colorbar):
            bar.setLevels((-1.0, 1.0))
        self._clear_marks()
        self._set_hover(None)

    def _clear_marks(self) -> None:
        self.mismatch_markers.clear()
        self.mismatch_overlay.clear()
        self._mask_mode = ""
        for panel in self._panels:
            panel.worst.clear()
            panel.worst_halo.clear()
        for item in self._diagnosis_items:
            self._panels[2].plot.removeItem(item)
        self._diagnosis_items = []

    def _mark_diagnoses(self, report: Report) -> None:
        """On the difference heatmap: each diagnosed block outlined (dashed), with what
        looks wrong written at its top left."""
        blocks = {b.name: b for b in report.blocks}
        plot = self._panels[2].plot
        colour = self.palette().color(QPalette.ColorRole.WindowText)
        for d in report.diagnoses:
            block = blocks.get(d.block)
            if block is None:
                continue
            x, y = block.input.offset - 0.5, block.output.offset - 0.5
            w, h = block.input.size, block.output.size
            box = pg.PlotCurveItem([x, x + w, x + w, x, x], [y, y, y + h, y + h, y],
                                   pen=pg.mkPen(colour, width=2, style=Qt.PenStyle.DashLine))
            label = pg.TextItem(d.kind.replace("_", " "), color=colour, anchor=(0, 0),
                                fill=pg.mkBrush(self.palette().color(QPalette.ColorRole.Base)))
            label.setPos(x, y)
            label.setToolTip(d.detail)
            for item in (box, label):
                item.setZValue(12)
                plot.addItem(item, ignoreBounds=True)
                self._diagnosis_items.append(item)

    def _await_paint(self, event: threading.Event) -> None:
        """Set ``event`` once the heatmaps have been repainted (at once if they are not on
        screen, or collapsed to nothing). The worker waits for it after a new matrix's first
        progress (that repaint lays the matrix out: axes, block labels, images, the pane's
        costliest) and after a big matrix's previews: a paint takes a half to a quarter of
        the time while the comparison does not compete for the cores and the interpreter."""
        self._release_paint_wait()
        if self._on_screen():
            self._paint_waiter = event
        else:  # no paint is coming
            event.set()

    def _on_screen(self) -> bool:
        """Whether the heatmaps can be painted now: not hidden, collapsed, minimised or
        covered."""
        handle = self.window().windowHandle()
        return (self.graphics.isVisible() and not self.graphics.viewport().visibleRegion().isEmpty()
                and handle is not None and handle.isExposed())

    def _release_paint_wait(self) -> None:
        waiter, self._paint_waiter = self._paint_waiter, None
        if waiter is not None:
            waiter.set()

    def _end_computing(self) -> None:
        self._drop_deferred()
        self._release_paint_wait()
        self._computing = False
        self._refresh_timer.stop()
        self._last_refresh = -math.inf
        self.progress_bar.hide()
        self.cancel_button.hide()
        self.check_button.setEnabled(True)

    def _scan(self, live: _Live, analytic, numerical, progress: Progress,
              fraction: float) -> None:
        """Fold the entries finished since the last call into the colour levels.

        The engine fills the numerical matrix column by column (first half of the progress),
        then the analytic one row by row (second half); only finished parts are read.
        """
        rows, cols = self._shape
        phase = progress.phase
        if progress.columns_done is not None or progress.rows_done is not None:
            cols_done, rows_done = progress.columns_done or 0, progress.rows_done or 0
        elif phase == "numerical":
            cols_done, rows_done = round(2 * fraction * cols), 0
        elif phase == "analytic":
            cols_done, rows_done = cols, round((2 * fraction - 1) * rows)
        else:  # "done", or a phase this view does not know: treat everything as final
            cols_done, rows_done = cols, rows
        cols_done = min(cols, max(0, cols_done))
        rows_done = min(rows, max(0, rows_done))
        if progress.value_peak is not None:  # the engine tracks it: no scan here
            live.value_max = max(live.value_max, progress.value_peak)
            live.cols = max(live.cols, cols_done)
            live.rows = max(live.rows, rows_done if analytic is not None else 0)
            return
        if cols_done > live.cols:
            live.value_max = max(live.value_max, preview.absmax(numerical[:, live.cols:cols_done]))
            live.cols = cols_done
        if analytic is not None and rows_done > live.rows:
            live.value_max = max(live.value_max, preview.absmax(analytic[live.rows:rows_done]))
            live.rows = rows_done

    def _show_matrix(self, image: pg.ImageItem, shown: np.ndarray | None, step: int) -> None:
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

    def _set_levels(self, bar: pg.ColorBarItem, peak: float, grow_only: bool = False) -> None:
        peak = peak if math.isfinite(peak) and peak > 0 else 1.0
        high = bar.levels()[1]
        if grow_only and self._computing and high >= peak and high <= 4 * peak:
            return
        bar.setLevels((-peak, peak))
        self._fit_bar(bar, grow_only=self._computing)

    def _fit_bar(self, bar: pg.ColorBarItem, grow_only: bool = False) -> None:
        """Make a colour bar's axis just wide enough for its tick labels (while computing,
        only wider: levels that grow a few times a second should not make the views jump)."""
        font = bar.axis.style["tickFont"] or self.font()
        metrics = QFontMetrics(font)
        low, high = bar.levels()
        length = bar.axis.height() if bar.axis.height() > 40 else 300
        texts = ["0"]
        for size in (length, 2 * length):  # the labels at this height or a taller one
            for spacing, values in bar.axis.tickValues(low, high, size):
                texts += _compact_tick_strings(values, 1.0, spacing)
        width = max(metrics.horizontalAdvance(t) for t in texts) + self._tick_offset + 6
        if grow_only:
            width = max(width, getattr(bar.axis, "fixedWidth", None) or 0)
        if getattr(bar.axis, "fixedWidth", None) != width or bar.maximumWidth() != (
                width + self._bar_width + 4):
            bar.axis.setWidth(width)
            bar.setFixedWidth(width + self._bar_width + 4)

    def _show_pooled(self, step: int) -> None:
        """Draw the report's matrices pooled ``step`` x ``step`` (largest magnitude per cell,
        computed by the worker: see :func:`display_steps`), or whole for step 1; and its
        mismatches. Big matrices are never handed to pyqtgraph whole: it would average them
        down on every repaint, on this thread."""
        report = self._report
        if report is None or self._analytic is None or step == self._shown_step:
            return
        self._shown_step = step
        shown = report.overview(step) if step > 1 else None
        pairs = ((self.analytic_image, self._analytic, "analytic"),
                 (self.numerical_image, self._numerical, "numerical"),
                 (self.difference_image, None, "difference"))
        for image, whole, name in pairs:
            if shown is not None:
                matrix = getattr(shown, name).numpy()
            else:
                matrix = whole if whole is not None else preview.as_array(report.difference())
            self._show_matrix(image, matrix, step)
        if self._mask is not None:
            self.mismatch_markers.clear()
            self.mismatch_overlay.clear()
            self._mark_mismatches(report, self._mask, None if shown is None else shown.mismatches,
                                  step)

    def _fit_step(self) -> int:
        """The pooling step that fits the matrix to the views' pixels, where the worker has
        pooled it so; else the finer one it always pools (see :func:`display_steps`)."""
        steps = preview.display_steps(self._shape)
        fine, fit = steps[0], steps[-1]
        return fit if self._report is not None and self._report.has_overview(fit) else fine

    def _mark_mismatches(self, report: Report, mask: np.ndarray,
                         pooled: torch.Tensor | None = None, step: int = 1) -> None:
        """Outline each mismatch, or, when there are many or finding them would mean
        scanning a big mask, lay the mask (``pooled`` by ``step``, if given) over the
        difference as an amber wash."""
        count = report.mismatches
        failing = [b for b in report.blocks if b.mismatches]
        scan = sum(b.size for b in failing)
        if count > SCATTER_LIMIT or scan > SCAN_ENTRIES:
            self._mask_mode = "wash"
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
        self._mask_mode = "outline"
        xs, ys = [], []
        for block in failing:  # only the failing blocks are looked at
            o, i = block.output, block.input
            rows, cols = np.nonzero(mask[o.offset:o.offset + o.size, i.offset:i.offset + i.size])
            ys.append(rows + o.offset)
            xs.append(cols + i.offset)
        self.mismatch_markers.setData(x=np.concatenate(xs).astype(float),
                                      y=np.concatenate(ys).astype(float))

    def _mark_worst(self, report: Report) -> None:
        worst = report.worst
        if worst is None:
            return
        for panel in self._panels:
            for item in (panel.worst_halo, panel.worst):
                item.setData(x=[float(worst.col)], y=[float(worst.row)])
        self._style_worst()

    # ------------------------------------------------------------------ axes, blocks

    def _set_axes(self, outputs: list[Axis], inputs: list[Axis]) -> None:
        key = _layout_key(outputs, inputs)
        if key == self._layout_key:
            return
        self._layout_key = key
        self._outputs, self._inputs = list(outputs), list(inputs)
        self._row_starts = [a.offset for a in outputs]
        self._col_starts = [a.offset for a in inputs]
        rows, cols = sum(a.size for a in outputs), sum(a.size for a in inputs)
        self._shape = (rows, cols)
        xs = _boundaries(inputs)
        ys = _boundaries(outputs)
        gx, gy = [], []
        for x in xs:
            gx += [x, x]
            gy += [-0.5, rows - 0.5]
        for y in ys:
            gx += [-0.5, cols - 0.5]
            gy += [y, y]
        for panel in self._panels:
            panel.grid_halo.setData(np.array(gx, float), np.array(gy, float))
            panel.grid.setData(np.array(gx, float), np.array(gy, float))
        self._fit_row_axis()
        self._auto_fit = True
        self.idealHeightChanged.emit()
        self._update_aspect()
        self._refit()
        self._update_ticks()

    def _fit_row_axis(self) -> None:
        """The row-label column. One output (most Functions): its "name [shape]" written
        upwards along the rows, one line wide, so the heatmaps keep the width. Several: the
        longest "name [shape]" label, unless that takes more than a fifth of the width; then
        the longest bare name (up to the same)."""
        metrics = QFontMetrics(scaled(self.font(), 1.0))
        points = point_size(self.font())
        axis = self.row_axis
        if len(self._outputs) <= 1:
            self._row_text_width = 0
            text = ""
            if self._outputs:
                out = self._outputs[0]
                room = self._panels[0].plot.vb.height()
                text = _block_label(out)
                if room >= 2 and metrics.horizontalAdvance(text) > room:
                    text = metrics.elidedText(out.name, Qt.TextElideMode.ElideRight,
                                              max(int(room), 1))
            axis.setLabel(html.escape(text), **{"font-size": css_size(self.font(), 1.0),
                                                "color": self._text_color})
            axis.showLabel(bool(text))
            width = metrics.height() + max(4, round(points * 0.5)) + 4
        else:
            axis.showLabel(False)
            full = [text for _, text in _block_ticks(self._outputs)]
            names = [a.name for a in self._outputs]
            cap = max(4 * metrics.height(), 0.2 * self.graphics.width())
            need = max(metrics.horizontalAdvance(t) for t in full)
            if need > cap:
                need = min(cap, max(metrics.horizontalAdvance(t) for t in names))
            self._row_text_width = math.ceil(need)
            width = (self._row_text_width + max(3, round(points * 0.4))
                     + max(4, round(points * 0.5)) + 6)
        if getattr(axis, "fixedWidth", None) != width:
            axis.setWidth(width)

    def fit(self) -> None:
        """Show the whole matrix (and keep it fitted while the view is resized)."""
        self._auto_fit = True
        self._show_pooled(self._fit_step())
        self._update_aspect()
        self._refit()

    def _view_resized(self, *_args) -> None:
        self.idealHeightChanged.emit()
        vb = self._panels[0].plot.vb
        preview.DISPLAY["pixels"] = max(64, min(preview.PREVIEW_PIXELS, math.ceil(
            max(vb.width(), vb.height()) * self.devicePixelRatioF())))
        if self._auto_fit:
            if self._shown_step > self._fit_step():  # grown past what the pooling fits
                self._show_pooled(self._fit_step())
            self._update_aspect()
            self._refit()
        self._fit_titles()
        self._update_ticks()

    def _fit_titles(self) -> None:
        """Full titles where they all fit over their views, else the first words only
        ("Analytic", "Numerical", "Difference")."""
        metrics = QFontMetrics(self._title_font)
        width = self._panels[0].plot.vb.width()  # the same for all three
        short = width >= 2 and any(metrics.horizontalAdvance(panel.title) > width
                                   for panel in self._panels)
        for panel in self._panels:
            title = panel.title.split(" (")[0] if short else panel.title
            if title != panel.shown_title:
                panel.shown_title = title
                panel.plot.setTitle(title, **self._title_style)
                # setTitle resets the title row to 30 px: back to the height of this font
                panel.plot.titleLabel.setMaximumHeight(self._title_height)
                panel.plot.layout.setRowFixedHeight(0, self._title_height)

    def _update_aspect(self) -> None:
        """Lock the cells' aspect (square, or stretched where square cells would leave most
        of the view empty); the three views are linked, so they all get the same."""
        vb = self._panels[0].plot.vb
        rows, cols = self._shape
        ratio = _cell_aspect(rows, cols, vb.width(), vb.height())
        for panel in self._panels:
            panel.plot.vb.setAspectLocked(True, ratio=ratio)

    def _refit(self, *_args) -> None:
        rows, cols = self._shape
        if self._auto_fit and rows and cols:
            self._panels[0].plot.vb.setRange(xRange=(-0.5, cols - 0.5),
                                             yRange=(-0.5, rows - 0.5), padding=0.02)

    def block_ticks(self) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
        """The (column, row) block labels the axes show: [(position, text), ...].

        A label reads "name [shape]" where the block is wide (or tall) enough on screen,
        else just "name"; a block too small even for that gets no label (the hint line
        below the views then lists every block)."""
        return self._tick_labels

    def _update_ticks(self, *_args) -> None:
        """Lay the block labels out for the current zoom and size (see block_ticks)."""
        vb = self._panels[0].plot.vb
        (x0, x1), (y0, y1) = vb.viewRange()
        metrics = QFontMetrics(scaled(self.font(), 1.0))
        if not self.graphics.isVisible() or vb.width() < 2 or vb.height() < 2:
            # not on screen yet: every block in full, at its centre
            x_ticks, x_full = _block_ticks(self._inputs), True
            y_ticks, y_full = _block_ticks(self._outputs), True
        else:
            x_ticks, x_full = _fit_labels(self._inputs, x0, x1, vb.width(),
                                          metrics.horizontalAdvance, None,
                                          gap=metrics.horizontalAdvance("  "))
            y_ticks, y_full = [], True
        if len(self._outputs) <= 1:
            y_ticks, y_full = [], True  # one output: the column's upright label names it
        elif self.graphics.isVisible() and vb.width() >= 2 and vb.height() >= 2:
            y_ticks, y_full = _fit_labels(self._outputs, y0, y1, vb.height(),
                                          lambda _text: metrics.height(),
                                          lambda text: metrics.horizontalAdvance(text)
                                          <= self._row_text_width,
                                          gap=2, elide=(metrics, self._row_text_width))
        if (x_ticks, y_ticks) != self._tick_labels:
            self._tick_labels = (x_ticks, y_ticks)
            for panel in self._panels:
                panel.plot.getAxis("bottom").setTicks([x_ticks, []])
            self.row_axis.setTicks([y_ticks, []])
        full = x_full and y_full
        if full != self._full_labels:
            self._full_labels = full
            if self._hover_cell is None and not self._computing:
                self.hover_label.setText(self._hover_hint())

    def _size_markers(self, *_args) -> None:
        """Cell outlines follow the zoom, but never shrink below a visible size."""
        vb = self._panels[0].plot.vb
        try:
            px, py = vb.viewPixelSize()
        except Exception:  # not laid out yet
            return
        cell = min(1.0 / px, 1.0 / py) if px > 0 and py > 0 else 10.0
        pixels = QFontMetrics(self.font()).height()
        minimum = max(6.0, pixels * 0.45)
        self.mismatch_markers.setSize(max(minimum, cell * 0.8))
        for panel in self._panels:
            panel.hover.setSize(max(minimum + 2, cell + 2))

    def _user_zoomed(self, *_args) -> None:
        self._auto_fit = False
        self._show_pooled(preview.preview_step(self._shape))  # zoomed in: the finer pooling

    def _mouse_clicked(self, event) -> None:
        if event.double() and event.button() == Qt.MouseButton.LeftButton:
            self.fit()
            event.accept()

    # ------------------------------------------------------------------ banner

    def _show_verdict(self, report: Report) -> None:
        total, bad = report.total, report.mismatches
        if report.passed:
            head = f"✔ PASSED: all {total:,} Jacobian entries within tolerance"
        else:
            head = f"✘ FAILED: {bad:,} of {total:,} Jacobian entries outside tolerance"
        details = (f"max abs error {_number(report.max_abs_error, 3)}   ·   max rel error "
                   f"{_number(report.max_rel_error, 3)}   ·   rule |a − n| ≤ {report.atol:g} + "
                   f"{report.rtol:g}·|n|, eps {report.eps:g}, numerical in "
                   f"{str(report.numerical_dtype).replace('torch.', '')}"
                   f"   ·   {report.seconds:.2f} s")
        lines = []
        w = report.worst
        if w is not None:
            lines.append(f"worst: d {_element(w.output_name, w.output_index)} / d "
                         f"{_element(w.input_name, w.input_index)}: analytic "
                         f"{_number(w.analytic)}, numerical {_number(w.numerical)}")
        failing = [b for b in report.blocks if not b.passed]
        if failing and len(report.blocks) > 1:
            shown = "; ".join(f"{b.name} ({b.mismatches:,} of {b.size:,})" for b in failing[:3])
            more = f"; and {len(failing) - 3} more" if len(failing) > 3 else ""
            lines.append(f"failing blocks: {shown}{more}")
        if len(report.checks) > 1:  # the checklist: each sub-check with its verdict
            marks = {"passed": "✔", "failed": "✘", "skipped": "–"}
            lines.append("checks: " + "   ".join(f"{marks[c.status]} {c.name}"
                                                 for c in report.checks.values()))
            lines += [f"{c.name}: {c.detail}" for c in report.checks.values()
                      if c.status == "failed" and c.name != "jacobian"]
            failed = [c.name for c in report.checks.values() if c.status == "failed"]
            if not bad and failed:
                head = f"✘ FAILED: {', '.join(failed)} (the Jacobian agrees)"
        if report.diagnoses:  # shorter words, so the line keeps to one line
            head = (f"✘ FAILED: {bad:,} of {total:,} entries outside tolerance — "
                    f"{PHRASES[report.diagnoses[0].kind]}?")
            lines += [f"diagnosis: {d}" for d in report.diagnoses]
        notes = "\n".join(f"• {note}" for note in report.notes)
        self._set_banner("passed" if report.passed else "failed", head, details,
                         "\n".join(lines), notes)

    def _set_banner(self, state: str, head: str, details: str, worst: str, notes: str,
                    keep_space: bool = False) -> None:
        """The verdict banner. Its detail lines keep their place when empty, so the banner
        keeps its height from one verdict to the next and the heatmaps below never jump (nor
        are laid out again: tens of milliseconds on the GUI thread); ``keep_space`` also
        keeps extra height a wrapped line had."""
        self._banner_state = state
        self.verdict_label.setText(head)
        for label, text in ((self.details_label, details), (self.worst_label, worst),
                            (self.notes_label, notes)):
            label.setText(text)
            if not keep_space:
                label.setMinimumHeight(0)
                label.setVisible(bool(text) or self._report is not None or self._computing)
        self._style_banner()

    def _style_banner(self) -> None:
        state = getattr(self, "_banner_state", "neutral")
        if state == "passed":
            bg, border, fg = _PASS
        elif state == "failed":
            bg, border, fg = _FAIL
        else:
            pal = self.palette()
            bg = pal.color(QPalette.ColorRole.AlternateBase).name()
            border = pal.color(QPalette.ColorRole.Mid).name()
            fg = pal.color(QPalette.ColorRole.WindowText).name()
        sheet = (f"#JacobianBanner {{ background: {bg}; border: 2px solid {border};"
                 f" border-radius: 6px; }} #JacobianBanner QLabel {{ color: {fg}; }}")
        if sheet != self.banner.styleSheet():  # setting it re-polishes every label in it
            self.banner.setStyleSheet(sheet)

    # ------------------------------------------------------------------ tolerances

    def _parse(self, name: str) -> tuple[float | None, str]:
        try:
            return setting_number(name)(self._tolerance_edits[name].text()), ""
        except SpecError as exc:
            return None, str(exc)

    def _validate_edits(self) -> tuple[float, float, float] | None:
        values, problems = [], []
        for name, edit in self._tolerance_edits.items():
            value, problem = self._parse(name)
            self._mark(edit, problem or None)
            values.append(value)
            if problem:
                problems.append(problem)
        self.tolerance_message.setText(("✘ " + ";  ".join(problems)) if problems else "")
        self.tolerance_message.setToolTip("\n".join(problems))
        return None if problems else (values[0], values[1], values[2])

    def _commit_tolerances(self) -> None:
        values = self._validate_edits()
        if values is None or values == self._tolerances:
            return
        self._tolerances = values
        self.tolerancesChanged.emit(*values)

    def _mark(self, edit: QLineEdit, problem: str | None) -> None:
        edit.setProperty("invalid", bool(problem))
        edit.setToolTip(problem or edit.property("tip"))
        edit.setStyleSheet("QLineEdit { border: 2px solid #c0261c; background: #fde8e6;"
                           " color: #5f0b0b; }" if problem else "")

    # ------------------------------------------------------------------ hover

    def _mouse_moved(self, pos: QPointF) -> None:
        for panel in self._panels:
            vb = panel.plot.vb
            if vb.sceneBoundingRect().contains(pos):
                point = vb.mapSceneToView(pos)
                row, col = math.floor(point.y() + 0.5), math.floor(point.x() + 0.5)
                rows, cols = self._shape
                if 0 <= row < rows and 0 <= col < cols and self._numerical is not None:
                    self._set_hover((row, col))
                    return
        self._set_hover(None)

    def _set_hover(self, cell: tuple[int, int] | None) -> None:
        if cell == self._hover_cell:
            return
        self._hover_cell = cell
        for panel in self._panels:
            if cell is None:
                panel.hover.clear()
            else:
                panel.hover.setData(x=[float(cell[1])], y=[float(cell[0])])
        if cell is None:
            if not self._computing:
                self.hover_label.setText(self._hover_hint())
            return
        self.hover_label.setText(self.hover_text(*cell))

    def _hover_hint(self) -> str:
        if self._numerical is None:
            return "Rows are output elements, columns are input elements."
        extra = ""
        if self._mask_mode == "wash":
            extra = "  Amber cells are outside tolerance; the ring marks the worst entry."
        elif self._mask_mode == "outline":
            extra = "  Outlined cells are outside tolerance; the ring marks the worst entry."
        elif self._report is not None and self._report.worst is not None:
            extra = "  The ring marks the entry closest to failing."
        # the most useful first: a line too long for the window ends in "…" (whole: tooltip)
        return (self._legend() + extra.strip() + "  Rows are output elements, columns input "
                "elements: hover over a cell to read it. Scroll to zoom, drag to pan, "
                "double-click to fit.").strip()

    def _legend(self) -> str:
        """The blocks spelled out, when the axes are too short to label them all in full."""
        if self._full_labels or not self._inputs:
            return ""
        columns = ", ".join(text for _, text in _block_ticks(self._inputs))
        rows = ", ".join(text for _, text in _block_ticks(self._outputs))
        return f"Columns: {columns}.  Rows: {rows}.  "

    # ------------------------------------------------------------------ fonts, colours

    def _restyle(self) -> None:
        if self._styling:
            return
        self._styling = True
        try:
            self._restyle_now()
        finally:
            self._styling = False

    def _restyle_now(self) -> None:
        base = QFont(self.font())
        points = point_size(base)
        big = scaled(base, 1.4 * self._verdict_scale, bold=True)
        self.verdict_label.setFont(big)
        self.details_button.setFont(scaled(base, 1.0))
        # presenting (a larger verdict): the toggle is its arrow only, the verdict keeps a line
        self.details_button.setText("Details" if self._verdict_scale == 1.0 else "")
        self.details_button.setToolButtonStyle(
            Qt.ToolButtonStyle.ToolButtonTextBesideIcon if self._verdict_scale == 1.0
            else Qt.ToolButtonStyle.ToolButtonIconOnly)
        # explicit fonts: the banner's style sheet stops fonts from being inherited
        for widget in (self.details_label, self.worst_label, self.tolerance_message,
                       *self._tolerance_edits.values()):
            widget.setFont(scaled(base, 1.0))
        self.notes_label.setFont(scaled(base, 0.92))
        hover_font = scaled(base, 1.1)
        self.hover_label.setFont(hover_font)
        pal = self.palette()
        bg = pal.color(QPalette.ColorRole.Base)
        fg = pal.color(QPalette.ColorRole.Text)
        self.graphics.setBackground(bg)
        title_font = scaled(base, 1.15, bold=True)
        title_height = QFontMetrics(title_font).height() + 2
        tick_font = scaled(base, 1.0)
        metrics = QFontMetrics(tick_font)
        offset = max(3, round(points * 0.4))
        self._text_color = fg.name()
        self._title_font = title_font
        self._title_height = title_height
        self._title_style = {"size": css_size(base, 1.15), "bold": True, "color": fg.name()}
        for panel in self._panels:
            plot = panel.plot
            panel.shown_title = ""
            plot.titleLabel.setMaximumHeight(title_height)
            plot.layout.setRowFixedHeight(0, title_height)
            for side in ("left", "bottom"):
                axis = plot.getAxis(side)
                axis.setPen(mix(fg, bg, 0.5))
                axis.setTextPen(fg)
                axis.setStyle(tickFont=tick_font, tickTextOffset=offset,
                              tickLength=-max(4, round(points * 0.5)))
                axis.setStyle(autoExpandTextSpace=False)
        bottom_height = metrics.height() + offset + 4
        rows = self.rows_plot
        rows.layout.setRowFixedHeight(0, title_height)
        rows.getAxis("bottom").setHeight(bottom_height)
        self.row_axis.setPen(mix(fg, bg, 0.5))
        self.row_axis.setTextPen(fg)
        self.row_axis.setStyle(tickFont=tick_font, tickTextOffset=offset,
                               tickLength=-max(4, round(points * 0.5)),
                               autoExpandTextSpace=False)
        # compact colour bars: the bar about one line of text wide, the axis as wide as
        # its labels (see _fit_bar)
        self._bar_width = max(12, metrics.height())
        self._tick_offset = offset
        for bar in (self.colorbar, self.difference_colorbar):
            bar.layout.setRowFixedHeight(0, title_height)
            bar.layout.setColumnFixedWidth(1, self._bar_width)
            bar.axis.setStyle(tickFont=tick_font, tickTextOffset=offset)
            bar.axis.setTextPen(fg)
            bar.axis.setPen(mix(fg, bg, 0.5))
            for side in ("left", "top", "bottom"):
                bar.getAxis(side).setPen(mix(fg, bg, 0.5))
            bar.getAxis("bottom").setHeight(bottom_height)
            self._fit_bar(bar)
        for panel in self._panels:
            panel.plot.getAxis("bottom").setHeight(bottom_height)
        self._fit_row_axis()
        self._fit_titles()
        self._update_ticks()
        pixels = QFontMetrics(base).height()
        grid_width = max(1.5, pixels / 9)
        for panel in self._panels:
            panel.grid_halo.setPen(pg.mkPen(_HALO, width=grid_width + 2.5))
            panel.grid.setPen(pg.mkPen(_GRID, width=grid_width))
            panel.hover.setPen(pg.mkPen(_HOVER, width=max(2.0, pixels / 7)))
        self.mismatch_markers.setPen(pg.mkPen(_MISMATCH, width=max(1.5, pixels / 10)))
        self._style_worst()
        self._size_markers()
        self._style_banner()
        width = metrics.horizontalAdvance("0.000001") + 18
        for edit in self._tolerance_edits.values():
            edit.setMinimumWidth(width)
            edit.setMaximumWidth(width * 2)

    def _style_worst(self) -> None:
        pixels = QFontMetrics(self.font()).height()
        failed = self._report is not None and not self._report.passed
        if (pixels, failed) == self._worst_style:
            return  # re-styling six markers re-renders their symbols: about 1 ms a report
        self._worst_style = (pixels, failed)
        size = pixels * (1.5 if failed else 1.25)
        for panel in self._panels:
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


# ---------------------------------------------------------------------- helpers


def _layout_key(outputs: list[Axis], inputs: list[Axis]) -> tuple:
    """What decides a matrix's layout: its outputs' and inputs' names and shapes."""
    return tuple((a.name, a.shape) for a in outputs), tuple((a.name, a.shape) for a in inputs)


# Items hidden while they hold nothing: Qt still calls an empty item's (Python) paint at every
# repaint, and each such call is a turn at the interpreter lock a busy worker thread holds.
class _Scatter(pg.ScatterPlotItem):
    def setData(self, *args, **kwargs) -> None:
        super().setData(*args, **kwargs)
        self.setVisible(len(self.data) > 0)

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


class _Curve(pg.PlotCurveItem):
    def setData(self, *args, **kwargs) -> None:
        super().setData(*args, **kwargs)
        self.setVisible(self.xData is not None and len(self.xData) > 0)

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


class _Image(pg.ImageItem):
    def setImage(self, image=None, autoLevels=None, **kwargs) -> None:
        super().setImage(image, autoLevels, **kwargs)
        self.setVisible(self.image is not None and self.image.size > 0)

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


def _ignore_text_width(label: pg.LabelItem) -> None:
    """Let ``label`` (a plot title) ask for no width: a long title must not make one plot
    wider than the others (their views are linked and should have equal sizes)."""

    def update_min() -> None:
        height = label.itemRect().height()
        label.setMinimumWidth(0)
        label.setMinimumHeight(height)
        label._sizeHint = {
            Qt.SizeHint.MinimumSize: (0, height),
            Qt.SizeHint.PreferredSize: (0, height),
            Qt.SizeHint.MaximumSize: (-1, -1),
            Qt.SizeHint.MinimumDescent: (0, 0),
        }
        label.updateGeometry()

    label.updateMin = update_min


def _cell_aspect(rows: int, cols: int, width: float, height: float) -> float:
    """The views' locked aspect ratio (pyqtgraph's: x pixels per unit / y pixels per unit).

    1 (square cells) while square cells fill at least FILL_TARGET of the view; otherwise
    the cells stretch along the short side of the matrix just enough to fill FILL_TARGET,
    by at most MAX_CELL_STRETCH unless that would fill less than MIN_FILL. The stretch
    changes smoothly with the view's size: no jumps while a window is resized."""
    if not rows or not cols or width < 2 or height < 2:
        return 1.0
    relative = (width / height) / (cols / rows)  # < 1: the matrix is wider than the view
    fill = min(relative, 1 / relative)  # of the view, with square cells
    if fill >= FILL_TARGET:
        return 1.0
    stretch = max(min(FILL_TARGET / fill, MAX_CELL_STRETCH), MIN_FILL / fill)
    return 1 / stretch if relative < 1 else stretch


def _fit_labels(axes: list[Axis], low: float, high: float, length: float, along, fits,
                gap: float, elide: tuple[QFontMetrics, int] | None = None
                ) -> tuple[list[tuple[float, str]], bool]:
    """Block labels along one axis ``length`` pixels long that shows ``low``..``high``.

    Each visible block gets the longest of "name [shape]", "name" (and, with ``elide``
    (metrics, width), the name elided to that width) that ``fits`` across the axis, lies
    inside the axis with its centre on the block's visible part, and keeps ``gap`` pixels
    from its neighbours' labels (shifting along its block if need be); ``along(text)`` is a
    label's extent along the axis. Where two labels clash, the widest of them (and of the
    labels that pushed them) that has a shorter form gets it; where none has, the smaller
    block's label goes.
    Returns [(position, text)] and whether every visible block shows its full label."""
    if not axes or high <= low or length <= 0:
        return [], True
    scale = length / (high - low)
    items = []  # [start px, end px, forms, level (len(forms): no label)]
    for a in axes:
        lo, hi = max(a.offset - 0.5, low), min(a.offset + a.size - 0.5, high)
        if hi <= lo:
            continue
        forms = [_block_label(a), a.name]
        if elide is not None:
            metrics, width = elide
            forms.append(metrics.elidedText(a.name, Qt.TextElideMode.ElideRight, width))
        if fits is not None:
            forms = [f for f in forms if fits(f)]
        items.append([(lo - low) * scale, (hi - low) * scale, list(dict.fromkeys(forms)), 0])

    def place(item) -> tuple[float, float] | None:
        p0, p1, forms, level = item
        while level < len(forms):
            extent = along(forms[level])
            centre = (p0 + p1) / 2
            start = min(max(centre - extent / 2, 0.0), length - extent)
            if extent <= length and p0 <= start + extent / 2 <= p1:
                item[3] = level
                return start, start + extent
            level += 1
        item[3] = level
        return None

    while True:
        placed: list[tuple[list, float, float, bool]] = []  # (item, start, end, shifted)
        chain = None
        for item in items:
            span = place(item)
            if span is None:
                continue
            start, end = span
            shifted = bool(placed) and start < placed[-1][2] + gap
            if shifted:  # too close to the previous label: shift along its own block
                start = placed[-1][2] + gap
                end = start + (span[1] - span[0])
                if end > length or (start + end) / 2 > item[1]:
                    # a clash: with the previous label and the ones that pushed it
                    chain = [(item, *span), placed[-1][:3]]
                    k = len(placed) - 1
                    while k > 0 and placed[k][3]:
                        chain.append(placed[k - 1][:3])
                        k -= 1
                    break
            placed.append((item, start, end, shifted))
        if chain is None:
            break
        # shorten the widest label in the chain that has a shorter form, or, when none has,
        # drop the label of the smaller of the two clashing blocks
        shorter = [(end - start, -k, item) for k, (item, start, end) in enumerate(chain)
                   if item[3] + 1 < len(item[2]) and along(item[2][item[3] + 1]) < end - start]
        if shorter:
            max(shorter, key=lambda t: t[:2])[2][3] += 1
        else:
            a, b = chain[0][0], chain[1][0]
            loser = a if a[1] - a[0] < b[1] - b[0] else b
            loser[3] = len(loser[2])
    ticks = [(low + (start + end) / 2 / scale, item[2][item[3]])
             for item, start, end, _ in placed]
    full_texts = {_block_label(a) for a in axes}
    full = len(placed) == len(items) and all(t in full_texts for _, t in ticks)
    return ticks, full


class _ElidedLabel(QLabel):
    """A one-line label: text too long for it ends in "…", and the tooltip shows it whole."""

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def sizeHint(self) -> QSize:
        return QSize(10, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        rect = self.contentsRect()
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             rect.width())
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                         text)


def _boundaries(axes: list[Axis]) -> list[float]:
    """Lines around and between blocks, at half-integers (pixel edges)."""
    if not axes:
        return []
    return [a.offset - 0.5 for a in axes] + [axes[-1].offset + axes[-1].size - 0.5]


def _block_ticks(axes: list[Axis]) -> list[tuple[float, str]]:
    return [(a.offset + a.size / 2 - 0.5, _block_label(a)) for a in axes]


def _block_label(axis: Axis) -> str:
    return f"{axis.name} [{_shape_text(axis.shape)}]"


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _label(axis: Axis, flat: int) -> str:
    return axis.label(flat) if axis.shape else axis.name


def _element(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def _number(value: float, digits: int = 6) -> str:
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    return f"{value:.{digits}g}"


def _compact_tick_strings(values, scale, spacing) -> list[str]:
    out = []
    for v in values:
        v = v * scale
        if abs(v) < abs(spacing * scale) * 1e-6:
            out.append("0")
        else:
            out.append(f"{v:.3g}".replace("-", "−"))
    return out
