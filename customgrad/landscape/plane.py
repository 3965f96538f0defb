"""The plane a landscape is drawn on, and the two gradients' angle and lengths.

By default (:func:`gradient_plane`) it is spanned by the gradient the user's backward gives
and the true one, orthonormalised (``d1`` along the analytic one): their angle and lengths
read off the picture as they are. Where they are parallel (a correct backward) the second
direction is the path's largest principal direction left, or a seeded random one. The other
planes: the path's two principal directions, or two random directions (filter-normalised, as
in Li et al., 2018, "Visualizing the loss landscape of neural nets"), orthonormalised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from customgrad.defaults import LANDSCAPE_MODE_WORDS, LANDSCAPE_MODES
from customgrad.errors import SpecError

#: the plane's choices: the two gradients, the path's principal directions, random ones
MODES = LANDSCAPE_MODES
MODE_WORDS = LANDSCAPE_MODE_WORDS
#: directions whose angle's sine is below this are parallel (numerically)
PARALLEL = 1e-6
#: the two gradients are parallel below this sine (0.6 degrees): the true gradient's central
#: differences in float32 are off by about a thousandth, which would span a plane of noise
GRADIENTS_PARALLEL = 1e-2


@dataclass(frozen=True)
class Plane:
    """A plane through ``origin`` (the flattened trained inputs, float64) spanned by the
    orthonormal ``d1``, ``d2``; ``note`` says why a fallback direction was taken. In a
    gradients plane ``kinds`` says what d1 and d2 are: "backward" (your backward's gradient),
    "true" (the true gradient's part orthogonal to d1), "path" (the path's principal
    direction) or "random"."""

    origin: torch.Tensor
    d1: torch.Tensor
    d2: torch.Tensor
    mode: str = "gradients"
    note: str = ""
    kinds: tuple[str, str] = ("backward", "true")

    def project(self, points: torch.Tensor) -> np.ndarray:
        """``points`` (n x d, or d) in the plane's coordinates: n x 2 (or 2)."""
        shift = points.to(torch.float64) - self.origin
        return torch.stack([shift @ self.d1, shift @ self.d2], dim=-1).numpy()

    def distance(self, point: torch.Tensor) -> float:
        """How far ``point`` lies off the plane."""
        shift = point.to(torch.float64) - self.origin
        return float(torch.linalg.vector_norm(shift - (shift @ self.d1) * self.d1
                                              - (shift @ self.d2) * self.d2))

    def at(self, a: float, b: float) -> torch.Tensor:
        return self.origin + a * self.d1 + b * self.d2


def _unit(v: torch.Tensor) -> torch.Tensor | None:
    norm = float(torch.linalg.vector_norm(v))
    return None if not math.isfinite(norm) or norm == 0 else v / norm


def _random_unit(shapes: list[tuple[int, ...]], seed: int,
                 values: torch.Tensor | None = None) -> torch.Tensor:
    """A seeded random unit direction, filter-normalised by ``values`` where that leaves a
    finite one (a diverged run's point does not), else plain."""
    for direction in (random_direction(shapes, seed, values), random_direction(shapes, seed)):
        unit = _unit(direction)
        if unit is not None:
            return unit
    raise SpecError("the trained inputs have no entry: there is no plane to draw.")


def _orthogonal(v: torch.Tensor, basis: torch.Tensor,
                tolerance: float = PARALLEL) -> torch.Tensor | None:
    """``v`` without its part along the unit ``basis``, normalised; None where nothing
    (relatively) remains."""
    norm = float(torch.linalg.vector_norm(v))
    rest = v - (v @ basis) * basis
    if norm == 0 or float(torch.linalg.vector_norm(rest)) <= tolerance * norm:
        return None
    return _unit(rest)


def random_direction(shapes: list[tuple[int, ...]], seed: int,
                     values: torch.Tensor | None = None) -> torch.Tensor:
    """A seeded random direction over the trained inputs (flattened, float64): the same for
    the same seed. With ``values`` (the current point) it is filter-normalised: each row of a
    matrix input (each whole vector input) scaled to that row's norm in ``values``."""
    generator = torch.Generator().manual_seed(int(seed))
    parts, start = [], 0
    for shape in shapes:
        count = math.prod(shape)
        part = torch.randn(count, generator=generator, dtype=torch.float64)
        if values is not None and count:
            rows = part.view(shape[0] if len(shape) >= 2 else 1, -1)
            own = values[start:start + count].view_as(rows)
            scale = torch.linalg.vector_norm(own, dim=1, keepdim=True)
            scale = torch.where(scale > 0, scale, torch.ones_like(scale))
            rows.mul_(scale / torch.linalg.vector_norm(rows, dim=1, keepdim=True).clamp_min(
                1e-300))
        parts.append(part)
        start += count
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)


def _principal(path: torch.Tensor | None, origin: torch.Tensor, count: int,
               away: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Up to ``count`` principal directions of the path's points about ``origin`` (without
    their part along the unit ``away``), largest first."""
    if path is None or len(path) < 2:
        return []
    shift = path.to(torch.float64) - origin
    if away is not None:
        shift = shift - (shift @ away)[:, None] * away
    scale = float(shift.abs().max())
    if scale == 0:
        return []
    _, sigma, vh = torch.linalg.svd(shift / scale, full_matrices=False)
    return [vh[k] for k in range(min(count, len(sigma))) if float(sigma[k]) > 1e-9]


def _second(d1: torch.Tensor, path, origin, shapes,
            seed) -> tuple[torch.Tensor, str, str]:
    """The plane's second direction when only ``d1`` is given: the path's largest principal
    direction left, else a seeded random one; its kind ("path", "random") and words."""
    for direction in _principal(path, origin, 1, away=d1):
        found = _orthogonal(direction, d1)
        if found is not None:
            return found, "path", "the path's largest principal direction"
    for attempt in range(8):
        found = _orthogonal(random_direction(shapes, seed + attempt), d1)
        if found is not None:
            return found, "random", f"a random direction (seed {seed})"
    raise SpecError("the trained inputs have a single entry: there is no plane to draw.")


def gradient_plane(origin: torch.Tensor, analytic: torch.Tensor, true: torch.Tensor,
                   path: torch.Tensor | None, shapes: list, seed: int = 0) -> Plane:
    """d1 along the analytic gradient, d2 along what the true gradient adds to it; where they
    are parallel (or one is zero), d2 is the path's principal direction or a random one."""
    d1, first = _unit(analytic), "backward"
    note = ""
    d2: torch.Tensor | None
    if d1 is None:
        d1, first = _unit(true), "true"
        note = "your backward gives a zero gradient: the first direction is the true gradient"
        if d1 is None:
            d1, first = _random_unit(shapes, seed), "random"
            note = "both gradients are zero here: the first direction is random"
        d2, second, why = _second(d1, path, origin, shapes, seed)
        return Plane(origin, d1, d2, "gradients", f"{note}; the second is {why}",
                     (first, second))
    d2, second = _orthogonal(true, d1, GRADIENTS_PARALLEL), "true"
    if d2 is None:
        d2, second, why = _second(d1, path, origin, shapes, seed)
        note = f"the two gradients are parallel: the second direction is {why}"
    return Plane(origin, d1, d2, "gradients", note, (first, second))


def pca_plane(origin, path, shapes, seed: int = 0) -> Plane:
    """The path's two principal directions (about the current point), completed with random
    ones where the path has fewer."""
    found = _principal(path, origin, 2)
    note = ""
    if not found:
        found = [_random_unit(shapes, seed, origin)]
        note = "the path has no length yet: random directions instead"
    d1 = found[0]
    d2 = _orthogonal(found[1], d1) if len(found) > 1 else None
    if d2 is None:
        d2, _kind, why = _second(d1, None, origin, shapes, seed + 1)
        note = note or f"the path lies on a line: the second direction is {why}"
    return Plane(origin, d1, d2, "pca", note)


def random_plane(origin, shapes, seed: int = 0) -> Plane:
    """Two seeded, filter-normalised random directions, orthonormalised."""
    d1 = _random_unit(shapes, seed, origin)
    values = origin if bool(torch.isfinite(origin).all()) else None  # (see _random_unit)
    for attempt in range(1, 9):
        d2 = _orthogonal(random_direction(shapes, seed + attempt, values), d1)
        if d2 is not None:
            return Plane(origin, d1, d2, "random")
    raise SpecError("the trained inputs have a single entry: there is no plane to draw.")


def make_plane(mode: str, origin: torch.Tensor, analytic: torch.Tensor | None,
               true: torch.Tensor | None, path: torch.Tensor | None, shapes: list,
               seed: int = 0) -> Plane:
    """The plane ``mode`` (one of :data:`MODES`) through ``origin``."""
    if mode not in MODES:
        raise SpecError(f"plane {mode!r} is unknown; use {', '.join(MODES)}.", field="plane")
    if mode == "gradients" and analytic is not None and true is not None:
        return gradient_plane(origin, analytic, true, path, shapes, seed)
    if mode == "random":
        return random_plane(origin, shapes, seed)
    return pca_plane(origin, path, shapes, seed)


def compare_gradients(analytic: torch.Tensor, true: torch.Tensor) -> tuple[float, float]:
    """The angle between the two gradients in degrees (NaN where one is zero) and how long
    the analytic one is against the true one (inf where the true one is zero)."""
    na, nt = float(torch.linalg.vector_norm(analytic)), float(torch.linalg.vector_norm(true))
    ratio = na / nt if nt else (math.inf if na else 1.0)
    if na == 0 or nt == 0:
        return math.nan, ratio
    cosine = float(analytic.to(torch.float64) @ true.to(torch.float64)) / (na * nt)
    return math.degrees(math.acos(max(-1.0, min(1.0, cosine)))), ratio


def gradient_words(angle: float, ratio: float) -> str:
    """"37° apart, 0.5x as long" for the picture's legend."""
    if math.isnan(angle):
        apart = "one gradient is zero"
    elif angle < 0.5:
        apart = "same direction"
    else:
        apart = f"{angle:.0f}° apart"
    if math.isinf(ratio):
        return f"{apart}; the true gradient is zero"
    length = "as long" if abs(ratio - 1) < 0.005 else f"{ratio:.2g}x as long"
    return f"{apart}, {length}"


__all__ = ["MODES", "MODE_WORDS", "Plane", "compare_gradients",
           "gradient_plane", "gradient_words", "make_plane", "pca_plane", "random_direction",
           "random_plane"]
