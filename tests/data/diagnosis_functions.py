"""A labelled set for the diagnosis: buggy Functions, each with the kind of its bug, and their
correct twins. Every kind is here at least twice, over different shapes and input counts.

``CASES`` lists ``(label, buggy, correct, make_args)``; ``make_args(generator)`` gives forward's
arguments (float64). For ``kink`` the "bug" is the point, not the code: the buggy entry is the
correct Function at a point where forward has a kink, its twin the same at a smooth point.
"""

from __future__ import annotations

import torch
from torch.autograd import Function


def rand(g, *shape):
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def away_from_zero(g, *shape):
    x = rand(g, *shape)
    return x + 0.5 * x.sign()


# ---------------------------------------------------------------- correct Functions


class Mul(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class MatMul(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * x ** 2


class Transpose(Function):
    @staticmethod
    def forward(ctx, x):
        return x.t().clone()

    @staticmethod
    def backward(ctx, g):
        return g.t()


class AddScaled(Function):
    @staticmethod
    def forward(ctx, a, b):
        return 2 * a + 3 * b

    @staticmethod
    def backward(ctx, g):
        return 2 * g, 3 * g


class MulAdd(Function):
    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        return a * b + c

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a, g


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class ExpScale(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.exp() * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * x.exp() * w, g * x.exp()


class AddBias(Function):
    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, g):
        return g, g.sum(0)


class ScaleRows(Function):
    """x [n, m] times s [n, 1]: s is broadcast over the columns."""

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * s, (g * x).sum(1, keepdim=True)


class Linear(Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.T + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.T @ x, g.sum(0)


class Triple(Function):
    @staticmethod
    def forward(ctx, x):
        return 3 * x

    @staticmethod
    def backward(ctx, g):
        return 3 * g


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x > 0).to(g.dtype)


class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.abs()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sign()


class Maximum(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.maximum(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        first = (x >= y).to(g.dtype)
        return g * first, g * (1 - first)


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.tanh() * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * (1 - x.tanh() ** 2)


# ---------------------------------------------------------------- buggy twins


class MulFactor(Mul):
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return 2 * g * y, g * x


class SinSignFlip(Sin):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * x.cos()


class CubeForgotThree(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x ** 2


class MatMulWeightTransposed(MatMul):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, g.T @ x


class MulTransposed(Mul):
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, (g * x).T


class TransposeForgot(Transpose):
    @staticmethod
    def backward(ctx, g):
        return g


class MulSwapped(Mul):
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * x, g * y


class AddScaledSwapped(AddScaled):
    @staticmethod
    def backward(ctx, g):
        return 3 * g, 2 * g


class MulAddSwapped(MulAdd):
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g, g * a


class SquareNoChain(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x


class ExpScaleNoChain(ExpScale):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return x.exp() * w, x.exp()


class LinearNoChain(Linear):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        ones = torch.ones_like(g)
        return ones @ w, ones.T @ x, ones.sum(0)


class AddBiasFirstRow(AddBias):
    @staticmethod
    def backward(ctx, g):
        return g, g[0]


class ScaleRowsFirstColumn(ScaleRows):
    @staticmethod
    def backward(ctx, g):
        x, s = ctx.saved_tensors
        return g * s, (g * x)[:, :1]


class LinearBiasNoSum(Linear):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.T @ x, g[-1]


class TripleFirstColumnLost(Triple):
    @staticmethod
    def backward(ctx, g):
        grad = 3 * g
        grad[:, 0] = 0
        return grad


class SquareMiddleRowsWrong(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = 2 * x * g
        grad[1:3] = x[1:3] * g[1:3]
        return grad


class MulLastRowLost(Mul):
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        grad_y = g * x
        grad_y[-1] = 0
        return g * y, grad_y


class SinInFloat32(Sin):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.float().sin().to(x.dtype)


class TanhInFloat32(Tanh):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x.float().tanh() * 2).to(x.dtype)


class MulNoisy(Mul):
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y + 1e-3 * torch.randn_like(g), g * x


class SinJittered(Sin):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos() * (1 + 0.01 * torch.rand_like(x))


class SquareMutatesSaved(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x.add_(1)
        return 2 * x * g


class TripleMutatesCtx(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = torch.full((), 3.0, dtype=x.dtype)
        return 3 * x

    @staticmethod
    def backward(ctx, g):
        ctx.scale.mul_(1.5)
        return ctx.scale * g


def _relu_at_zero(g):
    x = rand(g, 3, 4)
    x[0, 1] = 0.0
    x[2, 3] = 0.0
    return [x]


def _abs_near_zero(g):
    x = away_from_zero(g, 6)
    x[2] = 3e-7
    return [x]


def _tie(g):
    x, y = rand(g, 2, 3), rand(g, 2, 3)
    y[1, 1] = x[1, 1]
    return [x, y]


def _tie_free(g):
    return [rand(g, 2, 3), rand(g, 2, 3) + 5]


CASES = [
    ("factor", MulFactor, Mul, lambda g: [rand(g, 3, 4), rand(g, 3, 4)]),
    ("factor", SinSignFlip, Sin, lambda g: [rand(g, 5)]),
    ("factor", CubeForgotThree, Cube, lambda g: [away_from_zero(g, 2, 3)]),
    ("transposed", MatMulWeightTransposed, MatMul, lambda g: [rand(g, 3, 4), rand(g, 4, 4)]),
    ("transposed", MulTransposed, Mul, lambda g: [rand(g, 3, 3), rand(g, 3, 3)]),
    ("transposed", TransposeForgot, Transpose, lambda g: [rand(g, 3, 3)]),
    ("swapped", MulSwapped, Mul, lambda g: [rand(g, 2, 5), rand(g, 2, 5)]),
    ("swapped", AddScaledSwapped, AddScaled, lambda g: [rand(g, 4), rand(g, 4)]),
    ("swapped", MulAddSwapped, MulAdd, lambda g: [rand(g, 2, 3), rand(g, 2, 3), rand(g, 2, 3)]),
    ("ignores_grad_output", SquareNoChain, Square, lambda g: [rand(g, 3, 2)]),
    ("ignores_grad_output", ExpScaleNoChain, ExpScale, lambda g: [rand(g, 4), rand(g, 4)]),
    ("ignores_grad_output", LinearNoChain, Linear,
     lambda g: [rand(g, 3, 4), rand(g, 5, 4), rand(g, 5)]),
    ("missing_reduction", AddBiasFirstRow, AddBias, lambda g: [rand(g, 3, 5), rand(g, 5)]),
    ("missing_reduction", ScaleRowsFirstColumn, ScaleRows,
     lambda g: [rand(g, 4, 3), rand(g, 4, 1)]),
    ("missing_reduction", LinearBiasNoSum, Linear,
     lambda g: [rand(g, 3, 4), rand(g, 5, 4), rand(g, 5)]),
    ("region", TripleFirstColumnLost, Triple, lambda g: [rand(g, 3, 4)]),
    ("region", SquareMiddleRowsWrong, Square, lambda g: [away_from_zero(g, 5, 2)]),
    ("region", MulLastRowLost, Mul, lambda g: [rand(g, 3, 4), away_from_zero(g, 3, 4)]),
    ("kink", Relu, Relu, _relu_at_zero),
    ("kink", Abs, Abs, _abs_near_zero),
    ("kink", Maximum, Maximum, _tie),
    ("rounding", SinInFloat32, Sin, lambda g: [rand(g, 6)]),
    ("rounding", TanhInFloat32, Tanh, lambda g: [rand(g, 2, 3)]),
    ("nondeterministic", MulNoisy, Mul, lambda g: [rand(g, 2, 2), rand(g, 2, 2)]),
    ("nondeterministic", SinJittered, Sin, lambda g: [rand(g, 7)]),
    ("mutates", SquareMutatesSaved, Square, lambda g: [rand(g, 4)]),
    ("mutates", TripleMutatesCtx, Triple, lambda g: [rand(g, 2, 3)]),
]

#: the correct twins' points: the kink cases' twin is the same Function at a smooth point
TWIN_ARGS = {
    Relu: lambda g: [away_from_zero(g, 3, 4)],
    Abs: lambda g: [away_from_zero(g, 6)],
    Maximum: _tie_free,
}
