"""A check that runs on (an endless loop in backward) says where it is while it runs, and
Esc stops it (trial2: "Checking at the start… 0%" for minutes, no line, Cancel the mouse's
only), in presentation too (the next Esc leaves it); a step of the loop that runs on is
named too, and Pause's stop says where."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

TIMEOUT = 60_000

LOOPS = textwrap.dedent('''
    from torch.autograd import Function


    class Forever(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            while True:
                grad_output = grad_output + 0
''')


def test_an_endless_backward_is_named_while_it_runs_and_esc_stops_it(
        qtbot, window, tmp_path, monkeypatch):
    from customgrad.workers import isolation

    monkeypatch.setattr(isolation, "QUIET_SECONDS", 0.5)
    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    line = LOOPS.splitlines().index("        while True:") + 1
    cancel = window.actions_by_name["cancel_check"]
    assert not cancel.isEnabled()
    with qtbot.waitSignal(window.session.jacobianRunningAt, timeout=TIMEOUT) as said:
        window.session.set_target(f"{path}:Forever")
    words = said.args[0]
    assert any(words.startswith(f"At loops.py:{n} (backward) for ") for n in (line, line + 1)), \
        words
    assert words.endswith("— still checking: Esc or Cancel stops it."), words
    assert words in window.jacobian.banner.verdict_label.text()
    assert window.jacobian.hover_label.text() == words
    assert cancel.isEnabled()
    assert [k.toString() for k in cancel.shortcuts()] == ["Esc"]
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    with qtbot.waitSignal(window.session.jacobianFailed, timeout=TIMEOUT) as failed:
        QTest.keyClick(window, Qt.Key.Key_Escape)
    # the banner keeps where it was (trial3 T11: "Jacobian not computed: cancelled" alone)
    assert any(failed.args[0] == f"cancelled at loops.py:{n} (in backward)"
               for n in (line, line + 1)), failed.args[0]
    assert window.jacobian.banner.verdict_label.text() == \
        f"Jacobian not computed: {failed.args[0]}"
    qtbot.waitUntil(lambda: not cancel.isEnabled())


def test_esc_in_presentation_cancels_a_check_that_runs_on_then_leaves(qtbot, window, tmp_path,
                                                                      monkeypatch):
    """trial3 T11: Esc, as the banner says, left presentation in front of the room and the
    check ran on. It cancels first; the next Esc leaves presentation."""
    from customgrad.workers import isolation

    monkeypatch.setattr(isolation, "QUIET_SECONDS", 0.5)
    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    cancel = window.actions_by_name["cancel_check"]
    leave = window.actions_by_name["leave_presentation"]
    window.actions_by_name["presentation"].trigger()
    qtbot.waitUntil(lambda: leave.isEnabled() and not cancel.isEnabled())
    with qtbot.waitSignal(window.session.jacobianRunningAt, timeout=TIMEOUT):
        window.session.set_target(f"{path}:Forever")
    qtbot.waitUntil(lambda: cancel.isEnabled())
    assert not leave.isEnabled()  # never both: Qt would fire neither
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    with qtbot.waitSignal(window.session.jacobianFailed, timeout=TIMEOUT):
        QTest.keyClick(window, Qt.Key.Key_Escape)
    assert window.preferences.presenting
    qtbot.waitUntil(lambda: leave.isEnabled() and not cancel.isEnabled())
    QTest.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.preferences.presenting)
    # out of presentation with nothing running on: neither
    qtbot.waitUntil(lambda: not leave.isEnabled() and not cancel.isEnabled())


@pytest.mark.slow  # (two worker processes looping: a check's, then a run's)
def test_a_step_that_runs_on_is_named_and_pause_says_where_it_was_stuck(
        qtbot, window, tmp_path, monkeypatch):
    """trial3 S3: Play on an endless backward showed "step 0, loss —" for as long as it ran,
    and Pause's stop said "stuck inside forward/backward" with no line."""
    from customgrad.workers import isolation

    monkeypatch.setattr(isolation, "QUIET_SECONDS", 0.5)
    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    line = LOOPS.splitlines().index("        while True:") + 1
    s = window.session
    with qtbot.waitSignal(s.jacobianRunningAt, timeout=TIMEOUT):
        s.set_target(f"{path}:Forever")
    s.checks.cancel_by_user()  # (the check loops too: one core for the loop's step)
    said: list[str] = []
    s.runNotice.connect(said.append)
    s.play()
    qtbot.waitUntil(lambda: any(w.startswith("Step 1 at loops.py:") for w in said),
                    timeout=TIMEOUT)
    words = next(w for w in said if w.startswith("Step 1 at loops.py:"))
    assert any(words.startswith(f"Step 1 at loops.py:{n} (backward) for ") for n in
               (line, line + 1)), words
    assert words.endswith("— an endless loop? Pause (Space) stops it."), words
    where = words.split(" for ")[0].removeprefix("Step 1 at ")
    with qtbot.waitSignal(s.notice, timeout=TIMEOUT,
                          check_params_cb=lambda text: "was stuck" in text) as stopped:
        s.pause()
    assert stopped.args[0].startswith(f"Your Function was stuck at {where}, so the loop was "
                                      "stopped."), stopped.args[0]
