"""One check pipeline (customgrad.checking.verification.verify) behind every front end, and its
frozen report whose verdict is computed from its parts."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

import customgrad
from customgrad import cli
from customgrad.checking import subchecks
from customgrad.checking.findings import SubCheck
from customgrad.checking.jacobian import compare, limits, matrices
from customgrad.checking.jacobian.report import Report
from customgrad.checking.second_order import double_backward_report
from customgrad.checking.verification import CheckOptions, verify
from customgrad.cli_args import _parser
from customgrad.errors import FunctionError
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.gallery import KillHead, KillHeadBuggy
from customgrad.workers import sharing
from tests.customgrad.test_subchecks import SinJvpBug
from tests.data import second_order_functions as so
from tests.data.byof_functions import Double


def _x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def test_the_report_is_a_value_no_one_changes():
    report = verify(KillHeadBuggy, [_x(2, 3), 2])
    for name, value in [("passed", True), ("label", "x"), ("diagnoses", []), ("checks", {}),
                        ("notes", []), ("seconds", 0.0)]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(report, name, value)
    assert not report.passed and report.diagnoses and report.function == "KillHeadBuggy"


def test_passed_is_computed_from_the_comparison_and_the_sub_checks():
    """The Jacobian agrees and forward AD fails: the verdict is failed, from the start."""
    options = CheckOptions(checks=frozenset({"jacobian", "forward_ad"}))
    report = verify(SinJvpBug, [_x(3)], options)
    assert report.mismatches == 0
    assert report.checks["jacobian"].status == "passed"
    assert report.checks["forward_ad"].status == "failed"
    assert not report.passed
    assert report.summary().startswith("FAILED (forward_ad)")
    # a report built from a passing comparison and a failed sub-check fails too
    bare = compare(KillHead, [_x(2, 3), 2])
    assert bare.passed and not bare.checks
    failed = dataclasses.replace(bare, checks={"x": SubCheck("x", "failed", "no")})
    assert bare.passed and not failed.passed


def test_the_sub_checks_never_pass_a_jacobian_that_disagrees(capsys):
    """``customgrad check killhead_bug --checks undefined_grad`` ran only undefined_grad
    beside the Jacobian and then took its verdict alone: "FAILED" text, exit 0."""
    code = cli.main(["check", "killhead_bug", "--checks", "undefined_grad", "--in-process",
                     "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["mismatches"] > 0 and data["checks"]["undefined_grad"]["status"] == "passed"
    assert code == 1 and data["passed"] is False


def test_the_api_the_cli_and_verify_give_one_report(capsys):
    problem = build(Settings(target="linear_bug", dtype="float64"))
    mine = verify(problem.function, problem.args,
                  problem.check_options(label=problem.target.label))
    api = customgrad.check(problem.function, *problem.args)
    code = cli.main(["check", "linear_bug", "--in-process", "--json"])
    theirs = json.loads(capsys.readouterr().out)
    assert code == 1
    for key, value in mine.to_dict().items():
        if key != "seconds":  # the time differs
            assert api.to_dict()[key] == value, key
            assert theirs[key] == value, key
    assert api.text() == mine.text()


def test_each_step_gets_its_own_copy_of_the_arguments():
    x = _x(2, 3)
    before = x.clone()
    verify(KillHeadBuggy, [x, 2], CheckOptions(checks=frozenset(subchecks.NAMES)))
    assert torch.equal(x, before) and x.grad is None


def test_an_unkept_comparison_is_diagnosed_with_its_matrices_computed_again():
    report = verify(KillHeadBuggy, [_x(2, 3), 2], CheckOptions(keep_matrices=False))
    assert report.analytic is None and report.numerical is None
    kept = verify(KillHeadBuggy, [_x(2, 3), 2])
    assert [d.to_dict() for d in report.diagnoses] == [d.to_dict() for d in kept.diagnoses]


def test_waiting_in_progress_is_not_the_comparison_s_time():
    report = verify(KillHead, [_x(2, 3), 2], waited=lambda: 1e9)
    assert report.seconds == 0.0


def test_the_double_backward_report_is_built_by_the_pipeline():
    report = double_backward_report(so.CubeDetached, [_x(2, 3)])
    assert isinstance(report, Report) and not report.passed and report.checks == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.notes = []  # type: ignore[misc]
    assert report.function == "CubeDetached.backward"


def test_the_cli_announces_the_function_through_a_parameter():
    """The name a child process passes to its parent travels as an argument, not through a
    module global of the CLI."""
    names: list[str] = []
    args = _parser().parse_args(["check", "killhead", "--in-process", "--json"])
    assert cli.cmd_check(args, announce=names.append) == 0
    assert names == ["KillHead"]
    assert not hasattr(cli, "_announce")


def test_the_comparison_s_matrices_come_from_the_allocator_it_is_given():
    """A worker process asks for matrices in shared memory (the window reads them as they
    are computed) by passing an allocator; nothing is set process-wide."""
    n = 1024  # 1024 x 1024 float64: 8 MiB, the lazily mapped kind
    assert n * n * 8 >= limits.LAZY_BYTES
    x = _x(n)

    made: list[tuple[int, int]] = []

    def shared(shape):
        made.append(shape)
        return sharing.shared_zeros(shape)

    report = compare(Double, [x], allocate=shared)
    assert made == [(n, n), (n, n)]
    assert report.analytic.is_shared() and report.passed
    assert not compare(Double, [x]).analytic.is_shared()
    assert not hasattr(matrices, "SHARED")



def test_backward_s_notes_say_their_kind_and_parameter():
    """The comparison leaves out the "returns None" note of an input it drops by the note's
    kind and parameter, not by matching its text."""
    from customgrad.function.contract import GradientNote, check_gradients

    x, w = _x(3), _x(1)
    notes = check_gradients(Double, ["x", "w"], [x, w], (None, torch.ones(3).double()))
    assert notes == [
        GradientNote("none", "x", "backward returns None for x: its gradient is zero."),
        GradientNote("shape", "w", "shape surprise: backward returns a [3] gradient for w; "
                                   "autograd sums it to w's [1].")]
    assert [str(n) for n in notes] == [n.text for n in notes]


def test_a_small_check_runs_on_one_thread_and_gives_the_callers_back(monkeypatch):
    """Its operations gain nothing from more threads, and each split one wakes them; a
    bigger check keeps the caller's count (a worker's: the cores free), and so does a
    check that raises."""
    from customgrad.checking import verification

    seen = []
    real = verification.compare

    def counting(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(verification, "compare", counting)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        verify(KillHead, [_x(16, 32), 2])  # 512 entries
        big = verification.ONE_THREAD_ENTRIES + 1
        verify(KillHead, [_x(1, big), 0])
        assert seen == [1, 2]
        assert torch.get_num_threads() == 2
        with pytest.raises(FunctionError):
            verify(KillHead, [_x(16), 2])  # KillHead needs 2-D: forward raises
        assert seen[-1] == 1 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
