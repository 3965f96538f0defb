"""Finite differences of a forward that autograd cannot trace (numpy inside), on stacks of
points where one probe shows forward maps a stack to the stack of its results
(customgrad.checking.jacobian.numerical, customgrad.function.batching); elsewhere one point a
call, as before. Either way the numerical Jacobian, the verdict and the mismatch mask are the
loop's, and the verdict is gradcheck's."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
import torch
from torch.autograd import Function

from customgrad.checking.jacobian import compare, numerical
from customgrad.checking.jacobian.report import FINITE_DIFFERENCES
from customgrad.function import batching
from tests.customgrad.test_exact import _gradcheck, _x


class Counted(Function):
    """Counts its forward's calls, and the stacks among them (ndim above 2)."""

    calls = 0
    stacks = 0

    @classmethod
    def reset(cls) -> None:
        cls.calls = cls.stacks = 0


def _numpy_function(name: str, body, backward):
    """A Function whose forward is ``body`` on the numpy array of its input, and whose
    backward is ``backward(x, g)``."""

    def forward(ctx, x):
        owner.calls += 1
        owner.stacks += x.dim() > 2
        ctx.save_for_backward(x)
        return torch.from_numpy(np.ascontiguousarray(body(x.detach().numpy()))).to(x)

    def backward_(ctx, g):
        (x,) = ctx.saved_tensors
        return backward(x, g)

    owner = type(name, (Counted,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward_)})
    return owner


def _tanh_backward(x, g):
    return g * (1 - torch.tanh(x) ** 2)


def _wrong_at_one(x, g):
    d = 1 - torch.tanh(x) ** 2
    d[1, 3] += 0.5
    return g * d


def _sum_backward(x, g):
    return g * x.sum() + (g * x).sum()


def _first_row_backward(x, g):
    out = g * (1 - torch.tanh(x) ** 2)
    out[0] += g.sum(0)
    return out


Tanh = _numpy_function("Tanh", np.tanh, _tanh_backward)
TanhWrongAtOne = _numpy_function("TanhWrongAtOne", np.tanh, _wrong_at_one)
#: flattens its input: a stack gives one long vector, not a stack
Flat = _numpy_function("Flat", lambda a: np.tanh(a.reshape(-1)).reshape(4, 8), _tanh_backward)
#: scales by the sum over all dimensions: a stack's sum is another number
ScaledBySum = _numpy_function("ScaledBySum", lambda a: a * a.sum(), _sum_backward)
#: adds its first row to every row: a stack's first "row" is its whole first point
PlusFirstRow = _numpy_function("PlusFirstRow", lambda a: np.tanh(a) + a[0:1],
                               _first_row_backward)


def _compare_both(function, x):
    """compare() as it is, then with the stacking probe refused (the loop, as before)."""
    function.reset()
    stacked = compare(function, [x])
    stacked_calls, stacks = function.calls, function.stacks
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numerical.FiniteDifferences, "_stack_probe", lambda *args: False)
        function.reset()
        looped = compare(function, [x])
    return stacked, looped, stacked_calls, stacks, function.calls


def _same(stacked, looped):
    """The same numerical Jacobian, verdict, mask and worst entry. numpy's elementwise
    results do not depend on the stack (here they are equal); the probe admits outputs
    STACK_ROUNDINGS roundings apart (|f| <= 1 here), which moves an entry by at most
    2 * 4 * 2.2e-16 / (2 eps) ~ 1e-9."""
    assert stacked.method.name == looped.method.name == FINITE_DIFFERENCES
    torch.testing.assert_close(stacked.numerical, looped.numerical, rtol=0, atol=1e-9)
    assert stacked.passed == looped.passed
    assert stacked.mismatches == looped.mismatches
    assert torch.equal(stacked.mismatch_mask(), looped.mismatch_mask())
    assert (stacked.worst.row, stacked.worst.col) == (looped.worst.row, looped.worst.col)


def test_a_batchable_numpy_forward_is_differenced_on_stacks():
    x = _x(4, 8)
    stacked, looped, calls, stacks, loop_calls = _compare_both(Tanh, x)
    _same(stacked, looped)
    assert stacked.passed and _gradcheck(Tanh, [x])
    n = x.numel()
    # the loop: two calls a column; stacks: the probe's singles, a few stacked calls
    assert loop_calls >= 2 * n
    assert stacks >= 2 and calls < loop_calls - n


def test_a_wrong_entry_is_found_at_the_same_place_on_stacks():
    x = _x(4, 8)
    stacked, looped, _calls, stacks, _ = _compare_both(TanhWrongAtOne, x)
    assert stacks >= 2
    _same(stacked, looped)
    assert not stacked.passed and not _gradcheck(TanhWrongAtOne, [x])
    assert stacked.mismatches == 1 and (stacked.worst.row, stacked.worst.col) == (11, 11)


@pytest.mark.parametrize("function", [Flat, ScaledBySum, PlusFirstRow],
                         ids=["flattens", "sums-all", "first-row"])
def test_a_forward_that_does_not_map_stacks_falls_back_after_one_stacked_call(function):
    x = _x(4, 8)
    stacked, looped, calls, stacks, _ = _compare_both(function, x)
    _same(stacked, looped)
    assert stacked.passed == _gradcheck(function, [x]) is True
    assert stacks == 1  # the probe's call, then one point a call
    assert calls > 2 * x.numel()


def test_a_stack_that_raises_later_goes_on_one_point_a_call(monkeypatch):
    """The probe's stack passes; a longer one raises: the rest of the tile by the loop."""

    def short(a):
        if a.ndim > 2 and len(a) > 2 * numerical.STACK_PROBE_COLUMNS:
            raise ValueError("too many points")
        return np.tanh(a)

    Short = _numpy_function("Short", short, _tanh_backward)
    monkeypatch.setattr(numerical, "STACK_ENTRIES", 32 * 16)  # 16 points a call
    x = _x(4, 8)
    stacked, looped, _calls, stacks, _ = _compare_both(Short, x)
    assert stacks == 1 + 1  # the probe's, and the one that raised
    _same(stacked, looped)


def test_a_warning_on_the_stack_refuses_it_and_stays_unseen(recwarn):
    many = lambda xs: (__import__("warnings").warn("ndim 3", UserWarning), xs)[1]  # noqa: E731
    singles = [torch.zeros(1), torch.zeros(1)]
    assert not batching.probe(many, torch.zeros(2, 1), singles, 1e-12)
    assert batching.probe(lambda xs: xs, torch.zeros(2, 1), singles, 1e-12)
    assert not recwarn.list


class StackedOnlyAlongX(Function):
    """tanh(x) + w.sum(): a stack of x gives the stack of results, a stack of w the right
    shape with other values (the sum runs over the whole stack). Counts the stacks of each."""

    stacks: ClassVar[dict[str, int]] = {"x": 0, "w": 0}

    @staticmethod
    def forward(ctx, x, w):
        for name, t in (("x", x), ("w", w)):
            StackedOnlyAlongX.stacks[name] += t.dim() > 2
        a, b = x.detach().numpy(), w.detach().numpy()
        ctx.save_for_backward(x, w)
        return torch.from_numpy(np.tanh(a) + 0 * b + b.sum()).to(x)

    @staticmethod
    def backward(ctx, g):
        x, _w = ctx.saved_tensors
        return g * (1 - torch.tanh(x) ** 2), g.sum() * torch.ones_like(x)


def test_each_input_is_probed_for_its_own_stacks():
    x, w = _x(4, 8), _x(4, 8, seed=1)
    StackedOnlyAlongX.stacks = {"x": 0, "w": 0}
    stacked = compare(StackedOnlyAlongX, [x, w])
    assert StackedOnlyAlongX.stacks["x"] >= 2  # the probe's, then the columns'
    assert StackedOnlyAlongX.stacks["w"] == 1  # its probe only: the loop then
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numerical.FiniteDifferences, "_stack_probe", lambda *args: False)
        looped = compare(StackedOnlyAlongX, [x, w])
    assert stacked.passed and _gradcheck(StackedOnlyAlongX, [x, w])
    torch.testing.assert_close(stacked.numerical, looped.numerical, rtol=0, atol=1e-9)
    assert torch.equal(stacked.mismatch_mask(), looped.mismatch_mask())


class TanhInPlace(Counted):
    """tanh written into its input through numpy (mark_dirty): every call takes copies, the
    stacks too, so the points around the base stay as they were."""

    @staticmethod
    def forward(ctx, x):
        TanhInPlace.calls += 1
        TanhInPlace.stacks += x.dim() > 2
        np.tanh(x.detach().numpy(), out=x.detach().numpy())
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y ** 2)


def test_an_in_place_forward_gets_copies_of_its_stacks():
    x = _x(4, 8)
    stacked, looped, _calls, stacks, _ = _compare_both(TanhInPlace, x)
    assert stacks >= 2
    _same(stacked, looped)
    assert stacked.passed
