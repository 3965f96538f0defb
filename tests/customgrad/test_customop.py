"""torch.library custom ops as targets: checked, diagnosed and run like a Function, with
opcheck's own tests as sub-checks."""

from __future__ import annotations

import textwrap
import uuid

import pytest
import torch

from customgrad import cli
from customgrad.checking import subchecks
from customgrad.checking.diagnosis import diagnose
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.loader import resolve

#: torch.library ops registered and checked with opcheck (torch 2.4 has custom_op)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                                                   reason="custom_op needs torch 2.4")]


def test_opcheck_passes_the_buggy_op_that_the_jacobian_fails():
    bug = build(Settings(target="sin_op_bug", dtype="float64"))
    report = bug.compare()
    assert not report.passed and report.mismatches == report.total // 24  # the diagonal
    assert [d.kind for d in diagnose(report, bug.function, bug.args)] == ["factor"]
    found = subchecks.run(bug.function, bug.args, ["opcheck"])
    assert set(found) == {"opcheck_schema", "opcheck_autograd_registration",
                          "opcheck_faketensor", "opcheck_aot_dispatch_dynamic"}
    assert all(c.status == "passed" for c in found.values())  # opcheck sees nothing wrong


def test_the_correct_op_passes_every_check_and_descends():
    ok = build(Settings(target="sin_op", dtype="float64"))
    assert ok.compare().passed
    assert subchecks.defaults_for(ok.function)[-1] == "opcheck"
    found = subchecks.run(ok.function, ok.args, subchecks.defaults_for(ok.function))
    assert all(c.status == "passed" for c in found.values()), found
    losses = [r.loss for r in build(Settings(target="sin_op")).descent().run(5)]
    assert losses[-1] < losses[0]


OPS = '''
import torch


@torch.library.custom_op("{ns}::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    """x times factor."""
    return x * factor


@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)


def setup_context(ctx, inputs, output):
    ctx.factor = inputs[1]


def backward(ctx, g):
    return g * ctx.factor{bug}, None


scale.register_autograd(backward, setup_context=setup_context)
'''


@pytest.mark.parametrize("bug, code", [("", 0), (" * 2", 1)])
def test_an_op_in_a_file_is_a_target(tmp_path, capsys, bug, code):
    ns = f"t{uuid.uuid4().hex[:8]}"  # an op is registered once per process
    path = tmp_path / "ops.py"
    path.write_text(textwrap.dedent(OPS.format(ns=ns, bug=bug)))
    target = resolve(f"{path}:{ns}::scale")
    assert target.label == f"{ns}::scale (torch.library op)" and target.file == str(path)
    assert target.note == "x times factor."
    assert cli.main(["check", f"{path}:{ns}::scale", "--const", "factor=3"]) == code
    out = capsys.readouterr().out
    assert "opcheck_schema passed" in out
    if bug:
        assert "is 2x the true gradient" in out


def test_an_op_nobody_defined_is_named(capsys):
    assert cli.main(["check", "nolib::nothing"]) == 2
    assert "No torch.library op called 'nolib::nothing'" in capsys.readouterr().err
