"""The app's state: one Settings object, the current Problem, and the workers acting on it.

Views never hold state of their own: they call the methods here and redraw from the signals.
:class:`Session` is the façade they use; its parts do the work: the target and its build
(:mod:`playground.state.target`), the run (:mod:`playground.state.loop`) and the checks
(:mod:`playground.state.checks`). What one part's news means for another (a new Problem: a
new run and a check) is decided here.
"""

from __future__ import annotations

import copy
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from customgrad.errors import CustomGradError
from customgrad.problems.settings import Settings
from playground.state.checks import Checks
from playground.state.loop import LOAD_SECONDS, STUCK_SECONDS, UNSTUCK, Loop
from playground.state.target import Resolver, TargetBuilder, carried_over
from playground.support.preview import PREVIEW_PIXELS
from playground.workers import torch_import
from playground.workers.jobs import JacobianJob, guarded_module_code, warm_loop_process
from playground.workers.policy import DEFAULT, JobPolicy

if TYPE_CHECKING:
    from customgrad.problems.problem import Problem
    from customgrad.targets.loader import RunCode, Target
    from customgrad.training.descent import StepRecord
    from customgrad.workers.runner import LoopControl

__all__ = ["LOAD_SECONDS", "STUCK_SECONDS", "UNSTUCK", "Session", "carried_over"]

#: settings whose change needs new inputs (and so a new run)
_REBUILD = {"target", "shapes", "constants", "init", "trained", "given", "dtype", "device",
            "seed", "loss", "optimizer", "memory_cap"}
#: settings that make the problem only through its inputs' specs: a change of them that
#: leaves the specs as they were is no change (no new run)
_SPECS = {"shapes", "constants", "init", "trained"}
#: settings the loop reads as it runs (sent to it, no new run), by their LoopControl names
_KNOBS = {"lr": "lr", "check_every": "check_every", "steps": "max_steps"}


def _resolve(spec: str, run_code: RunCode) -> Target:
    """:func:`customgrad.targets.loader.resolve`, the loader (torch) imported at the first
    target, after the window's first paint."""
    from customgrad.targets.loader import resolve

    return resolve(spec, run_code=run_code)


class Session(QObject):
    """Owns the settings and orchestrates build -> Jacobian -> descent."""

    targetChanged = Signal(object)  # Target
    #: a TARGET chosen while torch is on its way (it opens once torch has arrived)
    targetPending = Signal(str)
    specsChanged = Signal(object)  # list[Spec] (for the form)
    problemReady = Signal(object)  # Problem
    runReset = Signal(str)  # a new run starts (label)
    batchReady = Signal(object)  # Batch
    runningChanged = Signal(bool)
    loopStarted = Signal()  # a new run's loop (its process starts, and loads the Function)
    jacobianStarted = Signal(str)
    jacobianProgress = Signal(object)
    jacobianReady = Signal(object)  # Report (its second order maybe still computing)
    secondOrderReady = Signal(object)  # the same Report with its second order, after it
    jacobianFailed = Signal(str)
    errorRaised = Signal(object)  # exception for the error banner
    errorCleared = Signal()
    settingsChanged = Signal(object)  # Settings
    busyChanged = Signal(bool)
    notice = Signal(str)  # something the user should know, not an error
    runNotice = Signal(str)  # the same about the run, true until a new run starts (runReset)

    def __init__(self, settings: Settings | None = None, parent: QObject | None = None, *,
                 held: bool = False, run_code: RunCode | None = None,
                 policy: JobPolicy = DEFAULT) -> None:
        """``held``: start as :meth:`hold` leaves it (builds and checks wait for
        :meth:`release`; the fork server, a process of its own, starts at once).
        ``run_code``: how a user module's top level runs where this process loads a target
        (:data:`customgrad.targets.loader.run_module_code`): the app's runs it in a worker process
        first, off the GUI thread, and stops it if endless.
        ``policy``: where the jobs run the user's code (:attr:`policy`)."""
        super().__init__(parent)
        self.settings = settings or Settings()
        #: where each job the session starts (the build, a check, the inspector, the
        #: landscape, a user module's import) runs the user's code: read as each starts, so a
        #: new policy (``dataclasses.replace``) holds from the next job on
        self.policy = policy
        self.run_code: RunCode = run_code or self._guarded_module_code
        #: the heatmaps' size on screen in device pixels (the view says it): each check's
        #: previews and overviews are made to fit it
        self.view_pixels = PREVIEW_PIXELS
        self.builder = TargetBuilder(self, partial(_resolve, run_code=self.run_code), held=held)
        self.loop = Loop(self)
        self.checks = Checks(self)
        #: the pane shows the second order: checks compute it however big
        self.second_order_asked = False
        # the fork server imports torch in a process of its own (the other core): at once,
        # since the first build and check already run in its children
        warm_loop_process(policy)

    def _guarded_module_code(self, run, label: str, origin: tuple | None = None):
        """:func:`~playground.workers.jobs.guarded_module_code` under the policy of the moment."""
        return guarded_module_code(run, label, origin, self.policy)

    # ---- what the views read ---------------------------------------------------------------
    @property
    def resolver(self) -> Resolver:
        """Turns a TARGET string into a Target (the app asks which Function of a file)."""
        return self.builder.resolver

    @resolver.setter
    def resolver(self, resolver: Resolver) -> None:
        self.builder.resolver = resolver

    @property
    def target(self) -> Target | None:
        return self.builder.target

    @property
    def problem(self) -> Problem | None:
        return self.builder.problem

    @property
    def busy(self) -> bool:
        """Whether the inputs are being prepared (a build runs or waits)."""
        return self.builder.busy

    @property
    def ctrl(self) -> LoopControl:
        return self.loop.ctrl

    @property
    def running(self) -> bool:
        return self.loop.running

    @property
    def step(self) -> int:
        return self.loop.step

    @property
    def last_loss(self) -> float | None:
        return self.loop.last_loss

    @property
    def last_record(self) -> StepRecord | None:
        return self.loop.last_record

    @property
    def run_index(self) -> int:
        return self.loop.run_index

    @property
    def job(self) -> JacobianJob | None:
        return self.checks.job

    @property
    def descent_worker(self) -> object | None:
        return self.loop.worker

    # ---- settings ---------------------------------------------------------------------------
    def set_target(self, spec: str | Target, carry_over: bool | None = None) -> None:
        """Choose a Function. Shapes, constants, init and trained flags are kept while they
        still name parameters of its forward (always for the same target, e.g. a reload);
        ``notice`` says which were reset. Chosen while the window's process still imports
        torch (after its first paint), it opens once torch has arrived, the window painting
        meanwhile (loading it needs torch)."""
        if not torch_import.arrived():
            torch_import.when_arrived(lambda: self.set_target(spec, carry_over))
            if isinstance(spec, str):
                self.targetPending.emit(spec)
            return
        if self.builder.choose(spec, carry_over):
            self._rebuild()

    def open(self, target: str | Target, settings: Settings) -> None:
        """Replace every setting at once and start over on ``target`` (a session file's
        TARGET, or playground.show's Target: its given tensors and constants kept)."""
        resolved = self.builder.resolved(target)
        if resolved is None:  # the Function that was open stays, with its settings
            return
        self.settings = copy.deepcopy(settings)
        self.settings.target = resolved.spec
        self.ctrl.lr = self.settings.lr  # (the next run's control starts from the settings)
        self.builder.target = None
        self.set_target(resolved, carry_over=True)

    def load_settings(self, settings: Settings) -> None:
        self.open(settings.target, settings)

    def update(self, **changes) -> None:
        """Change settings; a change of inputs restarts the run, a new lr does not, nor a
        field committed as the inputs are (a tensor's init left as its default, "normal",
        was stored as a change: leaving that field for the tolerance bar started a new run,
        trial #16)."""
        before = self._specs() if changes and set(changes) <= _SPECS else None
        for key, value in changes.items():
            if not hasattr(self.settings, key):
                raise AttributeError(key)
            setattr(self.settings, key, copy.deepcopy(value))
        knobs = {_KNOBS[key]: getattr(self.settings, key) for key in changes if key in _KNOBS}
        if knobs:
            self.ctrl.configure(**knobs)
        self.settingsChanged.emit(self.settings)
        if _REBUILD & set(changes):
            if before is None or self._specs() != before:
                self._rebuild()
        elif {"eps", "atol", "rtol", "nondet_tol", "differentiate"} & set(changes):
            self.check_now()

    def _specs(self) -> list | None:
        """The open Function's input specs for the settings now (None: none, or they cannot
        be derived: the change is then taken as one)."""
        from customgrad.problems.problem import specs_for

        if self.target is None:
            return None
        try:
            return specs_for(self.target, self.settings)
        except CustomGradError:
            return None

    def set_explain(self, on: bool) -> None:
        """Keep before/gradient/after copies in each StepRecord (for the step explainer)."""
        self.loop.set_explain(on)

    def set_rate(self, steps_per_second: float) -> None:
        self.ctrl.set_rate(steps_per_second)

    def set_view_pixels(self, pixels: int) -> None:
        """The heatmaps' size on screen (the next check's previews fit it)."""
        self.view_pixels = int(pixels)

    # ---- the build --------------------------------------------------------------------------
    def hold(self) -> None:
        """Start no work (a build waits) until :meth:`release`. The app holds its session
        until its window has painted, so that the first paint shares the machine with no
        build or Jacobian thread (and waits for no import of superqt)."""
        self.builder.hold()

    def release(self) -> None:
        """Start the work that waited while held."""
        self.builder.release()

    def _rebuild(self) -> None:
        self.loop.stop()
        self.checks.cancel()
        self.builder.rebuild()

    def problem_built(self, problem: Problem) -> None:
        """The builder's news: a new Problem, so a new run, checked at its start."""
        self.errorCleared.emit()
        self.loop.new_run()
        self.problemReady.emit(problem)
        self.check_now()

    # ---- the run ----------------------------------------------------------------------------
    def play(self) -> None:
        if self._inputs_ready("Play"):
            self.loop.play()

    def pause(self) -> None:
        """Pause between steps; a step stuck in user code is interrupted after a second."""
        self.loop.pause()

    def step_once(self) -> None:
        """Pause first, then one step, if the run has steps left."""
        if self._inputs_ready("Step"):
            self.loop.step_once()

    def _inputs_ready(self, what: str) -> bool:
        """Whether there are inputs to run on. Where there are none, ``notice`` says why:
        still being prepared (a forward that does not return), or never prepared (that was
        cancelled, or forward raised): then they are prepared again, as Reset does. Play and
        Step did nothing and said nothing there."""
        if self.problem is not None:
            return True
        if self.busy:
            self.notice.emit(f"{what} waits: the inputs are still being prepared (forward is "
                             "running; Cancel stops a forward that does not return).")
        elif not torch_import.arrived():
            self.notice.emit(f"{what} waits: the Function opens once torch has loaded.")
        elif self.target is not None:
            self.notice.emit(f"{what}: there are no inputs yet (preparing them was cancelled "
                             "or failed): preparing them again.")
            self._rebuild()
        else:
            self.notice.emit(f"{what}: open a Function first.")
        return False

    def run_steps(self, count: int) -> None:
        """Queue ``count`` steps (used by --screenshot)."""
        self.loop.run_steps(count)

    def reset(self) -> None:
        """Same seed, same run: back to step 0 with freshly drawn inputs."""
        self.loop.stop()
        if self.problem is not None:
            self.loop.new_run()
            self.check_now()
        else:
            self._rebuild()

    # ---- the checks -------------------------------------------------------------------------
    def check_now(self) -> None:
        """Compare the Jacobians at the current point (the trained values if a run started)."""
        if self.problem is None:
            return
        if not self.loop.snapshot():  # a running loop sends its point, then it is checked
            self.checks.start(None)

    def cancel_check(self) -> None:
        self.builder.cancel()  # preparing the inputs (a forward stuck inside C, say)
        self.checks.cancel_by_user()

    # ---- shutdown ---------------------------------------------------------------------------
    def shutdown(self, wait: float = 1.0) -> None:
        """Stop everything; user code stuck in a loop is interrupted after ``wait`` seconds."""
        job = self.checks.job
        self.builder.cancel()  # a build still running is out of date: its child ends
        self.checks.cancel()
        self.loop.stop(wait)
        if job is not None:
            job.finish(wait)
        self.policy.worker.end()  # the worker process kept for this Function's checks
