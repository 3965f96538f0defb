"""``customgrad list | check | run``: the engine from the command line.

Exit codes: 0 the backward agrees (or the command succeeded), 1 it does not, 2 any error
(bad target, bad shape, the Function raising...) with a one-paragraph message on stderr, and
141 when the reader of stdout went away (``customgrad run ... | head -1``), as for any Unix
tool a SIGPIPE ends, silently.

``check`` and ``run`` execute the user's code in a child process (:mod:`customgrad.isolation`):
a Function that segfaults, aborts or calls ``os._exit`` gives exit 2 and a paragraph naming
the signal and the line, with faulthandler's stack below it, instead of killing the CLI.
``--in-process`` runs it in this process instead (for pdb and profilers).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import math
import os
import sys
import textwrap
import time
from typing import TYPE_CHECKING

from customgrad import catalog
from customgrad.defaults import (
    ATOL,
    CHECK_NAMES,
    DEFAULT_CHECKS,
    DEFAULT_SHAPE,
    DTYPE_NAMES,
    EPS,
    LOSSES,
    OPTIMIZERS,
    RTOL,
    format_shape,
    parse_checks,
)
from customgrad.errors import Cancelled, CustomGradError, FunctionError, TargetError, TooLargeError

if TYPE_CHECKING:  # they import torch: the commands that need them import them
    from customgrad.problem import Problem
    from customgrad.settings import Settings

DESCRIPTION = ("The engine from the command line: list the gallery, check a Function's "
               "backward against finite differences, run gradient descent.")
EPILOG = ("Exit codes: 0 the backward agrees (or the command succeeded), 1 it does not, "
          "2 any error, 141 when the reader of stdout goes away (e.g. | head).")
#: the exit status of a process that SIGPIPE ended (128 + 13), what a shell shows for
#: ``yes | head -1``: distinct from 1, which here means "the backward disagrees"
BROKEN_PIPE = 141
PROBES = 8


def _check_names(text: str) -> tuple[str, ...]:
    try:
        return parse_checks(text)
    except CustomGradError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"customgrad: error: {message}\n")
        raise SystemExit(2)


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    out = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CustomGradError(f"{option} expects NAME=VALUE, got {item!r}.")
        out[name.strip()] = value.strip()
    return out


def version() -> str:
    """The installed package's version, or a word saying it is not installed."""
    try:
        return importlib.metadata.version("autograd-playground")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _probes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"PROBES must be a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"PROBES must be at least 1, not {value} (leave it out for {PROBES})")
    return value


def _gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"GIB must be a positive number of GiB, not {text}")
    return value


def _limit_gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"GIB must be a number of GiB (0: no limit), not {text}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"SECONDS must be a positive number, not {text}")
    return value


def _add_input_options(p: argparse.ArgumentParser, dtype_default: str) -> None:
    p.add_argument("target", help="gallery name (see customgrad list), path/to/file.py[:Class] "
                                  "or package.module:Class")
    p.add_argument("--shape", action="append", metavar="NAME=3x8",
                   help="shape of tensor input NAME: whole numbers joined by x, e.g. 3x8 or 5; "
                        "also makes a constant a tensor (repeatable; default: the gallery's, "
                        f"else {format_shape(DEFAULT_SHAPE)})")
    p.add_argument("--const", action="append", metavar="NAME=VALUE",
                   help="value of constant NAME; also makes a tensor input a plain number "
                        "(repeatable; default: forward's default, the gallery's, or a guess "
                        "the report names)")
    p.add_argument("--init", action="append", metavar="NAME=INIT",
                   help="how the seed draws tensor input NAME: normal, uniform(a,b), zeros or "
                        "ones (repeatable; default: normal)")
    p.add_argument("--dtype", choices=DTYPE_NAMES, default=None,
                   help="dtype of the tensor inputs; complex64 and complex128 are checked by "
                        f"gradcheck's convention (default: {dtype_default})")
    p.add_argument("--device", default="cpu",
                   help="cpu, cuda, cuda:N or mps (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the inputs and targets drawn (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--in-process", action="store_true",
                   help="run the Function in this process, not in a child process (for pdb "
                        "and profilers; a crash in the Function then ends customgrad too)")
    p.add_argument("--memory-limit", type=_limit_gib, default=None, metavar="GIB",
                   help="stop the child process running the Function once it uses more than "
                        "this many GiB (default: half this machine's memory; 0: no limit)")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="stop the child process running the Function after this many seconds, "
                        "exit code 2 (default: no limit)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="customgrad", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", help="print the version and exit",
                        version=f"customgrad (autograd-playground) {version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                metavar="{list,check,run}")
    p = sub.add_parser("list", help="list the gallery of Functions",
                       description="List the gallery of Functions by group.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("check", help="compare the analytic Jacobian with a numerical one",
                       description="Compare the Jacobian your backward computes with finite "
                                   "differences, entry by entry, by gradcheck's rule "
                                   "|a - n| <= atol + rtol*|n|.", epilog=EPILOG)
    _add_input_options(p, "float64")
    p.add_argument("--eps", type=float, default=EPS,
                   help="finite-difference step (default: %(default)s)")
    p.add_argument("--atol", type=float, default=ATOL,
                   help="absolute tolerance (default: %(default)s)")
    p.add_argument("--rtol", type=float, default=RTOL,
                   help="relative tolerance (default: %(default)s)")
    p.add_argument("--memory-cap", type=_gib, default=1.0, metavar="GIB",
                   help="refuse Jacobians whose matrices exceed this many GiB "
                        "(default: %(default)s)")
    p.add_argument("--projected", type=_probes, nargs="?", const=PROBES, default=None,
                   metavar="PROBES",
                   help="check v^T J u for PROBES random directions instead of full matrices, "
                        f"for inputs too large for them (PROBES >= 1; default: {PROBES})")
    p.add_argument("--checks", type=_check_names, default=None, metavar="NAMES",
                   help="comma-separated sub-checks to run beside the full Jacobian: "
                        f"{', '.join(CHECK_NAMES)} (default: gradcheck's, "
                        f"{','.join(DEFAULT_CHECKS)}; a torch.library op adds opcheck)")
    p.add_argument("--grad", action="append", metavar="NAME",
                   help="differentiate tensor input NAME, and only the inputs named so, as "
                        "gradcheck does those that require grad (repeatable; default: every "
                        "floating-point one whose gradient backward returns)")
    p.add_argument("--no-grad", action="append", metavar="NAME",
                   help="do not differentiate tensor input NAME: a constant tensor, as one "
                        "that does not require grad (repeatable)")
    p.add_argument("--double", action="store_true",
                   help="also check double backward (like torch's gradgradcheck; the same as "
                        "adding double_backward to --checks)")
    p = sub.add_parser("run", help="run the gradient-descent loop and print the losses",
                       description="Run gradient descent x <- x - lr * grad on the trained "
                                   "inputs and print each step's loss.", epilog=EPILOG)
    _add_input_options(p, "float32")
    p.add_argument("--steps", type=int, default=5,
                   help="number of descent steps (default: %(default)s)")
    p.add_argument("--lr", type=float, default=1.0,
                   help="learning rate (default: %(default)s)")
    p.add_argument("--loss", choices=LOSSES, default="mse",
                   help="loss against a seeded random target (default: %(default)s)")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd",
                   help="update rule (default: %(default)s)")
    return parser


def _settings(args) -> Settings:
    from customgrad.settings import Settings

    settings = Settings(target=args.target, shapes=_pairs(args.shape, "--shape"),
                        constants=_pairs(args.const, "--const"),
                        init=_pairs(args.init, "--init"), device=args.device, seed=args.seed,
                        differentiate=_differentiate(getattr(args, "grad", None),
                                                     getattr(args, "no_grad", None)))
    if args.dtype:
        settings.dtype = args.dtype
    elif args.command == "check":
        settings.dtype = "float64"
    return settings


def _differentiate(grad: list[str] | None, no_grad: list[str] | None) -> dict[str, bool]:
    """``--grad`` and ``--no-grad`` as the settings' table; an input named in both is an
    error."""
    both = sorted(set(grad or []) & set(no_grad or []))
    if both:
        raise CustomGradError(f"{', '.join(both)} is given both --grad and --no-grad; "
                              "choose one.")
    return {**dict.fromkeys(no_grad or [], False), **dict.fromkeys(grad or [], True)}


def cmd_list(args) -> int:
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
_announce = None


def _built(settings: Settings) -> Problem:
    from customgrad.problem import build

    try:
        problem = build(settings)
    except FunctionError as exc:
        if not getattr(exc, "drawn", False):
            raise
        raise FunctionError(
            f"{exc} Change them with --shape NAME=3x8, --init NAME=randint(0,8) (an int64 "
            "tensor: indices, class targets), --const NAME=VALUE (a number, a tuple).",
            file=exc.file, line=exc.line, details=exc.details, phase=exc.phase) from None
    if _announce is not None:
        _announce(problem.function.__name__)
    return problem


def cmd_check(args) -> int:
    from customgrad import subchecks

    settings = _settings(args)
    settings.eps, settings.atol, settings.rtol = args.eps, args.atol, args.rtol
    settings.memory_cap = max(1, int(args.memory_cap * 2**30))
    problem = _built(settings)
    if args.projected is not None:
        return _projected(args, problem)
    try:
        report = problem.compare(keep=False)
    except TooLargeError as exc:
        raise exc.advised("--memory-cap GIB raises the cap, --no-grad NAME leaves an input "
                          "out, and --projected checks v^T J u instead, for inputs this "
                          "large.") from None
    report.label, report.function = problem.target.label, problem.function.__name__
    if not report.passed:
        report.diagnoses = _diagnoses(problem, report)
    wanted = set(args.checks or subchecks.defaults_for(problem.function))
    wanted |= {"double_backward"} if args.double else set()
    report.checks = subchecks.run(problem.function, problem.args, wanted, eps=args.eps,
                                  atol=args.atol, rtol=args.rtol, report=report)
    report.passed = all(c.passed for c in report.checks.values())
    if args.json:
        data = _names(problem)  # first, and kept: the report may carry names of its own
        data.update((k, v) for k, v in report.to_dict().items() if k not in data)
        data["guessed_constants"] = [g.to_dict() for g in problem.guesses]
        from customgrad.second_order import double_backward_json  # with --double
        data.update(double_backward_json(problem, report.checks))
        print(json.dumps(data, indent=2, allow_nan=False))
    else:
        print("\n".join([report.text(), *(f"note: {n}" for n in _guess_notes(problem))]))
    return 0 if report.passed else 1


def _diagnoses(problem: Problem, report) -> list:
    """What is wrong, for a failed check: the matrices are computed again, kept this time
    (the check itself does not keep them), where they fit the memory cap."""
    from customgrad.diagnosis import diagnose

    try:
        kept = problem.compare(keep=True)
    except CustomGradError:  # too large to keep: the probes of backward still run
        kept = report
    return diagnose(kept, problem.function, problem.args)


def _projected(args, problem: Problem) -> int:
    from customgrad.checks import double_backward_check, projected_check

    report = projected_check(problem.function, problem.args, probes=args.projected,
                             seed=problem.settings.seed, eps=args.eps, atol=args.atol,
                             rtol=args.rtol, differentiate=problem.settings.differentiate)
    double = double_backward_check(problem.function, problem.args, eps=args.eps,
                                   atol=args.atol, rtol=args.rtol) if args.double else None
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


def cmd_run(args) -> int:
    settings = _settings(args)
    settings.lr, settings.loss, settings.optimizer = args.lr, args.loss, args.optimizer
    if args.steps < 0:
        raise CustomGradError(f"--steps must be >= 0, not {args.steps}.")
    problem = _built(settings)
    if not args.json:
        for note in _guess_notes(problem):
            print(f"customgrad: note: {note}", file=sys.stderr)
    descent = problem.descent()
    losses = []
    for record in descent.run(args.steps):
        losses.append(record.loss)
        if not args.json:
            print(record.step, record.loss, flush=True)
    if args.json:
        shapes = {s.name: format_shape(s.shape) for s in problem.specs if hasattr(s, "shape")}
        print(json.dumps({**_names(problem), "seed": settings.seed, "lr": settings.lr,
                          "loss": settings.loss, "optimizer": settings.optimizer, "shapes": shapes,
                          "guessed_constants": [g.to_dict() for g in problem.guesses],
                          "losses": [x if x == x and abs(x) != float("inf") else None
                                     for x in losses]}, indent=2, allow_nan=False))
    return 0


def _message(exc: Exception) -> str:
    text = str(exc)
    where = ""
    if isinstance(exc, (FunctionError, TargetError)) and exc.file:
        where = f" ({exc.file}{f':{exc.line}' if exc.line else ''})"
        from customgrad.isolation import ProcessCrashed

        if isinstance(exc, ProcessCrashed):
            where = f" ({exc.file})"  # the message names the line already
    return textwrap.fill(f"customgrad: {text}{where}", width=100, break_long_words=False,
                         break_on_hyphens=False)


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
    global _announce
    _announce = channel.context
    name = args.target.rpartition(":")[2]
    if name.isidentifier():  # file.py:Class, module:Class: named before it is even loaded
        channel.context(name)
    return _run(args, isolated=False)


def _isolated(args) -> int:
    limit = None if args.memory_limit is None else int(args.memory_limit * 2**30)
    what = ", ".join(args.shape or []) or args.target
    from customgrad import isolation

    job = importlib.import_module("customgrad.cli")._in_child  # never __main__'s (python -m)
    timeout = getattr(args, "timeout", None)
    clock: dict = {}

    def started() -> None:  # the time counts once the child runs
        clock["deadline"] = time.monotonic() + timeout

    def overdue() -> bool:
        return time.monotonic() > clock.get("deadline", math.inf)
    try:
        return isolation.call(job, args, memory_limit=limit, what=what,
                              name=f"customgrad {args.command} {args.target}",
                              should_stop=overdue if timeout else None,
                              on_started=started if timeout else None)
    except Cancelled:
        raise FunctionError(f"{args.target} was still running after --timeout {timeout:g} s "
                            "and was stopped (an endless loop, a wait inside C, or a process "
                            "that stopped itself).") from None


def _run(args, isolated: bool) -> int:
    try:
        if isolated:
            code = _isolated(args)
        else:
            code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except CustomGradError as exc:
        print(_message(exc), file=sys.stderr)
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
        isolated = args.command != "list" and not args.in_process
        return _run(args, isolated)
    except BrokenPipeError:
        return _stdout_gone()
    except CustomGradError as exc:
        print(_message(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("customgrad: interrupted", file=sys.stderr)
        return 2
    except MemoryError:
        print("customgrad: out of memory; use smaller shapes.", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
