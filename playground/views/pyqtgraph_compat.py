"""Where the app reaches past pyqtgraph's public surface, in one place.

Each patch here is applied only to the pyqtgraph versions it was checked on (:data:`CHECKED`;
pyproject.toml's bound on pyqtgraph is the same): on any other version pyqtgraph's own
behaviour stays, so a newer release that changed its insides cannot be broken by a patch
written for an older one. To allow a new release, check both patches there (the tests named
in each docstring) and move the bound here and in pyproject.toml together.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt

__all__ = ["CHECKED", "checked", "ignore_text_width", "svg_tolerates_close_path"]

#: the versions these patches were checked on: from the first (inclusive) up to the second
CHECKED = ((0, 13, 4), (0, 15))


def release(text: str) -> tuple[int, ...]:
    """``0.14.1.dev0`` -> (0, 14, 1): the numbers a version starts with."""
    match = re.match(r"\d+(\.\d+)*", text.strip())
    return tuple(int(n) for n in match.group(0).split(".")) if match else ()


def checked(version: str | None = None) -> bool:
    """Whether ``version`` (pyqtgraph's own by default) is one the patches were checked on."""
    numbers = release(pg.__version__ if version is None else version)
    low, high = CHECKED
    return bool(numbers) and low <= numbers < high


def svg_tolerates_close_path() -> None:
    """Let pyqtgraph's SVG exporter read the closed paths newer Qt writes ("... Z").

    pyqtgraph 0.14 expects every token of a path to be an "x,y" pair and fails on "Z"
    (pyqtgraph issue #3485). Qt closes a path only after an explicit line back to its start,
    so the "Z" can be dropped for the coordinate fix-up and put back at the end. Checked by
    tests/playground/test_classroom.py's SVG exports.
    """
    if not checked():
        return
    module: Any = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    original = module.correctCoordinates
    if getattr(original, "_tolerates_close_path", False):
        return

    def correct(node, defs, item, options):
        closed = []
        for element in node.getElementsByTagName("path"):
            tokens = element.getAttribute("d").split()
            if any(t in ("Z", "z") for t in tokens):
                element.setAttribute("d", " ".join(t for t in tokens if t not in ("Z", "z")))
                closed.append(element)
        original(node, defs, item, options)
        for element in closed:
            element.setAttribute("d", element.getAttribute("d").rstrip() + " Z")

    correct._tolerates_close_path = True  # type: ignore[attr-defined]
    module.correctCoordinates = correct


def ignore_text_width(label: pg.LabelItem) -> None:
    """Let ``label`` (a plot title) ask for no width: a long title must not make one plot
    wider than the others (their views are linked and should have equal sizes).

    It replaces the label's ``updateMin``, which writes LabelItem's private ``_sizeHint``
    table. Checked by tests/playground/test_jacobian_view.py's long-title test."""
    if not checked():
        return

    def update_min() -> None:
        height = label.itemRect().height()
        label.setMinimumWidth(0)
        label.setMinimumHeight(height)
        label._sizeHint = {
            Qt.SizeHint.MinimumSize: (0, height),
            Qt.SizeHint.PreferredSize: (0, height),
            Qt.SizeHint.MaximumSize: (-1, -1),
            Qt.SizeHint.MinimumDescent: (0, 0),
        }
        label.updateGeometry()

    label.updateMin = update_min
