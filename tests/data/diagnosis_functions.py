"""A labelled set for the diagnosis: buggy Functions, each with the kind of its bug, and their
correct twins. Every kind is here at least twice, over different shapes and input counts.

``CASES`` lists ``(label, buggy, correct, make_args)``; ``make_args(generator)`` gives forward's
arguments (float64; complex128 for the complex ones). For ``kink`` the "bug" is the point, not
the code: the buggy entry is the correct Function at a point where forward has a kink, its
twin the same at a smooth point; so for ``undefined``, at a point on the edge of forward's
domain (sqrt and log at 0, acos at 1: forward is NaN a step away).
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from tests.data import complex_functions as cf
from tests.data.user_functions import SqrtNaN  # sqrt, its slope NaN at 0


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


class Acos(Function):
    """acos(x): -1 / sqrt(1 - x^2), infinite at x = 1, nothing where grad_output is 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.acos()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(g == 0, 0.0, -g / (1 - x * x).sqrt())


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


class Swish(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * s * (1 + x * (1 - s))


class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.nn.functional.softplus(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x)


class LeakyRelu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.1 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, 0.1 * g)


class Embedding(Function):
    """Rows of ``weight`` picked by ``idx`` (int64, with repeats)."""

    @staticmethod
    def forward(ctx, weight, idx):
        ctx.save_for_backward(idx)
        ctx.rows = weight.shape[0]
        return weight[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        grad = torch.zeros(ctx.rows, *g.shape[1:], dtype=g.dtype)
        grad.index_add_(0, idx, g)
        return grad, None


class Tile2(Function):
    """x twice, one after the other."""

    @staticmethod
    def forward(ctx, x):
        ctx.n = x.shape[0]
        return torch.cat([x, x])

    @staticmethod
    def backward(ctx, g):
        return g[:ctx.n] + g[ctx.n:]


class GatherColumns(Function):
    """Columns of x picked by ``idx`` (int64, with repeats)."""

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x[:, idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        grad.index_add_(1, idx, g)
        return grad, None


class SinDouble(Function):
    """sin(2x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (2 * x).sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * (2 * x).cos()


class Softmax(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, -1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(-1, keepdim=True))


class BatchMatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.transpose(-1, -2), a.transpose(-1, -2) @ g


class LayerScale(Function):
    """x [n, d] times gamma [d], broadcast over the rows."""

    @staticmethod
    def forward(ctx, x, gamma):
        ctx.save_for_backward(x, gamma)
        return x * gamma

    @staticmethod
    def backward(ctx, g):
        x, gamma = ctx.saved_tensors
        return g * gamma, (g * x).sum(0)


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp()


class Round(Function):
    """round, with its true derivative: 0 (away from the half-integers)."""

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g * 0


class Sign(Function):
    """sign, with its true derivative: 0 (away from 0)."""

    @staticmethod
    def forward(ctx, x):
        return x.sign()

    @staticmethod
    def backward(ctx, g):
        return g * 0


class DropoutSeeded(Function):
    """Dropout whose mask comes from a generator seeded in forward: the same at every call."""

    @staticmethod
    def forward(ctx, x):
        keep = (torch.rand(x.shape, generator=torch.Generator().manual_seed(0),
                           dtype=x.dtype) >= 0.5).to(x.dtype) * 2
        ctx.save_for_backward(keep)
        return x * keep

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g * keep


# ---------------------------------------------------------------- their bugs



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


class MulNoneForY(Mul):
    """y is differentiated (it requires grad), but backward returns None for it."""

    @staticmethod
    def backward(ctx, g):
        _x, y = ctx.saved_tensors
        return g * y, None


class MulGradOutputForY(Mul):
    """y's gradient is grad_output itself: x, the derivative of x * y for y, is missing (a
    student's first week, trial3)."""

    @staticmethod
    def backward(ctx, g):
        _x, y = ctx.saved_tensors
        return g * y, g


class ExpGradOutput(Exp):
    """grad_output handed on: exp(x), its own derivative, missing."""

    @staticmethod
    def backward(ctx, g):
        return g


class MatMulNoneForWeight(MatMul):
    """The weight, chosen to be differentiated, gets None (a layer whose weight was fixed)."""

    @staticmethod
    def backward(ctx, g):
        _x, w = ctx.saved_tensors
        return g @ w.T, None


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


class SwishHalfNegative(Swish):
    """Right for x >= 0, half the gradient for x < 0."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        d = s * (1 + x * (1 - s))
        return g * torch.where(x < 0, d / 2, d)


class SoftplusLinearAboveOne(Softplus):
    """Takes softplus for linear (slope 1) above x = 1: wrong there."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x > 1, torch.ones_like(x), torch.sigmoid(x))


class LeakyReluSlopeLost(LeakyRelu):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, torch.zeros_like(g))


class EmbeddingAssigned(Embedding):
    """grad[idx] = g: a repeated index keeps one row's gradient."""

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        grad = torch.zeros(ctx.rows, *g.shape[1:], dtype=g.dtype)
        grad[idx] = g
        return grad, None


class Tile2Copied(Tile2):
    """copy_ where add_ was meant: the second half's gradient overwrites the first's."""

    @staticmethod
    def backward(ctx, g):
        grad = torch.zeros_like(g[:ctx.n])
        grad.copy_(g[:ctx.n])
        grad.copy_(g[ctx.n:])
        return grad


class GatherColumnsAssigned(GatherColumns):
    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        grad = torch.zeros(ctx.shape, dtype=g.dtype)
        grad[:, idx] = g
        return grad, None


class SinDoubleInPlace(SinDouble):
    """Doubles its input in place (without mark_dirty) and saves it: the caller's x changes."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class SquareScratchesInput(Square):
    """Keeps x on ctx, then reuses its memory as scratch: backward reads the scratch."""

    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        y = x * x
        x.mul_(0.5)
        return y

    @staticmethod
    def backward(ctx, g):
        return 2 * ctx.x * g


class SwishInFloat32(Swish):
    """Returns float32 whatever comes in (a kernel with one precision)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        x32 = x.float()
        return x32 * torch.sigmoid(x32)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return (g * s * (1 + x * (1 - s))).to(x.dtype)


class ExpInFloat32(Exp):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.float().exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g * x.exp()).to(x.dtype)


class SoftmaxDoubled(Softmax):
    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return 2 * y * (g - (g * y).sum(-1, keepdim=True))


class BatchMatMulTransposed(BatchMatMul):
    """b's gradient transposed: g^T a where a^T g is meant."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.transpose(-1, -2), g.transpose(-1, -2) @ a


class LayerScaleFirstRow(LayerScale):
    @staticmethod
    def backward(ctx, g):
        x, gamma = ctx.saved_tensors
        return g * gamma, (g * x)[0]


class SwishNoChain(Swish):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return s * (1 + x * (1 - s))


class BatchMatMulSwapped(BatchMatMul):
    """a and b of one shape: their gradients in the wrong order."""

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return a.transpose(-1, -2) @ g, g @ b.transpose(-1, -2)


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


def _with_zeros(g):
    x = away_from_zero(g, 3, 4).abs()
    x[0, 1] = x[2, 3] = 0.0
    return [x]


def _at_one(g):
    x = rand(g, 5).tanh() * 0.9
    x[3] = 1.0
    return [x]


def crand(g, *shape):
    return torch.randn(*shape, generator=g, dtype=torch.complex128)


def _tie_free(g):
    return [rand(g, 2, 3), rand(g, 2, 3) + 5]


class RoundStraightThrough(Round):
    """Quantisation's straight-through estimator: the identity as round's gradient."""

    @staticmethod
    def backward(ctx, g):
        return g


class SignClippedStraightThrough(Sign):
    """A binarised network's sign, with hardtanh's gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sign()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1)


class DropoutDrawn(DropoutSeeded):
    """Dropout drawing its mask from the global generator: another mask at every call."""

    @staticmethod
    def forward(ctx, x):
        keep = (torch.rand(x.shape, dtype=x.dtype) >= 0.5).to(x.dtype) * 2
        ctx.save_for_backward(keep)
        return x * keep


class TanhNoisy(Tanh):
    """Noise injection: 2 tanh(x) plus fresh Gaussian noise at every call."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.tanh() * 2 + 0.01 * torch.randn(x.shape, dtype=x.dtype)


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
    ("undefined", SqrtNaN, SqrtNaN, _with_zeros),
    ("undefined", Acos, Acos, _at_one),
    ("rounding", SinInFloat32, Sin, lambda g: [rand(g, 6)]),
    ("rounding", TanhInFloat32, Tanh, lambda g: [rand(g, 2, 3)]),
    ("nondeterministic", MulNoisy, Mul, lambda g: [rand(g, 2, 2), rand(g, 2, 2)]),
    ("nondeterministic", SinJittered, Sin, lambda g: [rand(g, 7)]),
    ("mutates", SquareMutatesSaved, Square, lambda g: [rand(g, 4)]),
    ("mutates", TripleMutatesCtx, Triple, lambda g: [rand(g, 2, 3)]),
    ("region", SwishHalfNegative, Swish, lambda g: [rand(g, 3, 4)]),
    ("region", SoftplusLinearAboveOne, Softplus, lambda g: [2 * rand(g, 12)]),
    ("region", LeakyReluSlopeLost, LeakyRelu, lambda g: [away_from_zero(g, 2, 5)]),
    ("accumulation", EmbeddingAssigned, Embedding,
     lambda g: [rand(g, 5, 3), torch.tensor([0, 2, 2, 4, 0, 1])]),
    ("accumulation", Tile2Copied, Tile2, lambda g: [rand(g, 4, 2)]),
    ("accumulation", GatherColumnsAssigned, GatherColumns,
     lambda g: [rand(g, 2, 4), torch.tensor([3, 0, 3, 1, 1])]),
    ("mutates", SinDoubleInPlace, SinDouble, lambda g: [rand(g, 5)]),
    ("mutates", SquareScratchesInput, Square, lambda g: [rand(g, 2, 3)]),
    ("rounding", SwishInFloat32, Swish, lambda g: [rand(g, 3, 4)]),
    ("rounding", ExpInFloat32, Exp, lambda g: [rand(g, 6)]),
    ("factor", SoftmaxDoubled, Softmax, lambda g: [rand(g, 3, 4)]),
    ("transposed", BatchMatMulTransposed, BatchMatMul,
     lambda g: [rand(g, 2, 3, 3), rand(g, 2, 3, 3)]),
    ("missing_reduction", LayerScaleFirstRow, LayerScale, lambda g: [rand(g, 4, 3), rand(g, 3)]),
    ("ignores_grad_output", SwishNoChain, Swish, lambda g: [rand(g, 7)]),
    ("swapped", BatchMatMulSwapped, BatchMatMul, lambda g: [rand(g, 2, 3, 3), rand(g, 2, 3, 3)]),
    ("kink", LeakyRelu, LeakyRelu, lambda g: [torch.tensor([-1.0, 0.0, 2.0, 0.0, 0.5],
                                                            dtype=torch.float64)]),
    ("conjugate", cf.AbsSquaredConj, cf.AbsSquared, lambda g: [crand(g, 3, 4)]),
    ("conjugate", cf.SquareNoConj, cf.Square, lambda g: [crand(g, 5)]),
    ("conjugate", cf.CisGradNoConj, cf.Cis, lambda g: [rand(g, 6)]),
    ("conjugate", cf.MultiplyConjGrad, cf.Multiply, lambda g: [crand(g, 2, 3), crand(g, 2, 3)]),
    ("conjugate", cf.ScaleNoConj, cf.Scale, lambda g: [rand(g, 2, 3), crand(g, 2, 3)]),
    ("factor", cf.MultiplyTwice, cf.Multiply, lambda g: [crand(g, 3), crand(g, 3)]),
    # chosen (requires_grad), as gradcheck differentiates them: None is a failure there
    ("no_gradient", MulNoneForY, Mul,
     lambda g: [rand(g, 3, 4).requires_grad_(), rand(g, 3, 4).requires_grad_()]),
    ("no_gradient", MatMulNoneForWeight, MatMul,
     lambda g: [rand(g, 2, 3).requires_grad_(), rand(g, 3, 4).requires_grad_()]),
    ("unchanged", MulGradOutputForY, Mul, lambda g: [rand(g, 3, 4), rand(g, 3, 4)]),
    ("unchanged", ExpGradOutput, Exp, lambda g: [rand(g, 5)]),
    ("straight_through", RoundStraightThrough, Round, lambda g: [3 * rand(g, 3, 4)]),
    ("straight_through", SignClippedStraightThrough, Sign, lambda g: [rand(g, 7)]),
    ("random_forward", DropoutDrawn, DropoutSeeded, lambda g: [rand(g, 3, 4)]),
    ("random_forward", TanhNoisy, Tanh, lambda g: [rand(g, 2, 5)]),
]

#: the correct twins' points: the kink cases' twin is the same Function at a smooth point
TWIN_ARGS = {
    Relu: lambda g: [away_from_zero(g, 3, 4)],
    Abs: lambda g: [away_from_zero(g, 6)],
    Maximum: _tie_free,
    LeakyRelu: lambda g: [away_from_zero(g, 2, 5)],
    SqrtNaN: lambda g: [away_from_zero(g, 3, 4).abs()],
    Acos: lambda g: [rand(g, 5).tanh() * 0.9],
}
