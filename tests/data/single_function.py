"""A file with exactly one custom Function (plus a helper that is not one)."""

import torch
from torch.autograd import Function

HELPER = torch.nn.Identity


class Cube(Function):
    """x ** 3."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * grad_output
