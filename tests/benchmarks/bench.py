"""Benchmarks, measured side by side in one run and reported as ratios.

    python tests/benchmarks/bench.py [--quick] [--json] [--only NAME ...]

Not part of the test suite: these machines are noisy, so targets live here as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import torch  # noqa: E402

from customgrad.gallery.seeds import KillHead  # noqa: E402
from customgrad.jacobian import compare  # noqa: E402


def _time(fn, repeat: int = 1) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed by the machine's noise)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_jacobian(quick: bool) -> dict:
    """Full comparison vs torch gradcheck on KillHead 64x128 float64 (8192 x 8192 Jacobian)."""
    x = torch.randn(64, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    small = torch.randn(4, 8, dtype=torch.float64)
    compare(KillHead, [small, 2])  # warm up (vmap import, allocator)
    torch.autograd.gradcheck(KillHead.apply, (small.clone().requires_grad_(), 2))
    leaf = x.clone().requires_grad_()
    gradcheck_s = _time(lambda: torch.autograd.gradcheck(KillHead.apply, (leaf, 2)))
    repeat = 2 if quick else 3
    ours_s = _time(lambda: compare(KillHead, [x, 2]), repeat)
    ours_nokeep_s = _time(lambda: compare(KillHead, [x, 2], keep=False), repeat)

    def bare():
        with torch.no_grad():
            for _ in range(2 * x.numel()):
                KillHead.apply(x, 2)
    bare_s = _time(bare, repeat)
    return {
        "gradcheck_s": gradcheck_s,
        "jacobian_s": ours_s,
        "jacobian_nokeep_s": ours_nokeep_s,
        "bare_2n_forward_s": bare_s,
        "jacobian_speedup_vs_gradcheck": gradcheck_s / ours_s,
        "jacobian_speedup_vs_gradcheck_nokeep": gradcheck_s / ours_nokeep_s,
        "jacobian_vs_lower_bound": ours_s / bare_s,
    }


BENCHES = {"jacobian": bench_jacobian}
GOALS = {
    "jacobian_speedup_vs_gradcheck": ">= 50 (floor 20)",
    "jacobian_vs_lower_bound": "ours / 2n bare apply() calls",
}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, Python " \
           f"{platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (under 2 minutes)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHES), help="run only these")
    args = parser.parse_args(argv)
    results: dict[str, float] = {}
    for name in args.only or BENCHES:
        results.update(BENCHES[name](args.quick))
    if args.json:
        print(json.dumps({"machine": machine(), **results}, indent=2))
        return 0
    print(f"machine: {machine()}")
    width = max(len(k) for k in results)
    for key, value in results.items():
        goal = GOALS.get(key, "")
        print(f"  {key:<{width}}  {value:10.3f}  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


