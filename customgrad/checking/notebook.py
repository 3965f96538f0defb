"""A report's notebook display: :meth:`Report._repr_html_` and ``_repr_png_``.

The heatmaps are drawn by the playground (Qt, offscreen), found by name at call time
(:data:`RENDERER`): this package never imports Qt, and without it a report shows as text.
Nothing here imports the report's module, not even for typing (the report imports this one
when a notebook asks): what the display reads of a report is :class:`NotebookReport`.
"""

from __future__ import annotations

import base64
import html
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

#: where the heatmaps are drawn (imported by name when first needed: it needs Qt)
RENDERER = "playground.render"

__all__ = ["RENDERER", "NotebookReport", "heatmaps_png", "renderer", "report_html", "report_png"]


class NotebookReport(Protocol):
    """What the display reads of a :class:`customgrad.checking.jacobian.report.Report`."""

    @property
    def _cache(self) -> dict: ...
    @property
    def passed(self) -> bool: ...
    @property
    def blocks(self) -> Sequence[Any]: ...
    @property
    def worst(self) -> object | None: ...
    @property
    def diagnoses(self) -> Sequence[object]: ...
    @property
    def checks(self) -> Mapping[str, Any]: ...
    @property
    def notes(self) -> Sequence[str]: ...
    @property
    def method(self) -> Any: ...  # its line() says how the numerical Jacobian was made
    def text(self) -> str: ...
    def worst_line(self) -> str | None: ...


def renderer():
    """The playground's drawing module (:data:`RENDERER`), or why it cannot be had: a
    sentence. Imported by name, so that this package never imports Qt itself."""
    try:
        return importlib.import_module(RENDERER)
    except Exception as exc:  # no PySide6, a Qt that cannot load: the text still shows
        return (f"drawing the heatmaps needs the playground's Qt, which cannot be imported "
                f"here ({type(exc).__name__}: {exc})")


def heatmaps_png(report: NotebookReport) -> tuple[bytes | None, str]:
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


def report_png(report: NotebookReport) -> bytes | None:
    """``Report._repr_png_``: the heatmaps, or None (the front end then shows the text)."""
    return heatmaps_png(report)[0]


_PASS_COLOUR, _FAIL_COLOUR = "#1b7a36", "#c0261c"  # the app's banner colours


def report_html(report: NotebookReport) -> str:
    """``Report._repr_html_``: the verdict line, the block table, the worst entry,
    diagnoses, notes and the method (how the numerical Jacobian was made), and the three
    heatmaps as an inline PNG; without Qt, the CLI's text in a ``<pre>`` and the reason the
    heatmaps are missing."""
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
    worst = report.worst_line()
    lines = [worst] if worst is not None else []
    lines += [f"diagnosis: {d}" for d in report.diagnoses]
    lines += [f"check {c.name}: {c.status}: {c.detail}" for c in report.checks.values()
              if c.name != "jacobian"]
    lines += [f"note: {n}" for n in report.notes]
    lines.append(f"method: {report.method.line()}")
    if lines:
        parts.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>")
    data = base64.b64encode(png).decode("ascii")
    parts.append(f"<img src='data:image/png;base64,{data}' style='max-width:100%' "
                 "alt='analytic, numerical and difference Jacobians as heatmaps'/></div>")
    return "".join(parts)
