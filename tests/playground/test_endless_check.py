"""A check that runs on (an endless loop in backward) says where it is while it runs, and
Esc stops it (trial2: "Checking at the start… 0%" for minutes, no line, Cancel the mouse's
only); in presentation Esc leaves presentation first."""

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
    assert failed.args[0] == "cancelled"
    qtbot.waitUntil(lambda: not cancel.isEnabled())


def test_esc_in_presentation_leaves_it_and_cancels_nothing(qtbot, window, tmp_path,
                                                           monkeypatch):
    from customgrad.workers import isolation

    monkeypatch.setattr(isolation, "QUIET_SECONDS", 0.5)
    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    cancel = window.actions_by_name["cancel_check"]
    leave = window.actions_by_name["leave_presentation"]
    with qtbot.waitSignal(window.session.jacobianRunningAt, timeout=TIMEOUT):
        window.session.set_target(f"{path}:Forever")
    window.actions_by_name["presentation"].trigger()
    assert leave.isEnabled() and not cancel.isEnabled()  # never both: Qt would fire neither
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    with qtbot.assertNotEmitted(window.session.jacobianFailed, wait=300):
        QTest.keyClick(window, Qt.Key.Key_Escape)
    assert not window.preferences.presenting
    assert cancel.isEnabled() and not leave.isEnabled()
    with qtbot.waitSignal(window.session.jacobianFailed, timeout=TIMEOUT):
        QTest.keyClick(window, Qt.Key.Key_Escape)
