"""The loss as a function of the trained inputs, flattened: its value, the gradient the user's
backward gives, the true gradient (central differences), the run's path again, and the loss
over a grid on a plane (coarse first)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch

from customgrad.errors import Cancelled
from customgrad.function import batching
from customgrad.function.dtypes import differentiable, real_view
from customgrad.training.descent import Descent

#: at most this many iterates of the path are kept (evenly spaced, the last always)
PATH_POINTS = 1000
#: the coarse grid comes first: every ``COARSE``-th point of the full one
COARSE = 4
#: a partial grid is sent at most this often (seconds)
PROGRESS_SECONDS = 0.2
#: the grid points the batching probe compares with single calls
PROBE_POINTS = 3


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
        #: whether forward and the loss take a stack of points (None: not probed yet)
        self.batched: bool | None = None if not descent._dirty else False
        self._chunk = 1

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

    def values(self, points: torch.Tensor) -> list[float]:
        """The loss at each row of ``points``: one call of forward per point, or per batch
        of points where a probe on the first of them found forward batchable
        (:mod:`customgrad.function.batching`; a probe that fails costs one call)."""
        known: dict[int, float] = {}
        if self.batched is None and len(points) >= 2:
            picks = batching.spread(len(points), PROBE_POINTS)
            singles = [self._single(points[k]) for k in picks]
            known = {k: float(single[-1]) for k, single in zip(picks, singles)}
            rtol = max(batching.tolerance(leaf.dtype) for leaf in self.leaves)
            self.batched = batching.probe(self._stacked, points[picks], singles, rtol)
            self._chunk = batching.chunk_size(len(points[0]) + len(singles[0]))
        rest = [k for k in range(len(points)) if k not in known]
        while self.batched and rest:
            if self.should_stop():
                raise Cancelled("the landscape was cancelled.")
            chunk, rest = rest[:self._chunk], rest[self._chunk:]
            try:
                losses = self._stacked(points[chunk])[:, -1].tolist()
            except Cancelled:
                raise
            except Exception:  # a later batch that raises: one at a time again
                self.batched, rest = False, chunk + rest
                break
            known.update(zip(chunk, losses))
        for k in rest:
            known[k] = self.value(points[k])
        return [known[k] for k in range(len(points))]

    def _single(self, flat: torch.Tensor) -> torch.Tensor:
        """forward's differentiable outputs at ``flat`` and the loss, as one flat vector."""
        if self.should_stop():
            raise Cancelled("the landscape was cancelled.")
        self.set(flat)
        outs, loss = self.descent.evaluate()
        parts = [real_view(out.detach()).reshape(-1) for out in outs
                 if out.requires_grad and differentiable(out)]
        return torch.cat([part.to(torch.float64) for part in parts]
                         + [loss.detach().reshape(1).to(torch.float64)])

    def _stacked(self, points: torch.Tensor) -> torch.Tensor:
        """:meth:`_single` for each row of ``points`` from one call of forward on the trained
        inputs stacked along a new first dimension (raises where forward or the loss
        cannot take them)."""
        descent, count = self.descent, len(points)
        stacks, start = {}, 0
        for leaf in self.leaves:
            size = leaf.numel()
            stacks[id(leaf)] = (points[:, start:start + size].reshape(count, *leaf.shape)
                                .to(leaf.device, leaf.dtype).requires_grad_())
            start += size
        args = [stacks.get(id(arg), arg) for arg in descent.args]
        raw = descent.function.apply(*args)
        outs = [out for out in (raw if isinstance(raw, (tuple, list)) else (raw,))
                if out.requires_grad and differentiable(out)]
        if len(outs) != len(descent.targets):
            raise ValueError("not one output per target")
        total = torch.zeros(count, dtype=torch.float64)
        parts = []
        with torch.no_grad():
            for out, target in zip(outs, descent.targets):
                if tuple(out.shape) != (count, *target.shape):
                    raise ValueError("an output not stacked")
                diff = (real_view(out) - real_view(target)).reshape(count, -1)
                term = _per_point(descent.loss_name, diff)
                total += term.to(torch.float64)
                parts.append(real_view(out).reshape(count, -1).to(torch.float64))
        return torch.cat([*parts, total.reshape(count, 1)], dim=1)

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


def _per_point(loss: str, diff: torch.Tensor) -> torch.Tensor:
    """The loss of each row of ``diff`` (output minus target, flattened): the criterion
    :class:`~customgrad.training.descent.Descent` uses, one row at a time."""
    if loss == "mse":
        return (diff * diff).mean(dim=1)
    if loss == "l1":
        return diff.abs().mean(dim=1)
    if loss == "sse":
        return (diff * diff).sum(dim=1)
    raise ValueError(f"loss {loss!r}")


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
        cells = [(i, j) for i in coarse for j in coarse]
        losses = surface.values(_points(plane, alphas, betas, cells))
        for (i, j), loss in zip(cells, losses):
            values[i, j] = _safe(loss)
        near = [_nearest(coarse, k) for k in range(size)]
        rough = values[np.ix_(near, near)]
        yield rough, False
        done = np.zeros_like(values, dtype=bool)
        done[np.ix_(coarse, coarse)] = True
        values = np.where(done, values, rough)
    else:
        done = np.zeros_like(values, dtype=bool)
    last = time.monotonic()
    for i in range(len(betas)):
        row = [j for j in range(size) if not done[i, j]]
        if row:
            losses = surface.values(_points(plane, alphas, betas, [(i, j) for j in row]))
            values[i, row] = [_safe(loss) for loss in losses]
        if time.monotonic() - last > PROGRESS_SECONDS and i + 1 < len(betas):
            last = time.monotonic()
            yield values.copy(), False
    yield values, True


def _points(plane, alphas: np.ndarray, betas: np.ndarray,
            cells: list[tuple[int, int]]) -> torch.Tensor:
    """``plane.at(alphas[j], betas[i])`` for each cell ``(i, j)``, one row each (the same
    arithmetic, in one go)."""
    a = torch.tensor([alphas[j] for _i, j in cells], dtype=torch.float64).unsqueeze(1)
    b = torch.tensor([betas[i] for i, _j in cells], dtype=torch.float64).unsqueeze(1)
    return plane.origin + a * plane.d1 + b * plane.d2


def _nearest(points: list[int], k: int) -> int:
    return min(points, key=lambda c: abs(c - k))


def _safe(value: float) -> float:
    return value if math.isfinite(value) else math.nan


__all__ = ["COARSE", "PATH_POINTS", "LossSurface", "axes", "flatten", "grid", "replay"]
