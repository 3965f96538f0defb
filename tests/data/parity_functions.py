"""Functions shaped like real layers, correct and buggy, to hold customgrad's verdicts to
gradcheck's (tests/customgrad/test_parity.py): a filter bank whose float taps are never
differentiated, an in-place numpy forward with ``mark_dirty``, a sparsemax-like forward with
defaults, and forwards that compute in float32. Our own code, written for these tests.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd import Function


class FilterBank(Function):
    """x [batch, n] filtered by each row of ``taps`` [filters, k] (a wavelet bank's analysis
    step); the taps are fixed, so backward returns None for them."""

    @staticmethod
    def forward(ctx, x, taps):
        ctx.save_for_backward(taps)
        return F.conv1d(x.unsqueeze(1), taps.unsqueeze(1), padding=taps.shape[-1] // 2)

    @staticmethod
    def backward(ctx, g):
        (taps,) = ctx.saved_tensors
        gx = F.conv_transpose1d(g, taps.unsqueeze(1), padding=taps.shape[-1] // 2)
        return gx.squeeze(1), None


class FilterBankFlipped(FilterBank):
    """The classic filter-bank bug: the adjoint with the taps not flipped."""

    @staticmethod
    def backward(ctx, g):
        (taps,) = ctx.saved_tensors
        gx = F.conv1d(g, taps.unsqueeze(0), padding=taps.shape[-1] // 2)
        return gx.squeeze(1), None


class FilterBank2D(Function):
    """x [batch, h, w] filtered by separable taps: rows by ``row`` [k], columns by ``col``
    [k]; neither is differentiated."""

    @staticmethod
    def forward(ctx, x, row, col):
        ctx.save_for_backward(row, col)
        pad = row.shape[0] // 2
        y = F.conv2d(x.unsqueeze(1), row.view(1, 1, 1, -1), padding=(0, pad))
        return F.conv2d(y, col.view(1, 1, -1, 1), padding=(pad, 0)).squeeze(1)

    @staticmethod
    def backward(ctx, g):
        row, col = ctx.saved_tensors
        pad = row.shape[0] // 2
        gy = F.conv_transpose2d(g.unsqueeze(1), col.view(1, 1, -1, 1), padding=(pad, 0))
        gx = F.conv_transpose2d(gy, row.view(1, 1, 1, -1), padding=(0, pad))
        return gx.squeeze(1), None, None


class NumpyExpInplace(Function):
    """exp computed in place through numpy (the version counter never sees the write), the
    input marked dirty, as torch's own NumpyExp_ test Function does."""

    @staticmethod
    def forward(x):
        array = x.detach().numpy()
        np.exp(array, array)
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class NumpyExpInplaceBuggy(NumpyExpInplace):
    """Returns grad_output * y * y: exp's derivative squared."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * y


class ExpInplaceCtx(Function):
    """exp_ in place with torch, old style with ctx.mark_dirty."""

    @staticmethod
    def forward(ctx, x):
        x.exp_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class Sparsemaxish(Function):
    """A softmax along ``dim`` with a sparsemax-like signature: ``k`` (a top-k hint) unused."""

    @staticmethod
    def forward(ctx, X, dim=-1, k=None):
        ctx.dim = dim
        y = torch.softmax(X, dim)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None, None


class SparsemaxishNoCentering(Sparsemaxish):
    """Forgets to subtract the weighted mean of grad_output."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * g, None, None


class SiluFloat32(Function):
    """SiLU computed in float32 whatever comes in (a kernel with one precision), returned
    in the input's dtype."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        x32 = x.float()
        return (x32 * torch.sigmoid(x32)).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * (s * (1 + x * (1 - s)))


class SiluFloat32Buggy(SiluFloat32):
    """Forgets the sigmoid's own derivative: grad * sigmoid(x)."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x)


class EmbeddingBag(Function):
    """Rows of ``weight`` picked by ``idx`` (an int64 index tensor), summed by index."""

    @staticmethod
    def forward(ctx, weight, idx):
        ctx.save_for_backward(idx)
        ctx.rows = weight.shape[0]
        return weight[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        grad = torch.zeros(ctx.rows, *g.shape[1:], dtype=g.dtype, device=g.device)
        return grad.index_add_(0, idx, g), None


class SumDims(Function):
    """x summed over ``dims`` (a tuple, as torch.sum takes it)."""

    @staticmethod
    def forward(ctx, x, dims=(1,)):
        ctx.shape, ctx.dims = x.shape, dims
        return x.sum(dims)

    @staticmethod
    def backward(ctx, g):
        for d in sorted(ctx.dims):
            g = g.unsqueeze(d)
        return g.expand(ctx.shape), None


class Repeat(Function):
    """x repeated ``n`` times along a new first block: a leading plain number."""

    @staticmethod
    def forward(ctx, n, x):
        ctx.n = n
        return x.repeat(n, 1)

    @staticmethod
    def backward(ctx, g):
        return None, g.reshape(ctx.n, -1, g.shape[-1]).sum(0)


class ScaleAnnotatedFloat(Function):
    """Tensors annotated ``float`` (a tensor of floats, as often written)."""

    @staticmethod
    def forward(ctx, x: float, w: float):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x


class Power(Function):
    """x ** p with a float constant ``p`` annotated ``float``: stays a constant."""

    @staticmethod
    def forward(ctx, x, p: float):
        ctx.save_for_backward(x)
        ctx.p = p
        return x.abs() ** p

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.p * x.abs() ** (ctx.p - 1) * x.sign(), None


class ScaleByNumpy(Function):
    """3 x, whose backward goes through numpy: right one call at a time, but vmap cannot
    batch it."""

    @staticmethod
    def forward(ctx, x):
        return 3 * x

    @staticmethod
    def backward(ctx, g):
        return torch.from_numpy(3 * g.detach().cpu().numpy())


class RowScaleBatchBlind(Function):
    """x times a per-row scale; backward reads grad_output's first dimension as its row
    count: under vmap it sees one sample's shape and stays right, so it passes both."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.arange(1, x.shape[0] + 1, dtype=x.dtype).unsqueeze(1)

    @staticmethod
    def backward(ctx, g):
        scale = torch.arange(1, g.shape[0] + 1, dtype=g.dtype).unsqueeze(1)
        return g * scale


class FilterBankTapsDetached(FilterBank):
    """Right first order, taps detached in backward: its double backward is wrong for the
    taps only, which a filter bank never differentiates (--no-grad taps)."""

    @staticmethod
    def backward(ctx, g):
        (taps,) = ctx.saved_tensors
        gx = F.conv_transpose1d(g, taps.detach().unsqueeze(1), padding=taps.shape[-1] // 2)
        return gx.squeeze(1), None
