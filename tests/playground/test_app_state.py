"""conftest.py's application-wide state: what a test leaves on the QApplication (a zoom's font,
high contrast's sheet and palette, another style, the zoom's remembered size, pyqtgraph's
colours, a window's event filters) is put back before the next test."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory, QToolTip, QWidget

from playground.views import app_filters, theme, zoom
from tests.playground.conftest import PG_START, restore

PLATFORM_FONT = QFontDatabase.SystemFont.GeneralFont


class Counter(QObject):
    """An application event filter that counts the events it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def eventFilter(self, watched, event) -> bool:
        self.seen += 1
        return False


def leave_everything(app: QApplication, event_filter: QObject) -> None:
    """What a test in high contrast at 150 % leaves, and more."""
    app.setProperty("playground_zoom_base_points", 11.0)
    font = QFont(app.font())
    font.setPointSizeF(font.pointSizeF() * 1.5)
    app.setFont(font)
    app.setStyleSheet(theme.wanted_sheet("high-contrast"))
    app.setStyle(QStyleFactory.create("Windows"))
    app.setPalette(theme.palette("high-contrast"))
    QToolTip.setFont(font)
    pg.setConfigOptions(background=QColor("#000000"), foreground="w", antialias=True)
    app_filters.install(event_filter)


def assert_at_the_start(app: QApplication, event_filter: QObject) -> None:
    platform = QFontDatabase.systemFont(PLATFORM_FONT)
    assert app.font() == platform
    assert QToolTip.font() == platform
    assert app.styleSheet() == ""
    assert isinstance(app.style(), theme.PlaygroundStyle)
    assert app.palette().resolveMask() == 0  # none set: the style's
    assert app.palette().color(QPalette.ColorRole.Window) == \
        app.style().standardPalette().color(QPalette.ColorRole.Window)
    assert app.property("playground_zoom_base_points") is None
    assert pg.CONFIG_OPTIONS == PG_START
    assert app_filters.installed() == []
    seen = event_filter.seen
    QApplication.sendEvent(QWidget(), QEvent(QEvent.Type.User))
    assert event_filter.seen == seen  # off the application


def test_restore_puts_back_what_a_test_left(qapp, app_wide_state):
    spy = Counter()
    leave_everything(qapp, spy)
    assert zoom.base_point_size() == 11.0
    QApplication.sendEvent(QWidget(), QEvent(QEvent.Type.User))
    assert spy.seen  # (the filter was on)

    restore(qapp, app_wide_state)

    assert_at_the_start(qapp, spy)
    assert zoom.base_point_size() == QFontDatabase.systemFont(PLATFORM_FONT).pointSizeF()


def test_restore_leaves_a_property_that_was_there_before_the_tests(qapp, app_wide_state,
                                                                   monkeypatch):
    monkeypatch.setitem(app_wide_state.properties, "theirs", 3)
    qapp.setProperty("theirs", 4)
    restore(qapp, app_wide_state)
    assert qapp.property("theirs") == 3
    monkeypatch.undo()
    restore(qapp, app_wide_state)
    assert qapp.property("theirs") is None


# The two tests below run in this order (pytest keeps a file's order, and --dist loadfile
# keeps a file in one process): the first leaves everything behind, the second must not see
# it. Run alone, the second still checks the start state.
_LEFT_BY_THE_TEST_BEFORE: list[Counter] = []


def test_a_test_that_leaves_the_application_zoomed_in_high_contrast(qapp):
    spy = Counter()
    leave_everything(qapp, spy)
    _LEFT_BY_THE_TEST_BEFORE.append(spy)


def test_the_next_test_finds_the_application_as_at_the_start(qapp):
    spy = _LEFT_BY_THE_TEST_BEFORE[0] if _LEFT_BY_THE_TEST_BEFORE else Counter()
    assert_at_the_start(qapp, spy)


@pytest.mark.parametrize("percent", [150, 100])
def test_a_zoom_starts_from_the_platform_font(qapp, percent):
    """Whatever zoom the test before applied, 100 % is the platform's font."""
    base = QFontDatabase.systemFont(PLATFORM_FONT).pointSizeF()
    assert zoom.zoomed_font(100).pointSizeF() == base
    QApplication.setFont(zoom.zoomed_font(percent))
