"""What the window's worker processes run (no Qt here: the child imports this).

:func:`try_import` runs a user module's top level, :func:`build` draws a problem's inputs,
:func:`inspect` is the inspector's call, :func:`landscape` the loss landscape's, and
:func:`compare` is the Jacobian check.

:func:`compare` loads the Function again (by its spec; a file's or the editor's text travels
along), compares at the window's exact tensors, diagnoses a failure, runs the sub-checks and
prepares what the view reads whole, all in the child; then the second order (the double
backward's check). While it runs it sends:

- once per matrix, ``("matrices", {"analytic": A, "numerical": N})``: tensors in shared
  memory that the child keeps up to date (the part computed since the last progress is
  copied in), so the window reads the live matrices without a copy through the pipe;
- ``("progress", (progress, has))``: the engine's :class:`~customgrad.checking.jacobian.Progress`
  without its matrices (the window puts the shared ones in, and makes the previews from
  them, on the thread that relays the messages, as a check on a thread does);
- first, ``("answer", counter)``: a shared counter the window sets to the number of
  progresses it has handled. After each progress the child waits for it (:class:`_Answer`),
  as a check on the window's thread waits while the view paints: a paint that competes with
  a comparison computing on every core takes longer;
- ``("first", report)``: the first-order report, as soon as it exists: the window shows its
  verdict while the second order is computed (the job's result).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import threading
import time
from dataclasses import dataclass

import torch

from customgrad.checking import second_order
from customgrad.checking.inspector import Inspection, inspect_call
from customgrad.checking.jacobian import Progress, Report
from customgrad.checking.verification import verify
from customgrad.errors import TargetError
from customgrad.function.shadow import describe_module
from customgrad.landscape import compute as compute_landscape
from customgrad.problems.problem import Problem
from customgrad.problems.problem import build as build_problem
from customgrad.targets import loader
from customgrad.workers import sharing
from customgrad.workers.processes import ProblemRef, SetupFailed, load_target
from customgrad.workers.runner import interrupt_thread
from playground.support.preview import drawing_steps


def warm_key_for(target) -> tuple:
    """The key under which a worker process is kept for ``target``'s jobs (the build and
    the checks that follow it; see :meth:`customgrad.workers.warm.WarmWorker.call`): its spec and
    text."""
    return ("problem", target.spec, target.code)


@dataclass
class CompareJob:
    problem: ProblemRef
    args: list | None
    options: dict
    #: the heatmaps' size in the window (Session.view_pixels): the report's overviews are pooled
    #: to it here, or the window would draw a finer one and pyqtgraph average it down
    pixels: int | None = None
    #: wait after each progress for the window's answer (:class:`_Answer`): the window's
    #: Jacobian worker answers; a caller that does not leaves it off
    hold: bool = False
    #: the second-order report however big (the pane shows the second order)
    second: bool = False


class _Mirror:
    """The engine's matrices as the window reads them: the engine's own where they are in
    shared memory (the big ones, :func:`customgrad.workers.sharing.shared_zeros`), else shared
    copies filled as far as they are computed."""

    def __init__(self, channel):
        self.channel = channel
        self.key = None
        self.analytic: torch.Tensor | None = None
        self.numerical: torch.Tensor | None = None
        self.cols = self.rows = 0

    @staticmethod
    def _like(matrix: torch.Tensor | None) -> torch.Tensor | None:
        if matrix is None or matrix.is_shared():  # the engine's own, in shared memory: as is
            return matrix
        copy = torch.empty_strided(matrix.size(), matrix.stride(), dtype=matrix.dtype)
        return copy.fill_(float("nan")).share_memory_()

    def update(self, progress: Progress) -> tuple[bool, bool]:
        """Copy what is new; tell the window about new matrices. Which of the two it has."""
        numerical, analytic = progress.numerical, progress.analytic
        key = (_address(numerical), _address(analytic))
        if key != self.key:
            self.key = key
            self.numerical, self.analytic = self._like(numerical), self._like(analytic)
            self.cols = self.rows = 0
            self.channel.send(("matrices", {"numerical": self.numerical,
                                            "analytic": self.analytic}))
        cols = progress.columns_done or 0
        if numerical is not None and cols > self.cols:
            if self.numerical is not numerical:
                self.numerical[:, self.cols:cols] = numerical[:, self.cols:cols]
            self.cols = cols
        rows = progress.rows_done or 0
        if analytic is not None and rows > self.rows:
            if self.analytic is not analytic:
                self.analytic[self.rows:rows] = analytic[self.rows:rows]
            self.rows = rows
        return analytic is not None, numerical is not None


class _Answer:
    """The window's "go on" after each progress: a counter in shared memory that the window
    sets to the number of progresses it has handled (previews made, and where it paints a
    new matrix or a big preview, painted). The child waits for it, at most ``WAIT_SECONDS``
    (longer than the window's own bound on a paint, ``jobs.LAYOUT_WAIT_SECONDS``); a window
    that lets that pass is not waited for again in this check."""

    WAIT_SECONDS = 0.5
    POLL_SECONDS = 0.001

    def __init__(self, channel, hold: bool = True):
        self.sent = 0
        self.waited = 0.0  # seconds spent waiting (not the comparison's)
        self.answering = hold
        if hold:
            self.counter = torch.empty(0, dtype=torch.int64).set_(
                sharing.shared_storage(8), 0, (1,), (1,))  # zero, in a memory file
            channel.send(("answer", self.counter))

    def after(self, send) -> None:
        """``send()`` a progress, then wait until the window has handled it."""
        self.sent += 1
        send()
        if not self.answering:
            return
        start = time.monotonic()
        handled = self.counter.numpy()
        while handled[0] < self.sent:
            if time.monotonic() - start > self.WAIT_SECONDS:
                self.answering = False
                break
            time.sleep(self.POLL_SECONDS)
        self.waited += time.monotonic() - start


class Answers:
    """The window's side of :class:`_Answer`: the child's counter, set to the number of
    progresses handled."""

    def __init__(self):
        self.counter = None
        self.count = 0

    def take(self, counter: torch.Tensor) -> None:
        self.counter, self.count = counter.numpy(), 0

    def handled(self) -> None:
        if self.counter is not None:
            self.count += 1
            self.counter[0] = self.count


def _address(tensor) -> int:
    return tensor.data_ptr() if isinstance(tensor, torch.Tensor) else 0


def _load(ref: ProblemRef, channel) -> Problem:
    """The problem again, in the child (a kept child's Function loaded once:
    ``channel.targets``); :class:`SetupFailed` when the child cannot load it (say, a module
    the window made at run time): the window then works on a thread."""
    try:
        return ref.load(channel.targets)
    except Exception as exc:  # any failure to load means "not here"
        raise SetupFailed(f"the worker process could not load {ref.spec}: {exc}") from None


def compare(job: CompareJob, channel) -> tuple[Report | None, str]:
    """The child's work for one "Check Jacobian": the first-order report is sent as soon as
    it exists, ``("first", report)``, and the second-order report (the double backward's,
    which takes as long again) follows as the job's result: (report or None, why none;
    :func:`second_prepared`)."""
    problem = _load(job.problem, channel)
    channel.context(problem.function.__name__)
    mirror = _Mirror(channel)
    answer = _Answer(channel, job.hold)

    def progress(p: Progress) -> None:
        has = mirror.update(p)
        # a few hundred bytes: the window has the shared matrices, and makes the previews
        # from them on the thread that relays this (megabytes of previews sent through the
        # pipe held the interpreter lock there long enough to stall the window)
        answer.after(lambda: channel.send(
            ("progress", (dataclasses.replace(p, analytic=None, numerical=None), has))))

    # this process is the job's alone: the window reads the matrices as they are computed
    args = problem.args if job.args is None else job.args
    report = verify(problem.function, args, problem.check_options(**job.options),
                    progress=progress, allocate=sharing.shared_zeros,
                    waited=lambda: answer.waited)
    report = prepared(report, job.pixels)
    channel.send(("first", report))
    return second_prepared(report, job.pixels, problem.function, args, asked=job.second)


def prepared(report: Report, pixels: int | None = None, function: type | None = None,
             args: list | None = None, *, second: bool = False) -> Report:
    """``report`` with what the view reads whole (difference, mask, peaks, pooled overviews
    for heatmaps of ``pixels``) computed into its cache here, rather than on the GUI thread;
    given the ``function`` and ``args`` it checked, with the second-order report beside it
    (:func:`second_prepared`)."""
    for step in drawing_steps(report.shape, pixels):
        report.prepare_drawing(step)
    if function is not None and args is not None:
        report = with_second(report, second_prepared(report, pixels, function, args,
                                                     asked=second))
    return report


def second_prepared(report: Report, pixels: int | None, function: type, args: list, *,
                    asked: bool = False) -> tuple[Report | None, str]:
    """The second-order report that goes with the first-order ``report`` of ``function`` at
    ``args``, prepared for the view as :func:`prepared` prepares the first (a big one only
    where ``asked``), and "", or None and why not
    (:func:`customgrad.checking.second_order.beside`)."""
    second, reason = second_order.beside(report, function, args, asked=asked)
    for step in drawing_steps(second.shape, pixels) if second is not None else ():
        second.prepare_drawing(step)
    return second, reason


def with_second(report: Report, second: tuple[Report | None, str]) -> Report:
    """The first-order ``report`` with its second order (:func:`second_prepared`) beside it;
    what the view computed for the first stays computed (one cache)."""
    found, reason = second
    return dataclasses.replace(report, second_order=found, second_order_reason=reason)


def restore(progress: Progress, has: tuple[bool, bool], live: dict) -> Progress:
    """The window's side: put the shared matrices back into a progress."""
    has_analytic, has_numerical = has
    progress.analytic = live.get("analytic") if has_analytic else None
    progress.numerical = live.get("numerical") if has_numerical else None
    return progress


def inspect(ref: ProblemRef, args: list, seed: int, channel) -> Inspection:
    """The child's work for the Inspector tab: one forward + backward, laid open."""
    problem = _load(ref, channel)
    channel.context(problem.function.__name__)
    return inspect_call(problem.function, args, seed=seed)


@dataclass
class LandscapeJob:
    """The loss landscape after ``steps`` steps of the run (at ``lrs``): see
    :func:`customgrad.landscape.compute` for the rest."""

    problem: ProblemRef
    steps: int
    lrs: list
    options: dict


def landscape(job: LandscapeJob, channel):
    """The child's work for the Landscape tab: the run replayed, the gradients, the plane and
    the grid; each partial grid is sent as ``("landscape", Landscape)`` (a few kilobytes)."""
    problem = _load(job.problem, channel)
    channel.context(problem.function.__name__)
    return compute_landscape(problem, job.steps, job.lrs, **job.options,
                             progress=lambda partial: channel.send(("landscape", partial)))


class TopLevelTooSlow(Exception):
    """Raised inside a user module whose top-level code ran longer than allowed.
    ``user_line``: the line of the user's file it was on, when known."""

    def __init__(self, *args, user_line: int | None = None, file: str | None = None):
        super().__init__(*args or ("its top-level code ran too long (an endless loop?) and was "
                                   "stopped",))
        # where: a file's loader reads user_line, a module's file and line
        self.file, self.line = file, user_line

    @property
    def user_line(self) -> int | None:
        return self.line


def try_import(origin: tuple, seconds: float, loud: bool, channel):
    """A user module's top level, run here rather than in the window: if it crashes the
    process, only this child ends. After ``seconds`` it is interrupted: ``(file, line)`` of
    where it was comes back (line 0 where not known). Otherwise its Functions, described
    (:class:`customgrad.function.shadow.Shadowed`), or the loader's TargetError for a Python error.
    Where the window runs the module too (not ``loud``; an ``op-`` kind, a module
    registering a torch.library op; a ``reload``) this is only a first try: None, and errors
    and output are left to the window."""
    kind, where = origin[0], origin[1]
    # ``loud``: the window holds shadows of the module, and never runs it: its output and
    # its errors are this process's to give; else the window runs it next, and gives them
    first_try = kind.startswith("op-") or kind == "reload" or not loud
    label = os.path.basename(where) if kind.endswith("file") else where
    channel.context(f"The top level of {label}")
    watchdog = threading.Timer(seconds, interrupt_thread,
                               args=(threading.get_ident(), TopLevelTooSlow))
    watchdog.daemon = True
    sink = io.StringIO()
    quiet = (contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink)) \
        if first_try else ()
    with contextlib.ExitStack() as stack:
        for redirect in quiet:
            stack.enter_context(redirect)
        watchdog.start()
        try:
            if kind.endswith("file"):
                module = loader.load_file(where, origin[2])
            else:
                module = loader.import_user_module(where)
        except TargetError as exc:  # the loader wraps what the top level raised
            if "TopLevelTooSlow" in str(exc):
                return (exc.file, exc.line or 0)
            return None if first_try else exc
        finally:
            watchdog.cancel()
    return None if first_try else describe_module(module, loader.is_function)


@dataclass
class Built:
    """What :func:`build` sends back: the problem's parts, its tensors on the CPU (shared)."""

    specs: list
    dtype: object
    device: object
    args: list
    targets: list
    settings: object
    guesses: list

    def problem(self, target) -> Problem:
        """The problem again, in the window, for ``target`` (already loaded there)."""
        return Problem(target, self.specs, self.dtype, self.device, _to(self.args, self.device),
                       _to(self.targets, self.device), self.settings, self.guesses)


def _to(values: list, device) -> list:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def build(spec: str, code: str | None, settings, channel) -> Built:
    """Validate and draw the problem here: the probes that guess constants and the forward
    that finds the outputs' shapes call the user's code. Tensors come back on the CPU (a
    CUDA tensor shared by a process that has ended is not valid)."""
    try:
        target = load_target(spec, code, channel.targets)
    except Exception as exc:
        raise SetupFailed(f"the worker process could not load {spec}: {exc}") from None
    channel.context(target.function.__name__)
    problem = build_problem(settings, target)
    cpu = torch.device("cpu")
    return Built(problem.specs, problem.dtype, problem.device, _to(problem.args, cpu),
                 _to(problem.targets, cpu), problem.settings, problem.guesses)
