"""Off-GUI-thread work: building a problem, the descent loop and the Jacobian comparison.

Workers are superqt workers; they report through Qt signals only. The descent loop batches
step records and yields at most about 60 times a second, so views redraw at screen rate.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from dataclasses import dataclass, field

import torch
from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QTimer, Signal
from superqt.utils import create_worker

from customgrad.descent import Descent, StepRecord
from customgrad.errors import Cancelled
from customgrad.problem import Problem, build
from customgrad.settings import Settings
from playground.jacobian_view import ProgressPreparer, preview_step

FRAME_SECONDS = 1 / 30


def interrupt_thread(thread_id: int, exception: type[BaseException] = Cancelled) -> bool:
    """Raise ``exception`` (a class) in another thread, at its next Python bytecode.

    Works for pure-Python loops in user code; code stuck inside C (a long torch op) stops
    only when that op returns.
    """
    result = ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                                        ctypes.py_object(exception))
    return result == 1


#: Seconds a user module's top-level code may run before it is stopped.
IMPORT_TIMEOUT = 10.0


class TopLevelTooSlow(Exception):
    """Raised inside a user module whose top-level code ran longer than IMPORT_TIMEOUT."""

    def __init__(self, *args):
        super().__init__(*args or (f"its top-level code was still running after "
                                   f"{IMPORT_TIMEOUT:g} s (an endless loop?) and was stopped",))


def guarded_module_code(run, label: str):
    """:data:`customgrad.loader.run_module_code` for the app: a user module's top-level code
    runs on a helper thread while the window keeps painting (input waits); after
    ``IMPORT_TIMEOUT`` seconds it is stopped, and the error names the line it was on."""
    app = QCoreApplication.instance()
    if app is None or threading.current_thread() is not threading.main_thread():
        return run()
    box: dict = {}
    done = threading.Event()

    def work():
        box["thread"] = threading.get_ident()
        try:
            box["result"] = run()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        finally:
            done.set()
    threading.Thread(target=work, name=f"import {label}", daemon=True).start()
    if not done.wait(0.05):  # most modules: a few milliseconds, no event loop needed
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 0.001))  # a busy module yields the GIL sooner
        try:
            _wait_live(done, IMPORT_TIMEOUT)
            if not done.is_set():
                interrupt_thread(box["thread"], TopLevelTooSlow)
                _wait_live(done, 2.0)
        finally:
            sys.setswitchinterval(interval)
        if not done.is_set():  # the loader names the module: "Importing x failed with ..."
            raise TopLevelTooSlow(
                f"its top-level code was still running after {IMPORT_TIMEOUT:g} s and could "
                "not be stopped (it is blocked outside Python); it goes on in the background. "
                "Move long work out of the module's top level")
    if "error" in box:
        raise box["error"]
    return box["result"]


def _wait_live(done: threading.Event, seconds: float) -> None:
    """Run the event loop (painting, timers; not user input) until ``done`` or ``seconds``."""
    loop = QEventLoop()
    poll = QTimer(interval=10)
    poll.timeout.connect(lambda: done.is_set() and loop.quit())
    poll.start()
    QTimer.singleShot(round(seconds * 1000), loop.quit)
    if not done.is_set():
        loop.exec(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
    poll.stop()


@dataclass
class LoopControl:
    """Thread-safe knobs the GUI turns and the descent loop reads between steps."""

    running: bool = False
    pending: int = 0
    lr: float = 1.0
    rate: float = 0.0  # steps per second; 0 = as fast as possible
    max_steps: int = 0  # stop (pause) after this many steps in total; 0 = no limit
    check_every: int = 0
    explain: bool = False
    stop: bool = False
    want_snapshot: bool = False
    wake: threading.Event = field(default_factory=threading.Event)
    thread_id: int | None = None
    exited: bool = False
    in_step_since: float | None = None  # set while descent.step() (user code) runs

    def stuck_for(self) -> float:
        """Seconds the current step has been running (0 when not inside a step)."""
        since = self.in_step_since
        return 0.0 if since is None else time.perf_counter() - since

    def poke(self):
        self.wake.set()


@dataclass
class Batch:
    """What the loop yields: the new step records, and forward's args when a snapshot was due."""

    records: list[StepRecord]
    snapshot: list | None = None
    paused: bool = False


def _descent_loop(descent: Descent, ctrl: LoopControl):
    try:
        yield from _loop(descent, ctrl)
    finally:
        ctrl.exited = True


def _loop(descent: Descent, ctrl: LoopControl):
    ctrl.thread_id = threading.get_ident()
    next_due = time.perf_counter()
    while not ctrl.stop:
        active = ctrl.running or ctrl.pending > 0
        snapshot = None
        if ctrl.want_snapshot:
            ctrl.want_snapshot = False
            snapshot = descent.current_args()
        if not active:
            if snapshot is not None:
                yield Batch([], snapshot)
            ctrl.wake.wait(0.1)
            ctrl.wake.clear()
            continue
        records: list[StepRecord] = []
        frame_end = time.perf_counter() + FRAME_SECONDS
        paused = False
        while not ctrl.stop and (ctrl.running or ctrl.pending > 0):
            if ctrl.rate > 0:
                wait = next_due - time.perf_counter()
                if wait > 0:
                    if records:
                        break
                    ctrl.wake.wait(min(wait, 0.05))
                    ctrl.wake.clear()
                    continue
                next_due = max(next_due + 1 / ctrl.rate, time.perf_counter() - 0.1)
            if descent.lr != ctrl.lr:
                descent.lr = ctrl.lr
            descent.keep_detail = ctrl.explain
            ctrl.in_step_since = time.perf_counter()
            try:
                record = descent.step()
            finally:
                ctrl.in_step_since = None
            records.append(record)
            if ctrl.pending > 0:
                ctrl.pending -= 1
            if ctrl.check_every and descent.step_count % ctrl.check_every == 0:
                snapshot = descent.current_args()
            if ctrl.max_steps and descent.step_count >= ctrl.max_steps:
                ctrl.running, ctrl.pending, paused = False, 0, True
            if snapshot is not None or time.perf_counter() >= frame_end:
                break
        yield Batch(records, snapshot, paused)


def start_descent(problem: Problem, ctrl: LoopControl, on_batch, on_error, on_finished):
    """Start the loop worker for ``problem``; returns the superqt worker."""
    descent = problem.descent()
    worker = create_worker(_descent_loop, descent, ctrl, _start_thread=False,
                           _ignore_errors=True)
    worker.yielded.connect(on_batch)
    worker.errored.connect(on_error)
    worker.finished.connect(on_finished)
    worker.start()
    return worker


class ProgressBridge(QObject):
    """Carries progress callbacks from a worker thread to the GUI thread."""

    progress = Signal(object)


class JacobianJob:
    """One Jacobian comparison on a worker thread, cancellable."""

    def __init__(self, problem: Problem, args: list | None, options: dict, on_progress,
                 on_report, on_error):
        self.cancelled = False
        self.thread_id: int | None = None
        self.bridge = ProgressBridge()
        self.bridge.progress.connect(on_progress)
        self.worker = create_worker(self._run, problem, args, options, _start_thread=False,
                                    _ignore_errors=True)
        self.worker.returned.connect(on_report)
        self.worker.errored.connect(on_error)
        self.done = False
        self.worker.start()

    def _run(self, problem: Problem, args, options):
        self.thread_id = threading.get_ident()
        try:
            prepare = ProgressPreparer()  # previews made here, not on the GUI thread

            def progress(p):
                try:
                    self.bridge.progress.emit(prepare(p))
                except RuntimeError as exc:  # the window closed under us: stop quietly
                    self.cancelled = True
                    raise Cancelled("Jacobian comparison cancelled: the window closed.") \
                        from exc
            report = problem.compare(args, progress=progress,
                                     should_stop=lambda: self.cancelled, **options)
            # what the view reads whole (difference, mask, peaks, pooled overview): here,
            # not on the GUI thread
            report.prepare_display(preview_step(report.shape))
            return report
        finally:
            self.done = True

    def cancel(self, force: bool = False):
        """Ask the comparison to stop; ``force`` also interrupts user code stuck in a loop."""
        self.cancelled = True
        if force and self.thread_id is not None and not self.done:
            interrupt_thread(self.thread_id)


_warm = threading.Lock()
_warmed = False
_warmed_optim = False


def _build(settings: Settings, target) -> Problem:
    """build(), after warming torch's lazy imports once: two threads importing them for the
    first time at the same moment can collide inside torch (a half-imported sympy)."""
    global _warmed, _warmed_optim
    with _warm:
        if not _warmed:
            x = torch.ones(2, requires_grad=True)
            (x * 2).sum().backward()
            torch.vmap(torch.sin)(torch.ones(2, 2))
            _warmed = True
        if settings.optimizer != "sgd" and not _warmed_optim:
            # torch.optim's first optimizer imports torch._dynamo (and sympy): a second or
            # two, here rather than on the GUI thread when the run starts
            x = torch.ones(2, requires_grad=True)
            x.grad = torch.ones(2)
            torch.optim.SGD([x], lr=0.1, momentum=0.9).step()
            torch.optim.Adam([x], lr=0.1).step()
            _warmed_optim = True
    return build(settings, target)


def start_build(settings: Settings, target, on_problem, on_error):
    """Resolve the target, validate specs and draw inputs off the GUI thread."""
    worker = create_worker(_build, settings, target, _start_thread=False,
                           _ignore_errors=True)
    worker.returned.connect(on_problem)
    worker.errored.connect(on_error)
    worker.start()
    return worker
