"""Two correct Functions in one file: opening it without a class asks which one."""

from torch.autograd import Function


class Double(Function):
    """2 x."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad_output):
        return 2 * grad_output


class Triple(Function):  # <- second Function
    """3 x."""

    @staticmethod
    def forward(ctx, x):
        return 3 * x

    @staticmethod
    def backward(ctx, grad_output):
        return 3 * grad_output
