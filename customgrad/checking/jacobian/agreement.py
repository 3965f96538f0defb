"""The comparison proper: gradcheck's rule ``|a - n| <= atol + rtol * |n|`` applied tile by
tile, folded into per-block statistics (mismatches, largest errors, the worst entry).

Each analytic row tile is compared with the numerical matrix only on the column tiles that are
non-zero in either matrix, in cache-sized pieces (``limits.TILE_ELEMENTS``) that stay inside one
block, with reusable scratch buffers instead of fresh temporaries.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from customgrad.checking.jacobian import limits, matrices
from customgrad.checking.jacobian.report import Axis, Block, Entry
from customgrad.checking.jacobian.tiles import by_label, runs
from customgrad.checking.jacobian.workspace import Workspace


class Tally:
    """Agreement statistics of every (output, input) block, folded in piece by piece."""

    def __init__(self, space: Workspace, atol: float, rtol: float):
        self.space, self.atol, self.rtol = space, atol, rtol
        self.blocks = [Block(o, i) for o in space.outputs for i in space.inputs]
        self._blocks_at = {(b.output.position, b.input.position): b for b in self.blocks}
        self._scratch_bufs: list[torch.Tensor] = []

    def compare_rows(self, axis: Axis, r0: int, r1: int, rows: torch.Tensor,
                     needed: torch.Tensor) -> None:
        """Compare analytic rows r0:r1 (of output ``axis``) with the numerical matrix on the
        column tiles flagged in ``needed``, in cache-sized pieces that stay inside one block."""
        space = self.space
        width = max(1, limits.TILE_ELEMENTS // (r1 - r0))
        for lo, hi in runs(needed, space.col_tiles):
            for inp in space.inputs:
                a, b = max(lo, inp.offset), min(hi, inp.offset + inp.size)
                if a >= b:
                    continue
                block = self._blocks_at[(axis.position, inp.position)]
                if inp.parts == 2:  # a complex entry's two columns stay in one piece
                    a -= (a - inp.offset) % 2
                    b += (b - inp.offset) % 2
                    width += width % 2
                for c0 in range(a, b, width):
                    c1 = min(b, c0 + width)
                    # input-major like the numerical matrix: every operand walks memory in
                    # order (a transposing copy in cache beats strided arithmetic)
                    ana_t = self._scratch(3, (c1 - c0, r1 - r0))
                    ana_t.copy_(rows[:, c0:c1].T)
                    self.fold(block, r0, c0, ana_t, space.num_t[c0:c1, r0:r1])

    def compare_entries(self, rows: torch.Tensor, cols: torch.Tensor, ana: torch.Tensor,
                        num: torch.Tensor) -> None:
        """Compare the entries at (``rows``, ``cols``), analytic ``ana`` against numerical
        ``num``, every other entry being zero in both matrices (so agreeing exactly): the
        statistics :meth:`fold` gives over the whole matrix, from those entries alone."""
        if torch.equal(ana, num):
            return  # identical (no NaN): every error and score is 0, as fold finds them
        assert all(b.input.parts == 1 for b in self.blocks)  # (the real-only reference)
        if len(self.blocks) == 1:
            self._fold_entries(self.blocks[0], rows, cols, ana, num)
            return
        # each entry's block (output-major, as self.blocks), the entries grouped by it once
        outs = torch.tensor([o.offset for o in self.space.outputs])
        ins = torch.tensor([i.offset for i in self.space.inputs])
        block = (torch.searchsorted(outs, rows, right=True).sub_(1).mul_(len(ins))
                 .add_(torch.searchsorted(ins, cols, right=True).sub_(1)))
        order, bounds = by_label(block, len(self.blocks))
        for b, each in enumerate(self.blocks):
            at = order[bounds[b]:bounds[b + 1]]
            if at.numel():
                self._fold_entries(each, rows[at], cols[at], ana[at], num[at])

    def _fold_entries(self, block: Block, rows: torch.Tensor, cols: torch.Tensor,
                      a: torch.Tensor, n: torch.Tensor) -> None:
        """:meth:`fold` for scattered real entries: the same rule, errors and worst entry
        (of equal scores, the lowest row, then the lowest column)."""
        atol, rtol = self.atol, self.rtol
        diff = (a - n).abs_()
        if float(diff.max()) == 0.0:
            return  # identical: every error and score is 0
        absn = n.abs()
        score = (absn * rtol).add_(atol)
        torch.div(diff, score, out=score)
        if not bool(score.isfinite().all()):
            both = a == n  # NaN agrees with nothing, as in gradcheck (allclose)
            score[both] = 0.0
            diff[both] = 0.0
            score[score.isnan()] = math.inf
            nan = diff.isnan()
            block.nan_entries += int(nan.sum())
            diff[nan] = math.inf
            absn[absn.isnan()] = 1.0
        best = float(score.max())
        if best > 1:
            block.mismatches += int((score > 1).sum())
        block.max_abs_error = max(block.max_abs_error, float(diff.max()))
        rel = diff.div_(absn.clamp_min_(max(atol, 1e-300))).nan_to_num_(math.inf, math.inf)
        block.max_rel_error = max(block.max_rel_error, float(rel.max()))
        if best >= block.worst_score:
            tied = (score == best).nonzero(as_tuple=True)[0]
            key = rows[tied] * self.space.cols + cols[tied]
            k = int(tied[int(key.argmin())])
            entry = (int(rows[k]), int(cols[k]))
            if best > block.worst_score or entry < block.worst:
                block.worst_score = best
                block.worst = entry

    def _scratch(self, k: int, shape: tuple[int, ...]) -> torch.Tensor:
        """Reusable contiguous buffer ``k`` of ``shape`` for the comparison's temporaries."""
        count = math.prod(shape)
        while len(self._scratch_bufs) <= k:
            self._scratch_bufs.append(torch.empty(0, dtype=torch.float64))
        if self._scratch_bufs[k].numel() < count:
            self._scratch_bufs[k] = torch.empty(max(count, limits.TILE_ELEMENTS),
                                                dtype=torch.float64)
        return self._scratch_bufs[k][:count].view(shape)

    def fold(self, block: Block, row0: int, col0: int, a: torch.Tensor,
             n: torch.Tensor) -> None:
        """Fold one piece (columns x rows of the Jacobian: input-major) into ``block``'s
        statistics."""
        atol, rtol = self.atol, self.rtol
        diff = torch.sub(a, n, out=self._scratch(0, a.shape)).abs_()
        if float(diff.max()) == 0.0:
            return  # identical: every error and score is 0
        absn = torch.abs(n, out=self._scratch(1, a.shape))
        paired = block.input.parts == 2
        if paired:  # gradcheck compares a complex entry whole: by the moduli
            part_diff = diff.clone()
            diff.copy_(matrices.pair_modulus(part_diff, dim=0))
            absn.copy_(matrices.pair_modulus(absn, dim=0))
        score = torch.mul(absn, rtol, out=self._scratch(2, a.shape)).add_(atol)
        torch.div(diff, score, out=score)
        top, at = score.view(-1).max(0)
        if not math.isfinite(float(top)):
            both = a == n  # NaN agrees with nothing, as in gradcheck (allclose)
            if paired:
                both = matrices.pair_all(both, dim=0)
            score[both] = 0.0
            diff[both] = 0.0
            score[score.isnan()] = math.inf
            nan = diff.isnan()
            block.nan_entries += int(nan.sum())
            diff[nan] = math.inf
            # a NaN |n| would make the relative error NaN, which max() below would drop
            absn[absn.isnan()] = 1.0
            top, at = score.view(-1).max(0)
        best, flat = float(top), int(at)
        if best > 1:
            block.mismatches += int((score > 1).sum())
        block.max_abs_error = max(block.max_abs_error, float(diff.max()))
        rel = diff.div_(absn.clamp_min_(max(atol, 1e-300))).nan_to_num_(math.inf, math.inf)
        block.max_rel_error = max(block.max_rel_error, float(rel.max()))
        if best > block.worst_score or (best == block.worst_score and not paired):
            width = score.shape[1]
            if paired and flat // width % 2 == 0 and (
                    part_diff.view(-1)[flat + width] > part_diff.view(-1)[flat]):
                flat += width  # the worse part of the entry: its imaginary part
            elif not paired:  # of equal scores, the first in row-major order, whatever the
                # tile grid (an exact reference makes ties: a symmetric Jacobian's twins)
                flat = _first_row_major(score, best)
            entry = (row0 + flat % width, col0 + flat // width)
            if best > block.worst_score or entry < block.worst:
                block.worst_score = best
                block.worst = entry

    def finish(self) -> None:
        """A block whose every entry agreed exactly names its first entry as the worst."""
        for block in self.blocks:
            if block.worst_score < 0:
                block.worst_score, block.worst = 0.0, (block.output.offset, block.input.offset)

    def worst(self, analytic_at: Callable[[int, int], float]) -> Entry:
        """The entry of highest score over every block; ``analytic_at(r, c)`` gives the
        analytic value when the matrix was not kept."""
        worst_block = max(self.blocks, key=lambda b: b.worst_score)
        r, c = worst_block.worst
        o, i = worst_block.output, worst_block.input
        if self.space.deferred:  # (the entries are not written yet)
            a_val, n_val = self.space.value_at(r, c)
        else:
            ana = self.space.ana
            a_val = float(ana[r, c]) if ana is not None else analytic_at(r, c)
            n_val = float(self.space.num_t[c, r])
        return Entry(o.position, i.position, o.element_name(r - o.offset),
                     i.element_name(c - i.offset), o.index(r - o.offset),
                     i.index(c - i.offset), r, c, a_val, n_val)


def _first_row_major(score: torch.Tensor, best: float) -> int:
    """The flat index (input-major, as ``score``) of the entry scoring ``best`` with the
    lowest output row, then the lowest input column."""
    width = score.shape[1]
    at = (score.view(-1) == best).nonzero(as_tuple=True)[0]
    if at.numel() <= 1:
        return int(at[0]) if at.numel() else 0
    key = (at % width) * score.shape[0] + at // width  # row first, then column
    return int(at[int(key.argmin())])
