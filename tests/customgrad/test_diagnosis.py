"""The diagnosis names what is wrong with a backward, on a labelled set of buggy Functions,
and says nothing about their correct twins."""

from __future__ import annotations

import pytest
import torch

from customgrad.checking import diagnosis
from customgrad.checking.jacobian import compare
from customgrad.function.inputs import forward_parameters
from tests.data.diagnosis_functions import CASES, TWIN_ARGS

#: the share of buggy Functions whose first diagnosis names their bug must be at least this
GOAL = 0.9


def _diagnose(function, make_args, seed=0):
    """As customgrad.check: where tensors require grad, exactly those are differentiated."""
    args = make_args(torch.Generator().manual_seed(seed))
    params = [p.name for p in forward_parameters(function)]
    chosen = {n: True for n, a in zip(params, args)
              if isinstance(a, torch.Tensor) and a.requires_grad}
    report = compare(function, args, differentiate=chosen or None)
    return report, diagnosis.diagnose(report, function, args)


def test_the_labelled_set_covers_every_kind_twice():
    labels = [label for label, *_ in CASES]
    assert len(CASES) >= 40 and len({c[2] for c in CASES}) >= 20
    assert all(labels.count(kind) >= 2 for kind in diagnosis.KINDS)


@pytest.mark.parametrize("label, buggy, correct, make_args", CASES,
                         ids=[c[1].__name__ for c in CASES])
def test_a_buggy_function_is_diagnosed_with_its_kind(label, buggy, correct, make_args):
    report, found = _diagnose(buggy, make_args)
    assert not report.passed
    assert found, "no diagnosis"
    assert found[0].kind == label, [str(d) for d in found]
    assert all(d.kind in diagnosis.KINDS and 0 < d.confidence <= 1 for d in found)
    assert all(d.block is None or d.block in [b.name for b in report.blocks] for d in found)


@pytest.mark.parametrize("correct, make_args",
                         list(dict.fromkeys((c[2], TWIN_ARGS.get(c[2], c[3])) for c in CASES)),
                         ids=lambda x: getattr(x, "__name__", ""))
def test_a_correct_twin_gets_no_diagnosis(correct, make_args):
    report, found = _diagnose(correct, make_args)
    assert report.passed and found == []


@pytest.mark.slow
def test_the_share_diagnosed_right_meets_the_goal():
    firsts = [_diagnose(buggy, make)[1][:1] for _, buggy, _, make in CASES]
    right = sum(bool(first) and first[0].kind == label
                for first, (label, *_) in zip(firsts, CASES))
    assert right / len(CASES) >= GOAL


def _case(name: str):
    _, buggy, _, make_args = next(c for c in CASES if c[1].__name__ == name)
    return _diagnose(buggy, make_args)[1]


def test_the_words_name_the_evidence():
    assert "d output/d x is 2x the true gradient" in _case("MulFactor")[0].detail
    assert "wrong sign" in _case("SinSignFlip")[0].detail
    assert "only x[:, 0] is wrong" in _case("TripleFirstColumnLost")[0].detail
    found = _case("AddBiasFirstRow")
    assert "takes only output[0, :] into account" in found[0].detail
    assert found[0].to_dict() == {"block": found[0].block, "kind": "missing_reduction",
                                  "detail": found[0].detail, "confidence": found[0].confidence}
    assert "Regenerate" in _case("Relu")[0].detail
    assert "float64" in _case("SinInFloat32")[0].detail
    assert "wrong where x < 0;" in _case("SwishHalfNegative")[0].detail
    assert "wrong where x > 1;" in _case("SoftplusLinearAboveOne")[0].detail
    assert "add_, index_add_" in _case("EmbeddingAssigned")[0].detail
    assert "forward changes x in place" in _case("SinDoubleInPlace")[0].detail


# ---- hypotheses that must not fire where they do not hold ----------------------------------


class Sin10(torch.autograd.Function):
    """A curved forward: finite differences at long steps differ by truncation, not noise."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (10 * x).sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 10 * (10 * x).cos() * 1.005


class DoubleInPlace(torch.autograd.Function):
    """forward works on its input in place (mark_dirty); backward is 1.5x too big."""

    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 3 * g


class Dropout(torch.autograd.Function):
    """A random forward whose backward is right for its own mask."""

    @staticmethod
    def forward(ctx, x):
        mask = (torch.rand_like(x) > 0.5).to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return g * mask


def test_a_small_factor_on_a_curved_forward_is_a_factor_not_rounding():
    found = _diagnose(Sin10, lambda g: [torch.randn(6, generator=g, dtype=torch.float64)])[1]
    assert [d.kind for d in found] == ["factor"] and "1.005x" in found[0].detail


def test_probes_never_touch_the_callers_tensors():
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    report = compare(DoubleInPlace, [x])
    found = diagnosis.diagnose(report, DoubleInPlace, [x])
    assert torch.equal(x, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    assert [d.kind for d in found] == ["factor"] and "1.5x" in found[0].detail


def test_a_random_forward_is_not_blamed_on_backward():
    torch.manual_seed(0)
    x = torch.randn(8, dtype=torch.float64)
    report = compare(Dropout, [x])
    found = diagnosis.diagnose(report, Dropout, [x])
    assert not any(d.kind in ("nondeterministic", "mutates", "rounding", "kink")
                   for d in found)


class ZeroGradients(torch.autograd.Function):
    """x * y whose backward returns zeros (or Nones) for both inputs, of one shape."""

    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return torch.zeros_like(g), torch.zeros_like(g)


class NoneGradients(ZeroGradients):
    @staticmethod
    def backward(ctx, g):
        return None, None


class UnusedSecond(torch.autograd.Function):
    """2 x with an unused y of x's shape; backward returns zeros for both: the true block of
    y is zero too, which a zero block for x "fits"."""

    @staticmethod
    def forward(ctx, x, y):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return torch.zeros_like(g), torch.zeros_like(g)


@pytest.mark.parametrize("function", [ZeroGradients, NoneGradients, UnusedSecond],
                         ids=lambda f: f.__name__)
def test_zero_or_none_gradients_are_never_swapped(function):
    args = [torch.randn(2, 3, dtype=torch.float64) for _ in range(2)]
    report = compare(function, args, differentiate={"x": True, "y": True})
    assert not report.passed
    assert all(d.kind != "swapped" for d in diagnosis.diagnose(report, function, args))


def test_a_float32_forward_is_rounding_not_a_broken_chain_rule():
    """Its float32 grad_outputs round when added: backward is still linear in them."""
    found = _case("SwishInFloat32")
    assert found[0].kind == "rounding"
    assert all(d.kind != "ignores_grad_output" for d in found)


def test_a_forward_changing_its_input_is_named_only_where_the_check_fails():
    """A marked-dirty in-place forward is legitimate: never ``mutates``."""
    x = torch.randn(5, dtype=torch.float64)
    report = compare(DoubleInPlace, [x])
    assert all(d.kind != "mutates" for d in diagnosis.diagnose(report, DoubleInPlace, [x]))


def scores(cases=CASES) -> dict[str, float]:
    """Recall: the share of bugs whose first diagnosis names their kind; precision: the
    share of all diagnoses given first (bugs and correct twins) that name the right kind."""
    right = given = 0
    for label, buggy, _, make in cases:
        first = _diagnose(buggy, make)[1][:1]
        given += bool(first)
        right += bool(first) and first[0].kind == label
    twins = dict.fromkeys((c[2], TWIN_ARGS.get(c[2], c[3])) for c in cases)
    false = sum(bool(_diagnose(correct, make)[1]) for correct, make in twins)
    return {"bugs": len(cases), "correct": len({c[2] for c in cases}),
            "correct_runs": len(twins), "recall": right / len(cases),
            "precision": right / max(1, given + false), "diagnosed_twins": false}


@pytest.mark.slow
def test_precision_and_recall_meet_the_goal():
    measured = scores()
    assert measured["recall"] >= GOAL and measured["diagnosed_twins"] == 0
    assert measured["precision"] >= GOAL


class NaNAndInfGradient(torch.autograd.Function):
    """The same NaN and Inf at every call: deterministic, only wrong."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        g = grad_output * 3
        g[0], g[1] = float("nan"), float("inf")
        return g


def test_nan_and_inf_gradients_are_not_called_nondeterministic():
    """NaN != NaN: two identical backward results with a NaN were diagnosed
    ``nondeterministic`` ("random numbers, atomics, or state kept between calls")."""
    found = _diagnose(NaNAndInfGradient,
                      lambda g: [torch.randn(6, generator=g, dtype=torch.float64)])[1]
    assert not any(d.kind in ("nondeterministic", "mutates") for d in found), found


@pytest.mark.parametrize("kind", ["factor", "transposed", "region"])
def test_a_hypothesis_answers_with_a_named_finding(kind):
    """BlockFit's hypotheses answer with a Found (kind, detail, confidence), the diagnosis
    read by name (a helper returned its three arguments as a bare tuple)."""
    from customgrad.checking.fits import BlockFit, Found

    _label, buggy, _correct, make_args = next(c for c in CASES if c[0] == kind)
    args = make_args(torch.Generator().manual_seed(0))
    report = compare(buggy, args)
    block = next(b for b in report.blocks if not b.passed)
    found = getattr(BlockFit(report, block, args[block.input.position]), kind)()
    assert isinstance(found, Found) and found.kind == kind
    assert found.detail and 0 < found.confidence <= 1
@pytest.mark.parametrize("label, buggy, correct, make_args",
                         [c for c in CASES if c[0] == "no_gradient"],
                         ids=lambda x: getattr(x, "__name__", ""))
def test_a_chosen_input_backward_gives_none_fails_as_in_gradcheck_and_is_named(
        label, buggy, correct, make_args):
    """A tensor that requires grad, whose gradient backward returns None: gradcheck fails it,
    and the diagnosis had no kind for it."""
    args = make_args(torch.Generator().manual_seed(0))
    assert not torch.autograd.gradcheck(buggy.apply, args, raise_exception=False)
    assert torch.autograd.gradcheck(correct.apply, args, raise_exception=False)
    report, found = _diagnose(buggy, make_args)
    name = report.inputs[1].name
    assert [d.kind for d in found] == ["no_gradient"]
    assert f"returns None for {name}, which is differentiated" in found[0].detail
    assert f"--no-grad {name}" in found[0].detail


class _LayerNormLast(torch.autograd.Function):
    """A right LayerNorm over the last dimension (a researcher's, in float32)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        rstd = torch.rsqrt(var + 1e-5)
        xhat = (x - mean) * rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rstd, weight = ctx.saved_tensors
        n = xhat.shape[-1]
        gx_hat = g * weight
        gx = rstd / n * (n * gx_hat - gx_hat.sum(-1, keepdim=True)
                         - xhat * (gx_hat * xhat).sum(-1, keepdim=True))
        return gx, (g * xhat).sum(0), g.sum(0)


def test_a_tolerance_finer_than_float32_is_rounding_not_a_kink_or_an_off_by_one():
    """At atol 1e-7 and rtol 0 a right float32 LayerNorm failed by a few float32 units, and
    the diagnosis said 'a kink at x[0, 4] (slope -1.642 to the right, -1.642 to the left)' and
    'only weight[1:7] is wrong: an off-by-one index'."""
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(3, 8, generator=g).requires_grad_(),
            (torch.rand(8, generator=g) + 0.5).requires_grad_(),
            torch.randn(8, generator=g).requires_grad_()]
    report = compare(_LayerNormLast, args, atol=1e-7, rtol=0.0)
    assert not report.passed  # (float32's units of these values are above 1e-7)
    found = diagnosis.diagnose(report, _LayerNormLast, args)
    assert [d.kind for d in found] == ["rounding"], [str(d) for d in found]
    assert "float32" in found[0].detail and "rtol 0" in found[0].detail
    # at float32's own tolerances it passes: nothing to explain
    assert compare(_LayerNormLast, args).passed


class _Exp3Wrong(torch.autograd.Function):
    """exp(3x) (curved) with a backward 1 % off."""

    @staticmethod
    def forward(ctx, x):
        y = torch.exp(3 * x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * 3.03 * y


def test_a_curved_forward_at_a_tight_tolerance_is_not_called_a_kink():
    """One-sided slopes of a curved forward differ by its curvature times the step: at
    atol 1e-10 that difference alone was read as a kink, and a wrong backward excused."""
    args = [torch.linspace(0.5, 1.5, 6, dtype=torch.float64).requires_grad_()]
    report = compare(_Exp3Wrong, args, atol=1e-10, rtol=0.0)
    assert not report.passed
    found = diagnosis.diagnose(report, _Exp3Wrong, args)
    assert all(d.kind != "kink" for d in found), [str(d) for d in found]
