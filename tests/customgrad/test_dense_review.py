"""Adversarial review of a matrix product's reference held by colour (``entries.ByColour``,
docs/engine.md step 8): dense and block-structured Jacobians, right and wrong backwards, in
float64 (where the reference runs), float32 and complex128 (where it does not). Each case's
verdict is gradcheck's (slow mode), and its mismatch mask is gradcheck's entry for entry:
``~isclose(analytic, numerical, rtol=1e-3, atol=1e-5)`` over gradcheck's own slow-mode
Jacobians (its finite differences, eps 1e-6, and its rows of backward), for real inputs.

``path`` says which way each case must go, asserted, so a case cannot silently stop testing
the new code: ``"colour"`` the reference held by colour with the analytic pass over the
colours (``_by_colour``), ``"held"`` held by colour but the pass over its triples (a
reference entry exactly 0, so the crossings' row colours are not the entries'), ``"ref"``
the reference as triples, ``"fd"`` finite differences (the reference refused).
"""

from __future__ import annotations

import warnings
from unittest import mock

import pytest
import torch
from torch.autograd import Function

import customgrad
from customgrad.checking.jacobian import analytic
from customgrad.checking.jacobian.entries import ByColour
from customgrad.checking.jacobian.report import FINITE_DIFFERENCES, REFERENCE
from customgrad.targets.gallery.bugs import SoftmaxBuggy  # (y (1 - y) g: the diagonal only)
from customgrad.targets.gallery.classic import Softmax
from tests.data.diagnosis_functions import MatMul as SquareWeight  # (x @ w, right)

ATOL, RTOL, EPS = 1e-5, 1e-3, 1e-6


def _x(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ----------------------------------------------------------------------------- Functions


class Linear(Function):
    """out = x @ w.T (+ b): rows (i, j) reach x[i] and w[j]."""

    @staticmethod
    def forward(ctx, x, w, b=None):
        ctx.save_for_backward(x, w)
        ctx.has_b = b is not None
        out = x @ w.T
        return out + b if b is not None else out

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.T @ x, (g.sum(0) if ctx.has_b else None)


def _linear(name, change):
    """Linear with ``change(grads, g, x, w)`` applied to its gradients (a list)."""
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        grads = list(Linear.backward(ctx, g))
        change(grads, g, x, w)
        return tuple(grads)
    return type(name, (Linear,), {"backward": staticmethod(backward)})


def _add_at(grads, block, at, value):
    grads[block] = grads[block].clone()
    grads[block][at] = grads[block][at] + value


# w[3] feeds out[:, 3]: entry (out[2, 3], w[3, 5]) is x[2, 5]
OneWeightEntry = _linear("OneWeightEntry", lambda gr, g, x, w: _add_at(gr, 1, (3, 5),
                                                                       1e-2 * g[2, 3]))
# an affine backward: + 1e-2 at w[3, 5] whatever the seed (every row of that column)
AffineWeightEntry = _linear("AffineWeightEntry",
                            lambda gr, g, x, w: _add_at(gr, 1, (3, 5), 1e-2))
# + 1e-2 g.sum(): the whole column w[3, 5] off by 1e-2, inside (out[:, 3]) and outside
DenseWrongColumn = _linear("DenseWrongColumn",
                           lambda gr, g, x, w: _add_at(gr, 1, (3, 5), 1e-2 * g.sum()))


# the thin weight's (64 x 4) entry (out[2, 3], w[3, 2]), x[2, 2]
OneThinEntry = _linear("OneThinEntry", lambda gr, g, x, w: _add_at(gr, 1, (3, 2),
                                                                   1e-2 * g[2, 3]))


def _near_tolerance(name, block, at, entry, scale):
    """``scale`` x gradcheck's tolerance of the entry (out[2, 3], input ``block`` at ``at``)
    added there; ``entry(x, w)`` is its value (w[3, 5] for x[2, 5], x[2, 5] for w[3, 5])."""
    def change(gr, g, x, w):
        _add_at(gr, block, at, scale * (ATOL + RTOL * abs(float(entry(x, w)))) * g[2, 3])
    return _linear(name, change)


JustAbove = _near_tolerance("JustAbove", 1, (3, 5), lambda x, w: x[2, 5], 1.2)
JustBelow = _near_tolerance("JustBelow", 1, (3, 5), lambda x, w: x[2, 5], 0.8)
JustAboveHundred = _near_tolerance("JustAboveHundred", 0, (2, 5), lambda x, w: w[3, 5], 1.2)
JustBelowHundred = _near_tolerance("JustBelowHundred", 0, (2, 5), lambda x, w: w[3, 5], 0.8)


# the entry (out[2, 3], w[3, 5]) left out: exactly 0 where the reference has x[2, 5]
MissingEntry = _linear("MissingEntry", lambda gr, g, x, w: _add_at(
    gr, 1, (3, 5), -x[2, 5] * g[2, 3]))


def _row_of_x(gr, g, x, w):
    gr[0] = gr[0].clone()
    gr[0][4] = gr[0][4] * 1.01


OneRowOfX = _linear("OneRowOfX", _row_of_x)
# every weight entry 1% off: the relations hold (it is linear), the comparison decides each
# entry (1% of a small x is inside atol + rtol|x|: those entries agree)
ScaledWeight = _linear("ScaledWeight", lambda gr, g, x, w: gr.__setitem__(1, gr[1] * 1.01))
# 1e-6 on every weight entry: below tolerance everywhere, not bit for bit the reference
NoisyWeight = _linear("NoisyWeight",
                      lambda gr, g, x, w: gr.__setitem__(1, gr[1] * (1 + 1e-6)))


# backwards that are right on gradcheck's unit seeds only (not linear in g): gradcheck
# passes them, so must the check (its compressed seeds break the relations: every row)
AbsSeed = _linear("AbsSeed", lambda gr, g, x, w: gr.__setitem__(1, g.abs().T @ x))
SquaredSeed = _linear("SquaredSeed", lambda gr, g, x, w: gr.__setitem__(1, (g * g).T @ x))


def _bias_half(gr, g, x, w):
    gr[2] = gr[2] * 0.5


BiasHalf = _linear("BiasHalf", _bias_half)


class TanhLinear(Function):
    """tanh(x @ w.T): a matrix product's pattern, entries that vary (every column at once
    differenced with curvature)."""

    @staticmethod
    def forward(ctx, x, w):
        y = torch.tanh(x @ w.T)
        ctx.save_for_backward(x, w, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, y = ctx.saved_tensors
        s = g * (1 - y * y)
        return s @ w, s.T @ x


class TanhLinearNoDerivative(TanhLinear):
    @staticmethod
    def backward(ctx, g):  # (tanh's derivative forgotten on the weight's side)
        x, w, y = ctx.saved_tensors
        return (g * (1 - y * y)) @ w, g.T @ x


class TransposedWeight(SquareWeight):
    """The classic bug: the weight's gradient transposed (the shape is the same)."""

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, (x.T @ g).T


class Bmm(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.bmm(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return torch.bmm(g, b.transpose(1, 2)), torch.bmm(a.transpose(1, 2), g)


class BmmWrongInOneBatch(Bmm):
    @staticmethod
    def backward(ctx, g):
        ga, gb = Bmm.backward(ctx, g)
        gb = gb.clone()
        gb[1] = gb[1] * 1.05
        return ga, gb


class Einsum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.einsum("bij,bjk->bik", a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return torch.einsum("bik,bjk->bij", g, b), torch.einsum("bij,bik->bjk", a, g)


class Gram(Function):
    """x @ x.T: an input used twice."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x @ x.T

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g + g.T) @ x


class GramHalf(Gram):
    """Only one of the two uses: the classic x @ x.T bug."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g @ x


class Bilinear(Function):
    """out[i, j] = x[i] A y[j]."""

    @staticmethod
    def forward(ctx, x, a, y):
        ctx.save_for_backward(x, a, y)
        return x @ a @ y.T

    @staticmethod
    def backward(ctx, g):
        x, a, y = ctx.saved_tensors
        return g @ y @ a.T, x.T @ g @ y, g.T @ x @ a


class BilinearWrongA(Bilinear):
    @staticmethod
    def backward(ctx, g):
        gx, ga, gy = Bilinear.backward(ctx, g)
        return gx, ga.T, gy  # (A square: the transposed bug)


class Outer(Function):
    @staticmethod
    def forward(ctx, u, v):
        ctx.save_for_backward(u, v)
        return u[:, None] * v[None, :]

    @staticmethod
    def backward(ctx, g):
        u, v = ctx.saved_tensors
        return g @ v, g.T @ u


class OuterWrongEntry(Outer):
    @staticmethod
    def backward(ctx, g):
        gu, gv = Outer.backward(ctx, g)
        gv = gv.clone()
        gv[7] = gv[7] + 1e-2 * g[5, 7]
        return gu, gv


class DetachedHalves(Function):
    """2 x @ w written x @ w.detach() + x.detach() @ w: autograd sees half of each
    derivative; the backward is the truth."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w.detach() + x.detach() @ w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return 2 * g @ w.T, 2 * x.T @ g


class DetachedHalvesAutogradShaped(DetachedHalves):
    @staticmethod
    def backward(ctx, g):  # (what autograd sees: half of the truth)
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g


class WeightData(Function):
    """x @ w.data + b: autograd cannot see w; backward right."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w.data + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g, g.sum(0)


class NumpyLinear(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return torch.from_numpy(x.detach().numpy() @ w.detach().numpy().T)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.T @ x


class Cumsum(Function):
    @staticmethod
    def forward(ctx, x):
        return x.cumsum(-1)

    @staticmethod
    def backward(ctx, g):
        return g.flip(-1).cumsum(-1).flip(-1)


class CumsumOffByOne(Cumsum):
    @staticmethod
    def backward(ctx, g):  # (the running sum excludes its own element: wrong)
        return g.flip(-1).cumsum(-1).flip(-1) - g


class Attention(Function):
    """softmax(q k^T / 4) v, backward by hand."""

    @staticmethod
    def forward(ctx, q, k, v):
        p = (q @ k.T / 4).softmax(-1)
        ctx.save_for_backward(q, k, v, p)
        return p @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gp = g @ v.T
        gs = p * (gp - (gp * p).sum(-1, keepdim=True)) / 4
        return gs @ k, gs.T @ q, p.T @ g


class AttentionNoSoftmaxGrad(Attention):
    @staticmethod
    def backward(ctx, g):
        q, k, v, p = ctx.saved_tensors
        gs = p * (g @ v.T) / 4  # (the softmax's correction term forgotten)
        return gs @ k, gs.T @ q, p.T @ g


class TwoOutputs(Function):
    """(x @ w.T, 3 x): the second output unused by the caller, but checked."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w.T, 3 * x

    @staticmethod
    def backward(ctx, g, h):
        x, w = ctx.saved_tensors
        return g @ w + 3 * h, g.T @ x


class TwoOutputsSecondIgnored(TwoOutputs):
    @staticmethod
    def backward(ctx, g, h):
        x, w = ctx.saved_tensors
        return g @ w, g.T @ x


class ComplexLinear(Function):
    """x @ w.T for complex tensors (gradcheck's convention: the conjugate Wirtinger)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w.T

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.conj(), g.T @ x.conj()


class ComplexLinearNoConj(ComplexLinear):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w, g.T @ x


# -------------------------------------------------------------------------------- inputs


def _lin():
    return [_x(16, 32), _x(16, 32, seed=1)]


def _lin_bias():
    return [_x(16, 32), _x(16, 32, seed=1), _x(16, seed=2)]


def _zeros():
    x, w = _lin()
    x[3] = 0.0  # a zero row: out[3, :] depends on w through nothing
    x[:, 7] = 0.0  # a zero column: w[:, 7] feeds nothing
    w[5] = 0.0
    return [x, w]


def _nan():
    x, w = _lin()
    x[2, 3] = float("nan")
    return [x, w]


def _large():
    x, w = _lin()
    return [x, w * 1e4]


def _hundred():
    """Entries of 100 (x's block): rtol's share of the tolerance is 0.1, 10,000 times atol;
    finite differences' rounding still within the verification's 0.1 atol."""
    x, w = _lin()
    return [x, w * 100]


def _thin():
    """out 64 x 64 from an inner size of 4: 8 entries a row, fewer than 16: the column
    colouring over the triples taken from the products."""
    return [_x(64, 4), _x(64, 4, seed=1)]


def _ragged():
    """out 10 x 13: 130 rows in groups of 16 that straddle out's rows, the last one short."""
    return [_x(10, 24), _x(13, 24, seed=1)]


def _medium():
    """out 32 x 32 (1,024 rows, 4,096 columns, 65,536 entries)."""
    return [_x(32, 64), _x(32, 64, seed=1)]


def _square():
    return [_x(16, 32), _x(32, 32, seed=1)]


def _batched():
    """out 4 x 4 x 16: 256 rows in groups of 16 (one row of one batch's product)."""
    return [_x(4, 4, 16), _x(4, 16, 16, seed=1)]


def _gram():
    return [_x(16, 32)]


def _bilinear():
    return [_x(16, 16), _x(16, 16, seed=1), _x(16, 16, seed=2)]


def _outer():
    return [_x(64), _x(64, seed=1)]


def _softmax():
    """Softmax (or cumsum) over rows of 256: 256 x 256 dense blocks."""
    return [_x(4, 256)]


def _attention():
    return [_x(16, 8), _x(16, 8, seed=1), _x(16, 8, seed=2)]


def _cast(make, dtype):
    def cast():
        return [a.to(dtype) for a in make()]
    cast.__name__ = f"{make.__name__}_{str(dtype).split('.')[-1]}"
    return cast


def _complex_lin():
    x, w = _lin()
    return [torch.complex(x, _x(16, 32, seed=5)), torch.complex(w, _x(16, 32, seed=6))]


# ------------------------------------------------------------------------- the harness


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: gradcheck's Jacobians take thousands of tiny calls, each of which
    waits for a second thread on a loaded machine (23 ms instead of 0.07 ms a call)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _judged(args):
    """The point gradcheck judges at: float32 promoted to float64 exactly (the float32 rule,
    docs/cli.md: gradcheck's own float32 differences with eps 1e-6 are rounding noise, so it
    cannot judge there; the check's numerical Jacobian is float64's at the same point)."""
    return [a.double() if a.dtype == torch.float32 else a for a in args]


def _leaves(args, differentiated=None):
    """Copies at gradcheck's point, each requiring grad where ``differentiated`` (positions;
    None: all) names it."""
    return [a.detach().clone().requires_grad_(differentiated is None or k in differentiated)
            for k, a in enumerate(_judged(args))]


def _gradcheck_verdict(function, args, differentiated=None, fast_mode=False) -> bool:
    leaves = _leaves(args, differentiated)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autograd.gradcheck(function.apply, tuple(leaves), eps=EPS, atol=ATOL,
                                        rtol=RTOL, raise_exception=False,
                                        check_undefined_grad=False, fast_mode=fast_mode)


def _gradcheck_mask(function, args, differentiated=None) -> torch.Tensor:
    """gradcheck's slow-mode Jacobians, as it computes them (its internals take a minute
    here): each input entry perturbed by +-eps in place, (f(x + eps) - f(x - eps)) / 2eps;
    a row of backward per output entry (autograd.grad with a unit vector); rows: outputs,
    columns: the differentiated inputs, as the report's. True where they are not close by
    gradcheck's rule."""
    leaves = _leaves(args, differentiated)
    wrt = [leaf for leaf in leaves if leaf.requires_grad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs = function.apply(*leaves)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        flat = torch.cat([o.reshape(-1) for o in outputs])
        ana = []
        for r in range(flat.numel()):
            unit = torch.zeros_like(flat)
            unit[r] = 1
            grads = torch.autograd.grad(flat, wrt, unit, retain_graph=True,
                                        allow_unused=True)
            ana.append(torch.cat([torch.zeros(a.numel(), dtype=a.dtype) if g is None
                                  else g.reshape(-1) for g, a in zip(grads, wrt)]))
        columns = []
        with torch.no_grad():
            for leaf in wrt:
                entry = leaf.detach()  # (a view: perturbed in place, as gradcheck does)
                view = entry.view(-1)
                for c in range(view.numel()):
                    orig = view[c].clone()
                    view[c] = orig - EPS
                    low = function.apply(*leaves)
                    view[c] = orig + EPS
                    high = function.apply(*leaves)
                    view[c] = orig
                    low = low if isinstance(low, tuple) else (low,)
                    high = high if isinstance(high, tuple) else (high,)
                    columns.append(torch.cat([(b - a).reshape(-1) / (2 * EPS)
                                              for a, b in zip(low, high)]))
    both = torch.stack(ana), torch.stack(columns).T
    return ~torch.isclose(both[0], both[1], rtol=RTOL, atol=ATOL)


def _report(function, args, differentiated=None):
    """The report, and how its reference was held and its analytic pass went."""
    seen = []
    real = analytic.compressed_pass

    def spy(space, *a):
        found = space.reference
        seen.append("colour" if isinstance(found, ByColour) and found.colour is
                    space.row_colour else "held" if isinstance(found, ByColour) else "ref")
        return real(space, *a)
    with mock.patch.object(analytic, "compressed_pass", spy), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = customgrad.check(function, *(_leaves(args, differentiated) if differentiated
                                              else args), checks=["jacobian"])
    if report.method.name == FINITE_DIFFERENCES:
        path = "fd"
    else:
        assert report.method.name == REFERENCE
        path = seen[0] if seen else "ref"
    return report, path


def _verdict_and_mask(function, make, path, differentiated=None):
    args = make()
    report, took = _report(function, args, differentiated)
    assert took == path, (took, report.method)
    assert report.passed is _gradcheck_verdict(function, args, differentiated)
    want = _gradcheck_mask(function, args, differentiated)
    got = report.mismatch_mask()
    assert got.shape == want.shape
    assert torch.equal(got, want), (int(got.sum()), int(want.sum()), int((got != want).sum()))
    return report


# (function, inputs, the path it must take)
FAST = [
    (Linear, _lin, "colour"),
    (OneWeightEntry, _lin, "colour"),
    (AffineWeightEntry, _lin, "colour"),
    (JustAbove, _lin, "colour"),
    (JustBelow, _lin, "colour"),
    (ScaledWeight, _lin, "colour"),
    (BiasHalf, _lin_bias, "colour"),
    (Linear, _zeros, "colour"),
    (AbsSeed, _lin, "colour"),
    (DetachedHalves, _square, "fd"),
    (NumpyLinear, _lin, "fd"),
    (TwoOutputsSecondIgnored, _lin, "held"),
]

SLOW = [
    (Linear, _lin_bias, "colour"),
    (DenseWrongColumn, _lin, "colour"),
    (MissingEntry, _lin, "colour"),
    (OneRowOfX, _lin, "colour"),
    (NoisyWeight, _lin, "colour"),
    (SquaredSeed, _lin, "colour"),
    (OneWeightEntry, _zeros, "colour"),
    (Linear, _nan, "fd"),
    (Linear, _large, "fd"),
    (OneWeightEntry, _large, "fd"),
    (Linear, _hundred, "colour"),
    (ScaledWeight, _hundred, "colour"),
    (JustAboveHundred, _hundred, "colour"),
    (JustBelowHundred, _hundred, "colour"),
    (TanhLinear, _lin, "colour"),
    (TanhLinearNoDerivative, _lin, "colour"),
    (Outer, _outer, "colour"),
    (OuterWrongEntry, _outer, "colour"),
    (DetachedHalvesAutogradShaped, _square, "fd"),
    (TwoOutputs, _lin, "held"),
    (Linear, _medium, "colour"),
    (OneWeightEntry, _medium, "colour"),
    (Linear, _thin, "colour"),
    (OneThinEntry, _thin, "colour"),
    (Linear, _ragged, "ref"),
    (OneWeightEntry, _ragged, "ref"),
    (SquareWeight, _square, "colour"),
    (TransposedWeight, _square, "colour"),
    (Bmm, _batched, "ref"),
    (BmmWrongInOneBatch, _batched, "ref"),
    (Einsum, _batched, "ref"),
    (Gram, _gram, "ref"),
    (GramHalf, _gram, "ref"),
    (Bilinear, _bilinear, "fd"),
    (BilinearWrongA, _bilinear, "fd"),
    (WeightData, lambda: [_x(16, 32), _x(32, 16, seed=1), _x(16, seed=2)], "fd"),
    (Softmax, _softmax, "ref"),
    (SoftmaxBuggy, _softmax, "ref"),
    (Cumsum, _softmax, "ref"),
    (CumsumOffByOne, _softmax, "ref"),
    (Attention, _attention, "ref"),
    (AttentionNoSoftmaxGrad, _attention, "ref"),
    (Linear, _cast(_lin, torch.float32), "colour"),
    (OneWeightEntry, _cast(_lin, torch.float32), "colour"),
]


def _id(case):
    function, make, _ = case
    return f"{function.__name__}-{make.__name__}"


@pytest.mark.parametrize("function, make, path", FAST, ids=[_id(c) for c in FAST])
def test_verdict_and_mask_are_gradchecks(function, make, path):
    """The path asserted, then gradcheck's verdict and its mismatch mask, entry for entry."""
    _verdict_and_mask(function, make, path)


@pytest.mark.slow
@pytest.mark.parametrize("function, make, path", SLOW, ids=[_id(c) for c in SLOW])
def test_verdict_and_mask_are_gradchecks_slow(function, make, path):
    _verdict_and_mask(function, make, path)


@pytest.mark.slow
@pytest.mark.parametrize("function, passes", [(ComplexLinear, True),
                                              (ComplexLinearNoConj, False)])
def test_complex_takes_the_full_method_with_gradchecks_verdict(function, passes):
    """complex128: never the reference (gradcheck's full method), gradcheck's verdict."""
    report, took = _report(function, _complex_lin())
    assert took == "fd" and report.passed is passes
    assert passes is _gradcheck_verdict(function, _complex_lin())


def test_the_fast_cases_hold_right_and_wrong_backwards_on_the_new_path():
    """A test that cannot fail is a defect: the new path's cases include failing ones, and
    the masks compared are not all empty."""
    on_new = [c for c in FAST + SLOW if c[2] == "colour"]
    assert len(on_new) >= 20 and sum(c[2] == "colour" for c in FAST) >= 8
    report = _verdict_and_mask(OneWeightEntry, _lin, "colour")
    assert report.mismatches == 1 and not report.passed
    assert bool(report.mismatch_mask()[2 * 16 + 3, 512 + 3 * 32 + 5])


@pytest.mark.parametrize("function, differentiated, path", [
    (Linear, {1}, "colour"), (OneWeightEntry, {1}, "colour"), (OneRowOfX, {0}, "ref")],
    ids=["Linear-w", "OneWeightEntry-w", "OneRowOfX-x"])
def test_only_some_inputs_differentiated(function, differentiated, path):
    """Only the weight requiring grad (out[i, j] reaches w[j] alone: the crossings are the
    columns of w[j], 16 colours, held by colour), or only x (block diagonal: the first
    grouping compresses, triples): gradcheck's verdict and mask over those columns."""
    _verdict_and_mask(function, _lin, path, differentiated)


def _seed_pattern_backward(ctx, g):
    """Right on every seed with one non-zero (gradcheck's slow mode), 1% off on the weight's
    gradient where out[5, 7] is seeded together with other rows (the compressed seeds of
    out[5, 7]'s colour; rows 0, 128 and 255, the spot check's, are in other colours)."""
    gx, gw, gb = Linear.backward(ctx, g)
    together = (g[5, 7] != 0) & (g.count_nonzero() > 1)
    return gx, gw * torch.where(together, 1.01, 1.0), gb


SeedPattern = type("SeedPattern", (Linear,), {"backward": staticmethod(_seed_pattern_backward)})


def test_a_backward_right_on_one_hot_seeds_only_fails_as_gradchecks_fast_mode():
    """A backward not linear in its seed, right on one-hot seeds only, is wrong: training's
    seeds are not one-hot. gradcheck's slow mode, which calls backward on one-hot seeds
    alone, cannot see it; its fast mode (a random seed) fails it. The check fails it too,
    as the fast mode does: the one place where a FAILED differs from the slow mode's
    verdict on purpose (docs/parity.md)."""
    args = _lin()
    assert not _gradcheck_verdict(SeedPattern, args, fast_mode=True)
    assert _gradcheck_verdict(SeedPattern, _lin(), fast_mode=False)
    report = customgrad.check(SeedPattern, *_lin())
    assert not report.passed


class _DetachedProduct(Linear):
    """The same, w detached in forward: autograd's Jacobian misses w's block."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        ctx.has_b = False
        return x @ w.detach().T


def test_the_fallbacks_reason_names_rounding_only_where_it_can_be_the_cause():
    """Weights of 1e4: finite differences round by more than atol, which is not the user's
    .detach(); the reason said only that. A detach still reads as one."""
    x = _x(16, 32)
    big = customgrad.check(Linear, x, _x(16, 32, seed=1) * 1e4)
    detached = customgrad.check(_DetachedProduct, x, _x(16, 32, seed=1))
    assert big.passed and detached.passed  # (by finite differences, both)
    assert big.method.name == detached.method.name == "finite-differences"
    assert "round too coarsely" in big.method.reason
    assert ".detach()" in detached.method.reason
    assert "round too coarsely" not in detached.method.reason
