"""A button reached with Tab is pressed by Space, Return or Enter (trial3 T5: a teacher tabbing
to an error's Details pressed Play with Space, and Return did nothing); a button that took the
focus from a click leaves Space to Play."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.playground.test_layout import TIMEOUT, _window

#: the whole window in each test, waiting for a check
pytestmark = pytest.mark.slow


def _focused(qtbot, win, widget, reason):
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win)
    widget.setFocus(reason)
    qtbot.waitUntil(widget.hasFocus)
    return widget


@pytest.mark.parametrize("key", [Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter],
                         ids=["space", "return", "enter"])
def test_a_key_presses_the_button_tab_reached_not_the_windows_shortcut(qtbot, key):
    win = _window(qtbot, 1440, 900)
    s = win.session
    try:
        plays: list = []
        s.runningChanged.connect(plays.append)
        step = _focused(qtbot, win, win.controls.step, Qt.FocusReason.TabFocusReason)
        with qtbot.waitSignal(s.batchReady, timeout=TIMEOUT):
            QTest.keyClick(step, key)
        qtbot.waitUntil(lambda: s.step == 1, timeout=TIMEOUT)
        assert True not in plays and not s.running  # Step pressed, Play not
        assert step.hasFocus()
    finally:
        s.shutdown(wait=0.5)


def test_space_plays_where_a_click_gave_a_button_the_focus(qtbot):
    win = _window(qtbot, 1440, 900)
    s = win.session
    try:
        step = _focused(qtbot, win, win.controls.step, Qt.FocusReason.MouseFocusReason)
        with qtbot.waitSignal(s.runningChanged, timeout=TIMEOUT) as blocker:
            QTest.keyClick(step, Qt.Key.Key_Space)
        assert blocker.args == [True]
        s.pause()
        # and Tab onto it afterwards makes the keys its own again
        _focused(qtbot, win, win.controls.play, Qt.FocusReason.MouseFocusReason)
        _focused(qtbot, win, step, Qt.FocusReason.TabFocusReason)
        qtbot.waitUntil(lambda: not s.running, timeout=TIMEOUT)
        before = s.step
        with qtbot.waitSignal(s.batchReady, timeout=TIMEOUT):
            QTest.keyClick(step, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: s.step == before + 1, timeout=TIMEOUT)
        assert not s.running
    finally:
        s.shutdown(wait=0.5)


def test_return_on_a_tabbed_button_with_a_modifier_is_no_press(qtbot):
    win = _window(qtbot, 1440, 900)
    s = win.session
    try:
        step = _focused(qtbot, win, win.controls.step, Qt.FocusReason.TabFocusReason)
        QTest.keyClick(step, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        qtbot.wait(300)
        assert s.step == 0
    finally:
        s.shutdown(wait=0.5)


def _yellow(widget) -> int:
    image = widget.grab().toImage()
    return sum(image.pixelColor(x, y).name() == "#ffff00"
               for x in range(image.width()) for y in range(image.height()))


def test_high_contrast_frames_the_focused_button_in_yellow(qtbot):
    """T5: the focus mark was a faint dotted rectangle (none at all on some controls)."""
    win = _window(qtbot, 1440, 900, "high-contrast")
    try:
        step, play = win.controls.step, win.controls.play
        _focused(qtbot, win, play, Qt.FocusReason.TabFocusReason)
        assert _yellow(step) == 0
        _focused(qtbot, win, step, Qt.FocusReason.TabFocusReason)
        assert _yellow(step) >= 2 * (step.width() + step.height())  # its whole frame
        assert _yellow(play) == 0
    finally:
        win.session.shutdown(wait=0.5)
