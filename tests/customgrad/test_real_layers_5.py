"""A fifth set of custom autograd Functions from public GitHub repositories, shapes the first
four sets did not have: PyTorch's own ``autograd_function_db`` (new-style Functions with
``setup_context``, ``vmap`` staticmethods and ``generate_vmap_rule``, numpy forwards, a
``mark_dirty`` numpy write into ``.numpy()``, sort's ``mark_non_differentiable`` indices, a
forward with a default argument, integer index arguments, outputs that are views), the
PyTorch tutorials (a SciPy convolution with a filter and a bias, the "BadFFTFunction", the
fused Conv-BatchNorm with its ``eps=1e-3`` default and seven gradients for three inputs),
torch_scatter's Python-level scatter Functions (an ``out`` buffer dirtied in place and
saved, int64 indices, an argmax output), a complex multiply with broadcasting (butterfly),
an FFT convolution with a custom backward through complex spectra (Megalodon), StyleGAN's
blur with fixed kernels (float tensors never differentiated, a double backward of its own),
and ``set_materialize_grads(False)`` as torch's docstring writes it.

Each class names its source (repository and path) above it. The code is rewritten here, not
copied: the same operations in the same order, so the same gradients and the same bugs; only
imports and devices are adapted (CUDA kernels written in torch, op for op). The inputs are
those the repository uses where they are small (its sample shapes, float32 where it trains
in float32, int64 indices, defaults). Six bugs: two in PyTorch's own test database
(CubeGenVmap's gradient, NumpySort's forward), the tutorial's deliberately bad FFT, and three
made as people make them in the tutorials' and Megalodon's code (a transposed weight
gradient, a forgotten factor, a forgotten sum over the batch), each marked so.

Each case asserts gradcheck's verdict (so the case is the one named), customgrad's verdict
equal to it (or the documented deliberate difference, docs/parity.md), and where both judge
the mismatch mask equal entry for entry to gradcheck's slow mode's.
"""

# ruff: noqa: RUF059 (the repositories unpack what they do not use; kept as written)

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from numpy.fft import irfft2, rfft2
from scipy.signal import convolve2d, correlate2d
from torch.autograd import Function
from torch.autograd.function import once_differentiable
from torch.autograd.gradcheck import GradcheckError

import customgrad
from customgrad.errors import FunctionError
from tests.customgrad.test_real_layers import (
    Case,
    _c,
    _copies,
    _g,
    _rand,
    assert_gradchecks_verdict,
    assert_gradgradchecks_verdict,
)

# ==== PyTorch's autograd.Function database ======================================================
# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (the OpInfos torch's own
# vmap, functorch and compile tests run on custom Functions)


def to_numpy(tensor):
    return tensor.cpu().numpy()


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (NumpyCube: numpy forward,
# a second output 3x^2 that is differentiable too, backward through NumpyMul, a vmap rule)
class NumpyCube(Function):
    @staticmethod
    def forward(input):
        input_np = to_numpy(input)
        dinput = torch.tensor(3 * input_np ** 2, device=input.device)
        return torch.tensor(input_np ** 3, device=input.device), dinput

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])
        ctx.save_for_forward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, grad_output, grad_saved):
        input, dinput = ctx.saved_tensors
        return NumpyMul.apply(grad_output, dinput) + 6 * NumpyMul.apply(grad_saved, input)

    @staticmethod
    def vmap(info, in_dims, input):
        result = NumpyCube.apply(input)
        return result, (in_dims[0], in_dims[0])

    @staticmethod
    def jvp(ctx, input_tangent):
        input, dinput = ctx.saved_tensors
        return NumpyMul.apply(input_tangent, dinput), 6 * NumpyMul.apply(input_tangent, input)


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (CubeGenVmap). A bug in
# torch's own test database: ``6 * dinput`` where NumpyCube has ``6 * grad_saved * input``:
# the second output's gradient ignores its grad_output and uses 3x^2 for x
class CubeGenVmap(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(inputs[0], outputs[1])
        ctx.save_for_forward(inputs[0], outputs[1])

    @staticmethod
    def backward(ctx, grad_output, grad_saved):
        input, dinput = ctx.saved_tensors
        result = grad_output * dinput + 6 * dinput
        return result

    @staticmethod
    def jvp(ctx, input_tangent):
        input, dinput = ctx.saved_tensors
        return MulGenVmap.apply(input_tangent, dinput), 6 * NumpyMul.apply(input_tangent, input)


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (NumpyMul: broadcasting x
# [4] * y [3, 4]; backward returns x's gradient unreduced, [3, 4], and autograd sums it)
class NumpyMul(Function):
    @staticmethod
    def forward(x, y):
        return torch.tensor(to_numpy(x) * to_numpy(y), device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        gx = None
        if ctx.needs_input_grad[0]:
            gx = NumpyMul.apply(grad_output, y)
        gy = None
        if ctx.needs_input_grad[1]:
            gy = NumpyMul.apply(grad_output, x)
        return gx, gy

    @staticmethod
    def vmap(info, in_dims, x, y):
        x_bdim, y_bdim = in_dims
        x = x.movedim(x_bdim, -1) if x_bdim is not None else x.unsqueeze(-1)
        y = y.movedim(y_bdim, -1) if y_bdim is not None else y.unsqueeze(-1)
        result = NumpyMul.apply(x, y)
        result = result.movedim(-1, 0)
        return result, 0

    @staticmethod
    def jvp(ctx, x_tangent, y_tangent):
        x, y = ctx.saved_tensors
        return x_tangent * y + y_tangent * x


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (MulGenVmap:
# ``needs_input_grad`` decides each gradient, None for the other)
class MulGenVmap(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        gx = None
        if ctx.needs_input_grad[0]:
            gx = MulGenVmap.apply(grad_output, y)
        gy = None
        if ctx.needs_input_grad[1]:
            gy = MulGenVmap.apply(grad_output, x)
        return gx, gy

    @staticmethod
    def jvp(ctx, x_tangent, y_tangent):
        x, y = ctx.saved_tensors
        return x_tangent * y + y_tangent * x


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (NumpyExp_: exp written
# into x through its ``.numpy()`` view, ``mark_dirty`` from setup_context, the output saved)
class NumpyExp_(Function):
    @staticmethod
    def forward(x):
        x_np = to_numpy(x)
        np.exp(x_np, x_np)
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.mark_dirty(x)
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        output, = ctx.saved_tensors
        return NumpyMul.apply(grad_output, output)

    @staticmethod
    def vmap(info, in_dims, x):
        NumpyExp_.apply(x)
        return x, in_dims[0]

    @staticmethod
    def jvp(ctx, x_tangent):
        output, = ctx.saved_tensors
        x_tangent.mul_(output)
        return x_tangent


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (NumpySort: three outputs,
# the two int64 index tensors marked non-differentiable; backward through NumpyTake). A bug
# in torch's own test database: forward discards ``np.take_along_axis``'s result and returns
# x unsorted (the identity), while backward permutes grad_output by the inverse sort
class NumpySort(Function):
    @staticmethod
    def forward(x, dim):
        device = x.device
        x = to_numpy(x)
        ind = np.argsort(x, axis=dim)
        ind_inv = np.argsort(ind, axis=dim)
        np.take_along_axis(x, ind, axis=dim)
        return (
            torch.tensor(x, device=device),
            torch.tensor(ind, device=device),
            torch.tensor(ind_inv, device=device),
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, dim = inputs
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output, _0, _1):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim), None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 0)
        dim = dim if dim >= 0 else dim + x.dim() - 1
        return NumpySort.apply(x, dim + 1), (0, 0, 0)

    @staticmethod
    def jvp(ctx, x_tangent, _):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(x_tangent, ind, ind_inv, ctx.dim), None, None


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (NumpyTake: int64 index
# tensors as arguments, None returned for them)
class NumpyTake(Function):
    @staticmethod
    def forward(x, ind, ind_inv, dim):
        device = x.device
        x = to_numpy(x)
        ind = to_numpy(ind)
        return torch.tensor(np.take_along_axis(x, ind, dim), device=device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        result = NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)
        return result, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, ind, ind_inv, dim):
        x_bdim, ind_bdim, ind_inv_bdim, _ = in_dims
        logical_dim = x.dim() if x_bdim is None else x_bdim - 1
        dim = dim if dim >= 0 else dim + logical_dim

        def expand_bdim(x, x_bdim):
            if x_bdim is None:
                return x.expand(info.batch_size, *x.shape)
            return x.movedim(x_bdim, 0)

        x = expand_bdim(x, x_bdim)
        ind = expand_bdim(ind, ind_bdim)
        ind_inv = expand_bdim(ind_inv, ind_inv_bdim)
        return NumpyTake.apply(x, ind, ind_inv, dim + 1), 0

    @staticmethod
    def jvp(ctx, x_tangent, ind_tangent, ind_inv_tangent, _):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(x_tangent, ind, ind_inv, ctx.dim)


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (SortGenVmap and
# TakeGenVmap: a real sort, take_along_dim, generate_vmap_rule)
class SortGenVmap(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, dim):
        ind = torch.argsort(x, dim=dim)
        ind_inv = torch.argsort(ind, axis=dim)
        result = torch.take_along_dim(x, ind, dim=dim)
        return result, ind, ind_inv

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        x, dim = inputs
        _, ind, ind_inv = outputs
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output, _0, _1):
        ind, ind_inv = ctx.saved_tensors
        return TakeGenVmap.apply(grad_output, ind_inv, ind, ctx.dim), None

    @staticmethod
    def jvp(ctx, x_tangent, _):
        ind, ind_inv = ctx.saved_tensors
        return TakeGenVmap.apply(x_tangent, ind, ind_inv, ctx.dim), None, None


class TakeGenVmap(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, ind, ind_inv, dim):
        return torch.take_along_dim(x, ind, dim)

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        result = TakeGenVmap.apply(grad_output, ind_inv, ind, ctx.dim)
        return result, None, None, None

    @staticmethod
    def jvp(ctx, x_tangent, ind_tangent, ind_inv_tangent, _):
        ind, ind_inv = ctx.saved_tensors
        return TakeGenVmap.apply(x_tangent, ind, ind_inv, ctx.dim)


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (Select: ``x[idx]`` with an
# int index, an output that is a view of the input; backward writes into new_zeros)
class Select(Function):
    @staticmethod
    def forward(x, idx):
        return x[idx]

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, idx = inputs
        ctx.x_shape = x.shape
        ctx.idx = idx

    @staticmethod
    def backward(ctx, grad_output):
        result = grad_output.new_zeros(ctx.x_shape)
        result[ctx.idx] = grad_output
        return result, None

    @staticmethod
    def vmap(info, in_dims, x, idx):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 1)
        return Select.apply(x, idx), 0

    @staticmethod
    def jvp(ctx, x_tangent, _):
        return Select.apply(x_tangent, ctx.idx)


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (ForwardHasDefaultArgs:
# ``forward(x, idx=(2,))``, applied with x alone)
class ForwardHasDefaultArgs(Function):
    @staticmethod
    def forward(x, idx=(2,)):
        return x[idx]

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, idx = inputs
        ctx.x_shape = x.shape
        ctx.idx = idx

    @staticmethod
    def backward(ctx, grad_output):
        result = grad_output.new_zeros(ctx.x_shape)
        result[ctx.idx] = grad_output
        return result, None

    @staticmethod
    def vmap(info, in_dims, x, idx):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 1)
        return ForwardHasDefaultArgs.apply(x, idx), 0

    @staticmethod
    def jvp(ctx, x_tangent, _):
        return ForwardHasDefaultArgs.apply(x_tangent, ctx.idx)


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (ScaleGradGenVmap: the
# gradient scaled by 3.14 on purpose, a class attribute)
class ScaleGradGenVmap(Function):
    generate_vmap_rule = True
    scale = 3.14

    @staticmethod
    def forward(x):
        return x.clone()

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ScaleGradGenVmap.scale

    @staticmethod
    def jvp(ctx, x_tangent):
        return x_tangent * ScaleGradGenVmap.scale


# pytorch/pytorch, torch/testing/_internal/autograd_function_db.py (ZeroGradientsGenVmap:
# "intentionally too-large gradient" of zeros [3, 4, *x.shape] for x, which autograd sums
# back to x's shape; zeros for y)
class ZeroGradientsGenVmap(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x.clone(), y.clone()

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        pass

    @staticmethod
    def backward(ctx, gx, gy):
        return (
            torch.zeros(3, 4, *gx.shape, dtype=gx.dtype, device=gx.device),
            torch.zeros(gy.shape, dtype=gy.dtype, device=gy.device),
        )

    @staticmethod
    def jvp(ctx, gx, gy):
        return (
            torch.zeros(gx.shape, dtype=gx.dtype, device=gx.device),
            torch.zeros(gy.shape, dtype=gy.dtype, device=gy.device),
        )


# ==== the PyTorch tutorials =====================================================================


# pytorch/tutorials, advanced_source/numpy_extensions_tutorial.py (ScipyConv2dFunction: a
# valid cross-correlation in SciPy with a learnable filter and a [1, 1] bias)
class ScipyConv2dFunction(Function):
    @staticmethod
    def forward(ctx, input, filter, bias):
        input, filter, bias = input.detach(), filter.detach(), bias.detach()
        result = correlate2d(input.numpy(), filter.numpy(), mode='valid')
        result += bias.numpy()
        ctx.save_for_backward(input, filter, bias)
        return torch.as_tensor(result, dtype=input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        grad_output = grad_output.detach()
        input, filter, bias = ctx.saved_tensors
        grad_output = grad_output.numpy()
        grad_bias = np.sum(grad_output, keepdims=True)
        grad_input = convolve2d(grad_output, filter.numpy(), mode='full')
        grad_filter = correlate2d(input.numpy(), grad_output, mode='valid')
        return (torch.as_tensor(grad_input, dtype=input.dtype),
                torch.as_tensor(grad_filter, dtype=filter.dtype),
                torch.as_tensor(grad_bias, dtype=bias.dtype))


# pytorch/tutorials, advanced_source/numpy_extensions_tutorial.py (BadFFTFunction, "aptly
# named": |rfft2| forward, irfft2 of grad_output as its "gradient"; the staticmethod version,
# as zhenyuzhouiu/Python_Tutorial, pytorch_tutorial/pytorch-extensions-using-numpy-and-scipy/
# parameter-less.py copies it)
class BadFFTFunction(Function):
    @staticmethod
    def forward(ctx, input):
        numpy_input = input.detach().numpy()
        result = abs(rfft2(numpy_input))
        return input.new(result)

    @staticmethod
    def backward(ctx, grad_output):
        numpy_go = grad_output.numpy()
        result = irfft2(numpy_go)
        return grad_output.new(result)


# pytorch/tutorials, intermediate_source/custom_function_conv_bn_tutorial.py
def convolution_backward(grad_out, X, weight):
    grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
    grad_X = F.conv_transpose2d(grad_out, weight)
    return grad_X, grad_input


# pytorch/tutorials, intermediate_source/custom_function_conv_bn_tutorial.py (Conv2D, once
# differentiable)
class Conv2D(Function):
    @staticmethod
    def forward(ctx, X, weight):
        ctx.save_for_backward(X, weight)
        return F.conv2d(X, weight)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        return convolution_backward(grad_out, X, weight)


def convolution_backward_untransposed(grad_out, X, weight):
    """BUG made here: the tutorial's weight gradient without its last ``.transpose(0, 1)``
    ([C_in, C_out, k, k] for a [C_out, C_in, k, k] weight: the right shape where C_in = C_out,
    the wrong entries)."""
    grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1))
    grad_X = F.conv_transpose2d(grad_out, weight)
    return grad_X, grad_input


class Conv2DWeightGradTransposed(Conv2D):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        return convolution_backward_untransposed(grad_out, X, weight)


# pytorch/tutorials, intermediate_source/custom_function_conv_bn_tutorial.py
def unsqueeze_all(t):
    return t[None, :, None, None]


# pytorch/tutorials, intermediate_source/custom_function_conv_bn_tutorial.py (the tutorial's
# batch norm backward, unbiased variance, eps outside the square root)
def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps, unbiased=True):
    tmp = -((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
    d_denom = tmp / (sqrt_var + eps)**2
    d_var = d_denom / (2 * sqrt_var)
    d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
    d_mean_dx = unsqueeze_all(-d_mean_dx.sum(dim=(0, 2, 3)) / N)
    grad_input = X * unsqueeze_all(d_var * N)
    grad_input += unsqueeze_all(-d_var * sum)
    # (the BUG made for BatchNormBiasedFactor: N where forward's unbiased variance has N - 1)
    grad_input *= 2 / (((N - 1) if unbiased else N) * N)
    grad_input += d_mean_dx
    grad_input *= unsqueeze_all(sqrt_var + eps)
    grad_input += grad_out
    grad_input /= unsqueeze_all(sqrt_var + eps)
    return grad_input


# pytorch/tutorials, intermediate_source/custom_function_conv_bn_tutorial.py (BatchNorm:
# ``forward(ctx, X, eps=1e-3)``, statistics kept on ctx, once differentiable)
class BatchNorm(Function):
    @staticmethod
    def forward(ctx, X, eps=1e-3):
        sum = X.sum(dim=(0, 2, 3))
        var = X.var(unbiased=True, dim=(0, 2, 3))
        N = X.numel() / X.size(1)
        sqrt_var = torch.sqrt(var)
        ctx.save_for_backward(X)
        ctx.eps = eps
        ctx.sum = sum
        ctx.N = N
        ctx.sqrt_var = sqrt_var
        mean = sum / N
        denom = sqrt_var + eps
        return (X - unsqueeze_all(mean)) / unsqueeze_all(denom)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, = ctx.saved_tensors
        return batch_norm_backward(grad_out, X, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)


class BatchNormBiasedFactor(BatchNorm):
    """BUG made here: the variance term's 2 / ((N - 1) N) written 2 / (N N) (a forgotten
    Bessel factor)."""

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, = ctx.saved_tensors
        return batch_norm_backward(grad_out, X, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps,
                                   unbiased=False)


# pytorch/tutorials, intermediate_source/custom_function_conv_bn_tutorial.py
# (FusedConvBN2DFunction: saves the input only, recomputes the convolution in backward, and
# returns seven gradients for three inputs, the last five None: autograd drops them)
class FusedConvBN2DFunction(Function):
    @staticmethod
    def forward(ctx, X, conv_weight, eps=1e-3):
        assert X.ndim == 4
        ctx.save_for_backward(X, conv_weight)
        X = F.conv2d(X, conv_weight)
        sum = X.sum(dim=(0, 2, 3))
        var = X.var(unbiased=True, dim=(0, 2, 3))
        N = X.numel() / X.size(1)
        sqrt_var = torch.sqrt(var)
        ctx.eps = eps
        ctx.sum = sum
        ctx.N = N
        ctx.sqrt_var = sqrt_var
        mean = sum / N
        denom = sqrt_var + eps
        out = X - unsqueeze_all(mean)
        out /= unsqueeze_all(denom)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        X, conv_weight, = ctx.saved_tensors
        X_conv_out = F.conv2d(X, conv_weight)
        grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var,
                                       ctx.N, ctx.eps)
        grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
        return grad_X, grad_input, None, None, None, None, None


# ==== torch_scatter's Python-level Functions ====================================================
# rusty1s/pytorch_scatter (1.x): ``out`` is a float buffer forward writes into (mark_dirty),
# saves, and returns; backward returns None for it. The CUDA/C kernels are written in torch
# here, element for element.


def _positions(shape):
    return itertools.product(*(range(n) for n in shape))


def _scatter_kernel(src, index, out, dim, op, arg=None):
    """torch_scatter's scatter_{mul,div,max} kernels: each src element into out at its index
    along dim."""
    dim = dim % src.dim()
    for p in _positions(src.shape):
        o = list(p)
        o[dim] = int(index[p])
        o = tuple(o)
        if op == "mul":
            out[o] *= src[p]
        elif op == "div":
            out[o] /= src[p]
        elif src[p] > out[o]:  # max, with argmax
            out[o] = src[p]
            arg[o] = p[dim]


# rusty1s/pytorch_scatter, torch_scatter/mul.py (ScatterMul)
class ScatterMul(Function):
    @staticmethod
    def forward(ctx, out, src, index, dim):
        _scatter_kernel(src, index, out, dim, "mul")

        ctx.mark_dirty(out)
        ctx.save_for_backward(out, src, index)
        ctx.dim = dim

        return out

    @staticmethod
    def backward(ctx, grad_out):
        out, src, index = ctx.saved_tensors

        grad_src = None
        if ctx.needs_input_grad[1]:
            grad_src = (grad_out * out).gather(ctx.dim, index) / src

        return None, grad_src, None, None


# rusty1s/pytorch_scatter, torch_scatter/div.py (ScatterDiv: ``saved_variables``)
class ScatterDiv(Function):
    @staticmethod
    def forward(ctx, out, src, index, dim):
        _scatter_kernel(src, index, out, dim, "div")

        ctx.mark_dirty(out)
        ctx.save_for_backward(out, src, index)
        ctx.dim = dim

        return out

    @staticmethod
    def backward(ctx, grad_out):
        out, src, index = ctx.saved_variables

        grad_src = None
        if ctx.needs_input_grad[1]:
            grad_src = -(out * grad_out).gather(ctx.dim, index) / src

        return None, grad_src, None, None


# rusty1s/pytorch_scatter, torch_scatter/max.py (ScatterMax: returns (out, argmax), the
# int64 argmax -1 where nothing was scattered; backward scatters into a padded buffer)
class ScatterMax(Function):
    @staticmethod
    def forward(ctx, out, src, index, dim):
        arg = index.new_full(out.size(), -1)
        _scatter_kernel(src, index, out, dim, "max", arg)

        ctx.mark_dirty(out)
        ctx.dim = dim
        ctx.save_for_backward(index, arg)

        return out, arg

    @staticmethod
    def backward(ctx, grad_out, grad_arg):
        index, arg = ctx.saved_tensors

        grad_src = None
        if ctx.needs_input_grad[1]:
            size = list(index.size())
            size[ctx.dim] += 1
            grad_src = grad_out.new_zeros(size)
            grad_src.scatter_(ctx.dim, arg.detach() + 1, grad_out)
            grad_src = grad_src.narrow(ctx.dim, 1, index.size(ctx.dim))

        return None, grad_src, None, None


# ==== complex layers ============================================================================


# HazyResearch/butterfly, torch_butterfly/complex_utils.py (ComplexMul: "Autograd for complex
# isn't implemented yet so we have to manually write the backward"; broadcasting, summed back
# with sum_to_size, needs_input_grad)
class ComplexMul(Function):
    @staticmethod
    def forward(ctx, X, Y):
        ctx.save_for_backward(X, Y)
        return X * Y

    @staticmethod
    def backward(ctx, grad):
        X, Y = ctx.saved_tensors
        grad_X, grad_Y = None, None
        if ctx.needs_input_grad[0]:
            grad_X = (grad * Y.conj()).sum_to_size(*X.shape)
        if ctx.needs_input_grad[1]:
            grad_Y = (grad * X.conj()).sum_to_size(*Y.shape)
        return grad_X, grad_Y


# XuezheMax/megalodon, megalodon/modules/fused_ops/fftconv.py (FFTConvFunc on the CPU path:
# _fftconv_fwd and _fftconv_bwd; saves the complex spectra x_f and k_f, not x and k)
def _fftconv_fwd(x, k):
    L = x.size(-1)
    N = L if (L & (L - 1)) == 0 else (1 << L.bit_length())
    dtype = x.dtype
    if dtype == torch.float16 or dtype == torch.bfloat16:
        x = x.float()
    x_f = torch.fft.rfft(x, n=2 * N)
    k_f = torch.fft.rfft(k, n=2 * N, norm="forward")
    y_f = x_f * k_f
    y = torch.fft.irfft(y_f, n=2 * N, norm="forward")[..., :L]
    if dtype == torch.float16 or dtype == torch.bfloat16:
        y = y.to(dtype)
    return y, x_f, k_f


def _fftconv_bwd(y_grad, x_f, k_f, batch_summed=True):
    L = y_grad.size(-1)
    N = L if (L & (L - 1)) == 0 else (1 << L.bit_length())
    dtype = y_grad.dtype
    if dtype == torch.float16 or dtype == torch.bfloat16:
        y_grad = y_grad.float()
    y_grad_f = torch.fft.rfft(y_grad.flip(dims=(-1,)), n=2 * N)
    x_grad_f = y_grad_f * k_f
    k_grad_f = y_grad_f * x_f
    x_grad = torch.fft.irfft(x_grad_f, n=2 * N, norm="forward")[..., :L].flip(dims=(-1,))
    # (the BUG made for FFTConvFirstSampleOnly: the first sample's spectrum, not the sum)
    k_grad = torch.fft.irfft(k_grad_f.sum(dim=0) if batch_summed else k_grad_f[0],
                             n=2 * N)[..., :L].flip(dims=(-1,))
    if dtype == torch.float16 or dtype == torch.bfloat16:
        x_grad = x_grad.to(dtype)
    return x_grad, k_grad


class FFTConvFunc(Function):
    @staticmethod
    def forward(ctx, x, k):
        y, x_f, k_f = _fftconv_fwd(x, k)
        ctx.save_for_backward(x_f, k_f)
        ctx.k_dtype = k.dtype
        return y

    @staticmethod
    def backward(ctx, y_grad):
        x_f, k_f = ctx.saved_tensors
        return _fftconv_bwd(y_grad, x_f, k_f)


class FFTConvFirstSampleOnly(FFTConvFunc):
    """BUG made here: the kernel's gradient from the first sample of the batch only (the sum
    over the batch forgotten, with a gradient of the right shape)."""

    @staticmethod
    def backward(ctx, y_grad):
        x_f, k_f = ctx.saved_tensors
        return _fftconv_bwd(y_grad, x_f, k_f, batch_summed=False)


# ==== StyleGAN's blur: fixed kernels, a double backward of its own ==============================


# rosinality/style-based-gan-pytorch, model.py (BlurFunctionBackward and BlurFunction; the
# Blur module's buffers: [[1, 2, 1], [2, 4, 2], [1, 2, 1]] / 16 per channel and its flip)
class BlurFunctionBackward(Function):
    @staticmethod
    def forward(ctx, grad_output, kernel, kernel_flip):
        ctx.save_for_backward(kernel, kernel_flip)
        grad_input = F.conv2d(grad_output, kernel_flip, padding=1, groups=grad_output.shape[1])
        return grad_input

    @staticmethod
    def backward(ctx, gradgrad_output):
        kernel, kernel_flip = ctx.saved_tensors
        grad_input = F.conv2d(gradgrad_output, kernel, padding=1,
                              groups=gradgrad_output.shape[1])
        return grad_input, None, None


class BlurFunction(Function):
    @staticmethod
    def forward(ctx, input, kernel, kernel_flip):
        ctx.save_for_backward(kernel, kernel_flip)
        output = F.conv2d(input, kernel, padding=1, groups=input.shape[1])
        return output

    @staticmethod
    def backward(ctx, grad_output):
        kernel, kernel_flip = ctx.saved_tensors
        grad_input = BlurFunctionBackward.apply(grad_output, kernel, kernel_flip)
        return grad_input, None, None


def _blur_kernels(channel, dtype=torch.float64, weight=None):
    """The Blur module's two buffers (its binomial kernel, or ``weight``) for ``channel``
    channels."""
    if weight is None:
        weight = torch.tensor([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=dtype)
        weight = weight.view(1, 1, 3, 3)
        weight = weight / weight.sum()
    weight_flip = torch.flip(weight, [2, 3])
    return weight.repeat(channel, 1, 1, 1), weight_flip.repeat(channel, 1, 1, 1)


# ==== set_materialize_grads, as torch's docstring writes it =====================================


# pytorch/pytorch, torch/autograd/function.py (FunctionCtx.set_materialize_grads's example:
# SimpleFunc, materialized, and Func, "We must check for None now")
class SimpleFunc(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone(), x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):
        return g1 + g2


class Func(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x.clone(), x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):
        x, = ctx.saved_tensors
        grad_input = torch.zeros_like(x)
        if g1 is not None:
            grad_input += g1
        if g2 is not None:
            grad_input += g2
        return grad_input


# ==== the cases =================================================================================


def _f32(t):
    return t.to(torch.float32)


def _between(low, high, *shape, seed=0, dtype=torch.float64):
    """``make_tensor(shape, low=low, high=high)`` as autograd_function_db's samples draw."""
    u = torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return low + (high - low) * u


def _sort_indices(x, dim=1):
    """NumpyTake's sample: the indices NumpySort gives for x."""
    _, ind, ind_inv = NumpySort.apply(x.detach(), dim)
    return ind, ind_inv


#: torch_scatter's docstring example: index [2, 5] into out [2, 6] along the last dim
_SCATTER_INDEX = torch.tensor([[4, 5, 4, 2, 3], [0, 0, 2, 2, 1]])


def _scatter_args(fill, src):
    return (torch.full((2, 6), fill, dtype=torch.float64), _g(src), _SCATTER_INDEX, -1)


def _blur_args(dtype=torch.float64, weight=None):
    kernel, kernel_flip = _blur_kernels(3, dtype, weight)
    return (_g(_rand(2, 3, 5, 5, dtype=dtype)), kernel, kernel_flip)


CASES = [
    # PyTorch's autograd.Function database, its sample inputs (make_tensor's ranges)
    Case("torch-db-numpy-cube", NumpyCube, lambda: (_g(_between(0.8, 2, 1)),), "passed"),
    Case("torch-db-numpy-cube-5", NumpyCube, lambda: (_g(_between(0.8, 2, 5)),), "passed"),
    Case("torch-db-cube-gen-vmap", CubeGenVmap, lambda: (_g(_between(0.8, 2, 5)),), "failed"),
    Case("torch-db-numpy-mul-broadcast", NumpyMul,
         lambda: (_g(_between(0.9, 2, 4)), _g(_between(0.9, 2, 3, 4, seed=1))), "passed"),
    Case("torch-db-mul-gen-vmap", MulGenVmap,
         lambda: (_g(_between(0.9, 2, 4)), _g(_between(0.9, 2, 3, 4, seed=1))), "passed"),
    # y a float tensor that never requires grad: needs_input_grad[1] False, None returned
    Case("torch-db-mul-gen-vmap-y-fixed", MulGenVmap,
         lambda: (_g(_between(0.9, 2, 3, 4)), _between(0.9, 2, 4, seed=1)), "passed"),
    Case("torch-db-numpy-exp-mark-dirty", NumpyExp_, lambda: (_g(_between(0.8, 2, 3, 2)),),
         "passed", inplace=0),
    Case("torch-db-numpy-sort-returns-unsorted", NumpySort, lambda: (_g(_rand(3, 5)), 1),
         "failed"),
    Case("torch-db-numpy-take", NumpyTake,
         lambda: (_g(_rand(3, 5)), *_sort_indices(_rand(3, 5)), 1), "passed"),
    Case("torch-db-sort-gen-vmap", SortGenVmap, lambda: (_g(_rand(3, 5)), 1), "passed"),
    Case("torch-db-select", Select, lambda: (_g(_rand(3, 5)), 2), "passed"),
    Case("torch-db-forward-has-default-args", ForwardHasDefaultArgs, lambda: (_g(_rand(3, 5)),),
         "passed"),
    Case("torch-db-scale-grad-gen-vmap", ScaleGradGenVmap, lambda: (_g(_rand(3, 5)),),
         "failed"),
    Case("torch-db-zero-gradients-too-large", ZeroGradientsGenVmap,
         lambda: (_g(_rand(3, 5)), _g(_rand(3, 5, seed=1))), "failed"),
    # the PyTorch tutorials (the numpy tutorial's shapes: a 10x10 input, 3x3 filter, 1x1 bias)
    Case("tutorial-scipy-conv2d", ScipyConv2dFunction,
         lambda: (_g(_rand(10, 10)), _g(_rand(3, 3, seed=1)), _g(_rand(1, 1, seed=2))),
         "passed", slow=True),
    # the filter and bias fixed (not requiring grad): backward still returns their gradients
    # (no needs_input_grad), which gradcheck ignores
    Case("tutorial-scipy-conv2d-fixed-filter", ScipyConv2dFunction,
         lambda: (_g(_rand(6, 6)), _rand(3, 3, seed=1), _rand(1, 1, seed=2)), "passed",
         plain=False),
    Case("tutorial-bad-fft", BadFFTFunction, lambda: (_g(_rand(8, 8)),), "failed"),
    Case("tutorial-conv2d", Conv2D,
         lambda: (_g(_between(0, 1, 2, 3, 5, 5)), _g(_between(0, 1, 4, 3, 3, 3, seed=1))),
         "passed"),
    Case("tutorial-conv2d-weight-grad-transposed", Conv2DWeightGradTransposed,
         lambda: (_g(_between(0, 1, 2, 3, 4, 4)), _g(_between(0, 1, 3, 3, 3, 3, seed=1))),
         "failed"),
    Case("tutorial-batch-norm", BatchNorm, lambda: (_g(_between(0, 1, 1, 2, 3, 4)),), "passed"),
    # eps given: apply(X, 0.1) has two inputs, backward returns one gradient: autograd (so
    # gradcheck) raises; customgrad names the return line
    Case("tutorial-batch-norm-eps-given", BatchNorm,
         lambda: (_g(_between(0, 1, 1, 2, 3, 4)), 0.1), "error"),
    Case("tutorial-batch-norm-bessel-factor-forgotten", BatchNormBiasedFactor,
         lambda: (_g(_between(0, 1, 1, 2, 3, 4)),), "failed"),
    Case("tutorial-fused-conv-bn", FusedConvBN2DFunction,
         lambda: (_g(_between(0, 1, 2, 3, 4, 4)), _g(_between(0, 1, 5, 3, 3, 3, seed=1))),
         "passed"),
    # torch_scatter: out dirtied in place (gradcheck gets a clone of it), int64 index
    Case("scatter-mul", ScatterMul, lambda: _scatter_args(1.0, _between(0.5, 2, 2, 5)),
         "passed", inplace=0),
    Case("scatter-div", ScatterDiv, lambda: _scatter_args(1.0, _between(0.5, 2, 2, 5)),
         "passed", inplace=0),
    Case("scatter-max", ScatterMax, lambda: _scatter_args(0.0, _rand(2, 5)), "passed",
         inplace=0),
    # complex
    Case("butterfly-complex-mul", ComplexMul,
         lambda: (_g(_c(3, 4)), _g(_c(4, seed=1))), "passed"),
    Case("butterfly-complex-mul-y-fixed", ComplexMul,
         lambda: (_g(_c(3, 4)), _c(4, seed=1)), "passed", plain=False),
    # complex64, as float32: gradcheck's eps drowns in its rounding; customgrad judges it in
    # double precision at the complex64 point (docs/parity.md)
    Case("butterfly-complex-mul-complex64", ComplexMul,
         lambda: (_g(_c(3, 4).to(torch.complex64)), _g(_c(4, seed=1).to(torch.complex64))),
         "failed", ours="passed", mask=False),
    Case("megalodon-fftconv", FFTConvFunc, lambda: (_g(_rand(2, 3, 5)), _g(_rand(3, 5, seed=1))),
         "passed"),
    Case("megalodon-fftconv-kernel-fixed", FFTConvFunc,
         lambda: (_g(_rand(2, 3, 5)), _rand(3, 5, seed=1)), "passed", plain=False),
    Case("megalodon-fftconv-batch-sum-forgotten", FFTConvFirstSampleOnly,
         lambda: (_g(_rand(2, 3, 5)), _g(_rand(3, 5, seed=1))), "failed"),
    Case("megalodon-fftconv-float32", FFTConvFunc,
         lambda: (_g(_f32(_rand(2, 3, 5))), _g(_f32(_rand(3, 5, seed=1)))), "failed",
         ours="passed", mask=False),
    # StyleGAN's blur: kernel and flipped kernel are float buffers, never differentiated
    Case("stylegan-blur", BlurFunction, _blur_args, "passed"),
    Case("stylegan-blur-asymmetric-kernel", BlurFunction,
         lambda: _blur_args(weight=_rand(1, 1, 3, 3, seed=3)), "passed"),
    Case("stylegan-blur-float32", BlurFunction, lambda: _blur_args(torch.float32), "failed",
         ours="passed", mask=False),
    # set_materialize_grads
    Case("docstring-simple-func", SimpleFunc, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("docstring-no-materialize", Func, lambda: (_g(_rand(3, 4)),), "passed"),
]


# ==== the verdicts, beside gradcheck's =========================================================


@pytest.fixture(autouse=True)
def _no_deprecation_noise():
    # saved_variables (ScatterDiv) and x.new(ndarray) (BadFFTFunction) warn; the
    # repositories' code is kept as written
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_the_verdict_and_mismatch_mask_are_gradchecks(case):
    assert_gradchecks_verdict(case, __file__)


@pytest.mark.parametrize("case", [c.param() for c in CASES
                                  if c.plain and "error" not in (c.expected, c.ours)])
def test_with_nothing_requiring_grad_the_verdict_is_the_same(case):
    """No tensor requires grad: customgrad differentiates every floating-point tensor but
    those backward returns None for (the scatter buffers, the blur kernels)."""
    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in case.make())
    report = customgrad.check(case.function, *plain)
    assert ("passed" if report.passed else "failed") == (case.ours or case.expected)


# ==== the double backward, beside gradgradcheck's ==============================================

#: gradgradcheck's verdict on the cases gradcheck passes whose backward is differentiable
#: (once_differentiable and numpy backwards left out: gradgradcheck fails or raises there)
DOUBLE = {
    "torch-db-numpy-cube-5": "passed", "torch-db-numpy-mul-broadcast": "passed",
    "torch-db-mul-gen-vmap": "passed", "torch-db-mul-gen-vmap-y-fixed": "passed",
    "torch-db-numpy-take": "passed",
    "torch-db-sort-gen-vmap": "passed", "torch-db-select": "passed",
    "torch-db-forward-has-default-args": "passed", "tutorial-fused-conv-bn": "failed",
    "scatter-mul": "passed", "scatter-div": "passed", "scatter-max": "passed",
    "butterfly-complex-mul": "passed", "butterfly-complex-mul-y-fixed": "passed",
    "megalodon-fftconv": "failed", "stylegan-blur": "passed",
    "stylegan-blur-asymmetric-kernel": "passed",
}


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.id in DOUBLE])
def test_the_double_backward_verdict_is_gradgradchecks(case):
    assert_gradgradchecks_verdict(case, DOUBLE[case.id])


# ==== batched gradients: the vmap rules, beside check_batched_grad ==============================

#: gradcheck's ``check_batched_grad=True`` verdict and customgrad's opt-in ``batched_grad``
#: sub-check's. gradcheck vmaps backward with its legacy batching, which does not use a
#: Function's ``vmap`` staticmethod: NumpyCube's and NumpyMul's numpy backwards meet batched
#: tensors there and it fails ("Batching rule not implemented for aten::detach"), where
#: torch.func.vmap (what customgrad runs, and what people's vmap calls run) uses their vmap
#: rules and gets one call at a time's gradients (docs/parity.md: a deliberate difference)
BATCHED = {
    "torch-db-numpy-cube-5": ("failed", "passed"),
    "torch-db-numpy-mul-broadcast": ("failed", "passed"),
    "torch-db-mul-gen-vmap": ("passed", "passed"),
    "torch-db-sort-gen-vmap": ("passed", "passed"),
    "torch-db-select": ("passed", "passed"),
    "torch-db-forward-has-default-args": ("passed", "passed"),
    "stylegan-blur": ("passed", "passed"),
}


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.id in BATCHED])
def test_the_batched_grad_verdict_is_gradchecks_but_with_vmap_rules(case):
    expected, ours = BATCHED[case.id]
    verdict = "passed"
    try:
        torch.autograd.gradcheck(case.call, _copies(case.make()), check_batched_grad=True)
    except GradcheckError as exc:  # with raise_exception=False, gradcheck returns False
        assert "While computing batched gradients, got: Batching rule not implemented" \
            in str(exc)
        verdict = "failed"
    assert verdict == expected
    report = customgrad.check(case.function, *case.make(), checks=["batched_grad"])
    assert report.checks["batched_grad"].status == ours, report.checks["batched_grad"].detail


# ==== what differed, and the fixes (each test fails before it) =================================


def test_a_ctx_function_applied_without_its_default_gets_one_gradient_per_argument_given():
    """The PyTorch tutorial's ``BatchNorm.apply(X)`` for ``forward(ctx, X, eps=1e-3)``: apply
    hands autograd X alone, so backward's one gradient is right and gradcheck passes.
    customgrad filled eps in and asked two ("BatchNorm.backward returned 1 gradient, but
    forward takes 2 arguments (X, eps)"): a FunctionError where gradcheck passes. Now it
    applies the Function to what it is given, as gradcheck does; given eps, both raise (an
    error naming backward's return line here); a setup_context Function's apply binds its
    defaults itself (ForwardHasDefaultArgs returns one gradient per parameter) and stays."""
    x = _g(_between(0, 1, 1, 2, 3, 4))
    assert torch.autograd.gradcheck(BatchNorm.apply, (x.detach().clone().requires_grad_(),))
    report = customgrad.check(BatchNorm, x)
    assert report.passed, report.text()
    assert [a.name for a in report.inputs] == ["X"]
    assert not customgrad.check(BatchNormBiasedFactor, x).passed
    with pytest.raises(FunctionError, match=r"returned 1 gradient, but forward takes 2"):
        customgrad.check(BatchNorm, x, 0.1)
    # forward(ctx, x, weight, stride=1, padding=1)-like: a gradient per parameter, trailing
    # Nones for the defaults, passes with and without them given
    assert customgrad.check(FusedConvBN2DFunction, _g(_between(0, 1, 2, 3, 4, 4)),
                            _g(_between(0, 1, 5, 3, 3, 3, seed=1))).passed
    assert customgrad.check(ForwardHasDefaultArgs, _g(_rand(3, 5))).passed


def test_batched_grad_runs_a_backward_calling_an_old_style_function_as_gradcheck_does():
    """StyleGAN's BlurFunction.backward calls BlurFunctionBackward.apply, a Function without
    setup_context: torch.vmap refuses it ("it must override the setup_context staticmethod"),
    and the opt-in ``batched_grad`` sub-check FAILED where gradcheck's
    ``check_batched_grad=True`` (its own vmap) passes. It now tries gradcheck's vmap where
    torch.vmap cannot run backward; a backward that batches wrongly still fails."""
    args = _blur_args()
    assert torch.autograd.gradcheck(BlurFunction.apply, _copies(args), check_batched_grad=True)
    report = customgrad.check(BlurFunction, *args, checks=["batched_grad"])
    assert report.checks["batched_grad"].status == "passed", report.checks["batched_grad"].detail
