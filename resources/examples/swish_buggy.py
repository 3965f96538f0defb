"""Swish (SiLU) with a bug in backward: find it with the Jacobian heatmaps.

Hint: compare the analytic and numerical Jacobians on their diagonal, then look at the
product rule in backward.
"""

import torch


class SwishBuggy(torch.autograd.Function):
    """y = x * sigmoid(x), whose backward forgets one term of the product rule."""

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * x * s * (1 - s)
