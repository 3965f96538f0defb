"""Adversarial review of the engine's changes of 2026-11-26 (issue 32): Functions shaped like
users' own, each compared with torch.autograd.gradcheck's verdict (and the diagnosis a
student reads)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.autograd import Function

import customgrad


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
