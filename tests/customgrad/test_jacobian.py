"""The Jacobian comparison (customgrad.checking.jacobian.compare): verdicts, matrices, layout, worst
entry,
the float32 rule, NaN awareness, zero blocks, memory cap, progress, cancellation, to_dict."""

from __future__ import annotations

import itertools
import json
import math
import os
import warnings
from pathlib import Path

import pytest
import torch

from customgrad.checking import diagnosis, jacobian
from customgrad.checking.jacobian import Axis, compare, estimate_bytes, limits, matrices
from customgrad.checking.jacobian.report import FINITE_DIFFERENCES, REFERENCE
from customgrad.errors import (
    Cancelled,
    CustomGradError,
    FunctionError,
    SpecError,
    TooLargeError,
)
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets import catalog
from customgrad.targets.loader import load_file
from tests.data import diagnosis_functions as D

U = load_file(Path(__file__).resolve().parents[1] / "data" / "user_functions.py")
ENTRIES = catalog.entries()
CORRECT = [e for e in ENTRIES if e.correct]
WRONG = [e for e in ENTRIES if not e.correct]


def problem(name: str, dtype: str = "float64", seed: int = 0, **kw):
    return build(Settings(target=name, dtype=dtype, seed=seed, **kw))


def tensor_positions(args: list) -> list[int]:
    return [i for i, a in enumerate(args)
            if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())]


def as_function_of_tensors(fn: type, args: list, clone: bool = False):
    """fn.apply as a function of the floating tensor arguments only."""
    pos = tensor_positions(args)

    def f(*tensors):
        full = list(args)
        for i, t in zip(pos, tensors):
            full[i] = t.clone() if clone else t
        return fn.apply(*full)

    return f, pos


def torch_gradcheck(p, **kw) -> bool:
    f, pos = as_function_of_tensors(p.function, p.args, clone=True)
    inputs = tuple(p.args[i].detach().clone().requires_grad_() for i in pos)
    options = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3, "raise_exception": False}
    options.update(kw)
    return torch.autograd.gradcheck(f, inputs, **options)


def torch_gradcheck_passes(fn: type, *args) -> bool:
    """gradcheck (the check's own tolerances) on ``fn`` at ``args``, all differentiated."""
    return torch.autograd.gradcheck(
        fn.apply, tuple(a.detach().clone().requires_grad_() for a in args), eps=1e-6,
        atol=1e-5, rtol=1e-3, raise_exception=False)


def reference_jacobian(fn: type, args: list, report: jacobian.Report) -> torch.Tensor:
    """torch.autograd.functional.jacobian laid out like the report: rows = the differentiable
    outputs concatenated, columns = the floating tensor inputs concatenated; a complex tensor
    as its real and imaginary parts side by side (jacobian takes real outputs)."""
    f, pos = as_function_of_tensors(fn, args, clone=True)
    picked = [a.position for a in report.outputs]

    def g(*tensors):
        out = f(*(torch.view_as_complex(t) if args[i].is_complex() else t
                  for i, t in zip(pos, tensors)))
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(torch.view_as_real(outs[k]) if outs[k].is_complex() else outs[k]
                     for k in picked)

    inputs = tuple(torch.view_as_real(args[i].detach().clone()) if args[i].is_complex()
                   else args[i].detach().clone() for i in pos)
    jac = torch.autograd.functional.jacobian(g, inputs)
    rows = []
    for o, per_input in zip(report.outputs, jac):
        rows.append(torch.cat([blk.reshape(o.size, i.size)
                               for i, blk in zip(report.inputs, per_input)], dim=1))
    return torch.cat(rows, dim=0)


def scores(report: jacobian.Report) -> torch.Tensor:
    """gradcheck's rule as a score (> 1 is a mismatch; NaN agrees with nothing), from the
    kept matrices; a complex input's (real, imag) columns compared as one complex entry, on
    both columns."""
    a, n = report.analytic, report.numerical
    s = (a - n).abs() / (report.atol + report.rtol * n.abs())
    both = a == n
    for axis in (x for x in report.inputs if x.parts == 2):
        cols = slice(axis.offset, axis.offset + axis.size)
        ca, cn = (torch.view_as_complex(m[:, cols].reshape(m.shape[0], -1, 2).contiguous())
                  for m in (a, n))
        s[:, cols] = ((ca - cn).abs() / (report.atol + report.rtol * cn.abs())
                      ).repeat_interleave(2, dim=1)
        both[:, cols] = both[:, cols].reshape(a.shape[0], -1, 2).all(-1).repeat_interleave(
            2, dim=1)
    s[both] = 0.0
    s[s.isnan()] = math.inf
    return s


# ------------------------------------------------------------------ gallery vs gradcheck


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_verdict_equals_torch_gradcheck(entry):
    p = problem(entry.name)
    for i in tensor_positions(p.args):
        x = p.args[i]
        # seed 0 keeps every sample away from the kinks (0 for |uv|, relu, sign; ties for sort)
        assert float(x.abs().min()) > 1e-3
        parts = torch.view_as_real(x) if x.is_complex() else x
        assert parts.flatten().unique().numel() == parts.numel()
    report = p.compare()
    assert report.passed == torch_gradcheck(p)
    assert report.passed == entry.correct
    assert report.numerical_dtype == (torch.complex128 if entry.complex else torch.float64)
    assert (report.mismatches == 0) == report.passed


@pytest.mark.parametrize("entry", CORRECT, ids=lambda e: e.name)
def test_analytic_equals_functional_jacobian(entry):
    p = problem(entry.name, seed=3)
    report = p.compare()
    ref = reference_jacobian(p.function, p.args, report)
    assert report.shape == tuple(ref.shape)
    assert report.analytic.shape == ref.shape == report.numerical.shape
    torch.testing.assert_close(report.analytic, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(report.numerical, ref, rtol=1e-5, atol=1e-7)
    assert report.max_abs_error < 1e-6
    assert report.passed


def test_layout_offsets_and_blocks():
    p = problem("linear")  # input 3x4, weight 5x4, bias 5 -> output 3x5
    report = p.compare()
    assert [(a.name, a.position, a.shape, a.offset) for a in report.inputs] == [
        ("input", 0, (3, 4), 0), ("weight", 1, (5, 4), 12), ("bias", 2, (5,), 32)]
    assert [(a.name, a.shape, a.offset) for a in report.outputs] == [("output", (3, 5), 0)]
    assert report.shape == (15, 37)
    assert report.total == 15 * 37
    assert [(b.output.name, b.input.name) for b in report.blocks] == [
        ("output", "input"), ("output", "weight"), ("output", "bias")]
    assert sum(b.size for b in report.blocks) == report.total
    # d out[i, j] / d bias[k] = delta_jk: check the block at the bias offset directly
    bias_block = report.analytic[:, 32:37].reshape(3, 5, 5)
    torch.testing.assert_close(bias_block, torch.eye(5, dtype=torch.float64).expand(3, 5, 5))


def test_two_outputs_are_stacked_in_order():
    p = problem("sincos")
    report = p.compare()
    assert [(a.name, a.offset) for a in report.outputs] == [("output0", 0), ("output1", 24)]
    x = p.args[0].reshape(-1)
    torch.testing.assert_close(report.analytic[:24].diagonal(), x.cos(), rtol=0, atol=1e-12)
    torch.testing.assert_close(report.analytic[24:].diagonal(), -x.sin(), rtol=0, atol=1e-12)


def test_axis_index_and_label():
    axis = Axis("w", 1, (2, 3, 4), 10)
    assert axis.size == 24
    assert axis.index(0) == (0, 0, 0)
    assert axis.index(23) == (1, 2, 3)
    assert axis.index(13) == (1, 0, 1)
    assert axis.label(5) == "w[0, 1, 1]"


# ------------------------------------------------------------------ find-the-bug twins


def check_worst_is_argmax(report):
    s = scores(report)
    w = report.worst
    assert s[w.row, w.col] == s.max()
    assert report.mismatches == int((s > 1).sum()) == int(report.mismatch_mask().sum())
    assert w.analytic == pytest.approx(float(report.analytic[w.row, w.col]), nan_ok=True)
    assert w.numerical == pytest.approx(float(report.numerical[w.row, w.col]), nan_ok=True)
    out = next(a for a in report.outputs if a.position == w.output)
    inp = next(a for a in report.inputs if a.position == w.input)
    assert out.index(w.row - out.offset) == w.output_index
    assert inp.index(w.col - inp.offset) == w.input_index
    assert (w.output_name, w.input_name) == (out.element_name(w.row - out.offset),
                                             inp.element_name(w.col - inp.offset))


@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_wrong_entries_fail_with_a_consistent_worst_entry(entry):
    report = problem(entry.name).compare()
    assert not report.passed
    assert report.mismatches > 0
    check_worst_is_argmax(report)
    assert report.worst.abs_error > report.atol


def test_killhead_bug_points_at_a_killed_column():
    report = problem("killhead_bug").compare()
    n = catalog.get("killhead_bug").constants["n"]
    w = report.worst
    assert w.input_name == "input" and w.input_index[1] < n
    assert w.analytic == 1.0 and w.numerical == pytest.approx(0.0, abs=1e-9)
    mask = report.mismatch_mask().reshape(3, 8, 3, 8)
    assert mask[:, :n][:, :, :, :n].any()
    assert not mask[:, :, :, n:].any()  # the live columns are right


def test_linear_bug_blames_weight_only():
    report = problem("linear_bug").compare()
    assert report.worst.input_name == "weight"
    verdicts = {b.input.name: b.passed for b in report.blocks}
    assert verdicts == {"input": True, "weight": False, "bias": True}


def test_abs_uv_bug_worst_is_a_diagonal_entry_of_a_failing_input():
    report = problem("abs_uv_bug").compare()
    w = report.worst
    assert w.input_name in ("input1", "input2")
    assert w.output_index == w.input_index
    assert not any(b.passed for b in report.blocks)
    u, v = (a.reshape(-1) for a in problem("abs_uv_bug").args)
    flat = w.col - report.inputs[w.input].offset
    # the numerical entry is the true derivative d|uv|/du = sign(u)|v| (or d/dv = |u|sign(v))
    right = (u.sign() * v.abs() if w.input_name == "input1" else u.abs() * v.sign())[flat]
    assert w.numerical == pytest.approx(float(right), abs=1e-8)
    assert w.analytic == pytest.approx(float((u.abs() * v.sign() if w.input_name == "input1"
                                              else u.sign() * v.abs())[flat]), abs=1e-12)


def test_abs_uv_bug_is_invisible_where_u_equals_v():
    """|u| sign(v) = sign(u) |v| when u = v: the swapped gradients agree there."""
    p = problem("abs_uv_bug")
    u = p.args[0]
    assert compare(p.function, [u, u.clone()]).passed
    assert not compare(p.function, [u, -u]).passed


def test_softmax_bug_worst_is_off_diagonal_in_the_same_row():
    report = problem("softmax_bug").compare()
    w = report.worst
    assert w.row != w.col
    assert w.output_index[0] == w.input_index[0]
    assert w.output_index[1] != w.input_index[1]
    mask = report.mismatch_mask()
    assert not mask.diagonal().any()


def test_mulconstant_bug_misses_the_constant_on_the_diagonal():
    report = problem("mulconstant_bug").compare()
    mask = report.mismatch_mask()
    assert mask.diagonal().all()
    assert int(mask.sum()) == 24
    assert report.worst.analytic == 1.0
    assert report.worst.numerical == pytest.approx(2.5, abs=1e-8)


def test_tolerance_rule_boundary():
    """|a - n| <= atol + rtol * |n|, with a = 1 and n = 2.5 for mulconstant_bug."""
    p = problem("mulconstant_bug")
    assert compare(p.function, p.args, atol=1.5 + 1e-6, rtol=0).passed
    assert not compare(p.function, p.args, atol=1.5 - 1e-6, rtol=0).passed
    assert compare(p.function, p.args, atol=0, rtol=0.61).passed
    assert not compare(p.function, p.args, atol=0, rtol=0.59).passed
    # with zero tolerance only exact agreement passes: the off-diagonal zeros do
    r = compare(p.function, p.args, atol=0, rtol=0)
    assert r.mismatches == 24


# ------------------------------------------------------------------ float32


def test_sigmoid_float32_passes_with_default_tolerances():
    p = problem("sigmoid", dtype="float32")
    assert p.args[0].dtype == torch.float32
    report = p.compare()
    assert report.passed
    assert report.numerical_dtype == torch.float64
    assert (report.eps, report.atol, report.rtol) == (jacobian.EPS, jacobian.ATOL, jacobian.RTOL)
    assert any("float32 rule" in n for n in report.notes)
    # the same float32 point with the bug still fails
    assert not problem("sigmoid_bug", dtype="float32").compare().passed


def test_torch_gradcheck_fails_sigmoid_in_float32():
    """Why the float32 rule exists: eps = 1e-6 is below float32's resolution."""
    p = problem("sigmoid", dtype="float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gradcheck warns about non-double inputs
        assert not torch_gradcheck(p)
    assert torch_gradcheck(problem("sigmoid", dtype="float64"))


def test_function_refusing_float64_falls_back_to_float32_numerics():
    x = torch.linspace(-2, 2, 12).reshape(3, 4)
    report = compare(U.Float32Only, [x])
    assert report.passed
    assert report.numerical_dtype == torch.float32
    assert report.eps >= jacobian.FLOAT32_FLOOR["eps"]
    assert report.atol >= jacobian.FLOAT32_FLOOR["atol"]
    assert report.rtol >= jacobian.FLOAT32_FLOOR["rtol"]
    assert any("does not accept float64" in n for n in report.notes)
    torch.testing.assert_close(report.analytic.diagonal(), x.cos().double().reshape(-1))
    assert not compare(U.Float32OnlyWrong, [x]).passed


# ------------------------------------------------------------------ NaN, None, zero blocks


def test_nan_in_both_jacobians_at_the_same_entries_fails_as_in_gradcheck():
    """sqrt at 0: backward says NaN (no slope), finite differences too (sqrt(-eps)). NaN
    agrees with nothing in gradcheck's rule (allclose), which fails the point: so do we,
    counting exactly those entries, and the diagnosis says it is the point's fault."""
    x = torch.tensor([[1.0, 0.0, 2.0], [0.5, 0.0, 3.0]], dtype=torch.float64)
    report = compare(U.SqrtNaN, [x])
    assert report.analytic.isnan().sum() == 2
    assert torch.equal(report.analytic.isnan(), report.numerical.isnan())
    assert not report.passed
    assert report.blocks[0].mismatches == 2
    assert torch.equal(report.mismatch_mask(), report.analytic.isnan())
    assert not torch_gradcheck_passes(U.SqrtNaN, x)
    found = diagnosis.diagnose(report, U.SqrtNaN, [x])
    assert [d.kind for d in found] == ["undefined"]
    assert "output[0, 1] is NaN a step of eps from x[0, 1] (and 1 more entry)" in found[0].detail
    json.dumps(report.to_dict(), allow_nan=False)


def test_a_reference_with_nan_falls_back_to_finite_differences():
    """acos at 1: autograd's own derivative of forward is -inf there and NaN wherever
    grad_output is 0 (-0 / 0), so no product tells which rows reach which columns; the
    reference is refused (it once indexed past the matrix) and the verdict is gradcheck's."""
    x = torch.tensor([0.2, -0.5, 0.7, 1.0, 0.1], dtype=torch.float64)
    report = compare(D.Acos, [x])
    assert report.method.name == FINITE_DIFFERENCES
    assert "NaN or infinite" in report.method.reason
    assert not report.passed and report.blocks[0].mismatches == 1
    assert (report.worst.row, report.worst.col) == (3, 3)
    assert not torch_gradcheck_passes(D.Acos, x)
    assert [d.kind for d in diagnosis.diagnose(report, D.Acos, [x])] == ["undefined"]
    x[3] = 0.9  # off the edge: the reference holds, and the check passes with gradcheck
    report = compare(D.Acos, [x])
    assert report.passed and report.method.name == REFERENCE
    assert torch_gradcheck_passes(D.Acos, x)


def test_nan_only_in_the_analytic_jacobian_fails():
    x = torch.tensor([[1.0, -1.0], [0.5, 2.0]], dtype=torch.float64)
    report = compare(U.NaNAnalyticOnly, [x])
    assert not report.passed
    assert math.isnan(report.worst.analytic)
    assert not math.isnan(report.worst.numerical)
    assert report.max_abs_error == math.inf
    d = report.to_dict()
    assert d["max_abs_error"] is None and d["worst"]["analytic"] is None
    json.dumps(d, allow_nan=False)


def test_nan_output_at_the_base_point_is_noted():
    x = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    report = compare(U.SqrtNaN, [x])
    assert any("NaN or Inf" in n for n in report.notes)


def test_non_differentiable_output_is_skipped_with_a_note():
    report = problem("sort").compare()
    assert [a.name for a in report.outputs] == ["output0"]
    assert any("output1" in n and "not differentiable" in n for n in report.notes)
    assert report.shape == (18, 18)
    assert report.passed


def test_backward_none_makes_an_input_nobody_chose_a_constant():
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    report = compare(U.IgnoresY, [x, y])
    assert report.passed and [a.name for a in report.inputs] == ["x"]
    assert "y: backward returns None; treated as not differentiated." in report.notes
    assert not any("None for y" in n for n in report.notes)


def test_backward_none_gives_a_zero_block_for_a_chosen_input():
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    report = compare(U.IgnoresY, [x, y], differentiate={"x": True, "y": True})
    assert report.passed
    assert any("None for y" in n for n in report.notes)
    assert torch.equal(report.analytic[:, 6:], torch.zeros(6, 4, dtype=torch.float64))
    torch.testing.assert_close(report.analytic[:, :6], 3 * torch.eye(6, dtype=torch.float64))


def test_input_not_used_gives_a_zero_block():
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    report = compare(U.ZeroGradY, [x, y])
    assert report.passed
    assert [b.passed for b in report.blocks] == [True, True]
    assert torch.equal(report.numerical[:, 6:], torch.zeros(6, 6, dtype=torch.float64))
    assert torch.equal(report.analytic[:, 6:], torch.zeros(6, 6, dtype=torch.float64))


def test_none_for_a_used_input_fails_in_that_block_where_it_is_chosen():
    """As gradcheck's verdict with y requiring grad; with nothing chosen, y is a constant."""
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    report = compare(U.MissingYGradient, [x, y], differentiate={"x": True, "y": True})
    assert [b.passed for b in report.blocks] == [True, False]
    assert report.worst.input_name == "y"
    assert compare(U.MissingYGradient, [x, y]).passed


def test_integer_tensor_input_is_not_differentiated():
    x = torch.randn(2, 3, dtype=torch.float64)
    report = compare(U.IgnoresY, [x, torch.arange(4)])
    assert [a.name for a in report.inputs] == ["x"]
    assert any("y (int64) is not floating point" in n for n in report.notes)
    assert report.passed


def test_new_style_function_with_constant_and_optional_tensor():
    x, b = torch.randn(2, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    with_bias = compare(U.ScaleNewStyle, [x, 3.0, b])
    assert [a.name for a in with_bias.inputs] == ["x", "bias"]
    torch.testing.assert_close(with_bias.analytic[:, :6], 3 * torch.eye(6, dtype=torch.float64))
    assert with_bias.passed
    without = compare(U.ScaleNewStyle, [x, 3.0, None])
    assert [a.name for a in without.inputs] == ["x"] and without.passed


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_in_place_forward_does_not_corrupt_the_base_point(dtype):
    """relu_inplace clamps its input: the numerical Jacobian must use copies. Negative inputs
    have derivative 0, not the 0.5 a clamped base point (at 0) would give."""
    x = torch.tensor([[-1.0, 2.0, -0.5], [0.3, -2.0, 1.5]], dtype=dtype)
    original = x.clone()
    report = compare(catalog.get("relu_inplace").function, [x])
    assert torch.equal(x, original)  # the caller's tensor is untouched
    expected = torch.diag((original > 0).double().reshape(-1))
    torch.testing.assert_close(report.numerical, expected, rtol=0, atol=1e-6)
    assert report.passed


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_float32_verdicts_match_the_gallery(entry):
    report = problem(entry.name, dtype="float32").compare()
    assert report.passed == entry.correct, report.summary()


def test_functional_linear_batch_gradients_are_a_note_not_an_error():
    report = problem("functional_linear").compare()
    assert report.passed
    surprises = [n for n in report.notes if n.startswith("shape surprise")]
    assert len(surprises) == 2
    assert "weight" in surprises[0] and "3x5x4" in surprises[0]
    assert "bias" in surprises[1]


# ------------------------------------------------------------------ argument validation


@pytest.mark.parametrize("option", [{"eps": 0}, {"eps": -1e-6}, {"atol": -1}, {"rtol": math.nan},
                                    {"eps": math.inf}, {"atol": "1e-5"}])
def test_bad_tolerances_raise_spec_error(option):
    p = problem("killhead")
    with pytest.raises(SpecError) as info:
        compare(p.function, p.args, **option)
    assert info.value.field == next(iter(option))


def test_wrong_argument_count_raises_spec_error():
    with pytest.raises(SpecError, match="takes 2 arguments"):
        compare(catalog.get("killhead").function, [torch.randn(3, 8)])


def test_no_tensor_input_raises_spec_error():
    with pytest.raises(SpecError, match="no floating-point tensor input"):
        compare(U.NoTensorInput, [3])


# ------------------------------------------------------------------ memory cap


def test_memory_cap_raises_too_large_with_advice():
    p = problem("linear")
    need = estimate_bytes(15, 37)
    assert need == 15 * 37 * 8 * 2
    with pytest.raises(TooLargeError) as info:
        compare(p.function, p.args, memory_cap=need - 1)
    message = str(info.value)
    assert "smaller shapes" in message and "differentiate fewer inputs" in message
    assert "--" not in message  # each front end adds its own options (test_parity)
    assert "15 x 37" in message
    assert isinstance(info.value, SpecError) and isinstance(info.value, CustomGradError)
    assert compare(p.function, p.args, memory_cap=need).passed


def test_keep_false_halves_the_memory_and_still_reports():
    p = problem("mulconstant_bug")
    need = estimate_bytes(24, 24, keep_matrices=False)
    assert need * 2 == estimate_bytes(24, 24)
    report = compare(p.function, p.args, memory_cap=need, keep_matrices=False)
    assert report.analytic is None and report.numerical is None
    assert not report.passed and report.mismatches == 24
    assert report.worst.analytic == 1.0
    with pytest.raises(ValueError):
        report.difference()
    with pytest.raises(ValueError):
        report.mismatch_mask()


# ------------------------------------------------------------------ progress and cancel


def test_progress_fractions_increase_to_one_with_partial_matrices(monkeypatch):
    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", 1)  # one column / row per batch
    monkeypatch.setattr(limits, "PROGRESS_SECONDS", 0.0)
    seen = []

    def progress(p):
        seen.append((p.fraction, p.phase, p.analytic.clone(), p.numerical.clone(),
                     p.columns_done, p.rows_done))

    x = torch.randn(3, 4, dtype=torch.float64)
    report = compare(U.Square, [x], progress=progress)
    # first the outputs and inputs alone (a display lays the matrix out before any entry)
    (fraction, phase, analytic, numerical, cols, rows), *seen = seen
    assert (fraction, phase, cols, rows) == (0.0, "numerical", 0, 0)
    assert analytic.shape == numerical.shape == (12, 12)
    assert not analytic.any() and not numerical.any()
    fractions = [f for f, *_ in seen]
    assert len(seen) >= 20
    assert all(b >= a for a, b in itertools.pairwise(fractions))
    assert 0 < fractions[0] < 0.5 and fractions[-1] == 1.0 and seen[-1][1] == "done"
    # the numerical matrix fills column by column, then the analytic one row by row; what
    # is done is final, the rest not written yet
    partial_num = [(n, c) for f, ph, a, n, c, r in seen if ph == "numerical" and f < 0.5]
    assert partial_num and all(0 < c < 12 for n, c in partial_num)
    for n, c in partial_num:
        torch.testing.assert_close(n[:, :c], report.numerical[:, :c])
        assert not n[:, c:].any()
    partial_ana = [(a, r) for f, ph, a, n, c, r in seen if ph == "analytic" and f < 1.0]
    assert partial_ana and all(0 < r < 12 for a, r in partial_ana)
    for a, r in partial_ana:
        torch.testing.assert_close(a[:r], report.analytic[:r])
        assert not a[r:].any()
    assert seen[-1][4:] == (12, 12)
    torch.testing.assert_close(seen[-1][2], report.analytic)
    torch.testing.assert_close(seen[-1][3], report.numerical)


def test_progress_without_monkeypatching_ends_at_one():
    seen = []
    compare(U.Square, [torch.randn(2, 2, dtype=torch.float64)],
            progress=lambda p: seen.append(p.fraction))
    assert seen[-1] == 1.0 and 0.5 in seen


def test_should_stop_cancels():
    with pytest.raises(Cancelled):
        compare(U.Square, [torch.randn(3, 4, dtype=torch.float64)], should_stop=lambda: True)


def test_cancel_is_prompt_inside_a_long_element_loop():
    """A Function vmap cannot batch is differenced one element at a time: a stop request must
    be honoured between elements, not after the whole input."""
    U.Slow.calls = 0
    x = torch.randn(20, 20, dtype=torch.float64)  # 800 forward calls if nothing stopped it
    with pytest.raises(Cancelled):
        compare(U.Slow, [x], should_stop=lambda: U.Slow.calls >= 30)
    assert U.Slow.calls <= 40  # counted in calls, not seconds: the same on any machine


def test_cancel_during_the_analytic_rows():
    U.Slow.calls = 0
    x = torch.randn(20, 20, dtype=torch.float64)
    limit = {}

    def progress(p):
        if p.phase == "numerical" and p.fraction == 0.5:  # the numerical pass is done
            limit["at"] = U.Slow.calls

    def stop():
        # let the numerical pass finish, then stop a few rows into the analytic one
        return "at" in limit and U.Slow.calls >= limit["at"] + 20

    with pytest.raises(Cancelled):
        compare(U.Slow, [x], should_stop=stop, progress=progress)
    assert U.Slow.calls <= limit["at"] + 60


def test_slow_function_gives_the_right_answer_without_vmap():
    x = torch.randn(3, 2, dtype=torch.float64)
    report = compare(U.Slow, [x])
    assert report.passed
    torch.testing.assert_close(report.analytic, 2 * torch.eye(6, dtype=torch.float64))


# ------------------------------------------------------------------ report serialisation


def test_to_dict_schema_and_json():
    report = problem("linear_bug").compare()
    d = report.to_dict()
    for key in ("passed", "max_abs_error", "max_rel_error", "mismatches", "worst", "blocks"):
        assert key in d
    assert d["passed"] is False and d["mismatches"] == report.mismatches > 0
    for key in ("output", "input", "output_index", "input_index", "analytic", "numerical"):
        assert key in d["worst"]
    assert d["worst"]["input"] == 1 and d["worst"]["input_name"] == "weight"
    assert d["worst"]["output_index"] == list(report.worst.output_index)
    assert [b["input_name"] for b in d["blocks"]] == ["input", "weight", "bias"]
    assert [b["passed"] for b in d["blocks"]] == [True, False, True]
    assert d["blocks"][1]["input_shape"] == [4, 4]
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert "FAILED" in report.summary() and f"{report.mismatches:,}" in report.summary()
    assert "PASSED" in problem("linear").compare().summary()


def test_report_difference_and_mask():
    report = problem("mulconstant_bug").compare()
    diff = report.difference()
    torch.testing.assert_close(diff.diagonal(), torch.full((24,), -1.5, dtype=torch.float64))
    assert int(report.mismatch_mask().sum()) == report.mismatches


def test_function_without_differentiable_output_is_an_error():
    with pytest.raises(FunctionError, match="no differentiable output to check"):
        compare(U.ArgsortOnly, [torch.randn(2, 3, dtype=torch.float64)])


def test_empty_output_is_skipped_not_a_crash():
    x = torch.tensor([[-1.0, 0.1]], dtype=torch.float64)  # nothing above 0.25: empty output
    with pytest.raises(FunctionError, match="no differentiable output"):
        compare(U.ShapeDependsOnValues, [x])


def test_empty_input_is_not_differentiated():
    x = torch.randn(2, 2, dtype=torch.float64)
    report = compare(U.IgnoresY, [x, torch.empty(0, dtype=torch.float64)])
    assert [a.name for a in report.inputs] == ["x"]
    assert any("input y is empty" in n for n in report.notes)
    assert report.passed


# ------------------------------------------------------------------ tiles and sparsity


def assert_same_matrices(report: jacobian.Report, reference: jacobian.Report) -> None:
    """Equal up to the rounding of a differently batched computation in float64.

    The analytic entries are backward's products: a few ulps apart at most, so rtol 1e-12.
    A numerical entry is a central difference (f(x + eps) - f(x - eps)) / (2 eps): a rounding
    of a few ulps in f (2.2e-16 relative, outputs below 100 here, so under 1e-13 absolute)
    becomes up to 1e-13 / (2 eps) = 5e-8 at eps 1e-6, 200 times below the check's atol.
    """
    assert report.analytic.dtype == reference.analytic.dtype == torch.float64
    torch.testing.assert_close(report.analytic, reference.analytic, rtol=1e-12, atol=1e-12,
                               equal_nan=True)
    torch.testing.assert_close(report.numerical, reference.numerical, rtol=0,
                               atol=1e-13 / (2 * reference.eps), equal_nan=True)


def _brute_force(report: jacobian.Report) -> tuple[int, float, float]:
    """Mismatches, max abs and max rel error straight from the kept matrices."""
    a, n = report.analytic, report.numerical
    both = (a.isnan() & n.isnan()) | (a == n)
    diff = (a - n).abs()
    diff[both] = 0.0
    rel = diff / n.abs().clamp_min(report.atol)
    return int((scores(report) > 1).sum()), float(diff.max()), float(rel.max())


@pytest.mark.parametrize("chunk", [1, 5, 24, 97, 1 << 19])
@pytest.mark.parametrize("name", ["killhead_bug", "linear_bug", "abs_uv_bug", "softmax_bug",
                                  "linear", "sort"])
def test_any_tile_grid_gives_the_same_report(monkeypatch, name, chunk):
    """Tiles zero in both matrices are skipped: the grid must never change the answer.

    The grid changes how the calls are batched, and a batched matrix multiply may round
    differently from single ones (by the CPU's BLAS kernels), so the matrices agree to rounding,
    not bit for bit; what the user reads (verdict, mismatch mask, worst entry) is identical.
    """
    reference = problem(name).compare()
    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", chunk)
    monkeypatch.setattr(limits, "TILE_ELEMENTS", max(1, chunk // 3))
    report = problem(name).compare()
    assert_same_matrices(report, reference)
    assert report.passed == reference.passed
    assert torch.equal(report.mismatch_mask(), reference.mismatch_mask())
    assert (report.worst.row, report.worst.col) == (reference.worst.row, reference.worst.col)
    assert (report.mismatches, report.max_abs_error, report.max_rel_error) == \
        _brute_force(report)
    assert [b.mismatches for b in report.blocks] == [b.mismatches for b in reference.blocks]
    check_worst_is_argmax(report)


@pytest.mark.parametrize("chunk", [8, 1 << 19])
@pytest.mark.parametrize("name, analytic, numerical", [
    ("StrayGradient", 1.0, 0.0),  # the tile is zero in the numerical Jacobian only
    ("MissingCross", 0.0, 1.0),  # ... in the analytic Jacobian only
])
def test_error_in_a_tile_zero_in_one_jacobian_is_found(monkeypatch, chunk, name, analytic,
                                                       numerical):
    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", chunk)
    report = compare(getattr(U, name), [torch.randn(6, 8, dtype=torch.float64)])
    assert not report.passed and report.mismatches == 1
    w = report.worst
    assert (w.row, w.col) == (0, 47)
    assert w.analytic == analytic and w.numerical == pytest.approx(numerical)


def test_all_zero_block_reports_its_first_entry_as_worst():
    report = compare(U.IgnoresY, [torch.randn(3, 4, dtype=torch.float64),
                                  torch.randn(3, 4, dtype=torch.float64)],
                     differentiate={"x": True, "y": True})
    zero = next(b for b in report.blocks if b.input.name == "y")
    assert zero.passed and zero.max_abs_error == 0.0
    assert zero.worst == (zero.output.offset, zero.input.offset)


@pytest.mark.parametrize("chunk", [16, 1 << 19])
def test_backward_returning_its_grad_output_is_read_before_reuse(monkeypatch, chunk):
    """The batched path hands backward one-hot rows it reuses: an aliased result must be
    copied out before they are cleared."""
    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", chunk)
    report = compare(U.IdentityAlias, [torch.randn(5, 8, dtype=torch.float64)])
    assert report.passed
    torch.testing.assert_close(report.analytic, torch.eye(40, dtype=torch.float64))


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_big_sparse_jacobian_touches_little_memory():
    """A 4096 x 4096 diagonal Jacobian writes a page or so per row, not 128 MiB per matrix.

    Two matrices are held (analytic and numerical; the difference is made only for a
    display): written densely they make 256 MiB resident, a page per row 16 MiB each. The
    bound is one dense matrix, clear of both (the allocator and the kernel differ between
    machines by a few MiB). Small pages are asked for (lazy_zeros), so transparent huge pages
    set to "always" change nothing."""
    x = torch.randn(64, 64, dtype=torch.float64)
    compare(U.Square, [x[:8, :8]])  # warm up
    before = _resident_bytes()
    report = compare(U.Square, [x])
    grown = _resident_bytes() - before
    assert report.passed and report.analytic.shape == (4096, 4096)
    dense = report.analytic.numel() * report.analytic.element_size()
    assert grown < dense, f"resident memory grew {grown >> 20} MiB"
    torch.testing.assert_close(report.analytic, torch.diag(2 * x.reshape(-1)))
    torch.testing.assert_close(report.numerical, report.analytic)


# ------------------------------------------------------------------ display helpers


@pytest.mark.parametrize("shape, step", [((7, 10), 3), ((9, 9), 3), ((5, 4), 1), ((1, 11), 4)])
def test_pool_signed_keeps_the_largest_magnitude_of_each_cell(shape, step):
    m = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    m[0, 0] = math.nan
    pooled = jacobian.pool_signed(m, step)
    assert pooled.shape == (-(-shape[0] // step), -(-shape[1] // step))
    for r in range(pooled.shape[0]):
        for c in range(pooled.shape[1]):
            cell = m[r * step:(r + 1) * step, c * step:(c + 1) * step].reshape(-1)
            if cell.isnan().any():
                assert math.isnan(pooled[r, c])
            else:
                assert pooled[r, c] == cell[cell.abs().argmax()]


@pytest.mark.parametrize("shape, step", [((7, 10), 3), ((9, 9), 3), ((5, 4), 1), ((1, 11), 4)])
def test_pool_any_marks_each_cell_holding_a_true_entry(shape, step):
    mask = torch.rand(shape, generator=torch.Generator().manual_seed(2)) > 0.8
    pooled = jacobian.pool_any(mask, step)
    assert pooled.dtype == torch.bool
    assert pooled.shape == (-(-shape[0] // step), -(-shape[1] // step))
    for r in range(pooled.shape[0]):
        for c in range(pooled.shape[1]):
            cell = mask[r * step:(r + 1) * step, c * step:(c + 1) * step]
            assert bool(pooled[r, c]) == bool(cell.any())


@pytest.mark.parametrize("value", [False, True])
def test_pool_any_of_a_mask_of_one_value(value):
    mask = torch.tensor(value).expand(10, 7)  # as a passing report's: a view of one value
    pooled = jacobian.pool_any(mask, 3)
    assert torch.equal(pooled, jacobian.pool_any(mask.clone(), 3))
    assert pooled.shape == (4, 3) and bool(pooled.all()) == value == bool(pooled.any())


def test_a_passing_report_has_an_empty_mask_without_looking_again(monkeypatch):
    """The comparison counted no mismatch: the mask (and its overview) are all False, and
    the matrices are not scanned a second time for them."""
    report = problem("killhead").compare()
    assert report.passed and report.mismatches == 0
    monkeypatch.setattr(jacobian.matrices, "agree", None)  # would raise if called
    assert report.mismatch_mask().shape == report.shape
    assert not report.mismatch_mask().any()
    overview = report.overview(5)
    assert overview.mismatches.shape == overview.analytic.shape
    assert not overview.mismatches.any()


def test_agree_never_matches_a_number_with_an_infinity_nor_nan_with_anything():
    """As the comparison's tally counts it, so that a report's mask marks what it counted;
    as gradcheck's allclose, NaN agrees with nothing, not even NaN."""
    inf, nan = math.inf, math.nan
    a = torch.tensor([1.0, inf, nan, 1.0, inf, 2.0, -inf], dtype=torch.float64)
    n = torch.tensor([inf, inf, nan, nan, -inf, 2.0, 3.0], dtype=torch.float64)
    assert jacobian.agree(a, n, 1e-5, 1e-3).tolist() == [False, True, False, False, False,
                                                          True, False]
    assert torch.allclose(a[1], n[1]) and not torch.allclose(a[2], n[2])


def test_finite_absmax_ignores_nan_and_infinity_and_reads_views(monkeypatch):
    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", 5)  # several passes
    m = torch.tensor([[1.0, -7.0, math.nan], [math.inf, 2.0, -math.inf]], dtype=torch.float64)
    assert jacobian.finite_absmax(m) == 7.0
    assert jacobian.finite_absmax(m.T) == 7.0
    assert jacobian.finite_absmax(m[:, ::2]) == 1.0  # [[1, nan], [inf, -inf]]
    assert jacobian.finite_absmax(torch.full((3, 3), math.nan)) == 0.0
    assert jacobian.finite_absmax(torch.empty(0, 4)) == 0.0


def test_report_overview_and_peaks_are_cached():
    report = problem("killhead_bug").compare()
    report.prepare_drawing(2)
    overview = report.overview(2)
    assert overview is report.overview(2)
    assert overview.analytic.shape == (12, 12)
    assert overview.mismatches.sum() > 0
    assert report.value_peak() == float(torch.maximum(report.analytic.abs(),
                                                      report.numerical.abs()).max())
    assert report.difference_peak() == float(report.difference().abs().max())


def test_big_matrices_can_be_made_in_shared_memory():
    """A worker process makes its matrices in shared memory, so the window reads them as they
    are computed and gets them back without a copy: zeros still, and lazily mapped."""
    from customgrad.checking.jacobian import limits, matrices
    from customgrad.workers import sharing

    shape = (512, 1024)
    assert 512 * 1024 * 8 >= limits.LAZY_BYTES  # big enough for the lazily mapped kind
    assert not matrices.lazy_zeros(shape).is_shared()
    shared = matrices.lazy_zeros(shape, sharing.shared_storage)
    assert shared.is_shared() and shared.shape == shape and shared.dtype == torch.float64
    assert shared.is_contiguous() and not shared.any()


def test_a_comparison_takes_its_big_matrices_from_the_storage_it_is_given(monkeypatch):
    """The caller says where big matrices live (a worker: shared memory), by an argument: no
    module setting that one job leaves behind for the next."""
    from customgrad.checking.jacobian import limits

    monkeypatch.setattr(limits, "LAZY_BYTES", 64)  # a 12 x 12 matrix is big now
    asked = []

    def storage(nbytes: int) -> torch.UntypedStorage:
        asked.append(nbytes)
        return torch.zeros(nbytes, dtype=torch.uint8).untyped_storage()  # zeroed, as promised

    x = torch.rand(12, dtype=torch.float64)
    shared = compare(U.Square, [x], allocate=lambda shape: matrices.lazy_zeros(shape, storage))
    assert asked == [12 * 12 * 8, 12 * 12 * 8]  # numerical and analytic
    assert shared.passed
    assert compare(U.Square, [x]).passed and len(asked) == 2  # none given: none asked
