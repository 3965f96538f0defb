"""The app's nondet_tol (gradcheck's; ``customgrad check --nondet-tol``): an editor beside eps,
atol and rtol, a setting the session's checks pass on, kept in session files as they are."""

from __future__ import annotations

import json
import textwrap

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from customgrad.problems.settings import Settings
from playground.state.session import Session
from playground.views.jacobian.tolerances import ToleranceBar

TIMEOUT = 20_000

#: backward's result moves by 1e-12 * |grad| from one call to the next (as atomic adds' order
#: would): every Jacobian entry agrees, the reentrant sub-check sees the gap (float64: in
#: float32 the 1e-12 would round away)
JITTER = textwrap.dedent("""
    import torch

    class Jitter(torch.autograd.Function):
        calls = 0

        @staticmethod
        def forward(ctx, x: "3x4"):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            Jitter.calls += 1
            return 2 * grad + 1e-12 * (Jitter.calls % 2) * grad
    """)


def _reentrant(report) -> str | None:
    """The reentrant sub-check's status; None where it found nothing to say (it is listed
    where backward gave other gradients the second time)."""
    check = report.checks.get("reentrant")
    return None if check is None else check.status


def test_a_1e_12_reentrant_gap_fails_at_the_default_and_passes_at_nondet_tol_1e_10(
        qtbot, tmp_path):
    path = tmp_path / "jitter.py"
    path.write_text(JITTER)
    session = Session(Settings(dtype="float64"))
    try:
        with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT) as ready:
            session.set_target(f"{path}:Jitter")
        assert session.settings.nondet_tol == 0.0
        assert (ready.args[0].passed, _reentrant(ready.args[0])) == (False, "failed")
        with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT) as ready:
            session.update(nondet_tol=1e-10)  # a check again, no new inputs
        assert (ready.args[0].passed, _reentrant(ready.args[0])) == (True, None)
    finally:
        session.shutdown(wait=0.5)


def _type(qtbot, edit, text: str) -> None:
    edit.selectAll()
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def test_the_editor_commits_a_valid_nondet_tol_and_marks_a_negative_one(qtbot):
    bar = ToleranceBar()
    qtbot.addWidget(bar)
    assert bar.nondet_tol_edit.text() == "0.0" and bar.nondet_tol() == 0.0
    with qtbot.assertNotEmitted(bar.tolerancesChanged), \
            qtbot.waitSignal(bar.nondetTolChanged, timeout=1000) as changed:
        _type(qtbot, bar.nondet_tol_edit, "1e-10")
    assert changed.args == [1e-10] and bar.nondet_tol() == 1e-10
    with qtbot.assertNotEmitted(bar.nondetTolChanged):
        _type(qtbot, bar.nondet_tol_edit, "-1")
    assert bar.nondet_tol_edit.property("invalid") is True
    assert bar.nondet_tol_edit.toolTip() == Settings.check_field("nondet_tol", -1.0)
    with qtbot.assertNotEmitted(bar.nondetTolChanged):  # eps changed: nondet_tol is not sent
        bar.set_nondet_tol(1e-10)
        _type(qtbot, bar.eps_edit, "1e-7")
    bar.set_nondet_tol(3e-9)  # a session file's value, shown, not sent back
    assert bar.nondet_tol_edit.text() == "3e-09" and bar.nondet_tol() == 3e-9


def test_nondet_tol_is_a_setting_with_the_rule_of_atol():
    assert Settings.check_field("nondet_tol", 1e-10) is None
    assert "nondet_tol must be a number >= 0" in Settings.check_field("nondet_tol", -1e-10)
    settings, problems = Settings.from_dict(json.loads(json.dumps(
        Settings(nondet_tol=1e-10).to_dict())))
    assert (settings.nondet_tol, problems) == (1e-10, [])
    settings, problems = Settings.from_dict({"nondet_tol": -1})
    assert settings.nondet_tol == 0.0 and "nondet_tol" in problems[0]


def test_a_session_file_keeps_nondet_tol_and_the_editor_shows_it(qtbot, window, tmp_path):
    """As eps, atol and rtol: typed in the bar, saved, shown again by the file's opening."""
    s = window.session
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        s.set_target("killhead")
    edit = window.jacobian.tolerance_row.nondet_tol_edit
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):  # typed: checked again
        _type(qtbot, edit, "1e-10")
    assert s.settings.nondet_tol == 1e-10
    path = window.classroom.save_session(tmp_path / "lesson.json")
    assert json.loads(path.read_text())["settings"]["nondet_tol"] == 1e-10
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        s.update(nondet_tol=0.0)
    window.jacobian.tolerance_row.set_nondet_tol(0.0)
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        window.classroom.open_session(path)
    assert s.settings.nondet_tol == 1e-10 and edit.text() == "1e-10"
