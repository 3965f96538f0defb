"""What the Jacobian pane shows, without Qt: the matrices (a running comparison's as they
fill in, or a finished report's), the report and its mismatch mask, and how far a running
comparison has got; and the text for an entry of it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from playground.support.discard import held
from playground.views.jacobian import words
from playground.views.jacobian.progress import Live

if TYPE_CHECKING:
    from customgrad.checking.jacobian import Axis, Report

__all__ = ["Shown"]


class Shown:
    """The pane's data. ``analytic`` and ``numerical`` are NumPy views of the engine's
    matrices (never copies); ``live`` is what progress has scanned of them while
    ``computing``."""

    # a 2048 x 2048 report is about 100 MB: replaced ones are freed off the GUI thread
    report = held("report")
    analytic = held("analytic")
    numerical = held("numerical")
    mask = held("mask")

    def __init__(self) -> None:
        self.report: Report | None = None
        self.analytic: np.ndarray | None = None
        self.numerical: np.ndarray | None = None
        self.mask: np.ndarray | None = None
        self.computing = False
        self.live: Live | None = None

    def forget_matrices(self) -> None:
        self.analytic = self.numerical = self.mask = None
        self.live = None

    def hover_text(self, outputs: list[Axis], inputs: list[Axis], row: int, col: int) -> str:
        """What hovering over entry (row, col) of the matrix laid out by ``outputs`` and
        ``inputs`` shows (see :func:`words.hover_text`); empty outside the matrix."""
        rows, cols = sum(a.size for a in outputs), sum(a.size for a in inputs)
        if not (0 <= row < rows and 0 <= col < cols):
            return ""
        a = None if self.analytic is None else float(self.analytic[row, col])
        n = None if self.numerical is None else float(self.numerical[row, col])
        live = self.live if self.computing else None
        outside = None
        if self.report is not None:
            outside = self.mask is not None and bool(self.mask[row, col])
        text = words.hover_text(outputs, inputs, row, col, a, n, computing=self.computing,
                                rows_done=None if live is None else live.rows,
                                cols_done=None if live is None else live.cols, outside=outside)
        inp = next(i for i in reversed(inputs) if i.offset <= col)
        if inp.parts == 2 and not self.computing:
            re = col - (col - inp.offset) % 2  # the element's real-part column
            text += words.complex_entry(*(None if m is None else complex(m[row, re], m[row, re + 1])
                                          for m in (self.analytic, self.numerical)))
        return text
