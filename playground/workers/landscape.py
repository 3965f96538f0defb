"""The loss landscape's worker: :func:`customgrad.landscape.compute` in a worker process (a
crash or a hang there spares the window; the one kept for the Function's jobs where it is
idle: :mod:`customgrad.workers.warm`), one at a time; each partial grid comes back as it
is made, with its colours and contour lines traced on this worker thread (not where the
window paints). A Function no child can load again is computed on a thread here instead."""

from __future__ import annotations

from pyqtgraph.functions import isocurve
from PySide6.QtCore import QCoreApplication, QObject, Signal
from shiboken6 import isValid

from customgrad.errors import Cancelled
from customgrad.workers.processes import ProblemRef
from playground.support.contours import prepare
from playground.workers.jobs import create_worker, in_child_or_here, isolated
from playground.workers.policy import DEFAULT, JobPolicy


class LandscapeRunner(QObject):
    """Runs one landscape at a time; :meth:`run` cancels the one before (its results are
    dropped). ``serial`` numbers each run, and comes back with what it sends; a landscape
    with a grid comes with its :class:`~playground.support.contours.Contours` (else None)."""

    progress = Signal(int, object, object)  # serial, a partial Landscape, Contours
    finished = Signal(int, object, object)  # serial, Landscape, Contours or None
    failed = Signal(int, object)  # serial, exception

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.serial = 0
        self._job: dict | None = None
        app = QCoreApplication.instance()
        if app is not None:  # the application's end stops it (and then waits for the
            app.aboutToQuit.connect(self.cancel)  # thread pool: app.end_workers)

    def run(self, problem, steps: int, lrs: list, options: dict,
            policy: JobPolicy = DEFAULT) -> int:
        """Compute the landscape of ``problem``'s run after ``steps`` steps (``options``:
        :func:`~customgrad.landscape.compute`'s mode, size, plane, box; in a worker process
        where ``policy`` isolates); its serial."""
        self.cancel()
        self.serial += 1
        serial = self.serial
        job = {"stop": False}
        self._job = job
        worker = create_worker(_work, job, problem, int(steps), list(lrs), dict(options),
                               lambda partial: self._relay(serial, partial), policy,
                               _start_thread=False, _ignore_errors=True)
        worker.returned.connect(lambda drawn: self._returned(serial, drawn))
        worker.errored.connect(lambda exc: self._errored(serial, exc))
        worker.start()
        return serial

    def cancel(self) -> None:
        """Stop the running landscape (its worker process ends at once)."""
        if self._job is not None:
            self._job["stop"] = True
        self._job = None

    def _relay(self, serial: int, partial) -> None:
        if serial == self.serial and isValid(self):
            self.progress.emit(serial, *drawn(partial))

    def _returned(self, serial: int, drawn) -> None:
        if serial == self.serial and isValid(self):
            self._job = None
            self.finished.emit(serial, *drawn)

    def _errored(self, serial: int, exc: BaseException) -> None:
        if serial == self.serial and isValid(self):
            self._job = None
            self.failed.emit(serial, exc)


def drawn(landscape) -> tuple:
    """``landscape`` and its contours (None without a grid), traced on this thread."""
    if landscape.losses is None:
        return landscape, None
    return landscape, prepare(landscape.losses, landscape.alphas, landscape.betas, isocurve)


def _work(job: dict, problem, steps: int, lrs: list, options: dict, relay,
          policy: JobPolicy) -> tuple:
    """On a worker thread: the landscape in a worker process, or here where none can load
    the Function; with its contours."""
    from customgrad.landscape import compute
    from playground.workers import child_jobs

    stop = lambda: job["stop"]  # noqa: E731

    def on_message(message) -> None:
        kind, payload = message
        if kind == "landscape":
            relay(payload)

    def here():
        return compute(problem, steps, lrs, **options, progress=relay, should_stop=stop)

    try:
        if not isolated(problem.target, problem.function, policy):  # (the window says so)
            return drawn(here())
        request = child_jobs.LandscapeJob(ProblemRef.of(problem), steps, lrs, options)
        # in the child kept for the Function's jobs where it is idle (no fork and no load of
        # the Function for each path update during Play), else in a fresh one
        return drawn(in_child_or_here(
            lambda: policy.worker.call(child_jobs.landscape, request, on_message=on_message,
                                       should_stop=stop, name="landscape",
                                       warm_key=child_jobs.warm_key_for(problem.target)),
            here, problem.function))
    except Cancelled:
        raise Cancelled("the landscape was cancelled.") from None


__all__ = ["LandscapeRunner"]
