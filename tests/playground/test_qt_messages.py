"""Qt's meaningless platform noise never reaches the user's stderr; its real warnings do."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtCore import qWarning

from playground.views.qt_messages import filter_noise

#: the app and notebook pictures in processes, their output read
pytestmark = pytest.mark.slow


def test_the_noise_is_dropped_and_warnings_pass(qtlog):
    filter_noise()
    filter_noise()  # twice: still one filter
    qWarning("This plugin does not support propagateSizeHints()")
    qWarning("QPainter::end: Painter not active, aborted")
    assert [r.message for r in qtlog.records] == ["QPainter::end: Painter not active, aborted"]


def test_without_a_handler_before_it_warnings_reach_stderr():
    code = ("from PySide6.QtCore import qWarning\n"
            "from playground.views.qt_messages import filter_noise\n"
            "filter_noise()\n"
            "qWarning('This plugin does not support propagateSizeHints()')\n"
            "qWarning('a real warning')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["a real warning"]


def test_a_notebook_picture_prints_no_qt_noise():
    """A report's picture in a fresh process (as a notebook's first one): the offscreen
    platform's noise stays off stderr (it printed twice)."""
    code = ("import customgrad, torch\n"
            "from customgrad.targets.gallery import MulConstant\n"
            "report = customgrad.check(MulConstant, torch.randn(3, 4, dtype=torch.float64), 2.0)\n"
            "assert report._repr_png_()[:4] == b'\\x89PNG'\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "propagateSizeHints" not in proc.stderr
