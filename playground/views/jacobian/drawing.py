"""Drawing the Jacobian pane's data (:class:`~.contents.Shown`) on its heatmaps: a running
comparison's progress as it arrives (:class:`LiveDrawing`), and a finished report
(:class:`ReportDrawing`) with the part of it in view.

Progress can arrive many times a second with matrices of 8192 x 8192 entries, so nothing
here copies or scans whole matrices while computing: colour levels fold in only the
rows/columns finished since the last call (:mod:`.progress`), and big matrices are drawn from
a small strided preview (their difference too), made by the worker where it can, here at most
a few times a second where it cannot. A report's difference, mask, peaks and pooled
overviews were computed by the worker (``Report.prepare_drawing``); big matrices are drawn
pooled to the views' pixels, finer when the user zooms in, and never handed to pyqtgraph
whole (it would average them down at every repaint, on the GUI thread).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QObject, QTimer

from playground.support import preview
from playground.views.jacobian.contents import Shown
from playground.views.jacobian.heatmaps import Heatmaps
from playground.views.jacobian.marks import Marks
from playground.views.jacobian.progress import Live, scan

if TYPE_CHECKING:
    from customgrad.checking.jacobian import Progress, Report

__all__ = ["LiveDrawing", "ReportDrawing"]


class LiveDrawing(QObject):
    """Draws a running comparison's progress (the matrices in ``shown``) into ``heatmaps``;
    ``atol()`` is the tolerance the difference's colour scale never goes below."""

    def __init__(self, heatmaps: Heatmaps, shown: Shown, atol: Callable[[], float],
                 parent: QObject | None = None):
        super().__init__(parent)
        self._heatmaps = heatmaps
        self._shown = shown
        self._atol = atol
        self.draws = 0  # how many times previews were drawn
        self._last_refresh = -math.inf
        self.refresh_timer = QTimer(self)
        self.refresh_timer.setSingleShot(True)
        self.refresh_timer.timeout.connect(self.refresh)

    def stop(self) -> None:
        """The comparison ended: no redraw is due."""
        self.refresh_timer.stop()
        self._last_refresh = -math.inf

    def take(self, progress: Progress, fraction: float, analytic: np.ndarray | None,
             numerical: np.ndarray) -> None:
        """Fold what ``progress`` finished into the colour levels, keep its matrices (the
        analytic one once it holds something computed) in ``shown``, and draw them."""
        shown, shape = self._shown, self._heatmaps.shape
        key = (preview.address(progress.numerical), preview.address(progress.analytic), shape)
        if shown.live is None or shown.live.key != key:
            shown.live = Live(key)
        scan(shown.live, shape, analytic, numerical, progress, fraction)
        if progress.phase == "numerical" and shown.live.rows == 0:
            analytic = None  # still all NaN: nothing to draw
        shown.analytic, shown.numerical = analytic, numerical
        self._draw(progress)

    def _draw(self, progress: Progress) -> None:
        """Draw the previews the worker made; else previews made here, a few times a second
        at most for big matrices (a timer draws the last state)."""
        if isinstance(progress, preview.PreparedProgress):  # previews made by the worker
            if progress.numerical_preview is not None:
                self._last_refresh = time.monotonic()
                if self._shown.live.rows == 0:
                    self._draw_previews(None, progress.numerical_preview, progress.step)
                else:
                    self._draw_previews(progress.analytic_preview, progress.numerical_preview,
                                        progress.step, progress.difference_preview,
                                        progress.difference_peak)
            return
        big = self._shown.numerical.size > preview.REFRESH_ENTRIES
        wait = preview.REFRESH_SECONDS if big else 0.0
        since = time.monotonic() - self._last_refresh
        if since >= wait:
            self.refresh()
        elif not self.refresh_timer.isActive():
            self.refresh_timer.start(max(1, round((wait - since) * 1000)))

    def refresh(self) -> None:
        """Draw previews of the matrices as they are now."""
        self.refresh_timer.stop()
        shown = self._shown
        live = shown.live
        if not shown.computing or live is None:
            return
        self._last_refresh = time.monotonic()
        step = preview.preview_step(self._heatmaps.shape)
        self._draw_previews(*preview.previews(shown.analytic, shown.numerical, step, live.rows,
                                              live.cols), step)

    def _draw_previews(self, analytic: np.ndarray | None, numerical: np.ndarray, step: int,
                       difference: np.ndarray | None = None, difference_peak: float = 0.0,
                       ) -> None:
        """Draw previews; ``difference`` (and its peak) where the worker made it already."""
        self.draws += 1
        live = self._shown.live
        if difference is None and analytic is not None and numerical is not None:
            difference = analytic - numerical  # of the preview only: small
            difference_peak = preview.absmax(difference)
        if difference is not None:
            live.diff_max = max(live.diff_max, difference_peak)
        heatmaps = self._heatmaps
        heatmaps.show(analytic, numerical, difference, step)
        heatmaps.set_levels(heatmaps.colorbar, live.value_max, grow_only=True, computing=True)
        heatmaps.set_levels(heatmaps.difference_colorbar, max(live.diff_max, self._atol()),
                            grow_only=True, computing=True)


class ReportDrawing:
    """Draws ``shown``'s report into ``heatmaps`` and ``marks``, pooled to the part in view:
    the whole matrix (kept fitted while the views are resized) until the user zooms or
    pans."""

    def __init__(self, heatmaps: Heatmaps, marks: Marks, shown: Shown):
        self._heatmaps = heatmaps
        self._marks = marks
        self._shown = shown
        self.step = 0  # the pooling the report's heatmaps are drawn with (0: none)
        self.auto_fit = True  # keep the whole matrix in view until the user zooms or pans

    def show(self, report: Report) -> bool:
        """Draw ``report``: its matrices, colour levels, mismatches, worst entry and
        diagnosed blocks. False (and nothing drawn) where it kept no matrices."""
        heatmaps, shown = self._heatmaps, self._shown
        analytic, numerical = preview.as_array(report.analytic), preview.as_array(report.numerical)
        if analytic is None or numerical is None or analytic.shape != heatmaps.shape:
            return False
        # peaks, difference, mask and overview are cached on the report: the worker that
        # made it computed them already (Report.prepare_drawing), so this is cheap
        mask = preview.as_array(report.mismatch_mask()) if report.mismatches else None
        shown.live = None
        shown.analytic, shown.numerical, shown.mask = analytic, numerical, mask
        self.step = 0
        self.pool(self.fit_step() if self.auto_fit else preview.preview_step(heatmaps.shape))
        heatmaps.set_levels(heatmaps.colorbar, _value_peak(report))
        heatmaps.set_levels(heatmaps.difference_colorbar,
                            max(report.difference_peak(), report.atol))
        self._marks.mark_worst(report)
        self._marks.mark_diagnoses(report)
        return True

    def pool(self, step: int) -> None:
        """Draw the report's matrices and mismatches pooled ``step`` x ``step`` (see
        Heatmaps.show_report)."""
        shown = self._shown
        report = shown.report
        if report is None or shown.analytic is None or step == self.step:
            return
        self.step = step
        pooled = self._heatmaps.show_report(report, shown.analytic, shown.numerical, step)
        if shown.mask is not None:
            self._marks.clear_mismatches()
            self._marks.mark_mismatches(report, shown.mask, pooled, step)

    def fit_step(self) -> int:
        """The pooling step that fits the matrix to the views' pixels, where the worker has
        pooled it so; else the finer one it always pools (see preview.drawing_steps)."""
        steps = preview.drawing_steps(self._heatmaps.shape, self._heatmaps.pixels)
        fine, fit = steps[0], steps[-1]
        report = self._shown.report
        return fit if report is not None and report.has_overview(fit) else fine

    def fit(self) -> None:
        """Show the whole matrix (and keep it fitted while the views are resized)."""
        self.auto_fit = True
        self.pool(self.fit_step())
        self._heatmaps.update_aspect()
        self.refit()

    def refit(self) -> None:
        if self.auto_fit:
            self._heatmaps.refit()

    def resized(self) -> None:
        """The views changed size: a fitted matrix stays fitted (and pooled to fit)."""
        if self.auto_fit:
            if self.step > self.fit_step():  # grown past what the pooling fits
                self.pool(self.fit_step())
            self._heatmaps.update_aspect()
            self.refit()

    def zoomed(self) -> None:
        """The user zoomed or panned: the finer pooling, and no more fitting."""
        self.auto_fit = False
        self.pool(preview.preview_step(self._heatmaps.shape))


def _value_peak(report: Report) -> float:
    """The analytic and numerical colour scale's peak: the report's, and never below the
    ringed entry's values (it is never off the scale)."""
    value_max = report.value_peak()
    w = report.worst
    if w is not None:
        value_max = max([value_max, *(abs(v) for v in (w.analytic, w.numerical)
                                      if math.isfinite(v))])
    return value_max
