"""Adversarial review of the engine's changes of 2026-11-26 (issue 32): Functions shaped like
users' own, each compared with torch.autograd.gradcheck's verdict (and the diagnosis a
student reads)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.autograd import Function

import customgrad
from customgrad.checking.jacobian.report import REFERENCE


class NaturalSqrt(Function):
    """sqrt(x) with the backward a student writes: grad_output / (2 sqrt(x)). At x = 0 every
    row of that column divides 0 by 0 (NaN) where grad_output is 0, and 1 by 0 at its own."""

    @staticmethod
    def forward(ctx, x):
        y = x.sqrt()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output / (2 * y)


def _gradcheck(function, *args) -> bool:
    leaves = tuple(a.detach().clone().requires_grad_() for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autograd.gradcheck(function.apply, leaves, raise_exception=False,
                                        check_undefined_grad=False)


@pytest.mark.parametrize("shape", [(3,), (8, 8)])
def test_sqrt_at_zero_with_a_natural_backward_is_undefined_not_a_wrong_region(shape):
    """The point is on the edge of sqrt's domain: FAILED as gradcheck says, explained as
    ``undefined`` (it was ``region``: 'look for an off-by-one index, a slice or a mask')."""
    x = torch.linspace(0.5, 2.0, torch.Size(shape).numel(), dtype=torch.float64).view(shape)
    x.view(-1)[1] = 0.0
    report = customgrad.check(NaturalSqrt, x, checks=["jacobian"])
    assert report.passed is _gradcheck(NaturalSqrt, x) is False
    assert [d.kind for d in report.diagnoses] == ["undefined"]
    assert "x[" in report.diagnoses[0].detail


def _gradgradcheck(function, *args) -> bool:
    leaves = tuple(a.detach().clone().requires_grad_() for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autograd.gradgradcheck(function.apply, leaves, raise_exception=False,
                                            check_undefined_grad=False)


class _CosTimes(Function):
    """grad_output * cos(x), a Function of its own (as a layer's backward calls another
    layer); its backward is right unless ``shift`` (wrong in the grad_output block alone) or
    ``scale`` (wrong in the x block alone)."""

    shift, scale = 0.0, 1.0

    @staticmethod
    def forward(ctx, grad_output, x):
        ctx.save_for_backward(grad_output, x)
        return grad_output * x.cos()

    @classmethod
    def _backward(cls, ctx, gg):
        grad_output, x = ctx.saved_tensors
        return gg * x.cos() + cls.shift, -gg * grad_output * x.sin() * cls.scale

    @staticmethod
    def backward(ctx, gg):
        return _CosTimes._backward(ctx, gg)


class _CosTimesWrongInGradOutput(_CosTimes):
    shift = 1e-2

    @staticmethod
    def backward(ctx, gg):
        return _CosTimesWrongInGradOutput._backward(ctx, gg)


class _CosTimesWrongInX(_CosTimes):
    scale = 1.01

    @staticmethod
    def backward(ctx, gg):
        return _CosTimesWrongInX._backward(ctx, gg)


def _sin_through(inner):
    class Sin(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return inner.apply(grad_output, x)

    Sin.__name__ = f"SinThrough{inner.__name__}"
    return Sin


class _SinDetachingGradOutput(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output.detach() * x.cos()


@pytest.mark.parametrize("function", [
    _sin_through(_CosTimes), _sin_through(_CosTimesWrongInGradOutput),
    _sin_through(_CosTimesWrongInX), _SinDetachingGradOutput])
def test_a_backward_through_another_function_gets_gradgradchecks_verdict(function):
    """The double_backward sub-check decides on the verified reference (autograd through
    backward): where backward's graph goes through another Function with a wrong backward,
    or drops grad_output's graph, the reference is wrong and its verification must fail,
    as gradgradcheck does; the first-order Jacobian is right in every case."""
    x = torch.linspace(-1.5, 1.5, 12, dtype=torch.float64).view(3, 4)
    report = customgrad.check(function, x, checks=["jacobian", "double_backward"])
    assert all(b.passed for b in report.blocks)
    expected = "passed" if _gradgradcheck(function, x) else "failed"
    assert report.checks["double_backward"].status == expected
    assert expected == ("passed" if function.__name__ == "SinThrough_CosTimes" else "failed")


@pytest.mark.parametrize("inner, wrt", [(_CosTimesWrongInGradOutput, "grad_output"),
                                        (_CosTimesWrongInX, "x")])
def test_a_failed_double_backward_names_the_block_in_the_functions_own_words(inner, wrt):
    """gradgradcheck's "Jacobian mismatch for output 0 with respect to input 1," counted
    grad_output as an input a one-input Function does not have: the detail now names
    backward's gradient for x and what it was differentiated by."""
    x = torch.linspace(-1.5, 1.5, 12, dtype=torch.float64).view(3, 4)
    detail = customgrad.check(_sin_through(inner), x,
                              checks=["jacobian", "double_backward"]).checks["double_backward"]
    assert detail.status == "failed"
    assert detail.detail == ("double backward disagrees: the gradient backward gives for x, "
                             f"differentiated with respect to {wrt}, disagrees with finite "
                             "differences of backward (gradgradcheck)")


class _MeanSquare(Function):
    """A loss: one output, every input element a column (64x128 and its target: 16,384)."""

    wrong_at: int | None = None

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return ((x - y) ** 2).mean()

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = 2 * (x - y) / x.numel() * g
        dx = d.clone()
        if _MeanSquare.wrong_at is not None:
            dx.view(-1)[_MeanSquare.wrong_at] *= 1.5
        return dx, -d


@pytest.mark.slow  # gradcheck differences 16,384 columns
@pytest.mark.parametrize("wrong_at", [None, 77])
def test_a_scalar_loss_of_a_big_input_takes_the_reference_verified_all_at_once(
        monkeypatch, wrong_at):
    """Its 16,384 columns are one colour each, so colours saved nothing and it took 2n
    forward calls of finite differences (3-4 s); every column at once verifies the
    reference in four, with gradcheck's verdict and the one wrong entry found."""
    monkeypatch.setattr(_MeanSquare, "wrong_at", wrong_at)
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randn(64, 128, generator=g, dtype=torch.float64) for _ in range(2))
    report = customgrad.check(_MeanSquare, x, y)
    assert report.method.name == REFERENCE and report.method.forwards <= 4
    leaves = [x.clone().requires_grad_(), y.clone().requires_grad_()]
    assert report.passed == torch.autograd.gradcheck(_MeanSquare.apply, leaves,
                                                     raise_exception=False)
    assert [b.mismatches for b in report.blocks] == ([0, 0] if wrong_at is None else [1, 0])
    if wrong_at is not None:
        assert (report.worst.row, report.worst.col) == (0, wrong_at)
