"""The window's process starts the workers' fork server first thing, before its own imports:
the server imports torch in a process of its own while the window is imported and built, so
the first check does not wait for both imports one after the other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from customgrad import processes

#: starts the app as a process
pytestmark = pytest.mark.slow


ROOT = Path(__file__).resolve().parents[2]
#: runs app.main with the fork server's start and the window's imports replaced by probes;
#: prints whether the server was asked for before the window's imports began, and whether
#: torch was loaded in this process by then
SCRIPT = """
import contextlib, sys, threading
from customgrad import processes
asked = threading.Event()
seen = {}

def warm():
    seen["torch"] = "torch" in sys.modules
    seen["preload"] = list(processes.PRELOAD)
    asked.set()

processes.warm = warm
import os
os.getloadavg = lambda: (float(sys.argv[2]), 0.0, 0.0)
import playground.app as app

@contextlib.contextmanager
def imports():
    remote = "playground.workers.remote" in seen.get("preload", [])
    print("asked", asked.wait(float(sys.argv[3])), "torch", seen.get("torch"), "remote", remote,
          flush=True)
    raise SystemExit(0)
    yield

app.imports_frozen = imports
app.main(["killhead", "--screenshot", sys.argv[1]])
"""


def _start(tmp_path, load: float, wait: float) -> list[str]:
    """What the probes saw, the machine's load average reading ``load``; waits ``wait`` s at
    most for the server's start (it is asked for on a thread of its own)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "s.png"), str(load),
                           str(wait)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_with_a_core_free_the_fork_server_starts_before_the_window_imports_torch(tmp_path):
    if not processes.fork_server():
        return  # children are spawned here: there is no server to start
    seen = _start(tmp_path, load=0.0, wait=30)
    assert seen == ["asked", "True", "torch", "False", "remote", "True"]


def test_with_every_core_busy_it_waits_for_the_window(tmp_path):
    """Both imports would share the cores: the window would paint seconds later, for a
    verdict no sooner. The Session starts the server once the window is built, as before."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    seen = _start(tmp_path, load=float(cores), wait=1)
    assert seen == ["asked", "False", "torch", "None", "remote", "False"]
