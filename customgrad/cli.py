"""``customgrad list | check | run``: the engine from the command line.

Exit codes: 0 the backward agrees (or the command succeeded), 1 it does not, 2 any error
(bad target, bad shape, the Function raising...) with a one-paragraph message on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from customgrad import catalog
from customgrad.checks import double_backward_check, projected_check
from customgrad.descent import LOSSES, OPTIMIZERS
from customgrad.errors import CustomGradError, FunctionError, TargetError
from customgrad.inputs import format_shape
from customgrad.jacobian import ATOL, EPS, RTOL
from customgrad.problem import build
from customgrad.settings import Settings


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


def _add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", help="gallery name, path/to/file.py[:Class] or package.module:Class")
    p.add_argument("--shape", action="append", metavar="NAME=3x8",
                   help="shape of tensor input NAME (repeatable)")
    p.add_argument("--const", action="append", metavar="NAME=VALUE",
                   help="value of constant NAME (repeatable)")
    p.add_argument("--init", action="append", metavar="NAME=INIT",
                   help="normal, uniform(a,b), zeros or ones (repeatable)")
    p.add_argument("--dtype", choices=("float32", "float64"), default=None)
    p.add_argument("--device", default="cpu", help="cpu, cuda or mps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="customgrad", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("list", help="list the gallery of Functions")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("check", help="compare the analytic Jacobian with a numerical one")
    _add_input_options(p)
    p.add_argument("--eps", type=float, default=EPS)
    p.add_argument("--atol", type=float, default=ATOL)
    p.add_argument("--rtol", type=float, default=RTOL)
    p.add_argument("--memory-cap", type=float, default=1.0, metavar="GIB",
                   help="refuse Jacobians whose matrices exceed this many GiB (default 1)")
    p.add_argument("--projected", type=int, nargs="?", const=8, default=0, metavar="PROBES",
                   help="check v^T J u for random directions instead of full matrices "
                        "(for inputs too large for them; default 8 probes)")
    p.add_argument("--double", action="store_true",
                   help="also check double backward (like torch's gradgradcheck)")
    p = sub.add_parser("run", help="run the gradient-descent loop and print the losses")
    _add_input_options(p)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--loss", choices=LOSSES, default="mse")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd")
    return parser


def _settings(args) -> Settings:
    settings = Settings(target=args.target, shapes=_pairs(args.shape, "--shape"),
                        constants=_pairs(args.const, "--const"),
                        init=_pairs(args.init, "--init"), device=args.device, seed=args.seed)
    if args.dtype:
        settings.dtype = args.dtype
    elif args.command == "check":
        settings.dtype = "float64"
    return settings


def cmd_list(args) -> int:
    entries = catalog.entries()
    if args.json:
        print(json.dumps([{"name": e.name, "title": e.title, "category": e.category,
                           "correct": e.correct, "twin_of": e.twin_of,
                           "class": e.function.__name__} for e in entries], indent=2))
        return 0
    width = max(len(e.name) for e in entries)
    for category in catalog.CATEGORIES:
        print(f"{category}:")
        for e in entries:
            if e.category == category:
                print(f"  {e.name:<{width}}  {e.title}")
    return 0


def cmd_check(args) -> int:
    settings = _settings(args)
    settings.eps, settings.atol, settings.rtol = args.eps, args.atol, args.rtol
    settings.memory_cap = int(args.memory_cap * 2**30)
    problem = build(settings)
    if args.projected:
        report = projected_check(problem.function, problem.args, probes=args.projected,
                                 seed=settings.seed, eps=args.eps, atol=args.atol,
                                 rtol=args.rtol)
    else:
        report = problem.compare(keep=False)
    double = double_backward_check(problem.function, problem.args, eps=args.eps,
                                   atol=args.atol, rtol=args.rtol) if args.double else None
    passed = report.passed and (double is None or not double.supported or double.passed)
    if args.json:
        data = report.to_dict()
        data["target"] = problem.target.spec
        data["function"] = problem.function.__name__
        if double is not None:
            data["double_backward"] = {"supported": double.supported, "passed": double.passed,
                                       "message": double.message}
            data["passed"] = passed
        print(json.dumps(data, indent=2, allow_nan=False))
        return 0 if passed else 1
    print(f"{problem.target.label}: {report.summary()}")
    if double is not None:
        print(f"double backward: {double.message}")
    if args.projected:
        for note in report.notes:
            print(f"note: {note}")
        return 0 if passed else 1
    rows = [("block", "entries", "mismatches", "max abs", "max rel", "")]
    for b in report.blocks:
        rows.append((b.name, f"{b.size:,}", f"{b.mismatches:,}", f"{b.max_abs_error:.3g}",
                     f"{b.max_rel_error:.3g}", "ok" if b.passed else "MISMATCH"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    w = report.worst
    if w is not None:
        label = "worst entry" if not report.passed else "largest deviation"
        print(f"{label}: d {w.output_name}{list(w.output_index)} / d {w.input_name}"
              f"{list(w.input_index)}: analytic {w.analytic:.6g}, numerical {w.numerical:.6g}, "
              f"difference {w.analytic - w.numerical:.3g}")
    for note in report.notes:
        print(f"note: {note}")
    return 0 if passed else 1


def cmd_run(args) -> int:
    settings = _settings(args)
    settings.lr, settings.loss, settings.optimizer = args.lr, args.loss, args.optimizer
    if args.steps < 0:
        raise CustomGradError(f"--steps must be >= 0, not {args.steps}.")
    problem = build(settings)
    descent = problem.descent()
    losses = []
    for record in descent.run(args.steps):
        losses.append(record.loss)
        if not args.json:
            print(record.step, record.loss, flush=True)
    if args.json:
        shapes = {s.name: format_shape(s.shape) for s in problem.specs if hasattr(s, "shape")}
        print(json.dumps({"target": problem.target.spec, "seed": settings.seed,
                          "lr": settings.lr, "loss": settings.loss,
                          "optimizer": settings.optimizer, "shapes": shapes,
                          "losses": [x if x == x and abs(x) != float("inf") else None
                                     for x in losses]}, indent=2, allow_nan=False))
    return 0


def _message(exc: Exception) -> str:
    text = str(exc)
    where = ""
    if isinstance(exc, (FunctionError, TargetError)) and exc.file:
        where = f" ({exc.file}{f':{exc.line}' if exc.line else ''})"
    return textwrap.fill(f"customgrad: {text}{where}", width=100, break_long_words=False,
                         break_on_hyphens=False)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command = {"list": cmd_list, "check": cmd_check, "run": cmd_run}[args.command]
    try:
        return command(args)
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
