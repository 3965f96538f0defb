"""Two Functions in one file (the playground asks which one to open).

AddBias returns a bias gradient with the batch dimension still in it: legal, because autograd
sums it to the bias's shape. Set b's shape to 8 on the left (x is 3x8), then open the
Inspector tab to see it happen.
"""

import torch


class AddBias(torch.autograd.Function):
    """y = x + b, with b broadcast over the rows of x."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, grad_output):
        # grad_output has x's shape [N, M]; b has shape [M]. Returning the [N, M] tensor for b
        # works: autograd sums the extra leading dimension away.
        return grad_output, grad_output


class Square(torch.autograd.Function):
    """y = x ** 2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output
