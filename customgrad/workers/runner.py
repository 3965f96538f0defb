"""The descent loop, steered by a :class:`~customgrad.workers.loop_control.LoopControl`: on a
thread,
or in a process of its own.

:func:`run_loop` steps a :class:`~customgrad.training.descent.Descent` while the control says so and
yields :class:`~customgrad.training.descent.Batch` es (about 30 a second). An application runs it
either

- on a thread of its own process (:func:`thread_loop`): simple, but the loop and the
  application share one interpreter lock, so a busy window slows the loop and the loop makes
  the window stutter; or
- in a child process (:class:`RemoteLoop` and :func:`remote_loop`): the loop has a core to
  itself, the window keeps its own, and a Function stuck anywhere (even inside C) is stopped by
  ending the process. The child loads the same Function again (a file's text is sent along,
  so an edit made since changes nothing) and receives the problem's drawn tensors, so both
  sides work on identical numbers. The child comes from :mod:`customgrad.workers.processes`' fork
  server.

Only the standard library and torch: no Qt here.
"""

from __future__ import annotations

import gc
import os
import pickle
import tempfile
import threading
import time

from customgrad.errors import Cancelled
from customgrad.training.descent import Batch, Descent, StepRecord
from customgrad.workers import isolation, plain_data, processes
from customgrad.workers.loop_control import (  # noqa: F401 (the app imports them from here)
    LoopControl,
    RunningAt,
    interrupt_thread,
)
from customgrad.workers.memory import resident_bytes
from customgrad.workers.processes import ProblemRef, SetupFailed, load_target

#: a batch is sent at least this often while the loop runs (the window redraws at its rate)
FRAME_SECONDS = 1 / 30
#: how often the child process looks for new instructions while it runs
SYNC_SECONDS = 0.001


def run_loop(descent: Descent, ctrl: LoopControl):
    """Step ``descent`` while ``ctrl`` says so; yield a Batch per frame, per snapshot and when
    the step limit pauses the run. Ends when ``ctrl.stop`` is set."""
    next_due = time.perf_counter()
    while True:
        ctrl.sync()
        if ctrl.stop:
            return
        active = ctrl.running or ctrl.pending > 0
        snapshot = None
        if ctrl.want_snapshot:
            ctrl.want_snapshot = False
            snapshot = descent.current_args()
        if not active:
            if snapshot is not None:
                yield Batch([], snapshot)
            ctrl.wait(0.1)
            continue
        records: list[StepRecord] = []
        append, step, clock = records.append, descent.step, time.perf_counter
        frame_end = clock() + FRAME_SECONDS
        paused = False
        # one step after another, with as little around each as will do: this loop is
        # benchmarked against the seed's bare loop (tests/benchmarks/bench.py)
        while True:
            ctrl.sync()
            if ctrl.stop or not (ctrl.running or ctrl.pending > 0):
                break
            if ctrl.rate > 0:
                wait = next_due - clock()
                if wait > 0:
                    if records:
                        break
                    ctrl.wait(min(wait, 0.05))
                    continue
                next_due = max(next_due + 1 / ctrl.rate, clock() - 0.1)
            if ctrl.lr != descent.lr:
                descent.lr = ctrl.lr
            descent.keep_detail = ctrl.explain
            ctrl.in_step_since = clock()
            try:
                append(step())
            finally:
                ctrl.in_step_since = None
            if ctrl.pending > 0:
                ctrl.pending -= 1
            if ctrl.check_every and descent.step_count % ctrl.check_every == 0:
                snapshot = descent.current_args()
            if ctrl.max_steps and descent.step_count >= ctrl.max_steps:
                ctrl.running, ctrl.pending, paused = False, 0, True
            if snapshot is not None or clock() >= frame_end:
                break
        yield Batch(records, snapshot, paused)


def thread_loop(descent: Descent, ctrl: LoopControl):
    """:func:`run_loop` on the calling thread (which ``ctrl.interrupt()`` can stop)."""
    ctrl.thread_id = threading.get_ident()
    try:
        yield from run_loop(descent, ctrl)
    finally:
        ctrl.exited = True


# ---- a loop in a child process -------------------------------------------------------------
class _ParentGone(Exception):
    pass


class _ChildControl(LoopControl):
    """The child's copy of the controls, updated from the parent's messages."""

    def __init__(self, conn):
        super().__init__()
        self.conn = conn
        self._next_sync = 0.0

    def sync(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now < self._next_sync:
            return
        self._next_sync = now + SYNC_SECONDS
        try:
            while self.conn.poll():
                self._take(pickle.loads(self.conn.recv_bytes()))
        except (EOFError, OSError):
            raise _ParentGone() from None

    def wait(self, seconds: float) -> None:
        try:
            self.conn.poll(seconds)
        except (EOFError, OSError):
            raise _ParentGone() from None
        self.sync(force=True)

    def _take(self, message: dict) -> None:
        for key in ("running", "lr", "rate", "max_steps", "check_every", "explain", "stop"):
            setattr(self, key, message[key])
        self.pending += message["steps"]
        self.want_snapshot = self.want_snapshot or message["snapshot"]
        self.acked = message["seq"]
        _send(self.conn, ("ack", self.acked))


def _send(conn, message) -> None:
    try:
        conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
    except (BrokenPipeError, ConnectionResetError, EOFError):
        raise _ParentGone() from None


def _child_main(conn, payload: bytes, fault_path: str, environment: dict | None = None,
                nice: int = 0) -> None:
    """The child process: load the Function, then loop as the parent's messages say."""
    _fault_file = isolation.prepare_child(conn, fault_path, environment, nice)  # for its life
    ctrl = _ChildControl(conn)
    try:
        try:
            job = pickle.loads(payload)
            target = load_target(job.spec, job.code)
        except BaseException as exc:  # reported to the parent, which can use a thread
            _send(conn, ("setup", plain_data.portable_error(exc)))
            return
        _send(conn, ("ready", os.getpid()))  # from here on, a wait is the Function's
        descent = job.descent(target)  # (its first forward, as a step's)
        _collect_between_frames()
        ctrl.sync(force=True)
        for batch in run_loop(descent, ctrl):
            _send(conn, ("batch", batch, ctrl.acked))
            batch = None
            gc.collect()
        _send(conn, ("done",))
    except _ParentGone:
        pass
    except BaseException as exc:  # reported to the parent, which shows it
        try:
            _send(conn, ("error", plain_data.portable_error(exc)))
        except _ParentGone:
            pass
    finally:
        conn.close()


def _collect_between_frames() -> None:
    """The child's garbage collection, off the steps' path: a frame's records (and their
    gradients) live until the batch is sent, so automatic collections would keep walking
    them mid-step, and a full one would walk all of torch (about 90 ms). What is loaded now
    is frozen (never walked again) and the loop collects after each batch instead."""
    gc.freeze()
    gc.disable()


_USER_MODULE = b"customgrad_user_"


class RemoteLoop:
    """A child process running ``problem``'s descent; steer it with a LoopControl whose
    ``remote`` is this, and read what it reports with :func:`remote_loop`. ``nice``: how far
    below this process the child runs (:func:`customgrad.workers.isolation.prepare_child`: a
    window's loop, not a script's)."""

    def __init__(self, problem, nice: int = 0):
        context = processes.context()
        job = ProblemRef.of(problem)
        payload = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        if _USER_MODULE in payload:
            # an object of the user's module (a default value, say) is pickled by reference
            # to a module the child cannot import by that name
            raise pickle.PicklingError("the problem refers to objects of a user module")
        self.conn, child = context.Pipe(duplex=True)
        self.killed = False
        self.started_at = time.perf_counter()
        self._send_lock = threading.Lock()
        #: the child is stopped past this many bytes (0: no limit), as a check's child is
        self.memory_limit = isolation.default_memory_limit()
        self.label = problem.function.__name__
        fd, self.fault_path = tempfile.mkstemp(prefix="customgrad-fault-", suffix=".txt")
        os.close(fd)
        #: where the stacks asked for while it ran end in its fault file (a crash's follows)
        self.watch = isolation.Watch(started=True)
        environment = processes.environment()
        self.process = context.Process(target=_child_main, daemon=True,
                                       args=(child, payload, self.fault_path, environment,
                                             nice),
                                       name=f"descent {problem.target.spec}")
        try:
            with processes.child_start():
                self.process.start()
        except BaseException as exc:
            self.conn.close()
            isolation.read_fault(self.fault_path, remove=True)
            if isinstance(exc, Exception):
                raise processes.start_failure(exc) from None
            raise
        finally:
            child.close()

    def send(self, message: dict) -> None:
        with self._send_lock:
            try:
                self.conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                pass  # the child has ended: the reader reports how

    def receive(self, timeout: float):
        """The child's next message, or None after ``timeout`` seconds; EOFError when the
        child has ended."""
        if not self.conn.poll(timeout):
            return None
        return plain_data.plain_loads(self.conn.recv_bytes())

    def kill(self) -> None:
        self.killed = True
        if self.process.is_alive():
            self.process.kill()

    def close(self, wait: float = 1.0) -> None:
        """Let the child end (it does once told to stop), ending it after ``wait`` seconds."""
        self.process.join(wait)
        if self.process.is_alive():
            self.kill()
            self.process.join(1.0)
        processes.end_group(self.process)
        self.conn.close()
        isolation.read_fault(self.fault_path, remove=True)

    def where_now(self) -> tuple[str, int, str] | None:
        """The user's frame the child is in now (its stack, asked for: it runs on), or None
        where none of the user's is on it (waiting for the next instruction)."""
        stack = isolation.stack_before_stop(self.process, self.fault_path)
        self.watch.asked_to = isolation.fault_size(self.fault_path)
        return isolation.user_frame(isolation.first_thread(stack)) if stack.strip() else None

    def over_memory(self) -> BaseException | None:
        """The error for a child past its memory limit (it is ended), else None."""
        used = resident_bytes(self.process.pid) if self.memory_limit else None
        if used is None or used <= self.memory_limit:
            return None
        self.kill()
        return isolation.MemoryLimitExceeded(
            f"{self.label} used more than {isolation.gib(self.memory_limit)} of memory in the "
            "descent loop and was stopped before the system ran out. Use smaller shapes, or "
            "raise the memory limit; press Play to start the run over.", self.memory_limit)

    def ended(self) -> BaseException:
        """Why the child ended without saying so: Cancelled if it was stopped on purpose."""
        self.process.join(1.0)
        code = self.process.exitcode
        if self.killed:
            return Cancelled("The descent loop was stopped.")
        crash = isolation.describe_death(code, isolation.crash_text(self.fault_path,
                                                                    self.watch), self.label)
        return isolation.ProcessCrashed(
            f"In the descent loop: {crash} The window is fine: press Play to start the run "
            "over.", signal_name=crash.signal_name, exit_code=crash.exit_code,
            stack=crash.stack, file=crash.file, line=crash.line)


def remote_loop(remote: RemoteLoop, ctrl: LoopControl):
    """Yield the child's batches (the parent's view of :func:`run_loop`), and a
    :class:`RunningAt` where a step has run on in the user's code for a while; raise the
    error it reports; end when it has stopped."""
    ctrl.remote = remote
    heard, asked = time.monotonic(), 0.0
    try:
        while True:
            too_big = remote.over_memory()
            if too_big is not None:
                raise too_big
            try:
                message = remote.receive(0.1)
            except (EOFError, OSError):
                if ctrl.stop:
                    return
                raise remote.ended() from None
            if message is None:
                now = time.monotonic()
                if now - max(heard, asked) >= isolation.QUIET_SECONDS and ctrl.ready \
                        and not ctrl.stop and (ctrl.running or ctrl.unacked_since is not None):
                    asked = now  # (and again after as long)
                    at = remote.where_now()
                    if at is not None:
                        yield RunningAt(*at, seconds=now - heard)
                continue
            heard = time.monotonic()
            kind = message[0]
            if kind == "ack":
                ctrl.acknowledge(message[1])
            elif kind == "batch":
                batch, acked = message[1], message[2]
                ctrl.acknowledge(acked)
                if batch.paused and acked >= ctrl.seq:
                    ctrl.running = False  # the step limit; unless told to go on since
                yield batch
            elif kind == "error":
                raise message[1]
            elif kind == "setup":
                raise SetupFailed(f"the loop's process could not load the problem: "
                                  f"{message[1]}", message[1])
            elif kind == "ready":
                ctrl.loaded()
            elif kind == "done":
                return
    finally:
        ctrl.exited = True
        remote.close(wait=0.5)
