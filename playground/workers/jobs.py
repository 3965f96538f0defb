"""Off-GUI-thread work: building a problem, the descent loop and the Jacobian comparison.

Workers are superqt workers; they report through Qt signals only. The descent loop
(:mod:`customgrad.workers.runner`) runs in a child process where it can, so that it and the window
each have a core and neither waits for the other's interpreter lock; it batches step records
about 30 times a second, so views redraw at screen rate.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import sys
import threading
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QThreadPool, QTimer, Signal

from customgrad import config
from customgrad.defaults import format_shape
from customgrad.errors import Cancelled, TargetError
from customgrad.workers import processes
from customgrad.workers.loop_control import interrupt_thread
from playground.support import preview
from playground.support.preview import ProgressPreparer
from playground.workers import WORKER_MODULES, in_window, warm_worker
from playground.workers.policy import DEFAULT, JobPolicy

if TYPE_CHECKING:  # the engine's (torch) are imported where a job runs, after the first paint
    from customgrad.function.shadow import Shadowed
    from customgrad.problems.problem import Problem
    from customgrad.workers.runner import LoopControl

#: worker threads the window may run at once. They mostly wait on worker processes (the
#: loop's, a check's, the inspector's, a build's); Qt's default, one per core, let a stuck
#: inspector and the loop hold a new check in the queue (on 2 cores, until the inspector's
#: timeout).
POOL_THREADS = 8


def create_worker(func, *args, **kwargs):
    """superqt's ``create_worker``, imported at the first use: importing superqt builds all of
    its widgets (about 60 ms), and the app paints its window before any work starts. Its
    pool (Qt's global one) runs :data:`POOL_THREADS` at once at least. The worker says
    nothing once the objects its signals come from are gone (see :func:`_quiet_classes`)."""
    import inspect

    from superqt.utils import create_worker as create

    pool = QThreadPool.globalInstance()
    if pool.maxThreadCount() < POOL_THREADS:
        pool.setMaxThreadCount(POOL_THREADS)
    generator, function = _quiet_classes()
    kind = generator if inspect.isgeneratorfunction(func) else function
    return create(func, *args, _worker_class=kind, **kwargs)


_QUIET: tuple = ()


def _quiet_classes() -> tuple:
    """superqt's worker classes, each ending quietly where a signal's source was deleted: a
    worker still running as the application ends (stopped, it had not yet noticed when
    :func:`playground.app.end_workers` stopped waiting) emits into objects Python's exit has
    destroyed, and its ``RuntimeError: Signal source has been deleted`` came out as a
    traceback on the terminal of an app closed cleanly. Nobody is left to tell."""
    global _QUIET
    if not _QUIET:
        from superqt.utils import FunctionWorker, GeneratorWorker

        def run(base):
            def quiet_run(self) -> None:
                try:
                    base.run(self)
                except RuntimeError as exc:
                    if "deleted" not in str(exc):
                        raise
            return quiet_run

        _QUIET = (type("QuietGeneratorWorker", (GeneratorWorker,), {"run": run(GeneratorWorker)}),
                  type("QuietFunctionWorker", (FunctionWorker,), {"run": run(FunctionWorker)}))
    return _QUIET


#: Seconds a user module's top-level code may run before it is stopped.
IMPORT_TIMEOUT = 10.0
#: how much longer than that the child trying the module first may take, once started
CHILD_GRACE = 1.0
#: the longest the window waits for that child, its start included
START_GRACE = 30.0
#: the longest a comparison waits for the window to lay out its new matrix (see _compare)
LAYOUT_WAIT_SECONDS = 0.25
#: the longest it waits for the window to paint a big matrix's preview (see _compare)
PAINT_WAIT_SECONDS = 0.1


def guarded_module_code(run, label: str, origin: tuple | None = None,
                        policy: JobPolicy = DEFAULT):
    """:data:`customgrad.targets.loader.run_module_code` for the app: a user module's top-level code
    runs in a worker process (:func:`try_import_in_child`, where ``policy`` isolates) while
    the window keeps painting;
    for the session (:func:`shadowing`) the window then holds shadows of its Functions
    (:mod:`customgrad.function.shadow`) and never runs the module itself. Where it must (no worker
    process could start; a torch.library op's module; the loop set to run on a thread here;
    a load that is not the session's) it runs it after the child did, on a helper
    thread (input waits); after ``IMPORT_TIMEOUT`` seconds it is stopped, and the error
    names the line it was on."""
    from playground.workers.child_jobs import TopLevelTooSlow

    here = sys.modules.get(origin[1]) if origin is not None and origin[0] == "module" else None
    if here is not None and not getattr(here.__spec__, "_initializing", False):
        return run()  # imported here already (made at run time, say): nothing runs again
    # (one still initialising, on a helper thread that could not stop it, is not: the
    # import would wait for it on the GUI thread)
    app = QCoreApplication.instance()
    wanted = SHADOWS.get()
    if app is None or threading.current_thread() is not threading.main_thread():
        shadowed = try_import_in_child(origin, label, wanted, policy)
        return shadowed if shadowed is not None else run()
    if origin is not None and policy.isolate:
        shadowed = _try_first_live(origin, label, wanted, policy)
        if shadowed is not None:
            return shadowed
    box, done = _on_helper_thread(run, f"import {label}")
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


def shadows_suffice(policy: JobPolicy = DEFAULT) -> bool:
    """True where every call into a Function goes to a worker process, so the window may
    hold shadows of it: isolated checks (``policy``), and the loop in a process of its own."""
    return policy.isolate and loop_mode() == "process"


#: whether the module being loaded is for the session, which holds shadows of its Functions
#: (others, such as customgrad.check from a notebook that also shows the app, get classes)
SHADOWS: contextvars.ContextVar[bool] = contextvars.ContextVar("shadows", default=False)


@contextlib.contextmanager
def shadowing(policy: JobPolicy = DEFAULT):
    """Within: user modules the loader runs are run in a worker process only, and hold
    shadows here, where :func:`shadows_suffice` under ``policy``."""
    token = SHADOWS.set(shadows_suffice(policy))
    try:
        yield
    finally:
        SHADOWS.reset(token)


def try_import_in_child(origin: tuple | None, label: str, shadows: bool = False,
                        policy: JobPolicy = DEFAULT) -> Shadowed | None:
    """Run a user module's top level in a worker process: a module that segfaults, aborts
    or exits there raises :class:`~customgrad.workers.isolation.ProcessCrashed` (signal, file and
    line); one that runs too long, TopLevelTooSlow; a Python error, the loader's TargetError
    for it. Else, with ``shadows``, its Functions described; None where this process is to
    import it too (no shadows wanted, a torch.library op). Where no worker process could
    start, a TargetError says so: the module is not imported here instead. Nothing runs
    in a child where ``policy`` does not isolate (None)."""
    if origin is None or not policy.isolate:
        return None
    from customgrad.function.shadow import Shadowed
    from customgrad.workers import isolation
    from playground.workers import child_jobs
    from playground.workers.child_jobs import TopLevelTooSlow

    clock: dict = {}

    def started() -> None:
        # the time starts once the child runs: a cold fork server, or a spawned child
        # importing torch, takes seconds before that, which are not the module's
        clock["deadline"] = time.perf_counter() + IMPORT_TIMEOUT + CHILD_GRACE

    def overdue() -> bool:
        return time.perf_counter() > clock.get("deadline", math.inf)
    try:
        found = isolation.call(child_jobs.try_import, origin, IMPORT_TIMEOUT, shadows,
                               name=f"import {label}", should_stop=overdue, on_started=started,
                               nice=warm_worker.nice())
    except (processes.SetupFailed, processes.StartFailed) as exc:
        # no worker process could start: the user's code is not run in the window instead
        # (a module that crashes would end it), the failure is said
        raise TargetError(f"{label} was not imported: {exc} User code never runs in the "
                          "window's own process; restart the app if this goes on.",
                          file=origin[1] if origin[0].endswith("file") else None) from None
    except Cancelled:
        slow = TopLevelTooSlow(
            f"its top-level code was still running after {IMPORT_TIMEOUT:g} s, blocked outside "
            "Python (inside C, or a sleep), and was stopped. Move long work out of the "
            "module's top level")
        slow.where_unknown = True
        raise slow from None
    if isinstance(found, tuple):  # where it was when stopped
        file, line = found
        slow = TopLevelTooSlow(f"its top-level code was still running after {IMPORT_TIMEOUT:g} "
                               "s (an endless loop?) and was stopped", user_line=line or None,
                               file=file if line else None)
        slow.where_unknown = not line
        raise slow
    if isinstance(found, TargetError):
        found.from_worker = True  # worded by the worker's loader, as this one's would be
        raise found
    return found if isinstance(found, Shadowed) else None


def _try_first_live(origin: tuple, label: str, shadows: bool,
                    policy: JobPolicy) -> Shadowed | None:
    """:func:`try_import_in_child` on a helper thread while the window keeps painting; it
    ends by itself (the child is stopped past its deadline)."""
    from playground.workers.child_jobs import TopLevelTooSlow

    box, tried = _on_helper_thread(lambda: try_import_in_child(origin, label, shadows, policy),
                                   f"try {label}")
    if not tried.wait(0.05):
        _wait_live(tried, IMPORT_TIMEOUT + START_GRACE)
    if not tried.is_set():
        raise TopLevelTooSlow(f"the worker process trying it did not answer within "
                              f"{IMPORT_TIMEOUT + START_GRACE:g} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


def _on_helper_thread(fn, name: str) -> tuple[dict, threading.Event]:
    """Start ``fn()`` on a daemon thread: a box that gets its ``thread``, and its ``result``
    or ``error``; and the event set when it ends."""
    box: dict = {}
    done = threading.Event()

    def work():
        box["thread"] = threading.get_ident()
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            done.set()
    threading.Thread(target=work, name=name, daemon=True).start()
    return box, done


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


def loop_mode() -> str:
    """Where the descent loop runs: ``process`` (a child process, the default; spawned where
    there is no fork server, which starts in seconds, not milliseconds) or ``thread``;
    ``AUTOGRAD_PLAYGROUND_LOOP`` chooses."""
    return config.current().loop


def warm_loop_process(policy: JobPolicy = DEFAULT) -> None:
    """Start the fork server on a background thread (it imports torch once, off to the side),
    so that the first build, check and Play start at once (where ``policy`` isolates, or the
    loop runs in a process)."""
    if processes.fork_server() and (policy.isolate or loop_mode() == "process"):
        processes.preload(*WORKER_MODULES)
        threading.Thread(target=_warm_quietly, name="warm descent process", daemon=True).start()


def _warm_quietly() -> None:
    try:
        processes.warm()
    except Exception:  # the first run starts it again, and reports what failed
        pass


def start_descent(problem: Problem, ctrl: LoopControl, on_batch, on_error, on_finished,
                  thread: bool = False):
    """Start the loop for ``problem`` (in a process of its own where possible, else on a
    thread, or with ``thread`` always); returns the superqt worker that reports its batches.
    Nothing here waits: the process is started on the worker's thread."""
    process = not thread and loop_mode() == "process" and processes.portable(problem.target)
    if not process:  # (``thread``: the loop's process could not load it)
        in_window.say(problem.function, in_window.could_not_load("") if thread
                      else in_window.THREAD_MODE if loop_mode() == "thread"
                      else in_window.NOT_PORTABLE)
    worker = create_worker(_descent, problem, ctrl, process, _start_thread=False,
                           _ignore_errors=True)
    worker.yielded.connect(on_batch)
    worker.errored.connect(on_error)
    worker.finished.connect(on_finished)
    worker.start()
    return worker


def _descent(problem: Problem, ctrl: LoopControl, process: bool):
    """The loop worker's generator. Starting a process can wait (the first one waits until
    the fork server has imported torch, up to a second after start-up), and making the
    Descent calls the Function's forward: neither may hold up the window."""
    from customgrad.workers import runner

    remote = None
    if process:
        try:
            remote = runner.RemoteLoop(problem, nice=warm_worker.nice())
        except processes.StartFailed:
            raise  # said, never run here instead
        except Exception as exc:  # e.g. a constant that cannot be pickled: a thread will do
            in_window.say(problem.function, in_window.could_not_load(exc))
            remote = None
    if remote is None:
        yield from runner.thread_loop(problem.descent(), ctrl)
        return
    ctrl.remote = remote
    if ctrl.stop:  # stopped while its process was starting: nothing to run
        remote.close(wait=0)  # (ends it)
        ctrl.exited = True
        return
    ctrl.poke()  # the child starts with the controls as they are now
    yield from runner.remote_loop(remote, ctrl)


class ProgressBridge(QObject):
    """Carries progress callbacks from a worker thread to the GUI thread, and the
    first-order report, which comes before the job's result (its second order)."""

    progress = Signal(object)
    first = Signal(object)
    #: a comparison in a worker process that has sent nothing for a while: where it is,
    #: ``(file, line, function, seconds)`` (an endless loop named while it runs)
    running_at = Signal(object)


class JacobianJob:
    """One Jacobian comparison on a worker thread, cancellable. ``on_first`` gets the
    first-order report as soon as it exists; ``on_report`` the same with its second order
    (the double backward's check, which takes as long again) once that is computed.

    What the worker's function reads is a :class:`_JobState`, not this job: the worker then
    holds no reference back to the job that holds it, so no reference cycle keeps either
    (and the problem) alive until a cyclic collection, which may run on any thread."""

    def __init__(self, problem: Problem, args: list | None, options: dict, on_progress,
                 on_report, on_error, policy: JobPolicy = DEFAULT,
                 pixels: int = preview.PREVIEW_PIXELS,  # (the heatmaps' size on screen)
                 second: bool = False,  # the second order asked for: drawn however big
                 on_first=None, on_running_at=None):
        self.state = _JobState(ProgressBridge(), second, policy)
        self.bridge = self.state.bridge
        self.bridge.progress.connect(on_progress)
        if on_first is not None:
            self.bridge.first.connect(on_first)
        if on_running_at is not None:
            self.bridge.running_at.connect(on_running_at)
        self.state.isolated = isolated(problem.target, problem.function, policy)
        work = _compare_in_process if self.state.isolated else _compare
        self.worker = create_worker(work, self.state, problem, args, options, pixels,
                                    _start_thread=False, _ignore_errors=True)
        self.worker.returned.connect(on_report)
        self.worker.errored.connect(on_error)
        self.worker.start()

    @property
    def cancelled(self) -> bool:
        return self.state.cancelled

    @property
    def done(self) -> bool:
        return self.state.done

    @property
    def isolated(self) -> bool:
        """True while the comparison runs in a worker process (a crash there spares the
        window)."""
        return self.state.isolated

    @property
    def thread_id(self) -> int | None:
        return self.state.thread_id

    def cancel(self, force: bool = False):
        """Ask the comparison to stop; ``force`` also interrupts user code stuck in a loop.
        A comparison in a worker process ends with that process, at once."""
        state = self.state
        state.cancelled = True
        if force and not state.isolated and state.thread_id is not None and not state.done:
            interrupt_thread(state.thread_id)

    def finish(self, wait: float) -> None:
        """Wait up to ``wait`` seconds for the cancelled comparison to end, then interrupt
        user code stuck in a loop."""
        deadline = time.perf_counter() + wait
        while not self.done and time.perf_counter() < deadline:
            time.sleep(0.005)
        if not self.done:
            self.cancel(force=True)


class _JobState:
    """What a Jacobian job's worker thread and the GUI thread share."""

    def __init__(self, bridge: ProgressBridge, second: bool = False,
                 policy: JobPolicy = DEFAULT):
        self.bridge = bridge
        self.second = second  # the second order asked for: drawn however big
        #: a worker process's comparison waits while the view paints (:class:`JobPolicy`)
        self.hold_child = policy.hold_child
        self.worker = policy.worker  # the worker process kept warm for the Function's jobs
        self.cancelled = False
        self.done = False
        self.thread_id: int | None = None
        self.isolated = False


def _await_paint(state: _JobState, prepared, first: bool) -> float:
    """Hold the worker until the view has painted ``prepared`` (at most a short while);
    the seconds waited."""
    start = time.monotonic()
    deadline = start + (LAYOUT_WAIT_SECONDS if first else PAINT_WAIT_SECONDS)
    while not (prepared.painted.wait(0.02) or state.cancelled or time.monotonic() > deadline):
        pass
    if state.cancelled:
        raise Cancelled("Jacobian comparison cancelled.")
    return time.monotonic() - start


def _emit(state: _JobState, prepared, signal: str = "progress") -> None:
    try:
        getattr(state.bridge, signal).emit(prepared)
    except RuntimeError as exc:  # the window closed under us: stop quietly
        state.cancelled = True
        raise Cancelled("Jacobian comparison cancelled: the window closed.") from exc


def isolated(target, function, policy: JobPolicy = DEFAULT) -> bool:
    """Whether work on ``function`` runs in a worker process: isolation on (``policy``) and a
    child able to load ``target``. Where isolation is on and a child cannot load it, the
    window says that it runs here (:mod:`.in_window`)."""
    if not policy.isolate or target is None:
        return False
    if processes.portable(target):
        return True
    in_window.say(function, in_window.NOT_PORTABLE)
    return False


def in_child_or_here(in_child, here, function: type):
    """``in_child()`` (a job in a worker process); where no worker process can load
    ``function`` (SetupFailed: a module made at run time, say), ``here()`` on this thread, as
    the loop does, and says so (:mod:`in_window`). A shadow cannot run here: the child's
    reason is raised; so is :class:`processes.StartFailed` (no worker process could start)."""
    from customgrad.function.shadow import description_of

    try:
        return in_child()
    except processes.SetupFailed as exc:
        if description_of(function) is not None:
            raise
        in_window.say(function, in_window.could_not_load(exc))
        return here()


def shapes_named(specs) -> str:
    """The inputs' shapes as the app writes them everywhere ("x 3x8, w 8x8", a scalar's
    "scalar"): what a check's memory stop says it ran for (it said "x (3, 8)")."""
    return ", ".join(f"{s.name} {format_shape(tuple(s.shape))}" for s in specs
                     if hasattr(s, "shape"))


def _compare_in_process(state: _JobState, problem: Problem, args, options, pixels: int):
    """The Jacobian worker's function when the comparison runs in a worker process: this
    thread relays the child's progress, and answers each once handled: the child waits for
    that, so it computes no further while the view paints, as :func:`_compare` waits
    (:class:`child_jobs._Answer`). It returns the child's report. A crash of the child raises
    :class:`customgrad.workers.isolation.ProcessCrashed`; the next check gets a fresh child."""
    from playground.workers import child_jobs

    state.thread_id = threading.get_ident()
    live: dict = {}
    prepare = ProgressPreparer(pixels)
    answer = child_jobs.Answers()  # the child waits for these (child_jobs._Answer)

    reports: list = []  # the first order's, sent before the job's result (its second order)

    def on_message(message) -> None:
        kind, payload = message
        if kind == "first":
            reports.append(payload)
            _emit(state, payload, "first")
            return
        if kind == "matrices":
            live.clear()
            live.update(payload)
            return
        if kind == "answer":
            answer.take(payload)
            return
        try:
            prepared = prepare(child_jobs.restore(*payload, live))
            first = prepared.phase == "numerical" and prepared.columns_done == 0
            if first or prepared.big_preview:
                prepared.painted = threading.Event()
            _emit(state, prepared)
            if prepared.painted is not None:
                _await_paint(state, prepared, first)
        finally:
            answer.handled()

    job = child_jobs.CompareJob(processes.ProblemRef.of(problem), args, options, pixels,
                                hold=state.hold_child, second=state.second)
    shapes = shapes_named(problem.specs)
    def here():
        state.isolated = False
        return _compare(state, problem, args, options, pixels)

    def in_child():
        second = state.worker.call(child_jobs.compare, job, on_message=on_message,
                                   should_stop=lambda: state.cancelled, what=shapes,
                                   name=f"Jacobian check {problem.target.spec}",
                                   warm_key=child_jobs.warm_key_for(problem.target),
                                   on_quiet=lambda frame, seconds: _emit(
                                       state, (*frame, seconds), "running_at"))
        return child_jobs.with_second(reports[0], second)

    try:
        return in_child_or_here(in_child, here, problem.function)
    except Cancelled as exc:  # (where it was: the banner keeps the line an endless loop is at)
        raise Cancelled("Jacobian comparison cancelled.", file=exc.file, line=exc.line,
                        function=exc.function, stack=exc.stack) from None
    finally:
        state.done = True


def _compare(state: _JobState, problem: Problem, args, options, pixels: int):
    """The Jacobian worker's function, on this process's worker thread (for a Function a
    child process cannot load again)."""
    from customgrad.checking.verification import verify
    from playground.workers import child_jobs

    state.thread_id = threading.get_ident()
    try:
        prepare = ProgressPreparer(pixels)  # previews made here, not on the GUI thread
        waited: list[float] = []  # seconds spent waiting for the view (not the comparison's)

        def progress(p):
            prepared = prepare(p)
            # The view paints these while this thread waits (see JacobianView._await_paint):
            # the same paint takes it two to four times as long while a comparison competes
            # for the cores and the interpreter. The first progress carries the outputs and
            # inputs alone (a new matrix is laid out); a big matrix's previews come a few
            # times a second (ProgressPreparer), which costs the comparison a few percent.
            first = p.phase == "numerical" and p.columns_done == 0
            if first or prepared.big_preview:
                prepared.painted = threading.Event()
            _emit(state, prepared)
            if prepared.painted is not None:
                waited.append(_await_paint(state, prepared, first))
        at = problem.args if args is None else args
        report = child_jobs.prepared(
            verify(problem.function, at, problem.check_options(**options), progress=progress,
                   should_stop=lambda: state.cancelled, waited=lambda: sum(waited)), pixels)
        _emit(state, report, "first")  # its verdict is shown while the second order runs
        return child_jobs.with_second(report, child_jobs.second_prepared(
            report, pixels, problem.function, at, asked=state.second))
    finally:
        state.done = True
