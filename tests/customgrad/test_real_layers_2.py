"""More custom autograd Functions written as people write them, none of them in
tests/customgrad/test_real_layers.py: new-style Functions (``setup_context``, a vmap rule),
``set_materialize_grads(False)``, non-differentiable outputs (topk's indices, argmax), outputs
that are not tensors, forwards calling another Function or ``torch.utils.checkpoint``, an
input returned as itself or as a view, half-precision inputs, large and small magnitudes,
0-dim and size-0 tensors, a ``jvp``, a sparse input, a generator, device or dtype argument.
Each is right or has the bug people make in it, and customgrad's verdict (and mismatch mask)
is held to gradcheck's. Our own code, written for these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.autograd import Function

import customgrad
from customgrad import cli
from customgrad.errors import FunctionError, SpecError
from tests.customgrad.test_real_layers import (
    Case,
    _copies,
    _g,
    _rand,
    assert_gradgradchecks_verdict,
    gradcheck_mask,
    gradcheck_verdict,
)
from tests.data.diagnosis_functions import LayerScale as RowScale  # x [n, d] * w [d]

# ---- new-style Functions: forward without ctx, setup_context, vmap -------------------------


class ScaledTanh(Function):
    """``a * tanh(x)``, new style: forward without ctx, setup_context saves what it needs."""

    @staticmethod
    def forward(x, a):
        return a * torch.tanh(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, a = inputs
        ctx.save_for_backward(x, a)

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        t = torch.tanh(x)
        return g * a * (1 - t * t), (g * t).sum(0)


class ScaledTanhWrongSaved(ScaledTanh):
    """Saves the output for tanh(x) (the output is a * tanh(x)): right only at a = 1."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, a = inputs
        ctx.save_for_backward(output, a)

    @staticmethod
    def backward(ctx, g):
        t, a = ctx.saved_tensors
        return g * a * (1 - t * t), (g * t).sum(0)


class SoftplusVmapRule(Function):
    """softplus(x) with ``generate_vmap_rule = True`` (new style, so vmap and batched
    gradients work)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, beta=1.0):
        return torch.nn.functional.softplus(x, beta=beta)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, beta = inputs
        ctx.save_for_backward(x)
        ctx.beta = beta

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(ctx.beta * x), None


class SoftplusVmapRuleBetaForgotten(SoftplusVmapRule):
    """sigmoid(x) for sigmoid(beta x): right only at beta = 1."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.sigmoid(x), None


class RowNormVmap(Function):
    """x / ||x|| over the last dim, new style with an explicit ``vmap`` staticmethod."""

    @staticmethod
    def forward(x):
        return x / x.norm(dim=-1, keepdim=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(output, x.norm(dim=-1, keepdim=True))

    @staticmethod
    def backward(ctx, g):
        y, n = ctx.saved_tensors
        return (g - y * (g * y).sum(-1, keepdim=True)) / n

    @staticmethod
    def vmap(info, in_dims, x):
        (bdim,) = in_dims
        x = x.movedim(bdim, 0) if bdim is not None else x
        return RowNormVmap.apply(x), 0


class RowNormVmapNoProjection(RowNormVmap):
    """The backward of x / c for a constant c: the projection term forgotten."""

    @staticmethod
    def backward(ctx, g):
        _, n = ctx.saved_tensors
        return g / n


# ---- set_materialize_grads(False), non-differentiable outputs ------------------------------


class MeanStd(Function):
    """(mean, std) over the last dim, as a stats layer returns them; gradients are not
    materialized: backward gets None for an output nobody differentiates."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        mean, std = x.mean(-1), x.std(-1)
        ctx.save_for_backward(x, mean, std)
        return mean, std

    @staticmethod
    def backward(ctx, g_mean, g_std):
        x, mean, std = ctx.saved_tensors
        n = x.shape[-1]
        gx = None
        if g_mean is not None:
            gx = g_mean.unsqueeze(-1).expand_as(x) / n
        if g_std is not None:
            part = g_std.unsqueeze(-1) * (x - mean.unsqueeze(-1)) / ((n - 1) * std.unsqueeze(-1))
            gx = part if gx is None else gx + part
        return gx


class MeanStdEarlyReturn(MeanStd):
    """``if g_mean is None: return None`` at the top (written for "the mean is always
    used"): the std's gradient is lost when only the std is differentiated."""

    @staticmethod
    def backward(ctx, g_mean, g_std):
        x, mean, std = ctx.saved_tensors
        if g_mean is None:
            return None
        n = x.shape[-1]
        gx = g_mean.unsqueeze(-1).expand_as(x) / n
        if g_std is not None:
            gx = gx + g_std.unsqueeze(-1) * (x - mean.unsqueeze(-1)) / (
                (n - 1) * std.unsqueeze(-1))
        return gx


class TopK(Function):
    """(values, indices) of topk over the last dim; the indices marked non-differentiable
    (int64 anyway), backward scatters the values' gradient back."""

    @staticmethod
    def forward(ctx, x, k=2):
        values, indices = x.topk(k, dim=-1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, g, _):
        (indices,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter(-1, indices, g), None


class TopKGatherNotScatter(TopK):
    """The gradient placed in the first k columns (``g`` padded), not at the indices."""

    @staticmethod
    def backward(ctx, g, _):
        return torch.nn.functional.pad(g, (0, ctx.shape[-1] - g.shape[-1])), None


class Argmax(Function):
    """argmax alone: an int64 output, nothing to differentiate."""

    @staticmethod
    def forward(ctx, x):
        return x.argmax(-1)

    @staticmethod
    def backward(ctx, g):
        return None


class SoftCount(Function):
    """(y, count): y = relu(x) and the float count of positive entries per row, marked
    non-differentiable (a statistic for logging)."""

    @staticmethod
    def forward(ctx, x):
        count = (x > 0).sum(-1).to(x.dtype)
        ctx.mark_non_differentiable(count)
        ctx.save_for_backward(x)
        return x.clamp(min=0), count

    @staticmethod
    def backward(ctx, g, g_count):
        (x,) = ctx.saved_tensors
        return g * (x > 0)


class SoftCountGradOfCount(SoftCount):
    """Adds the (zero) count gradient broadcast: harmless, right."""

    @staticmethod
    def backward(ctx, g, g_count):
        (x,) = ctx.saved_tensors
        return g * (x > 0) + g_count.unsqueeze(-1)


class WithInfo(Function):
    """Returns (y, info) where info is a Python dict (shapes for a logger) and (y, n) where
    n is an int: only y is a tensor."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.shape[-1]

    @staticmethod
    def backward(ctx, g, _):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class WithInfoSign(WithInfo):
    """``-sin`` for the derivative of sin."""

    @staticmethod
    def backward(ctx, g, _):
        (x,) = ctx.saved_tensors
        return -g * x.sin()


class NeedsGradOnly(Function):
    """``x * w + b`` whose backward computes each gradient only where ``needs_input_grad``
    asks for it, None otherwise."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x * w + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = g * w if ctx.needs_input_grad[0] else None
        gw = (g * x).sum(0) if ctx.needs_input_grad[1] else None
        gb = g.sum(0) if ctx.needs_input_grad[2] else None
        return gx, gw, gb


class NeedsGradOnlyBiasUnreduced(NeedsGradOnly):
    """The bias's gradient not summed over the batch when needed, a wrong shape: autograd
    refuses it."""

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = g * w if ctx.needs_input_grad[0] else None
        gw = (g * x).sum(0) if ctx.needs_input_grad[1] else None
        gb = g.mean(0) if ctx.needs_input_grad[2] else None
        return gx, gw, gb


# ---- forwards calling other Functions, checkpoint, no_grad, detach, clones ------------------


class _Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class CubeThenScale(Function):
    """forward calls another custom Function (``_Cube.apply``) then scales; backward calls
    ``_Cube`` nowhere: d/dx (s x^3) = 3 s x^2."""

    @staticmethod
    def forward(ctx, x, s=2.0):
        ctx.save_for_backward(x)
        ctx.s = s
        return _Cube.apply(x) * s

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * ctx.s * x * x * g, None


class CubeThenScaleForgetsScale(CubeThenScale):
    """Reuses the inner Function's derivative without the scale."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g, None


class CheckpointedMLP(Function):
    """tanh(x W) W^T with the inner part under torch.utils.checkpoint (forward runs
    without a graph, so checkpoint only runs it); backward by hand."""

    @staticmethod
    def forward(ctx, x, w):
        h = torch.utils.checkpoint.checkpoint(lambda a: torch.tanh(a @ w), x,
                                              use_reentrant=False)
        ctx.save_for_backward(x, w, h)
        return h @ w.t()

    @staticmethod
    def backward(ctx, g):
        x, w, h = ctx.saved_tensors
        gh = g @ w
        ga = gh * (1 - h * h)
        return ga @ w.t(), x.t() @ ga + g.t() @ h


class CheckpointedMLPOneWeightPath(CheckpointedMLP):
    """w's gradient through the first use only (``ga^T x``), the second use forgotten."""

    @staticmethod
    def backward(ctx, g):
        x, w, h = ctx.saved_tensors
        ga = (g @ w) * (1 - h * h)
        return ga @ w.t(), x.t() @ ga


class AutogradInForward(Function):
    """forward computes the gradient it will need with ``torch.enable_grad`` and
    ``autograd.grad`` (as people write an energy's force), saved for backward."""

    @staticmethod
    def forward(ctx, x):
        with torch.enable_grad():
            xg = x.detach().requires_grad_()
            e = (xg.sin() * xg).sum(-1)
            (dx,) = torch.autograd.grad(e.sum(), xg)
        ctx.save_for_backward(dx)
        return e.detach()

    @staticmethod
    def backward(ctx, g):
        (dx,) = ctx.saved_tensors
        return g.unsqueeze(-1) * dx


class AutogradInForwardNoSum(AutogradInForward):
    """backward multiplies by g without unsqueezing: broadcasts only for square x, wrong."""

    @staticmethod
    def backward(ctx, g):
        (dx,) = ctx.saved_tensors
        return g * dx


class CloneInPlace(Function):
    """y = x.clone(); y.mul_(2).add_(1): in place on a clone, the input untouched."""

    @staticmethod
    def forward(ctx, x):
        y = x.clone()
        y.mul_(2).add_(1)
        return y

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class InPlaceNoMarkDirty(Function):
    """``x.mul_(2)`` on the input itself without ``mark_dirty`` (the forgotten clone)."""

    @staticmethod
    def forward(ctx, x):
        return x.mul_(2)

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class DetachedStatistic(Function):
    """x - mean(x).detach() per row: the mean treated as a constant on purpose in forward,
    and backward says so (g alone): the Jacobian disagrees, as for the straight-through
    estimators."""

    @staticmethod
    def forward(ctx, x):
        return x - x.mean(-1, keepdim=True).detach()

    @staticmethod
    def backward(ctx, g):
        return g


class Centre(DetachedStatistic):
    """The same forward with the true backward: g minus its row mean."""

    @staticmethod
    def backward(ctx, g):
        return g - g.mean(-1, keepdim=True)


# ---- an input returned as itself, or a view of it --------------------------------------------


class Identity(Function):
    """Returns its input as it is."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class IdentityDoubled(Identity):
    @staticmethod
    def backward(ctx, g):
        return 2 * g


class ViewAs(Function):
    """``x.view_as(x)``: a view of the input."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


class ViewAsNegated(ViewAs):
    @staticmethod
    def backward(ctx, g):
        return -g


# ---- magnitudes ---------------------------------------------------------------------------


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class ExpOffByUlp(Exp):
    """``y * (1 + 1e-4)``: a relative error of 1e-4, under rtol 1e-3 (right by the rule)."""

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 + 1e-4)


class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.log()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / x


class LogWithEps(Log):
    """backward ``g / (x + 1e-8)`` (an epsilon for stability, forward has none)."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (x + 1e-8)


class Softmax(Function):
    """softmax with the max subtracted, as every stable softmax."""

    @staticmethod
    def forward(ctx, x):
        z = (x - x.amax(-1, keepdim=True)).exp()
        y = z / z.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(-1, keepdim=True))


class SoftmaxNaive(Softmax):
    """exp(x) / sum exp(x) without subtracting the max: overflows at logits ~ 1e3."""

    @staticmethod
    def forward(ctx, x):
        z = x.exp()
        y = z / z.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y


# ---- many outputs of different shapes, 0-dim and size-0 tensors ----------------------------


class Moments(Function):
    """(total, row sums, squares): a 0-dim, a [n] and an [n, m] output."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sum(), x.sum(-1), x * x

    @staticmethod
    def backward(ctx, g_total, g_rows, g_sq):
        (x,) = ctx.saved_tensors
        return g_total + g_rows.unsqueeze(-1) + 2 * x * g_sq


class MomentsRowsForgotten(Moments):
    @staticmethod
    def backward(ctx, g_total, g_rows, g_sq):
        (x,) = ctx.saved_tensors
        return g_total + 2 * x * g_sq


class ScalarPoly(Function):
    """A 0-dim input and a 0-dim output: a x^2 + sin(a)."""

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return a * x * x + torch.sin(a)

    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        return g * (x * x + torch.cos(a)), g * 2 * a * x


class ScalarPolyCosSign(ScalarPoly):
    @staticmethod
    def backward(ctx, g):
        a, x = ctx.saved_tensors
        return g * (x * x - torch.cos(a)), g * 2 * a * x


class RowScaleWeightUnsummed(RowScale):
    """The weight's gradient ``(g * x)[0]``: the first row's, a batch of one in mind."""

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, (g * x)[0] if len(x) else w * 0


# ---- forward AD -------------------------------------------------------------------------


class SinJvp(Function):
    """sin with a jvp staticmethod (forward-mode AD) beside backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.x = x
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()

    @staticmethod
    def jvp(ctx, t):
        return t * ctx.x.cos()


class SinJvpWrong(SinJvp):
    """Backward right, jvp wrong (cos without the tangent's sign... the derivative of cos)."""

    @staticmethod
    def jvp(ctx, t):
        return -t * ctx.x.sin()


class RowNormJvp(RowNormVmap):
    """x / ||x|| with a jvp beside backward (saved on ctx for it)."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(output, x.norm(dim=-1, keepdim=True))
        ctx.y, ctx.n = output, x.norm(dim=-1, keepdim=True)

    @staticmethod
    def jvp(ctx, t):
        return (t - ctx.y * (t * ctx.y).sum(-1, keepdim=True)) / ctx.n


class RowNormJvpUnscaled(RowNormJvp):
    """The jvp's 1/||x|| forgotten: right along x alone (where both are 0)."""

    @staticmethod
    def jvp(ctx, t):
        return t - ctx.y * (t * ctx.y).sum(-1, keepdim=True)


# ---- generator, device, dtype arguments ------------------------------------------------------


class NoisyGenerator(Function):
    """x + sigma * noise, the noise drawn from a torch.Generator passed in (advanced by each
    call: a random forward)."""

    @staticmethod
    def forward(ctx, x, generator, sigma=0.1):
        return x + sigma * torch.randn(x.shape, generator=generator, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g, None, None


class SeededNoise(Function):
    """x + noise drawn from a fresh generator seeded by ``seed`` each call (deterministic),
    on ``device``, the output cast to ``dtype``."""

    @staticmethod
    def forward(ctx, x, seed, device, dtype):
        gen = torch.Generator(device=device).manual_seed(seed)
        ctx.dtype = x.dtype
        return (x * 3 + torch.randn(x.shape, generator=gen, device=device,
                                    dtype=x.dtype)).to(dtype)

    @staticmethod
    def backward(ctx, g):
        return 3 * g.to(ctx.dtype), None, None, None


class SeededNoiseFactor(SeededNoise):
    @staticmethod
    def backward(ctx, g):
        return 2 * g.to(ctx.dtype), None, None, None


# ---- a sparse constant --------------------------------------------------------------------


class GraphConv(Function):
    """A GCN layer ``A @ (x @ w)`` with a sparse (COO) adjacency A, never differentiated."""

    @staticmethod
    def forward(ctx, adj, x, w):
        ctx.save_for_backward(adj, x, w)
        return torch.sparse.mm(adj, x @ w)

    @staticmethod
    def backward(ctx, g):
        adj, x, w = ctx.saved_tensors
        ag = torch.sparse.mm(adj.t(), g)
        return None, ag @ w.t(), x.t() @ ag


class GraphConvNoTranspose(GraphConv):
    """``A @ g`` for ``A^T @ g``: right only for a symmetric adjacency."""

    @staticmethod
    def backward(ctx, g):
        adj, x, w = ctx.saved_tensors
        ag = torch.sparse.mm(adj, g)
        return None, ag @ w.t(), x.t() @ ag


# ==== the cases ==============================================================================

_SEED = 7
_CPU = torch.device("cpu")


def _adjacency(layout):
    a = _rand(4, 4, seed=5)
    a[a < 0.3] = 0
    return a.to_sparse() if layout == "coo" else a.to_sparse_csr()

CASES = [
    # new style
    Case("setup-context", ScaledTanh, lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1) + 2)),
         "passed"),
    Case("setup-context-wrong-saved", ScaledTanhWrongSaved,
         lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1) + 2)), "failed"),
    Case("generate-vmap-rule", SoftplusVmapRule, lambda: (_g(_rand(3, 4)), 2.0), "passed"),
    Case("generate-vmap-rule-beta-forgotten", SoftplusVmapRuleBetaForgotten,
         lambda: (_g(_rand(3, 4)), 2.0), "failed"),
    Case("explicit-vmap", RowNormVmap, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("explicit-vmap-no-projection", RowNormVmapNoProjection, lambda: (_g(_rand(3, 4)),),
         "failed"),
    # set_materialize_grads(False), non-differentiable and non-tensor outputs
    Case("mean-std-no-materialize", MeanStd, lambda: (_g(_rand(3, 5)),), "passed"),
    Case("mean-std-early-return", MeanStdEarlyReturn, lambda: (_g(_rand(3, 5)),), "failed"),
    Case("topk", TopK, lambda: (_g(_rand(3, 5)),), "passed"),
    Case("topk-k3", TopK, lambda: (_g(_rand(3, 5)), 3), "passed"),
    Case("topk-padded-not-scattered", TopKGatherNotScatter, lambda: (_g(_rand(3, 5)),),
         "failed"),
    Case("relu-with-float-count", SoftCount, lambda: (_g(_rand(3, 5)),), "passed"),
    Case("relu-with-float-count-grad-used", SoftCountGradOfCount, lambda: (_g(_rand(3, 5)),),
         "passed"),
    Case("needs-input-grad-all", NeedsGradOnly,
         lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1)), _g(_rand(4, seed=2))), "passed"),
    Case("needs-input-grad-x-only", NeedsGradOnly,
         lambda: (_g(_rand(3, 4)), _rand(4, seed=1), _rand(4, seed=2)), "passed",
         plain=False),
    Case("needs-input-grad-bias-mean", NeedsGradOnlyBiasUnreduced,
         lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1)), _g(_rand(4, seed=2))), "failed"),
    # forwards calling other Functions, checkpoint, autograd, clones
    Case("forward-calls-a-function", CubeThenScale, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("forward-calls-a-function-scale-forgotten", CubeThenScaleForgetsScale,
         lambda: (_g(_rand(3, 4)),), "failed"),
    Case("checkpoint-in-forward", CheckpointedMLP,
         lambda: (_g(_rand(3, 4)), _g(_rand(4, 2, seed=1))), "passed"),
    Case("checkpoint-in-forward-one-weight-path", CheckpointedMLPOneWeightPath,
         lambda: (_g(_rand(3, 4)), _g(_rand(4, 2, seed=1))), "failed"),
    Case("autograd-in-forward", AutogradInForward, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("autograd-in-forward-no-unsqueeze", AutogradInForwardNoSum,
         lambda: (_g(_rand(4, 4)),), "failed"),
    Case("in-place-on-a-clone", CloneInPlace, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("in-place-no-mark-dirty", InPlaceNoMarkDirty, lambda: (_g(_rand(3, 4)),), "passed",
         inplace=0),
    Case("detached-mean-backward-g", DetachedStatistic, lambda: (_g(_rand(3, 4)),), "failed"),
    Case("centre", Centre, lambda: (_g(_rand(3, 4)),), "passed"),
    # an input returned as itself or a view
    Case("identity", Identity, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("identity-doubled", IdentityDoubled, lambda: (_g(_rand(3, 4)),), "failed"),
    Case("view-as", ViewAs, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("view-as-negated", ViewAsNegated, lambda: (_g(_rand(3, 4)),), "failed"),
    # magnitudes
    Case("exp-large", Exp, lambda: (_g(_rand(3, 4) + 30),), "passed"),
    Case("exp-small", Exp, lambda: (_g(_rand(3, 4) - 30),), "passed"),
    Case("exp-1e-4-relative", ExpOffByUlp, lambda: (_g(_rand(3, 4) + 30),), "passed"),
    Case("log-near-0", Log, lambda: (_g(_rand(3, 4).abs() * 1e-3 + 1e-3),), "passed"),
    Case("log-very-near-0", Log, lambda: (_g(_rand(3, 4).abs() * 1e-5 + 2e-6),), "failed"),
    Case("log-with-eps-near-0", LogWithEps, lambda: (_g(_rand(3, 4).abs() * 1e-3 + 1e-4),),
         "passed"),
    Case("log-with-eps-at-1e-6", LogWithEps,
         lambda: (_g(torch.full((3,), 3e-6, dtype=torch.float64)),), "failed"),
    Case("softmax-big-logits", Softmax, lambda: (_g(_rand(3, 4) * 1e3),), "passed"),
    Case("softmax-naive-big-logits", SoftmaxNaive, lambda: (_g(_rand(3, 4) * 1e3),), "failed"),
    Case("softmax-naive-small-logits", SoftmaxNaive, lambda: (_g(_rand(3, 4)),), "passed"),
    # many outputs, 0-dim and size-0
    Case("moments", Moments, lambda: (_g(_rand(3, 4)),), "passed"),
    Case("moments-rows-forgotten", MomentsRowsForgotten, lambda: (_g(_rand(3, 4)),), "failed"),
    Case("scalar-0-dim", ScalarPoly,
         lambda: (_g(torch.tensor(0.7, dtype=torch.float64)), _g(_rand(3))), "passed"),
    Case("scalar-0-dim-cos-sign", ScalarPolyCosSign,
         lambda: (_g(torch.tensor(0.7, dtype=torch.float64)), _g(_rand(3))), "failed"),
    Case("row-scale", RowScale, lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1))), "passed"),
    Case("row-scale-first-row", RowScaleWeightUnsummed,
         lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1))), "failed"),
    # a generator, device and dtype
    Case("seeded-noise-device-dtype", SeededNoise,
         lambda: (_g(_rand(3, 4)), _SEED, _CPU, torch.float64), "passed"),
    Case("seeded-noise-factor", SeededNoiseFactor,
         lambda: (_g(_rand(3, 4)), _SEED, _CPU, torch.float64), "failed"),
    # a sparse adjacency, never differentiated
    Case("graph-conv-sparse-coo", GraphConv,
         lambda: (_adjacency("coo"), _g(_rand(4, 3, seed=1)), _g(_rand(3, 2, seed=2))),
         "passed"),
    Case("graph-conv-sparse-csr", GraphConv,
         lambda: (_adjacency("csr"), _g(_rand(4, 3, seed=1)), _g(_rand(3, 2, seed=2))),
         "passed"),
    Case("graph-conv-no-transpose", GraphConvNoTranspose,
         lambda: (_adjacency("coo"), _g(_rand(4, 3, seed=1)), _g(_rand(3, 2, seed=2))),
         "failed"),
]

#: where gradcheck's fast mode (one random projection per input and output) gives another
#: verdict than its slow mode (the default, which customgrad follows): a log at 2e-6 to
#: 1.2e-5, where eps 1e-6 truncates, fails a few entries only, and the projection averages
#: them within tolerance
FAST = {"log-very-near-0": "passed"}


def _verdict(report) -> str:
    return "passed" if report.passed else "failed"


# ==== the verdicts, beside gradcheck's =========================================================


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_the_verdict_and_mismatch_mask_are_gradchecks(case):
    expected = gradcheck_verdict(case, case.make())
    assert expected == case.expected  # the case is the one named (right, or its bug)
    assert gradcheck_verdict(case, case.make(), fast_mode=True) == FAST.get(case.id, expected)
    report = customgrad.check(case.function, *case.make())
    assert _verdict(report) == expected, report.text()
    if case.mask:
        mask = gradcheck_mask(case, case.make())
        assert torch.equal(report.mismatch_mask(), mask)
        assert report.mismatches == int(mask.sum())


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.plain])
def test_with_nothing_requiring_grad_the_verdict_is_the_same(case):
    """No tensor requires grad: every dense floating-point one is differentiated but those
    backward returns None for (beta, the sparse adjacency is never differentiated)."""
    args = case.make()
    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    report = customgrad.check(case.function, *plain)
    assert _verdict(report) == case.expected
    assert len(report.inputs) == sum(isinstance(a, torch.Tensor) and a.requires_grad
                                     for a in args)


def test_an_output_not_materialized_gets_none_as_in_gradcheck():
    """set_materialize_grads(False): gradcheck differentiates one output at a time, and
    backward gets None for the other. ``if g_mean is None: return None`` loses the std's
    gradient: gradcheck fails it at the std's rows. customgrad handed backward zeros for
    the mean there (not None) and passed it; now it hands the engine's None."""
    case = next(c for c in CASES if c.id == "mean-std-early-return")
    report = customgrad.check(case.function, *case.make())
    assert not report.passed
    assert [b.passed for b in report.blocks] == [True, False]  # the mean's rows, the std's
    right = customgrad.check(MeanStd, *case.make())
    assert right.passed and right.analytic_path == "direct"


def test_an_output_that_is_not_a_tensor_is_skipped_where_gradcheck_raises():
    """forward returns (y, an int): autograd passes the int through and hands backward None
    for it. gradcheck raises (AttributeError: 'int' object has no attribute
    'requires_grad'); customgrad said "outputs must be tensors", which autograd does not
    ask. It now checks y, with the verdict and mask gradcheck gives y alone."""
    for function, verdict in ((WithInfo, "passed"), (WithInfoSign, "failed")):
        x = _rand(3, 4)
        with pytest.raises(AttributeError, match="requires_grad"):
            torch.autograd.gradcheck(function.apply, (_g(x.clone()),))
        alone = Case("first", function, lambda x=x: (_g(x.clone()),), verdict)
        alone.call = lambda *args, f=function: f.apply(*args)[0]  # type: ignore[method-assign]
        assert gradcheck_verdict(alone, alone.make()) == verdict
        report = customgrad.check(function, _g(x.clone()))
        assert _verdict(report) == verdict
        assert torch.equal(report.mismatch_mask(), gradcheck_mask(alone, alone.make()))
        assert "output1 is not a tensor: skipped." in report.notes


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_a_half_precision_layer_fails_as_in_gradcheck_and_says_it_is_rounding(dtype):
    """gradcheck fails the right layer and the wrong one alike in half precision (and
    warns: not double precision). So does customgrad: backward's own values are rounded to
    1e-3 (8e-3 in bfloat16) of their size, rtol's size. The right one is diagnosed
    rounding (the same Function passes at the same point in float64), no longer "not
    linear in grad_output"; the wrong one is not."""
    x, a = _rand(3, 4).to(dtype), (_rand(4, seed=1) + 2).to(dtype)
    for function, right in ((ScaledTanh, True), (ScaledTanhWrongSaved, False)):
        with pytest.warns(UserWarning, match="not a double precision"):
            assert not torch.autograd.gradcheck(
                function.apply, (_g(x.clone()), _g(a.clone())), raise_exception=False)
        report = customgrad.check(function, x, a)
        assert not report.passed
        kinds = [d.kind for d in report.diagnoses]
        assert kinds == (["rounding"] if right else [])
        if right:
            assert f"backward computes in {str(dtype)[6:]}" in report.diagnoses[0].detail
            assert "in float64 passes" in report.diagnoses[0].detail
        assert customgrad.check(function, x, a, dtype="float64").passed == right


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_a_sparse_input_to_differentiate_is_refused_by_name(layout):
    """gradcheck raises on a sparse input that requires grad (RuntimeError: unsupported
    memory format option); customgrad names it and what to do, and crashed before
    (NotImplementedError from torch.equal on a sparse tensor, a constant one too)."""
    adj = _adjacency(layout).requires_grad_()
    x, w = _g(_rand(4, 3, seed=1)), _g(_rand(3, 2, seed=2))
    with pytest.raises(RuntimeError):
        torch.autograd.gradcheck(GraphConv.apply, (adj, x, w))
    with pytest.raises(SpecError, match=f"adj cannot be differentiated: it is a sparse_{layout} "
                       r"tensor: customgrad differentiates dense \(strided\) tensors only"):
        customgrad.check(GraphConv, adj, x, w)


def test_a_function_with_nothing_to_check_is_refused_naming_its_return_line():
    """argmax alone (an int64 output) and a batch of 0 rows: gradcheck passes them with
    nothing compared; customgrad says there is nothing to check, why, and where forward
    returns (a refusal, not a verdict: docs/parity.md)."""
    x = _rand(3, 4)
    assert torch.autograd.gradcheck(Argmax.apply, (_g(x.clone()),))
    with pytest.raises(FunctionError, match=r"Argmax has no differentiable output to check "
                       r"\(output \(int64\) is not differentiable\)") as info:
        customgrad.check(Argmax, x)
    assert (info.value.file, info.value.line) == (__file__, _line_of("return x.argmax(-1)"))
    empty, w = _rand(0, 4), _rand(4, seed=1)
    assert torch.autograd.gradcheck(RowScaleWeightUnsummed.apply, (_g(empty.clone()), _g(w)))
    with pytest.raises(FunctionError, match=r"no differentiable output to check \(output is "
                       r"empty\)"):
        customgrad.check(RowScale, empty, w)
    with pytest.raises(SpecError, match="x cannot be differentiated: it is empty"):
        customgrad.check(RowScale, _g(empty), _g(w))


@pytest.mark.parametrize("function, verdict", [
    (SinJvp, "passed"), (SinJvpWrong, "failed"), (RowNormJvp, "passed"),
    (RowNormJvpUnscaled, "failed"),
], ids=["jvp", "jvp-wrong", "row-norm-jvp", "row-norm-jvp-unscaled"])
def test_the_forward_ad_verdict_is_gradchecks(function, verdict):
    """The row norm's jvp without 1/||x|| passed at x drawn with seed 0: the direction was
    drawn with seed 0 too, x itself, along which both jvps are 0."""
    x = _rand(3, 4)
    theirs = torch.autograd.gradcheck(function.apply, (_g(x.clone()),), check_forward_ad=True,
                                      check_backward_ad=False, raise_exception=False)
    assert ("passed" if theirs else "failed") == verdict
    report = customgrad.check(function, x, checks=["forward_ad"])
    assert report.checks["forward_ad"].status == verdict
    assert report.passed == (verdict == "passed") and report.checks["jacobian"].status == "passed"


@pytest.mark.parametrize("function, args", [
    (RowNormVmap, lambda: (_g(_rand(3, 4)),)),
    (SoftplusVmapRule, lambda: (_g(_rand(3, 4)), 2.0)),
    (ScaledTanh, lambda: (_g(_rand(3, 4)), _g(_rand(4, seed=1)))),
], ids=["explicit-vmap", "generate-vmap-rule", "no-vmap-rule"])
def test_the_batched_grad_verdict_is_gradchecks(function, args):
    assert torch.autograd.gradcheck(function.apply, _copies(args()), check_batched_grad=True)
    assert customgrad.check(function, *args(), checks=["batched_grad"]).checks[
        "batched_grad"].status == "passed"


def test_noise_from_a_generator_argument_fails_as_in_gradcheck_and_is_named():
    """The generator passed in is advanced by each call: finite differences see other noise
    each time. Both fail; customgrad says the forward is random."""
    gen = torch.Generator().manual_seed(0)
    assert not torch.autograd.gradcheck(lambda x: NoisyGenerator.apply(x, gen),
                                        (_g(_rand(3, 4)),), raise_exception=False)
    report = customgrad.check(NoisyGenerator, _g(_rand(3, 4)), torch.Generator().manual_seed(0))
    assert not report.passed
    assert [d.kind for d in report.diagnoses] == ["random_forward"]



# ==== the double backward, beside gradgradcheck's ==============================================

#: gradgradcheck's verdict on each (the rest of CASES: see docs/parity.md)
DOUBLE = {
    "setup-context": "passed", "generate-vmap-rule": "passed",
    "explicit-vmap": "failed", "explicit-vmap-no-projection": "failed",
    "mean-std-no-materialize": "passed", "topk": "passed",
    "checkpoint-in-forward": "failed", "autograd-in-forward": "failed",
    "forward-calls-a-function": "passed", "identity": "passed", "view-as": "passed",
    "log-very-near-0": "failed", "softmax-naive-big-logits": "failed", "moments": "passed",
    "scalar-0-dim": "passed", "seeded-noise-device-dtype": "passed",
}


@pytest.mark.parametrize("case", [c.param() for c in CASES if c.id in DOUBLE])
def test_the_double_backward_verdict_is_gradgradchecks(case):
    """explicit-vmap (x / ||x||, backward saving ||x|| from setup_context: no graph through
    it) failed gradgradcheck and passed customgrad at inputs drawn with seed 0: the double
    backward's grad_output was drawn with seed 0 too, so it was x itself, along which the
    forgotten term vanishes."""
    assert_gradgradchecks_verdict(case, DOUBLE[case.id])


# ==== from the command line ====================================================================


def _line_of(text: str) -> int:
    """The line of this file holding ``text`` (once)."""
    lines = [k for k, line in enumerate(Path(__file__).read_text().splitlines(), 1)
             if line.strip().startswith(text)]
    assert len(lines) == 1, (text, lines)
    return lines[0]


@pytest.mark.parametrize("name, shapes, code", [
    ("ScaledTanh", ["x=3x4", "a=4"], 0),
    ("ScaledTanhWrongSaved", ["x=3x4", "a=4"], 1),
    ("MeanStd", ["x=3x5"], 0),
    ("MeanStdEarlyReturn", ["x=3x5"], 1),
    ("TopK", ["x=3x5"], 0),
    ("TopKGatherNotScatter", ["x=3x5"], 1),
    ("Moments", ["x=3x4"], 0),
    ("MomentsRowsForgotten", ["x=3x4"], 1),
])
def test_the_cli_gives_the_same_verdicts(capsys, name, shapes, code):
    args = [f"--shape={s}" for s in shapes]
    assert cli.main(["check", f"{__file__}:{name}", *args, "--in-process"]) == code
    out = capsys.readouterr().out
    assert ("PASSED" if code == 0 else "FAILED") in out


def test_the_cli_names_an_int_output_and_a_topk_constant(capsys):
    assert cli.main(["check", f"{__file__}:TopK", "--shape=x=3x5", "--const=k=3",
                     "--in-process"]) == 0
    out = capsys.readouterr().out
    assert "d output0 [3x3] / d x [3x5]" in out
    assert "note: output1 (int64) is not differentiable: skipped." in out
    assert cli.main(["check", f"{__file__}:Argmax", "--shape=x=3x4", "--in-process"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Argmax has no differentiable output to check" in err
    assert f"({__file__}:{_line_of('return x.argmax(-1)')})" in err
