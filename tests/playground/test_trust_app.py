"""The window trusts no user code with its own process: a worker that cannot start is said,
never replaced by running the code here."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from customgrad.errors import TargetError
from customgrad.workers import isolation, processes
from playground.workers import jobs
from playground.workers.policy import JobPolicy

#: the app as a process: signals, stuck builds, workers that cannot start
pytestmark = pytest.mark.slow


def test_a_worker_that_cannot_start_is_said_and_nothing_runs_in_the_window(tmp_path,
                                                                          monkeypatch):
    """The app imported the user's module itself when no worker process could start: a
    module that crashed then ended the window."""
    def cannot_start(*_args, **_kwargs):
        raise processes.SetupFailed("The worker process could not start (exit code 1).")

    monkeypatch.setattr(isolation, "call", cannot_start)
    path = tmp_path / "mine.py"
    path.write_text("import os\nos._exit(9)\n")
    with pytest.raises(TargetError) as caught:
        jobs.try_import_in_child(("file", str(path), path.read_text()), "mine.py", True,
                                 JobPolicy(isolate=True))
    assert "mine.py was not imported: The worker process could not start" in str(caught.value)
    assert caught.value.file == str(path)


HELPER = '''import os
import torch
open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                  "imported-in-" + str(os.getpid())), "w").close()


class MyTensor(torch.Tensor):
    pass


class MyKI(KeyboardInterrupt):
    pass
'''
USES_HELPER = '''import torch
from helper_classes import MyKI, MyTensor


class ReturnsSubclass(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return (x * 2).as_subclass(MyTensor)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


class RaisesOwnInterrupt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise MyKI("mine")
'''


def test_classes_of_the_users_modules_never_load_in_the_window(qtbot, window, tmp_path):
    """A result or an error whose class lives in a module beside the user's file was
    unpickled in the window, which imported that module there (one that crashed on import
    ended the window). Results and errors now cross as plain data."""
    import os
    import sys

    (tmp_path / "helper_classes.py").write_text(HELPER)
    (tmp_path / "uses_helper.py").write_text(USES_HELPER)
    s = window.session
    errors = []
    s.errorRaised.connect(errors.append)
    with qtbot.waitSignal(s.jacobianReady, timeout=20_000) as ready:
        s.set_target(f"{tmp_path}/uses_helper.py:ReturnsSubclass")
    assert ready.args[0].passed
    s.set_target(f"{tmp_path}/uses_helper.py:RaisesOwnInterrupt")
    qtbot.waitUntil(lambda: bool(errors), timeout=20_000)
    assert "RaisesOwnInterrupt.backward raised MyKI: mine" in window.errors.text()
    line = USES_HELPER.splitlines().index('        raise MyKI("mine")') + 1
    assert f"uses_helper.py:{line}" in window.errors.text()
    assert not (tmp_path / f"imported-in-{os.getpid()}").exists()
    assert "helper_classes" not in sys.modules and str(tmp_path) not in sys.path
    with qtbot.waitSignal(s.jacobianReady, timeout=20_000) as ready:
        s.set_target("killhead")
    assert ready.args[0].passed


SLOW_FORWARD = '''import time

import torch


class SlowForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        time.sleep(600)  # a wait inside C, as a stuck extension's
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
'''


def _start_slow_build(qtbot, window, tmp_path):
    path = tmp_path / "slow_forward.py"
    path.write_text(SLOW_FORWARD)
    s = window.session
    with qtbot.waitSignal(s.busyChanged, timeout=20_000, check_params_cb=bool):
        s.set_target(f"{path}:SlowForward")
    return s


def test_cancel_stops_a_forward_stuck_while_the_inputs_are_prepared(qtbot, window, tmp_path):
    """'Preparing inputs…' had no Cancel: a forward stuck inside C held the window's
    checks forever."""
    s = _start_slow_build(qtbot, window, tmp_path)
    qtbot.waitUntil(lambda: window.jacobian.banner.cancel_button.isVisible(), timeout=5000)
    errors = []
    s.errorRaised.connect(errors.append)
    from customgrad.workers import isolation

    qtbot.wait(int(1000 * (isolation.STACK_AFTER_SECONDS + 0.5)))  # long enough to be asked where
    with qtbot.waitSignal(s.jacobianFailed, timeout=10_000) as failed:
        window.jacobian.banner.cancel_button.click()
    line = SLOW_FORWARD.splitlines().index("        time.sleep(600)  # a wait inside C, as a "
                                            "stuck extension's") + 1
    assert failed.args[0] == f"Preparing the inputs was cancelled; it was at slow_forward.py:" \
        f"{line} (in forward)."
    assert not errors and not s.busy
    with qtbot.waitSignal(s.jacobianReady, timeout=20_000) as ready:
        s.set_target("killhead")
    assert ready.args[0].passed


def test_a_forward_stuck_while_the_inputs_are_prepared_meets_a_time_limit(qtbot, window,
                                                                         tmp_path, monkeypatch):
    from playground.workers import building

    monkeypatch.setattr(building, "BUILD_SECONDS", 2.0)
    errors = []
    window.session.errorRaised.connect(errors.append)
    _start_slow_build(qtbot, window, tmp_path)
    qtbot.waitUntil(lambda: bool(errors), timeout=20_000)
    line = SLOW_FORWARD.splitlines().index("        time.sleep(600)  # a wait inside C, as a "
                                            "stuck extension's") + 1
    assert "SlowForward (slow_forward.py) was still running after 2 s while the inputs were " \
        f"prepared at slow_forward.py:{line} (in forward), and was stopped" in str(errors[-1])
    assert (errors[-1].file, errors[-1].line) == (str(tmp_path / "slow_forward.py"), line)
    assert "was still running after 2 s" in window.errors.text()


@pytest.mark.parametrize("number", ["SIGTERM", "SIGINT"])
def test_a_signal_to_the_app_quits_it_cleanly_with_the_session_kept(tmp_path, number):
    """SIGTERM ended the app with nothing saved; Ctrl+C in its terminal landed as a
    KeyboardInterrupt traceback in whatever Qt callback ran next."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    started = tmp_path / "started.json"
    env = {**os.environ, "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path / "home"),
           "QT_QPA_PLATFORM": "offscreen"}
    env.pop("AUTOGRAD_PLAYGROUND_NO_RESTORE", None)
    proc = subprocess.Popen([sys.executable, "-m", "playground", "abs_uv", "--save-session",
                             str(started)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), proc.communicate(timeout=30)
        time.sleep(0.5)  # into Qt's loop (a signal before it is handled once the loop runs)
        proc.send_signal(getattr(signal, number))
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = tmp_path / "home" / "config" / "last-session.json"
    assert json.loads(last.read_text())["settings"]["target"] == "abs_uv"


def _no_worker_starts(monkeypatch):
    """Starting any child fails as a fork server that cannot start does (a ``string.py`` in
    the launch folder: EOFError on its pipe)."""
    import contextlib

    @contextlib.contextmanager
    def broken():
        raise EOFError("the fork server ended as it started")
        yield

    monkeypatch.setattr(processes, "child_start", broken)


def test_no_worker_process_is_a_start_failure_never_a_run_here(monkeypatch):
    """A start failure was a SetupFailed, on which every caller ran the code on a thread of
    its own process instead: a segfaulting Function then ended the window."""
    from customgrad.targets import gallery

    _no_worker_starts(monkeypatch)
    ran = []
    with pytest.raises(processes.StartFailed, match="No worker process could start "
                                                    r"\(EOFError: the fork server ended"):
        jobs.in_child_or_here(lambda: isolation.call(print, "never"),
                              lambda: ran.append("here"), gallery.MulConstant)
    assert ran == []


def test_the_window_reports_a_worker_that_cannot_start_and_runs_nothing_here(qtbot, window,
                                                                            monkeypatch):
    """The check of a gallery Function fell back to this process and passed, with no word
    that a crash in it would end the window."""
    s = window.session
    _no_worker_starts(monkeypatch)
    errors, reports = [], []
    s.errorRaised.connect(errors.append)
    s.jacobianReady.connect(reports.append)
    s.set_target("mulconstant")
    qtbot.waitUntil(lambda: bool(errors), timeout=20_000)
    assert isinstance(errors[0], processes.StartFailed)
    assert "No worker process could start" in window.errors.text()
    qtbot.wait(300)
    assert reports == [] and not window.isolation_off.isVisible()


STUCK_AND_DEAF = '''import signal
import time

import torch

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the module ignores SIGTERM
MARK = __file__ + ".forward"


class StuckAndDeaf(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        open(MARK, "w").close()
        time.sleep(600)  # stuck inside C while the inputs are prepared
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
'''


def test_closing_the_window_while_a_deaf_forward_prepares_the_inputs_ends_the_app(tmp_path):
    """Issue 35 item 9: a forward stuck in C during "Preparing inputs…" in a module that
    ignores SIGTERM left the app hung in multiprocessing's exit join once the window closed.
    (The build's child is killed, not sent SIGTERM, since b8edb06; this guards that.)"""
    import os
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "stuck_and_deaf.py"
    path.write_text(STUCK_AND_DEAF)
    env = {**os.environ, "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path / "home"),
           "QT_QPA_PLATFORM": "offscreen", "AUTOGRAD_PLAYGROUND_NO_RESTORE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "playground", f"{path}:StuckAndDeaf"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    mark = tmp_path / "stuck_and_deaf.py.forward"
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), proc.communicate(timeout=30)
        proc.send_signal(signal.SIGTERM)  # closes the window as its close button does
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_each_kind_of_work_says_when_it_runs_in_the_window(monkeypatch):
    """Build, check and landscape ask one place (jobs.isolated, with the session's policy)
    whether they run in a worker process; where a child cannot load the Function it says so
    (the landscape ran here silently)."""
    from customgrad.workers import processes
    from playground.workers import in_window, jobs

    said = []
    on, off = JobPolicy(isolate=True), JobPolicy(isolate=False)
    in_window.WATCH.said.connect(said.append)
    try:
        monkeypatch.setattr(processes, "portable", lambda target: False)
        assert not jobs.isolated(object(), jobs, on)  # (any function: named in the words)
        assert len(said) == 1 and "Isolation off" in said[0]
        monkeypatch.setattr(processes, "portable", lambda target: True)
        assert jobs.isolated(object(), jobs, on) and len(said) == 1
        assert not jobs.isolated(object(), jobs, off) and len(said) == 1
    finally:
        in_window.WATCH.said.disconnect(said.append)


@pytest.mark.parametrize("kind", ["function", "generator"])
def test_a_worker_whose_signals_are_gone_ends_quietly(qapp, capfd, kind):
    """A worker still running as the app ends emits into objects Python's exit destroyed:
    superqt's RuntimeError ('Signal source has been deleted') came out of QRunnable::run as
    a traceback on the terminal of an app closed cleanly (CI, SIGINT while preparing)."""
    import threading

    import shiboken6
    from PySide6.QtCore import QThreadPool

    from playground.workers import jobs

    go = threading.Event()

    def work():
        go.wait(10)
        raise ValueError("stopped")  # as a cancelled build raises Cancelled

    def steps():
        go.wait(10)
        yield 1

    worker = jobs.create_worker(work if kind == "function" else steps, _start_thread=False,
                                _ignore_errors=True)
    worker.start()
    shiboken6.delete(worker.signals)  # as the interpreter's exit does
    go.set()
    assert QThreadPool.globalInstance().waitForDone(10_000)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "deleted" not in err, err
