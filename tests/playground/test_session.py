"""The session façade and its parts (target and build, loop, checks), without a window."""

from __future__ import annotations

import os
import textwrap
import time

import pytest

pytest.importorskip("pytestqt")

from customgrad.targets import loader
from playground.state.session import Session

TIMEOUT = 20_000

TRIPLED = textwrap.dedent("""
    import torch

    class Tripled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: "3"):
            return 3 * x

        @staticmethod
        def backward(ctx, grad):
            return 3 * grad
    """)


def test_a_session_changes_no_global_and_loads_with_the_runner_it_was_given(qtbot, tmp_path):
    """How a user module's top level runs is the session's ``run_code``; making a session
    no longer replaces customgrad.targets.loader.run_module_code for the whole process."""
    before = loader.run_module_code
    ran = []

    def run_code(run, label, origin):
        ran.append((label, origin[0]))
        return run()

    path = tmp_path / "tripled.py"
    path.write_text(TRIPLED)
    session = Session(run_code=run_code)
    try:
        assert loader.run_module_code is before
        with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT) as ready:
            session.set_target(f"{path}:Tripled")
        assert ready.args[0].passed
        assert ran == [("tripled.py", "file")]
    finally:
        session.shutdown(wait=0.5)
    assert loader.run_module_code is before


class _Sent:
    """A loop process's end of the pipe: what the session's commands sent it."""

    def __init__(self):
        self.messages = []
        self.started_at = 0.0

    def send(self, message):
        self.messages.append(message)


def test_a_knob_the_loop_reads_is_sent_to_it_in_one_message_and_rebuilds_nothing(qtbot):
    session = Session()
    try:
        session.ctrl.remote = sent = _Sent()
        rebuilt = []
        session.busyChanged.connect(rebuilt.append)
        session.specsChanged.connect(rebuilt.append)
        session.update(lr=0.5, steps=40, check_every=5)
        (message,) = sent.messages
        assert (message["lr"], message["max_steps"], message["check_every"]) == (0.5, 40, 5)
        session.set_rate(-3)  # no negative rate: as fast as possible
        session.set_explain(True)
        assert [(m["rate"], m["explain"]) for m in sent.messages[1:]] == [(0.0, False),
                                                                          (0.0, True)]
        assert rebuilt == [] and not session.busy
    finally:
        session.ctrl.remote = None
        session.shutdown(wait=0.5)


def test_every_job_the_session_starts_follows_the_sessions_policy(qtbot, window, tmp_path,
                                                                  monkeypatch):
    """Whether the user's code runs in a worker process was a module global (jobs.ISOLATE,
    jobs.HOLD_CHILD) that tests and the bench flipped for the whole process, read by some
    jobs at import and by others when they ran. It is the session's policy, handed to each
    job it starts: the import of the user's module, the build, the check, the inspector
    and the landscape."""
    from playground.workers import inspector, jobs, landscape
    from playground.workers.policy import JobPolicy

    policy = JobPolicy(isolate=False, hold_child=False)  # (unlike any default)
    seen: dict[str, list] = {}

    def recording(where, real):
        def record(*args, **kwargs):
            seen.setdefault(where, []).append(kwargs.get("policy", args[-1] if args else None))
            return real(*args, **kwargs)
        return record

    monkeypatch.setattr(jobs, "isolated", recording("build or check", jobs.isolated))
    monkeypatch.setattr(inspector, "isolated", recording("inspector", inspector.isolated))
    monkeypatch.setattr(landscape, "isolated", recording("landscape", landscape.isolated))
    monkeypatch.setattr(jobs, "shadows_suffice", recording("import", jobs.shadows_suffice))
    path = tmp_path / "tripled.py"
    path.write_text(TRIPLED)
    session = window.session
    session.policy = policy
    with qtbot.waitSignal(window.byof.runner.finished, timeout=TIMEOUT):
        session.set_target(f"{path}:Tripled")  # built, checked, then inspected
    assert session.job is not None and not session.job.isolated
    model = window.landscape.model
    with qtbot.waitSignal(model.ready, timeout=TIMEOUT):
        model.set_active(True)
    assert set(seen) == {"import", "build or check", "inspector", "landscape"}
    assert all(p is policy for got in seen.values() for p in got), seen


def test_the_session_s_jobs_use_the_warm_worker_its_policy_names(qtbot, window, tmp_path):
    """The worker process kept warm between a Function's jobs was the app's module global
    (warm_worker.WORKER), reached by each job itself: a test or the bench that wanted
    another changed that one for the whole process. The policy names it: the build, the
    check and the landscape all go to the session's, and closing the session ends it."""
    from customgrad.workers.warm import WarmWorker
    from playground.workers.policy import JobPolicy

    class Recording(WarmWorker):
        def call(self, job, *args, **kwargs):
            asked.append(kwargs["name"].split()[0])
            return super().call(job, *args, **kwargs)

    asked: list[str] = []
    own = Recording(keep_seconds=60.0)
    path = tmp_path / "tripled.py"
    path.write_text(TRIPLED)
    then = time.time() - 60  # written well before it is loaded (a fresh file is not kept)
    os.utime(path, (then, then))
    session = window.session
    session.policy = JobPolicy(worker=own)
    try:
        with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT):
            session.set_target(f"{path}:Tripled")  # built, then checked, in one kept child
        assert session.job is not None and session.job.isolated
        pid = own.process.pid
        model = window.landscape.model
        with qtbot.waitSignal(model.ready, timeout=TIMEOUT):
            model.set_active(True)
        assert own.process.pid == pid  # one child, kept between them
        assert asked == ["build", "Jacobian", "landscape"]
    finally:
        session.shutdown(wait=0.5)
    assert own.process is None  # the session ended its worker's child


#: forward sleeps while its flag file says so (an endless forward the user cancels)
STALLING = textwrap.dedent("""
    import pathlib
    import time

    import torch

    FLAG = pathlib.Path(__file__).with_name("stall")

    class Stalling(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: "3"):
            while FLAG.exists():
                time.sleep(0.05)
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad
    """)


def test_play_after_a_cancelled_preparation_prepares_the_inputs_again_and_says_so(qtbot,
                                                                                tmp_path):
    """A forward that never returned was cancelled: no inputs. Play (or Step) did nothing
    and said nothing; it prepares them again, and says that it does."""
    (tmp_path / "stall").write_text("")
    path = tmp_path / "stalling.py"
    path.write_text(STALLING)
    session = Session()
    notices, built = [], []
    session.notice.connect(notices.append)
    session.problemReady.connect(built.append)
    try:
        session.set_target(f"{path}:Stalling")
        qtbot.waitUntil(lambda: session.busy, timeout=TIMEOUT)
        session.play()  # still preparing: Play says it waits
        assert "still being prepared" in notices[-1]
        session.cancel_check()
        qtbot.waitUntil(lambda: not session.busy, timeout=TIMEOUT)
        assert session.problem is None and not built
        (tmp_path / "stall").unlink()
        with qtbot.waitSignal(session.problemReady, timeout=TIMEOUT):
            session.step_once()
        assert "preparing them again" in notices[-1]
        assert len(built) == 1
    finally:
        session.shutdown(wait=0.5)
