"""The exact reference: autograd through forward, where forward allows it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.autograd import Function

from customgrad.checking.jacobian import compare
from customgrad.checking.reference import reference_jacobian
from tests.data.diagnosis_functions import Linear, LinearBiasNoSum, SinInFloat32


def _problem_args(name):
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings

    problem = build(Settings(target=name, dtype="float64"))
    return problem.function, problem.args


@pytest.mark.parametrize("name", ["killhead", "killhead_bug", "linear_bug", "abs_uv"])
def test_the_reference_is_the_true_jacobian_whatever_backward_says(name):
    function, args = _problem_args(name)
    report = compare(function, args)
    exact = reference_jacobian(function, args, report)
    assert exact is not None
    # finite differences carry about 1e-10 of error here (float64, eps 1e-6): the reference
    # is within the check's own tolerance of them, and free of their noise
    torch.testing.assert_close(exact, report.numerical.double(), rtol=1e-6, atol=1e-6)


def test_a_buggy_backward_does_not_leak_into_the_reference():
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(3, 4, generator=g, dtype=torch.float64),
            torch.randn(5, 4, generator=g, dtype=torch.float64),
            torch.randn(5, generator=g, dtype=torch.float64)]
    bug = compare(LinearBiasNoSum, args)
    right = compare(Linear, args)
    assert not bug.passed and right.passed
    torch.testing.assert_close(reference_jacobian(LinearBiasNoSum, args, bug),
                               right.analytic.double(), rtol=1e-12, atol=1e-12)


class NumpySquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.square(x.detach().numpy()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class RoundedScale(Function):
    """forward's rounding has a zero derivative for autograd, a step for finite differences."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 1e6) / 1e6 * 3

    @staticmethod
    def backward(ctx, g):
        return 3 * g


@pytest.mark.parametrize("function", [NumpySquare, RoundedScale, SinInFloat32])
def test_no_reference_where_forward_cannot_be_differentiated(function):
    x = torch.randn(6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    report = compare(function, [x])
    assert reference_jacobian(function, [x], report) is None
