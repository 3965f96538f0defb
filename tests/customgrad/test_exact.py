"""The verified reference (customgrad.checking.jacobian.exact): autograd through forward, checked by
compressed finite differences; where forward hides something from autograd, the full method
runs and says why, and the verdict is gradcheck's either way."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.autograd import Function

from customgrad.checking.jacobian import colouring, compare
from customgrad.checking.jacobian.report import FINITE_DIFFERENCES, REFERENCE
from customgrad.targets.gallery.seeds import KillHead, LinearFunction
from tests.data.diagnosis_functions import Linear, LinearBiasNoSum
from tests.data.parity_functions import ExpInplaceCtx as ExpInPlace

ROOT = Path(__file__).resolve().parents[2]


def _gradcheck(function, args, differentiate=None) -> bool:
    leaves = [a.detach().clone().requires_grad_(differentiate is None or differentiate[k])
              if isinstance(a, torch.Tensor) else a for k, a in enumerate(args)]
    with warnings.catch_warnings():  # gradcheck warns about a float32 input, and checks it
        warnings.simplefilter("ignore")
        return torch.autograd.gradcheck(function.apply, tuple(leaves), raise_exception=False)


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


class DetachedSquare(Function):
    """x * x.detach(): autograd sees x, the truth is 2x; backward follows autograd (a bug)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.detach()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


class DetachedSquareRight(DetachedSquare):
    """The same forward, with the true derivative in backward."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


class DataScale(Function):
    """3x through .data: no graph at all."""

    @staticmethod
    def forward(ctx, x):
        return x.data * 3

    @staticmethod
    def backward(ctx, g):
        return 3 * g


class NumpySquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.from_numpy(np.square(x.detach().numpy()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class RoundedScale(Function):
    """round has a zero derivative for autograd, a step for finite differences."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 1e6) / 1e6 * 3

    @staticmethod
    def backward(ctx, g):
        return 3 * g


class NumpyDoubleInPlace(Function):
    """Doubles its input in place through numpy (mark_dirty): autograd sees nothing."""

    @staticmethod
    def forward(ctx, x):
        np.multiply(x.numpy(), 2, out=x.numpy())
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class SinOneWrong(Function):
    """sin, with backward wrong at the single entry [5, 77]."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * x.cos()
        grad[..., 5, 77] = grad[..., 5, 77] * 1.01
        return grad


class Softmax(Function):
    """A dense Jacobian: every output depends on every input."""

    @staticmethod
    def forward(ctx, x):
        y = x.softmax(0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum())


def test_killhead_takes_the_reference_with_one_colour_and_gradchecks_verdict():
    x = _x(16, 32)
    report = compare(KillHead, [x, 2])
    assert report.method.name == REFERENCE and report.method.colours == 1
    assert report.method.forwards == 4  # two seeds, two sides
    assert report.passed == _gradcheck(KillHead, [x, 2]) is True
    expected = torch.eye(512, dtype=torch.float64)
    expected[torch.arange(512) % 32 < 2] = 0
    assert torch.equal(report.numerical, expected)  # exact: no finite-difference noise


def test_a_backward_wrong_at_one_entry_of_a_64x128_input_is_caught_under_compression():
    x = _x(64, 128)
    x[5, 77] = 0.5  # cos(x) far from 0: the 1 % error is outside the tolerance
    report = compare(SinOneWrong, [x])
    assert report.method.name == REFERENCE and report.method.colours == 1
    assert not report.passed and report.mismatches == 1
    assert report.worst.input_index == report.worst.output_index == (5, 77)


@pytest.mark.parametrize("function, passes", [(DetachedSquare, False),
                                              (DetachedSquareRight, True)])
def test_a_detached_forward_falls_back_and_keeps_gradchecks_verdict(function, passes):
    x = _x(4, 5)
    report = compare(function, [x])
    assert report.method.name == FINITE_DIFFERENCES
    assert "disagrees with finite differences" in report.method.reason
    assert report.passed is passes is _gradcheck(function, [x])
    if not passes:  # every entry of the diagonal is wrong by x
        assert report.mismatches == int(((x.abs() > 1e-5 + 2e-3 * x.abs())).sum())


@pytest.mark.parametrize("function, passes", [(DetachedSquare, False),
                                              (DetachedSquareRight, True)])
def test_a_transposed_input_takes_the_full_method_too(function, passes):
    """The full method's loop took a flat view of the base point, which kept the input's
    strides: a transposed input raised RuntimeError out of the check."""
    x = _x(5, 4).t()
    report = compare(function, [x])
    assert report.method.name == FINITE_DIFFERENCES
    assert report.passed is passes is _gradcheck(function, [x])
    if not passes:
        assert report.mismatches == int(((x.abs() > 1e-5 + 2e-3 * x.abs())).sum())


@pytest.mark.parametrize("function, reason", [
    (DataScale, "autograd cannot see"),
    (NumpySquare, "autograd cannot see"),
    (RoundedScale, "disagrees with finite differences"),
])
def test_a_forward_autograd_cannot_follow_falls_back_and_says_why(function, reason):
    x = _x(6, seed=1)
    report = compare(function, [x])
    assert report.method.name == FINITE_DIFFERENCES and reason in report.method.reason
    assert report.passed == _gradcheck(function, [x])
    data = json.loads(json.dumps(report.to_dict()))
    assert data["method"] == {"name": FINITE_DIFFERENCES, "reason": report.method.reason}
    assert report.method.line() in report.text()


def test_in_place_forwards_work_on_copies_whichever_method():
    x = _x(3, 4)
    kept = x.clone()
    numpy_report = compare(NumpyDoubleInPlace, [x])
    assert numpy_report.method.name == FINITE_DIFFERENCES and numpy_report.passed
    torch_report = compare(ExpInPlace, [x])
    assert torch_report.method.name == REFERENCE and torch_report.passed
    assert torch.equal(x, kept)
    torch.testing.assert_close(torch_report.numerical, torch.diag(x.exp().reshape(-1)))


def test_inputs_not_differentiated_stay_constants():
    x, w = _x(6, 8), _x(5, 8, seed=1)
    report = compare(LinearFunction, [x, w], differentiate={"weight": False})
    assert report.method.name == REFERENCE
    assert [a.name for a in report.inputs] == ["input"]
    assert report.passed == _gradcheck(LinearFunction, [x, w], [True, False]) is True
    torch.testing.assert_close(report.numerical, torch.kron(torch.eye(6, dtype=torch.float64),
                                                            w), rtol=0, atol=1e-14)


def test_linear_function_compresses_its_columns(monkeypatch):
    from customgrad.checking.jacobian import exact

    args = [_x(16, 32), _x(16, 32, seed=1)]
    report = compare(LinearFunction, args)
    # 64 colours (32 for the input, 32 for the weight): every column at once first, which
    # holds (a linear forward: the differences are exact to rounding)
    assert report.method.name == REFERENCE and report.passed
    assert (report.method.colours, report.method.forwards) == (1, 4)
    monkeypatch.setattr(exact, "ALL_AT_ONCE_FROM", 65)
    by_colours = compare(LinearFunction, args)
    assert (by_colours.method.colours, by_colours.method.forwards) == (64, 4 * 64)
    assert by_colours.blocks == report.blocks and by_colours.worst == report.worst


class MatmulPlusShift(Function):
    """input @ weight.T plus input rolled by one along its rows (times 0.5): the crossings of
    a row's two groups hold more columns than the row reaches."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.mm(w.t()) + 0.5 * x.roll(1, 1)[:, :w.shape[0]]

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        rolled = torch.zeros_like(x)
        rolled[:, :w.shape[0]] = 0.5 * g
        return g.mm(w) + rolled.roll(-1, 1), g.t().mm(x)


@pytest.mark.parametrize("function, args, fewer", [
    (LinearFunction, lambda: [_x(16, 32), _x(16, 32, seed=1)], True),
    (MatmulPlusShift, lambda: [_x(16, 32), _x(16, 32, seed=1)], True),
    # rows (i, j) of 15 j's in groups of 16: the crossings bound too little, the groups are
    # refined as before (the second grouping's 16 products lost)
    (LinearFunction, lambda: [_x(20, 12), _x(15, 12, seed=1)], False)])
def test_crossed_groups_find_the_entries_with_fewer_products(function, args, fewer,
                                                             monkeypatch):
    """Rows (i, j) of a matrix product reach x[i] and w[j]: groups of consecutive rows all
    share w, and were split until they did not (1,088 products at 64x128 / 64x128); a second
    grouping across them (rows of the same j) bounds each row by what both its groups reach,
    and seeds rows whose bounds do not meet together: the same entries, fewer products."""
    from customgrad.checking.jacobian import exact

    report = compare(function, args())
    monkeypatch.setattr(exact.Traced, "_crossed", lambda *a: None)
    refined = compare(function, args())
    assert report.method.name == refined.method.name == REFERENCE
    if fewer:
        assert report.method.products < refined.method.products
    else:
        assert report.method.products == refined.method.products + 16
    assert torch.equal(report.numerical, refined.numerical)
    assert torch.equal(report.analytic, refined.analytic)
    assert report.blocks == refined.blocks and report.worst == refined.worst
    assert report.passed and _gradcheck(function, args())


def test_the_analytic_pass_takes_the_crossings_row_colours(monkeypatch):
    """Where the crossings are exactly the entries found (a matrix product's), the analytic
    pass's colouring of the rows is theirs: not computed again, the same report."""
    from customgrad.checking.jacobian import exact

    args = [_x(16, 32), _x(16, 32, seed=1)]
    calls = []
    real = colouring.group_columns
    monkeypatch.setattr(colouring, "group_columns",  # (the analytic pass's, not exact's)
                        lambda *a: calls.append(a[2]) or real(*a))
    report = compare(LinearFunction, args)
    assert calls == [] and report.method.name == REFERENCE
    crossed = exact.Traced._crossed

    def uncoloured(self, *a):
        found = crossed(self, *a)
        self.row_colour = None
        return found
    monkeypatch.setattr(exact.Traced, "_crossed", uncoloured)
    again = compare(LinearFunction, args)
    assert calls == [256]
    assert torch.equal(report.analytic, again.analytic)
    assert report.blocks == again.blocks and report.worst == again.worst


def test_complex_and_float32_forwards_take_the_full_method_a_dense_one_all_columns_at_once():
    z = torch.randn(3, dtype=torch.complex128, generator=torch.Generator().manual_seed(0))
    from tests.data.diagnosis_functions import SinInFloat32

    complex_report = compare(ExpInPlace, [z])
    assert "complex" in complex_report.method.reason
    # dense: colours cost more forward calls than finite differences, but every column
    # at once verifies it (four calls), as a scalar loss of a big input (MSE 64x128: 16,384
    # columns) is: it took the full finite differences before, 2n forward calls
    dense = compare(Softmax, [_x(40)])
    assert dense.method.name == REFERENCE and dense.method.colours == 1 and dense.passed
    assert dense.method.forwards <= 4
    x = _x(6).float()
    float32 = compare(SinInFloat32, [x])  # works in float32 inside: rounding, not autograd
    assert float32.method.name == FINITE_DIFFERENCES
    assert float32.passed == _gradcheck(SinInFloat32, [x])


@pytest.mark.parametrize("group", [colouring.group_columns, colouring.group_columns_in_rounds])
def test_no_two_columns_of_a_colour_share_a_row(group):
    g = torch.Generator().manual_seed(3)
    pattern = torch.rand(40, 60, generator=g) < 0.08
    rows, cols = pattern.nonzero(as_tuple=True)
    colour = group(rows, cols, 60)
    assert colour.shape == (60,)
    for k in range(int(colour.max()) + 1):
        assert int(pattern[:, colour == k].sum(1).max()) <= 1
    diagonal = torch.arange(50)
    assert int(group(diagonal, diagonal, 50).max()) == 0


def test_the_colours_are_scipys_and_scipy_optimize_is_not_imported_for_them():
    """group_columns calls scipy's compiled kernel itself (importing scipy.optimize cost
    every fresh process's first check 0.6 s): the same colours as
    scipy.optimize._numdiff.group_columns on random patterns, and a check in a fresh
    interpreter leaves scipy.optimize and scipy.sparse unimported."""
    from scipy.optimize._numdiff import group_columns as scipys
    from scipy.sparse import csc_matrix

    g = torch.Generator().manual_seed(5)
    for _ in range(60):
        m, n, k = (int(torch.randint(1, hi, (1,), generator=g)) for hi in (40, 40, 200))
        rows, cols = torch.randint(0, m, (k,), generator=g), torch.randint(0, n, (k,), generator=g)
        pattern = csc_matrix((np.ones(k, dtype=np.int8), (rows.numpy(), cols.numpy())),
                             shape=(int(rows.max()) + 1, n))
        assert colouring.group_columns(rows, cols, n).tolist() == scipys(pattern).tolist()
    script = ("import sys, torch, customgrad\n"
              "from customgrad.targets.gallery import LinearFunction\n"
              "x, w = torch.randn(8, 16, dtype=torch.float64), torch.randn(4, 16, "
              "dtype=torch.float64)\n"
              "report = customgrad.check(LinearFunction, x, w)\n"
              "assert report.passed and report.method.colours > 0, report\n"
              "print(sorted(m for m in ('scipy.optimize', 'scipy.sparse') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.split("\n")[-2] == "[]"


def _second_order_cases():
    from tests.data import second_order_functions as so

    return [(so.Cube, [_x(2, 3)], True), (so.CubeDetached, [_x(2, 3)], False),
            (so.CubeGradDetached, [_x(2, 3)], False), (so.CubeHalfSecond, [_x(2, 3)], False),
            (so.Multiply, [_x(3), _x(3, seed=1)], True),
            (so.MultiplyDetachedCross, [_x(3), _x(3, seed=1)], False)]


@pytest.mark.parametrize("case", range(6))
def test_double_backward_by_the_reference_keeps_gradgradchecks_verdict(case):
    from customgrad.checking.beyond_jacobian import double_backward_check, verified_double_backward

    function, args, traceable = _second_order_cases()[case]
    expected = torch.autograd.gradgradcheck(
        function.apply, tuple(a.clone().requires_grad_() for a in args), raise_exception=False)
    fast = verified_double_backward(function, args)
    # a backward that hides part of itself from autograd takes gradgradcheck, as before
    assert (fast is not None) is traceable
    verdict = fast if fast is not None else double_backward_check(function, args)
    assert verdict.passed is expected


def test_double_backward_of_exp_takes_the_reference():
    from customgrad.api import check
    from customgrad.targets.gallery.classic import Exp

    report = check(Exp, _x(16, 32), checks=["jacobian", "double_backward"])
    double = report.checks["double_backward"]
    assert double.status == "passed" and "verified" in double.detail


@pytest.mark.parametrize("name", ["killhead", "killhead_bug", "linear_bug", "abs_uv"])
def test_the_reference_is_the_true_jacobian_whatever_backward_says(name):
    """The numerical Jacobian the check compares with is autograd's through forward (the
    verified reference), with or without a bug in backward."""
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings

    problem = build(Settings(target=name, dtype="float64"))
    report = compare(problem.function, problem.args)
    assert report.method.name == REFERENCE
    assert report.passed == _gradcheck(problem.function, problem.args)


def test_a_buggy_backward_does_not_leak_into_the_reference():
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(3, 4, generator=g, dtype=torch.float64),
            torch.randn(5, 4, generator=g, dtype=torch.float64),
            torch.randn(5, generator=g, dtype=torch.float64)]
    bug, right = compare(LinearBiasNoSum, args), compare(Linear, args)
    assert not bug.passed and right.passed
    assert bug.method.name == right.method.name == REFERENCE
    # the same computation (autograd through the same forward) on the same inputs
    assert torch.equal(bug.numerical, right.numerical)



class CountingKillHead(KillHead):
    """KillHead counting its backward calls (a vmapped call counts once)."""

    calls = 0

    @staticmethod
    def backward(ctx, grad_output):
        CountingKillHead.calls += 1
        return KillHead.backward(ctx, grad_output)


class SinStray(SinOneWrong):
    """sin, whose backward also puts gradient at one entry where the Jacobian has none:
    output [5, 8] reaches input [5, 7]."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * x.cos()
        grad[..., 5, 7] = grad[..., 5, 7] + g[..., 5, 8]
        return grad


class SinStrayCancelling(SinStray):
    """Two stray entries in one column, equal and opposite: a sum of the rows hides them."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * x.cos()
        grad[..., 5, 7] = grad[..., 5, 7] + g[..., 5, 8] - g[..., 5, 9]
        return grad


class SinSquaredGrad(SinStray):
    """A backward that squares grad_output: one-hot rows (all gradcheck sees) are right."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * g * x.cos()


def _rows_one_at_a_time(function, args):
    """The report with every row of the analytic Jacobian computed (no compression)."""
    from unittest import mock

    from customgrad.checking.jacobian import analytic

    with mock.patch.object(analytic, "compressed_pass", lambda *a: False):
        return compare(function, args)


def _same_report(got, want):
    assert got.passed is want.passed and got.mismatches == want.mismatches
    assert got.worst == want.worst
    for a, b in zip(got.blocks, want.blocks):
        assert (a.mismatches, a.worst) == (b.mismatches, b.worst)
        assert a.worst_score == pytest.approx(b.worst_score, rel=1e-12, abs=1e-12)
        assert a.max_abs_error == pytest.approx(b.max_abs_error, rel=1e-12, abs=1e-300)
        assert a.max_rel_error == pytest.approx(b.max_rel_error, rel=1e-12, abs=1e-300)
    assert torch.equal(got.analytic, want.analytic)


def test_killheads_rows_come_by_compressed_products_with_the_same_report(monkeypatch):
    from customgrad.checking.jacobian import limits

    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", 1 << 12)  # 8 rows a tile: 64 tiles
    x = _x(16, 32)
    CountingKillHead.calls = 0
    report = compare(CountingKillHead, [x, 2])
    # one batched call for the products, three rows checked one at a time, three rows
    # checked against the autograd engine; row tiles would be 64 batched calls more
    assert CountingKillHead.calls < 20
    assert report.passed == _gradcheck(KillHead, [x, 2]) is True
    _same_report(report, _rows_one_at_a_time(CountingKillHead, [x, 2]))
    assert CountingKillHead.calls > 64


@pytest.mark.parametrize("function, mismatches", [(SinStray, 1), (SinStrayCancelling, 2)])
def test_gradient_where_the_jacobian_has_none_takes_every_row(function, mismatches):
    """A compressed product cannot say which row put gradient in a column: where the rows
    reach a column the reference's owner does not own, every row is computed, and the mask
    is the row-by-row one (and gradcheck's verdict)."""
    x = _x(16, 32)
    x[5, 7:10] = 0.5
    report = compare(function, [x])
    assert report.method.name == REFERENCE
    assert not report.passed and report.mismatches == mismatches
    assert report.passed == _gradcheck(function, [x])
    assert report.worst.input_index == (5, 7) and report.worst.output_index[0] == 5
    _same_report(report, _rows_one_at_a_time(function, [x]))
    wrong = (report.analytic - report.numerical).abs() > 1e-5 + 1e-3 * report.numerical.abs()
    assert wrong.nonzero().tolist() == [[5 * 32 + 8, 5 * 32 + 7], [5 * 32 + 9, 5 * 32 + 7]][
        :mismatches]


def test_a_backward_not_linear_in_grad_output_takes_every_row():
    x = _x(16, 32)
    report = compare(SinSquaredGrad, [x])
    assert report.passed == _gradcheck(SinSquaredGrad, [x]) is True
    _same_report(report, _rows_one_at_a_time(SinSquaredGrad, [x]))


def test_a_wrong_entry_where_the_jacobian_has_one_is_caught_by_compressed_products():
    x = _x(16, 32)
    x[5, 7] = 0.5
    report = compare(SinOneWrongSmall, [x])
    assert report.mismatches == 1
    assert report.worst.input_index == report.worst.output_index == (5, 7)
    _same_report(report, _rows_one_at_a_time(SinOneWrongSmall, [x]))


class SinOneWrongSmall(SinStray):
    """sin, with backward wrong at the single entry [5, 7]."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g * x.cos()
        grad[..., 5, 7] = grad[..., 5, 7] * 1.01
        return grad


def test_linear_functions_rows_come_by_compressed_products_with_the_same_report():
    args = [_x(16, 32), _x(8, 32, seed=1)]
    _same_report(compare(LinearFunction, args), _rows_one_at_a_time(LinearFunction, args))


class CountingSin(Function):
    """sin, counting its forward calls (a vmapped call counts once)."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        CountingSin.calls += 1
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class BranchingSin(CountingSin):
    """sin where the input's sum is positive: a branch on a value, which vmap cannot batch."""

    @staticmethod
    def forward(ctx, x):
        CountingSin.calls += 1
        ctx.save_for_backward(x)
        return x.sin() if bool(x.sum() > -1e9) else x.cos()


@pytest.mark.parametrize("function, batched", [(CountingSin, True), (BranchingSin, False)])
def test_the_verification_batches_its_forward_calls_where_vmap_can(function, batched,
                                                                   monkeypatch):
    from customgrad.checking.jacobian import colouring

    # 8 colours of the diagonal's 32 columns: 32 differences of forward to take
    monkeypatch.setattr(colouring, "group_columns",
                        lambda rows, cols, n: torch.arange(n) % 8)
    monkeypatch.setattr("customgrad.checking.jacobian.exact.group_columns",
                        colouring.group_columns)
    from customgrad.checking.jacobian import exact

    x = _x(4, 8)
    CountingSin.calls = 0
    report = compare(function, [x])
    assert report.method.name == REFERENCE and report.passed
    assert report.method.colours == 8 and report.method.forwards == 32
    calls, CountingSin.calls = CountingSin.calls, 0
    monkeypatch.setattr(exact.Verifier, "_batched_differences", lambda self, d: None)
    one_at_a_time = compare(function, [x])
    assert one_at_a_time.passed and one_at_a_time.method.forwards == 32
    if batched:  # two vmapped calls, and one direction's two sides by single calls
        assert calls == CountingSin.calls - 32 + 4
    else:  # a vmapped call that failed, then single calls
        assert calls == CountingSin.calls + 1
