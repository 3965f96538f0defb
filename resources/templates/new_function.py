"""My Function: y = scale * x * sin(x).

Edit it, then press Apply (Ctrl+Return): the playground
compares your backward with finite differences.
"""

import torch


class MyFunction(torch.autograd.Function):
    """y = scale * x * sin(x), element by element."""

    @staticmethod
    def forward(ctx, x, scale=1.0):
        # ctx comes first, then the inputs: a tensor (x)
        # gets a shape on the left, a number (scale) is
        # a constant.
        # Tensors that backward needs:
        ctx.save_for_backward(x)
        # Anything else is stored directly on ctx:
        ctx.scale = scale
        return scale * x * torch.sin(x)

    @staticmethod
    def backward(ctx, grad_output):
        # One gradient per output of forward: dL/dy.
        (x,) = ctx.saved_tensors
        # Chain rule: dL/dx = dL/dy * dy/dx, where
        # dy/dx = scale * (sin(x) + x * cos(x)).
        dy_dx = torch.sin(x) + x * torch.cos(x)
        # Return one gradient per input of forward, in
        # order; None for non-tensors (scale).
        return grad_output * ctx.scale * dy_dx, None
