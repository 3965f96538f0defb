"""Hypotheses tested on one failing block's kept matrices (customgrad.checking.diagnosis runs them):
a factor, a transposed or swapped gradient, a missing reduction or accumulation, a region of
the input, a missing or extra conjugate. Each answers with its kind, its evidence in words and
how sure it is, or None."""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import torch

from customgrad.checking.jacobian.matrices import agree
from customgrad.checking.jacobian.report import Axis, Block, Report
from customgrad.function import dtypes

#: hypotheses about the matrices are fitted with the report's tolerances widened by this much,
#: so that finite-difference noise does not hide an exact explanation
FIT_SLACK = 10.0

class Found(NamedTuple):
    """What a hypothesis found: its kind (a Diagnosis's), its evidence in words, how sure."""

    kind: str
    detail: str
    confidence: float


def _slice_text(axis: Axis, flats: torch.Tensor) -> tuple[str, int]:
    """``name[a:b, :]``, the bounding box of the elements ``flats`` of ``axis``, and its size."""
    index = torch.stack(torch.unravel_index(flats, axis.shape), dim=1) if axis.shape \
        else torch.zeros(len(flats), 0, dtype=torch.long)
    parts, size = [], 1
    for d, dim in enumerate(axis.shape):
        lo, hi = int(index[:, d].min()), int(index[:, d].max())
        size *= hi - lo + 1
        parts.append(":" if (lo, hi) == (0, dim - 1) else
                     str(lo) if lo == hi else f"{lo}:{hi + 1}")
    return f"{axis.name}[{', '.join(parts)}]", size


class BlockFit:
    """Hypotheses tested on one failing block's kept matrices."""

    def __init__(self, report: Report, block: Block, values: torch.Tensor | None = None):
        self.report, self.block = report, block
        #: the block's input at the point (for a region of its values)
        self.values = values.detach().reshape(-1).double().cpu() \
            if isinstance(values, torch.Tensor) and values.numel() == block.input.size else None
        o, i = block.output, block.input
        analytic, numerical = report.analytic, report.numerical
        assert analytic is not None and numerical is not None  # (diagnose: both kept)
        self.numerical = numerical
        self.rows = slice(o.offset, o.offset + o.size)
        self.a = analytic[self.rows, i.offset:i.offset + i.size].double()
        self.n = self.numerical[self.rows, i.offset:i.offset + i.size].double()
        self.atol, self.rtol = report.atol * FIT_SLACK, report.rtol * FIT_SLACK

    def fits(self, a: torch.Tensor, n: torch.Tensor) -> bool:
        return bool(agree(a, n, self.atol, self.rtol).all())

    def swapped(self) -> Found | None:
        mine = self.block.input
        zero = torch.zeros_like(self.a)
        if self.fits(self.a, zero):  # zeros (None) are no one's gradient: not swapped
            return None
        for other in self.report.inputs:
            if other is mine or other.shape != mine.shape:
                continue
            theirs = self.numerical[self.rows, other.offset:other.offset + other.size]
            if self.fits(theirs.double(), zero):
                continue
            if self.fits(self.a, theirs.double()) and not self.fits(self.n, theirs.double()):
                return Found("swapped", (
                    f"the gradient backward returns for {mine.name} is the true gradient for "
                    f"{other.name}: backward returns its gradients in the wrong order (one per "
                    "forward argument, in forward's order)"), 0.95)
        return None

    def conjugate(self) -> Found | None:
        """A complex block whose analytic Jacobian is the numerical one with a conjugate
        where none belongs, or none where one does (:func:`dtypes.conjugated`)."""
        o, i = self.block.output, self.block.input
        for place, moved in dtypes.conjugated(self.n, o.parts, i.parts).items():
            if self.fits(self.a, moved) and not self.fits(self.n, moved):
                return Found("conjugate", dtypes.CONJUGATE[place].format(
                    i=i.name, o=o.name), 0.9)
        return None

    def transposed(self) -> Found | None:
        for axis, side in ((self.block.input, 1), (self.block.output, 0)):
            for d1, d2 in itertools.combinations(range(len(axis.shape)), 2):
                if axis.shape[d1] != axis.shape[d2] or axis.shape[d1] < 2:
                    continue
                order = torch.arange(axis.size).reshape(axis.shape).transpose(d1, d2).reshape(-1)
                moved = self.n[:, order] if side == 1 else self.n[order]
                if self.fits(self.a, moved) and not self.fits(self.n, moved):
                    what = (f"the gradient for {axis.name}" if side == 1 else
                            f"the grad_output of {axis.name} as backward uses it")
                    return Found("transposed", (
                        f"{what} is transposed (dims {d1} and {d2} swapped): e.g. g.T @ x "
                        "where x.T @ g is meant"), 0.9)
        return None

    def unchanged(self) -> Found | None:
        """backward hands grad_output on unchanged for this input (``return grad_output``):
        the block is 1 wherever the true Jacobian is not 0, and 0 elsewhere, while the true
        values vary (a constant one is :meth:`factor`'s): forward's own derivative, the
        factor the chain rule multiplies grad_output by, is missing."""
        a, n = self.a, self.n
        ones = a == 1
        if not bool(ones.any()) or not bool((ones | (a == 0)).all()):
            return None
        if not bool(n.isfinite().all()):
            return None
        zero = agree(n, torch.zeros_like(n), self.atol, self.rtol)
        if not torch.equal(ones, ~zero):
            return None
        values = n[ones]
        if float(values.max() - values.min()) <= self.atol + self.rtol * float(values.abs().max()):
            return None  # one value throughout: a constant factor says more
        o, i = self.block.output.name, self.block.input.name
        return Found("unchanged", (
            f"d {o}/d {i}: backward hands grad_output on unchanged (1 wherever the true "
            f"gradient is not 0, which varies: {float(values.min()):.3g} to "
            f"{float(values.max()):.3g}): the derivative of forward with respect to {i} is "
            f"missing; the chain rule multiplies grad_output by it"), 0.9)

    def factor(self) -> Found | None:
        finite = self.a.isfinite() & self.n.isfinite()
        a, n = (self.a, self.n) if bool(finite.all()) else (self.a[finite], self.n[finite])
        norm = float((n * n).sum())
        if norm == 0.0:
            return None
        c = float((a * n).sum()) / norm
        if abs(c - 1) < 1e-3 or abs(c) < 1e-6 or not self.fits(self.a, c * self.n):
            return None
        o, i = self.block.output.name, self.block.input.name
        if abs(c + 1) < 1e-3:
            detail = f"d {o}/d {i} has the wrong sign: backward returns -1x the true gradient"
        else:
            detail = f"d {o}/d {i} is {c:.4g}x the true gradient (a constant factor)"
        return Found("factor", detail, 0.95)

    def missing_reduction(self) -> Found | None:
        out, inp = self.block.output, self.block.input
        if out.size <= inp.size or not _broadcasts(inp.shape, out.shape):
            return None
        uncovered = (self.a.abs().amax(dim=1) == 0) & (self.n.abs().amax(dim=1) > 0)
        covered = ~uncovered
        if not bool(uncovered.any()) or not bool(covered.any()) \
                or not self.fits(self.a[covered], self.n[covered]):
            return None
        used, _ = _slice_text(out, covered.nonzero().flatten())
        return Found("missing_reduction", (
            f"the gradient for {inp.name} [{'x'.join(map(str, inp.shape))}] takes only {used} "
            f"into account: {inp.name} is broadcast over {out.name}, so backward must sum "
            "grad_output over the broadcast (batch) dimensions"), 0.85)

    def accumulation(self) -> Found | None:
        """Where an input element feeds several outputs, backward keeps one contribution
        (an assignment, ``copy_`` or ``grad[idx] = g``, where ``add_``/``index_add_`` was
        meant): the wrong entries are zeros, each in a column with another that is right."""
        wrong = ~agree(self.a, self.n, self.atol, self.rtol)
        if not bool(wrong.any()) or bool((self.a[wrong] != 0).any()):
            return None
        feeds = (self.n != 0).sum(dim=0)
        kept = ((self.a != 0) & ~wrong).sum(dim=0)
        columns = wrong.any(dim=0)
        if not bool((feeds[columns] >= 2).all() and (kept[columns] >= 1).all()):
            return None
        inp = self.block.input
        return Found("accumulation", (
            f"where an element of {inp.name} feeds several outputs, backward keeps only one "
            "of its contributions: accumulate them (+=, add_, index_add_, scatter_add_) "
            "instead of assigning (=, copy_, grad[idx] = g)"), 0.8)

    def region(self) -> Found | None:
        wrong = ~agree(self.a, self.n, self.report.atol, self.report.rtol)
        best = None
        for axis, dim in ((self.block.input, 0), (self.block.output, 1)):
            flats = wrong.any(dim=dim).nonzero().flatten()
            text, size = _slice_text(axis, flats)
            if len(flats) == size < axis.size:  # exactly a slice
                best = (text, 0.0, axis)
                break
            if size < axis.size and len(flats) >= size / 2 and (best is None
                                                                 or size / axis.size < best[1]):
                best = (text, size / axis.size, axis)
        where = self.value_region(wrong.any(dim=0))
        if where is not None and (best is None or best[1] > 0):
            return Found("region", (
                f"wrong where {where}; right elsewhere: look at backward's branch (a mask, "
                "where or if) for those values"), 0.8)
        if best is None:
            return None
        text, _, axis = best
        return Found("region", (
            f"only {text} is wrong; the rest of {axis.name} agrees: look for an off-by-one "
            "index, a slice or a mask on the wrong side"), 0.75)

    def value_region(self, wrong: torch.Tensor) -> str | None:
        """``x < 0``, ``x > 2``: the input's values that the wrong columns ``wrong`` are
        exactly, where a threshold splits them from the right ones; None otherwise."""
        x, name = self.values, self.block.input.name
        if x is None or not bool(wrong.any()) or bool(wrong.all()) or int(wrong.sum()) < 2 \
                or int((~wrong).sum()) < 2:
            return None
        low, high = x[wrong], x[~wrong]
        if float(low.max()) < float(high.min()):
            return f"{name} < {_between(float(low.max()), float(high.min()))}"
        if float(low.min()) > float(high.max()):
            return f"{name} > {_between(float(high.max()), float(low.min()))}"
        return None


def _broadcasts(shape: tuple[int, ...], onto: tuple[int, ...]) -> bool:
    """True when a tensor of ``shape`` broadcasts to ``onto`` (torch's rule)."""
    try:
        return torch.broadcast_shapes(shape, onto) == torch.Size(onto)
    except RuntimeError:
        return False


def _between(lo: float, hi: float) -> str:
    """The simplest number in (lo, hi] as text: 0 first, then whole numbers, halves, tenths."""
    if lo < 0 <= hi:
        return "0"
    for step in (1.0, 0.5, 0.1, 0.01):
        k = math.floor(lo / step) + 1
        if k * step <= hi:
            return f"{k * step:g}"
    return f"{(lo + hi) / 2:.3g}"
