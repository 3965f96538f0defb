"""Heatmap previews made off the GUI thread: while a comparison runs, the worker turns the
engine's progress into small images (every step-th entry, entries not computed yet blank) so
that the GUI thread only hands finished pictures to pyqtgraph.

Qt-free: the workers call :class:`ProgressPreparer` with the heatmaps' size on screen (the
view says it, the session keeps it, each check job carries it); the Jacobian view draws
:class:`PreparedProgress`.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from customgrad.checking.jacobian.report import Progress

#: While computing, matrices wider or taller than this are previewed through a strided view.
PREVIEW_PIXELS = 768


REFRESH_ENTRIES = 1 << 20  # progress on matrices bigger than this is redrawn at most ...


REFRESH_SECONDS = 0.2  # ... every this many seconds


def is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch (the window paints before
    it has torch; no tensor exists before then)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def as_array(tensor) -> np.ndarray | None:
    """A NumPy view of a CPU tensor (no copy, transposed views included)."""
    if tensor is None:
        return None
    if is_tensor(tensor):
        tensor = tensor.detach()
        if tensor.device.type != "cpu":
            tensor = tensor.cpu()
        return np.asarray(tensor.numpy())
    return np.asarray(tensor)


def address(tensor) -> int:
    if is_tensor(tensor):
        return tensor.data_ptr()
    return 0 if tensor is None else id(tensor)


def absmax(matrix: np.ndarray) -> float:
    """Largest finite |value| (0 when there is none): the engine's scan, on a numpy view."""
    if not matrix.size:
        return 0.0
    import torch

    from customgrad.checking.jacobian.matrices import finite_absmax

    return finite_absmax(torch.from_numpy(matrix))


def _preview(matrix: np.ndarray | None, step: int) -> np.ndarray | None:
    """Every step-th row and column as a small contiguous copy (pyqtgraph reads an image
    several times per render), read in the source's memory order; step 1: the matrix."""
    if matrix is None or step == 1:
        return matrix
    if matrix.strides[0] < matrix.strides[1]:
        return np.ascontiguousarray(matrix.T[::step, ::step]).T
    return np.ascontiguousarray(matrix[::step, ::step])


@dataclass
class PreparedProgress(Progress):
    """Progress whose heatmap previews were made off the GUI thread (:class:`ProgressPreparer`);
    previews None: draw nothing new this time."""

    step: int = 1
    analytic_preview: np.ndarray | None = None
    numerical_preview: np.ndarray | None = None
    difference_preview: np.ndarray | None = None
    difference_peak: float = 0.0  # largest finite |entry| of difference_preview
    #: previews of a matrix big enough that they come a few times a second only
    big_preview: bool = False
    #: the view sets it once it has painted this progress (see JacobianView.show_progress)
    painted: threading.Event | None = None


class ProgressPreparer:
    """Called on the worker thread with the engine's progress: makes the previews the view
    draws (every step-th entry, unfinished ones blank), for big matrices at most every
    ``REFRESH_SECONDS``, so the GUI thread only hands small images to pyqtgraph."""

    def __init__(self, pixels: int = PREVIEW_PIXELS):
        """``pixels``: the heatmaps' size on screen in device pixels (the largest view's):
        previews need no more cells than that, which keeps pyqtgraph from averaging a bigger
        image down on the GUI thread at every refresh."""
        self._last = -math.inf
        self.pixels = pixels

    def __call__(self, progress: Progress) -> PreparedProgress:
        fields = {f.name: getattr(progress, f.name) for f in dataclasses.fields(Progress)}
        prepared = PreparedProgress(**fields)
        numerical = as_array(progress.numerical)
        if numerical is None or progress.columns_done is None:
            return prepared
        now = time.monotonic()
        final = progress.phase == "done"
        if numerical.size > REFRESH_ENTRIES and now - self._last < REFRESH_SECONDS \
                and not final:
            return prepared
        self._last = now
        prepared.big_preview = numerical.size > REFRESH_ENTRIES
        prepared.step = step = preview_step(numerical.shape, self.pixels)
        analytic, numerical = previews(as_array(progress.analytic), numerical, step,
                                        progress.rows_done or 0, progress.columns_done)
        prepared.analytic_preview, prepared.numerical_preview = analytic, numerical
        if analytic is not None and progress.rows_done:
            # here too: a torch reduction on the GUI thread waits for the cores this
            # comparison keeps busy (milliseconds, even for a small preview)
            prepared.difference_preview = difference = analytic - numerical
            prepared.difference_peak = absmax(difference)
        return prepared


def previews(analytic: np.ndarray | None, numerical: np.ndarray, step: int, rows_done: int,
              cols_done: int) -> tuple[np.ndarray | None, np.ndarray]:
    """Previews of partly computed matrices; entries not computed yet are blank (NaN)."""
    return (_unfinished_blank(_preview(analytic, step), step, rows=rows_done),
            _unfinished_blank(_preview(numerical, step), step, cols=cols_done))


def _unfinished_blank(shown: np.ndarray | None, step: int, rows: int | None = None,
                      cols: int | None = None) -> np.ndarray | None:
    """A copy of ``shown`` (a matrix or its preview) with the rows from ``rows`` on or the
    columns from ``cols`` on (in matrix entries) set to NaN; ``shown`` itself if all done."""
    if shown is None:
        return None
    first_row = shown.shape[0] if rows is None else -(-rows // step)
    first_col = shown.shape[1] if cols is None else -(-cols // step)
    if first_row >= shown.shape[0] and first_col >= shown.shape[1]:
        return shown
    shown = shown.copy() if step == 1 else shown  # a preview is a copy already
    shown[first_row:] = np.nan
    shown[:, first_col:] = np.nan
    return shown


def drawing_steps(shape: tuple[int, int], pixels: int | None = None) -> tuple[int, ...]:
    """The poolings a report of this shape is drawn with (the worker computes them, see
    Report.prepare_drawing): one fitting the views' ``pixels`` (default PREVIEW_PIXELS), shown
    while the whole matrix is in view, and a finer one (at most PREVIEW_PIXELS cells a side)
    for zooming in."""
    fine = preview_step(shape)
    fit = max(fine, preview_step(shape, PREVIEW_PIXELS if pixels is None else pixels))
    return tuple(sorted({fine, fit}))


def preview_step(shape: tuple[int, int], pixels: int = PREVIEW_PIXELS) -> int:
    """Big matrices are drawn every step-th (or pooled step x step) entry, so that the longer
    side has at most ``pixels`` cells."""
    return max(1, math.ceil(max(shape) / pixels))
