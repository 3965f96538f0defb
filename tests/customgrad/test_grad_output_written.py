"""A backward writing into its grad_output in place (trial2, F-inplace-parity): gradcheck
gives each backward call a fresh grad_output and judges it; customgrad stopped with an error
and no verdict. Now every Jacobian entry is judged as in gradcheck, and the failed sub-check
``grad_output`` says why the Function fails anyway (a real reason: ``y.sum().backward()``
raises), naming the line."""

from __future__ import annotations

import pytest
import torch

import customgrad


class InplaceExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g.mul_(x.exp())  # right, but writes into grad_output


class InplaceExpWrong(InplaceExp):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        g *= 2 * x.exp()  # wrong by a factor 2, and in place
        return g


class InplaceTwoOutputs(torch.autograd.Function):
    """Two outputs; backward writes into the second grad_output only."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 2 * x, x * x

    @staticmethod
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        g2.mul_(2 * x)
        return 2 * g1 + g2


def _gradcheck(function, x) -> bool:
    return torch.autograd.gradcheck(function.apply, (x.detach().clone().requires_grad_(),),
                                    raise_exception=False)


def _x() -> torch.Tensor:
    return torch.randn(3, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def test_a_right_backward_writing_into_grad_output_agrees_entry_by_entry_and_fails_why():
    x = _x()
    assert _gradcheck(InplaceExp, x)
    report = customgrad.check(InplaceExp, x.clone().requires_grad_())
    assert report.agrees and all(b.passed for b in report.blocks)  # gradcheck's entries
    assert not report.passed and report.checks["grad_output"].status == "failed"
    detail = report.checks["grad_output"].detail
    assert "test_grad_output_written.py:" in detail and "clone()" in detail
    # the reason: the first loss anyone writes hands backward an expanded grad_output
    with pytest.raises(RuntimeError, match="single memory location"):
        InplaceExp.apply(x.clone().requires_grad_()).sum().backward()


def test_a_wrong_backward_writing_into_grad_output_fails_as_in_gradcheck():
    x = _x()
    assert not _gradcheck(InplaceExpWrong, x)
    report = customgrad.check(InplaceExpWrong, x.clone().requires_grad_())
    assert not report.passed
    assert report.diagnoses and report.diagnoses[0].kind == "factor", report.diagnoses
    assert report.checks["grad_output"].status == "failed"


def test_writing_into_one_of_two_grad_outputs_is_judged_too():
    x = _x()
    assert _gradcheck(InplaceTwoOutputs, x)
    report = customgrad.check(InplaceTwoOutputs, x.clone().requires_grad_())
    assert report.agrees and not report.passed
    assert "grad_output 1 in place" in report.checks["grad_output"].detail
