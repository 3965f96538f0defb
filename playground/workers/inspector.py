"""The inspector's worker: :func:`customgrad.checking.inspector.inspect_call` off the GUI thread,
one
call at a time, in a worker process when the problem is given (a crash there spares the
window); a call still running after ``timeout`` seconds (user code stuck in a loop, or in C)
is stopped."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from shiboken6 import isValid

from customgrad.errors import Cancelled
from customgrad.workers.processes import ProblemRef
from playground.workers.jobs import create_worker, in_child_or_here, interrupt_thread, isolated
from playground.workers.policy import DEFAULT, JobPolicy

if TYPE_CHECKING:
    from customgrad.checking.inspector import Inspection


class InspectorRunner(QObject):
    """Runs :func:`inspect_call` off the GUI thread, one at a time; a call still running
    after ``timeout`` seconds (user code stuck in a loop) is interrupted."""

    started = Signal()
    finished = Signal(object)  # Inspection
    failed = Signal(object)  # exception

    def __init__(self, timeout: float = 10.0, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.timeout = timeout
        self._serial = 0
        self._running: dict[int, dict] = {}
        self.worker = None

    @property
    def busy(self) -> bool:
        return any(not job["done"] for job in self._running.values())

    def run(self, function: type, args: list, seed: int = 0, problem=None,
            policy: JobPolicy = DEFAULT) -> None:
        """Inspect ``function`` at ``args``; given the ``problem`` it belongs to (and a child
        can load its Function again, and ``policy`` isolates), in a worker process."""
        self.cancel()
        self._serial += 1
        serial = self._serial
        job = {"thread": None, "done": False, "timed_out": False, "stop": False}
        timer = threading.Timer(self.timeout, self._stop, args=(job,))
        timer.daemon = True
        job["timer"] = timer
        self._running[serial] = job
        if problem is not None and isolated(problem.target, function, policy):
            job["isolated"] = True
            worker = create_worker(self._work_isolated, job, ProblemRef.of(problem), function,
                                   list(args), seed, _start_thread=False, _ignore_errors=True)
        else:
            worker = create_worker(self._work, job, function, list(args), seed,
                                   _start_thread=False, _ignore_errors=True)
        worker.returned.connect(lambda result: self._returned(serial, result))
        worker.errored.connect(lambda exc: self._errored(serial, exc))
        self.worker = worker
        self.started.emit()
        if not job.get("isolated"):
            timer.start()  # (a worker process's starts once the process runs)
        worker.start()

    @staticmethod
    def _work(job: dict, function: type, args: list, seed: int) -> Inspection:
        from customgrad.checking.inspector import inspect_call

        job["thread"] = threading.get_ident()
        try:
            return inspect_call(function, args, seed=seed)
        finally:
            job["done"] = True
            job["timer"].cancel()

    @staticmethod
    def _work_isolated(job: dict, ref: ProblemRef, function: type, args: list,
                       seed: int) -> Inspection:
        from customgrad.checking.inspector import inspect_call
        from customgrad.workers import isolation
        from playground.workers import child_jobs, warm_worker

        job["thread"] = threading.get_ident()
        # stopped by ending the child, never by interrupting here

        def here() -> Inspection:
            job["isolated"] = False
            _start_timer(job)
            return inspect_call(function, args, seed=seed)

        try:
            return in_child_or_here(
                lambda: isolation.call(child_jobs.inspect, ref, args, seed,
                                       should_stop=lambda: job["stop"], name="inspector",
                                       on_started=lambda: _start_timer(job),
                                       nice=warm_worker.nice()),
                here, function)
        finally:
            job["done"] = True
            job["timer"].cancel()

    @staticmethod
    def _stop(job: dict, timed_out: bool = True) -> None:
        job["stop"] = True  # a worker process ends at once
        if not job["done"] and job["thread"] is not None:
            job["timed_out"] = job["timed_out"] or timed_out
            if not job.get("isolated"):
                interrupt_thread(job["thread"])

    def cancel(self) -> None:
        """Forget the running call (its result is dropped) and interrupt its user code."""
        for job in self._running.values():
            job["timer"].cancel()
            self._stop(job, timed_out=False)
        self._running.clear()

    def _returned(self, serial: int, result: Inspection) -> None:
        # the worker outlives a runner its window deleted: the result goes nowhere
        if self._running.pop(serial, None) is not None and isValid(self):
            self.finished.emit(result)

    def _errored(self, serial: int, exc: BaseException) -> None:
        job = self._running.pop(serial, None)
        if job is None or not isValid(self):
            return
        if isinstance(exc, Cancelled) and job["timed_out"]:
            exc = Cancelled(f"forward + backward took longer than {self.timeout:g} s and was "
                            "stopped (an endless loop?). Press Run again to retry.")
        self.failed.emit(exc)


def _start_timer(job: dict) -> None:
    """The inspection's timeout starts (once) when its user code is about to run."""
    if not job["done"] and not job.get("timing"):
        job["timing"] = True
        job["timer"].start()
