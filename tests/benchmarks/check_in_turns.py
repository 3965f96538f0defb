"""`customgrad check TARGET --in-process` in two source trees, in strict turns.

    python tests/benchmarks/check_in_turns.py OLD_TREE NEW_TREE TARGET [--calls N]

One process per tree (``PYTHONPATH`` set to it), each asked in turn to run ``cli.main`` once,
alternating which goes first, so the machine's drift falls on both alike; three warm-up calls
each are not counted. Prints, for each tree, the best and median wall time and CPU time
(``time.thread_time``: the calling thread's, which a busy machine disturbs less). Trees are
worktrees (``git worktree add /tmp/old REV``). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import time

WARM_UP = 3


def serve(target: str) -> None:
    """Answer each line of stdin with one check's wall and CPU seconds."""
    from customgrad import cli

    for _ in sys.stdin:
        wall, cpu = time.perf_counter(), time.thread_time()
        with contextlib.redirect_stdout(io.StringIO()):
            cli.main(["check", target, "--in-process"])
        print(f"{time.perf_counter() - wall:.6f} {time.thread_time() - cpu:.6f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("target")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.target)
        return
    trees = {"old": args.old, "new": args.new}
    procs = {name: subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), args.old, args.new, args.target,
         "--serve"], cwd="/", env={**os.environ, "PYTHONPATH": tree}, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE) for name, tree in trees.items()}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for i in range(args.calls + WARM_UP):
        for name in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
            proc = procs[name]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
            wall, cpu = map(float, proc.stdout.readline().split())
            if i >= WARM_UP:
                times[name].append((wall, cpu))
    for name, got in times.items():
        wall = [w for w, _ in got]
        cpu = [c for _, c in got]
        print(f"{args.target} {name} ({trees[name]}): wall best {min(wall) * 1e3:.1f} ms, "
              f"median {statistics.median(wall) * 1e3:.1f} ms; CPU best {min(cpu) * 1e3:.1f} "
              f"ms, median {statistics.median(cpu) * 1e3:.1f} ms")
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()


if __name__ == "__main__":
    main()
