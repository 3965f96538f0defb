"""The descent loop, steered by a :class:`LoopControl`: on a thread, or in a process of its own.

:func:`run_loop` steps a :class:`~customgrad.descent.Descent` while the control says so and
yields :class:`~customgrad.descent.Batch` es (about 30 a second). An application runs it either

- on a thread of its own process (:func:`thread_loop`): simple, but the loop and the
  application share one interpreter lock, so a busy window slows the loop and the loop makes
  the window stutter; or
- in a child process (:class:`RemoteLoop` and :func:`remote_loop`): the loop has a core to
  itself, the window keeps its own, and a Function stuck anywhere (even inside C) is stopped by
  ending the process. The child loads the same Function again (a file's text is sent along,
  so an edit made since changes nothing) and receives the problem's drawn tensors, so both
  sides work on identical numbers. The child comes from :mod:`customgrad.processes`' fork
  server.

Only the standard library and torch: no Qt here.
"""

from __future__ import annotations

import ctypes
import gc
import os
import pickle
import tempfile
import threading
import time
from dataclasses import dataclass, field

from customgrad import isolation, plain_data, processes
from customgrad.descent import Batch, Descent, StepRecord
from customgrad.errors import Cancelled
from customgrad.memory import resident_bytes
from customgrad.processes import (
    ProblemRef,
    SetupFailed,
    load_target,
)

#: a batch is sent at least this often while the loop runs (the window redraws at its rate)
FRAME_SECONDS = 1 / 30
#: how often the child process looks for new instructions while it runs
SYNC_SECONDS = 0.001


def interrupt_thread(thread_id: int, exception: type[BaseException] = Cancelled) -> bool:
    """Raise ``exception`` (a class) in another thread, at its next Python bytecode.

    Works for pure-Python loops in user code; code stuck inside C (a long torch op) stops
    only when that op returns.
    """
    result = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                                        ctypes.py_object(exception))
    return result == 1


@dataclass
class LoopControl:
    """The knobs an application turns and the loop reads between steps.

    Change fields, then call :meth:`poke`: a loop on a thread wakes up, a loop in a child
    process is sent the new values (steps asked for with ``pending`` and a ``want_snapshot``
    travel once and are cleared here).
    """

    running: bool = False
    pending: int = 0
    lr: float = 1.0
    rate: float = 0.0  # steps per second; 0 = as fast as possible
    max_steps: int = 0  # stop (pause) after this many steps in total; 0 = no limit
    check_every: int = 0
    explain: bool = False
    stop: bool = False
    want_snapshot: bool = False
    wake: threading.Event = field(default_factory=threading.Event, repr=False)
    thread_id: int | None = None
    exited: bool = False
    in_step_since: float | None = None  # set while descent.step() (user code) runs
    remote: RemoteLoop | None = field(default=None, repr=False)
    sent_steps: int = 0  # steps and snapshots sent to a child process in all
    sent_snapshot: bool = False
    seq: int = 0  # instructions sent to a child process ...
    acked: int = 0  # ... and how many it has taken
    unacked_since: float | None = None
    ready: bool = False  # a child process has loaded the Function
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def started(self) -> bool:
        return self.thread_id is not None or self.remote is not None

    def stuck_for(self) -> float:
        """Seconds the loop has not responded: inside one step (a thread), or since an
        instruction it has not taken yet (a process: it takes them between steps). A process
        that has not loaded the Function yet is starting, not stuck (a spawned one, where
        there is no fork server, imports torch first: seconds): see :meth:`loading_for`."""
        if self.remote is not None and not self.ready:
            return 0.0
        since = self.unacked_since if self.remote is not None else self.in_step_since
        return 0.0 if since is None else time.perf_counter() - since

    def poke(self) -> None:
        if self.remote is None:
            self.wake.set()
            return
        with self._lock:
            self.seq += 1
            message = {"seq": self.seq, "running": self.running, "lr": self.lr,
                       "rate": self.rate, "max_steps": self.max_steps,
                       "check_every": self.check_every, "explain": self.explain,
                       "stop": self.stop, "steps": self.pending,
                       "snapshot": self.want_snapshot}
            self.sent_steps += self.pending
            self.sent_snapshot = self.sent_snapshot or self.want_snapshot
            self.pending, self.want_snapshot = 0, False
            if self.unacked_since is None:
                self.unacked_since = time.perf_counter()
        self.remote.send(message)

    def acknowledge(self, seq: int) -> None:
        """The child process has taken instructions up to ``seq``."""
        with self._lock:
            self.acked = max(self.acked, seq)
            if self.acked >= self.seq:
                self.unacked_since = None

    def loading_for(self) -> float:
        """Seconds a child process has been starting and loading the Function (0 once it
        has, or on a thread)."""
        if self.remote is None or self.ready:
            return 0.0
        return time.perf_counter() - self.remote.started_at

    def unstick(self, stuck_seconds: float, load_seconds: float) -> str:
        """What Pause does a while after it, and says: a loop that has not answered an
        instruction for ``stuck_seconds`` is ended ("stuck"); one still starting is let load
        ("loading": ask again) unless it was told to stop (ended, nothing to lose) or has
        loaded for ``load_seconds`` ("slow to load", ended); else nothing ("")."""
        if not self.started or self.exited:
            return ""
        if self.loading_for() > 0:
            if not self.stop and self.loading_for() <= load_seconds:
                return "loading"
            self.interrupt()
            return "" if self.stop else "slow to load"
        if self.stuck_for() >= stuck_seconds * 0.9:
            self.interrupt()
            return "stuck"
        return ""

    def loaded(self) -> None:
        """The child process has loaded the Function: a wait for an answer starts now (a
        slow import is not a stuck step)."""
        with self._lock:
            self.ready = True
            if self.unacked_since is not None:
                self.unacked_since = time.perf_counter()

    def interrupt(self) -> None:
        """Stop a loop that does not respond: end its process, or raise in its thread."""
        if self.remote is not None:
            self.remote.kill()
        elif self.thread_id is not None:
            interrupt_thread(self.thread_id)

    # ---- the loop's side ------------------------------------------------------------------
    def sync(self, force: bool = False) -> None:
        """Take new instructions (a thread shares the fields: nothing to do)."""

    def wait(self, seconds: float) -> None:
        """Sleep until poked or ``seconds`` passed."""
        self.wake.wait(seconds)
        self.wake.clear()


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


def _child_main(conn, payload: bytes, fault_path: str, environment: dict | None = None) -> None:
    """The child process: load the Function, then loop as the parent's messages say."""
    _fault_file = isolation.prepare_child(conn, fault_path, environment)  # open for its life
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
    ``remote`` is this, and read what it reports with :func:`remote_loop`."""

    def __init__(self, problem):
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
        environment = processes.environment()
        self.process = context.Process(target=_child_main, daemon=True,
                                       args=(child, payload, self.fault_path, environment),
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
        crash = isolation.describe_death(code, isolation.read_fault(self.fault_path),
                                         self.label)
        return isolation.ProcessCrashed(
            f"In the descent loop: {crash} The window is fine: press Play to start the run "
            "over.", signal_name=crash.signal_name, exit_code=crash.exit_code,
            stack=crash.stack, file=crash.file, line=crash.line)


def remote_loop(remote: RemoteLoop, ctrl: LoopControl):
    """Yield the child's batches (the parent's view of :func:`run_loop`); raise the error it
    reports; end when it has stopped."""
    ctrl.remote = remote
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
                continue
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
