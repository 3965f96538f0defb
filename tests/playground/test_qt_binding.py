"""Guard against a Qt binding that leaks references to None (PySide6 6.12.0 on Python 3.11).

Such a build aborts the app with 'none_dealloc' after some thousands of redraws.
"""

import sys

from PySide6.QtWidgets import QLabel


def test_qt_calls_do_not_leak_references_to_none(qtbot):
    label = QLabel()
    qtbot.addWidget(label)
    label.setText("warm up")
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.setText("x")
    assert abs(sys.getrefcount(None) - before) < 100
