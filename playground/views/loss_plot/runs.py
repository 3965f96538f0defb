"""The loss plot's runs, without Qt widgets: each run's points in growing NumPy buffers
(amortized doubling) and their envelope for long runs, the hues of earlier runs, the stepped
view range that keeps every run in view, where the legend goes, and the rows of a CSV
export."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg

__all__ = ["OVERLAY_HUES", "Envelope", "Run", "csv_rows", "legend_corner", "overlay_hue",
           "stepped_range"]

_INITIAL_CAPACITY = 1024
#: buckets an :class:`Envelope` holds at most (twice this, then neighbours merge)
ENVELOPE_BUCKETS = 2048
#: points a curve is fed as they are; a longer run shown whole is fed its envelope
DIRECT_POINTS = 4 * ENVELOPE_BUCKETS
#: points up to which a curve is one path (smooth joins); beyond, separate line segments
PATH_POINTS = 512

# Distinct hues for the overlays of earlier runs (Tableau 10 minus the current blue).
OVERLAY_HUES = (
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#d62728",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
)


class Envelope:
    """A run's points pooled into buckets of ``width`` consecutive points, kept in step as the
    points arrive: per bucket its first and last step, first and last loss, least and largest
    loss. Appending costs the batch's length; past ``2 * buckets`` buckets, neighbours merge
    (each then covers twice the points). So a curve of any length is drawn from at most
    ``4 * buckets`` points (min and max of each bucket, pyqtgraph's peak downsampling) without
    reading every point again at each redraw."""

    def __init__(self, buckets: int = ENVELOPE_BUCKETS):
        self.limit = 2 * buckets
        self.x0, self.x1, self.y0, self.y1, self.lo, self.hi = np.empty((6, self.limit))
        self.clear()

    def clear(self) -> None:
        self.width = 1  # points per bucket
        self.count = 0  # buckets in use
        self.fill = 0  # points in the last one

    def extend(self, x: np.ndarray, y: np.ndarray) -> None:
        """Add points (finite, steps increasing)."""
        k, i = x.size, 0
        if self.count and self.fill < self.width and k:  # the last bucket first
            m = min(self.width - self.fill, k)
            b = self.count - 1
            self.x1[b], self.y1[b] = x[m - 1], y[m - 1]
            self.lo[b] = min(self.lo[b], y[:m].min())
            self.hi[b] = max(self.hi[b], y[:m].max())
            self.fill += m
            i = m
        while i < k:
            if self.count == self.limit:
                self._halve()
            w, c = self.width, self.count
            take = min(k - i, (self.limit - c) * w)
            full, part = divmod(take, w)
            xs, ys = x[i:i + take], y[i:i + take]
            if full:
                grid = ys[:full * w].reshape(full, w)
                self.lo[c:c + full], self.hi[c:c + full] = grid.min(1), grid.max(1)
                self.y0[c:c + full], self.y1[c:c + full] = grid[:, 0], grid[:, -1]
                self.x0[c:c + full] = xs[0:full * w:w]
                self.x1[c:c + full] = xs[w - 1:full * w:w]
            if part:
                b, tail = c + full, ys[full * w:]
                self.lo[b], self.hi[b] = tail.min(), tail.max()
                self.y0[b], self.y1[b] = tail[0], tail[-1]
                self.x0[b], self.x1[b] = xs[full * w], xs[-1]
            self.count = c + full + (1 if part else 0)
            self.fill = part or w
            i += take

    def _halve(self) -> None:
        """Merge neighbouring buckets (all full: this runs only when more points come)."""
        n = self.count // 2
        a, b = slice(0, 2 * n, 2), slice(1, 2 * n, 2)
        self.x0[:n], self.y0[:n] = self.x0[a], self.y0[a]
        self.x1[:n], self.y1[:n] = self.x1[b], self.y1[b]
        self.lo[:n] = np.minimum(self.lo[a], self.lo[b])
        self.hi[:n] = np.maximum(self.hi[a], self.hi[b])
        self.count, self.width, self.fill = n, 2 * self.width, 2 * self.width

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Two points per bucket: at its first step the extreme it starts nearer to, at its
        last the other (a falling stretch max then min, a rising one min then max)."""
        c = self.count
        falling = self.y0[:c] > self.y1[:c]
        first = np.where(falling, self.hi[:c], self.lo[:c])
        second = np.where(falling, self.lo[:c], self.hi[:c])
        return (np.column_stack([self.x0[:c], self.x1[:c]]).ravel(),
                np.column_stack([first, second]).ravel())


@dataclass
class Run:
    """One run: its label, its point buffers and its curve."""

    label: str | None
    curve: pg.PlotDataItem
    steps: np.ndarray = field(default_factory=lambda: np.empty(_INITIAL_CAPACITY))
    losses: np.ndarray = field(default_factory=lambda: np.empty(_INITIAL_CAPACITY))
    n: int = 0
    nonfinite: int = 0
    hue: str = ""
    hi: float = -math.inf  # largest loss so far
    lo_pos: float = math.inf  # smallest positive loss so far (for the log axis)
    envelope: Envelope = field(default_factory=Envelope)

    def extend(self, steps: np.ndarray, losses: np.ndarray) -> None:
        """Add points (float64 arrays of one length); those whose step or loss is NaN/Inf
        are dropped and counted (``nonfinite``)."""
        ok = np.isfinite(losses) & np.isfinite(steps)
        dropped = int(steps.size - np.count_nonzero(ok))
        if dropped:
            steps = steps[ok]
            losses = losses[ok]
            self.nonfinite += dropped
        k = steps.size
        if k:
            self.reserve(k)
            self.steps[self.n : self.n + k] = steps
            self.losses[self.n : self.n + k] = losses
            self.n += k
            self.note_range(losses)
            self.envelope.extend(steps, losses)

    def clear(self) -> None:
        """No points (the buffers are kept)."""
        self.n = 0
        self.nonfinite = 0
        self.envelope.clear()
        self.hi, self.lo_pos = -math.inf, math.inf

    def note_range(self, losses: np.ndarray) -> None:
        if losses.size:
            self.hi = max(self.hi, float(losses.max()))
            positive = losses[losses > 0]
            if positive.size:
                self.lo_pos = min(self.lo_pos, float(positive.min()))

    def filled(self) -> tuple[np.ndarray, np.ndarray]:
        return self.steps[: self.n], self.losses[: self.n]

    def feed(self, whole: bool) -> tuple[np.ndarray, np.ndarray]:
        """Hand the points to the curve: views of the buffers (no copies), or the envelope
        where the run is long and ``whole`` (the view shows all of it); past PATH_POINTS as
        separate line segments (see :mod:`playground.views.loss_plot.plot`). Returns the
        points handed."""
        mode = "on" if self.n > PATH_POINTS else "auto"
        if self.curve.curve.opts["segmentedLineMode"] != mode:
            self.curve.curve.setSegmentedLineMode(mode)
        points = self.envelope.curve() if self.n > DIRECT_POINTS and whole else self.filled()
        self.curve.setData(*points)
        return points

    def reserve(self, extra: int) -> None:
        need = self.n + extra
        capacity = len(self.steps)
        if need <= capacity:
            return
        while capacity < need:
            capacity *= 2
        for name in ("steps", "losses"):
            old = getattr(self, name)
            new = np.empty(capacity, dtype=np.float64)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def shrink(self) -> None:
        """Drop the slack of the buffers (the run will not grow any more)."""
        self.steps = self.steps[: self.n].copy()
        self.losses = self.losses[: self.n].copy()

    def status_text(self) -> str:
        """How many points it has, and how many were dropped ('' before the first)."""
        text = f"{self.n:,} point{'' if self.n == 1 else 's'}" if self.n else ""
        if self.nonfinite:
            text += f", {self.nonfinite:,} NaN/Inf dropped"
        return text

    def legend_text(self, wrap: bool = False) -> str:
        """Its label and how many points were dropped (``wrap``: those on a line of their
        own, where one line is wider than the plot)."""
        text = self.label if self.label else "previous run"
        if self.nonfinite:
            text += f"{'<br>' if wrap else ' '}({self.nonfinite:,} NaN/Inf dropped)"
        return text


def overlay_hue(overlays: list[Run]) -> str:
    """The hue for a new overlay: the first no overlay has, else the next in turn."""
    used = {r.hue for r in overlays}
    free = [h for h in OVERLAY_HUES if h not in used]
    return free[0] if free else OVERLAY_HUES[len(overlays) % len(OVERLAY_HUES)]


def stepped_range(runs: Iterable[Run], view: tuple[tuple[float, float], tuple[float, float]],
                  log_y: bool, force: bool = False,
                  ) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """The new (x, y) ranges (None: keep) that keep every run in ``view`` ((x0, x1), (y0, y1)),
    changing only in steps: x grows by half again, y starts at 0 (losses are never negative)
    and doubles; log y (in decades) snaps to whole decades. ``force``: fit the runs now."""
    runs = [r for r in runs if r.n]
    if not runs:
        return None, None
    (vx0, vx1), (vy0, vy1) = view
    x_lo = min(float(r.steps[0]) for r in runs)
    x_hi = max(float(r.steps[r.n - 1]) for r in runs)
    x = None
    if force or x_hi > vx1 or x_lo < vx0:
        x = (x_lo, x_lo + max(1.0, (x_hi - x_lo) * 1.5))
    hi = max(r.hi for r in runs)
    if not math.isfinite(hi):
        return x, None
    if log_y:
        lo = min(r.lo_pos for r in runs)
        if not (math.isfinite(lo) and hi > 0):
            return x, None
        lo_d, hi_d = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        if force or lo_d < vy0 - 1e-9 or hi_d > vy1 + 1e-9:
            return x, (lo_d, max(hi_d, lo_d + 1))
    elif force or hi > vy1 or vy0 > 0:
        top = hi if force else max(hi, 2 * vy1)
        return x, (0.0, top if top > 0 else 1.0)
    return x, None


def legend_corner(last_loss: float, view_y: tuple[float, float], log_y: bool) -> str:
    """Where the legend goes: "top" (right), unless the newest loss is in the upper half of
    the view (a loss that barely falls, or grows): then "bottom", so that the legend never
    hides the curve's end (the view reaches past the data on the right)."""
    y0, y1 = view_y
    y = last_loss
    if log_y:
        y = math.log10(y) if y > 0 else y0
    return "bottom" if y1 > y0 and (y - y0) / (y1 - y0) > 0.5 else "top"


#: how near (a fraction of the view) the legend's box may come to a point it does not cover
MARGIN = 0.04
#: where the legend may go: (x from, x to, y from, y to) of the view, as fractions, for a
#: legend ``w`` by ``h`` (fractions too)
_CORNERS = {"top": lambda w, h: (1 - w, 1, 1 - h, 1),
            "bottom": lambda w, h: (1 - w, 1, 0, h),
            "top left": lambda w, h: (0, w, 1 - h, 1),
            "bottom left": lambda w, h: (0, w, 0, h)}


def quiet_corner(steps: np.ndarray, losses: np.ndarray, view: tuple, size: tuple[float, float],
                 log_y: bool, preferred: str) -> str:
    """The corner of the view (``((x0, x1), (y0, y1))``) where a legend of ``size`` (its
    width and height as fractions of the view's) covers least of the curve through
    ``steps, losses`` (sampled along x, so a steep stretch between two points counts);
    ``preferred`` (then the others, right before left) where several cover as little.
    The curve's end counts as much as all the rest (where the run is going is what one
    looks at: a two-run legend at the top right, as tall as most of a short plot, sat on
    a falling curve's end, F9 at 150 %), and a box that comes within :data:`MARGIN` of a
    point covers it (its frame drawn over the line hid it as well)."""
    (x0, x1), (y0, y1) = view
    # the points in view and one either side (steps never decrease): the legend is placed at
    # each redraw, and a zoomed-in view of a long run holds few of its points
    first = max(0, int(np.searchsorted(steps, x0, side="left")) - 1)
    last = int(np.searchsorted(steps, x1, side="right")) + 1
    steps, losses = steps[first:last], losses[first:last]
    finite = np.isfinite(losses) & (losses > 0 if log_y else True)
    xs, ys = steps[finite], losses[finite]
    if xs.size == 0 or x1 <= x0 or y1 <= y0:
        return preferred
    if log_y:
        ys = np.log10(ys)
    if xs.size > 1:
        grid = np.linspace(max(x0, xs[0]), min(x1, xs[-1]), 600)
        xs, ys = grid, np.interp(grid, xs, ys)
    fx, fy = (xs - x0) / (x1 - x0), (ys - y0) / (y1 - y0)
    w, h = size

    def covered(corner: str) -> int:
        a, b, c, d = _CORNERS[corner](w, h)
        a, b, c, d = a - MARGIN, b + MARGIN, c - MARGIN, d + MARGIN
        inside = (fx >= a) & (fx <= b) & (fy >= c) & (fy <= d)
        return int(np.count_nonzero(inside)) + (fx.size if inside[-1] else 0)

    order = [preferred, *(c for c in _CORNERS if c != preferred)]
    return min(order, key=covered)


def csv_rows(runs: Iterable[Run]) -> Iterator[tuple]:
    """``run, step, loss`` rows of the runs' points (whole steps written as integers)."""
    for run in runs:
        if run.n == 0:
            continue
        label = run.label if run.label else "run"
        x, y = run.filled()
        yield from ((label, int(s) if s.is_integer() else s, v)
                    for s, v in zip(x.tolist(), y.tolist()))
