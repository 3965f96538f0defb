"""Assertions for your own test suite: ``assert_backward(MyFunction, x, w, 2)``.

Where ``torch.autograd.gradcheck`` says "Jacobian mismatch for output 0 with respect to
input 1" and prints truncated tensors, the message here names the failing block and its
shape, how many entries disagree, the worst one by tensor index with both values, and what
the diagnosis makes of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import torch

from customgrad.api import check
from customgrad.checking import notebook
from customgrad.checking.jacobian.report import Report

__all__ = ["assert_backward"]


def assert_backward(fn: type | str, *args: object, save: str | os.PathLike | None = None,
                    eps: float | None = None, atol: float | None = None,
                    rtol: float | None = None, checks: Iterable[str] | None = None,
                    dtype: torch.dtype | str | None = None, nondet_tol: float = 0.0) -> Report:
    """Check ``fn``'s backward at ``args`` (as :func:`customgrad.check`); raise
    ``AssertionError`` with a readable account when it disagrees with finite differences.

    ``save``: on failure, also write the analytic, numerical and difference heatmaps as a
    PNG there (drawn by the playground offscreen; the message says so if Qt is missing).
    Returns the report when the check passes.
    """
    report = check(fn, *args, eps=eps, atol=atol, rtol=rtol, checks=checks, dtype=dtype,
                   nondet_tol=nondet_tol)
    if report.passed:
        return report
    raise AssertionError(failure_message(report, save))


def failure_message(report: Report, save: str | os.PathLike | None = None) -> str:
    """What :func:`assert_backward` says about a failed ``report`` (and writes to ``save``)."""
    name = report.label or report.function or "the Function"
    failing = [b for b in report.blocks if not b.passed]
    failed_checks = [c for c in report.checks.values()
                     if c.status == "failed" and c.name != "jacobian"]
    lines = [f"{name}: backward disagrees with finite differences." if failing else
             f"{name}: {', '.join(c.name for c in failed_checks)} failed."]
    for b in failing:
        lines.append(f"  {b.name}: {b.mismatches:,} of {b.size:,} entries outside "
                     f"|a - n| <= {report.atol:g} + {report.rtol:g}*|n|")
    lines += [f"  {c.name}: {c.detail}" for c in failed_checks]
    lines += ["", report.text()]
    if save is not None:
        lines.append(_save(report, save))
    return "\n".join(lines)


def _save(report: Report, path: str | os.PathLike) -> str:
    renderer = notebook.renderer()
    if isinstance(renderer, str):
        return f"heatmaps not saved to {os.fspath(path)}: {renderer}."
    try:
        written = renderer.save_heatmaps(report, path)
    except Exception as exc:
        return f"heatmaps not saved to {os.fspath(path)}: {type(exc).__name__}: {exc}"
    return f"heatmaps (analytic, numerical, difference): {written}"
