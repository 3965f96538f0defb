"""Two commits' benchmarks, side by side in one run: their ``bench.py`` take turns.

    python tests/benchmarks/compare_commits.py OLD [NEW] [--rounds N] [--only NAME ...]

Each commit is checked out into a temporary worktree and runs its own ``bench.py --quick
--json`` (NEW defaults to the working tree as it is), alternating OLD, NEW, OLD, NEW, ... so
that the machine's drift falls on both alike. For each measure it prints the best reading of
each (the least disturbed: noise only ever slows a run down), NEW / OLD, and two marks: against
OLD (✓ better by more than the 10 % noise band, ≈ within it, ✗ worse) and against the goal in
``bench.GOALS`` (✓ met, ✗ missed, blank where the goal is no number). ``bench.py --against
REV`` runs it against REV. Run it before a change that touches the window, the plot, the
workers or the engine.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: measures where a larger reading is better (speed-ups, throughput)
HIGHER_IS_BETTER = ("speedup", "throughput", "steps_per_s")
#: a change within this fraction of the old reading is noise on these machines
NOISE = 0.10
_GOAL = re.compile(r"\s*(<=|>=)\s*([0-9.]+)")


def against_old(key: str, old: float, new: float) -> str:
    """✓ better than ``old`` by more than the noise band, ≈ within it, ✗ worse."""
    if not old:
        return " "
    change = (new - old) / abs(old)
    if any(word in key for word in HIGHER_IS_BETTER):
        change = -change
    return "≈" if abs(change) <= NOISE else ("✗" if change > 0 else "✓")


def against_goal(goal: str, value: float) -> str:
    """✓ where ``value`` meets a goal written "<= N" or ">= N" (its first words), ✗ where it
    misses it, blank for a goal that is no number ("flat", "timed: ...")."""
    match = _GOAL.match(goal or "")
    if match is None:
        return " "
    bound = float(match.group(2))
    return "✓" if (value <= bound if match.group(1) == "<=" else value >= bound) else "✗"


def _goals() -> dict[str, str]:
    """The goals this tree's bench.py states (it imports torch: read once the runs are done)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench import GOALS

    return GOALS


def _run(tree: Path, only: list[str]) -> dict:
    command = [sys.executable, "tests/benchmarks/bench.py", "--quick", "--json"]
    if only:
        command += ["--only", *only]
    out = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout[out.stdout.index("{"):])


def _best(key: str, values: list[float]) -> float:
    return max(values) if any(word in key for word in HIGHER_IS_BETTER) else min(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", help="a commit (default: the working tree)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as tmp:
        trees = {}
        for label, commit in (("old", args.old), ("new", args.new)):
            if commit is None:
                trees[label] = ROOT
                continue
            path = Path(tmp) / label
            subprocess.run(["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT,
                           check=True, capture_output=True)
            trees[label] = path
        try:
            readings: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
            machine = ""
            for _ in range(args.rounds):
                for label in ("old", "new"):
                    result = _run(trees[label], args.only)
                    machine = result.pop("machine", machine)
                    for key, value in result.items():
                        readings[label].setdefault(key, []).append(float(value))
        finally:
            for path in trees.values():
                if path != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(path)],
                                   cwd=ROOT, check=False, capture_output=True)
    print(f"machine: {machine}; {args.rounds} rounds, best of each")
    print(f"old: {args.old}; new: {args.new or 'working tree'}")
    keys = [k for k in readings["old"] if k in readings["new"]]
    width = max(len(k) for k in keys)
    goals = _goals()
    print(f"  {'measure':<{width}}  {'old':>10}  {'new':>10}  new/old  vs old  goal")
    for key in keys:
        old = _best(key, readings["old"][key])
        new = _best(key, readings["new"][key])
        ratio = new / old if old else float("nan")
        goal = goals.get(key, "")
        print(f"  {key:<{width}}  {old:10.4g}  {new:10.4g}  {ratio:7.2f}  "
              f"{against_old(key, old, new):^6}  {against_goal(goal, new)} {goal}".rstrip())
    print(f"vs old: ✓ better, ≈ within ±{NOISE:.0%} (noise), ✗ worse; goal: ✓ met, ✗ missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
