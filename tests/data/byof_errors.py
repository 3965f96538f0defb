"""One Function per mistake a user can make; the app must show each one with its file:line.

Tests find the offending lines by the ``# <-`` markers, so keep each marker on its line.
"""

import math

import torch
from torch.autograd import Function


class ForwardRaises(Function):
    @staticmethod
    def forward(ctx, x):
        raise ValueError("forward is broken")  # <- ForwardRaises

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class BackwardRaises(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise ValueError("backward is broken")  # <- BackwardRaises


class WrongCount(Function):
    @staticmethod
    def forward(ctx, x, n=2):
        ctx.n = n
        return x * n

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.n  # <- WrongCount


class WrongShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.reshape(-1)[:1].repeat(5)  # <- WrongShape


class WrongDtype(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output * 2).to(torch.complex64)  # <- WrongDtype


class WrongDevice(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output * 2).to("meta")  # <- WrongDevice


class GradForConstant(Function):
    @staticmethod
    def forward(ctx, x, n=2):
        ctx.n = n
        return x * n

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.n, grad_output.sum()  # <- GradForConstant


class NonTensorOutput(Function):
    @staticmethod
    def forward(ctx, x):
        return float(x.sum())  # <- NonTensorOutput

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class NaNOutput(Function):
    """log(x): NaN wherever x < 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output / x


class NaNGradient(Function):
    """2 x, whose backward puts NaN where x < 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 2 * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.where(x < 0, math.nan, 2.0) * grad_output
