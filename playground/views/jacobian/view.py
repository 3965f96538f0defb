"""The Jacobian pane: :class:`JacobianView` puts the verdict banner, the tolerance bar, the
heatmaps and the hover line together, takes a comparison's progress and report into its data
(:class:`~.contents.Shown`), and has them drawn (:mod:`.drawing`), pacing the worker
(:mod:`.paint`). Its widgets are its parts' (``view.banner.verdict_label``,
``view.heatmaps.graphics``, ``view.tolerance_row.eps_edit``): one name each."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QPointF, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QSizePolicy, QVBoxLayout, QWidget

from customgrad.checking.jacobian.report import FINITE_DIFFERENCES
from playground.support import preview
from playground.views.fields import ElidedLabel
from playground.views.fonts import scaled
from playground.views.jacobian import words
from playground.views.jacobian.banner import DetailsDrawer, VerdictBanner
from playground.views.jacobian.contents import Shown
from playground.views.jacobian.drawing import LiveDrawing, ReportDrawing
from playground.views.jacobian.geometry import layout_key, view_height
from playground.views.jacobian.heatmaps import Heatmaps
from playground.views.jacobian.items import fit_hint
from playground.views.jacobian.labels import BlockLabels
from playground.views.jacobian.marks import Marks
from playground.views.jacobian.paint import PaintGate
from playground.views.jacobian.tolerances import ToleranceBar

if TYPE_CHECKING:
    from customgrad.checking.jacobian import Axis, Progress, Report

__all__ = ["JacobianView"]


class JacobianView(QWidget):
    """Verdict banner, tolerance editors, and the three linked heatmaps.

    Signals: ``tolerancesChanged(eps, atol, rtol)`` when the user commits valid tolerances,
    ``checkRequested()`` and ``cancelRequested()`` from the buttons, ``detailsToggled(shown)``
    when the banner is expanded or folded, ``idealHeightChanged()`` when
    :meth:`ideal_height` may have changed (a new matrix, another size), ``orderChanged(order)``
    when the heatmaps switch between the first order (1) and the second (2).
    """

    tolerancesChanged = Signal(float, float, float)
    checkRequested = Signal()
    cancelRequested = Signal()
    detailsToggled = Signal(bool)
    idealHeightChanged = Signal()
    pixelsChanged = Signal(int)  # the heatmaps' size on screen, in device pixels
    orderChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.shown = Shown()
        #: the first-order report last shown (its second order beside it), and which is drawn
        self.checked: Report | None = None
        self.order = 1
        #: how the last report of each order made its numerical matrix (Method.name)
        self._method: dict[int, str] = {}
        self._styling = False
        #: inside :meth:`restyles_held`: whether a restyle was asked for (None outside)
        self._restyle_asked: bool | None = None
        self._verdict_scale = 1.0
        self._layout_key: tuple | None = None
        self._function = ""  # the open Function's label, as the pane names it
        self._hover_cell: tuple[int, int] | None = None
        self._build()
        self._connect()
        self._restyle()
        self.clear()

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        self.banner = VerdictBanner(self)
        self.tolerance_row = ToleranceBar()
        self.banner.detailsToggled.connect(self._details_toggled)
        self.set_details_shown(False)
        self.heatmaps = Heatmaps(self)
        self.labels = BlockLabels(self.heatmaps, self)
        self.marks = Marks(self.heatmaps, self)
        self.live = LiveDrawing(self.heatmaps, self.shown, lambda: self.tolerances()[1], self)
        self.drawing = ReportDrawing(self.heatmaps, self.marks, self.shown)
        self.gate = PaintGate(self.heatmaps.graphics, self._show_progress_now, self)
        self.hover_label = ElidedLabel()
        self.hover_label.setObjectName("JacobianHover")
        self.hover_label.setMinimumWidth(10)
        self.hover_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(4)
        self.drawer = DetailsDrawer(self, self.banner, self.tolerance_row)
        layout.addWidget(self.banner)
        layout.addWidget(self.drawer)  # under the banner, above the heatmaps: over no cell
        layout.addWidget(self.heatmaps.graphics, 1)
        layout.addWidget(self.hover_label)

    def _connect(self) -> None:
        self.banner.cancelRequested.connect(self.cancelRequested)
        self.banner.orderRequested.connect(self.set_order)
        self.tolerance_row.checkRequested.connect(self.checkRequested)
        self.tolerance_row.tolerancesChanged.connect(self.tolerancesChanged)
        vb = self.heatmaps.view_box
        vb.sigResized.connect(self._view_resized)
        vb.sigRangeChanged.connect(self._update_ticks)
        vb.sigTransformChanged.connect(self.marks.fit_size)
        for panel in self.heatmaps.panels:
            panel.plot.vb.sigRangeChangedManually.connect(self._user_zoomed)
        self.heatmaps.graphics.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.heatmaps.graphics.scene().sigMouseMoved.connect(self._mouse_moved)
        graphics = self.heatmaps.graphics
        for watched in (graphics.viewport(), graphics, self, self.banner):
            watched.installEventFilter(self)

    # ------------------------------------------------------------------ public API

    def details_shown(self) -> bool:
        """Whether the banner shows its details and the tolerance editors."""
        return self.banner.details_shown()

    def set_details_shown(self, shown: bool) -> None:
        """Expand the banner (numbers, worst entry, notes, tolerances) or fold it to the
        verdict line; ``detailsToggled`` says so."""
        self.banner.set_details_shown(shown)

    def _details_toggled(self, shown: bool) -> None:
        self.tolerance_row.setVisible(shown)
        if self.layout() is not None:  # (not while it is built)
            fit_hint(self)  # the line under the heatmaps, where the drawer leaves it room
            self._lay_out_drawer()
        self.detailsToggled.emit(shown)

    def _lay_out_drawer(self) -> None:
        """The Details drawer and the column under it laid out now, as the details' lines
        ask. Left to Qt, each level of the column (the lines, the drawer, the pane) is laid
        out at its own turn of the event loop: the heatmaps took their height turns after
        the verdict, and a busy machine showed the verdict's frame with the heatmaps where
        they had been (and moved them once it had painted)."""
        if self.layout() is None:
            return
        if not self.drawer.isHidden():
            self.banner.details_scroll.updateGeometry()
            self.drawer.layout().activate()
        self.layout().activate()

    def set_tolerances(self, eps: float, atol: float, rtol: float) -> None:
        """Show these tolerances in the editors (emits nothing)."""
        self.tolerance_row.set_tolerances(eps, atol, rtol)

    def tolerances(self) -> tuple[float, float, float]:
        """The last committed (valid) tolerances."""
        return self.tolerance_row.tolerances()

    def start(self, message: str = "Computing…") -> None:
        """A comparison starts: empty heatmaps, progress bar at 0, Cancel shown."""
        self.gate.drop()
        self.gate.paint_next_pass()  # often from the slot that starts a run: the plot paints first
        self.shown.computing = True
        self.shown.report = self.checked = None  # its verdict is about other matrices
        self._clear_data()
        self.tolerance_row.check_button.setEnabled(False)
        # the banner keeps its height while computing: the heatmaps below it must not jump
        # (nor be laid out again, which costs the GUI thread tens of milliseconds); its
        # verdict's line is one line, and the unfolded details are held
        self.banner.hold_height()
        self._say("neutral", message, keep_space=True)
        self.banner.start_progress(message)
        which = f"Checking {self._function}: entries" if self._function else "Entries"
        self.hover_label.setText(f"{which} fill in as they are computed: finite differences "
                                 "column by column, then your backward row by row.")

    def running_at(self, words: str) -> None:
        """The check runs on without a word: the banner says where it is (the progress bar
        and Cancel stay), and the line under the heatmaps, which has the room to say it
        whole."""
        if self.shown.computing:
            self._say("neutral", words, keep_space=True)
            self.hover_label.setText(words)

    def show_progress(self, progress: Progress) -> None:
        """Update the bar and fill the heatmaps in with the entries computed so far. Where
        the progress has a ``painted`` event (the worker waits for it), set it once the pane
        has painted a new matrix's layout or new entries; at once if there is neither (the
        same matrix again, not one entry computed yet)."""
        painted = getattr(progress, "painted", None)
        if painted is not None and progress.outputs and progress.inputs \
                and layout_key(progress.outputs, progress.inputs) != self._layout_key \
                and self.gate.on_screen():
            self.gate.defer(progress)  # a new matrix, and the worker waits: a pass of its own
            return
        # a newer progress (its worker stopped waiting for the held one): the held one is
        # out of date, and this one lays the matrix out itself
        self.gate.drop()
        self._show_progress_now(progress)

    def set_order(self, order: int) -> None:
        """Show the first order's heatmaps (1) or the second's (2: the double backward's,
        the report's ``second_order``); ``orderChanged`` says so."""
        order = 2 if order == 2 else 1
        self.banner.set_order(order)
        if order == self.order:
            return
        self.order = order
        self._set_titles()
        if self.checked is not None and not self.shown.computing:
            self._draw(self.checked)
        self.orderChanged.emit(order)

    def toggle_order(self) -> None:
        """First order to second, or back (the D key)."""
        self.set_order(3 - self.order)

    def show_report(self, report: Report) -> None:
        """The final verdict, heatmaps, mismatches and worst entry (of the order shown: the
        report's own, or its ``second_order``); hides the progress UI."""
        self.gate.paint_next_pass()
        self._end_computing()
        self.checked = report
        self._draw(report)

    def _set_titles(self) -> None:
        """The panels' titles for the order shown, the middle one by how the report of that
        order made its matrix (as the last one did while a check runs)."""
        checked = self.checked
        report = None if checked is None else checked if self.order == 1 else \
            checked.second_order
        if report is not None:
            self._method[self.order] = report.method.name
        self.heatmaps.set_order(self.order, self._method.get(self.order, FINITE_DIFFERENCES))
        self.labels.fit_titles()
    def show_second_order(self, report: Report) -> None:
        """The shown check's report again, with its second order (computed after the
        first's verdict was shown): the heatmaps where D shows the second order, else the
        verdict's line about it. Nothing once another check has started."""
        if self.checked is None or self.shown.computing:
            return
        self.checked = report
        if self.order == 2:
            self._draw(report)
        elif self.shown.report is not None:
            self.shown.report = report
            verdict = words.verdict(report, 1)
            self._say(verdict.state, verdict.head, verdict.details, verdict.worst, verdict.notes)

    def _draw(self, checked: Report) -> None:
        report = checked if self.order == 1 else checked.second_order
        self._set_titles()
        if report is None:
            self.shown.report = None
            self._clear_data()
            self._fit_tag_room()
            verdict = words.no_second_order(checked)
            self._say(verdict.state, verdict.head, verdict.details)
            self.hover_label.setText(self._hover_hint())
            return
        self.shown.report = report
        self._set_axes(report.outputs, report.inputs)
        verdict = words.verdict(report, self.order)
        self._say(verdict.state, verdict.head, verdict.details, verdict.worst, verdict.notes)
        self.marks.clear()
        drawn = self.drawing.show(report)
        self._fit_tag_room()
        if not drawn:
            self._clear_data()
            self.marks.mark_worst(report)  # where it is, even without the values
            self.hover_label.setText("The matrices were not kept for this check: "
                                     "verdict only.")
            return
        cell, self._hover_cell = self._hover_cell, None
        rows, cols = self.heatmaps.shape
        if cell is not None and cell[0] < rows and cell[1] < cols:
            self._set_hover(cell)  # the mouse still rests there: show the new values
        else:
            self._set_hover(None)
            self.hover_label.setText(self._hover_hint())

    def show_failure(self, message: str) -> None:
        """No verdict: hide the progress UI and say why in the banner, in short (the whole
        message under Details). A check that failed (not one the user cancelled) leaves no
        matrices of an earlier one: they were for other inputs."""
        self._end_computing()
        self.shown.report = self.checked = None
        if not message.startswith("cancelled"):
            self._forget_matrix()
        said = words.not_computed(message)
        self._say(said.state, said.head, said.details)
        self.hover_label.setText(self._hover_hint())  # not "Checking …" any more

    def clear(self) -> None:
        """Back to the empty state."""
        self._end_computing()
        self.shown.report = self.checked = None
        self._method.clear()
        self._set_titles()
        self._clear_data()
        self._fit_tag_room()
        self._say("neutral", "No Jacobian yet",
                  "Press “Check at current point” to compare your backward with "
                  "finite differences.")
        self.hover_label.setText(self._hover_hint())

    def new_function(self, label: str) -> None:
        """Another Function has opened: nothing of the last one's check stays (a check still
        running was cancelled: its verdict, entries, block names and method), the pane keeps
        its height till the new matrix comes, and says which Function it prepares."""
        self._end_computing()
        self.shown.report = self.checked = None
        self._method.clear()
        self._set_titles()
        self._forget_matrix()
        self._function = label
        self._say("neutral", "Preparing inputs…", self._preparing_details())
        self.hover_label.setText(self._preparing_details())

    def loading_torch(self) -> None:
        """The window's process is importing torch (once, after the first paint): no check
        can start before it has."""
        self._say("neutral", "Loading torch…",
                  "The first check starts once torch is loaded (a few seconds, once per "
                  "start); choose a Function or change the settings meanwhile.")

    def preparing(self) -> None:
        """The inputs are being drawn (a comparison still running was cancelled for them):
        the comparison starts once they are ready."""
        self._end_computing()
        self._say("neutral", "Preparing inputs…", self._preparing_details(), keep_space=True)
        self.hover_label.setText(self._preparing_details())
        self.banner.offer_cancel()  # a forward stuck inside C can be stopped here too

    def _preparing_details(self) -> str:
        which = f"{self._function}: the" if self._function else "The"
        return f"{which} Jacobian comparison starts as soon as they are ready."

    def is_computing(self) -> bool:
        return self.shown.computing

    def hover_text(self, row: int, col: int) -> str:
        """What hovering over entry (row, col) shows; empty outside the matrix."""
        return self.shown.hover_text(self.heatmaps.outputs, self.heatmaps.inputs, row, col)

    def fit(self) -> None:
        """Show the whole matrix (and keep it fitted while the view is resized)."""
        self.drawing.fit()

    def ideal_height(self) -> int:
        """The pane's height at which the views are as tall as the matrix wants at the
        width they have (:func:`~.geometry.view_height`): what the window gives the pane
        first. Before a matrix arrives, that of a square one (most are, and the pane need
        not move when it comes)."""
        rows, cols = self.heatmaps.shape if all(self.heatmaps.shape) else (1, 1)
        vb = self.heatmaps.view_box
        graphics = self.heatmaps.graphics
        width = vb.width()
        if width < 2 or not graphics.isVisible():
            return self.sizeHint().height()
        # the column's parts from their own heights, not the pane's; the Details drawer's
        # as it asks (the loss plot gives what it can, the heatmaps the rest)
        layout = self.layout()
        margins, spacing = layout.contentsMargins(), max(0, layout.spacing())
        around = margins.top() + margins.bottom() + self.banner.height() + spacing
        if not self.hover_label.isHidden():
            around += spacing + self.hover_label.height()
        if not self.drawer.isHidden():
            around += spacing + self.drawer.sizeHint().height()
        return math.ceil(around + graphics.height() - vb.height()
                         + view_height(rows, cols, width) + self.heatmaps.top_pad)

    def apply_font(self, font: QFont, verdict_scale: float = 1.0) -> None:
        """Use ``font`` (and sizes derived from it) everywhere, heatmap axes included; the
        verdict line ``verdict_scale`` times its usual size (presentation mode)."""
        self._verdict_scale = float(verdict_scale)
        self._styling = True  # the font change restyles nothing: the one restyle is below
        try:
            self.setFont(font)
        finally:
            self._styling = False
        self._restyle()

    # ------------------------------------------------------------------ Qt events

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.PaletteChange):
            self._restyle()
        super().changeEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.heatmaps.graphics.viewport() and event.type() == QEvent.Type.Leave:
            self._set_hover(None)
        elif watched is self.heatmaps.graphics and event.type() == QEvent.Type.Resize:
            self.labels.fit_row_axis()  # its width depends on the width there is
            self.heatmaps.fit_bars(grow_only=self.shown.computing)
        if watched in (self, self.banner) and event.type() == QEvent.Type.Resize:
            fit_hint(self)
        return super().eventFilter(watched, event)

    # ------------------------------------------------------------------ progress

    def _show_progress_now(self, progress: Progress) -> None:
        painted = getattr(progress, "painted", None)
        layout, draws = self._layout_key, self.live.draws
        try:
            self._show_progress(progress)
        finally:
            if painted is not None:
                drew = self.live.draws != draws and bool(progress.columns_done
                                                             or progress.rows_done)
                if self._layout_key != layout:
                    self.gate.settle_layout()
                    self.gate.paint_next_pass()
                if self._layout_key != layout or drew:
                    self.gate.await_paint(painted)
                else:
                    painted.set()

    def _show_progress(self, progress: Progress) -> None:
        if not self.shown.computing:
            self.start()
        fraction = min(1.0, max(0.0, float(progress.fraction)))
        self.banner.set_progress(fraction, words.phase_text(progress.phase))
        if not progress.outputs or not progress.inputs:
            return
        self._set_axes(progress.outputs, progress.inputs)
        analytic = preview.as_array(progress.analytic)
        numerical = preview.as_array(progress.numerical)
        if numerical is None or numerical.shape != self.heatmaps.shape:
            return
        if analytic is not None and analytic.shape != self.heatmaps.shape:
            analytic = None
        self.live.take(progress, fraction, analytic, numerical)

    def _end_computing(self) -> None:
        self.gate.drop()
        self.gate.release()
        self.shown.computing = False
        self.live.stop()
        self.banner.end_progress()
        self.tolerance_row.check_button.setEnabled(True)

    # ------------------------------------------------------------------ report, matrices

    def _clear_data(self) -> None:
        self.shown.forget_matrices()
        self.drawing.step = 0
        self.heatmaps.clear()
        self.marks.clear()
        self._set_hover(None)

    def _forget_matrix(self) -> None:
        """No entries, block names or lines of the last matrix (it is out of date); the
        shape, and so the pane's height, stays until the next one comes."""
        self._clear_data()
        self._fit_tag_room()
        self.heatmaps.forget_blocks()
        self._layout_key = None
        self.labels.fit_row_axis()
        self._update_ticks()

    def _fit_tag_room(self) -> None:
        """Room above the matrix for the diagnosis tags drawn (none without them). Kept
        while the next check of the same matrix computes: its heatmaps do not move at the
        start, only where the next verdict has other tags, or none."""
        pad = self.marks.tag_height()
        if pad == self.heatmaps.top_pad:
            return
        self.heatmaps.top_pad = pad
        self.heatmaps.update_aspect()
        self.drawing.refit()
        self.idealHeightChanged.emit()

    def _say(self, state: str, head: str, details: str = "", worst: str = "", notes: str = "",
             keep_space: bool = False) -> None:
        """The banner's words; its detail lines keep their place while there is a verdict,
        or one is coming."""
        self.banner.set_text(state, head, details, worst, notes, keep_space=keep_space,
                             keep_lines=self.shown.report is not None or self.shown.computing)
        if not keep_space:
            self._lay_out_drawer()  # its height for these lines, in this pass

    # ------------------------------------------------------------------ axes, zoom

    def _set_axes(self, outputs: list[Axis], inputs: list[Axis]) -> None:
        key = layout_key(outputs, inputs)
        if key == self._layout_key:
            return
        self._layout_key = key
        self.heatmaps.set_blocks(outputs, inputs)
        self.labels.fit_row_axis()
        self.drawing.auto_fit = True
        self.idealHeightChanged.emit()
        self.heatmaps.update_aspect()
        self.drawing.refit()
        self._update_ticks()

    def _view_resized(self, *_args) -> None:
        self.idealHeightChanged.emit()
        vb = self.heatmaps.view_box
        pixels = max(64, min(preview.PREVIEW_PIXELS, math.ceil(
            max(vb.width(), vb.height()) * self.devicePixelRatioF())))
        if pixels != self.heatmaps.pixels:
            self.heatmaps.pixels = pixels
            self.pixelsChanged.emit(pixels)
        self.drawing.resized()
        # the bars' labels for the height they have now: the graphics' resize fitted them
        # for the height the bars had before its layout moved them (Details opened and
        # closed left "0" alone on narrower bars)
        self.heatmaps.fit_bars(grow_only=self.shown.computing)
        self.labels.fit_titles()
        # the one output's "name [shape]" is fitted to the views' height, which a theme's
        # or a banner's passes change inside an unchanged graphics view: fitted at a
        # passing height, "output [3x8]" stayed "output" after a round of themes
        self.labels.fit_row_axis()
        self._update_ticks()

    def _update_ticks(self, *_args) -> None:
        """Lay the block labels out for the current zoom and size (see BlockLabels.tick_labels)."""
        if self.labels.update_ticks() and self._hover_cell is None and not self.shown.computing:
            self.hover_label.setText(self._hover_hint())

    def _user_zoomed(self, *_args) -> None:
        self.drawing.zoomed()  # zoomed in: the finer pooling

    def _mouse_clicked(self, event) -> None:
        if event.double() and event.button() == Qt.MouseButton.LeftButton:
            self.fit()
            event.accept()

    # ------------------------------------------------------------------ hover

    def _mouse_moved(self, pos: QPointF) -> None:
        self._set_hover(self.heatmaps.cell_at(pos) if self.shown.numerical is not None else None)

    def _set_hover(self, cell: tuple[int, int] | None) -> None:
        if cell == self._hover_cell:
            return
        self._hover_cell = cell
        self.marks.set_hover(cell)
        if cell is None:
            if not self.shown.computing:
                self.hover_label.setText(self._hover_hint())
            return
        self.hover_label.setText(self.hover_text(*cell))

    def _hover_hint(self) -> str:
        report = self.shown.report
        blocks = "" if self.labels.full else words.legend(self.heatmaps.outputs,
                                                          self.heatmaps.inputs)
        return words.hover_hint(self.shown.numerical is not None, self.marks.mode,
                                report is not None and report.worst is not None, blocks)

    # ------------------------------------------------------------------ fonts, colours

    @contextmanager
    def restyles_held(self) -> Iterator[None]:
        """Restyles asked for inside (a theme's new palette, then the zoom's font: each
        restyled the whole pane, twice before the first paint) done once, at the end, with
        the palette and font the pane has then."""
        if self._restyle_asked is not None:  # held already: the outer hold restyles
            yield
            return
        self._restyle_asked = False
        try:
            yield
        finally:
            asked, self._restyle_asked = self._restyle_asked, None
            if asked:
                self._restyle()

    def _restyle(self) -> None:
        if self._styling:
            return
        if self._restyle_asked is not None:
            self._restyle_asked = True
            return
        self._styling = True
        try:
            self._restyle_now()
        finally:
            self._styling = False

    def _restyle_now(self) -> None:
        base = QFont(self.font())
        self.banner.restyle(base, self._verdict_scale)
        self.tolerance_row.restyle(base)
        self.hover_label.setFont(scaled(base, 1.1))
        self.labels.restyle(base, self.palette())
        self.heatmaps.restyle(base, self.palette(), self.labels.title_height)
        self.labels.fit_row_axis()
        self.labels.fit_titles()
        self._update_ticks()
        report = self.shown.report
        self.marks.restyle(report is not None and not report.passed)
        self._fit_tag_room()  # the tags' font changed

