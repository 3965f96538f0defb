"""Second order drawn like the first (issue 29, item 8): the Jacobian of backward's outputs
with respect to its inputs and grad_output, analytic (autograd through the user's backward)
against finite differences of backward, with gradgradcheck's verdict."""

from __future__ import annotations

import json

import pytest
import torch

from customgrad import cli
from customgrad.checking.second_order import double_backward_report
from tests.data import second_order_functions as so


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


#: (Function, arguments, the (output, input) names of the blocks that must fail)
CASES = [
    (so.Cube, lambda: [_x(2, 3)], []),
    (so.CubeDetached, lambda: [_x(2, 3)], [("grad_x", "x")]),
    (so.CubeGradDetached, lambda: [_x(2, 3)], [("grad_x", "grad_output")]),
    (so.CubeHalfSecond, lambda: [_x(2, 3)], [("grad_x", "x")]),
    (so.Multiply, lambda: [_x(3), _x(3, seed=1)], []),
    (so.MultiplyDetachedCross, lambda: [_x(3), _x(3, seed=1)], [("grad_x", "w")]),
]


@pytest.mark.parametrize("function,make,failing", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_verdict_is_gradgradchecks_and_the_failing_blocks_are_named(function, make,
                                                                        failing):
    args = make()
    expected = torch.autograd.gradgradcheck(
        function.apply, tuple(a.clone().requires_grad_() for a in args), raise_exception=False)
    report = double_backward_report(function, args)
    assert report.passed == expected == (not failing)
    assert [(b.output.name, b.input.name) for b in report.blocks if not b.passed] == failing
    if failing:
        w = report.worst
        assert (w.output_name, w.input_name) in failing
        assert w.abs_error > report.atol


def test_blocks_cover_every_gradient_against_every_input_and_grad_output():
    report = double_backward_report(so.Multiply, [_x(3), _x(3, seed=1)])
    assert [(b.output.name, b.input.name) for b in report.blocks] == [
        (o, i) for o in ("grad_x", "grad_w") for i in ("x", "w", "grad_output")]
    # d grad_x / d w = diag(g) with g the drawn grad_output: analytic and numerical agree
    g = report.numerical[0:3, 6:9].diagonal()  # d grad_x / d grad_output = diag(w)
    torch.testing.assert_close(g, _x(3, seed=1), rtol=1e-6, atol=1e-8)


def test_notes_name_the_double_backward():
    report = double_backward_report(so.CubeDetached, [_x(2, 3)])
    assert report.notes == ["double backward returns None for x: its gradient is zero."]


def test_cli_double_json_gives_the_first_order_keys(capsys):
    code = cli.main(["check", f"{so.__file__}:CubeHalfSecond", "--double", "--in-process",
                     "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    double = data["double_backward"]
    assert double["supported"] and not double["passed"]
    report_keys = {"passed", "max_abs_error", "max_rel_error", "mismatches", "entries",
                   "worst", "blocks", "eps", "atol", "rtol", "numerical_dtype", "notes",
                   "diagnoses"}
    assert report_keys <= set(data) and report_keys <= set(double)
    assert [(b["output_name"], b["input_name"], b["passed"]) for b in double["blocks"]] == [
        ("grad_x", "x", False), ("grad_x", "grad_output", True)]
    assert double["worst"]["input_name"] == "x"


def test_cli_double_json_of_a_once_differentiable_backward_says_so(capsys):
    code = cli.main(["check", f"{so.__file__}:CubeOnce", "--double", "--in-process", "--json"])
    double = json.loads(capsys.readouterr().out)["double_backward"]
    assert code == 0  # first order right; double backward not supported is no failure
    assert double["supported"] is False and "once_differentiable" in double["message"]
    assert "blocks" not in double


BESIDE = [(so.Cube, True), (so.CubeDetached, False), (so.CubeHalfSecond, False),
          (so.MultiplyDetachedCross, False), (so.CubeOnce, None), (so.CubeNumpy, False)]


@pytest.mark.parametrize("function,verdict", BESIDE, ids=[c[0].__name__ for c in BESIDE])
def test_the_apps_second_report_has_gradgradchecks_verdict(function, verdict):
    """The report the app's worker sends beside the first order's (second_order.beside):
    gradgradcheck's verdict, or none where gradgradcheck finds no double backward (None)."""
    from customgrad.checking.beyond_jacobian import double_backward_check
    from customgrad.checking.jacobian import compare
    from customgrad.checking.second_order import beside

    args = [_x(2, 3)] if function.forward.__code__.co_argcount == 2 else [_x(3), _x(3, seed=1)]
    first = compare(function, args)
    second, why = beside(first, function, args)
    db = double_backward_check(function, args)
    assert db.supported == (verdict is not None)
    if verdict is None:
        assert second is None and "double backward" in why
        return
    assert why == "" and second.passed == db.passed == verdict
    assert second.function == f"{function.__name__}.backward"


def test_a_big_second_order_waits_to_be_asked(monkeypatch):
    from customgrad.checking import second_order
    from customgrad.checking.jacobian import compare

    args = [_x(2, 3)]
    first = compare(so.Cube, args)
    monkeypatch.setattr(second_order, "DRAWN_ENTRIES", 6 * 12 - 1)  # rows 6, columns 6 + 6
    second, why = second_order.beside(first, so.Cube, args)
    assert second is None and "72 entries" in why
    second, why = second_order.beside(first, so.Cube, args, asked=True)
    assert second is not None and second.passed and why == ""
