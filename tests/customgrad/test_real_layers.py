"""Custom autograd Functions written as people write them (attention with a mask, conv with
a fixed filter, norms with running statistics, gather/scatter/embedding, in-place forwards,
complex layers, straight-through estimators, views...), each correct or with the bug people
make in it. tests/customgrad/test_real_layers.py holds customgrad's verdicts to gradcheck's
on them. Our own code, written for those tests.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.autograd import Function
from torch.autograd.function import once_differentiable

import customgrad
from customgrad import cli
from customgrad.errors import FunctionError
from tests.data.diagnosis_functions import ScaleRows  # x [n, m] * s [n, 1], broadcast

# ---- attention / softmax with a mask buffer ------------------------------------------------


class MaskedSoftmax(Function):
    """softmax(x + mask) over the last dim; ``mask`` is an additive float buffer (0 or -1e4)
    that is never differentiated."""

    @staticmethod
    def forward(ctx, x, mask, dim=-1):
        y = torch.softmax(x + mask, dim=dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None, None


class MaskedSoftmaxNoCentering(MaskedSoftmax):
    """The classic softmax bug: ``y * g``, the Jacobian's diagonal only."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * g, None, None


class Attention(Function):
    """Scaled dot-product attention ``softmax(q k^T / sqrt(d) + mask) v`` with a float mask."""

    @staticmethod
    def forward(ctx, q, k, v, mask):
        scale = 1.0 / math.sqrt(q.shape[-1])
        p = torch.softmax(q @ k.transpose(-1, -2) * scale + mask, dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gv = p.transpose(-1, -2) @ g
        gp = g @ v.transpose(-1, -2)
        gs = p * (gp - (gp * p).sum(-1, keepdim=True)) * ctx.scale
        return gs @ k, gs.transpose(-1, -2) @ q, gv, None


class AttentionUnscaledKeyGrad(Attention):
    """The key's gradient without the 1/sqrt(d) (the query's has it)."""

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gv = p.transpose(-1, -2) @ g
        gp = g @ v.transpose(-1, -2)
        gs = p * (gp - (gp * p).sum(-1, keepdim=True))
        return gs @ k * ctx.scale, gs.transpose(-1, -2) @ q, gv, None


class AttentionWithWeights(Function):
    """Returns (out, weights) as nn.MultiheadAttention does; backward takes both gradients."""

    @staticmethod
    def forward(ctx, q, k, v):
        p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v, p

    @staticmethod
    def backward(ctx, g, gp_out):
        q, k, v, p = ctx.saved_tensors
        gp = g @ v.transpose(-1, -2) + gp_out
        gs = p * (gp - (gp * p).sum(-1, keepdim=True))
        return gs @ k, gs.transpose(-1, -2) @ q, p.transpose(-1, -2) @ g


class AttentionWeightsGradIgnored(AttentionWithWeights):
    """"Nobody differentiates the weights": their gradient is dropped."""

    @staticmethod
    def backward(ctx, g, gp_out):
        q, k, v, p = ctx.saved_tensors
        gp = g @ v.transpose(-1, -2)
        gs = p * (gp - (gp * p).sum(-1, keepdim=True))
        return gs @ k, gs.transpose(-1, -2) @ q, p.transpose(-1, -2) @ g


class AttentionWeightsNonDifferentiable(AttentionWeightsGradIgnored):
    """The same backward, with the weights marked non-differentiable: right."""

    @staticmethod
    def forward(ctx, q, k, v):
        p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        ctx.save_for_backward(q, k, v, p)
        ctx.mark_non_differentiable(p)
        return p @ v, p


# ---- convolutions with a fixed filter ------------------------------------------------------


class Conv1dFixed(Function):
    """conv1d of x [batch, channels, n] with a fixed weight, stride and padding keywords."""

    @staticmethod
    def forward(ctx, x, weight, stride=1, padding=1):
        ctx.save_for_backward(weight)
        ctx.conf = (stride, padding, x.shape)
        return F.conv1d(x, weight, stride=stride, padding=padding)

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        stride, padding, shape = ctx.conf
        gx = torch.nn.grad.conv1d_input(shape, weight, g, stride=stride, padding=padding)
        return gx, None, None, None


class Conv1dStridedNoOutputPadding(Conv1dFixed):
    """Strided: the adjoint by conv_transpose1d without output_padding, one sample short
    where (n + 2 padding - k) is not a multiple of the stride."""

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        stride, padding, _ = ctx.conf
        return (F.conv_transpose1d(g, weight, stride=stride, padding=padding),
                None, None, None)


class Conv2dDilated(Function):
    """conv2d with a fixed weight, dilation 2, 'same'-style padding."""

    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(weight)
        ctx.shape = x.shape
        return F.conv2d(x, weight, padding=2, dilation=2)

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        return torch.nn.grad.conv2d_input(ctx.shape, weight, g, padding=2, dilation=2), None


class Conv2dDilationForgotten(Conv2dDilated):
    """The backward written for dilation 1 (padding kept so the shapes still match)."""

    @staticmethod
    def backward(ctx, g):
        (weight,) = ctx.saved_tensors
        return F.conv_transpose2d(g, weight, padding=1), None


# ---- normalisation -------------------------------------------------------------------------


class LayerNorm(Function):
    """Layer norm over the last dim with an affine weight and bias; ``eps`` a keyword."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        mu = x.mean(-1, keepdim=True)
        rstd = (x.var(-1, unbiased=False, keepdim=True) + eps).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gxhat = g * weight
        gx = rstd * (gxhat - gxhat.mean(-1, keepdim=True)
                     - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        dims = tuple(range(g.dim() - 1))
        return gx, (g * xhat).sum(dims), g.sum(dims), None


class LayerNormNoMeanTerm(LayerNorm):
    """The input gradient without its mean term."""

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gxhat = g * weight
        gx = rstd * (gxhat - xhat * (gxhat * xhat).mean(-1, keepdim=True))
        dims = tuple(range(g.dim() - 1))
        return gx, (g * xhat).sum(dims), g.sum(dims), None


class BatchNormTrain(Function):
    """Batch norm in training mode over the batch dim: the running statistics (buffers)
    updated in place in forward, never differentiated."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum=0.1, eps=1e-5):
        mu = x.mean(0)
        var = x.var(0, unbiased=False)
        with torch.no_grad():
            running_mean.mul_(1 - momentum).add_(momentum * mu)
            running_var.mul_(1 - momentum).add_(momentum * x.var(0, unbiased=True))
        rstd = (var + eps).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        gxhat = g * weight
        gx = rstd * (gxhat - gxhat.mean(0) - xhat * (gxhat * xhat).mean(0))
        return gx, (g * xhat).sum(0), g.sum(0), None, None, None, None


class BatchNormUnbiasedVar(BatchNormTrain):
    """Normalises by the unbiased variance, as the running one: the backward (written for
    the biased one) is off by n / (n - 1) in its variance term."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum=0.1, eps=1e-5):
        mu = x.mean(0)
        var = x.var(0, unbiased=True)
        with torch.no_grad():
            running_mean.mul_(1 - momentum).add_(momentum * mu)
            running_var.mul_(1 - momentum).add_(momentum * var)
        rstd = (var + eps).rsqrt()
        xhat = (x - mu) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias


# ---- indexing: gather, scatter, index_select, embedding ------------------------------------


class Gather(Function):
    """torch.gather along ``dim`` with an int64 index (repeated entries)."""

    @staticmethod
    def forward(ctx, x, index, dim=1):
        ctx.save_for_backward(index)
        ctx.dim, ctx.shape = dim, x.shape
        return x.gather(dim, index)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter_add(ctx.dim, index, g), None, None


class GatherScatterNotAdd(Gather):
    """scatter instead of scatter_add: a repeated index keeps one gradient, not their sum."""

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter(ctx.dim, index, g), None, None


class IndexSelect(Function):
    """x.index_select(0, idx); backward by index_add."""

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.n = x.shape[0]
        return x.index_select(0, idx)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gx = g.new_zeros((ctx.n, *g.shape[1:])).index_add_(0, idx, g)
        return gx, None


class ScatterAdd(Function):
    """Segment sum: src [n, d] summed into ``size`` rows by index [n] (expanded to [n, d])."""

    @staticmethod
    def forward(ctx, src, index, size):
        ctx.save_for_backward(index)
        idx = index.unsqueeze(1).expand_as(src)
        return src.new_zeros(size, src.shape[1]).scatter_add_(0, idx, src)

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        return g.index_select(0, index), None, None


class Embedding(Function):
    """Embedding lookup: weight [vocab, d] at idx [batch, len]."""

    @staticmethod
    def forward(ctx, weight, idx):
        ctx.save_for_backward(idx)
        ctx.vocab = weight.shape[0]
        return F.embedding(idx, weight)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gw = g.new_zeros(ctx.vocab, g.shape[-1]).index_add_(0, idx.reshape(-1),
                                                            g.reshape(-1, g.shape[-1]))
        return gw, None


class EmbeddingPaddingIdx(Function):
    """nn.Embedding's padding_idx: the padding row is looked up but gets no gradient. A
    wrong Jacobian on purpose (the padding row stays fixed while training)."""

    @staticmethod
    def forward(ctx, weight, idx, padding_idx=0):
        ctx.save_for_backward(idx)
        ctx.vocab, ctx.padding_idx = weight.shape[0], padding_idx
        return F.embedding(idx, weight, padding_idx=padding_idx)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gw = g.new_zeros(ctx.vocab, g.shape[-1]).index_add_(0, idx.reshape(-1),
                                                            g.reshape(-1, g.shape[-1]))
        gw[ctx.padding_idx] = 0
        return gw, None, None


# ---- piecewise functions, defaults and keyword constants, near kinks -----------------------


class LeakyRelu(Function):
    @staticmethod
    def forward(ctx, x, negative_slope=0.01):
        ctx.save_for_backward(x)
        ctx.slope = negative_slope
        return torch.where(x > 0, x, x * negative_slope)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, g * ctx.slope), None


class Clamp(Function):
    """clamp(x, lo, hi); the derivative 1 strictly inside."""

    @staticmethod
    def forward(ctx, x, lo=-1.0, hi=1.0):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ((x > ctx.lo) & (x < ctx.hi)), None, None


class Huber(Function):
    """Elementwise Huber loss of x with a keyword delta."""

    @staticmethod
    def forward(ctx, x, delta=1.0):
        ctx.save_for_backward(x)
        ctx.delta = delta
        a = x.abs()
        return torch.where(a <= delta, 0.5 * x * x, delta * (a - 0.5 * delta))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.clamp(-ctx.delta, ctx.delta), None


class HuberWrongOutside(Huber):
    """Outside the quadratic zone the slope is delta * sign(x): here sign(x) alone."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.where(x.abs() <= ctx.delta, x, x.sign()), None


# ---- in-place forwards ---------------------------------------------------------------------



class NumpyTanhInplace(Function):
    """tanh written into the input's memory through .numpy(), marked dirty."""

    @staticmethod
    def forward(ctx, x):
        a = x.detach().numpy()
        np.tanh(a, out=a)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


class NumpyTanhInplaceWrongSave(Function):
    """The same, but it saves the input before overwriting it and reads it as the output's
    value, through numpy again: the saved 'x' is tanh(x) by the time backward runs, so
    1 - tanh(tanh(x))^2 comes out."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().numpy()
        np.tanh(a, out=a)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1 - torch.tanh(x) ** 2)


# ---- saving outputs, needs_input_grad ------------------------------------------------------


class SigmoidSavesOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)


class Linear(Function):
    """x @ w^T + b, each gradient computed only where ``ctx.needs_input_grad`` asks."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.t() + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = g @ w
        if ctx.needs_input_grad[1]:
            gw = g.t() @ x
        if ctx.needs_input_grad[2]:
            gb = g.sum(0)
        return gx, gw, gb


class LinearNeedsGradShifted(Linear):
    """The weight's gradient guarded by needs_input_grad[2] (the bias's): None whenever the
    bias is frozen."""

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = g @ w
        if ctx.needs_input_grad[2]:
            gw = g.t() @ x
            gb = g.sum(0)
        return gx, gw, gb


# ---- complex -------------------------------------------------------------------------------


class ComplexLinear(Function):
    """z @ W^T in complex128; the gradients by the conjugate Wirtinger convention."""

    @staticmethod
    def forward(ctx, z, W):
        ctx.save_for_backward(z, W)
        return z @ W.t()

    @staticmethod
    def backward(ctx, g):
        z, W = ctx.saved_tensors
        return g @ W.conj(), g.t() @ z.conj()


class ComplexLinearNoConj(ComplexLinear):
    """The real-valued formulas carried over: no conjugates."""

    @staticmethod
    def backward(ctx, g):
        z, W = ctx.saved_tensors
        return g @ W, g.t() @ z


class ModReLU(Function):
    """modReLU: relu(|z| + b) * z / |z| (complex z, real bias b)."""

    @staticmethod
    def forward(ctx, z, b):
        r = z.abs()
        m = torch.relu(r + b)
        ctx.save_for_backward(z, r, m, b)
        return m / r * z

    @staticmethod
    def backward(ctx, g):
        z, r, m, b = ctx.saved_tensors
        u = z / r
        active = (r + b > 0).to(r.dtype)
        # out = m u: d out = active dr u + m du, dr = Re(conj(u) dz), du = (dz - u dr) / r
        gu = g * u.conj()  # grad_output against the phase
        gz = active * gu.real * u + (m / r) * (g - u * gu.real)
        gb = (active * gu.real).sum(0)
        return gz, gb


class ModReLUBiasGradNotReal(ModReLU):
    """The bias's gradient as Re(g * u) instead of Re(g * conj(u)): the phase's conjugate
    forgotten."""

    @staticmethod
    def backward(ctx, g):
        gz, _ = ModReLU.backward(ctx, g)
        z, r, _, b = ctx.saved_tensors
        active = (r + b > 0).to(r.dtype)
        return gz, (active * (g * (z / r)).real).sum(0)


class PowerSpectrum(Function):
    """|fft(z)|^2 of a complex signal (C -> R); the gradient by torch's convention, twice the
    derivative with respect to conj(z): 2 n ifft(g X)."""

    @staticmethod
    def forward(ctx, z):
        X = torch.fft.fft(z)
        ctx.save_for_backward(X)
        return (X * X.conj()).real

    @staticmethod
    def backward(ctx, g):
        (X,) = ctx.saved_tensors
        return 2 * X.shape[-1] * torch.fft.ifft(g * X)


class PowerSpectrumWirtinger(PowerSpectrum):
    """The textbook Wirtinger derivative d P / d conj(z) itself, without torch's factor 2."""

    @staticmethod
    def backward(ctx, g):
        (X,) = ctx.saved_tensors
        return X.shape[-1] * torch.fft.ifft(g * X)


# ---- float32 forwards ----------------------------------------------------------------------


class Gelu(Function):
    """tanh-GELU, in the dtype of its input (float32 in a model)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.gelu(x, approximate="tanh")

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        c = math.sqrt(2 / math.pi)
        t = torch.tanh(c * (x + 0.044715 * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x))


class GeluErfBackward(Gelu):
    """The tanh approximation's forward with the exact (erf) GELU's derivative: off by up
    to ~1e-3, within float32's tolerances, not float64's."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
        pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
        return g * (cdf + x * pdf)


# ---- broadcasting and memory layout --------------------------------------------------------


class BiasAdd(Function):
    """x [n, d] + b [d]: backward returns the unreduced grad for b (autograd sums it to b's
    shape, as it does for any gradient expandable to it)."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class BiasAddMean(Function):
    """b's gradient as a mean over the batch, not a sum."""

    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, g):
        return g, g.mean(0)


class FlattenView(Function):
    """x.view(-1) in forward: refuses a non-contiguous x (a transposed one, say)."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.view(-1) * 2

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape) * 2


class FlattenReshape(FlattenView):
    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.reshape(-1) * 2



# ---- once_differentiable, straight-through estimators --------------------------------------


class SoftplusOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.softplus(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x)


class RoundSTE(Function):
    """Quantisation's straight-through estimator: round in forward, identity in backward."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


class HardtanhSTE(Function):
    """sign(x) with the clipped straight-through gradient (binarised networks)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1)


# ---- reductions ----------------------------------------------------------------------------


class LogSumExp(Function):
    @staticmethod
    def forward(ctx, x, dim=-1, keepdim=False):
        y = torch.logsumexp(x, dim, keepdim=True)
        ctx.save_for_backward(x, y)
        ctx.dim = dim
        return y if keepdim else y.squeeze(dim)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if g.dim() < x.dim():
            g = g.unsqueeze(ctx.dim)
        return g * torch.exp(x - y), None, None


class LogSumExpNoUnsqueeze(LogSumExp):
    """grad_output not unsqueezed for keepdim=False: with a square x it broadcasts along the
    wrong dim, silently."""

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * torch.exp(x - y), None, None


class MeanKeepdim(Function):
    @staticmethod
    def forward(ctx, x, dim=1):
        ctx.shape, ctx.dim = x.shape, dim
        return x.mean(dim, keepdim=True)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape) / ctx.shape[ctx.dim], None


# ---- functions returning views -------------------------------------------------------------


class Transpose(Function):
    """Returns x.t(), a view of its input."""

    @staticmethod
    def forward(ctx, x):
        return x.t()

    @staticmethod
    def backward(ctx, g):
        return g.t()


class Narrow(Function):
    """Returns columns start..start+length of x, a view."""

    @staticmethod
    def forward(ctx, x, start=1, length=2):
        ctx.conf = (x.shape, start, length)
        return x.narrow(1, start, length)

    @staticmethod
    def backward(ctx, g):
        shape, start, length = ctx.conf
        gx = g.new_zeros(shape)
        gx[:, start:start + length] = g
        return gx, None, None


class NarrowOffByOne(Narrow):
    """The gradient written one column to the left."""

    @staticmethod
    def backward(ctx, g):
        shape, start, length = ctx.conf
        gx = g.new_zeros(shape)
        gx[:, start - 1:start - 1 + length] = g
        return gx, None, None


class SplitHalves(Function):
    """x.chunk(2, dim=-1): two views; the second half's gradient may come undefined."""

    @staticmethod
    def forward(ctx, x):
        a, b = x.chunk(2, dim=-1)
        return a, b

    @staticmethod
    def backward(ctx, ga, gb):
        return torch.cat([ga, gb], dim=-1)


# ---- losses with integer targets and keyword constants -------------------------------------


class CrossEntropy(Function):
    """Mean cross-entropy of logits [n, c] at int64 targets, skipping ``ignore_index``."""

    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100, reduction="mean"):
        keep = target != ignore_index
        logp = torch.log_softmax(logits, dim=1)
        picked = -logp.gather(1, target.clamp(min=0).unsqueeze(1)).squeeze(1) * keep
        count = keep.sum().clamp(min=1) if reduction == "mean" else torch.tensor(1)
        ctx.save_for_backward(logp, target, keep, count)
        return picked.sum() / count

    @staticmethod
    def backward(ctx, g):
        logp, target, keep, count = ctx.saved_tensors
        onehot = F.one_hot(target.clamp(min=0), logp.shape[1]).to(logp.dtype)
        grad = (logp.exp() - onehot) * keep.unsqueeze(1) / count
        return g * grad, None, None, None


class CrossEntropyMeanOverAll(CrossEntropy):
    """The mean's divisor in backward is every row, ignored ones included."""

    @staticmethod
    def backward(ctx, g):
        logp, target, keep, _ = ctx.saved_tensors
        onehot = F.one_hot(target.clamp(min=0), logp.shape[1]).to(logp.dtype)
        grad = (logp.exp() - onehot) * keep.unsqueeze(1) / target.shape[0]
        return g * grad, None, None, None


class Dropout(Function):
    """Inverted dropout whose mask is drawn in forward (from the global generator)."""

    @staticmethod
    def forward(ctx, x, p=0.5):
        keep = (torch.rand(x.shape, dtype=x.dtype) >= p).to(x.dtype) / (1 - p)
        ctx.save_for_backward(keep)
        return x * keep

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g * keep, None


class DropoutGivenMask(Function):
    """Dropout with its mask drawn outside and passed in (a float buffer)."""

    @staticmethod
    def forward(ctx, x, keep, p=0.5):
        ctx.save_for_backward(keep)
        ctx.scale = 1 / (1 - p)
        return x * keep * ctx.scale

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g * keep * ctx.scale, None, None


# ---- integer and non-tensor outputs, optional arguments ------------------------------------


class MaxWithIndices(Function):
    """(values, indices) of the max over dim 1, as torch.max returns them."""

    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(1)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter(1, indices.unsqueeze(1), g.unsqueeze(1))


class LinearOptionalBias(Function):
    """x @ w^T (+ b if given): ``b=None`` by default."""

    @staticmethod
    def forward(ctx, x, w, b=None):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        out = x @ w.t()
        return out if b is None else out + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.t() @ x, g.sum(0) if ctx.has_bias else None


class BoolMaskedFill(Function):
    """x with the entries where a bool mask is True set to 0."""

    @staticmethod
    def forward(ctx, x, mask):
        ctx.save_for_backward(mask)
        return x.masked_fill(mask, 0.0)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g.masked_fill(mask, 0.0), None


class Temperature(Function):
    """logits / t with a 0-dim temperature that is learnt."""

    @staticmethod
    def forward(ctx, logits, t):
        ctx.save_for_backward(logits, t)
        return logits / t

    @staticmethod
    def backward(ctx, g):
        logits, t = ctx.saved_tensors
        return g / t, -(g * logits).sum() / t ** 2


class Float32Gradient(Function):
    """sin, its gradient accumulated in ``torch.zeros(shape)``: float32 (the default dtype)
    for a float64 input. Autograd casts it back silently."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gx = torch.zeros(x.shape)
        gx += g * torch.cos(x)
        return gx  # float32



class Cumprod(Function):
    """cumprod along dim 0 by the division trick: wrong where x holds a zero."""

    @staticmethod
    def forward(ctx, x):
        y = x.cumprod(0)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (g * y).flip(0).cumsum(0).flip(0) / x


class ReluAtZero(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x > 0)


class NormalizeRows(Function):
    """x / ||x|| per row (NaN for a zero row, in forward and backward alike)."""

    @staticmethod
    def forward(ctx, x):
        n = x.norm(dim=1, keepdim=True)
        y = x / n
        ctx.save_for_backward(y, n)
        return y

    @staticmethod
    def backward(ctx, g):
        y, n = ctx.saved_tensors
        return (g - y * (g * y).sum(1, keepdim=True)) / n


class PassThrough(Function):
    """Returns its input itself (no copy, no mark_dirty), as an identity 'hook' does."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


# ---- forwards leaving torch, or reading values ---------------------------------------------


class NumpyTanh(NumpyTanhInplace):
    """tanh computed by numpy out of place (forward leaves torch), backward in torch."""

    @staticmethod
    def forward(ctx, x):
        y = torch.from_numpy(np.tanh(x.detach().cpu().numpy()))
        ctx.save_for_backward(y)
        return y


class MaxAbsScale(Function):
    """x / max|x| per row, the max read with .item()-style detaching; backward through the
    max too."""

    @staticmethod
    def forward(ctx, x):
        s, k = x.abs().max(1, keepdim=True)
        ctx.save_for_backward(x, s, k)
        return x / s

    @staticmethod
    def backward(ctx, g):
        x, s, k = ctx.saved_tensors
        gs = -(g * x).sum(1, keepdim=True) / s ** 2
        return (g / s).scatter_add(1, k, gs * x.gather(1, k).sign())


class MaxAbsScaleConstantMax(MaxAbsScale):
    """The max treated as a constant in backward ("it is only a normaliser")."""

    @staticmethod
    def backward(ctx, g):
        _, s, _ = ctx.saved_tensors
        return g / s


class Concat(Function):
    """torch.cat of any number of tensors along dim 0 (``forward(ctx, *tensors)``)."""

    @staticmethod
    def forward(ctx, *tensors):
        ctx.sizes = [t.shape[0] for t in tensors]
        return torch.cat(tensors)

    @staticmethod
    def backward(ctx, g):
        return g.split(ctx.sizes)


class IntoOut(Function):
    """forward(x, out): writes 2 x into the buffer ``out`` and returns it (an out= API)."""

    @staticmethod
    def forward(ctx, x, out):
        out.copy_(x * 2)
        ctx.mark_dirty(out)
        return out

    @staticmethod
    def backward(ctx, g):
        return 2 * g, None


class SplitNoMaterialize(Function):
    """Two halves with ``set_materialize_grads(False)``: an unused half's gradient is None,
    handled."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.half = x.shape[-1] // 2
        return x[..., :ctx.half] * 1, x[..., ctx.half:] * 1

    @staticmethod
    def backward(ctx, ga, gb):
        if ga is None and gb is None:
            return None
        ref = ga if ga is not None else gb
        shape = (*ref.shape[:-1], 2 * ctx.half)
        gx = ref.new_zeros(shape)
        if ga is not None:
            gx[..., :ctx.half] = ga
        if gb is not None:
            gx[..., ctx.half:] = gb
        return gx


class SplitNoMaterializeUnhandled(SplitNoMaterialize):
    """The same, but backward assumes both gradients are tensors."""

    @staticmethod
    def backward(ctx, ga, gb):
        return torch.cat([ga, gb], dim=-1)  # ga or gb may be None


class SameOutputTwice(Function):
    """Returns (y, y), one tensor twice."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y, y

    @staticmethod
    def backward(ctx, g1, g2):
        (y,) = ctx.saved_tensors
        return (g1 + g2) * y


class TransposedOutput(Function):
    """A non-contiguous output: (2 x)^T."""

    @staticmethod
    def forward(ctx, x):
        return (x * 2).t()

    @staticmethod
    def backward(ctx, g):
        return 2 * g.t()


class SparseEmbedding(Embedding):
    """nn.Embedding(sparse=True)'s gradient: a sparse COO tensor."""

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        values = g.reshape(-1, g.shape[-1])
        grad = torch.sparse_coo_tensor(idx.reshape(1, -1), values, (ctx.vocab, g.shape[-1]),
                                       check_invariants=True)
        return grad, None


class TanhNumpyBackward(Function):
    """tanh whose backward goes through numpy without detaching grad_output: fine once,
    raises under double backward (grad_output then requires grad)."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return torch.from_numpy(g.numpy() * (1 - y.numpy() ** 2))


# ==== the cases ===============================================================================

#: gradcheck's own Jacobians (private helpers of torch.autograd.gradcheck, the ones its slow
#: mode compares): the mismatch mask is read from them
_GRADCHECK = sys.modules["torch.autograd.gradcheck"]


def _rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _g(t):
    return t.requires_grad_()


@dataclass
class Case:
    """``make()`` gives forward's arguments as a user passes them to customgrad.check (the
    tensors to differentiate requiring grad); gradcheck gets copies of them, called through
    ``call`` (``apply``, or a wrapper that clones for an in-place forward)."""

    id: str
    function: type
    make: Callable[[], tuple]
    expected: str  # gradcheck's verdict: "passed", "failed" or "error" (it raises)
    #: ours where it words the same refusal another way: "error" (a FunctionError naming the
    #: line, where gradcheck fails) or "failed" (a sub-check naming it, where gradcheck raises)
    ours: str | None = None
    inplace: int | None = None  # the argument forward writes into: gradcheck gets a clone
    mask: bool = True  # compare the mismatch mask with gradcheck's
    plain: bool = True  # the same verdict with nothing requiring grad (none of the others
    #                     is differentiated: backward returns None for them)
    slow: bool = False

    def call(self, *args):
        if self.inplace is not None:
            k = self.inplace
            args = (*args[:k], args[k].clone(), *args[k + 1:])
        return self.function.apply(*args)

    def param(self):
        return pytest.param(self, id=self.id, marks=[pytest.mark.slow] if self.slow else [])


def _mask(n=4):
    m = torch.zeros(n, n, dtype=torch.float64)
    m[:, -1] = -1e4  # the last key masked out
    return m


def _qkv(b=2, n=4, d=3):
    return tuple(_g(_rand(b, n, d, seed=s)) for s in (1, 2, 3))


def _bn(n=5, d=3):
    return (_g(_rand(n, d)), _g(_rand(d, seed=1) + 2.0), _g(_rand(d, seed=2)),
            torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64))


_IDX = torch.tensor([[0, 2, 2], [1, 1, 3], [3, 0, 0]])
_TOKENS = torch.tensor([[1, 0, 3], [3, 3, 2]])
#: points of the piecewise functions: away from the kinks, and one 3e-7 from a kink (within
#: eps 1e-6 of it: the central difference straddles it)
_AWAY = torch.tensor([-2.5, -0.4, 0.3, 0.7, 1.6, 3.0], dtype=torch.float64)
_NEAR = torch.tensor([-2.5, -0.4, 0.3, 1.0 + 3e-7, 1.6, 3.0], dtype=torch.float64)


def _c(*shape, seed=0):
    return _rand(*shape, seed=seed, dtype=torch.complex128)


CASES = [
    # attention / softmax with a float mask buffer
    Case("masked-softmax", MaskedSoftmax, lambda: (_g(_rand(3, 4)), _mask()[:3]), "passed"),
    Case("masked-softmax-no-centering", MaskedSoftmaxNoCentering,
         lambda: (_g(_rand(3, 4)), _mask()[:3]), "failed"),
    Case("attention", Attention, lambda: (*_qkv(), _mask()), "passed", slow=True),
    Case("attention-unscaled-key-grad", AttentionUnscaledKeyGrad, lambda: (*_qkv(), _mask()),
         "failed", slow=True),
    Case("attention-with-weights", AttentionWithWeights, lambda: _qkv(1, 3, 2), "passed"),
    Case("attention-weights-grad-ignored", AttentionWeightsGradIgnored,
         lambda: _qkv(1, 3, 2), "failed"),
    Case("attention-weights-non-differentiable", AttentionWeightsNonDifferentiable,
         lambda: _qkv(1, 3, 2), "passed"),
    # convolutions with a fixed filter
    Case("conv1d-fixed", Conv1dFixed, lambda: (_g(_rand(2, 2, 7)), _rand(3, 2, 3, seed=1)),
         "passed"),
    Case("conv1d-strided", Conv1dFixed, lambda: (_g(_rand(2, 2, 8)), _rand(3, 2, 3, seed=1), 2),
         "passed"),
    Case("conv1d-strided-no-output-padding", Conv1dStridedNoOutputPadding,
         lambda: (_g(_rand(2, 2, 8)), _rand(3, 2, 3, seed=1), 2), "error"),
    Case("conv2d-dilated", Conv2dDilated,
         lambda: (_g(_rand(1, 2, 5, 5)), _rand(2, 2, 3, 3, seed=1)), "passed", slow=True),
    Case("conv2d-dilation-forgotten", Conv2dDilationForgotten,
         lambda: (_g(_rand(1, 2, 5, 5)), _rand(2, 2, 3, 3, seed=1)), "failed", slow=True),
    # normalisation
    Case("layer-norm", LayerNorm,
         lambda: (_g(_rand(3, 5)), _g(_rand(5, seed=1)), _g(_rand(5, seed=2))), "passed"),
    Case("layer-norm-no-mean-term", LayerNormNoMeanTerm,
         lambda: (_g(_rand(3, 5)), _g(_rand(5, seed=1)), _g(_rand(5, seed=2))), "failed"),
    Case("batch-norm-running-stats", BatchNormTrain, _bn, "passed"),
    Case("batch-norm-unbiased-var", BatchNormUnbiasedVar, _bn, "failed"),
    # indexing
    Case("gather", Gather, lambda: (_g(_rand(4, 5)), _IDX), "passed"),
    Case("gather-scatter-not-add", GatherScatterNotAdd, lambda: (_g(_rand(4, 5)), _IDX),
         "failed"),
    Case("index-select", IndexSelect,
         lambda: (_g(_rand(4, 3)), torch.tensor([3, 0, 3, 1])), "passed"),
    Case("scatter-add", ScatterAdd,
         lambda: (_g(_rand(5, 2)), torch.tensor([0, 2, 0, 1, 2]), 3), "passed"),
    Case("embedding", Embedding, lambda: (_g(_rand(4, 3)), _TOKENS), "passed"),
    Case("embedding-padding-idx", EmbeddingPaddingIdx, lambda: (_g(_rand(4, 3)), _TOKENS),
         "failed"),
    # piecewise, defaults and keyword constants, near kinks
    Case("leaky-relu", LeakyRelu, lambda: (_g(_AWAY.clone()),), "passed"),
    Case("leaky-relu-slope", LeakyRelu, lambda: (_g(_AWAY.clone()), 0.2), "passed"),
    Case("clamp-away-from-kinks", Clamp, lambda: (_g(_AWAY.clone()),), "passed"),
    Case("clamp-near-a-kink", Clamp, lambda: (_g(_NEAR.clone()),), "failed"),
    Case("huber", Huber, lambda: (_g(_AWAY.clone()), 0.5), "passed"),
    Case("huber-near-a-kink", Huber, lambda: (_g(_NEAR.clone()),), "passed"),
    Case("huber-wrong-outside", HuberWrongOutside, lambda: (_g(_AWAY.clone()), 0.5), "failed"),
    # in place
    Case("numpy-tanh-in-place", NumpyTanhInplace, lambda: (_g(_rand(3, 4)),), "passed",
         inplace=0),
    Case("numpy-tanh-in-place-saves-input", NumpyTanhInplaceWrongSave,
         lambda: (_g(_rand(3, 4)),), "failed", inplace=0),
    # saved outputs, needs_input_grad
    Case("sigmoid-saves-output", SigmoidSavesOutput, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("linear-needs-input-grad", Linear,
         lambda: (_g(_rand(3, 4)), _g(_rand(2, 4, seed=1)), _rand(2, seed=2)), "passed",
         plain=False),
    Case("linear-needs-input-grad-shifted", LinearNeedsGradShifted,
         lambda: (_g(_rand(3, 4)), _g(_rand(2, 4, seed=1)), _rand(2, seed=2)), "failed",
         plain=False),
    # complex
    Case("complex-linear", ComplexLinear, lambda: (_g(_c(3, 4)), _g(_c(2, 4, seed=1))),
         "passed"),
    Case("complex-linear-no-conj", ComplexLinearNoConj,
         lambda: (_g(_c(3, 4)), _g(_c(2, 4, seed=1))), "failed"),
    Case("power-spectrum", PowerSpectrum, lambda: (_g(_c(2, 5)),), "passed"),
    Case("power-spectrum-wirtinger-factor", PowerSpectrumWirtinger, lambda: (_g(_c(2, 5)),),
         "failed"),
    Case("modrelu", ModReLU, lambda: (_g(_c(3, 4) * 2), _g(_rand(4, seed=1))), "passed"),
    Case("modrelu-bias-grad-no-conj", ModReLUBiasGradNotReal,
         lambda: (_g(_c(3, 4) * 2), _g(_rand(4, seed=1))), "failed"),
    # broadcasting and memory layout
    Case("bias-add-unreduced", BiasAdd, lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1))),
         "passed"),
    Case("bias-add-mean", BiasAddMean, lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1))),
         "failed"),
    Case("row-scale-transposed-input", ScaleRows,
         lambda: (_g(_rand(4, 3).t()), _g(_rand(3, 1, seed=1))), "passed"),
    Case("flatten-reshape-transposed", FlattenReshape, lambda: (_g(_rand(4, 3).t()),),
         "passed"),
    Case("flatten-view-transposed", FlattenView, lambda: (_g(_rand(4, 3).t()),), "error"),
    # once_differentiable, straight-through estimators
    Case("softplus-once-differentiable", SoftplusOnce, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("round-ste", RoundSTE, lambda: (_g(_rand(3, 4) * 3),), "failed"),
    Case("hardtanh-ste", HardtanhSTE, lambda: (_g(_rand(3, 4)),), "failed"),
    # reductions
    Case("logsumexp", LogSumExp, lambda: (_g(_rand(4, 4)),), "passed"),
    Case("logsumexp-keepdim", LogSumExp, lambda: (_g(_rand(4, 4)), 0, True), "passed"),
    Case("logsumexp-no-unsqueeze", LogSumExpNoUnsqueeze, lambda: (_g(_rand(4, 4)),), "failed"),
    Case("mean-keepdim", MeanKeepdim, lambda: (_g(_rand(3, 4)),), "passed"),
    # views
    Case("transpose-view", Transpose, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("narrow-view", Narrow, lambda: (_g(_rand(3, 5)),), "passed"),
    Case("narrow-off-by-one", NarrowOffByOne, lambda: (_g(_rand(3, 5)),), "failed"),
    Case("split-halves", SplitHalves, lambda: (_g(_rand(3, 4)),), "passed"),
    # losses with integer targets, randomness, integer outputs, optional arguments
    Case("cross-entropy-ignore-index", CrossEntropy,
         lambda: (_g(_rand(4, 3)), torch.tensor([2, -100, 0, 1])), "passed"),
    Case("cross-entropy-mean-over-all", CrossEntropyMeanOverAll,
         lambda: (_g(_rand(4, 3)), torch.tensor([2, -100, 0, 1])), "failed"),
    Case("dropout-given-mask", DropoutGivenMask,
         lambda: (_g(_rand(3, 4)), (_rand(3, 4, seed=1) > 0).double()), "passed"),
    Case("max-with-indices", MaxWithIndices, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("linear-no-bias", LinearOptionalBias,
         lambda: (_g(_rand(3, 4)), _g(_rand(2, 4, seed=1))), "passed"),
    Case("linear-bias", LinearOptionalBias,
         lambda: (_g(_rand(3, 4)), _g(_rand(2, 4, seed=1)), _g(_rand(2, seed=2))), "passed"),
    Case("bool-masked-fill", BoolMaskedFill,
         lambda: (_g(_rand(3, 4)), _rand(3, 4, seed=1) > 0), "passed"),
    Case("temperature-0-dim", Temperature, lambda: (_g(_rand(3, 4)), _g(torch.tensor(
        1.7, dtype=torch.float64))), "passed"),
    Case("cumprod", Cumprod, lambda: (_g(_rand(4, 2)),), "passed"),
    Case("cumprod-with-a-zero", Cumprod,
         lambda: (_g(torch.tensor([[1.5, 2.0], [0.0, -1.0], [0.7, 3.0]],
                                  dtype=torch.float64)),), "failed"),
    Case("relu-at-zero", ReluAtZero, lambda: (_g(_AWAY.clone() * 0),), "failed"),
    Case("pass-through", PassThrough, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("normalize-rows-zero-row", NormalizeRows,
         lambda: (_g(torch.cat([_rand(1, 4), torch.zeros(1, 4, dtype=torch.float64)])),),
         "failed"),
    # forwards leaving torch or reading values, varargs, out= buffers, output layouts
    Case("numpy-tanh", NumpyTanh, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("max-abs-scale", MaxAbsScale, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("max-abs-scale-constant-max", MaxAbsScaleConstantMax, lambda: (_g(_rand(3, 4)),),
         "failed"),
    Case("concat-varargs", Concat,
         lambda: (_g(_rand(2, 3)), _g(_rand(1, 3, seed=1)), _g(_rand(3, 3, seed=2))),
         "passed"),
    Case("into-out-buffer", IntoOut, lambda: (_g(_rand(3, 4)), torch.zeros(3, 4,
                                                                        dtype=torch.float64)),
         "passed", inplace=1),
    Case("split-no-materialize", SplitNoMaterialize, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("split-no-materialize-unhandled", SplitNoMaterializeUnhandled,
         lambda: (_g(_rand(3, 4)),), "error", ours="failed"),
    Case("same-output-twice", SameOutputTwice, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("transposed-output", TransposedOutput, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("sparse-embedding-gradient", SparseEmbedding, lambda: (_g(_rand(4, 3)), _TOKENS),
         "failed", ours="error"),
]


def _copies(args: tuple) -> tuple:
    return tuple(a.detach().clone().requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) else a for a in args)


def gradcheck_verdict(case: Case, args: tuple, as_given: bool = False, **options) -> str:
    """gradcheck's verdict on copies of ``args`` (the same tensors requiring grad); on
    ``args`` themselves where ``as_given`` (a closure reads them: test_closure_inputs.py)."""
    try:
        ok = torch.autograd.gradcheck(case.call, args if as_given else _copies(args),
                                      raise_exception=False, **options)
    except Exception:  # an error in the Function (gradcheck lets it through), or an input
        return "error"  # gradcheck refuses
    return "passed" if ok else "failed"


def gradcheck_mask(case: Case, args: tuple, eps=1e-6, atol=1e-5, rtol=1e-3,
                   as_given: bool = False) -> torch.Tensor:
    """True where gradcheck's analytic and numerical entries differ by more than
    ``atol + rtol * |numerical|``: gradcheck's slow mode's own Jacobians, laid out as
    customgrad's matrix (a row per output element, a column per input element).

    As gradcheck, a complex output is checked as its real part, then its imaginary part
    (customgrad's two rows per element), and a complex input's entry is one complex number
    (customgrad's two columns per element, which get its one verdict). On copies of
    ``args``, or on ``args`` themselves where ``as_given``."""
    inputs = args if as_given else _copies(args)
    chosen = [a for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad]
    rows = []
    for k, out in enumerate(_GRADCHECK._as_tuple(case.call(*inputs))):
        if not out.requires_grad:  # an integer or non-differentiable output: not compared
            continue
        parts = []
        for part in (torch.real, torch.imag) if out.is_complex() else (None,):
            def fn(*call, k=k, part=part):
                o = _GRADCHECK._as_tuple(case.call(*call))[k]
                return o if part is None else part(o)
            o = fn(*inputs)
            numerical = _GRADCHECK._get_numerical_jacobian(fn, inputs, (o,), eps=eps)
            analytic = _GRADCHECK._check_analytical_jacobian_attributes(
                inputs, o, nondet_tol=float("inf"), check_grad_dtypes=False)
            parts.append(torch.cat([
                (~_isclose_promoted(a, n, rtol, atol).t()).repeat_interleave(
                    2 if x.is_complex() else 1, dim=1)
                for a, (n,), x in zip(analytic, numerical, chosen)], dim=1))
        rows.append(torch.stack(parts, dim=1).flatten(0, 1))  # real, imag rows interleaved
    return torch.cat(rows, dim=0)


def _isclose_promoted(a: torch.Tensor, n: torch.Tensor, rtol: float, atol: float):
    """``isclose`` after gradcheck's type promotion (``_allclose_with_type_promotion``): a
    float32 output of a float64 input has float32 analytic entries and float64 numerical
    ones."""
    dtype = torch.promote_types(a.dtype, n.dtype)
    return torch.isclose(a.to(dtype), n.to(dtype), rtol=rtol, atol=atol)


def _line_of(text: str, file: str = __file__) -> int:
    """The line of ``file`` (this one) holding ``text`` (once)."""
    lines = [k for k, line in enumerate(Path(file).read_text().splitlines(), 1)
             if line.strip().startswith(text)]
    assert len(lines) == 1, (text, lines)
    return lines[0]


# ==== the verdicts, beside gradcheck's =========================================================


def assert_gradchecks_verdict(case: Case, file: str = __file__) -> None:
    """gradcheck's verdict is the case's, customgrad's is it (or ``case.ours``: an error
    naming a line of ``file``, where the case's Function is), and where both judge, the
    mismatch masks are equal entry for entry."""
    expected = gradcheck_verdict(case, case.make())
    assert expected == case.expected  # the case is the one named (right, or its bug)
    ours = case.ours or expected
    if ours == "error":
        with pytest.raises(FunctionError) as info:
            customgrad.check(case.function, *case.make())
        assert info.value.file == file and info.value.line is not None
        return
    report = customgrad.check(case.function, *case.make())
    assert ("passed" if report.passed else "failed") == ours, report.text()
    if case.mask and expected != "error":
        mask = gradcheck_mask(case, case.make())
        assert torch.equal(report.mismatch_mask(), mask)
        assert report.mismatches == int(mask.sum())


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_the_verdict_and_mismatch_mask_are_gradchecks(case):
    assert_gradchecks_verdict(case)


@pytest.mark.parametrize("case", [c.param() for c in CASES
                                  if c.plain and "error" not in (c.expected, c.ours)])
def test_with_nothing_requiring_grad_the_verdict_is_the_same(case):
    """No tensor requires grad: every floating-point one is differentiated but those that
    backward returns None for (the mask, the filter, the running statistics, the
    targets): gradcheck's inputs exactly, so its verdict."""
    args = case.make()
    chosen = [a.requires_grad for a in args if isinstance(a, torch.Tensor)]
    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    report = customgrad.check(case.function, *plain)
    assert ("passed" if report.passed else "failed") == (case.ours or case.expected)
    assert len(report.inputs) == sum(chosen)


ERRORS = [
    # (case, what the message says, the line of the user's code it names)
    ("conv1d-strided-no-output-padding", r"backward returned a gradient of shape \[2x2x7\] "
     r"for x, whose shape is \[2x2x8\]", "return (F.conv_transpose1d(g, weight, stride"),
    ("flatten-view-transposed", r"FlattenView\.forward raised RuntimeError: view size is not "
     r"compatible", "return x.view(-1) * 2"),
]


@pytest.mark.parametrize("name, message, line", ERRORS, ids=[e[0] for e in ERRORS])
def test_where_gradcheck_raises_the_error_names_the_users_line(name, message, line):
    case = next(c for c in CASES if c.id == name)
    assert gradcheck_verdict(case, case.make()) == "error"
    with pytest.raises(FunctionError, match=message) as info:
        customgrad.check(case.function, *case.make())
    assert (info.value.file, info.value.line) == (__file__, _line_of(line))


def test_the_cli_names_the_file_and_line_of_a_wrong_gradient_shape(capsys):
    code = cli.main(["check", f"{__file__}:Conv1dStridedNoOutputPadding", "--shape", "x=2x2x8",
                     "--shape", "weight=3x2x3", "--const", "stride=2", "--in-process"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "Conv1dStridedNoOutputPadding.backward returned a gradient of shape [2x2x7] for x" \
        in err
    assert f"({__file__}:{_line_of('return (F.conv_transpose1d(g, weight, stride')})" in err


def test_the_cli_checks_a_layer_with_a_mask_buffer_and_an_index(capsys):
    """From the command line, with drawn tensors: the index drawn by randint, the integer
    target and the mask never differentiated."""
    code = cli.main(["check", f"{__file__}:Embedding", "--shape", "weight=5x3",
                     "--shape", "idx=2x4", "--init", "idx=randint(0,5)", "--in-process"])
    out = capsys.readouterr().out
    assert code == 0 and "d output [2x4x3] / d weight [5x3]" in out, out
    code = cli.main(["check", f"{__file__}:EmbeddingPaddingIdx", "--shape", "weight=5x3",
                     "--shape", "idx=2x4", "--init", "idx=randint(0,5)", "--in-process"])
    out = capsys.readouterr().out
    assert code == 1 and "d weight[0, " in out  # the padding row's entries fail


@pytest.mark.parametrize("name, code", [("MaskedSoftmax", 0), ("MaskedSoftmaxNoCentering", 1)])
def test_the_cli_keeps_a_drawn_mask_buffer_constant(capsys, name, code):
    """The mask drawn by the CLI as any float tensor: backward returns None for it, so it
    is a constant, and the verdict is gradcheck's with x alone differentiated."""
    assert cli.main(["check", f"{__file__}:{name}", "--shape", "x=3x4", "--shape", "mask=3x4",
                     "--in-process"]) == code
    out = capsys.readouterr().out
    assert "note: mask: backward returns None; treated as not differentiated." in out
    assert "d output [3x4] / d x [3x4]" in out and "/ d mask" not in out


def test_the_cli_checks_batch_norm_updating_its_running_stats(capsys):
    shapes = [f"--shape={n}=3" for n in ("weight", "bias", "running_mean", "running_var")]
    assert cli.main(["check", f"{__file__}:BatchNormTrain", "--shape", "x=5x3", *shapes,
                     "--in-process"]) == 0
    out = capsys.readouterr().out
    assert "note: forward modifies its input in place: finite differences use copies." in out
    for name in ("running_mean", "running_var"):
        assert f"note: {name}: backward returns None; treated as not differentiated." in out


# ==== what gradcheck cannot judge, or judges by another rule ===================================


@pytest.mark.parametrize("function, right", [(Gelu, True), (GeluErfBackward, False)],
                         ids=["gelu", "gelu-erf-backward"])
def test_a_float32_layer_is_judged_in_float64_where_gradcheck_fails_both(function, right):
    """At float32 inputs gradcheck fails the right GELU too (eps 1e-6 is below float32's
    resolution). customgrad evaluates the numerical Jacobian in float64 at the float32
    point: the verdict gradcheck gives at that point in float64."""
    x = _rand(3, 4).float()
    with pytest.warns(UserWarning, match="not a double precision"):
        assert not torch.autograd.gradcheck(function.apply, (x.clone().requires_grad_(),),
                                            raise_exception=False)
    at64 = torch.autograd.gradcheck(function.apply, (x.double().requires_grad_(),),
                                    raise_exception=False)
    assert at64 == right
    report = customgrad.check(function, x.requires_grad_())
    assert report.passed == right, report.text()
    assert report.numerical_dtype == torch.float64
    assert any("float32 rule" in n for n in report.notes)


def test_an_expanded_input_gradcheck_refuses_is_checked_as_its_contiguous_copy():
    """A broadcast (stride-0) input: gradcheck refuses it; customgrad checks a contiguous
    copy, gradcheck's verdict on x.contiguous()."""
    case = next(c for c in CASES if c.id == "row-scale-transposed-input")
    x, s = _rand(3).expand(4, 3), _rand(4, 1, seed=1)
    with pytest.raises(RuntimeError, match="stride 0"):
        torch.autograd.gradcheck(ScaleRows.apply, (_g(x), s))
    x = x.detach()
    expected = gradcheck_verdict(case, (_g(x.contiguous()), s))
    report = customgrad.check(ScaleRows, _g(x), s)
    assert expected == "passed" and report.passed
    assert report.inputs[0].shape == (4, 3)


def _scaled_by_two(cast):
    """x * 2, whose backward hands autograd ``cast(2 g)``."""

    class CastGradient(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return cast(g * 2)

    return CastGradient


#: a gradient of another dtype than its input's, as autograd's engine takes it
#: (``validate_outputs``: cast, except a complex gradient for a real input, or an integer one
#: for a complex input): gradcheck's verdict, or its refusal, and ours
CASTS = [
    ("float16-for-float64", lambda g: g.half(), torch.float64, "passed"),
    ("bfloat16-for-float64", lambda g: g.bfloat16(), torch.float64, "passed"),
    ("int64-for-float64", lambda g: g.long(), torch.float64, "passed"),
    ("complex128-for-float64", lambda g: g.to(torch.complex128), torch.float64, "error"),
    ("complex64-for-complex128", lambda g: g.to(torch.complex64), torch.complex128, "passed"),
    ("float64-for-complex128", lambda g: g.real, torch.complex128, "failed"),
    ("int64-for-complex128", lambda g: g.real.long(), torch.complex128, "error"),
]


def test_a_float32_gradient_for_a_float64_input_passes_as_gradcheck_casts_it():
    """The autograd engine casts a float32 gradient to the input's float64 before gradcheck
    sees it, so gradcheck passes it, even with check_grad_dtypes=True: so does customgrad,
    with a note that names the dtypes; a wrong value in float32 still fails."""
    case = Case("float32-gradient", Float32Gradient, lambda: (_g(_rand(3, 4)),), "passed")
    assert gradcheck_verdict(case, case.make()) == "passed"
    assert gradcheck_verdict(case, case.make(), check_grad_dtypes=True) == "passed"
    report = customgrad.check(Float32Gradient, *case.make())
    assert report.passed
    assert any("as float32, but x is float64: autograd casts it" in n for n in report.notes)


@pytest.mark.parametrize(("cast", "dtype", "verdict"), [c[1:] for c in CASTS],
                         ids=[c[0] for c in CASTS])
def test_a_gradient_of_another_dtype_is_judged_as_gradcheck_judges_it(cast, dtype, verdict):
    function = _scaled_by_two(cast)
    x = _g(torch.rand(3, 4, dtype=torch.float64).to(dtype))
    try:
        theirs = "passed" if torch.autograd.gradcheck(function.apply, (x,),
                                                      raise_exception=False) else "failed"
    except RuntimeError:
        theirs = "error"
    assert theirs == verdict
    if verdict == "error":
        with pytest.raises(FunctionError, match="autograd refuses it") as e:
            customgrad.check(function, x)
        assert (e.value.file, e.value.line) == (__file__, _line_of("return cast(g * 2)"))
    else:
        assert customgrad.check(function, x).passed == (verdict == "passed")


def test_dropout_drawing_its_mask_in_forward_fails_as_in_gradcheck():
    """Each forward call draws another mask: finite differences measure the change of mask,
    and both fail; with the mask drawn once and passed in, both pass."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        assert not torch.autograd.gradcheck(Dropout.apply, (_g(_rand(3, 4)),),
                                            raise_exception=False)
        report = customgrad.check(Dropout, _g(_rand(3, 4)))
    assert not report.passed and report.mismatches > 0
    assert [d.kind for d in report.diagnoses] == ["random_forward"]
    assert "Dropout.forward gives other outputs at the same point" in report.text()


def test_a_forward_varying_in_its_last_bits_is_not_called_random():
    """Atomics (index_add on a GPU) change a sum's last bits from call to call: far below
    what moves a finite difference (eps * atol), so a wrong backward is still diagnosed as
    such, not as a random forward."""
    class ScaleJittered(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2 + 1e-14 * torch.rand(x.shape, dtype=x.dtype)

        @staticmethod
        def backward(ctx, g):
            return g * 3

    report = customgrad.check(ScaleJittered, _rand(3, 4))
    assert not report.passed
    assert [d.kind for d in report.diagnoses] == ["factor"]


@pytest.mark.parametrize("function", [RoundSTE, HardtanhSTE], ids=["round", "sign-clipped"])
def test_a_straight_through_estimator_fails_as_in_gradcheck_and_is_named(function):
    """The wrong Jacobian on purpose: forward's finite differences are all 0, backward's
    surrogate is not. gradcheck fails it; so does customgrad, saying what it sees."""
    case = next(c for c in CASES if c.function is function)
    assert gradcheck_verdict(case, case.make()) == "failed"
    report = customgrad.check(function, *case.make())
    assert not report.passed
    assert [d.kind for d in report.diagnoses] == ["straight_through"]
    assert "straight-through estimator" in report.diagnoses[0].detail


# ==== the double backward, beside gradgradcheck's ==============================================

#: gradgradcheck's verdict on each: a backward built from what forward saved fails it where
#: forward saved an intermediate (xhat, p, the keepdim logsumexp) rather than an input or an
#: output, since forward runs without a graph: the same Function right at first order
DOUBLE = {
    "masked-softmax": "passed", "masked-softmax-no-centering": "failed",
    "attention": "failed", "attention-with-weights": "passed",
    "attention-weights-non-differentiable": "failed", "conv1d-strided": "passed",
    "layer-norm": "failed", "batch-norm-running-stats": "failed", "gather": "passed",
    "gather-scatter-not-add": "failed", "embedding-padding-idx": "passed",
    "clamp-near-a-kink": "failed", "huber-near-a-kink": "failed",
    "numpy-tanh-in-place": "passed", "sigmoid-saves-output": "passed",
    "complex-linear": "passed", "modrelu": "failed", "round-ste": "passed",
    "logsumexp": "failed", "logsumexp-keepdim": "passed", "narrow-view": "passed",
    "cross-entropy-ignore-index": "failed", "max-abs-scale": "failed",
}
_SLOW_DOUBLE = {"attention", "attention-with-weights", "attention-weights-non-differentiable",
                "conv1d-strided", "modrelu", "complex-linear"}


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.id, marks=[pytest.mark.slow] if c.id in _SLOW_DOUBLE else [])
    for c in CASES if c.id in DOUBLE])
def test_the_double_backward_verdict_is_gradgradchecks(case):
    assert_gradgradchecks_verdict(case, DOUBLE[case.id])


def assert_gradgradchecks_verdict(case: Case, verdict: str) -> None:
    """gradgradcheck's verdict on the case is ``verdict``, and so is customgrad's
    double_backward sub-check's."""
    with torch.random.fork_rng():
        # gradgradcheck draws its grad_outputs from the global generator: seeded here, its
        # verdict does not depend on the tests run before (at seed 0 they would be the
        # inputs _rand draws with seed 0: test_real_layers_2's blind spot)
        torch.manual_seed(1)
        expected = torch.autograd.gradgradcheck(case.call, _copies(case.make()),
                                                raise_exception=False)
    assert ("passed" if expected else "failed") == verdict
    report = customgrad.check(case.function, *case.make(), checks=["double_backward"])
    double = report.checks["double_backward"]
    assert double.status == verdict, double.detail


def test_a_once_differentiable_backward_is_skipped_where_gradgradcheck_fails_it():
    """gradgradcheck returns False; customgrad says the double backward is not supported
    (skipped, not a failure: the Jacobian's verdict stands; docs/parity.md)."""
    x = _rand(3, 4)
    assert not torch.autograd.gradgradcheck(SoftplusOnce.apply, (_g(x.clone()),),
                                            raise_exception=False)
    report = customgrad.check(SoftplusOnce, _g(x), checks=["double_backward"])
    double = report.checks["double_backward"]
    assert report.passed and double.status == "skipped"
    assert "@once_differentiable" in double.detail


def test_a_backward_raising_under_double_backward_names_its_line():
    """grad_output through numpy without detach: gradgradcheck raises; customgrad fails
    the double backward with the error and the user's line, not as a disagreement."""
    x = _rand(3, 4)
    with pytest.raises(RuntimeError, match="Can't call numpy"):
        torch.autograd.gradgradcheck(TanhNumpyBackward.apply, (_g(x.clone()),))
    report = customgrad.check(TanhNumpyBackward, _g(x), checks=["double_backward"])
    double = report.checks["double_backward"]
    assert double.status == "failed" and "disagrees" not in double.detail
    where = f"({__file__}:{_line_of('return torch.from_numpy(g.numpy() * (1 - y.numpy()')})"
    assert double.detail == ("TanhNumpyBackward.backward raises during double backward: "
                             "RuntimeError: Can't call numpy() on Tensor that requires grad. "
                             f"Use tensor.detach().numpy() instead. {where}")


def test_a_backward_failing_on_an_undefined_grad_output_names_its_line():
    """set_materialize_grads(False) and a backward that assumes both gradients are
    tensors: gradcheck raises the TypeError; customgrad fails undefined_grad, naming it and
    the user's line."""
    case = next(c for c in CASES if c.id == "split-no-materialize-unhandled")
    with pytest.raises(TypeError, match="expected Tensor"):
        torch.autograd.gradcheck(case.call, _copies(case.make()))
    report = customgrad.check(case.function, *case.make())
    detail = report.checks["undefined_grad"].detail
    assert report.checks["jacobian"].status == "passed"
    assert detail.startswith("backward fails when a grad_output is undefined (None): TypeError")
    line = _line_of("return torch.cat([ga, gb], dim=-1)  # ga or gb")
    assert detail.endswith(f"({__file__}:{line})")


def test_a_backward_failing_under_vmap_names_its_line():
    """batched_grad: grad_output through numpy cannot run under torch.vmap; gradcheck's
    check_batched_grad fails it, customgrad too, naming the error and the user's line."""
    x = _rand(3, 4)
    try:
        expected = torch.autograd.gradcheck(TanhNumpyBackward.apply, (_g(x.clone()),),
                                            check_batched_grad=True, raise_exception=False)
    except RuntimeError:  # gradcheck lets some errors under vmap through: a failure too
        expected = False
    assert not expected
    report = customgrad.check(TanhNumpyBackward, _g(x), checks=["batched_grad"])
    detail = report.checks["batched_grad"].detail
    assert report.checks["batched_grad"].status == "failed"
    assert detail.startswith("backward cannot run under torch.vmap (for output 0): ")
    line = _line_of("return torch.from_numpy(g.numpy() * (1 - y.numpy()")
    assert detail.endswith(f"({__file__}:{line})")
