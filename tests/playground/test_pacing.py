"""Held repaints are handed out one per turn of the event loop."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from playground.views import pacing


class _Paints(QObject):
    def __init__(self, log: list, name: str):
        super().__init__()
        self.log, self.name = log, name

    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint:
            self.log.append(self.name)
        return False


@pytest.fixture
def pair(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    layout = QHBoxLayout(window)
    a, b = QLabel("a"), QLabel("b")
    layout.addWidget(a)
    layout.addWidget(b)
    window.resize(300, 100)
    with qtbot.waitExposed(window):
        window.show()
    qtbot.wait(50)
    log = []
    spies = [_Paints(log, "a"), _Paints(log, "b")]
    a.installEventFilter(spies[0])
    b.installEventFilter(spies[1])
    yield a, b, log, spies
    window.close()  # kept alive until here (the labels are its children)


def test_held_views_repaint_one_per_turn(pair, qtbot):
    a, b, log, _spies = pair
    turns = []

    def count_turn():  # a timer of 0 ms fires once per turn of the event loop
        turns.append(list(log))
        if not ("a" in log and "b" in log) and len(turns) < 100_000:
            QTimer.singleShot(0, count_turn)

    pacing.paint_later(a)
    pacing.paint_later(b)
    pacing.paint_later(a)  # held already: once is enough
    assert not a.updatesEnabled() and not b.updatesEnabled()
    a.setText("A")
    b.setText("B")
    QTimer.singleShot(0, count_turn)
    qtbot.waitUntil(lambda: "a" in log and "b" in log, timeout=2000)
    assert a.updatesEnabled() and b.updatesEnabled() and pacing.held() == []
    assert log.index("a") < log.index("b")  # in the order they were held
    # never both in one turn: some turn saw a painted and b not yet
    assert any("a" in seen and "b" not in seen for seen in turns)
    assert turns[0] == []  # and not in the turn that held them


def test_a_widget_deleted_while_held_is_skipped(pair, qtbot):
    a, b, log, _spies = pair
    gone = QLabel("gone", a.parentWidget())
    pacing.paint_later(gone)
    pacing.paint_later(b)
    gone.deleteLater()
    qtbot.waitUntil(lambda: "b" in log, timeout=2000)
    assert b.updatesEnabled() and pacing.held() == []


def test_a_view_that_never_paints_does_not_hold_the_next_for_long(pair, qtbot):
    a, b, log, _spies = pair
    a.setFixedSize(0, 0)  # shown, but nothing of it to paint
    qtbot.wait(50)
    log.clear()
    pacing.paint_later(a)
    pacing.paint_later(b)
    qtbot.waitUntil(lambda: "b" in log, timeout=2000)  # after PAINT_WAIT_MS at most
    assert "a" not in log and a.updatesEnabled() and pacing.held() == []


def test_release_all_before_a_grab(pair, qtbot):
    # the window is grabbed (saved as an image) at once: a held view would be drawn blank
    a, b, _log, _spies = pair
    a.setStyleSheet("background: #ff0000")
    qtbot.wait(20)
    window = a.parentWidget()
    centre = a.geometry().center()
    pacing.paint_later(a)
    pacing.paint_later(b)
    held_image = window.grab().toImage()
    assert held_image.pixelColor(centre).name() != "#ff0000"  # what release_all prevents
    pacing.release_all()
    assert a.updatesEnabled() and b.updatesEnabled() and pacing.held() == []
    assert window.grab().toImage().pixelColor(centre).name() == "#ff0000"


def test_a_saved_window_image_shows_held_views(pair, qtbot, tmp_path):
    from PySide6.QtGui import QImage

    from playground.views.export import save_window

    a, _b, _log, _spies = pair
    a.setStyleSheet("background: #ff0000")
    qtbot.wait(20)
    pacing.paint_later(a)
    path = save_window(a.parentWidget(), tmp_path / "window.png")
    assert QImage(str(path)).pixelColor(a.geometry().center()).name() == "#ff0000"
