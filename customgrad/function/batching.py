"""Whether a computation can be batched: one call on a stack of inputs along a new leading
dimension instead of one call per input. Nothing assumes it: :func:`probe` tries it once on a
few inputs whose single results are known and trusts it only where the stack of results
agrees with them within rounding. A user's forward may check shapes, use numpy, handle
scalars only, or work in place; any of these raises or disagrees in the probe, and the caller
keeps calling once per input (the results exactly as before).

Qt-free, and below both of its users: the landscape's grid (:mod:`customgrad.landscape.surface`)
and the finite differences of a forward that autograd cannot trace
(:mod:`customgrad.checking.jacobian.numerical`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import torch

from customgrad.errors import Cancelled

#: a batched result may differ from the single one by this many units of rounding (of the
#: inputs' dtype) times the result's size: another summation order in a reduction over up
#: to about this many terms; a batch that mixes its inputs differs by far more
ROUNDING_UNITS = 1000
#: a batched call holds at most about this many float entries of inputs and results
BATCH_ENTRIES = 1 << 20


#: torch.vmap's warning where an operator has no batching rule (it loops instead): about
#: torch's speed, nothing the user did; it reached the CLI's stderr from a scatter_ in backward
SLOW_FALLBACK = "There is a performance drop"


def quiet_vmap(function: Callable, in_dims: tuple) -> Callable:
    """``torch.vmap(function, in_dims)``, without :data:`SLOW_FALLBACK`'s warning."""
    batched = torch.vmap(function, in_dims=in_dims)

    def call(*args):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=SLOW_FALLBACK)
            return batched(*args)
    return call


def tolerance(dtype: torch.dtype) -> float:
    """The relative difference between a batched and a single result counted as rounding."""
    eps = torch.finfo(dtype).eps if dtype.is_floating_point or dtype.is_complex else 0.0
    return ROUNDING_UNITS * max(eps, torch.finfo(torch.float64).eps)


def agrees(batched: torch.Tensor, singles: Sequence[torch.Tensor], rtol: float) -> bool:
    """Whether ``batched`` is the stack of ``singles`` within ``rtol`` of each single result's
    largest finite entry (non-finite entries where they are, and equal)."""
    if not isinstance(batched, torch.Tensor) or len(batched) != len(singles):
        return False
    for got, want in zip(batched, singles):
        if got.shape != want.shape:
            return False
        got, want = got.detach().to("cpu", torch.float64), want.detach().to("cpu", torch.float64)
        finite = torch.isfinite(want)
        if not torch.equal(finite, torch.isfinite(got)):
            return False
        # NaN where NaN, and infinities of the same sign
        if not torch.equal(got[~finite].nan_to_num(0.0), want[~finite].nan_to_num(0.0)):
            return False
        if not torch.equal(got.isnan(), want.isnan()):
            return False
        if not finite.any():
            continue
        scale = float(want[finite].abs().max())
        if float((got[finite] - want[finite]).abs().max()) > rtol * max(scale, 1e-300):
            return False
    return True


def probe(many: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor,
          singles: Sequence[torch.Tensor], rtol: float) -> bool:
    """Whether ``many`` (one call on ``inputs``, stacked along the first dimension) gives the
    stack of ``singles`` (the results of one call per input, made by the caller) within
    ``rtol``. One call; False where it raises, warns or disagrees (a warning about a stack
    the user never passed is not theirs to read: it is kept from them, and the caller keeps
    to single calls)."""
    if len(inputs) < 2:  # one input cannot tell a batch from a broadcast
        return False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batched = many(inputs)
    except Cancelled:  # a stop request or a time limit is not an answer
        raise
    except Exception:  # whatever forward raises on a stack, it is not batchable
        return False
    return not caught and agrees(batched, singles, rtol)


def chunk_size(entries_per_input: int) -> int:
    """How many inputs one batched call takes: :data:`BATCH_ENTRIES` between them."""
    return max(1, BATCH_ENTRIES // max(1, int(entries_per_input)))


def spread(count: int, k: int) -> list[int]:
    """``k`` indices spread over ``range(count)``, the first and the last among them."""
    if count <= k:
        return list(range(count))
    return sorted({round(i * (count - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]


__all__ = ["BATCH_ENTRIES", "ROUNDING_UNITS", "agrees", "chunk_size", "probe", "spread",
           "tolerance"]
