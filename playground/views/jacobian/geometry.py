"""Where things go on the Jacobian heatmaps, as pure functions (no Qt): the cells' aspect,
the block lines, the block labels that fit an axis, and the colour bars' tick strings.

A matrix's rows are its outputs' elements and its columns its inputs' elements; each output
and input is one block (a :class:`~customgrad.checking.jacobian.Axis`: name, shape, offset, size).
Cell (r, c) is centred on (c, r), so block edges lie at half-integers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from customgrad.checking.jacobian.report import Axis

__all__ = ["ELONGATED", "FILL_TARGET", "MAX_CELL_STRETCH", "MIN_FILL", "block_label",
           "block_ticks", "boundaries", "cell_aspect", "compact_tick_strings", "elongated",
           "fit_labels", "grid_lines", "layout_key", "view_height"]

#: Cells stay square while square cells fill at least this fraction of the view; else they
#: stretch along the matrix's short side just enough to fill it, ...
FILL_TARGET = 0.75
#: ... by at most this factor, ...
MAX_CELL_STRETCH = 3.0
#: ... unless the matrix would still fill less than this (a single row of 1000 entries).
MIN_FILL = 0.5
#: A matrix this many times wider than tall (or taller than wide) is elongated: its cells
#: stretch to fill the whole view (within MAX_CELL_STRETCH), not FILL_TARGET of it; the pane
#: asks for the height that takes (see :func:`elongated`).
ELONGATED = 2.0


def elongated(rows: int, cols: int) -> bool:
    """Whether the matrix is elongated (see ELONGATED): it uses the width it has."""
    return bool(rows and cols) and max(rows, cols) >= ELONGATED * min(rows, cols)


def layout_key(outputs: list[Axis], inputs: list[Axis]) -> tuple:
    """What decides a matrix's layout: its outputs' and inputs' names, shapes and parts (a
    complex tensor's two places per element: the same Function checked in float32, then in
    complex64, kept the real layout and drew nothing)."""
    return (tuple((a.name, a.shape, a.parts) for a in outputs),
            tuple((a.name, a.shape, a.parts) for a in inputs))


def cell_aspect(rows: int, cols: int, width: float, height: float) -> float:
    """The views' locked aspect ratio (pyqtgraph's: x pixels per unit / y pixels per unit).

    1 (square cells) while square cells fill at least FILL_TARGET of the view (all of it,
    for an elongated matrix); otherwise the cells stretch just enough to fill that,
    by at most MAX_CELL_STRETCH unless that would fill less than MIN_FILL. The stretch
    changes smoothly with the view's size: no jumps while a window is resized."""
    if not rows or not cols or width < 2 or height < 2:
        return 1.0
    relative = (width / height) / (cols / rows)  # < 1: the matrix is wider than the view
    fill = min(relative, 1 / relative)  # of the view, with square cells
    target = 1.0 if elongated(rows, cols) else FILL_TARGET
    if fill >= target:
        return 1.0
    stretch = max(min(target / fill, MAX_CELL_STRETCH), MIN_FILL / fill)
    return 1 / stretch if relative < 1 else stretch


def view_height(rows: int, cols: int, width: float) -> float:
    """The height a view ``width`` pixels wide wants for the matrix: its cells square; for a
    matrix much wider than tall (:func:`elongated`), stretched as far as they go (it uses
    the width, and its rows stay readable)."""
    stretch = MAX_CELL_STRETCH if cols > rows and elongated(rows, cols) else 1.0
    return width * rows / cols * stretch


def boundaries(axes: list[Axis]) -> list[float]:
    """Lines around and between blocks, at half-integers (pixel edges)."""
    if not axes:
        return []
    return [a.offset - 0.5 for a in axes] + [axes[-1].offset + axes[-1].size - 0.5]


def grid_lines(outputs: list[Axis], inputs: list[Axis]) -> tuple[np.ndarray, np.ndarray]:
    """The block lines of a matrix as (x, y) point pairs (pyqtgraph's ``connect="pairs"``):
    one vertical line at each input's edge, one horizontal line at each output's."""
    rows, cols = sum(a.size for a in outputs), sum(a.size for a in inputs)
    gx, gy = [], []
    for x in boundaries(inputs):
        gx += [x, x]
        gy += [-0.5, rows - 0.5]
    for y in boundaries(outputs):
        gx += [-0.5, cols - 0.5]
        gy += [y, y]
    return np.array(gx, float), np.array(gy, float)


def shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def block_label(axis: Axis) -> str:
    """A block's full label: "name [shape]", and "re, im" for a complex tensor (each
    element's real and imaginary parts side by side)."""
    parts = " re, im" if axis.parts == 2 else ""
    return f"{axis.name} [{shape_text(axis.shape)}]{parts}"


def abbreviations(name: str) -> list[str]:
    """``name`` cut shorter and shorter, each ending in "…", down to its first letter
    ("grad_outp…", ..., "g…"; a cut is one letter shorter than the name at least, so that
    it is narrower, "…" included): what a block too narrow for its name shows, rather than no
    label (the hint line below the views spells every block out)."""
    cuts = (name[:k].rstrip("_ ") for k in range(len(name) - 2, 0, -1))
    return list(dict.fromkeys(cut + "…" for cut in cuts if cut))


def block_ticks(axes: list[Axis]) -> list[tuple[float, str]]:
    """Every block's full label at its centre."""
    return [(a.offset + a.size / 2 - 0.5, block_label(a)) for a in axes]


def compact_tick_strings(values, scale, spacing) -> list[str]:
    """A colour bar's tick labels: three significant digits, a true minus, and an exact 0."""
    out = []
    for v in values:
        v = v * scale
        if abs(v) < abs(spacing * scale) * 1e-6:
            out.append("0")
        else:
            out.append(f"{v:.3g}".replace("-", "−"))
    return out


# ---------------------------------------------------------------------- block labels


@dataclass(eq=False)
class _Label:
    """One visible block's label: the block's visible part (start, end, in pixels along the
    axis), its forms from longest to shortest, and the form tried (len(forms): none)."""

    start: float
    end: float
    forms: list[str]
    level: int = 0


def fit_labels(axes: list[Axis], low: float, high: float, length: float,
               along: Callable[[str], float], fits: Callable[[str], bool] | None,
               gap: float, elide: Callable[[str], str] | None = None,
               shorten: Callable[[str], list[str]] | None = None,
               ) -> tuple[list[tuple[float, str]], bool]:
    """Block labels along one axis ``length`` pixels long that shows ``low``..``high``.

    Each visible block gets the longest of "name [shape]", "name" (and, with ``elide``, the
    name shortened by it, or with ``shorten`` each of the shorter names it gives, longest
    first) that ``fits`` across the axis, lies inside the axis with its centre
    on the block's visible part, and keeps ``gap`` pixels from its neighbours' labels
    (shifting along its block if need be); ``along(text)`` is a label's extent along the
    axis. Where two labels clash, the widest of them (and of the labels that pushed them)
    that has a shorter form gets it; where none has, the smaller block's label goes.
    Returns [(position, text)] and whether every visible block shows its full label."""
    if not axes or high <= low or length <= 0:
        return [], True
    scale = length / (high - low)
    labels = _labels(axes, low, high, scale, fits, elide, shorten)
    while True:
        placed, clash = _place_all(labels, along, length, gap)
        if clash is None:
            break
        dropped = _settle(clash, along, labels)
        if dropped is not None and shorten is not None:
            # the room it leaves: the others start again from their longest forms
            for label in labels:
                if label is not dropped and label.level < len(label.forms):
                    label.level = 0
    ticks = [(low + (start + end) / 2 / scale, label.forms[label.level])
             for label, start, end, _ in placed]
    full_texts = {block_label(a) for a in axes}
    full = len(placed) == len(labels) and all(t in full_texts for _, t in ticks)
    return ticks, full


def _labels(axes: list[Axis], low: float, high: float, scale: float,
            fits: Callable[[str], bool] | None, elide: Callable[[str], str] | None,
            shorten: Callable[[str], list[str]] | None = None) -> list[_Label]:
    """A label for each block with a visible part, with the forms that fit across."""
    labels = []
    for a in axes:
        lo, hi = max(a.offset - 0.5, low), min(a.offset + a.size - 0.5, high)
        if hi <= lo:
            continue
        forms = [block_label(a), a.name]
        if elide is not None:
            forms.append(elide(a.name))
        if shorten is not None:
            forms += shorten(a.name)
        if fits is not None:
            forms = [f for f in forms if fits(f)]
        labels.append(_Label((lo - low) * scale, (hi - low) * scale, list(dict.fromkeys(forms))))
    return labels


def _place(label: _Label, along: Callable[[str], float], length: float,
           ) -> tuple[float, float] | None:
    """Where the label's longest form from its level on goes (centred on its block, inside
    the axis), and that form's level; None (and no form left) where none can."""
    level = label.level
    while level < len(label.forms):
        extent = along(label.forms[level])
        centre = (label.start + label.end) / 2
        start = min(max(centre - extent / 2, 0.0), length - extent)
        if extent <= length and label.start <= start + extent / 2 <= label.end:
            label.level = level
            return start, start + extent
        level += 1
    label.level = level
    return None


def _place_all(labels: list[_Label], along: Callable[[str], float], length: float, gap: float):
    """Lay the labels out one after the other, each shifted past the previous one where too
    close. Returns ([(label, start, end, shifted)], None), or, at the first label that could
    not be shifted along its block, (..., the clash): [(label, start, end)] of that label,
    the previous one, and the ones that pushed it."""
    placed: list[tuple[_Label, float, float, bool]] = []
    for label in labels:
        span = _place(label, along, length)
        if span is None:
            continue
        start, end = span
        shifted = bool(placed) and start < placed[-1][2] + gap
        if shifted:  # too close to the previous label: shift along its own block
            start = placed[-1][2] + gap
            end = start + (span[1] - span[0])
            latest = min(length, label.end + (end - start) / 2) - (end - start)
            if start > latest and _pull_left(placed, latest - gap, gap):
                start, end = latest, latest + (span[1] - span[0])
            if end > length or (start + end) / 2 > label.end:
                clash = [(label, *span), placed[-1][:3]]
                k = len(placed) - 1
                while k > 0 and placed[k][3]:
                    clash.append(placed[k - 1][:3])
                    k -= 1
                return placed, clash
        placed.append((label, start, end, shifted))
    return placed, None


def _pull_left(placed: list[tuple[_Label, float, float, bool]], limit: float,
               gap: float) -> bool:
    """Move the placed labels left, each along its own block, so that the last ends by
    ``limit`` and each keeps ``gap`` from the next (room for a narrow block's label after
    them, rather than shorten it); False, and nothing moved, where they cannot."""
    moved = []
    for k in range(len(placed) - 1, -1, -1):
        label, start, end, _shifted = placed[k]
        if end <= limit:
            break
        extent = end - start
        new_start = limit - extent
        if new_start < 0 or new_start + extent / 2 < label.start:
            return False
        moved.append((k, (label, new_start, limit, True)))
        limit = new_start - gap
    for k, item in moved:
        placed[k] = item
    return True


def _cheap(form: str) -> bool:
    """Whether shortening this form loses little: it has a shape to drop, or is already an
    abbreviation (one letter more or less)."""
    return form.endswith(("]", "]re, im", "…")) or " [" in form


def _settle(clash: list[tuple[_Label, float, float]], along: Callable[[str], float],
            labels: list[_Label] = ()) -> _Label | None:
    """Shorten a label in the clash that has a shorter form: one whose shape or letters are
    already cut (:func:`_cheap`) before a whole name, the widest first ("input weight bias
    gr…" rather than "input weight b… gra…"); where none in the clash has, one of the other
    ``labels`` that has (the clash's room is theirs too: "input w… b…" rather than "input
    weight" and no "bias" at 150 %); when none has, drop the label of the smaller of the two
    clashing blocks."""
    shorter = []
    for k, (label, start, end) in enumerate(clash):
        # its next form that is narrower ("grad_outp…" is not: "…" is as wide as "ut")
        narrower = next((level for level in range(label.level + 1, len(label.forms))
                         if along(label.forms[level]) < end - start), None)
        if narrower is not None:
            shorter.append((_cheap(label.forms[label.level]), end - start, -k, label, narrower))
    if not shorter:
        in_clash = {id(c[0]) for c in clash}
        for k, label in enumerate(labels):
            if id(label) in in_clash or label.level >= len(label.forms):
                continue
            wide = along(label.forms[label.level])
            narrower = next((level for level in range(label.level + 1, len(label.forms))
                             if along(label.forms[level]) < wide), None)
            if narrower is not None:
                shorter.append((_cheap(label.forms[label.level]), wide, -k, label, narrower))
    if shorter:
        chosen = max(shorter, key=lambda t: t[:3])
        chosen[3].level = chosen[4]
    else:
        a, b = clash[0][0], clash[1][0]
        loser = a if a.end - a.start < b.end - b.start else b
        loser.level = len(loser.forms)
        return loser
    return None
