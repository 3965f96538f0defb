"""What an application steers the descent loop with (:class:`LoopControl`), and how it stops
a loop on a thread that does not answer (:func:`interrupt_thread`). The loop itself, on a
thread or in a process of its own: :mod:`customgrad.workers.runner`.

Only the standard library: no Qt here.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from customgrad.errors import Cancelled


@dataclass(frozen=True)
class RunningAt:
    """What :func:`~customgrad.workers.runner.remote_loop` yields, beside batches, where the
    child has sent nothing for :data:`~customgrad.workers.isolation.QUIET_SECONDS` while it
    had a step to take: the user's frame it is in (an endless loop in backward showed "step
    0, loss —" for as long as it ran, and Pause said "stuck" without a line)."""

    file: str
    line: int
    function: str
    seconds: float


class Remote(Protocol):
    """A loop in a child process, as its control sees it
    (:class:`customgrad.workers.runner.RemoteLoop`)."""

    started_at: float

    def send(self, message: dict) -> None: ...

    def kill(self) -> None: ...


def interrupt_thread(thread_id: int, exception: type[BaseException] = Cancelled) -> bool:
    """Raise ``exception`` (a class) in another thread, at its next Python bytecode.

    Works for pure-Python loops in user code; code stuck inside C (a long torch op) stops
    only when that op returns.
    """
    result = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                                        ctypes.py_object(exception))
    return result == 1


#: the knobs :meth:`LoopControl.configure` sets, with the type each is kept as
_KNOBS = {"lr": float, "rate": float, "max_steps": int, "check_every": int, "explain": bool}


@dataclass
class LoopControl:
    """The knobs an application turns and the loop reads between steps.

    An application gives commands (:meth:`play`, :meth:`pause`, :meth:`step`,
    :meth:`snapshot`, :meth:`set_lr`, :meth:`configure`, :meth:`end`): each changes the fields
    and sends them (:meth:`poke`): a loop on a thread wakes up, a loop in a child process is
    sent the new values (steps asked for and a snapshot travel once and are cleared here).
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
    remote: Remote | None = field(default=None, repr=False)
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

    # ---- the application's commands: each sends what it changed ------------------------------
    def play(self) -> None:
        self.running = True
        self.poke()

    def pause(self) -> None:
        self.running = False
        self.poke()

    def step(self, count: int = 1) -> None:
        """Make ``count`` steps more (while paused, or besides a running loop)."""
        self.pending += count
        self.poke()

    def snapshot(self) -> None:
        """Ask for the current point (a Batch with a ``snapshot``)."""
        self.want_snapshot = True
        self.poke()

    def set_lr(self, lr: float) -> None:
        self.configure(lr=lr)

    def set_rate(self, steps_per_second: float) -> None:
        """Steps per second; 0 = as fast as possible."""
        self.configure(rate=max(0.0, float(steps_per_second)))

    def set_explain(self, on: bool) -> None:
        """Keep before/gradient/after copies in each StepRecord (for a step explainer)."""
        self.configure(explain=bool(on))

    def configure(self, **knobs) -> None:
        """Set any of ``lr``, ``rate``, ``max_steps``, ``check_every``, ``explain`` and send
        them together."""
        for name, value in knobs.items():
            if name not in _KNOBS:
                raise AttributeError(f"LoopControl has no knob {name!r}")
            setattr(self, name, _KNOBS[name](value))
        self.poke()

    def end(self) -> None:
        """Stop the loop for good (it ends between steps: see :meth:`unstick`)."""
        self.running, self.stop, self.pending = False, True, 0
        self.poke()

    def resume(self, old: LoopControl) -> None:
        """Go on where ``old`` (a loop that ended before it took them) was asked to be:
        running or not, the steps and the snapshot it had not made."""
        self.running = old.running
        self.pending = old.pending + old.sent_steps
        self.want_snapshot = old.want_snapshot or old.sent_snapshot
        self.poke()

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
