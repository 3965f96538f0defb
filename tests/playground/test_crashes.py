"""Functions that take their process down never take the window with them.

Each case makes the user's code segfault, abort, exit, hang inside C or eat memory, in
forward, backward or at import. The window must show what happened (the signal or exit
code, and the user's file and line where there is one), keep the settings, the loss history
and the editor's text, and then check and run normally. The CLI's side of the same faults is
in tests/customgrad/test_isolation.py.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from customgrad.workers import isolation
from playground.workers.policy import JobPolicy

#: Functions that crash, hang or blow up worker processes, in the window
pytestmark = pytest.mark.slow

TIMEOUT = 30_000
DATA = Path(__file__).resolve().parents[1] / "data"
CRASHES = DATA / "crash_functions.py"

#: A Function that works until its flag file holds a fault's name, then commits it. The file
#: is written into each test's folder with the flag's path in its text: the worker processes
#: come from a fork server started earlier, so an environment variable set now is not seen.
FLAKY = '''
import ctypes
import os
import torch


def fault(where):
    try:
        with open({flag!r}) as f:
            kind, at = f.read().split()
    except (OSError, ValueError):
        return
    if at != where:
        return
    if kind == "segfault":
        ctypes.string_at(0)  # SEGFAULT
    elif kind == "abort":
        os.abort()  # ABORT
    elif kind == "exit":
        os._exit(3)
    elif kind == "sleep":
        ctypes.CDLL(None).sleep(1000)


class Flaky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        fault("forward")
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        fault("backward")
        return grad * 2
'''


@pytest.fixture
def window(window):
    """The shared window at 1200x800, its checks in worker processes."""
    window.session.policy = JobPolicy(isolate=True)
    window.resize(1200, 800)
    return window


def _line(path: Path, marker: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def _report(qtbot, win, action):
    with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT) as blocker:
        action()
    return blocker.args[0]


def _steps(qtbot, win, count: int) -> None:
    s = win.session
    start = s.step
    s.run_steps(count)
    qtbot.waitUntil(lambda: s.step == start + count and not s.running, timeout=TIMEOUT)


def _open_flaky(qtbot, win, tmp_path):
    """Flaky loaded and checked, with a learning rate, seed, tolerance and editor text of
    the user's own, and five steps in the loss plot. The flag file, and what to compare
    with after the fault."""
    flag = tmp_path / "flag.txt"
    path = tmp_path / "flaky.py"
    path.write_text(FLAKY.format(flag=str(flag)))
    s = win.session
    _report(qtbot, win, lambda: s.set_target(f"{path}:Flaky"))
    s.update(lr=0.25, seed=7, atol=2e-5)
    qtbot.waitUntil(lambda: s.problem is not None and s.problem.settings.seed == 7,
                    timeout=TIMEOUT)
    win.editor.set_text("# my own notes, typed before the crash\n")
    _steps(qtbot, win, 5)
    win.loss_plot.flush()
    before = {"lr": s.settings.lr, "seed": s.settings.seed, "atol": s.settings.atol,
              "target": s.settings.target, "points": win.loss_plot.point_count,
              "editor": win.editor.text(), "step": s.step}
    return flag, path, before


def _kept(win, before: dict) -> None:
    s = win.session
    win.loss_plot.flush()
    assert (s.settings.lr, s.settings.seed, s.settings.atol, s.settings.target) == (
        before["lr"], before["seed"], before["atol"], before["target"])
    assert win.loss_plot.point_count == before["points"] == 5
    assert win.editor.text() == before["editor"]


def _banner(qtbot, win, errors) -> str:
    qtbot.waitUntil(lambda: bool(errors), timeout=TIMEOUT)
    assert win.errors.isVisible()
    return " ".join(win.errors.text().split())


def _works_again(qtbot, win, flag: Path) -> None:
    """The next check and the next steps just work, in the same run."""
    flag.unlink(missing_ok=True)
    s = win.session
    report = _report(qtbot, win, s.check_now)
    assert report.passed
    step = s.step
    _steps(qtbot, win, 3)
    assert s.step == step + 3 and math.isfinite(s.last_loss)
    win.loss_plot.flush()
    assert win.loss_plot.point_count == 8  # the five from before, and three more


@pytest.mark.parametrize(("kind", "where", "expect"), [
    ("segfault", "backward", r"Flaky\.backward crashed the process with SIGSEGV at "
                             r"flaky\.py:{SEGFAULT} \(in fault\)"),
    ("segfault", "forward", r"crashed the process with SIGSEGV at flaky\.py:{SEGFAULT}"),
    ("abort", "backward", r"Flaky\.backward crashed the process with SIGABRT at "
                          r"flaky\.py:{ABORT}"),
    ("exit", "backward", r"Flaky ended the process with exit code 3"),
])
def test_a_crash_in_the_check_leaves_the_window_settings_history_and_editor(
        qtbot, window, tmp_path, kind, where, expect):
    flag, path, before = _open_flaky(qtbot, window, tmp_path)
    errors = []
    window.session.errorRaised.connect(errors.append)
    flag.write_text(f"{kind} {where}")
    window.session.check_now()
    text = _banner(qtbot, window, errors)
    pattern = expect.format(SEGFAULT=_line(path, "SEGFAULT"), ABORT=_line(path, "ABORT"))
    assert re.search(pattern, text), text
    assert "Only its own process ended" in text
    assert isinstance(errors[-1], isolation.ProcessCrashed)
    _kept(window, before)
    _works_again(qtbot, window, flag)


def test_without_a_fork_server_every_call_still_runs_in_a_spawned_process(
        qtbot, window, tmp_path, configure):
    """Windows has no fork server: there each worker process is spawned (a fresh
    interpreter, seconds to start). Chosen here by the variable: the window never imports
    the user's file, the loop runs in a process of its own, and a segfault leaves the window
    as it does with a fork server."""
    from customgrad.function.shadow import description_of
    from playground.workers.warm_worker import WORKER

    configure(spawn=True, loop="process")
    flag, path, before = _open_flaky(qtbot, window, tmp_path)
    s = window.session
    assert type(s.ctrl.remote.process).__name__ == "SpawnProcess"  # the loop's
    assert type(WORKER.process).__name__ == "SpawnProcess"  # the build's and checks'
    loaded = [m for m in list(sys.modules.values())
              if getattr(m, "__file__", None) == str(path)]
    # the window's module for the file holds a shadow of Flaky: a worker ran the file
    assert [description_of(m.Flaky).name for m in loaded] == ["Flaky"]
    errors = []
    s.errorRaised.connect(errors.append)
    flag.write_text("segfault backward")
    s.check_now()
    text = _banner(qtbot, window, errors)
    assert re.search(rf"Flaky\.backward crashed the process with SIGSEGV at "
                     rf"flaky\.py:{_line(path, 'SEGFAULT')}", text), text
    _kept(window, before)
    _works_again(qtbot, window, flag)


def test_cancel_ends_a_check_stuck_inside_c(qtbot, window, tmp_path):
    flag, _, before = _open_flaky(qtbot, window, tmp_path)
    s = window.session
    failed = []
    s.jacobianFailed.connect(failed.append)
    flag.write_text("sleep backward")
    with qtbot.waitSignal(s.jacobianStarted, timeout=TIMEOUT):
        s.check_now()
    job = s.job
    assert job is not None and job.isolated
    qtbot.wait(300)  # the child is inside sleep(1000) by now (or about to be)
    assert not job.done
    s.cancel_check()
    # ending the child is immediate; the limit only bounds a test that would otherwise hang
    qtbot.waitUntil(lambda: failed == ["cancelled"] and job.done, timeout=10_000)
    _kept(window, before)
    _works_again(qtbot, window, flag)


def test_a_check_is_not_queued_behind_a_stuck_inspector_and_the_loop(qtbot, window,
                                                                     tmp_path):
    """Each runs on a worker thread that waits on a process: the loop's (alive after a run)
    and an inspection stuck inside C (until its timeout) took both of a 2-core machine's
    pool threads, and Check waited in the queue that long, doing nothing."""
    flag, _, before = _open_flaky(qtbot, window, tmp_path)  # the loop's thread is waiting
    s = window.session
    flag.write_text("sleep backward")
    inspection = window.byof.inspection
    inspection.inspect_now()
    qtbot.waitUntil(lambda: inspection.runner.busy, timeout=TIMEOUT)
    with qtbot.waitSignal(s.jacobianStarted, timeout=TIMEOUT):
        s.check_now()
    job = s.job
    # the check's thread runs (its child is asleep in backward), long before the
    # inspector's 10 s timeout would free a thread
    qtbot.waitUntil(lambda: job.state.thread_id is not None, timeout=5000)
    s.cancel_check()
    qtbot.waitUntil(lambda: job.done, timeout=5000)
    inspection.runner.cancel()
    _kept(window, before)
    _works_again(qtbot, window, flag)


def test_a_memory_blow_up_is_stopped_with_the_shapes_named(qtbot, window, tmp_path,
                                                         configure):
    _, _, before = _open_flaky(qtbot, window, tmp_path)
    configure(memory_limit_gib=0.75)
    errors = []
    window.session.errorRaised.connect(errors.append)
    window.session.set_target(f"{CRASHES}:MemoryHog")
    text = _banner(qtbot, window, errors)
    assert isinstance(errors[-1], isolation.MemoryLimitExceeded)
    # the shape as the app writes it everywhere (the form, the block labels): "x 3x8"
    assert re.search(r"used more than 0\.8 GiB of memory for x \d+(x\d+)* and was stopped",
                     text), text
    configure(memory_limit_gib=None)
    assert window.editor.text() == before["editor"]
    report = _report(qtbot, window, lambda: window.session.set_target("killhead"))
    assert report.passed
    _steps(qtbot, window, 3)
    assert window.session.settings.lr == before["lr"]


@pytest.mark.parametrize(("target", "expect"), [
    (f"{CRASHES}:SegInForward", r"SegInForward\.forward crashed the process with SIGSEGV at "
                                r"crash_functions\.py:{SEGFAULT_FORWARD} \(in forward\)"),
    (str(DATA / "crash_at_import.py"), r"The top level of crash_at_import\.py crashed the "
                                        r"process with SIGSEGV at crash_at_import\.py:"
                                        r"{SEGFAULT_IMPORT}"),
])
def test_a_function_that_crashes_as_it_loads_leaves_the_window(qtbot, window, tmp_path,
                                                               target, expect):
    """At import, or in the forward that building the inputs calls: the window never runs
    it itself."""
    _, _, before = _open_flaky(qtbot, window, tmp_path)
    errors = []
    window.session.errorRaised.connect(errors.append)
    window.session.set_target(target)
    text = _banner(qtbot, window, errors)
    source = Path(target.split(":")[0])
    marker = "SEGFAULT_IMPORT" if "import" in source.name else "SEGFAULT_FORWARD"
    pattern = expect.format(**{marker: _line(source, marker)})
    assert re.search(pattern, text), text
    assert window.editor.text() == before["editor"]
    assert window.session.settings.lr == before["lr"]
    report = _report(qtbot, window, lambda: window.session.set_target("killhead"))
    assert report.passed
    _steps(qtbot, window, 3)


_SMALL_SHM = """
from customgrad.workers import isolation, processes
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from playground.workers import child_jobs

problem = build(Settings(target="killhead", shapes={"input": "32x64"}, dtype="float64"))
job = child_jobs.CompareJob(processes.ProblemRef.of(problem), None, {}, 160)
sent = []
isolation.call(child_jobs.compare, job, on_message=sent.append)  # the second order returns
report = next(payload for kind, payload in sent if kind == "first")
print(report.shape[0], report.passed, float(report.analytic.diagonal().abs().sum() > 0))
"""


def test_a_big_check_needs_no_room_in_dev_shm():
    """A container's /dev/shm is often 64 MiB, and a 4096-row check's matrices are 128 MiB
    each: torch's own sharing reserved them there and the worker died ("No space left on
    device"). The worker's matrices, and what it sends back, go through memory files
    (customgrad.workers.sharing): here a 2048-row check (32 MiB a matrix) works with a 16 MiB
    /dev/shm. Needs a mount namespace (unshare, as root or in a user namespace): skipped
    where there is none."""
    if not hasattr(os, "memfd_create") or shutil.which("unshare") is None:
        pytest.skip("needs Linux memfd and unshare")
    mount = "mount -t tmpfs -o size=16m tmpfs /dev/shm"
    # root: a mount namespace; anyone else: inside a user namespace of their own (-r)
    for unshare in (["unshare", "-m"], ["unshare", "-rm"]):
        if not subprocess.run([*unshare, "sh", "-c", mount], capture_output=True).returncode:
            break
    else:
        pytest.skip("cannot make a mount namespace here")
    done = subprocess.run([*unshare, "sh", "-c", f'{mount} && exec "$0" -c "$1"',
                           sys.executable, _SMALL_SHM], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["2048", "True", "1.0"]
