"""Review of verdict4's findings (``saved_tensors``, ``reentrant``) and of the rows that
``Backward.direct_matches`` keeps: Functions as people write them, each held to
torch.autograd.gradcheck's verdict. Each test of a fix fails before it (see docs/parity.md,
"review of verdict4"). Our own code, written for these tests.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
from torch.autograd import Function

import customgrad
from customgrad.errors import FunctionError
from customgrad.targets.gallery.classic import ReluInplace
from tests.customgrad.test_real_layers_3 import ExpSavedOutputInPlace

D = torch.float64


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=D)


def _gradcheck(fn: type[Function], *args: torch.Tensor, **kw) -> bool:
    """gradcheck's verdict (an exception it raises, a failure)."""
    leaves = [a.clone().requires_grad_() for a in args]
    try:
        return torch.autograd.gradcheck(fn.apply, leaves, **kw)
    except Exception:  # (RuntimeError from the engine, GradcheckError)
        return False


# ---- backwards people write that both pass ----------------------------------------------------


class ExpOwnTemporary(Function):
    """exp, backward multiplying its own temporary in place."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = x.exp()
        t.mul_(g)
        return t


class SquareCloneOfGrad(Function):
    """x^2, backward working in place on a clone of grad_output."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        g = g.clone()
        g.mul_(2 * x)
        return g


class CubeNoGrad(Function):
    """x^3, backward's in-place work on a clone of the saved input inside torch.no_grad."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with torch.no_grad():
            t = x.clone()
            t.pow_(2)
            t.mul_(3)
        return t * g


class SinCtxAttribute(Function):
    """sin, keeping cos(x) on ctx (not saved), modified in place in forward."""

    @staticmethod
    def forward(ctx, x):
        ctx.c = x.cos()
        ctx.c.mul_(1.0)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        return g * ctx.c


class ExpDetachesSavedOutput(ExpSavedOutputInPlace):
    """exp saving its output, backward detaching it in place: harmless (unpacking a saved
    output makes a new tensor object), gradcheck passes it."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        y.detach_()
        return g * y


class SinCosNoMaterialize(Function):
    """(sin x, cos x) with set_materialize_grads(False): backward sees None for an output
    a row does not seed."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, ga, gb):
        (x,) = ctx.saved_tensors
        r = torch.zeros_like(x)
        if ga is not None:
            r = r + ga * x.cos()
        if gb is not None:
            r = r - gb * x.sin()
        return r


@pytest.mark.parametrize("fn", [ExpOwnTemporary, SquareCloneOfGrad, CubeNoGrad,
                                SinCtxAttribute, ExpDetachesSavedOutput, SinCosNoMaterialize])
def test_in_place_work_backward_may_do_passes_as_in_gradcheck(fn):
    x = _x(5)
    assert _gradcheck(fn, x)
    report = customgrad.check(fn, x)
    assert report.passed and report.analytic_path == "direct"
    assert {c.name for c in report.checks.values() if c.status == "failed"} == set()


# ---- a saved input detached in place ------------------------------------------------------------


class SquareDetachesSavedInput(SquareCloneOfGrad):
    """x^2, backward calling ``detach_()`` on the saved input: the caller's x (a weight, say)
    no longer requires grad after one backward."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x.detach_()
        return 2 * x * g


class SquareRequiresGradFalse(SquareCloneOfGrad):
    """The same, by ``requires_grad_(False)`` after a first use of x."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = 2 * x
        x.requires_grad_(False)
        return d * g


class SquareRequiresGradAttribute(SquareCloneOfGrad):
    """The same, by setting the attribute (``x.requires_grad = False``)."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        d = 2 * x
        x.requires_grad = False
        return d * g


def _line_in(fn, method: str, text: str) -> int:
    lines, first = inspect.getsourcelines(getattr(fn, method))
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_a_backward_detaching_a_saved_input_in_place_fails_saved_tensors():
    """gradcheck raises at its second row ("One of the differentiated Tensors does not
    require grad"); customgrad passed it (its inputs are copies). The finding names the
    line of ``x.detach_()`` (backward run again under a TorchFunctionMode watching the saved
    tensors' requires_grad), not backward's def line."""
    x = _x(4)
    leaf = x.clone().requires_grad_()
    SquareDetachesSavedInput.apply(leaf).sum().backward()
    assert not leaf.requires_grad  # (the harm, in real use)
    assert not _gradcheck(SquareDetachesSavedInput, x)
    report = customgrad.check(SquareDetachesSavedInput, x)
    assert not report.passed and report.mismatches == 0
    finding = report.checks["saved_tensors"]
    assert finding.status == "failed" and "detaches saved_tensors in place" in finding.detail
    line = _line_in(SquareDetachesSavedInput, "backward", "x.detach_()")
    assert f"{Path(__file__)}:{line})" in finding.detail


@pytest.mark.parametrize("fn, call", [(SquareRequiresGradFalse, "x.requires_grad_(False)"),
                                      (SquareRequiresGradAttribute, "x.requires_grad = False")])
def test_a_backward_clearing_requires_grad_of_a_saved_input_raises_at_its_line(fn, call):
    """On a leaf (a weight, gradcheck's inputs) these detach it as ``detach_()`` does, and
    gradcheck raises at its second row. customgrad hands forward copies of its leaves (an
    in-place forward cannot take a leaf), which are not leaves: torch refuses the flag
    change there ("you can only change requires_grad flags of leaf variables"), and the
    check raises, naming that line: an error either way, not a verdict."""
    x = _x(4)
    leaf = x.clone().requires_grad_()
    fn.apply(leaf).sum().backward()
    assert not leaf.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.gradcheck(fn.apply, (x.clone().requires_grad_(),))
    with pytest.raises(FunctionError, match="leaf variables") as info:
        customgrad.check(fn, x)
    assert info.value.line == _line_in(fn, "backward", call)


# ---- a backward whose result depends on how often it ran -----------------------------------------


class DoubleDriftingAfterCalls(Function):
    """2x, backward counting its calls on ctx and drifting from the third on (a buffer
    re-used after a warm-up, say): the probe's two calls agree."""

    @staticmethod
    def forward(ctx, x):
        ctx.calls = 0
        return x * 2

    @staticmethod
    def backward(ctx, g):
        ctx.calls += 1
        return g * (2.0 if ctx.calls < 3 else 2.5)


def test_a_backward_drifting_after_its_second_call_fails_as_gradcheck_fails_it():
    """gradcheck's rows are all on one graph: not reentrant (nondet_tol 0), a Jacobian
    mismatch (nondet_tol 1). customgrad passed both: a direct call disagreed with the
    engine's, so every row went through the engine, a fresh graph each (every call a
    first). Now the first direct call on a fresh graph is compared too."""
    x = _x(4)
    assert not _gradcheck(DoubleDriftingAfterCalls, x)
    assert not _gradcheck(DoubleDriftingAfterCalls, x, nondet_tol=1.0)
    report = customgrad.check(DoubleDriftingAfterCalls, x)
    assert not report.passed
    assert report.checks["reentrant"].status == "failed"
    assert "change after a few calls" in report.checks["reentrant"].detail
    loose = customgrad.check(DoubleDriftingAfterCalls, x, nondet_tol=1.0)
    assert not loose.passed and loose.mismatches > 0 and "reentrant" not in loose.checks
    assert loose.analytic_path == "direct"  # (gradcheck's rows: one graph)


class ExpKeptOnCtxWrittenAgain(Function):
    """exp, keeping its output on ctx (not saved) and returning ``ctx.y.mul_(g)``: the
    second call returns the same tensor, changed again."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.y = y.detach()
        return y

    @staticmethod
    def backward(ctx, g):
        return ctx.y.mul_(g)


def test_a_backward_returning_a_tensor_it_writes_again_fails_reentrant():
    """The probe compared its first result with its second, the same tensor object: no gap,
    and the rows went through the engine; customgrad passed it, gradcheck fails it not
    reentrant."""
    x = _x(4)
    assert not _gradcheck(ExpKeptOnCtxWrittenAgain, x)
    report = customgrad.check(ExpKeptOnCtxWrittenAgain, x)
    assert not report.passed
    assert "differ by up to" in report.checks["reentrant"].detail


# ---- grad_output modified in place: gradcheck passes, customgrad refuses (docs/parity.md) -------


class SquareMulGradOutput(SquareCloneOfGrad):
    """x^2, backward returning ``g.mul_(2 * x)``."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g.mul_(2 * x)


def test_grad_output_written_in_place_is_refused_though_gradcheck_passes_it():
    """gradcheck passes it (its one-hot buffer is reset each row); the first loss anyone
    writes, ``y.sum()``, hands backward an expanded grad_output and the write raises."""
    x = _x(4)
    assert _gradcheck(SquareMulGradOutput, x)
    with pytest.raises(RuntimeError, match="single memory location"):
        SquareMulGradOutput.apply(x.clone().requires_grad_()).sum().backward()
    # (since session 38, trial2: judged entry by entry as gradcheck, failed by the sub-check
    # grad_output that says why, in place of an error with no verdict)
    report = customgrad.check(SquareMulGradOutput, x)
    assert report.agrees and not report.passed
    assert "modifies grad_output in place" in report.checks["grad_output"].detail


# ---- the cost: backward calls per check ---------------------------------------------------------


class CountedTanhLinear(Function):
    """tanh(x w^T), counting its backward calls."""

    calls = 0

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.tanh(x @ w.T)

    @staticmethod
    def backward(ctx, g):
        CountedTanhLinear.calls += 1
        x, w = ctx.saved_tensors
        gg = g * (1 - torch.tanh(x @ w.T) ** 2)
        return gg @ w, gg.T @ x


def test_a_right_backward_is_called_no_more_often_than_before():
    """10 calls (probe, reentrancy, 3 direct/engine pairs, the vmapped batches...), 11-12
    at fe6bc98: the fresh-graph comparison runs only where a direct call disagreed."""
    CountedTanhLinear.calls = 0
    report = customgrad.check(CountedTanhLinear, _x(3, 4), _x(5, 4, seed=1))
    assert report.passed and report.analytic_path == "direct"
    assert CountedTanhLinear.calls <= 10


# ---- a forward writing into its input without mark_dirty (session 36) -----------------------
class DoubleInPlace(Function):
    """3 * (2x), doubling the caller's x in place first (no mark_dirty): backward is right
    for the values forward saw, and the caller's tensor doubles on every call."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 6


class SavedThenScaledByOne(Function):
    """3x, saving x and then writing it in place with its own values (a version bump
    alone): a second forward on the same x makes the first graph's backward raise."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        x.mul_(1.0)
        return x * 3

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors  # (reading them raises once x is written again)  # noqa: B018
        return g * 3


class NumpyDoubled(Function):
    """2x, doubling the caller's x through numpy (no version bump) and returning a copy."""

    @staticmethod
    def forward(ctx, x):
        x.detach().numpy()[...] *= 2
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class BufferUpdated(Function):
    """x * 2 with a running mean requiring grad updated in forward, whose gradient backward
    returns None: no output depends on it."""

    @staticmethod
    def forward(ctx, x, running):
        running.mul_(0.9).add_(0.1 * x.detach().mean(0))
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


def _gradcheck_passes(fn, args) -> bool:
    try:
        return torch.autograd.gradcheck(fn.apply, args, raise_exception=False)
    except RuntimeError:  # (SavedThenScaledByOne: its second forward makes backward raise)
        return False


@pytest.mark.parametrize("fn", [DoubleInPlace, SavedThenScaledByOne, NumpyDoubled])
def test_a_forward_writing_into_its_input_without_mark_dirty_fails_as_gradcheck(fn):
    """gradcheck fails each (its finite differences see the written input); customgrad
    passed them all before, its every call getting copies."""
    args = (torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3),
                        requires_grad=True),)
    assert not _gradcheck_passes(fn, tuple(a.detach().clone().requires_grad_() for a in args))
    report = customgrad.check(fn, *args)
    assert not report.passed and report.mismatches == 0
    finding = report.checks["input_written"]
    assert finding.status == "failed" and "into its input x" in finding.detail
    if fn is not NumpyDoubled:  # (a numpy write bumps no version: forward's line instead)
        lines, first = inspect.getsourcelines(fn.forward)
        line = first + next(k for k, text in enumerate(lines) if ".mul_(" in text)
        assert f"{Path(__file__)}:{line})" in finding.detail


def test_a_buffer_updated_in_forward_whose_gradient_is_none_passes_as_gradcheck():
    make = lambda: (torch.randn(3, 4, dtype=torch.float64, requires_grad=True),  # noqa: E731
                    torch.zeros(4, dtype=torch.float64, requires_grad=True))
    assert _gradcheck_passes(BufferUpdated, make())
    report = customgrad.check(BufferUpdated, *make())
    assert report.passed and "input_written" not in report.checks
    assert customgrad.check(ReluInplace, torch.randn(3, 4, dtype=torch.float64)).passed
