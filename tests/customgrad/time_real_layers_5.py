"""Time customgrad.check against torch.autograd.gradcheck (slow mode, its default) over the
cases of test_real_layers_5.py, best of N each, side by side in one process.

    python tests/customgrad/time_real_layers_5.py [N]

Prints one line per case and the sums (docs/performance-log.md, 2026-11-29, verdict8).
"""

from __future__ import annotations

import sys
import time
import warnings

import torch

import customgrad
from tests.customgrad.test_real_layers import _copies
from tests.customgrad.test_real_layers_5 import CASES


def _best(run, n: int) -> float:
    best = float("inf")
    for _ in range(n):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main(n: int = 3) -> None:
    warnings.simplefilter("ignore")
    total_ours = total_theirs = 0.0
    for case in CASES:
        if "error" in (case.expected, case.ours):
            continue
        theirs = _best(lambda c=case: torch.autograd.gradcheck(
            c.call, _copies(c.make()), raise_exception=False), n)
        ours = _best(lambda c=case: customgrad.check(c.function, *c.make()), n)
        total_ours += ours
        total_theirs += theirs
        print(f"{case.id:48s} gradcheck {theirs * 1e3:8.1f} ms  customgrad {ours * 1e3:8.1f} ms"
              f"  ratio {ours / theirs:5.2f}")
    print(f"{'all':48s} gradcheck {total_theirs:8.2f} s   customgrad {total_ours:8.2f} s"
          f"   ratio {total_ours / total_theirs:5.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
