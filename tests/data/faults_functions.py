"""Small Functions for tests/test_faults.py, one per fault; each faulty line carries a
``# <- Name`` marker so the tests can check the reported line number. Keep markers in place.
"""

import math

import torch
from torch.autograd import Function


class FaultPlain(Function):
    """A correct Function: 2 x (the starting point for shape faults)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


class FaultConst(Function):
    """A correct Function with a float and an int constant: x * k * n."""

    @staticmethod
    def forward(ctx, x, k=2.0, n=3):
        ctx.k, ctx.n = k, n
        return x * k * n

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.k * ctx.n, None, None


class FaultFloat32Only(Function):
    """Works in float32 only."""

    @staticmethod
    def forward(ctx, x):
        assert x.dtype == torch.float32, "FaultFloat32Only needs float32"  # <- FaultFloat32Only
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


class FaultNeedsMatrix(Function):
    """Rejects anything but a 2-D input."""

    @staticmethod
    def forward(ctx, x):
        if x.dim() != 2:
            raise ValueError(f"needs a matrix, got {x.dim()} dims")  # <- FaultNeedsMatrix
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


class FaultForwardRaises(Function):
    @staticmethod
    def forward(ctx, x):
        raise RuntimeError("fault in forward")  # <- FaultForwardRaises

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class FaultBackwardRaises(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise KeyError("fault in backward")  # <- FaultBackwardRaises


class FaultTooManyGradients(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2, grad_output * 2  # <- FaultTooManyGradients


class FaultTooFewGradients(Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output  # <- FaultTooFewGradients


class FaultWrongShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.reshape(-1)[:1].repeat(7)  # <- FaultWrongShape


class FaultWrongDtype(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output * 2).to(torch.complex64)  # <- FaultWrongDtype


class FaultNonTensorOutput(Function):
    @staticmethod
    def forward(ctx, x):
        return "not a tensor"  # <- FaultNonTensorOutput

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class FaultNaNOutput(Function):
    @staticmethod
    def forward(ctx, x):
        return x * math.nan

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * math.nan


class FaultInfGradient(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * math.inf


class FaultMutatesGradOutput(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        grad_output.mul_(2)  # <- FaultMutatesGradOutput
        return grad_output


class FaultWrongBackward(Function):
    """Runs fine but its backward is off by a factor: the check merely disagrees."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3


class FaultGradForConstant(Function):
    @staticmethod
    def forward(ctx, x, n=2):
        ctx.n = n
        return x * n

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.n, grad_output.sum()  # <- FaultGradForConstant


class FaultInfiniteLoop(Function):
    """A backward that never returns (pure Python, so it can be interrupted)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        n = 0
        while n >= 0:  # <- FaultInfiniteLoop
            n += 1
        return grad_output * 2


class FaultInterruptInForward(Function):
    """Raises KeyboardInterrupt itself (not Ctrl+C): the Function's error, like any other."""

    @staticmethod
    def forward(ctx, x):
        raise KeyboardInterrupt("stop right there")  # <- FaultInterruptInForward

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class FaultInterruptInBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise KeyboardInterrupt("not now")  # <- FaultInterruptInBackward


class FaultExitInBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise SystemExit(3)  # <- FaultExitInBackward


class FaultForgotChainRule(Function):
    """The classic slip: d(w*x)/dw and d(w*x)/dx, but not times grad_output (and the saved
    inputs, which require grad, returned as they are)."""

    @staticmethod
    def forward(ctx, w, x):
        ctx.save_for_backward(w, x)
        return w * x

    @staticmethod
    def backward(ctx, grad_output):
        w, x = ctx.saved_tensors
        return x, w


class FaultSparseGradient(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return (grad_output * 2).to_sparse()  # <- FaultSparseGradient
