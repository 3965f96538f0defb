"""customgrad's verdict equals gradcheck's wherever gradcheck can judge a Function: which
inputs are differentiated (requires_grad, --grad/--no-grad), in-place forwards, forward's
defaults. The Functions (tests/data/parity_functions.py) are shaped like real layers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import customgrad
from customgrad import cli
from customgrad.checking import subchecks
from customgrad.errors import SpecError
from tests.data import parity_functions as pf

#: real layers checked against gradcheck, each several ways
pytestmark = pytest.mark.slow

FILE = Path(pf.__file__)


def _g():
    return torch.Generator().manual_seed(0)


def _rand(*shape):
    return torch.randn(*shape, generator=_g(), dtype=torch.float64)


def _gradcheck(fn, args) -> bool:
    return torch.autograd.gradcheck(fn, args, raise_exception=False)


def _cli(capsys, *argv):
    code = cli.main(list(argv))
    return code, capsys.readouterr()


# ---- which inputs are differentiated -------------------------------------------------------

FILTERS = [(pf.FilterBank, lambda: (_rand(2, 9), _rand(3, 5))),
           (pf.FilterBankFlipped, lambda: (_rand(2, 9), _rand(3, 5))),
           (pf.FilterBank2D, lambda: (_rand(2, 6, 7), _rand(3), _rand(3)))]


@pytest.mark.parametrize("function,make", FILTERS, ids=lambda v: getattr(v, "__name__", ""))
def test_filter_taps_that_do_not_require_grad_are_constants(function, make):
    x, *taps = make()
    expected = _gradcheck(function.apply, (x.clone().requires_grad_(), *taps))
    report = customgrad.check(function, x.requires_grad_(), *taps)
    assert report.passed == expected
    assert [a.name for a in report.inputs] == ["x"]
    assert not any(d.kind == "swapped" for d in report.diagnoses)


@pytest.mark.parametrize("function,make", FILTERS, ids=lambda v: getattr(v, "__name__", ""))
def test_with_nothing_requiring_grad_a_none_gradient_is_a_constant(function, make):
    """No tensor requires grad: every float one is differentiated, but one that backward
    returns None for is a constant, with a note, never a failure or a diagnosis."""
    x, *taps = make()
    expected = _gradcheck(function.apply, (x.clone().requires_grad_(), *taps))
    report = customgrad.check(function, x, *taps)
    assert report.passed == expected
    assert [a.name for a in report.inputs] == ["x"]
    names = ["taps"] if len(taps) == 1 else ["row", "col"]
    for name in names:
        assert f"{name}: backward returns None; treated as not differentiated." in report.notes
    assert all(d.kind not in ("swapped", "missing_reduction") for d in report.diagnoses)


def test_a_tap_that_requires_grad_is_differentiated_as_by_gradcheck():
    x, taps = _rand(2, 9), _rand(3, 5)
    assert not _gradcheck(pf.FilterBank.apply, (x.clone().requires_grad_(),
                                                 taps.clone().requires_grad_()))
    report = customgrad.check(pf.FilterBank, x, taps.requires_grad_())
    assert not report.passed
    assert [a.name for a in report.inputs] == ["taps"]


def test_the_callers_requires_grad_and_grad_are_untouched():
    x, taps = _rand(2, 9).requires_grad_(), _rand(3, 5)
    customgrad.check(pf.FilterBank, x, taps)
    assert x.requires_grad and x.grad is None and not taps.requires_grad


def test_when_backward_returns_none_for_every_input_it_still_fails():
    """Nothing is left to treat as constant: a backward of Nones is a wrong backward."""
    class Nothing(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None

    assert not customgrad.check(Nothing, _rand(3)).passed


def test_cli_no_grad_and_grad_choose_the_inputs(capsys):
    target = f"{FILE}:FilterBankFlipped"
    shapes = ["--shape", "x=2x9", "--shape", "taps=3x5", "--in-process"]
    code, out = _cli(capsys, "check", target, *shapes, "--no-grad", "taps")
    assert code == 1 and "d taps" not in out.out and "d output [2x3x9] / d x" in out.out
    code, out = _cli(capsys, "check", f"{FILE}:FilterBank", *shapes, "--grad", "x")
    assert code == 0 and "d taps" not in out.out
    code, out = _cli(capsys, "check", f"{FILE}:FilterBank", *shapes, "--grad", "taps")
    assert code == 1 and "d output [2x3x9] / d taps" in out.out and "/ d x" not in out.out


def test_the_projected_check_chooses_the_inputs_as_the_full_one(capsys):
    target = f"{FILE}:FilterBank"
    shapes = ["--shape", "x=2x9", "--shape", "taps=3x5", "--in-process", "--projected", "3"]
    code, out = _cli(capsys, "check", target, *shapes)
    assert code == 0 and "taps: backward returns None; treated as not differentiated" \
        in out.out
    code, out = _cli(capsys, "check", target, *shapes, "--grad", "taps")
    assert code == 1


def test_cli_grad_names_a_parameter_that_cannot_be_differentiated(capsys):
    code, out = _cli(capsys, "check", f"{FILE}:FilterBank", "--shape", "x=2x9",
                     "--shape", "taps=3x5", "--grad", "nope", "--in-process")
    assert code == 2 and "nope" in out.err and "x, taps" in out.err
    code, out = _cli(capsys, "check", f"{FILE}:FilterBank", "--grad", "x", "--no-grad", "x",
                     "--in-process")
    assert code == 2 and "both --grad and --no-grad" in out.err
    code, out = _cli(capsys, "check", f"{FILE}:FilterBank", "--no-grad", "x", "--no-grad",
                     "taps", "--in-process")
    assert code == 2 and "every floating-point tensor input (x, taps) is left out" in out.err


def test_an_integer_tensor_cannot_be_chosen():
    class Gather(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.n = x.shape[0]
            return x[idx]

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            return torch.zeros(ctx.n, dtype=g.dtype).index_add_(0, idx, g), None

    with pytest.raises(SpecError, match="idx cannot be differentiated: it is int64"):
        customgrad.checking.jacobian.compare(Gather, [_rand(5), torch.tensor([0, 2])],
                                    differentiate={"idx": True})


# ---- in-place forwards ---------------------------------------------------------------------

INPLACE = [pf.NumpyExpInplace, pf.NumpyExpInplaceBuggy, pf.ExpInplaceCtx]


@pytest.mark.parametrize("function", INPLACE, ids=lambda f: f.__name__)
def test_an_in_place_forward_gets_gradchecks_verdict(function):
    """forward overwrites its input (through numpy, unseen by the version counter, or with
    exp_) and marks it dirty: every forward call works on fresh copies."""
    x = _rand(3, 4) * 0.5
    expected = _gradcheck(lambda t: function.apply(t.clone()), (x.clone().requires_grad_(),))
    assert expected == (function is not pf.NumpyExpInplaceBuggy)
    report = customgrad.check(function, x)
    assert report.passed == expected
    assert any("in place" in n or "a view of its input" in n for n in report.notes)
    assert all(d.kind not in ("mutates", "swapped") for d in report.diagnoses)


def test_the_base_point_survives_a_forward_that_writes_at_some_points_only():
    """A forward writing into its input only where x[0] > 0 is not caught at the base point
    (x[0] < 0 there); the finite differences still come out right."""
    class SometimesInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            y = x.detach().numpy()
            if y[0] > 0:
                y[1:] = 0.0  # scribbles on the input
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = torch.tensor([-1e-7, 1.0, 2.0], dtype=torch.float64)
    report = customgrad.checking.jacobian.compare(SometimesInPlace, [x])
    assert report.passed, report.text()
    assert any("at some points" in n for n in report.notes)
    torch.testing.assert_close(x, torch.tensor([-1e-7, 1.0, 2.0], dtype=torch.float64),
                               rtol=0, atol=0)


def test_double_backward_of_an_in_place_forward_is_gradgradchecks():
    x = _rand(3, 4) * 0.5
    expected = torch.autograd.gradgradcheck(lambda t: pf.ExpInplaceCtx.apply(t.clone()),
                                            (x.clone().requires_grad_(),),
                                            raise_exception=False)
    report = customgrad.check(pf.ExpInplaceCtx, x, checks=["double_backward"])
    assert report.checks["double_backward"].status == ("passed" if expected else "failed")


# ---- forward's defaults --------------------------------------------------------------------


@pytest.mark.parametrize("function", [pf.Sparsemaxish, pf.SparsemaxishNoCentering],
                         ids=lambda f: f.__name__)
def test_forwards_defaults_are_filled_as_apply_fills_them(function):
    X = _rand(3, 5)
    expected = _gradcheck(function.apply, (X.clone().requires_grad_(),))
    assert customgrad.check(function, X).passed == expected
    assert customgrad.check(function, X, 0).passed == _gradcheck(
        lambda t: function.apply(t, 0), (X.clone().requires_grad_(),))
    report = customgrad.checking.jacobian.compare(function, [X])
    assert report.passed == expected and [a.name for a in report.inputs] == ["X"]


def test_a_missing_argument_without_a_default_is_named():
    with pytest.raises(SpecError, match=r"taps has no default"):
        customgrad.check(pf.FilterBank, _rand(2, 9))
    with pytest.raises(SpecError, match=r"takes 3 arguments \(X, dim, k\), 4 were given"):
        customgrad.check(pf.Sparsemaxish, _rand(2, 9), -1, None, 5)


def test_the_cli_passes_the_defaults_and_takes_another_value(capsys):
    target = f"{FILE}:SparsemaxishNoCentering"
    code, out = _cli(capsys, "check", target, "--in-process", "--json")
    assert code == 1 and '"guessed_constants": []' in out.out
    code, out = _cli(capsys, "check", f"{FILE}:Sparsemaxish", "--const", "dim=0",
                     "--const", "k=2", "--in-process")
    assert code == 0, out


# ---- forwards computed in float32 ----------------------------------------------------------


@pytest.mark.parametrize("function", [pf.SiluFloat32, pf.SiluFloat32Buggy],
                         ids=lambda f: f.__name__)
def test_a_float32_forward_at_a_float64_point_gets_gradchecks_verdict(function):
    """Both fail (float32 rounding inside forward, at eps 1e-6); the correct one is told it is
    rounding, not a backward ignoring grad_output."""
    x = _rand(3, 4)
    expected = _gradcheck(function.apply, (x.clone().requires_grad_(),))
    report = customgrad.check(function, x)
    assert report.passed == expected
    kinds = [d.kind for d in report.diagnoses]
    assert "ignores_grad_output" not in kinds
    if function is pf.SiluFloat32:
        assert kinds[:1] == ["rounding"]


# ---- the CLI's inputs ----------------------------------------------------------------------


def test_an_index_tensor_is_drawn_with_randint(capsys):
    target = f"{FILE}:EmbeddingBag"
    shapes = ["--shape", "weight=6x3", "--shape", "idx=9", "--in-process"]
    code, out = _cli(capsys, "check", target, *shapes, "--init", "idx=randint(0,6)")
    assert code == 0, out.err
    assert "idx (int64) is not floating point" in out.out


def test_a_function_refusing_a_drawn_argument_is_told_what_was_drawn(capsys):
    code, out = _cli(capsys, "check", f"{FILE}:EmbeddingBag", "--shape", "idx=9",
                     "--in-process")
    err = " ".join(out.err.split())
    assert code == 2
    assert "forward was given weight: a float64 tensor 3x8 (normal), idx: a float64 " \
           "tensor 9 (normal)." in err
    assert "--init NAME=randint(0,8)" in err


def test_the_drawn_arguments_are_named_where_the_window_builds_too():
    from customgrad.errors import FunctionError
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings

    with pytest.raises(FunctionError, match=r"forward was given weight: a float32 tensor") as e:
        build(Settings(target=f"{FILE}:EmbeddingBag", shapes={"idx": "4"}))
    assert "--" not in str(e.value)  # the window has no flags


def test_randint_is_an_int64_init():
    from customgrad.function.inputs import TensorSpec, draw, parse_init

    assert parse_init("randint(0, 8)") == "randint(0,8)"
    with pytest.raises(SpecError, match="randint"):
        parse_init("randint(3,3)")
    _, (idx,) = draw([TensorSpec("idx", (50,), "randint(0,8)")], 0, torch.float32,
                     torch.device("cpu"))
    assert idx.dtype == torch.int64 and 0 <= int(idx.min()) and int(idx.max()) < 8


def test_tuple_constants_from_a_default_and_from_the_command_line(capsys):
    target = f"{FILE}:SumDims"
    code, out = _cli(capsys, "check", target, "--in-process")
    assert code == 0 and "d output [3] / d x [3x8]" in out.out  # dims=(1,), not a tensor
    code, out = _cli(capsys, "check", target, "--const", "dims=(0, 1)", "--in-process")
    assert code == 0 and "d output [scalar] / d x [3x8]" in out.out
    code, out = _cli(capsys, "check", target, "--const", "dims=(0 1)", "--in-process")
    assert code == 2 and "not a tuple of numbers" in out.err


def test_a_tuple_constant_survives_a_session_file():
    from customgrad.function.inputs import ConstSpec, apply_overrides

    specs = apply_overrides([ConstSpec("dims", (1,))], constants={"dims": [0, 1]})
    assert specs == [ConstSpec("dims", (0, 1))]


def test_a_leading_plain_number_is_inferred(capsys):
    code, out = _cli(capsys, "check", f"{FILE}:Repeat", "--in-process")
    assert code == 0, out.err
    assert "n was taken as the constant 2" in out.out


def test_tensors_annotated_float_are_tensors_a_float_constant_stays_one(capsys):
    code, out = _cli(capsys, "check", f"{FILE}:ScaleAnnotatedFloat", "--in-process")
    assert code == 0 and "/ d x [3x8]" in out.out and "/ d w [3x8]" in out.out, out.err
    code, out = _cli(capsys, "check", f"{FILE}:Power", "--const", "p=3.0", "--in-process")
    assert code == 0 and "/ d p" not in out.out, out.err


def test_too_large_speaks_the_api_s_language():
    with pytest.raises(customgrad.TooLargeError) as e:
        customgrad.check(pf.SiluFloat32, torch.zeros(256, 256, dtype=torch.float64))
    assert "--" not in str(e.value) and "memory_cap=" in str(e.value)
    assert "require grad" in str(e.value)


def test_too_large_on_the_command_line_names_its_flags(capsys):
    code, out = _cli(capsys, "check", f"{FILE}:SiluFloat32", "--shape", "x=256x256",
                     "--in-process")
    assert code == 2 and "--memory-cap" in out.err and "--projected" in out.err


# ---- batched gradients, by gradcheck's definition ------------------------------------------


@pytest.mark.parametrize("function,make", [
    (pf.FilterBank, lambda: (_rand(2, 9), _rand(3, 5))),
    (pf.Sparsemaxish, lambda: (_rand(3, 5),)),
    (pf.ScaleByNumpy, lambda: (_rand(3, 4),)),
    (pf.RowScaleBatchBlind, lambda: (_rand(3, 4),)),
    (pf.NumpyExpInplace, lambda: (_rand(3, 4) * 0.5,)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_batched_grad_gets_gradchecks_verdict(function, make):
    x, *rest = make()
    try:
        expected = torch.autograd.gradcheck(
            lambda t, *r: function.apply(t.clone(), *r), (x.clone().requires_grad_(), *rest),
            check_batched_grad=True, raise_exception=False)
    except Exception:  # gradcheck lets some errors under vmap through: a failure all the same
        expected = False
    report = customgrad.check(function, x.requires_grad_(), *rest,
                              checks=["batched_grad"])
    assert report.checks["batched_grad"].status == ("passed" if expected else "failed"), \
        report.checks["batched_grad"].detail


def test_a_forward_scribbling_on_an_input_nobody_differentiates_gets_copies():
    """The taps of a filter bank, scaled in place by forward (through numpy): each call
    works on a fresh copy, so every finite difference sees the taps as given."""
    class ScalesItsTaps(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, taps):
            ctx.scale = float(taps.sum())
            array = taps.detach().numpy()
            array *= 2.0  # scribbles on its input after use
            return x * ctx.scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    x, taps = _rand(2, 3) + 3.0, _rand(4)
    report = customgrad.check(ScalesItsTaps, x, taps, checks=subchecks.NAMES)
    assert report.passed, report.text()  # nondeterminism too: two calls see the same taps
    assert any("in place" in n for n in report.notes)


def test_a_constant_keeps_forwards_default_beside_its_value():
    from customgrad.function.inputs import ConstSpec, apply_overrides, derive_specs

    specs = apply_overrides(derive_specs(pf.Sparsemaxish), constants={"dim": "0"})
    dim = next(s for s in specs if s.name == "dim")
    assert dim == ConstSpec("dim", 0) and dim.defaults == (-1,)
    assert next(s for s in specs if s.name == "k").defaults == (None,)
