"""Functions whose first order is right, with a right or wrong double backward, for the
second-order check against gradgradcheck."""

from __future__ import annotations

import torch


class Cube(torch.autograd.Function):
    """x^3: backward 3 x^2 g, differentiable (correct double backward)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


class CubeDetached(Cube):
    """Bug: x detached in backward, so d grad_x / d x comes out zero."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


class CubeGradDetached(Cube):
    """Bug: grad_output detached, so d grad_x / d grad_output comes out zero."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g.detach() * 3 * x ** 2


class _Derivative(torch.autograd.Function):
    """3 x^2 with a wrong derivative of its own (3 x where 6 x belongs)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 3 * x ** 2

    @staticmethod
    def backward(ctx, gg):
        (x,) = ctx.saved_tensors
        return gg * 3 * x


class CubeHalfSecond(Cube):
    """Bug: backward goes through a Function whose own backward is half the truth."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _Derivative.apply(x)


class Multiply(torch.autograd.Function):
    """x * w, two inputs: the second derivatives cross (d grad_x / d w = g)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x


class MultiplyDetachedCross(Multiply):
    """Bug: w detached in grad_x, so the cross derivative d grad_x / d w comes out zero."""

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w.detach(), g * x


class CubeOnce(Cube):
    """Correct first order, no double backward (@once_differentiable)."""

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


class CubeNumpy(Cube):
    """Right first order; backward leaves torch (no @once_differentiable): autograd sees
    constant gradients, and gradgradcheck fails it."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.from_numpy(3 * x.detach().numpy() ** 2 * g.detach().numpy())
