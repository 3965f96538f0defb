"""Where the app reaches past pyqtgraph's public surface, in one place.

Each patch here is applied only to the pyqtgraph versions it was checked on (:data:`CHECKED`;
pyproject.toml's bound on pyqtgraph is the same): on any other version pyqtgraph's own
behaviour stays, so a newer release that changed its insides cannot be broken by a patch
written for an older one. To allow a new release, check both patches there (the tests named
in each docstring) and move the bound here and in pyproject.toml together.

This module imports pyqtgraph only where a function uses it: :func:`lazy_qt_mirrors` runs
before pyqtgraph's first import (``playground.views`` calls it).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt

if TYPE_CHECKING:
    import pyqtgraph as pg

__all__ = ["CHECKED", "checked", "ignore_text_width", "lazy_qt_mirrors",
           "svg_tolerates_close_path"]

#: the versions these patches were checked on: from the first (inclusive) up to the second
CHECKED = ((0, 13, 4), (0, 15))


def release(text: str) -> tuple[int, ...]:
    """``0.14.1.dev0`` -> (0, 14, 1): the numbers a version starts with."""
    match = re.match(r"\d+(\.\d+)*", text.strip())
    return tuple(int(n) for n in match.group(0).split(".")) if match else ()


def checked(version: str | None = None) -> bool:
    """Whether ``version`` (pyqtgraph's own by default) is one the patches were checked on."""
    if version is None:
        import pyqtgraph

        version = pyqtgraph.__version__
    numbers = release(version)
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


#: the Qt modules pyqtgraph mirrors (``pyqtgraph.Qt.QtCore`` ...), each PySide6's of that name
MIRRORED = ("QtCore", "QtGui", "QtWidgets")


class LazyMirror(types.ModuleType):
    """``pyqtgraph.Qt.QtCore`` (or QtGui, QtWidgets) that takes each name from PySide6's
    module the first time it is asked for, and keeps it.

    pyqtgraph's ``Qt/__init__.py`` fills its mirrors (empty modules of its own) with
    ``_copy_attrs``: ``getattr`` on every name of PySide6's three modules, which makes
    PySide6 create every class and enum it has, before the first paint, where pyqtgraph and
    the app use a few hundred (docs/startup.md has the measurements). Asked by ``_copy_attrs``
    whether it has a name, this mirror says yes without fetching it; asked for the name by
    anyone else, it fetches it. What pyqtgraph sets on its mirror (its Qt5 names) stays on
    the mirror, as before."""

    def __init__(self, name: str, source: types.ModuleType) -> None:
        super().__init__(name, source.__doc__)
        self.__dict__["_mirror_source"] = source

    def __getattr__(self, name: str) -> Any:
        if _asked_by_copy_attrs(sys._getframe(1)):
            return None  # "hasattr": yes, so _copy_attrs copies nothing
        value = getattr(self.__dict__["_mirror_source"], name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self.__dict__["_mirror_source"])))


def _asked_by_copy_attrs(frame: types.FrameType) -> bool:
    code = frame.f_code
    return code.co_name == "_copy_attrs" and code.co_filename.endswith(
        os.path.join("pyqtgraph", "Qt", "__init__.py"))


def installed_version() -> str:
    """pyqtgraph's version as its ``__init__.py`` states it, without importing it (which
    :mod:`importlib.metadata` is slower to find); "" where it cannot be read."""
    spec = importlib.util.find_spec("pyqtgraph")
    if spec is None or spec.origin is None or not os.path.isfile(spec.origin):
        return ""
    with open(spec.origin, encoding="utf-8") as file:
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", file.read(), re.MULTILINE)
    return match.group(1) if match else ""


def lazy_qt_mirrors(version: str | None = None) -> bool:
    """Put :class:`LazyMirror` modules in ``sys.modules`` as pyqtgraph's Qt mirrors, for its
    import to find (its own are empty files): pyqtgraph's import then takes about a third
    less CPU (docs/startup.md). Only before pyqtgraph is imported, on a
    checked version (``version``: the installed one by default) and where pyqtgraph will pick
    PySide6 (``PYQTGRAPH_QT_LIB`` unset or PySide6, PyQt6 not imported: pyqtgraph prefers
    it); else nothing changes. True where the mirrors are in place (now or before).
    Checked by tests/playground/test_pyqtgraph_compat.py."""
    names = [f"pyqtgraph.Qt.{name}" for name in MIRRORED]
    if all(isinstance(sys.modules.get(name), LazyMirror) for name in names):
        return True
    if "pyqtgraph" in sys.modules or any(name in sys.modules for name in names):
        return False
    if os.environ.get("PYQTGRAPH_QT_LIB", "PySide6") != "PySide6" or "PyQt6" in sys.modules:
        return False
    if not checked(installed_version() if version is None else version):
        return False
    for name, full in zip(MIRRORED, names):
        sys.modules[full] = LazyMirror(full, importlib.import_module(f"PySide6.{name}"))
    return True
