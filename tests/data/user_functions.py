"""Custom autograd Functions used by the engine tests (correct ones, odd ones, broken ones).

Tests find offending lines by the ``# <-`` markers, so keep each marker on its line.
"""

import math

import torch
from torch.autograd import Function


class Square(Function):
    """x ** 2, correct, old (ctx) style."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output


class ScaleNewStyle(Function):
    """x * factor in the new style (forward without ctx, plus setup_context)."""

    @staticmethod
    def forward(x: torch.Tensor, factor: float = 2.0, bias: torch.Tensor | None = None):
        out = x * factor
        if bias is not None:
            out = out + bias
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, factor, bias = inputs
        ctx.factor = factor
        ctx.has_bias = bias is not None

    @staticmethod
    def backward(ctx, grad_output):
        grad_bias = grad_output if ctx.has_bias else None
        return grad_output * ctx.factor, None, grad_bias


class Annotated(Function):
    """Exercises spec derivation from annotations and defaults."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, y, scale: float, steps: int = 3,
                mask: torch.Tensor | None = None, flag=True, label: str = "a"):
        return x * scale + y


class Float32Only(Function):
    """sin(x) that refuses anything but float32 (so the numerical check cannot use float64)."""

    @staticmethod
    def forward(ctx, x):
        assert x.dtype == torch.float32, "float32 only"
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x.cos()


class Float32OnlyWrong(Function):
    """Float32Only with a wrong backward (sin instead of cos)."""

    @staticmethod
    def forward(ctx, x):
        assert x.dtype == torch.float32, "float32 only"
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * x.sin()


class SqrtNaN(Function):
    """sqrt(x), whose derivative is undefined (NaN) at x <= 0. At x = 0 the finite difference
    is NaN too (sqrt(-eps) is NaN), so both Jacobians hold NaN at the same entries."""

    @staticmethod
    def forward(ctx, x):
        y = x.sqrt()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        slope = torch.where(y > 0, 0.5 / y, math.nan)
        # a zero grad_output contributes nothing, even where the slope is undefined
        return torch.where(grad_output == 0, 0.0, grad_output * slope)


class NaNAnalyticOnly(Function):
    """2x whose backward puts NaN where x < 0 (the numerical Jacobian is finite there)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 2 * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return torch.where(x < 0, math.nan, 2.0) * grad_output


class IgnoresY(Function):
    """3x; y is not used and backward returns None for it."""

    @staticmethod
    def forward(ctx, x, y):
        return 3 * x

    @staticmethod
    def backward(ctx, grad_output):
        return 3 * grad_output, None


class ZeroGradY(Function):
    """x * 3; y is not used and backward returns zeros for it."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.y_shape = y.shape
        return x * 3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3, grad_output.new_zeros(ctx.y_shape)


class MissingYGradient(Function):
    """x + y whose backward forgets y (returns None): the y block is wrong."""

    @staticmethod
    def forward(ctx, x, y):
        return x + y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


class BackwardRaises(Function):
    """backward raises a ValueError."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise ValueError("backward is broken")  # <- BackwardRaises


class ForwardRaises(Function):
    """forward raises a RuntimeError from a helper call."""

    @staticmethod
    def forward(ctx, x):
        return x.reshape(7, 7)  # <- ForwardRaises

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class TooManyGradients(Function):
    """backward returns two gradients for one argument."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2, grad_output * 2  # <- TooManyGradients


class TooFewGradients(Function):
    """backward returns one gradient for two tensor arguments."""

    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output  # <- TooFewGradients


class WrongShapeGradient(Function):
    """backward returns a gradient of a shape that cannot be summed to x's."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.reshape(-1)[:1].repeat(5)  # <- WrongShapeGradient


class WrongDtypeGradient(Function):
    """backward returns a complex gradient for a real input (autograd refuses it; a float32
    gradient for a float64 input it casts)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output * 2).to(torch.complex128)  # <- WrongDtypeGradient


class GradientForConstant(Function):
    """backward returns a tensor for the int argument n."""

    @staticmethod
    def forward(ctx, x, n=2):
        ctx.n = n
        return x * n

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.n, grad_output.sum()  # <- GradientForConstant


class NonTensorOutput(Function):
    """forward returns a Python float."""

    @staticmethod
    def forward(ctx, x):
        return float(x.sum())  # <- NonTensorOutput

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class ModifiesGradOutput(Function):
    """backward scales grad_output in place."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        grad_output.mul_(2)  # <- ModifiesGradOutput
        return grad_output


class ShapeDependsOnValues(Function):
    """Keeps the positive entries only: the output's shape depends on the input's values."""

    @staticmethod
    def forward(ctx, x):
        return x[x > 0.25] * 1.0

    @staticmethod
    def backward(ctx, grad_output):
        return None


class NoTensorInput(Function):
    """forward takes only a number."""

    @staticmethod
    def forward(ctx, n=3):
        return torch.ones(n)

    @staticmethod
    def backward(ctx, grad_output):
        return None


class ArgsortOnly(Function):
    """Only an integer output: nothing to differentiate, nothing to descend on."""

    @staticmethod
    def forward(ctx, x):
        return x.argsort(dim=-1)

    @staticmethod
    def backward(ctx, grad_output):
        return None


class IdentityAlias(Function):
    """Identity whose backward hands its grad_output straight back (no copy): correct."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class StrayGradient(Function):
    """2 * x element-wise; backward also leaks the first entry's gradient into the last
    input element, far from the diagonal, where the true Jacobian is zero."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad_output):
        grad = 2 * grad_output
        grad = grad.reshape(-1).clone()
        grad[-1] = grad[-1] + grad_output.reshape(-1)[0]  # <- the stray entry
        return grad.reshape(grad_output.shape)


class MissingCross(Function):
    """y = x, except y[0] also adds x[-1]; backward forgets that cross term, so the
    analytic Jacobian is zero at (0, last) where the numerical one is 1."""

    @staticmethod
    def forward(ctx, x):
        y = x.clone().reshape(-1)
        y[0] = y[0] + x.reshape(-1)[-1]
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clone()  # <- misses d y[0] / d x[-1]


class Slow(Function):
    """x * 2 that counts its calls and reads a value out of the tensor (so it cannot be
    vmapped): finite differences then take one forward per element, for cancellation tests."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        Slow.calls += 1
        float(x.sum())  # a data-dependent read: torch.vmap refuses it
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        Slow.calls += 1
        float(grad_output.sum())
        return grad_output * 2
