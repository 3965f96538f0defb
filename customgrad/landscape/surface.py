"""The loss as a function of the trained inputs, flattened: its value, the gradient the user's
backward gives, the true gradient (central differences), the run's path again, and the loss
over a grid on a plane (coarse first)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch

from customgrad.descent import Descent
from customgrad.errors import Cancelled

#: at most this many iterates of the path are kept (evenly spaced, the last always)
PATH_POINTS = 1000
#: the coarse grid comes first: every ``COARSE``-th point of the full one
COARSE = 4
#: a partial grid is sent at most this often (seconds)
PROGRESS_SECONDS = 0.2


def _never() -> bool:
    return False


class LossSurface:
    """The loss of ``descent``'s Function around a point: the trained inputs as one flat
    float64 vector (in the order of ``descent.trained``)."""

    def __init__(self, descent: Descent, should_stop: Callable[[], bool] | None = None):
        self.descent = descent
        self.leaves = list(descent.trained.values())
        self.shapes = [tuple(leaf.shape) for leaf in self.leaves]
        self.should_stop = should_stop or _never
        eps = {torch.float64: 1e-6, torch.float32: 1e-3}
        #: the central differences' step: per dtype, as large as rounding asks
        self.eps = max(eps.get(leaf.dtype, 1e-2) for leaf in self.leaves)

    def point(self) -> torch.Tensor:
        return flatten(self.leaves)

    def set(self, flat: torch.Tensor) -> None:
        start = 0
        with torch.no_grad():
            for leaf in self.leaves:
                count = leaf.numel()
                leaf.copy_(flat[start:start + count].view(leaf.shape))
                start += count

    def value(self, flat: torch.Tensor) -> float:
        if self.should_stop():
            raise Cancelled("the landscape was cancelled.")
        self.set(flat)
        # with its graph: under no_grad the outputs would not count as differentiable
        return float(self.descent.loss().detach())

    def analytic(self, flat: torch.Tensor) -> torch.Tensor:
        """The gradient of the loss as the user's backward gives it."""
        self.set(flat)
        for leaf in self.leaves:
            leaf.grad = None
        self.descent.loss().backward()
        grads = [torch.zeros_like(leaf) if leaf.grad is None else leaf.grad
                 for leaf in self.leaves]
        for leaf in self.leaves:
            leaf.grad = None
        return flatten(grads)

    def true(self, flat: torch.Tensor) -> torch.Tensor:
        """The true gradient: central differences of the loss, one entry at a time."""
        grad = torch.zeros_like(flat)
        for k in range(len(flat)):
            grad[k] = self.slope(flat, _basis(len(flat), k))
        return grad

    def slope(self, flat: torch.Tensor, direction: torch.Tensor) -> float:
        """The true derivative of the loss along the unit ``direction`` (central differences)."""
        h = self.eps
        return (self.value(flat + h * direction) - self.value(flat - h * direction)) / (2 * h)


def _basis(size: int, k: int) -> torch.Tensor:
    e = torch.zeros(size, dtype=torch.float64)
    e[k] = 1.0
    return e


def flatten(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``tensors`` as one flat float64 vector on the CPU."""
    if not tensors:
        return torch.zeros(0, dtype=torch.float64)
    return torch.cat([t.detach().reshape(-1).to("cpu", torch.float64) for t in tensors])


def replay(descent: Descent, steps: int, lrs: Sequence[float] | None = None,
           should_stop: Callable[[], bool] | None = None) -> torch.Tensor:
    """The run's iterates again: ``steps`` steps of ``descent`` from its start (the loop is
    deterministic: the same seed gives the same steps), step ``k`` at ``lrs[k]`` where given.
    At most :data:`PATH_POINTS` rows (flat float64 points), the start and the last always."""
    stop = should_stop or _never
    stride = max(1, math.ceil(steps / PATH_POINTS))
    points = [flatten(list(descent.trained.values()))]
    for k in range(steps):
        if stop():
            raise Cancelled("the landscape was cancelled.")
        if lrs is not None and k < len(lrs):
            descent.lr = lrs[k]
        descent.step()
        if (k + 1) % stride == 0 or k + 1 == steps:
            points.append(flatten(list(descent.trained.values())))
    return torch.stack(points)


def axes(center: tuple[float, float], half: float, size: int,
         aspect: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The grid's coordinates along d1 and d2: ``size`` points each, ``half`` either side of
    ``center`` along the shorter, ``aspect`` (width over height) times that along d1."""
    wide, high = half * max(aspect, 1.0), half * max(1.0 / aspect, 1.0)
    return (np.linspace(center[0] - wide, center[0] + wide, size),
            np.linspace(center[1] - high, center[1] + high, size))


def grid(surface: LossSurface, plane, alphas: np.ndarray,
         betas: np.ndarray) -> Iterator[tuple[np.ndarray, bool]]:
    """The loss at ``plane.at(alpha, beta)``, as an array ``[beta index, alpha index]``:
    first the coarse grid (every :data:`COARSE`-th point, each standing for its
    neighbours), then the full one row by row, yielded at most every
    :data:`PROGRESS_SECONDS` with whether it is complete. Where the loss is not finite, NaN."""
    size = len(alphas)
    values = np.full((len(betas), size), np.nan)
    coarse = sorted(set(range(0, size, COARSE)) | {size - 1})
    if size > 2 * COARSE:
        for i in coarse:
            for j in coarse:
                values[i, j] = _safe(surface.value(plane.at(alphas[j], betas[i])))
        near = [min(coarse, key=lambda c, k=k: abs(c - k)) for k in range(size)]
        rough = values[np.ix_(near, near)]
        yield rough, False
        done = np.zeros_like(values, dtype=bool)
        done[np.ix_(coarse, coarse)] = True
        values = np.where(done, values, rough)
    else:
        done = np.zeros_like(values, dtype=bool)
    last = time.monotonic()
    for i in range(len(betas)):
        for j in range(size):
            if not done[i, j]:
                values[i, j] = _safe(surface.value(plane.at(alphas[j], betas[i])))
        if time.monotonic() - last > PROGRESS_SECONDS and i + 1 < len(betas):
            last = time.monotonic()
            yield values.copy(), False
    yield values, True


def _safe(value: float) -> float:
    return value if math.isfinite(value) else math.nan


__all__ = ["COARSE", "PATH_POINTS", "LossSurface", "axes", "flatten", "grid", "replay"]
