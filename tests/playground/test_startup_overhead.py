"""What the window's process does before its first paint, beyond building the window
(issue 33): PySide6 is spared reading the source of each module imported after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

ROOT = Path(__file__).resolve().parents[2]

#: imports the window's modules as app.main does, after no_source_scans if argv[1] says so;
#: prints how many of our modules, and pyqtgraph's, PySide6 read the source of
SCANS = """
import inspect, sys
import PySide6.QtCore
import playground.app as app
read = []
getsource = inspect.getsource
def counted(obj):
    name = getattr(obj, "__name__", "")
    if name.split(".")[0] in app.SCANNED_PACKAGES:
        read.append(name)
    return getsource(obj)
inspect.getsource = counted
if sys.argv[1] == "told":
    app.no_source_scans()
import playground.main_window
print(len(read))
"""


def _sources_read(told: bool) -> int:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCANS, "told" if told else "not told"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1])


def test_pyside_reads_none_of_the_windows_modules_once_told():
    """PySide6 reads the source of every module imported after it (to learn whether it
    selects a ``__feature__``): the window's imports read over 200 of ours and pyqtgraph's;
    told beforehand that none selects one, it reads none of them."""
    from PySide6.support import feature

    if not isinstance(getattr(feature, "pyside_feature_dict", None), dict):
        pytest.skip("this PySide6 keeps no feature table")
    assert _sources_read(told=False) > 100
    assert _sources_read(told=True) == 0
