"""The tile grid over the Jacobian, and the zero-tile skipping built on it.

A column tile is one batch of the numerical pass (input elements), a row tile one batch of the
analytic pass (output elements); no tile crosses an axis. Most custom Functions act element by
element, so most tiles of their Jacobian are zero: :class:`TileScan` finds the non-zero ones,
only those are written into the (lazily mapped) matrices, and a tile zero in both matrices is
never compared (it agrees exactly).
"""

from __future__ import annotations

import numpy as np
import torch

from customgrad.checking.jacobian import limits
from customgrad.checking.jacobian.report import Axis


def batch(count: int, width: int) -> int:
    """How many rows/columns of ``width`` entries one batch holds (about
    ``limits.CHUNK_ELEMENTS`` entries)."""
    return max(1, min(count, limits.CHUNK_ELEMENTS // max(1, width)))


def tiles(axes: list[Axis], width: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) ranges covering ``axes`` (none crosses an axis), each about
    ``limits.CHUNK_ELEMENTS`` entries of a matrix ``width`` wide."""
    out = []
    for axis in axes:
        step = batch(axis.size, width)
        end = axis.offset + axis.size
        out += [(k, min(end, k + step)) for k in range(axis.offset, end, step)]
    return out


class TileScan:
    """Which tiles (column ranges) of each chunk hold a non-zero entry.

    A tile flagged by mistake only costs time, so after a chunk with every tile non-zero (a
    dense Jacobian) the next chunks are taken as dense too, and scanned again every 8th.
    """

    def __init__(self, grid: list[tuple[int, int]]):
        self.starts = torch.tensor([t[0] for t in grid], dtype=torch.int64)
        self.ends = torch.tensor([t[1] for t in grid], dtype=torch.int64)
        self.dense = torch.ones(len(grid), dtype=torch.bool)
        self.skip = 0

    def __call__(self, matrix: torch.Tensor) -> torch.Tensor:
        if self.skip:
            self.skip -= 1
            return self.dense
        flags = nonzero_tiles(matrix, self.starts, self.ends)
        if bool(flags.all()):
            self.skip = 7
        return flags


def nonzero_tiles(matrix: torch.Tensor, starts: torch.Tensor,
                  ends: torch.Tensor) -> torch.Tensor:
    """For each column range [starts[t], ends[t]): does ``matrix`` hold a non-zero (or NaN)
    entry there?"""
    # no full-size temporary (abs() would be one); NaN propagates, and NaN != 0
    nonzero = matrix.amax(0).ne_(0).logical_or_(matrix.amin(0).ne_(0))
    counts = torch.zeros(nonzero.numel() + 1, dtype=torch.int64)
    torch.cumsum(nonzero, 0, out=counts[1:])
    return counts[ends] > counts[starts]


def runs(flags: torch.Tensor, grid: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The [start, end) ranges covered by consecutive flagged tiles."""
    out: list[tuple[int, int]] = []
    for flagged, (start, end) in zip(flags.tolist(), grid):
        if not flagged:
            continue
        if out and out[-1][1] == start:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def axis_at(axes: list[Axis], index: int) -> Axis:
    """The axis holding matrix row/column ``index``."""
    for axis in axes:
        if axis.offset <= index < axis.offset + axis.size:
            return axis
    raise IndexError(index)


def by_tile(index: torch.Tensor, grid: list[tuple[int, int]]) -> tuple[torch.Tensor, list[int]]:
    """For entries at rows (or columns) ``index``: an order that groups them tile by tile
    (of ``grid``), and where each tile's entries start in it (one more: the end)."""
    starts = torch.tensor([t[0] for t in grid], dtype=torch.int64)
    return by_label(torch.searchsorted(starts, index, right=True).sub_(1), len(grid))


def by_label(labels: torch.Tensor, count: int) -> tuple[torch.Tensor, list[int]]:
    """For entries labelled 0..count-1 (a tile, a colour): an order that groups them label by
    label, keeping their order within a label, and where each label's entries start in it
    (one more: the end).

    Labels are small: numpy sorts them in 16 bits by radix, several times faster than a
    comparison sort of a million entries."""
    if count < 1 << 15:
        order = torch.from_numpy(np.argsort(labels.numpy().astype(np.int16), kind="stable"))
    else:
        order = torch.argsort(labels, stable=True)
    sizes = torch.bincount(labels, minlength=count)
    bounds = [0, *torch.cumsum(sizes, 0).tolist()]
    return order, bounds
