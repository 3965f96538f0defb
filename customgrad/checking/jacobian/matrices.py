"""Whole-matrix helpers that run in passes of bounded memory: the agreement rule, the largest
finite entry, signed pooling for display, lazily mapped zeros, and the "equal to rounding" test
that a batched (vmapped) result must pass before it is trusted.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable

import torch

from customgrad.checking.jacobian import limits


def agree(a: torch.Tensor, n: torch.Tensor, atol: float, rtol: float,
          pairs: tuple[tuple[int, int], ...] = ()) -> torch.Tensor:
    """gradcheck's rule (``allclose``): NaN agrees with nothing, not even NaN; equal
    infinities agree, a number and an infinity never do (as the comparison's tally counts
    them).

    ``pairs`` names the column ranges (offset, size) of complex inputs, whose columns go
    (real, imaginary) two by two: gradcheck compares such a pair as one complex entry, by
    the moduli ``|a - n| <= atol + rtol * |n|``, and both columns get its verdict.

    Computed in row chunks so big matrices need no full-size temporaries.
    """
    out = torch.empty(a.shape, dtype=torch.bool)
    step = (max(1, limits.CHUNK_ELEMENTS // max(1, a.shape[-1])) if a.dim() == 2
            else a.shape[0] or 1)
    for r0 in range(0, a.shape[0], step):
        x, y = a[r0:r0 + step].double(), n[r0:r0 + step].double()
        gap, size = (x - y).abs(), y.abs()
        for offset, width in pairs:
            cols = slice(offset, offset + width)
            gap[:, cols] = pair_modulus(gap[:, cols], dim=1)
            size[:, cols] = pair_modulus(size[:, cols], dim=1)
        ok = (gap <= atol + rtol * size) & gap.isfinite()  # a number is far from inf
        same = x == y  # NaN agrees with nothing, as in gradcheck (allclose)
        for offset, width in pairs:
            cols = slice(offset, offset + width)
            same[:, cols] = pair_all(same[:, cols], dim=1)
        out[r0:r0 + step] = ok | same
    return out


def pair_modulus(parts: torch.Tensor, dim: int) -> torch.Tensor:
    """|re + i im| of each (re, im) pair of entries along ``dim``, on both entries of the
    pair (``parts`` holds the parts' magnitudes or signed values)."""
    shape = list(parts.shape)
    shape[dim:dim + 1] = [shape[dim] // 2, 2]
    both = parts.reshape(shape)
    modulus = torch.hypot(both.select(dim + 1, 0), both.select(dim + 1, 1))
    return modulus.unsqueeze(dim + 1).expand(shape).reshape(parts.shape)


def pair_all(flags: torch.Tensor, dim: int) -> torch.Tensor:
    """True on both entries of each pair along ``dim`` where both are True."""
    shape = list(flags.shape)
    shape[dim:dim + 1] = [shape[dim] // 2, 2]
    both = flags.reshape(shape).all(dim + 1, keepdim=True)
    return both.expand(shape).reshape(flags.shape)


def finite_absmax(matrix: torch.Tensor) -> float:
    """Largest finite |entry| (0 when there is none), in passes of bounded memory."""
    flat = matrix.reshape(-1) if matrix.is_contiguous() else None
    if flat is None:
        matrix = matrix.T if matrix.dim() == 2 and matrix.T.is_contiguous() else matrix
        flat = matrix.reshape(-1)
    best = 0.0
    chunk = limits.CHUNK_ELEMENTS
    for start in range(0, flat.numel(), chunk):
        piece = flat[start:start + chunk]
        top, low = float(piece.max()), float(piece.min())
        if math.isfinite(top) and math.isfinite(low):
            best = max(best, top, -low)
        else:
            piece = piece.abs().nan_to_num_(0.0, 0.0, 0.0)
            best = max(best, float(piece.max()))
    return best


def pool_signed(matrix: torch.Tensor, step: int) -> torch.Tensor:
    """``matrix`` pooled ``step`` x ``step`` (ragged edges included): each cell keeps the
    entry of largest magnitude, with its sign; a cell holding a NaN is NaN."""
    if step <= 1:
        return matrix.to(torch.float64)
    rows = -(-matrix.shape[0] // step)
    out = torch.empty((rows, -(-matrix.shape[1] // step)), dtype=torch.float64)
    band = max(1, limits.CHUNK_ELEMENTS // max(1, matrix.shape[1] * step)) * step
    pool = torch.nn.functional.max_pool2d
    for r0 in range(0, matrix.shape[0], band):
        piece = matrix[r0:r0 + band].to(torch.float64)[None, None]
        high = pool(piece, step, ceil_mode=True)[0, 0]
        low = pool(-piece, step, ceil_mode=True)[0, 0]
        out[r0 // step:r0 // step + high.shape[0]] = torch.where(high >= low, high, -low)
    return out


def pool_any(mask: torch.Tensor, step: int) -> torch.Tensor:
    """A boolean ``mask`` pooled ``step`` x ``step`` (ragged edges included): a cell is True
    where any of its entries is."""
    if step <= 1:
        return mask.clone()
    rows, cols = -(-mask.shape[0] // step), -(-mask.shape[1] // step)
    if mask.numel() and not any(mask.stride()):  # one value seen everywhere (a passing
        # report's mask): so is its pooling; reading it all would take 40 ms at 4096 rows
        return torch.full((rows, cols), bool(mask.reshape(-1)[0]), dtype=torch.bool)
    padded = torch.zeros((rows * step, cols * step), dtype=torch.bool)
    padded[:mask.shape[0], :mask.shape[1]] = mask
    return padded.view(rows, step, cols, step).any(3).any(1)


#: what makes the comparison's zero matrices: :func:`lazy_zeros`, or a worker's
#: ``sharing.shared_zeros`` (shared memory its caller reads as the matrices are computed)
Allocator = Callable[[tuple[int, int]], torch.Tensor]

#: where a big matrix's memory can come from instead: ``storage(nbytes)`` gives zeroed,
#: lazily mapped bytes (a worker process passes shared memory files, so that its caller reads
#: the matrices as they are computed and gets them back without a copy)
Storage = Callable[[int], torch.UntypedStorage]


def lazy_zeros(shape: tuple[int, int], storage: Storage | None = None) -> torch.Tensor:
    """A float64 zero matrix in fresh anonymous memory: the OS maps (and zeroes) a page only
    when it is first written, so parts never written cost neither time nor memory. A big one
    comes from ``storage`` where given.

    Small pages on purpose: with huge pages (numpy's zeros asks for them) one written entry
    costs 2 MiB of zeroing, and the first allocation can stall on memory compaction.
    """
    count = math.prod(shape)
    if count * 8 < limits.LAZY_BYTES:
        return torch.zeros(shape, dtype=torch.float64)
    if storage is not None:
        return torch.empty(0, dtype=torch.float64).set_(storage(count * 8), 0, shape,
                                                        (shape[1], 1))
    memory = mmap.mmap(-1, count * 8)
    if hasattr(memory, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    # the tensor keeps ``memory`` alive; the mapping goes when the last view of it does
    return torch.frombuffer(memory, dtype=torch.float64, count=count).view(shape)


def same_to_rounding(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> bool:
    """``got`` equals ``want`` to a few dozen roundings of ``dtype`` (relative to the largest
    finite |entry| of ``want``, at least 1); NaN matches NaN."""
    tol = 64 * torch.finfo(dtype).eps
    scale = max(1.0, float(want.abs().max().nan_to_num(0, 0, 0)))
    return torch.allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True)
