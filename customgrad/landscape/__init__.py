"""The loss landscape around the current point: why a wrong backward fails to descend.

The picture every gradient-descent lecture draws, for a custom Function: the loss over a 2-D
plane through the current point (:mod:`~customgrad.landscape.plane`), the path of the run's
iterates projected on it, and two arrows: the negative gradient the user's backward gives
(the step descent actually takes) and the negative true gradient (central differences of the
loss).

:func:`compute` works on a :class:`~customgrad.problems.problem.Problem` in this process (the app
runs it in a worker process: ``playground.workers.child_jobs.landscape``); :func:`landscape` is the
notebook's entry point. No Qt here: a :class:`Landscape` draws itself in a notebook with the
playground's renderer where it can be imported (:mod:`customgrad.checking.notebook`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from customgrad.defaults import LANDSCAPE_SIZE
from customgrad.landscape.plane import (
    MODE_WORDS,
    MODES,
    Plane,
    compare_gradients,
    gradient_words,
    make_plane,
)
from customgrad.landscape.surface import LossSurface, axes, grid, replay

#: grid points per side by default (forward + loss evaluations: its square)
SIZE = LANDSCAPE_SIZE
#: the true gradient by central differences costs two losses per trained entry: above this
#: many entries only its part in the plane is computed, and the gradient plane is not offered
MAX_DIFFERENCES = 20_000
#: the current point may move this share of the view's half width (or lie this far off the
#: plane) from where it was drawn before the landscape is drawn again around it
MOVE_FRACTION = 0.3
#: the view's half width against the path's and the arrows' reach from the current point
MARGIN = 1.1


@dataclass(frozen=True)
class Landscape:
    """The loss around the current point of a run, on a plane, with the path and both
    gradients. ``losses[i, j]`` is the loss at ``plane.at(alphas[j], betas[i])`` (NaN where
    not finite, or not computed yet: ``complete`` says whether it is all there)."""

    label: str
    step: int
    plane: Plane
    alphas: np.ndarray
    betas: np.ndarray
    losses: np.ndarray | None
    complete: bool
    #: the path's points (the start first, the current point last) in plane coordinates
    path: np.ndarray
    #: the gradients' parts in the plane (not negated: the arrows point the other way)
    analytic: np.ndarray
    true: np.ndarray
    #: degrees between the full gradients (NaN where one is zero or was not computed)
    angle: float
    #: |analytic| / |true|
    ratio: float
    lr: float
    loss: float
    #: how far the current point lies off the plane (the plane kept from an earlier point)
    off_plane: float = 0.0

    @property
    def current(self) -> np.ndarray:
        return self.path[-1]

    @property
    def center(self) -> tuple[float, float]:
        return (float(self.alphas[len(self.alphas) // 2]),
                float(self.betas[len(self.betas) // 2]))

    @property
    def halves(self) -> tuple[float, float]:
        """Half the view's width along d1 and along d2."""
        return (float(self.alphas[-1] - self.alphas[0]) / 2,
                float(self.betas[-1] - self.betas[0]) / 2)

    @property
    def half(self) -> float:
        """Half the view's narrower side."""
        return min(self.halves)

    @property
    def words(self) -> str:
        """"37° apart, 0.5x as long"."""
        return gradient_words(self.angle, self.ratio)

    def csv(self) -> str:
        """The grid as CSV: one row per point (alpha, beta, loss)."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["alpha (d1)", "beta (d2)", "loss"])
        if self.losses is not None:
            for i, b in enumerate(self.betas):
                for j, a in enumerate(self.alphas):
                    writer.writerow([repr(float(a)), repr(float(b)),
                                     repr(float(self.losses[i, j]))])
        return out.getvalue()

    def _repr_png_(self) -> bytes | None:
        from customgrad.checking import notebook

        drawer = notebook.renderer()
        draw = getattr(drawer, "landscape_png", None)
        return None if draw is None else draw(self)


def moved_away(landscape: Landscape, point: np.ndarray, off_plane: float) -> bool:
    """Whether a grid drawn for ``landscape`` should be drawn again for the current point at
    ``point`` (plane coordinates), ``off_plane`` away from the plane: it moved more than
    :data:`MOVE_FRACTION` of the view's half width from where it was drawn, or as far off
    the plane."""
    (ha, hb), (x, y) = landscape.halves, landscape.current
    if not (ha > 0 and hb > 0):
        return True
    return (abs(float(point[0]) - float(x)) > MOVE_FRACTION * ha
            or abs(float(point[1]) - float(y)) > MOVE_FRACTION * hb
            or off_plane > MOVE_FRACTION * min(ha, hb))


def view_box(path: np.ndarray, tips: Sequence[np.ndarray],
             scale: float) -> tuple[tuple[float, float], float]:
    """A square centred on the current point (the path's last), holding the path behind it
    and the arrows' tips (one step along each) ahead, with a margin: its centre and half
    width; at least a thousandth of ``scale`` (the point's size)."""
    points = np.vstack([path, *[np.asarray(t).reshape(1, 2) for t in tips]])
    points = points[np.isfinite(points).all(axis=1)]
    current = path[-1]
    reach = float(np.abs(points - current).max()) if len(points) else 0.0
    half = max(MARGIN * reach, 1e-3 * max(1.0, scale))
    return (float(current[0]), float(current[1])), half


def compute(problem, steps: int = 0, lrs: Sequence[float] | None = None,
            mode: str = "gradients", size: int = SIZE, seed: int | None = None,
            plane: Plane | None = None, box: tuple | None = None, aspect: float = 1.0,
            progress: Callable[[Landscape], None] | None = None,
            should_stop: Callable[[], bool] | None = None) -> Landscape:
    """The landscape of ``problem``'s run after ``steps`` steps (replayed from the start,
    step ``k`` at ``lrs[k]`` where given), on a new plane ``mode`` through the current point
    (seeded by ``seed``, default the settings'), or on ``plane`` and in ``box`` (centre, half
    width) kept from an earlier one; the view ``aspect`` times as wide as high (the box
    widened to it). ``size`` points per side (0: no grid, the path and arrows only).
    ``progress`` gets the coarse grid first, then partial ones."""
    seed = problem.settings.seed if seed is None else seed
    descent = problem.descent()
    path = replay(descent, int(steps), lrs, should_stop)
    surface = LossSurface(descent, should_stop)
    x = path[-1]
    analytic = surface.analytic(x)
    true = surface.true(x) if len(x) <= MAX_DIFFERENCES else None
    if plane is None and true is None and mode == "gradients":
        plane = replace(make_plane("pca", x, analytic, true, path, surface.shapes, seed),
                        note=f"{len(x):,} trained entries are too many for the true gradient "
                             "by central differences: the plane is the path's instead")
    elif plane is None:
        plane = make_plane(mode, x, analytic, true, path, surface.shapes, seed)
    directions = torch.stack([plane.d1, plane.d2])
    analytic2 = (directions @ analytic).numpy()
    true2 = ((directions @ true).numpy() if true is not None else
             np.array([surface.slope(x, plane.d1), surface.slope(x, plane.d2)]))
    angle, ratio = (compare_gradients(analytic, true) if true is not None
                    else compare_gradients(torch.from_numpy(analytic2),
                                           torch.from_numpy(true2)))
    path2 = plane.project(path)
    lr = descent.lr
    if box is None:
        tips = [path2[-1] - lr * analytic2, path2[-1] - lr * true2]
        box = view_box(path2, tips, float(torch.linalg.vector_norm(x)))
    alphas, betas = axes(box[0], box[1], max(size, 2), aspect)
    result = Landscape(problem.function.__name__, int(steps), plane, alphas, betas, None,
                       size <= 0, path2, analytic2, true2, angle, ratio, lr,
                       surface.value(x), plane.distance(x))
    if size <= 0:
        return result
    for values, complete in grid(surface, plane, alphas, betas):
        result = replace(result, losses=values, complete=complete)
        if progress is not None and not complete:
            progress(result)
    return result


def landscape(target: str, steps: int = 0, *, mode: str = "gradients", size: int = SIZE,
              settings=None, **fields) -> Landscape:
    """The landscape of a Function (a CLI target: gallery name, ``file.py:Class``,
    ``module:Class``) after ``steps`` steps of its run, e.g. in a notebook:
    ``customgrad.landscape.landscape("sigmoid_bug", 20)``. ``settings`` (a
    :class:`~customgrad.problems.settings.Settings`) or its fields by name (``lr=0.5``, ``seed=3``)
    set up the run as the CLI's ``run`` does. Runs the Function in this process."""
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings

    settings = settings or Settings(target=target, **fields)
    settings.target = target
    return compute(build(settings), steps, mode=mode, size=size)


__all__ = ["MAX_DIFFERENCES", "MODES", "MODE_WORDS", "MOVE_FRACTION", "SIZE", "Landscape",
           "Plane", "compute", "landscape", "make_plane", "moved_away", "view_box"]
