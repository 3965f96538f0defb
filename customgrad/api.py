"""The Python API: :func:`check` a Function at your own tensors, and the report's notebook
display.

``check`` takes forward's actual arguments, exactly as ``apply`` takes them, and returns the
:class:`~customgrad.jacobian.Report` the CLI prints. The heatmaps of a notebook display are
drawn by the playground (Qt, offscreen), found by name at call time: this package never
imports Qt, and without it a report shows as text.
"""

from __future__ import annotations

import base64
import html
import importlib
from collections.abc import Iterable

import torch

from customgrad import catalog, subchecks
from customgrad.diagnosis import diagnose
from customgrad.errors import SpecError
from customgrad.inputs import parse_dtype
from customgrad.jacobian import ATOL, EPS, RTOL, Report, compare
from customgrad.loader import is_function, resolve

#: the checks :func:`check` can run (customgrad.subchecks: the full Jacobian, always, double
#: backward, forward AD, batched gradients, undefined gradients, gradient dtypes and
#: nondeterminism); by default gradcheck's: the Jacobian and undefined gradients
CHECKS = subchecks.NAMES
#: where the heatmaps are drawn (imported by name when first needed: it needs Qt)
RENDERER = "playground.render"

__all__ = ["CHECKS", "check", "heatmaps_png", "renderer", "report_html", "report_png"]


def check(fn: type | str, *args: object, eps: float | None = None, atol: float | None = None,
          rtol: float | None = None, checks: Iterable[str] | None = None,
          dtype: torch.dtype | str | None = None) -> Report:
    """Compare ``fn``'s backward with finite differences at ``args`` (forward's arguments,
    tensors and constants, as ``fn.apply`` takes them).

    ``fn`` is a ``torch.autograd.Function`` subclass (or a CLI target: a gallery name,
    ``path/to/file.py:Class``, ``package.module:Class``). Tolerances default to gradcheck's
    (eps 1e-6, atol 1e-5, rtol 1e-3); ``dtype`` (``torch.float64``, ``"float32"``) converts
    the floating-point tensors first; ``checks`` names the sub-checks to run beside the
    Jacobian (:data:`CHECKS`, gradcheck's by default; each lands in :attr:`Report.checks`). The
    caller's tensors and their ``.grad`` are never touched: the check works on copies. A
    failed check is diagnosed (:attr:`Report.diagnoses`). Raises the engine's errors
    (``FunctionError`` when the Function raises or breaks autograd's contract, ``SpecError``
    for bad arguments or tolerances, ``TooLargeError`` beyond 1 GiB of matrices).
    """
    function, label = _function(fn)
    wanted = _checks(checks, function)
    target_dtype = None if dtype is None else parse_dtype(dtype)
    copies = [_copy(a, target_dtype) for a in args]
    eps, atol, rtol = (EPS if eps is None else eps, ATOL if atol is None else atol,
                       RTOL if rtol is None else rtol)
    report = compare(function, copies, eps=eps, atol=atol, rtol=rtol)
    report.label, report.function = label, function.__name__
    if not report.passed:
        report.diagnoses = diagnose(report, function, [_copy(a, target_dtype) for a in args])
    report.checks = subchecks.run(function, [_copy(a, target_dtype) for a in args], wanted,
                                  eps=eps, atol=atol, rtol=rtol, report=report)
    report.passed = all(c.passed for c in report.checks.values())
    return report


def _function(fn: type | str) -> tuple[type, str]:
    """The Function class and the title its verdict line starts with (the gallery's title
    for a gallery Function, as the CLI prints it; else the class name)."""
    if isinstance(fn, str):
        target = resolve(fn)
        return target.function, target.label
    if not is_function(fn):
        raise SpecError(f"check() takes a torch.autograd.Function subclass (or a target name), "
                        f"not {fn!r}.")
    for entry in catalog.entries():
        if entry.function is fn:
            return fn, entry.title
    return fn, fn.__name__


def _checks(checks: Iterable[str] | None, function: type) -> set[str]:
    if checks is None:
        return set(subchecks.defaults_for(function))
    names = subchecks.parse(checks if isinstance(checks, str) else ",".join(checks))
    return set(names) | {"jacobian"}


def _copy(value: object, dtype: torch.dtype | None) -> object:
    """A detached copy of a tensor (floating point ones converted to ``dtype`` if given), so
    that nothing the check does reaches the caller's tensor or its ``.grad``; other values
    as they are."""
    if not isinstance(value, torch.Tensor):
        return value
    copy = value.detach().clone()
    if dtype is not None and copy.is_floating_point():
        copy = copy.to(dtype)
    return copy


# ------------------------------------------------------------------ notebook display


def renderer():
    """The playground's drawing module (:data:`RENDERER`), or why it cannot be had: a
    sentence. Imported by name, so that this package never imports Qt itself."""
    try:
        return importlib.import_module(RENDERER)
    except Exception as exc:  # no PySide6, a Qt that cannot load: the text still shows
        return (f"drawing the heatmaps needs the playground's Qt, which cannot be imported "
                f"here ({type(exc).__name__}: {exc})")


def heatmaps_png(report: Report) -> tuple[bytes | None, str]:
    """The three heatmaps as PNG bytes (drawn once per report, then cached), or None and
    why not."""
    cached = report._cache.get("png")
    if cached is not None:
        return cached
    drawer = renderer()
    if isinstance(drawer, str):
        result: tuple[bytes | None, str] = (None, drawer)
    else:
        try:
            result = (drawer.heatmaps_png(report), "")
        except Exception as exc:
            result = (None, f"the heatmaps could not be drawn ({type(exc).__name__}: {exc})")
    report._cache["png"] = result
    return result


def report_png(report: Report) -> bytes | None:
    """``Report._repr_png_``: the heatmaps, or None (the front end then shows the text)."""
    return heatmaps_png(report)[0]


_PASS_COLOUR, _FAIL_COLOUR = "#1b7a36", "#c0261c"  # the app's banner colours


def report_html(report: Report) -> str:
    """``Report._repr_html_``: the verdict line, the block table, the worst entry,
    diagnoses and notes, and the three heatmaps as an inline PNG; without Qt, the CLI's
    text in a ``<pre>`` and the reason the heatmaps are missing."""
    png, why = heatmaps_png(report)
    if png is None:
        return (f"<div class='customgrad-report'><pre>{html.escape(report.text())}</pre>"
                f"<p><i>{html.escape(why)}</i></p></div>")
    e = html.escape
    head = report.text().splitlines()[0]
    colour = _PASS_COLOUR if report.passed else _FAIL_COLOUR
    parts = [f"<div class='customgrad-report'><p style='color:{colour};font-weight:bold'>"
             f"{e(head)}</p>"]
    cells = "".join(f"<th>{e(h)}</th>" for h in ("block", "entries", "mismatches", "max abs",
                                                  "max rel", ""))
    rows = [f"<tr>{cells}</tr>"]
    for b in report.blocks:
        verdict = "ok" if b.passed else f"<b style='color:{_FAIL_COLOUR}'>MISMATCH</b>"
        rows.append(f"<tr><td style='text-align:left'>{e(b.name)}</td><td>{b.size:,}</td>"
                    f"<td>{b.mismatches:,}</td><td>{b.max_abs_error:.3g}</td>"
                    f"<td>{b.max_rel_error:.3g}</td><td>{verdict}</td></tr>")
    parts.append(f"<table>{''.join(rows)}</table>")
    lines = [report.worst_line()] if report.worst is not None else []
    lines += [f"diagnosis: {d}" for d in report.diagnoses]
    lines += [f"check {c.name}: {c.status}: {c.detail}" for c in report.checks.values()
              if c.name != "jacobian"]
    lines += [f"note: {n}" for n in report.notes]
    if lines:
        parts.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>")
    data = base64.b64encode(png).decode("ascii")
    parts.append(f"<img src='data:image/png;base64,{data}' style='max-width:100%' "
                 "alt='analytic, numerical and difference Jacobians as heatmaps'/></div>")
    return "".join(parts)
