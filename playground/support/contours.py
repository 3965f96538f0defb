"""The landscape's colours and contour lines worked out off the GUI thread (tracing ten
contours of a 41x41 grid takes pyqtgraph's ``isocurve`` about 35 ms: a frame and more if it
ran where the window paints). Plain numpy: the tracing function is passed in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: contour lines drawn over the grid
CONTOURS = 10
#: the loss shown as log10 where its largest value is this many times its smallest
LOG_SPAN = 1e3


@dataclass(frozen=True)
class Contours:
    """What the picture colours (``values``: the loss or its log, ``[beta, alpha]``), its
    colour range, and the contour lines in plane coordinates (NaN between lines)."""

    values: np.ndarray
    log: bool
    low: float
    high: float
    xs: np.ndarray
    ys: np.ndarray


def shown_values(losses: np.ndarray) -> tuple[np.ndarray, bool]:
    """The grid as coloured: the loss, or log10 of it where it is positive and spans more
    than :data:`LOG_SPAN`; and whether it is the log."""
    finite = losses[np.isfinite(losses)]
    if finite.size and finite.min() > 0 and finite.max() > LOG_SPAN * finite.min():
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log10(losses), True
    return losses, False


def levels(values: np.ndarray, count: int = CONTOURS) -> tuple[float, float, list[float]]:
    """The colour range (the lowest value to the 95th percentile: a far corner's huge loss
    would wash the valley out) and ``count`` contour levels evenly inside it."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return 0.0, 1.0, []
    low, high = float(finite.min()), float(np.percentile(finite, 95))
    if not high > low:
        high = low + max(abs(low), 1.0) * 1e-6
    return low, high, [float(v) for v in np.linspace(low, high, count + 2)[1:-1]]


def prepare(losses: np.ndarray, alphas: np.ndarray, betas: np.ndarray,
            trace: Callable) -> Contours:
    """The colours and contour lines of a grid; ``trace(data, level, connected=True)`` is
    pyqtgraph's ``isocurve`` (lines in index units, pixel centres at +0.5, along ``data``'s
    first axis first)."""
    values, log = shown_values(losses)
    low, high, steps = levels(values)
    filled = np.where(np.isfinite(values), values, high).T  # [alpha, beta]
    da = alphas[1] - alphas[0] if len(alphas) > 1 else 1.0
    db = betas[1] - betas[0] if len(betas) > 1 else 1.0
    xs, ys = [], []
    for level in steps:
        for line in trace(filled, level, connected=True):
            points = np.asarray(line, dtype=np.float64)
            xs += [alphas[0] + (points[:, 0] - 0.5) * da, [np.nan]]
            ys += [betas[0] + (points[:, 1] - 0.5) * db, [np.nan]]
    join = (lambda parts: np.concatenate(parts)) if xs else (lambda _parts: np.empty(0))
    return Contours(values, log, low, high, join(xs), join(ys))


__all__ = ["CONTOURS", "Contours", "levels", "prepare", "shown_values"]
