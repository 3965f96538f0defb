"""The app's state: one Settings object, the current Problem, and the workers acting on it.

Views never hold state of their own: they call the methods here and redraw from the signals.

:class:`Session` is over the 400-line limit of a class (tests/test_sizes.py lists it): it does
five jobs (the target, the build, the run, the checks, shut-down) that issue 31 splits apart.
"""

from __future__ import annotations

import copy
import time

from PySide6.QtCore import QObject, QTimer, Signal

from customgrad import kept, loader
from customgrad.errors import Cancelled, CustomGradError
from customgrad.inputs import forward_parameters
from customgrad.loader import Target, resolve
from customgrad.problem import Problem, specs_for
from customgrad.processes import SetupFailed
from customgrad.runner import Batch, LoopControl
from customgrad.settings import Settings
from customgrad.shadow import description_of
from playground.support.discard import discard
from playground.workers.building import BuildStop, start_build
from playground.workers.jobs import (
    JacobianJob,
    guarded_module_code,
    shadowing,
    start_descent,
    warm_loop_process,
)

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
#: settings whose change needs new inputs (and so a new run)
_REBUILD = {"target", "shapes", "constants", "init", "trained", "given", "dtype", "device",
            "seed", "loss", "optimizer", "memory_cap"}


def carried_over(old: Settings, spec: str, params: set[str],
                 keep: bool) -> tuple[Settings, set[str]]:
    """``old`` for the target ``spec`` whose forward takes ``params``: its shapes, constants,
    init and trained flags kept (when ``keep``) for the parameters that remain; and the names
    dropped."""
    new = copy.deepcopy(old)
    new.target = spec
    dropped: set[str] = set()
    for table in ("shapes", "constants", "init", "trained", "given", "differentiate"):
        values = getattr(old, table) if keep else {}
        setattr(new, table, {k: v for k, v in values.items() if k in params})
        dropped |= set(values) - params
    return new, dropped


def _wait_or_interrupt(ctrl: LoopControl, done, wait: float) -> None:
    """Wait up to ``wait`` seconds for ``done()``; then interrupt the loop if it started."""
    deadline = time.perf_counter() + wait
    while not done() and time.perf_counter() < deadline:
        time.sleep(0.005)
    if not done() and ctrl.started:
        ctrl.interrupt()


def _disconnect(*signals) -> None:
    for signal in signals:
        try:
            signal.disconnect()
        except (RuntimeError, TypeError):
            pass


def _resolved(session, spec):
    """``spec`` as a Target; None where it does not load (``errorRaised`` says why)."""
    try:
        with shadowing():  # the window holds shadows of a user module's Functions
            return spec if isinstance(spec, Target) else session.resolver(spec)
    except CustomGradError as exc:
        session.errorRaised.emit(exc)
        return None


class Session(QObject):
    """Owns the settings and orchestrates build -> Jacobian -> descent."""

    targetChanged = Signal(object)  # Target
    specsChanged = Signal(object)  # list[Spec] (for the form)
    problemReady = Signal(object)  # Problem
    runReset = Signal(str)  # a new run starts (label)
    batchReady = Signal(object)  # Batch
    runningChanged = Signal(bool)
    loopStarted = Signal()  # a new run's loop (its process starts, and loads the Function)
    jacobianStarted = Signal(str)
    jacobianProgress = Signal(object)
    jacobianReady = Signal(object)  # Report
    jacobianFailed = Signal(str)
    errorRaised = Signal(object)  # exception for the error banner
    errorCleared = Signal()
    settingsChanged = Signal(object)  # Settings
    busyChanged = Signal(bool)
    notice = Signal(str)  # something the user should know, not an error
    runNotice = Signal(str)  # the same about the run, true until a new run starts (runReset)

    def __init__(self, settings: Settings | None = None, parent=None, *, held: bool = False):
        """``held``: start as :meth:`hold` leaves it (builds and checks wait for
        :meth:`release`; the fork server, a process of its own, starts at once)."""
        super().__init__(parent)
        self.settings = settings or Settings()
        self.target: Target | None = None
        #: turns a TARGET string into a Target (the app asks which Function of a file)
        self.resolver = resolve
        # user modules run their top level off the GUI thread, and are stopped if endless
        loader.run_module_code = guarded_module_code
        self.problem: Problem | None = None
        self.ctrl = LoopControl(lr=self.settings.lr)
        self.descent_worker = None
        self.job: JacobianJob | None = None
        #: the number of the latest comparison: what an earlier one still sends is dropped (a
        #: signal queued before it was disconnected is still delivered)
        self._job_serial = 0
        #: the pane shows the second order: checks compute it however big (ask_second_order)
        self.second_order_asked = False
        self._build_worker = None
        self._build_stop = BuildStop()
        self._build_serial = 0
        self._held = held
        self._build_waiting = False  # a build asked for while held
        self._busy = False
        self.step = 0
        self.last_loss: float | None = None
        self.last_record = None
        self.run_index = 0
        self._explain = False
        #: a problem whose loop could not start in a process of its own runs on a thread
        self._thread_only: Problem | None = None
        # the fork server imports torch in a process of its own (the other core): at once,
        # since the first build and check already run in its children
        warm_loop_process()

    # ---- settings ---------------------------------------------------------------------------
    def set_target(self, spec: str | Target, keep: bool | None = None) -> None:
        """Choose a Function. Shapes, constants, init and trained flags are kept while they
        still name parameters of its forward (always for the same target, e.g. a reload);
        ``notice`` says which were reset."""
        target = _resolved(self, spec)
        if target is None:
            return
        if keep is None:
            keep = self.target is not None and self.target.spec == target.spec
        try:
            params = {p.name for p in forward_parameters(target.function)}
        except CustomGradError as exc:
            self.errorRaised.emit(exc)
            return
        new, dropped = carried_over(self.settings, target.spec, params, keep)
        if dropped:
            self.notice.emit(f"Reset to defaults: {', '.join(sorted(dropped))} (no longer "
                             f"parameters of {target.function.__name__}.forward).")
        self.target = target
        self.settings = new
        self.targetChanged.emit(target)
        self.settingsChanged.emit(new)
        self._rebuild()

    def open(self, target: str | Target, settings: Settings) -> None:
        """Replace every setting at once and start over on ``target`` (a session file's
        TARGET, or playground.show's Target: its given tensors and constants kept)."""
        resolved = _resolved(self, target)
        if resolved is None:  # the Function that was open stays, with its settings
            return
        self.settings = copy.deepcopy(settings)
        self.settings.target = resolved.spec
        self.ctrl.lr = self.settings.lr
        self.target = None
        self.set_target(resolved, keep=True)

    def load_settings(self, settings: Settings) -> None:
        self.open(settings.target, settings)

    def update(self, **changes) -> None:
        """Change settings; a change of inputs restarts the run, a new lr does not."""
        for key, value in changes.items():
            if not hasattr(self.settings, key):
                raise AttributeError(key)
            setattr(self.settings, key, copy.deepcopy(value))
        if "lr" in changes:
            self.ctrl.lr = float(self.settings.lr)
        if "check_every" in changes:
            self.ctrl.check_every = int(self.settings.check_every)
        if "steps" in changes:
            self.ctrl.max_steps = int(self.settings.steps)
        if {"lr", "check_every", "steps"} & set(changes):
            self.ctrl.poke()
        self.settingsChanged.emit(self.settings)
        if _REBUILD & set(changes):
            self._rebuild()
        elif {"eps", "atol", "rtol", "differentiate"} & set(changes):
            self.check_now()

    def set_explain(self, on: bool) -> None:
        """Keep before/gradient/after copies in each StepRecord (for the step explainer)."""
        self._explain = bool(on)
        self.ctrl.explain = self._explain
        self.ctrl.poke()

    def set_rate(self, steps_per_second: float) -> None:
        self.ctrl.rate = max(0.0, float(steps_per_second))
        self.ctrl.poke()

    # ---- build ------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        self._stop_descent()
        self._cancel_job()
        self._build_waiting = False
        self._build_serial += 1  # a build still running is out of date, whatever follows
        self.problem = None
        if self.target is None:
            self._set_busy(False)
            return
        try:
            self.specsChanged.emit(specs_for(self.target, self.settings))
        except CustomGradError as exc:
            self._set_busy(False)
            self.errorRaised.emit(exc)
            return
        self._set_busy(True)
        if self._held:
            self._build_waiting = True
            return
        self._start_build()

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

    def _start_build(self) -> None:
        serial = self._build_serial
        self._build_stop = BuildStop()
        self._build_worker = start_build(
            copy.deepcopy(self.settings), self.target,
            lambda problem: self._built(serial, problem),
            lambda exc: self._build_failed(serial, exc), self._build_stop)

    def hold(self) -> None:
        """Start no work (a build waits) until :meth:`release`. The app holds its session
        until its window has painted, so that the first paint shares the machine with no
        build or Jacobian thread (and waits for no import of superqt)."""
        self._held = True

    def release(self) -> None:
        """Start the work that waited while held."""
        self._held = False
        if self._build_waiting:
            self._build_waiting = False
            if self.target is not None:
                self._start_build()
            else:
                self._set_busy(False)

    def _built(self, serial: int, problem: Problem) -> None:
        if serial != self._build_serial:
            return
        self._set_busy(False)
        self.problem = problem
        self.errorCleared.emit()
        self._new_run()
        self.problemReady.emit(problem)
        self.check_now()

    def _build_failed(self, serial: int, exc: Exception) -> None:
        if serial != self._build_serial:
            return
        self._set_busy(False)
        self.jacobianFailed.emit(str(exc))
        if not isinstance(exc, Cancelled):  # the user's Cancel: no error
            self.errorRaised.emit(exc)

    # ---- descent ----------------------------------------------------------------------------
    def _new_run(self) -> None:
        self.step, self.last_loss, self.last_record = 0, None, None
        self.run_index += 1
        s = self.settings
        self.runReset.emit(f"run {self.run_index}: seed {s.seed}, lr {s.lr:g}, {s.optimizer}")

    def _ensure_worker(self) -> bool:
        if self.problem is None:
            return False
        if self.descent_worker is None:
            self.ctrl = LoopControl(lr=self.settings.lr, rate=self.ctrl.rate,
                                    max_steps=self.settings.steps,
                                    check_every=self.settings.check_every,
                                    explain=self._explain)
            # errors (the Function's forward raising, say) arrive through _on_descent_error
            self.descent_worker = start_descent(self.problem, self.ctrl, self._on_batch,
                                                self._on_descent_error,
                                                self._on_descent_finished,
                                                thread=self.problem is self._thread_only)
            self.loopStarted.emit()
        return True

    @property
    def running(self) -> bool:
        return self.ctrl.running

    def _at_the_end(self) -> bool:
        """Whether the run has made its steps (the notice says so: not an error)."""
        if self.settings.steps and self.step >= self.settings.steps:
            self.runNotice.emit(f"Run finished at step {self.step} — Reset (R) or raise steps")
            return True
        return False

    def play(self) -> None:
        if self._at_the_end():
            self.runningChanged.emit(False)
            return
        if not self._ensure_worker():
            return
        self.ctrl.running = True
        self.ctrl.poke()
        self.runningChanged.emit(True)

    def pause(self) -> None:
        """Pause between steps; a step stuck in user code is interrupted after a second."""
        self.ctrl.running = False
        self.ctrl.poke()
        self.runningChanged.emit(False)  # also when the loop stopped itself at its step limit
        ctrl = self.ctrl
        QTimer.singleShot(STUCK_SECONDS * 1000, lambda: self._unstick(ctrl))

    def _unstick(self, ctrl: LoopControl) -> None:
        outcome = ctrl.unstick(STUCK_SECONDS, LOAD_SECONDS)
        if outcome == "loading":  # Pause waits for the load, but not for ever: look again
            QTimer.singleShot(STUCK_SECONDS * 1000, lambda: self._unstick(ctrl))
        elif outcome:
            self.notice.emit(UNSTUCK[outcome])

    def step_once(self) -> None:
        """Pause first, then one step, if the run has steps left."""
        self.pause()
        if not self._at_the_end() and self._ensure_worker():
            self.ctrl.pending += 1
            self.ctrl.poke()

    def run_steps(self, count: int) -> None:
        """Queue ``count`` steps (used by --screenshot)."""
        if self._ensure_worker():
            self.ctrl.pending += count
            self.ctrl.poke()

    def reset(self) -> None:
        """Same seed, same run: back to step 0 with freshly drawn inputs."""
        self._stop_descent()
        if self.problem is not None:
            self._new_run()
            self.check_now()
        else:
            self._rebuild()

    def _on_batch(self, batch: Batch) -> None:
        if len(batch):
            self.last_record = batch.last
            self.step = self.last_record.step + 1
            self.last_loss = self.last_record.loss
        self.batchReady.emit(batch)
        if batch.paused:
            self.runningChanged.emit(False)
        if batch.snapshot is not None:
            self._start_job(batch.snapshot)

    def _on_descent_error(self, exc: Exception) -> None:
        """The loop ended on an error, or was stopped because a step was stuck: the run cannot
        go on, so the next Play starts it over (the broken run stays as an overlay)."""
        if isinstance(exc, SetupFailed) and self.problem is not None \
                and description_of(self.problem.function) is None:  # (a shadow cannot run here)
            # the child could not load what this process did (a module found through a path
            # added since, say): the same run, on a thread, from where it stands
            old, self.descent_worker = self.ctrl, None
            self._thread_only = self.problem
            if self._ensure_worker():
                self.ctrl.running = old.running
                self.ctrl.pending = old.pending + old.sent_steps
                self.ctrl.want_snapshot = old.want_snapshot or old.sent_snapshot
                self.ctrl.poke()
                return
        self.ctrl.running = False
        self.descent_worker = None
        self.runningChanged.emit(False)
        if self.step > 0:
            self._new_run()
        if not isinstance(exc, Cancelled):
            self.errorRaised.emit(exc)

    def _on_descent_finished(self) -> None:
        self.descent_worker = None

    def _stop_descent(self, wait: float = 0.0) -> None:
        """Stop the loop worker. Without ``wait`` this never blocks the GUI: a step stuck in
        user code is interrupted a second later."""
        was_running = self.ctrl.running
        ctrl = self.ctrl
        ctrl.running, ctrl.stop, ctrl.pending = False, True, 0
        ctrl.poke()
        worker = self.descent_worker
        if worker is not None:
            _disconnect(worker.yielded, worker.errored, worker.finished)
            if wait:
                _wait_or_interrupt(ctrl, lambda: ctrl.exited or not ctrl.started, wait)
            else:  # a process still starting ends now (nothing to finish); a step, after
                self._unstick(ctrl)  # a second if it is stuck
                QTimer.singleShot(STUCK_SECONDS * 1000, lambda: self._unstick(ctrl))
        self.descent_worker = None
        if was_running:
            self.runningChanged.emit(False)

    # ---- Jacobian ---------------------------------------------------------------------------
    def check_now(self) -> None:
        """Compare the Jacobians at the current point (the trained values if a run started)."""
        if self.problem is None:
            return
        if self.descent_worker is not None:
            self.ctrl.want_snapshot = True
            self.ctrl.poke()
        else:
            self._start_job(None)

    def _start_job(self, args) -> None:
        self._cancel_job()
        s = self.settings
        options = {"eps": s.eps, "atol": s.atol, "rtol": s.rtol, "memory_cap": s.memory_cap,
                   "differentiate": dict(s.differentiate)}
        where = "the start" if args is None else f"step {self.step}"
        self.jacobianStarted.emit(f"Checking at {where}…")  # short: beside the progress bar
        problem = self.problem
        self._job_serial += 1
        serial = self._job_serial
        self.job = JacobianJob(problem, args, options,
                               lambda progress: self._on_progress(serial, progress),
                               lambda report: self._on_report(serial, problem, report),
                               lambda exc: self._on_job_error(serial, exc),
                               second=self.second_order_asked)

    def _on_progress(self, serial: int, progress) -> None:
        if serial == self._job_serial:
            self.jacobianProgress.emit(progress)
        elif getattr(progress, "painted", None) is not None:
            progress.painted.set()  # its worker stops anyway; it need not wait for a view

    def _on_report(self, serial: int, problem, report) -> None:
        if serial == self._job_serial and problem is self.problem:
            self.jacobianReady.emit(report)
        else:
            discard(report)  # out of date (up to 100 MB): freed off the GUI thread

    def _on_job_error(self, serial: int, exc: Exception) -> None:
        if serial != self._job_serial:
            return
        if isinstance(exc, Cancelled):
            self.jacobianFailed.emit("cancelled")
            return
        self.jacobianFailed.emit(str(exc))
        self.errorRaised.emit(exc)

    def cancel_check(self) -> None:
        self._build_stop.cancel()  # preparing the inputs (a forward stuck inside C, say)
        if self.job is not None and not self.job.done:
            self.job.cancel()
            job = self.job
            QTimer.singleShot(1000, lambda: job.cancel(force=True))

    def _cancel_job(self) -> None:
        self._build_stop.cancel()  # a build still running is out of date: its child ends
        if self.job is not None and not self.job.done:
            _disconnect(self.job.worker.returned, self.job.worker.errored,
                        self.job.bridge.progress)
            self.job.cancel()
        self.job = None

    # ---- shutdown ---------------------------------------------------------------------------
    def shutdown(self, wait: float = 1.0) -> None:
        """Stop everything; user code stuck in a loop is interrupted after ``wait`` seconds."""
        job = self.job
        self._cancel_job()
        self._stop_descent(wait)
        if job is not None:
            job.finish(wait)
        kept.end()  # the worker process kept for this Function's checks
