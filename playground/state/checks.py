"""The session's checks: one Jacobian comparison at a time (at the start, or at a point the
run reached), its progress and report sent on through the session's signals; what an earlier
one still sends is dropped by its serial number. The first-order report comes first
(``jacobianReady``, its second order said to be computing), the same with its second order
after it (``secondOrderReady``)."""

from __future__ import annotations

import dataclasses
import os

from PySide6.QtCore import QTimer

from customgrad.checking.jacobian.report import COMPUTING
from customgrad.errors import Cancelled
from playground.state.loop import disconnect_all
from playground.state.owner import Owner
from playground.support.discard import discard
from playground.workers.jobs import JacobianJob

#: how the status bar's word for a running check begins ("Checking at the start…")
CHECKING = "Checking at "


class Checks:
    """Jacobian jobs for the session's Problem; they speak through the session's signals
    (``jacobianStarted``, ``jacobianProgress``, ``jacobianReady``, ``secondOrderReady``,
    ``jacobianFailed``, ``errorRaised``)."""

    def __init__(self, session: Owner) -> None:
        self.session = session
        self.job: JacobianJob | None = None
        #: the number of the latest comparison: what an earlier one still sends is dropped (a
        #: signal queued before it was disconnected is still delivered)
        self._serial = 0
        #: the latest comparison's first-order report, once shown (its second order follows)
        self._first = None

    def start(self, args) -> None:
        """Compare the Jacobians at ``args``: None for the Problem's own inputs (the start),
        else the point the run reached (at the session's step)."""
        self.cancel()
        session = self.session
        s = session.settings
        options = {"eps": s.eps, "atol": s.atol, "rtol": s.rtol, "nondet_tol": s.nondet_tol,
                   "memory_cap": s.memory_cap, "differentiate": dict(s.differentiate)}
        where = "the start" if args is None else f"step {session.step}"
        session.jacobianStarted.emit(f"{CHECKING}{where}…")  # short: beside the progress bar
        problem = session.problem
        assert problem is not None, "a check needs a built Problem"
        self._serial += 1
        self._first = None
        serial = self._serial
        self.job = JacobianJob(problem, args, options,
                               lambda progress: self._on_progress(serial, progress),
                               lambda report: self._on_report(serial, problem, report),
                               lambda exc: self._on_error(serial, exc),
                               policy=session.policy, pixels=session.view_pixels,
                               second=session.second_order_asked,
                               on_first=lambda report: self._on_first(serial, problem, report),
                               on_running_at=lambda at: self._on_running_at(serial, at))

    def _on_running_at(self, serial: int, at: tuple[str, int, str, float]) -> None:
        """The comparison has said nothing for a while: where its worker is (an endless
        loop in backward showed "Checking at the start… 0%" for minutes, no line)."""
        if serial != self._serial:
            return
        file, line, function, seconds = at
        # where first: at 150 % beside the progress bar the banner's line keeps a few words
        self.session.jacobianRunningAt.emit(
            f"At {os.path.basename(file)}:{line} ({function}) for {seconds:.0f} s — still "
            "checking: Esc or Cancel stops it.")

    def cancel_by_user(self) -> None:
        """The user's Cancel: the comparison stops, and its worker process is ended a second
        later if it has not."""
        job = self.job
        if job is not None and not job.done:
            job.cancel()
            QTimer.singleShot(1000, lambda: job.cancel(force=True))

    def cancel(self) -> None:
        """Drop the running comparison (out of date): nothing it sends arrives (what it
        sent before, still queued, is dropped by its serial number)."""
        self._serial += 1
        self._first = None
        job = self.job
        if job is not None and not job.done:
            disconnect_all(job.worker.returned, job.worker.errored, job.bridge.progress,
                           job.bridge.first)
            job.cancel()
        self.job = None

    def _on_progress(self, serial: int, progress) -> None:
        if serial == self._serial:
            self.session.jacobianProgress.emit(progress)
        elif getattr(progress, "painted", None) is not None:
            progress.painted.set()  # its worker stops anyway; it need not wait for a view

    def _current(self, serial: int, problem) -> bool:
        return serial == self._serial and problem is self.session.problem

    def _on_first(self, serial: int, problem, report) -> None:
        """The first-order verdict, shown while its second order is computed."""
        if self._current(serial, problem):
            self._first = report
            self.session.jacobianReady.emit(
                dataclasses.replace(report, second_order_reason=COMPUTING))

    def _on_report(self, serial: int, problem, report) -> None:
        if not self._current(serial, problem):
            discard(report)  # out of date (up to 100 MB): freed off the GUI thread
        elif self._first is None:
            self.session.jacobianReady.emit(report)
        else:
            self._first = None
            self.session.secondOrderReady.emit(report)

    def _on_error(self, serial: int, exc: Exception) -> None:
        if serial != self._serial:
            return
        first, self._first = self._first, None
        if first is not None:  # the second order's: the first's verdict stands
            said = "cancelled" if isinstance(exc, Cancelled) else str(exc)
            self.session.secondOrderReady.emit(dataclasses.replace(
                first, second_order_reason=f"not computed: {said}"))
            if not isinstance(exc, Cancelled):
                self.session.errorRaised.emit(exc)
            return
        if isinstance(exc, Cancelled):  # where it was, where it had run on (an endless loop)
            self.session.jacobianFailed.emit(f"cancelled{exc.where()}")
            return
        self.session.jacobianFailed.emit(str(exc))
        self.session.errorRaised.emit(exc)
