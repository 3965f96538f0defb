"""A backward returning zeros, not None, for a float buffer (trial2, F-zeros-nodiag): when
the buffer is differentiated (it requires grad, or none does and every float tensor is) the
check fails, as gradcheck, and the diagnosis names the input and the way out."""

from __future__ import annotations

import torch

import customgrad


class ScaleByBufferZeros(torch.autograd.Function):
    """y = x * running_scale; backward returns zeros for the buffer."""

    @staticmethod
    def forward(ctx, x, running_scale):
        ctx.save_for_backward(running_scale)
        return x * running_scale

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return g * s, torch.zeros_like(s)


def _args(buffer_grad: bool) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 8, generator=g, dtype=torch.float64).requires_grad_()
    s = torch.rand(3, 8, generator=g, dtype=torch.float64) + 0.5
    return [x, s.requires_grad_(buffer_grad)]


def test_zeros_for_a_differentiated_buffer_fail_as_gradcheck_and_say_leave_it_out():
    args = _args(True)
    assert not torch.autograd.gradcheck(ScaleByBufferZeros.apply, args, raise_exception=False)
    report = customgrad.check(ScaleByBufferZeros, *args)
    assert not report.passed
    first = report.diagnoses[0]
    assert first.kind == "no_gradient" and first.block is not None
    assert "running_scale" in first.block
    assert "returns zeros for running_scale" in first.detail
    assert "--no-grad running_scale" in first.detail


def test_zeros_for_a_buffer_not_differentiated_pass_as_gradcheck():
    args = _args(False)
    assert torch.autograd.gradcheck(ScaleByBufferZeros.apply, args, raise_exception=False)
    report = customgrad.check(ScaleByBufferZeros, *args)
    assert report.passed and not report.diagnoses
