"""Swish (SiLU), y = x * sigmoid(x): a correct custom Function to start from.

Open it with File > Open (Ctrl+O) or: autograd-playground resources/examples/swish.py
"""

import torch


class Swish(torch.autograd.Function):
    """y = x * sigmoid(x); dy/dx = s + x s (1 - s) with s = sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        # s is computed in forward and reused in backward: save it instead of recomputing
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_output):
        x, s = ctx.saved_tensors
        return grad_output * (s + x * s * (1 - s))
