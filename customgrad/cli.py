"""``customgrad list | check | run``: the engine from the command line.

Exit codes: 0 the backward agrees (or the command succeeded), 1 it does not, 2 any error
(bad target, bad shape, the Function raising...) with a one-paragraph message on stderr, and
141 when the reader of stdout went away (``customgrad run ... | head -1``), as for any Unix
tool a SIGPIPE ends, silently.

``check`` and ``run`` execute the user's code in a child process
(:mod:`customgrad.workers.isolation`): a Function that segfaults, aborts or calls ``os._exit`` gives
exit 2 and a paragraph naming the signal and the line, with faulthandler's stack below it, instead
of killing the CLI. ``--in-process`` runs it in this process instead (for pdb and profilers).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import textwrap
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from customgrad.cli_args import _parser, _settings
from customgrad.defaults import format_shape
from customgrad.errors import Cancelled, CustomGradError, FunctionError, TargetError, TooLargeError
from customgrad.targets import catalog

if TYPE_CHECKING:  # they import torch: the commands that need them import them
    from customgrad.problems.problem import Problem
    from customgrad.problems.settings import Settings

#: the exit status of a process that SIGPIPE ended (128 + 13), what a shell shows for
#: ``yes | head -1``: distinct from 1, which here means "the backward disagrees"
BROKEN_PIPE = 141
#: a command running this long without a word says where it is on stderr, then each as
#: long again (its worker is asked: :data:`customgrad.workers.isolation.QUIET_SECONDS`)
STILL_RUNNING_SECONDS = 30.0
STILL_RUNNING_EVERY = 60.0


def cmd_list(args, announce: Announce | None = None) -> int:
    if args.target is not None:
        return _list_target(args)
    entries = catalog.listing()  # data: listing the gallery needs no torch
    if args.json:
        print(json.dumps([{"name": e.name, "title": e.title, "category": e.category,
                           "category_title": catalog.CATEGORY_TITLES[e.category],
                           "correct": e.correct, "twin_of": e.twin_of,
                           "class": e.function} for e in entries], indent=2))
        return 0
    width = max(len(e.name) for e in entries)
    for category in catalog.CATEGORIES:
        print(f"{catalog.CATEGORY_TITLES[category]}:")
        for e in entries:
            if e.category == category:
                print(f"  {e.name:<{width}}  {e.title}")
    return 0


def _list_target(args) -> int:
    """``list file.py`` (or ``package.module``): its Functions, one TARGET a line, as
    ``check`` takes them (it says "choose one" where a file has several)."""
    from customgrad.targets.loader import (
        functions_in,
        import_user_module,
        is_file_target,
        load_file,
        split_target,
    )

    where, _name = split_target(args.target)
    module = load_file(where) if is_file_target(where) else import_user_module(where)
    found = functions_in(module)
    if not found:
        raise TargetError(f"{where} defines no torch.autograd.Function.",
                          file=where if is_file_target(where) else None)
    if args.json:
        print(json.dumps([{"target": f"{where}:{f.__name__}", "class": f.__name__}
                          for f in found], indent=2))
    else:
        for f in found:
            print(f"{where}:{f.__name__}")
    return 0


def _names(problem: Problem) -> dict:
    """How JSON names the Function: the target given (a gallery id, a path), the display
    title the text output shows, and the Python class."""
    return {"target": problem.target.spec, "title": problem.target.label,
            "function": problem.function.__name__}


def _guess_notes(problem: Problem) -> list[str]:
    return [f"{g.name} was taken as the constant {g.value!r} ({g.reason}); give its value "
            f"with --const {g.name}=VALUE, or make it a tensor with --shape {g.name}=3x8."
            for g in problem.guesses]


#: told the Function's name once it is loaded (a child process passes it on to its parent, so
#: that a crash message can name it)
Announce = Callable[[str], None]


def _built(settings: Settings, announce: Announce | None = None) -> Problem:
    from customgrad.problems.problem import build

    try:
        problem = build(settings)
    except FunctionError as exc:
        if not getattr(exc, "drawn", False):
            raise
        raise FunctionError(
            f"{exc} Change them with --shape NAME=3x8, --init NAME=randint(0,8) (an int64 "
            "tensor: indices, class targets), --const NAME=VALUE (a number, a tuple).",
            file=exc.file, line=exc.line, details=exc.details, phase=exc.phase) from None
    if announce is not None:
        announce(problem.function.__name__)
    return problem


def cmd_check(args, announce: Announce | None = None) -> int:
    from customgrad.checking import subchecks
    from customgrad.checking.verification import verify

    settings = _settings(args)
    settings.eps, settings.atol, settings.rtol = args.eps, args.atol, args.rtol
    settings.nondet_tol = args.nondet_tol
    settings.memory_cap = max(1, int(args.memory_cap * 2**30))
    problem = _built(settings, announce)
    if args.projected is not None:
        return _projected(args, problem)
    wanted = set(args.checks or subchecks.defaults_for(problem.function))
    wanted |= {"double_backward"} if args.double else set()
    options = problem.check_options(keep_matrices=False, label=problem.target.label)
    options = options.with_checks(wanted)
    try:
        report = verify(problem.function, problem.args, options)
    except TooLargeError as exc:
        raise exc.advised("--memory-cap GIB raises the cap, --no-grad NAME leaves an input "
                          "out, and --projected checks v^T J u instead, for inputs this "
                          "large.") from None
    if args.json:
        data = _names(problem)  # first, and kept: the report may carry names of its own
        data.update((k, v) for k, v in report.to_dict().items() if k not in data)
        data["guessed_constants"] = [g.to_dict() for g in problem.guesses]
        from customgrad.checking.second_order import double_backward_json  # with --double
        data.update(double_backward_json(problem, report.checks))
        print(json.dumps(data, indent=2, allow_nan=False))
    else:
        print("\n".join([report.text(), *(f"note: {n}" for n in _guess_notes(problem))]))
    return 0 if report.passed else 1


def _projected(args, problem: Problem) -> int:
    from customgrad.checking.beyond_jacobian import double_backward_check, projected_check
    from customgrad.checking.jacobian.probe import differentiated_inputs
    from customgrad.function.inputs import forward_parameters

    report = projected_check(problem.function, problem.args, probes=args.projected,
                             seed=problem.settings.seed, eps=args.eps, atol=args.atol,
                             rtol=args.rtol, differentiate=problem.settings.differentiate)
    double = None
    if args.double:  # the inputs the projected check chose (--grad / --no-grad), as gradcheck
        names = [p.name for p in forward_parameters(problem.function)]
        positions, _ = differentiated_inputs(problem.function, problem.args, names, [],
                                             problem.settings.differentiate)
        double = double_backward_check(problem.function, problem.args, eps=args.eps,
                                       atol=args.atol, rtol=args.rtol, positions=positions)
    passed = report.passed and (double is None or not double.supported or double.passed)
    if args.json:
        data = _names(problem)  # first, and kept: the report may carry names of its own
        data.update((k, v) for k, v in report.to_dict().items() if k not in data)
        data["guessed_constants"] = [g.to_dict() for g in problem.guesses]
        if double is not None:
            data["double_backward"] = {"supported": double.supported, "passed": double.passed,
                                       "message": double.message}
            data["passed"] = passed
        print(json.dumps(data, indent=2, allow_nan=False))
        return 0 if passed else 1
    print(f"{problem.target.label}: {report.summary()}")
    if double is not None:
        print(f"double backward: {double.message}")
    k = report.worst
    if k is not None:
        p = report.probes[k]
        label = "worst probe" if not report.passed else "largest deviation"
        print(f"{label}: #{k}: analytic {p.analytic:.6g}, numerical {p.numerical:.6g}, "
              f"difference {p.analytic - p.numerical:.3g}")
    for note in [*report.notes, *_guess_notes(problem)]:
        print(f"note: {note}")
    return 0 if passed else 1


def cmd_run(args, announce: Announce | None = None) -> int:
    settings = _settings(args)
    settings.lr, settings.loss, settings.optimizer = args.lr, args.loss, args.optimizer
    if args.steps < 0:
        raise CustomGradError(f"--steps must be >= 0, not {args.steps}.")
    problem = _built(settings, announce)
    if not args.json:
        for note in _guess_notes(problem):
            print(f"customgrad: note: {note}", file=sys.stderr)
    descent = problem.descent()
    losses, stopped = [], ""
    for record in descent.run(args.steps):
        losses.append(record.loss)
        if not args.json:
            print(record.step, record.loss, flush=True)
        if not math.isfinite(record.loss):  # every step after it would say nan too
            stopped = f"the loss is {record.loss} at step {record.step}"
            break
    if stopped and not args.json:
        print(textwrap.fill(f"customgrad: {stopped}: the run stops (a NaN or Inf from forward "
                            f"or backward: customgrad check {args.target} says which).",
                            width=100), file=sys.stderr)
    if args.json:
        shapes = {s.name: format_shape(s.shape) for s in problem.specs if hasattr(s, "shape")}
        print(json.dumps({**_names(problem), "seed": settings.seed, "lr": settings.lr,
                          "loss": settings.loss, "optimizer": settings.optimizer, "shapes": shapes,
                          "guessed_constants": [g.to_dict() for g in problem.guesses],
                          "losses": [x if x == x and abs(x) != float("inf") else None
                                     for x in losses],
                          **({"stopped": stopped} if stopped else {})},
                         indent=2, allow_nan=False))
    return 1 if stopped else 0


def _message(exc: Exception) -> str:
    text = str(exc)
    where = ""
    if isinstance(exc, (FunctionError, TargetError)) and exc.file:
        where = f" ({exc.file}{f':{exc.line}' if exc.line else ''})"
        from customgrad.workers.isolation import ProcessCrashed

        if isinstance(exc, ProcessCrashed):
            where = f" ({exc.file})"  # the message names the line already
        elif exc.line and f"{os.path.basename(exc.file)}:{exc.line} (in " in text:
            where = f" ({exc.file})"  # (a memory stop's message names it so)
    return textwrap.fill(f"customgrad: {text}{where}", width=100, break_long_words=False,
                         break_on_hyphens=False)


def _print_error_json(args, exc: CustomGradError) -> None:
    """``--json`` where the command errs: one object with the error (its kind, message,
    file and line) and ``passed`` null, the exit code unchanged (2)."""
    error = {"kind": type(exc).__name__, "message": str(exc),
             "file": getattr(exc, "file", None), "line": getattr(exc, "line", None),
             "phase": getattr(exc, "phase", None)}
    try:
        print(json.dumps({"target": getattr(args, "target", None), "passed": None,
                          "error": error}, indent=2, default=str))
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()


def _stdout_gone() -> int:
    """The reader of stdout went away (``| head -1``): stop quietly, as a Unix tool that
    SIGPIPE ends. What is still buffered goes to the null device, so that the interpreter's
    last flush at exit has nothing to complain about."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is no file (a test's capture): nothing is flushed at exit then
    return BROKEN_PIPE


COMMANDS = {"list": cmd_list, "check": cmd_check, "run": cmd_run}


def _in_child(args, channel) -> int:
    """A command in the child process: its exit code, its messages on the parent's stderr."""
    name = args.target.rpartition(":")[2]
    if name.isidentifier():  # file.py:Class, module:Class: named before it is even loaded
        channel.context(name)
    return _run(args, isolated=False, announce=channel.context)


def _isolated(args) -> int:
    gib = getattr(args, "memory_limit", None)  # (list has none: the default limit)
    limit = None if gib is None else int(gib * 2**30)
    what = ", ".join(getattr(args, "shape", None) or []) or args.target
    from customgrad.workers import isolation

    job = importlib.import_module("customgrad.cli")._in_child  # never __main__'s (python -m)
    timeout: float = getattr(args, "timeout", None) or 0.0  # 0: none
    clock: dict = {}

    def started() -> None:  # the time counts once the child runs
        clock["deadline"] = time.monotonic() + timeout

    def overdue() -> bool:
        return time.monotonic() > clock.get("deadline", math.inf)

    said = {"next": STILL_RUNNING_SECONDS}

    def still_running(frame: tuple[str, int, str], seconds: float) -> None:
        """A check that runs on says where it is now and then: without --timeout, an endless
        loop in CI was a silent hang (rc 124 from the runner's own limit, no line)."""
        if seconds < said["next"]:
            return
        said["next"] = seconds + STILL_RUNNING_EVERY
        file, line, function = frame
        stop = "" if timeout else "; --timeout SECONDS stops it"
        print(f"customgrad: {args.target} has been running {seconds:.0f} s, now at "
              f"{os.path.basename(file)}:{line} (in {function}){stop}.", file=sys.stderr,
              flush=True)
    try:
        return isolation.call(job, args, memory_limit=limit, what=what,
                              name=f"customgrad {args.command} {args.target}",
                              should_stop=overdue if timeout else None,
                              on_started=started if timeout else None,
                              on_quiet=still_running)
    except Cancelled as exc:
        raise FunctionError(f"{args.target} was still running after --timeout {timeout:g} s"
                            f"{exc.where()} and was stopped (an endless loop, a wait inside C, "
                            "or a process that stopped itself).", file=exc.file, line=exc.line,
                            details=exc.stack, phase=_phase(exc.function)) from None


def _phase(function: str | None) -> str:
    """The Function's method a stopped job was in ("backward"), as an error's ``phase``
    (the JSON's: "" where it was stopped elsewhere, a helper the method called)."""
    from customgrad.workers import isolation

    return function if function in isolation.METHODS else ""


def _run(args, isolated: bool, announce: Announce | None = None) -> int:
    try:
        if isolated:
            code = _isolated(args)
        else:
            code = COMMANDS[args.command](args, announce)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except CustomGradError as exc:
        print(_message(exc), file=sys.stderr)
        if getattr(args, "json", False):  # a record on stdout too: `| jq .passed` gives null
            _print_error_json(args, exc)
        stack = getattr(exc, "stack", "")
        if stack:
            print(f"\nWhere it crashed (faulthandler, most recent call first):\n{stack}",
                  file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("customgrad: interrupted", file=sys.stderr)
        return 2
    except MemoryError:
        print("customgrad: out of memory; use smaller shapes.", file=sys.stderr)
        return 2
    except Exception as exc:  # customgrad's own fault, never "the backward disagrees" (1)
        print(textwrap.fill(f"customgrad: internal error: {type(exc).__name__}: {exc}. This "
                            "is customgrad's fault, not your Function's; please report it.",
                            width=100), file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        # the gallery's list runs nothing of the user's; a file's is imported in a child
        isolated = getattr(args, "target", None) is not None and not args.in_process
        return _run(args, isolated)
    except BrokenPipeError:
        return _stdout_gone()
    except CustomGradError as exc:
        print(_message(exc), file=sys.stderr)
        if getattr(args, "json", False):  # a record on stdout too: `| jq .passed` gives null
            _print_error_json(args, exc)
        return 2
    except KeyboardInterrupt:
        print("customgrad: interrupted", file=sys.stderr)
        return 2
    except MemoryError:
        print("customgrad: out of memory; use smaller shapes.", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
