"""Functions whose backward is wrong in a known way, for the landscape's angle and length."""

import torch
from torch.autograd import Function

#: a fixed, non-symmetric matrix (forward is y = A x)
A = torch.tensor([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [-1.0, 0.0, 1.0]], dtype=torch.float64)


class HalfGradient(Function):
    """y = 2 x; backward gives half of the true gradient (it forgets the 2, and halves it)."""

    @staticmethod
    def forward(ctx, x: "3"):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return grad


class Transposed(Function):
    """y = A x; backward multiplies by A instead of A^T."""

    @staticmethod
    def forward(ctx, x: "3,1"):
        return A.to(x.dtype) @ x

    @staticmethod
    def backward(ctx, grad):
        return A.to(grad.dtype) @ grad


class Squares(Function):
    """y = x * x, entry by entry: a stack of inputs gives the stack of outputs. Counts the
    calls of its forward."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        Squares.calls += 1
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class ShapeChecked(Function):
    """Squares that refuses anything but a matrix (a stack raises)."""

    @staticmethod
    def forward(ctx, x):
        Squares.calls += 1
        if x.dim() != 2:
            raise ValueError(f"x must be a matrix, not of shape {tuple(x.shape)}")
        ctx.save_for_backward(x)
        return x * x

    backward = Squares.backward


class SumScaled(Function):
    """y = x * sum(x): on a stack the sum runs over all of it (no error, other numbers)."""

    @staticmethod
    def forward(ctx, x):
        Squares.calls += 1
        ctx.save_for_backward(x)
        return x * x.sum()

    backward = Squares.backward
