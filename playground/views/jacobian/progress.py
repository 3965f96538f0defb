"""What the progress of one comparison has shown so far (no Qt): how many columns and rows
have been folded into the colour levels, and the largest entries among them.

The engine fills the numerical matrix column by column (first half of the progress), then the
analytic one row by row (second half); only finished parts are read, and each only once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from playground.support import preview

if TYPE_CHECKING:
    from customgrad.checking.jacobian import Progress

__all__ = ["Live", "scan"]


@dataclass
class Live:
    """What progress calls have scanned so far of one comparison's matrices."""

    key: tuple
    cols: int = 0  # numerical columns scanned
    rows: int = 0  # analytic rows scanned
    value_max: float = 0.0  # largest finite |entry| of both matrices so far
    diff_max: float = 0.0  # largest finite |difference| drawn so far


def _done(progress: Progress, fraction: float, shape: tuple[int, int]) -> tuple[int, int]:
    """(columns, rows) finished: as the progress says, else as its fraction implies."""
    rows, cols = shape
    phase = progress.phase
    if progress.columns_done is not None or progress.rows_done is not None:
        cols_done, rows_done = progress.columns_done or 0, progress.rows_done or 0
    elif phase == "numerical":
        cols_done, rows_done = round(2 * fraction * cols), 0
    elif phase == "analytic":
        cols_done, rows_done = cols, round((2 * fraction - 1) * rows)
    else:  # "done", or a phase this view does not know: treat everything as final
        cols_done, rows_done = cols, rows
    return min(cols, max(0, cols_done)), min(rows, max(0, rows_done))


def scan(live: Live, shape: tuple[int, int], analytic: np.ndarray | None,
         numerical: np.ndarray, progress: Progress, fraction: float) -> None:
    """Fold the entries finished since the last call into ``live`` (the colour levels)."""
    cols_done, rows_done = _done(progress, fraction, shape)
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
