"""What the landscape view draws, worked out without Qt: the arrows' ends, the axes' titles
and the legend (the arrows' colours are colour-blind safe and their line styles differ too;
the colours and contour lines are :mod:`playground.support.contours`')."""

from __future__ import annotations

import math

import numpy as np

from playground.views.arrows import ARROW_COLOURS, DASHED, SOLID, TRUE_GRADIENT, YOUR_BACKWARD

#: the longer arrow's length, as a share of the view's half width
ARROW_SHARE = 0.7
#: the shorter arrow is drawn at least this share of the longer (else its head hides it)
SHORTEST = 0.25

AXIS_TITLES = {
    "gradients": ("d1 (your backward)", "d2 (true gradient)"),
    "pca": ("d1: the path's main direction", "d2: its second"),
    "random": ("d1: random direction", "d2: another random one"),
}


#: the start of a gradient plane's note when its second direction is not the true gradient's
PARALLEL_NOTE = "the two gradients are parallel"


#: the titles where the picture is too small for :data:`AXIS_TITLES`
SHORT_TITLES = {"pca": ("d1 (path)", "d2 (path, 2nd)"), "random": ("d1 (random)", "d2 (random)")}
#: what d1 or d2 of a gradients plane is, by its kind (customgrad's ``Plane.kinds``), in
#: words and in short
KIND_WORDS = {"backward": "your backward", "true": "true gradient",
              "path": "the path's direction", "random": "random"}
KIND_SHORT = {"backward": "yours", "true": "true", "path": "path", "random": "random"}


def axis_titles(mode: str, kinds: tuple[str, str] = ("backward", "true"),
                short: bool = False) -> tuple[str, str]:
    """The axes' titles of a plane ``mode`` (``short``: for a small picture); a gradients
    plane's say what d1 and d2 are (``kinds``: where the gradients were parallel, d2 is the
    path's or random, and the note then needs no line of its own: see :func:`note_line`)."""
    if mode != "gradients":
        titles = SHORT_TITLES if short else AXIS_TITLES
        return titles.get(mode, titles["pca"])
    words = KIND_SHORT if short else KIND_WORDS
    return tuple(f"{d} ({words.get(kind, kind)})" for d, kind in zip(("d1", "d2"), kinds))


def note_line(note: str) -> str:
    """The plane's note as the pane shows it under the picture ("" where the axes say it)."""
    if not note or note.startswith(PARALLEL_NOTE):
        return ""
    return note[:1].upper() + note[1:]


def arrow_ends(start: np.ndarray, analytic: np.ndarray, true: np.ndarray,
               half: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """The tips of the arrows along ``-analytic`` and ``-true`` from ``start``: the longer
    :data:`ARROW_SHARE` of the view's half width, the other to the same scale but at least
    :data:`SHORTEST` of it; and whether the shorter was lengthened so."""
    lengths = [float(np.hypot(*analytic)), float(np.hypot(*true))]
    longest = max(lengths)
    if not (longest > 0 and math.isfinite(longest)):
        return np.asarray(start), np.asarray(start), False
    tips, stretched = [], False
    for vector, length in zip((analytic, true), lengths):
        share = length / longest
        if 0 < share < SHORTEST:
            share, stretched = SHORTEST, True
        unit = np.asarray(vector) / length if length > 0 else np.zeros(2)
        tips.append(np.asarray(start) - ARROW_SHARE * half * share * unit)
    return tips[0], tips[1], stretched


def head_angle(start: np.ndarray, end: np.ndarray) -> float:
    """pyqtgraph's ArrowItem angle (0 points left, 90 up on screen) for an arrow from
    ``start`` to ``end`` in a view whose y axis points up."""
    dx, dy = float(end[0] - start[0]), float(end[1] - start[1])
    return 180.0 - math.degrees(math.atan2(dy, dx))


def legend_html(words: str, dark: bool, size: str = "") -> str:
    """The legend in words: the two arrows' colours and styles, then how they differ."""
    backward, true = ARROW_COLOURS[dark]
    style = f"font-size:{size};" if size else ""
    return (f"<span style='{style}'><b style='color:{backward}'>{SOLID} {YOUR_BACKWARD}</b>"
            f" &nbsp; <b style='color:{true}'>{DASHED} {TRUE_GRADIENT}</b>"
            f" &nbsp; {words}</span>")


__all__ = ["AXIS_TITLES", "arrow_ends", "axis_titles", "head_angle", "legend_html",
           "note_line"]
