"""customgrad.check's verdicts beside torch.autograd.gradcheck's on the Functions of
tests/data/parity_functions.py (shaped like real layers) and tests/data/complex_functions.py,
one Markdown row each.

Run from a checkout's root: ``python tests/benchmarks/parity_table.py``; in an older
checkout copy both files there first (docs/parity.md compares two).
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.getcwd())

import customgrad
from tests.data import complex_functions as cf
from tests.data import parity_functions as pf


def _rand(*shape, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=dtype)


def _complex(*shape):
    return _rand(*shape, dtype=torch.complex128)


#: (label, Function, arguments as a user passes them (requires_grad where they would),
#: gradcheck's options)
CASES = [
    ("filter bank, taps fixed", pf.FilterBank, lambda: (_rand(2, 9), _rand(3, 5)), {}),
    ("filter bank, taps fixed, buggy", pf.FilterBankFlipped,
     lambda: (_rand(2, 9), _rand(3, 5)), {}),
    ("2-D filter bank, taps fixed", pf.FilterBank2D,
     lambda: (_rand(2, 6, 7), _rand(3), _rand(3)), {}),
    ("numpy exp in place, mark_dirty", pf.NumpyExpInplace, lambda: (_rand(3, 4) * 0.5,), {}),
    ("numpy exp in place, buggy", pf.NumpyExpInplaceBuggy, lambda: (_rand(3, 4) * 0.5,), {}),
    ("exp_ in place, mark_dirty", pf.ExpInplaceCtx, lambda: (_rand(3, 4) * 0.5,), {}),
    ("sparsemax-like, dim=-1, k=None", pf.Sparsemaxish, lambda: (_rand(3, 5),), {}),
    ("sparsemax-like, buggy", pf.SparsemaxishNoCentering, lambda: (_rand(3, 5),), {}),
    ("SiLU in float32 at a float64 point", pf.SiluFloat32, lambda: (_rand(3, 4),), {}),
    ("SiLU in float32, buggy", pf.SiluFloat32Buggy, lambda: (_rand(3, 4),), {}),
    ("batched_grad, no vmap rule", pf.Sparsemaxish, lambda: (_rand(3, 5),),
     {"check_batched_grad": True}),
    ("batched_grad, backward in numpy", pf.ScaleByNumpy, lambda: (_rand(3, 4),),
     {"check_batched_grad": True}),
    ("C->R: abs(z)^2", cf.AbsSquared, lambda: (_complex(3, 4),), {}),
    ("C->R, conj(z) for z", cf.AbsSquaredConj, lambda: (_complex(3, 4),), {}),
    ("C->C: z * z", cf.Square, lambda: (_complex(3, 4),), {}),
    ("C->C, no conj on the derivative", cf.SquareNoConj, lambda: (_complex(3, 4),), {}),
    ("R->C: exp(i x)", cf.Cis, lambda: (_rand(5),), {}),
    ("R->C, grad_output not conjugated", cf.CisGradNoConj, lambda: (_rand(5),), {}),
    ("C x C -> C: z * w", cf.Multiply, lambda: (_complex(2, 3), _complex(2, 3) + 1), {}),
    ("C x C -> C, conj(grad_output)", cf.MultiplyConjGrad,
     lambda: (_complex(2, 3), _complex(2, 3) + 1), {}),
    ("C x C -> C, z's gradient doubled", cf.MultiplyTwice,
     lambda: (_complex(2, 3), _complex(2, 3) + 1), {}),
    ("R x C -> C: gain a times z", cf.Scale, lambda: (_rand(2, 3), _complex(2, 3)), {}),
    ("R x C -> C, no conj for the gain", cf.ScaleNoConj,
     lambda: (_rand(2, 3), _complex(2, 3)), {}),
]


def gradcheck(function, args, options) -> str:
    inputs = [a.clone().requires_grad_() if k == 0 else a for k, a in enumerate(args)]
    try:  # forward gets a copy, as a test of an in-place Function writes it
        ok = torch.autograd.gradcheck(lambda x, *rest: function.apply(x.clone(), *rest),
                                      tuple(inputs), raise_exception=False, **options)
    except Exception:
        ok = False
    return "passed" if ok else "FAILED"


def ours(function, args, options) -> str:
    checks = ["jacobian", "batched_grad"] if options else None
    try:
        report = customgrad.check(function, *args, **({"checks": checks} if checks else {}))
    except Exception as exc:
        return f"error: {type(exc).__name__}"
    if options:
        sub = report.checks.get("batched_grad")
        return "passed" if sub is None or sub.status == "passed" else sub.status.upper()
    kinds = ", ".join(d.kind for d in report.diagnoses)
    return ("passed" if report.passed else "FAILED") + (f" ({kinds})" if kinds else "")


def main() -> None:
    print("| Function | gradcheck | customgrad.check |")
    print("|---|---|---|")
    for label, function, make, options in CASES:
        args = make()
        print(f"| {label} | {gradcheck(function, args, options)} | "
              f"{ours(function, args, options)} |")


if __name__ == "__main__":
    main()
