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
