"""Run from a source tree that was never installed: ``python -m playground`` in a fresh clone, or
``PYTHONPATH`` at a checkout. There is no ``playground.resources`` package then (pyproject maps
the top-level ``resources/`` to it only when installing); the app finds the tree's own folder."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import importlib.util, sys
from playground.state import paths
assert importlib.util.find_spec("playground.resources") is None, "an install is visible"
print(paths.resources_dir())
"""


def test_an_uninstalled_checkout_finds_its_own_resources() -> None:
    # -S: no site module, so no .pth file runs and no editable install's finder maps
    # playground.resources; the checkout and site-packages (for platformdirs) are on the path.
    path = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-S", "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = Path(done.stdout.strip())
    assert found == ROOT / "resources"
    assert sorted(p.name for p in (found / "examples").glob("*.py"))
