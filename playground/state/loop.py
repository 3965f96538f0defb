"""The session's run: the gradient-descent loop on the built Problem, in a worker process
(on a thread where none can load the Function), steered by commands to its
:class:`~customgrad.workers.runner.LoopControl`; a loop stuck in user code is ended a second after
Pause, and the user told why."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from customgrad.errors import Cancelled
from customgrad.workers.loop_control import LoopControl, RunningAt
from customgrad.workers.processes import SetupFailed
from playground.state.owner import Owner
from playground.workers.jobs import start_descent

if TYPE_CHECKING:
    from customgrad.problems.problem import Problem
    from customgrad.training.descent import StepRecord
    from customgrad.workers.runner import Batch

STUCK_SECONDS = 1.0
#: how long a run's worker process may take to start and load the Function before Pause
#: stops it (a spawned one imports torch first; the module's top level runs there again)
LOAD_SECONDS = 60.0
#: what the user is told when Pause ended a loop that did not answer
UNSTUCK = {
    "stuck": "Your Function was stuck inside forward/backward, so the loop was stopped. Press "
             "Play to start the run over.",
    "slow to load": f"The run's worker process was still loading your Function after "
                    f"{LOAD_SECONDS:g} s (its module's top level?), so it was stopped. Press "
                    "Play to try again.",
}


def wait_or_interrupt(ctrl: LoopControl, done: Callable[[], bool], wait: float) -> None:
    """Wait up to ``wait`` seconds for ``done()``; then interrupt the loop if it started."""
    deadline = time.perf_counter() + wait
    while not done() and time.perf_counter() < deadline:
        time.sleep(0.005)
    if not done() and ctrl.started:
        ctrl.interrupt()


def disconnect_all(*signals) -> None:
    """Disconnect every slot of each signal (one with none, or deleted, is left alone)."""
    for signal in signals:
        try:
            signal.disconnect()
        except (RuntimeError, TypeError):
            pass


class Loop:
    """One run at a time of the session's Problem: its step, last loss and record, and its
    number. It speaks through the session's signals (``runReset``, ``batchReady``,
    ``runningChanged``, ``loopStarted``, ``runNotice``, ``notice``, ``errorRaised``) and
    hands each snapshot to the session's checks."""

    def __init__(self, session: Owner) -> None:
        self.session = session
        self.ctrl = LoopControl(lr=session.settings.lr)
        self.worker: object | None = None
        self.step = 0
        self.last_loss: float | None = None
        self.last_record: StepRecord | None = None
        self.run_index = 0
        self.explain = False
        #: a problem whose loop could not start in a process of its own runs on a thread
        self._thread_only: Problem | None = None
        #: "file.py:15 (backward)": where the running step's worker said it has run on
        self.stuck_at: str | None = None
        #: whether this run's first NaN or Inf loss has been said (and Play paused there)
        self._nonfinite_said = False

    @property
    def running(self) -> bool:
        return self.ctrl.running

    def new_run(self) -> None:
        self.step, self.last_loss, self.last_record = 0, None, None
        self.stuck_at, self._nonfinite_said = None, False
        self.run_index += 1
        s = self.session.settings
        self.session.runReset.emit(
            f"run {self.run_index}: seed {s.seed}, lr {s.lr:g}, {s.optimizer}")

    def _ensure_worker(self) -> bool:
        problem = self.session.problem
        if problem is None:
            return False
        if self.worker is None:
            s = self.session.settings
            self.ctrl = LoopControl(lr=s.lr, rate=self.ctrl.rate, max_steps=s.steps,
                                    check_every=s.check_every, explain=self.explain)
            # errors (the Function's forward raising, say) arrive through _on_error
            self.worker = start_descent(problem, self.ctrl, self._on_batch, self._on_error,
                                        self._on_finished,
                                        thread=problem is self._thread_only)
            self.session.loopStarted.emit()
        return True

    def _at_the_end(self) -> bool:
        """Whether the run has made its steps (the notice says so: not an error)."""
        steps = self.session.settings.steps
        if steps and self.step >= steps:
            self.session.runNotice.emit(
                f"Run finished at step {self.step} — Reset (R) or raise steps")
            return True
        return False

    # ---- commands ----------------------------------------------------------------------------
    def play(self) -> None:
        if self._at_the_end():
            self.session.runningChanged.emit(False)
            return
        if not self._ensure_worker():
            return
        self.ctrl.play()
        self.session.runningChanged.emit(True)

    def pause(self) -> None:
        """Pause between steps; a step stuck in user code is interrupted after a second."""
        self.ctrl.pause()
        # also when the loop stopped itself at its step limit
        self.session.runningChanged.emit(False)
        ctrl = self.ctrl
        QTimer.singleShot(int(STUCK_SECONDS * 1000), lambda: self._unstick(ctrl))

    def step_once(self) -> None:
        """Pause first, then one step, if the run has steps left."""
        self.pause()
        if not self._at_the_end() and self._ensure_worker():
            self.ctrl.step()

    def run_steps(self, count: int) -> None:
        """Queue ``count`` steps (used by --screenshot)."""
        if self._ensure_worker():
            self.ctrl.step(count)

    def snapshot(self) -> bool:
        """Ask a running loop for the point it stands at (its Batch brings it to the checks);
        False where no loop runs."""
        if self.worker is None:
            return False
        self.ctrl.snapshot()
        return True

    def set_explain(self, on: bool) -> None:
        """Keep before/gradient/after copies in each StepRecord (for the step explainer)."""
        self.explain = bool(on)
        self.ctrl.set_explain(self.explain)

    def stop(self, wait: float = 0.0) -> None:
        """Stop the loop worker. Without ``wait`` this never blocks the GUI: a step stuck in
        user code is interrupted a second later."""
        ctrl = self.ctrl
        was_running = ctrl.running
        ctrl.end()
        worker = self.worker
        if worker is not None:
            disconnect_all(worker.yielded, worker.errored,  # type: ignore[attr-defined]
                           worker.finished)  # type: ignore[attr-defined]
            if wait:
                wait_or_interrupt(ctrl, lambda: ctrl.exited or not ctrl.started, wait)
            else:  # a process still starting ends now (nothing to finish); a step, after
                self._unstick(ctrl)  # a second if it is stuck
                QTimer.singleShot(int(STUCK_SECONDS * 1000), lambda: self._unstick(ctrl))
        self.worker = None
        if was_running:
            self.session.runningChanged.emit(False)

    # ---- what the loop sends ---------------------------------------------------------------
    def _unstick(self, ctrl: LoopControl) -> None:
        outcome = ctrl.unstick(STUCK_SECONDS, LOAD_SECONDS)
        if outcome == "loading":  # Pause waits for the load, but not for ever: look again
            QTimer.singleShot(int(STUCK_SECONDS * 1000), lambda: self._unstick(ctrl))
        elif outcome == "stuck" and self.stuck_at is not None:
            self.session.notice.emit(UNSTUCK[outcome].replace(
                "stuck inside forward/backward", f"stuck at {self.stuck_at}"))
            self.stuck_at = None
        elif outcome:
            self.session.notice.emit(UNSTUCK[outcome])

    def _on_batch(self, batch: Batch | RunningAt) -> None:
        if isinstance(batch, RunningAt):  # a step running on in the user's code
            self._running_at(batch)
            return
        self.stuck_at = None
        last = batch.last if len(batch) else None
        if last is not None:
            self.last_record, self.step, self.last_loss = last, last.step + 1, last.loss
        self.session.batchReady.emit(batch)
        if last is not None and not self._nonfinite_said:
            self._pause_at_nonfinite(batch)
        if batch.paused:
            self.session.runningChanged.emit(False)
        if batch.snapshot is not None:
            self.session.checks.start(batch.snapshot)

    def _pause_at_nonfinite(self, batch: Batch) -> None:
        """Play pauses at the first NaN or Inf loss, as ``customgrad run`` stops there (it ran
        on to the step limit, each step NaN, the plot "99 NaN/Inf dropped", nothing said)."""
        import numpy as np

        finite = np.isfinite(batch.losses)
        if finite.all():
            return
        first = int(np.argmin(finite))
        self._nonfinite_said = True  # (once a run: every step after it is NaN too)
        running = self.ctrl.running and not batch.paused
        if running:
            self.pause()
        loss, step = float(batch.losses[first]), int(batch.steps[first]) + 1
        # (a fast run can have made every step in the batch that brings the first one)
        paused = ": Play paused there" if running else ""
        self.session.runNotice.emit(
            f"The loss is {loss} at step {step}{paused} (every step after it is {loss} too). "
            "C checks the Jacobian here, and the Inspector tab shows where a NaN or Inf "
            "first appears.")

    def _running_at(self, at: RunningAt) -> None:
        """Say where a step has run on (the run's notice, beside the loss plot) and keep it
        for the words of the stop that Pause makes."""
        self.stuck_at = f"{os.path.basename(at.file)}:{at.line} ({at.function})"
        self.session.runNotice.emit(
            f"Step {self.step + 1} at {self.stuck_at} for {at.seconds:.0f} s — an endless "
            "loop? Pause (Space) stops it.")

    def _on_error(self, exc: Exception) -> None:
        """The loop ended on an error, or was stopped because a step was stuck: the run cannot
        go on, so the next Play starts it over (the broken run stays as an overlay)."""
        from customgrad.function.shadow import description_of

        problem = self.session.problem
        if isinstance(exc, SetupFailed) and problem is not None \
                and description_of(problem.function) is None:  # (a shadow cannot run here)
            # the child could not load what this process did (a module found through a path
            # added since, say): the same run, on a thread, from where it stands
            old, self.worker = self.ctrl, None
            self._thread_only = problem
            if self._ensure_worker():
                self.ctrl.resume(old)
                return
        self.ctrl.running = False
        self.worker = None
        self.session.runningChanged.emit(False)
        if self.step > 0:
            self.new_run()
        if not isinstance(exc, Cancelled):
            self.session.errorRaised.emit(exc)

    def _on_finished(self) -> None:
        self.worker = None
