"""What the Jacobian pane says, as pure functions (no Qt): the text for a hovered entry, the
hint line under the heatmaps, the progress phases, and the verdict banner's lines."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from customgrad.checking.jacobian.report import COMPUTING, REFERENCE
from playground.views.jacobian.geometry import block_ticks

if TYPE_CHECKING:
    from customgrad.checking.jacobian import Axis, Report

__all__ = ["Verdict", "element", "hover_hint", "hover_text", "legend", "method_line",
           "no_second_order", "number", "phase_text", "second_order_line", "verdict"]

_PHASES = {
    "numerical": "Finite differences (numerical)",
    "analytic": "Your backward (analytic)",
    "done": "Finishing",
}


def number(value: float, digits: int = 6) -> str:
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    return f"{value:.{digits}g}"


def _error(value: float, nan_entries: int, count: bool = True) -> str:
    """An error of the report: NaN where it is infinite only because entries were NaN (the
    comparison counts them infinite so that a maximum keeps them), with how many."""
    if nan_entries and math.isinf(value):
        many = f" (in {nan_entries:,} {'entry' if nan_entries == 1 else 'entries'})"
        return "NaN" + many * count
    return number(value, 3)


def element(name: str, index: tuple[int, ...]) -> str:
    """``name[i, j]``, or the bare name of a scalar."""
    return f"{name}[{', '.join(map(str, index))}]" if index else name


def _axis_label(axis: Axis, flat: int) -> str:
    return axis.label(flat) if axis.shape else axis.element_name(flat)


def phase_text(phase: str) -> str:
    """A comparison's phase, for the progress bar."""
    return _PHASES.get(phase, phase.capitalize())


def hover_text(outputs: list[Axis], inputs: list[Axis], row: int, col: int,
               analytic: float | None, numerical: float | None, *, computing: bool = False,
               rows_done: int | None = None, cols_done: int | None = None,
               outside: bool | None = None) -> str:
    """What hovering over entry (row, col) shows: the output and input elements it relates,
    then its analytic and numerical values and their difference; empty outside the matrix.

    ``analytic`` and ``numerical`` are the entry's values (None where that matrix is not
    shown). While ``computing``, a value that is NaN, or lies in a row (analytic) or column
    (numerical) past ``rows_done`` / ``cols_done``, is "not computed yet". ``outside`` is
    the verdict on the entry (None: no verdict yet)."""
    rows, cols = sum(a.size for a in outputs), sum(a.size for a in inputs)
    if not (0 <= row < rows and 0 <= col < cols) or not outputs:
        return ""
    out = outputs[bisect.bisect_right([a.offset for a in outputs], row) - 1]
    inp = inputs[bisect.bisect_right([a.offset for a in inputs], col) - 1]
    text = f"{_axis_label(out, row - out.offset)}  /  {_axis_label(inp, col - inp.offset)}"
    a, n = analytic, numerical
    d = None if a is None or n is None else a - n
    done = {"analytic": rows_done is None or row < rows_done,
            "numerical": cols_done is None or col < cols_done}
    done["difference"] = done["analytic"] and done["numerical"]
    for key, name, value in (("analytic", "analytic", a), ("numerical", "numerical", n),
                             ("difference", "difference", d)):
        if computing and (value is None or math.isnan(value) or not done[key]):
            text += f"   {name} not computed yet"
        elif value is not None:
            text += f"   {name} {number(value)}"
    if outside is not None and a is not None and n is not None:
        text += "   ✘ outside tolerance" if outside else "   ✔ within tolerance"
    return text


def complex_entry(analytic: complex | None, numerical: complex | None) -> str:
    """A complex input's element seen whole, as gradcheck compares it: the entries of its
    real and imaginary parts as one complex number, d/dx + i d/dy."""
    shown = [f"{name} {complex_number(v)}" for name, v in (("analytic", analytic),
                                                            ("numerical", numerical))
             if v is not None]
    return f"   (as gradcheck: {', '.join(shown)})" if shown else ""


def complex_number(value: complex) -> str:
    """``1.5+0.25i``, ``-2−1i``: real part, then the imaginary one with its sign."""
    sign = "−" if value.imag < 0 else "+"
    return f"{number(value.real, 4)}{sign}{number(abs(value.imag), 4)}i"


def legend(outputs: list[Axis], inputs: list[Axis]) -> str:
    """The blocks spelled out (for when the axes are too short to label them all in full)."""
    if not inputs:
        return ""
    columns = ", ".join(text for _, text in block_ticks(inputs))
    rows = ", ".join(text for _, text in block_ticks(outputs))
    return f"Columns: {columns}.  Rows: {rows}.  "


def hover_hint(shown: bool, mask_mode: str = "", ringed: bool = False, blocks: str = "") -> str:
    """The line under the heatmaps while no entry is hovered: how to read them. ``shown``:
    there are heatmaps; ``mask_mode``: how mismatches are marked ("wash", "outline" or "");
    ``ringed``: an entry is ringed as the closest to failing; ``blocks``: the legend."""
    if not shown:
        return "Rows are output elements, columns are input elements."
    extra = ""
    if mask_mode == "wash":
        extra = "  Amber cells are outside tolerance; the ring marks the worst entry."
    elif mask_mode == "outline":
        extra = "  Outlined cells are outside tolerance; the ring marks the worst entry."
    elif ringed:
        extra = "  The ring marks the entry closest to failing."
    # the most useful first: a line too long for the window ends in "…" (whole: tooltip)
    return (blocks + extra.strip() + "  Rows are output elements, columns input "
            "elements: hover over a cell to read it. Scroll to zoom, drag to pan, "
            "double-click to fit.").strip()


@dataclass(frozen=True)
class Verdict:
    """The banner's words for a report: its state ("passed" or "failed"), the one-line head,
    the numbers, the worst entry and what failed, and the notes."""

    state: str
    head: str
    details: str
    worst: str
    notes: str


def verdict(report: Report, order: int = 1) -> Verdict:
    """The banner's words for ``report``; ``order`` 2: it is the second order's (the
    double backward's, :attr:`Report.second_order` of the first)."""
    total, bad = report.total, report.mismatches
    which = "Jacobian entries" if order == 1 else "entries"
    second = "" if order == 1 else " (double backward)"
    unchecked = report.returns_none
    if report.passed:
        head = f"✔ PASSED{second}: all {total:,} {which} within tolerance"
        if unchecked:  # a forgotten gradient returned as None passes: the line says so
            head += (f" — {unchecked[0]}'s gradient is None" if len(unchecked) == 1 else
                     f" — gradients of {', '.join(unchecked)} are None")
    else:
        head = f"✘ FAILED{second}: {bad:,} of {total:,} {which} outside tolerance"
    nans = report.nan_entries
    details = (f"max abs error {_error(report.max_abs_error, nans)}   ·   max rel error "
               f"{_error(report.max_rel_error, nans, count=False)}   ·   rule |a − n| ≤ "
               f"{report.atol:g} + {report.rtol:g}·|n|, fd eps {report.eps:g}, numerical in "
               f"{str(report.numerical_dtype).replace('torch.', '')}"
               f"   ·   {report.seconds:.2f} s")
    lines = _worst_lines(report)
    if len(report.checks) > 1:  # the checklist: each sub-check with its verdict
        marks = {"passed": "✔", "failed": "✘", "skipped": "–"}
        lines.append("checks: " + "   ".join(f"{marks[c.status]} {c.name}"
                                             for c in report.checks.values()))
        lines += [f"{c.name}: {c.detail}" for c in report.checks.values()
                  if c.status == "failed" and c.name != "jacobian"]
        failed = [c.name for c in report.checks.values() if c.status == "failed"]
        if not bad and failed:
            head = f"✘ FAILED: {', '.join(failed)} (the Jacobian agrees)"
    if order == 1 and (report.second_order is not None or report.second_order_reason):
        lines.append(second_order_line(report))
    if report.diagnoses:  # shorter words, so the line keeps to one line
        from customgrad.checking.diagnosis import PHRASES  # the engine's: after the paint

        head = (f"✘ FAILED{second}: {bad:,} of {total:,} entries outside tolerance — "
                f"{PHRASES[report.diagnoses[0].kind]}?")
        # the most useful line: the first thing Details shows
        details = "\n".join([*(f"diagnosis: {d}" for d in report.diagnoses), details])
    if unchecked and report.passed:
        one = len(unchecked) == 1
        details = "\n".join([
            f"{', '.join(unchecked)} {'is' if one else 'are'} not checked: backward returns "
            f"None for {'it' if one else 'them'}. Right for a buffer (a mask, a filter): "
            f"untick its grad box to say so. Trained, {'it' if one else 'each'} needs "
            f"a gradient: backward forgot it.", details])
    notes = [f"• {note}" for note in report.notes]
    if report.method.name != REFERENCE:  # the title says "Numerical": here is why
        notes.append(f"• {method_line(report, order)}")
    return Verdict("passed" if report.passed else "failed", head, details, "\n".join(lines),
                   "\n".join(notes))


def method_line(report: Report, order: int = 1) -> str:
    """How the middle heatmap was made (:meth:`Method.line`): the reference (autograd through
    forward, or through backward for the second order) verified by compressed finite
    differences, or finite differences and why not the reference."""
    return report.method.line("forward" if order == 1 else "backward")


def _worst_lines(report: Report) -> list[str]:
    """The worst entry, and the failing blocks where there are several blocks."""
    lines = []
    w = report.worst
    if w is not None:
        lines.append(f"worst: d {element(w.output_name, w.output_index)} / d "
                     f"{element(w.input_name, w.input_index)}: analytic "
                     f"{number(w.analytic)}, numerical {number(w.numerical)}")
    failing = [b for b in report.blocks if not b.passed]
    if failing and len(report.blocks) > 1:
        shown = "; ".join(f"{b.name} ({b.mismatches:,} of {b.size:,})" for b in failing[:3])
        more = f"; and {len(failing) - 3} more" if len(failing) > 3 else ""
        lines.append(f"failing blocks: {shown}{more}")
    return lines


def second_order_line(report: Report) -> str:
    """The first order's line about the second: its verdict (D shows it), or why none."""
    second = report.second_order
    if second is None and report.second_order_reason == COMPUTING:
        return "second order (double backward): computing…"
    if second is None:
        return f"second order: not drawn: {report.second_order_reason}"
    if second.passed:
        return (f"second order (double backward): ✔ all {second.total:,} entries within "
                "tolerance (D shows it)")
    return (f"second order (double backward): ✘ {second.mismatches:,} of {second.total:,} "
            "entries outside tolerance (D shows it)")


def no_second_order(report: Report) -> Verdict:
    """The banner's words where second order is asked for and ``report`` (the first
    order's) has none: why."""
    if report.second_order_reason == COMPUTING:
        return Verdict("neutral", "Second order: computing…", "The double backward is being "
                       "checked; its heatmaps follow the first order's verdict.", "", "")
    reason = report.second_order_reason or "this check did not compute it."
    return Verdict("neutral", "Second order not drawn", reason, "", "")


#: the longest reason the banner's head gives for a check that did not run (the head is
#: large and bold: the whole message wrapped over five lines and took the heatmaps' room)
SHORT_REASON = 48


def not_computed(message: str) -> Verdict:
    """The banner's words for a check that did not run: its head says why in short (what
    raised, as "LinearFunctionBuggy.forward raised RuntimeError"; a message without that
    form, its first sentence, which the line cuts at a word where it is long), the whole
    message in the details. Never "the error above says why": once the error banner was
    dismissed nothing was above, and in presentation that pointer was the largest text on
    the screen while the error was the smallest (trial3 T7, T15)."""
    text = message.strip()
    first = text.splitlines()[0] if text else "no reason given"
    short = first.split(": ", 1)[0]
    if first.startswith("cancelled") or len(short) > SHORT_REASON:
        short = first  # ("cancelled at loops.py:13 (in backward)": all of it)
    details = "" if short == text else text
    return Verdict("neutral", f"Jacobian not computed: {short}", details, "", "")
