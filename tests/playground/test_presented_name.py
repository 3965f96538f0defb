"""Presentation mode names the open Function on screen: the window's title, which said it, is
gone in full screen, and a room could not tell which Function the heatmaps were of. The name
sits at the end of the buttons' row (the top strip), large and bold, in the theme's colours and
at the zoom, and takes no height from the heatmaps. Geometry and fonts only."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication

from tests.playground.test_layout import (  # noqa: F401 (app_font: the fixture, autouse)
    TIMEOUT,
    _settle,
    _window,
    app_font,
)
from tests.playground.test_layout_banners import _heatmaps

CUBE = "tests/data/single_function.py"


def _whole(label) -> bool:
    """Read whole, at no less than 0.8 of its size."""
    text, font = label.shown()
    return text == label.text() and font.pointSizeF() >= 0.8 * label.font().pointSizeF() \
        and label.contentsRect().width() >= QFontMetrics(font).horizontalAdvance(text)


@pytest.mark.parametrize("theme_name", ["light", "high-contrast"])
def test_presenting_names_the_function_without_taking_height(qtbot, theme_name):
    win = _window(qtbot, 1280, 720, theme_name, 150, target="linear_bug")
    try:
        name, controls = win.controls.function_name, win.controls
        assert name.isHidden()  # the window's title says it outside presentation
        win.classroom.presentation.set_presentation(True, fullscreen=False)
        _settle(qtbot, win)
        assert name.isVisible() and name.text() == win.session.target.label
        assert name.text() == "LinearFunction (find the bug)"
        assert _whole(name)  # read whole on a projector at 150 %
        # large and bold, and in the theme's text colour
        assert name.font().bold()
        assert QFontMetrics(name.font()).height() > QFontMetrics(controls.font()).height()
        assert name.palette().color(QPalette.ColorRole.WindowText) == \
            controls.palette().color(QPalette.ColorRole.WindowText)
        assert name.geometry().top() >= 0 and name.geometry().bottom() < controls.height()
        assert not name.geometry().intersects(controls.check.geometry())
        # no height taken: the row and the heatmaps are as they are without it
        with_name, heatmaps, row = _heatmaps(win), win.jacobian.heatmaps.graphics.geometry(), \
            controls.height()
        controls.show_function(False)
        _settle(qtbot, win)
        assert (controls.height(), _heatmaps(win)) == (row, with_name)
        assert win.jacobian.heatmaps.graphics.geometry() == heatmaps
        controls.show_function(True)
        _settle(qtbot, win)
        # it follows the zoom
        points = name.font().pointSizeF()
        win.preferences.set_zoom(175, remember=False)
        _settle(qtbot, win)
        assert name.font().pointSizeF() > points and name.isVisible()
        assert name.shown_text() == name.text() or name.toolTip() == name.text()
        win.classroom.presentation.set_presentation(False)
        _settle(qtbot, win)
        assert name.isHidden()
    finally:
        win.session.shutdown(wait=0.5)


def test_a_file_s_function_is_named_with_its_file(qtbot):
    """A user file's Function: its class and its file's name, as the Code tab's title."""
    win = _window(qtbot, 1440, 900, present=True)
    try:
        name = win.controls.function_name
        assert name.text().startswith("KillHead") and name.isVisible()
        with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT):
            win.session.set_target(CUBE)
        _settle(qtbot, win)
        assert name.text() == "Cube (single_function.py)" and _whole(name)
        assert name.toolTip() == name.text()
        QApplication.processEvents()
    finally:
        win.session.shutdown(wait=0.5)
