"""The CLI's arguments: the parser (its options, their checked values, their help) and the
:class:`~customgrad.problems.settings.Settings` they make. Only the standard library and torch-free
data here: ``--help`` and ``--version`` answer without torch."""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import sys
from typing import TYPE_CHECKING

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
from customgrad.errors import CustomGradError

if TYPE_CHECKING:
    from customgrad.problems.settings import Settings

DESCRIPTION = ("The engine from the command line: list the gallery, check a Function's "
               "backward against finite differences, run gradient descent.")
EPILOG = ("Exit codes: 0 the backward agrees (or the command succeeded), 1 it does not, "
          "2 any error, 141 when the reader of stdout goes away (e.g. | head).")
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


def _number(text: str, meaning: str, *, zero: bool = False) -> float:
    """A finite number above 0 (or at least 0 where ``zero``), or argparse's error saying
    what it must be."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise argparse.ArgumentTypeError(f"{meaning}, not {text}")
    return value


def _gib(text: str) -> float:
    return _number(text, "GIB must be a positive number of GiB")


def _limit_gib(text: str) -> float:
    return _number(text, "GIB must be a number of GiB (0: no limit)", zero=True)


def _nondet_tol(text: str) -> float:
    return _number(text, "TOL must be a number >= 0", zero=True)


def _seconds(text: str) -> float:
    return _number(text, "SECONDS must be a positive number")


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
                   help="how the seed draws tensor input NAME: normal, uniform(a,b), zeros, "
                        "ones or randint(a,b) (int64 whole numbers a <= k < b: indices; "
                        "repeatable; default: normal)")
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
    p = sub.add_parser("list", help="list the gallery of Functions, or those of a file",
                       description="List the gallery of Functions by group, or the Functions "
                                   "a file or module defines, as check and run take them.")
    p.add_argument("target", nargs="?", default=None,
                   help="path/to/file.py or package.module: list its Functions (imported in "
                        "a child process; default: the gallery)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--in-process", action="store_true",
                   help="import the file in this process, not in a child process")
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
    p.add_argument("--nondet-tol", type=_nondet_tol, default=0.0, metavar="TOL",
                   help="how far two backward calls on the same graph may differ, as "
                        "gradcheck's nondet_tol (default: %(default)s; a backward summing "
                        "by atomic adds on a GPU needs a little above its rounding)")
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
    from customgrad.problems.settings import Settings

    settings = Settings(target=args.target, shapes=_pairs(args.shape, "--shape"),
                        constants=dict(_pairs(args.const, "--const")),  # (dict[str, object])
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
