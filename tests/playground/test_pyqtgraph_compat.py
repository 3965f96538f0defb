"""The pyqtgraph patches apply to the versions they were checked on, and only there; the
dependency's bound in pyproject.toml is that range."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyqtgraph as pg
import pytest

from playground.views import pyqtgraph_compat as compat

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("version", "expected"), [
    ("0.13.4", True), ("0.13.7", True), ("0.14.0", True), ("0.14.1.dev0", True),
    ("0.13.3", False), ("0.15.0", False), ("0.15.0rc1", False), ("1.0", False), ("", False),
])
def test_the_checked_versions(version, expected):
    assert compat.checked(version) is expected


def test_the_installed_pyqtgraph_is_one_the_patches_were_checked_on():
    assert compat.checked(), pg.__version__  # else pip ignored pyproject's bound


def test_pyprojects_bound_on_pyqtgraph_is_the_checked_range():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (requirement,) = re.findall(r'^\s*"(pyqtgraph\b[^"]*)"', text, re.MULTILINE)
    low, high = (".".join(map(str, v)) for v in compat.CHECKED)
    assert requirement.replace(" ", "") == f"pyqtgraph>={low},<{high}"


def test_on_a_version_not_checked_pyqtgraph_is_left_as_it_is(monkeypatch, qtbot):
    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    original = module.correctCoordinates
    monkeypatch.setattr(module, "correctCoordinates", original)
    monkeypatch.setattr(pg, "__version__", "0.15.0")
    compat.svg_tolerates_close_path()
    assert module.correctCoordinates is original
    label = pg.LabelItem("a long title")
    update_min = label.updateMin
    compat.ignore_text_width(label)
    assert label.updateMin == update_min
    monkeypatch.setattr(pg, "__version__", "0.14.0")
    compat.ignore_text_width(label)
    label.setText("a much longer title than before")
    assert label.minimumWidth() == 0


#: imports pyqtgraph as the app does (playground.views first: the lazy mirrors), or with the
#: version gate given argv[1]; then uses it as the app does and prints what it found
MIRRORS = """
import json, os, sys, tempfile
import PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets
from playground.views import pyqtgraph_compat as compat
if sys.argv[1] != "app":
    for name in compat.MIRRORED:  # as though playground.views had not run it
        sys.modules.pop(f"pyqtgraph.Qt.{name}", None)
    print(json.dumps({"installed": compat.lazy_qt_mirrors(version=sys.argv[1])}))
import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
compat.svg_tolerates_close_path()  # as playground.views.export does
from pyqtgraph.Qt import QtCore, QtGui, QtWidgets
mirrors = (QtCore, QtGui, QtWidgets)
kinds = [type(m).__name__ for m in mirrors]
fetched = sum(len(vars(m)) for m in mirrors)  # names held after the import
app = QtWidgets.QApplication([])
widget = pg.PlotWidget()
widget.plot(np.arange(100.0), np.sin(np.arange(100.0)), pen="r")
image = pg.ImageItem(np.random.default_rng(0).random((8, 8)))
bar = pg.ColorBarItem(values=(0, 1), colorMap="viridis")
bar.setImageItem(image)
plot = widget.getPlotItem()
plot.addItem(image)
widget.resize(300, 200)
widget.show()
app.processEvents()
folder = tempfile.mkdtemp()
sizes = {}
for kind, ending in (("ImageExporter", "png"), ("SVGExporter", "svg"), ("CSVExporter", "csv")):
    path = os.path.join(folder, f"{kind}.{ending}")
    getattr(pg.exporters, kind)(plot).export(path)
    sizes[kind] = os.path.getsize(path) > 0
missing = [(m.__name__, n) for m, src in zip(mirrors, (PySide6.QtCore, PySide6.QtGui,
           PySide6.QtWidgets)) for n in dir(src) if getattr(m, n) is not getattr(src, n)
           and not n.startswith("__") and n != "QFileSystemModel"]
print(json.dumps({"kinds": kinds, "fetched": fetched,
                  "names": sum(len(dir(s)) for s in (PySide6.QtCore, PySide6.QtGui,
                                                      PySide6.QtWidgets)),
                  "exported": sizes, "missing": missing,
                  "dir_complete": all(set(dir(src)) <= set(dir(m)) for m, src in zip(
                      mirrors, (PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets))),
                  "opengl": hasattr(QtWidgets, "QOpenGLWidget"),
                  "version": compat.installed_version() == pg.__version__,
                  "pyside_untouched": not hasattr(PySide6.QtWidgets, "QOpenGLWidget")}))
"""


def _mirrors(way: str) -> list[dict]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    env.pop("PYQTGRAPH_QT_LIB", None)
    proc = subprocess.run([sys.executable, "-c", MIRRORS, way], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_pyqtgraph_imported_with_lazy_mirrors_works_as_before():
    """As the app imports it (playground.views first), pyqtgraph's Qt mirrors are filled as
    used: after its import they hold a fraction of PySide6's names (it fetched each of them,
    making every class and enum); every name still resolves to PySide6's own object, listed
    by ``dir``; pyqtgraph's own additions stay on its mirror; plots, images, colour bars and
    the PNG, SVG and CSV exporters work."""
    (found,) = _mirrors("app")
    assert found["kinds"] == ["LazyMirror"] * 3
    assert found["fetched"] < found["names"] / 2
    assert found["missing"] == []
    assert found["dir_complete"] and found["opengl"] and found["version"]
    assert found["pyside_untouched"]
    assert found["exported"] == {"ImageExporter": True, "SVGExporter": True,
                                 "CSVExporter": True}


def test_on_a_version_not_checked_pyqtgraph_fills_its_own_mirrors():
    """The version gate: on a version the mirrors were not checked on, pyqtgraph's import
    finds no mirror of ours and copies PySide6's names itself, as without this module."""
    told, found = _mirrors("0.15.0")
    assert told == {"installed": False}
    assert found["kinds"] == ["module"] * 3
    assert found["fetched"] >= found["names"]
    assert found["missing"] == [] and found["exported"]["SVGExporter"]


def test_no_mirrors_once_pyqtgraph_is_imported_or_for_another_qt(monkeypatch):
    """Too late (pyqtgraph imported) or another Qt binding asked for: nothing changes."""
    assert "pyqtgraph" in sys.modules  # imported at the top of this file
    assert compat.lazy_qt_mirrors() is isinstance(sys.modules["pyqtgraph.Qt.QtCore"],
                                                 compat.LazyMirror)
    for name in compat.MIRRORED:
        monkeypatch.delitem(sys.modules, f"pyqtgraph.Qt.{name}")
    assert compat.lazy_qt_mirrors() is False  # pyqtgraph is here: its own stay
    monkeypatch.delitem(sys.modules, "pyqtgraph")
    monkeypatch.setenv("PYQTGRAPH_QT_LIB", "PyQt6")
    assert compat.lazy_qt_mirrors() is False
    assert not any(f"pyqtgraph.Qt.{name}" in sys.modules for name in compat.MIRRORED)


#: imports pyqtgraph as the app does (playground.views first), or with the version gate
#: given argv[1]; prints which deferred parts its import loaded, then asks for each name
DEFERRED = """
import importlib, json, sys
from playground.views import pyqtgraph_compat as compat
if sys.argv[1] != "app":
    sys.meta_path[:] = [f for f in sys.meta_path if f is not compat._LighterFinder]
    print(json.dumps({"applies": compat.deferred_parts(version=sys.argv[1])}))
import pyqtgraph as pg
parts = [f"pyqtgraph.{module}" for module in compat.DEFERRED_PARTS]
loaded = [name for name in parts if name in sys.modules]
listed = all(name in dir(pg) for names in compat.DEFERRED_PARTS.values() for name in names)
same = {module: getattr(importlib.import_module(f"pyqtgraph.{module}"), "__all__", None)
        for module in compat.DEFERRED_PARTS}
found = all(getattr(pg, name) is getattr(sys.modules[f"pyqtgraph.{module}"], name)
            for module, names in compat.DEFERRED_PARTS.items() for name in names)
from pyqtgraph import ImageView, ROI  # noqa: F401 (as a user's code would)
try:
    pg.NoSuchThing
    missing = "found"
except AttributeError as error:
    missing = str(error)
print(json.dumps({"loaded": loaded, "count": len(parts), "listed": listed, "found": found,
                  "all": {m: list(v) if v is not None else None for m, v in same.items()},
                  "missing": missing, "version": pg.__version__}))
"""


def _deferred(way: str) -> list[dict]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", DEFERRED, way], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_pyqtgraphs_parts_the_app_does_not_use_are_imported_when_asked_for():
    """As the app imports pyqtgraph, none of the deferred parts is loaded by its import (its
    ``__init__`` imports every one of them: this fails without the patch); each of their
    names is still listed by ``dir(pyqtgraph)`` and gives the module's own object when asked
    for, ``from pyqtgraph import ...`` too; the table names each module's ``__all__``; a name
    that is nowhere still raises AttributeError."""
    (found,) = _deferred("app")
    assert found["loaded"] == []
    assert found["count"] == len(compat.DEFERRED_PARTS) > 20
    assert found["listed"] and found["found"]
    assert found["all"] == {module: list(names) for module, names in
                            compat.DEFERRED_PARTS.items()}
    assert "NoSuchThing" in found["missing"]


def test_on_a_version_not_checked_pyqtgraph_imports_all_its_parts():
    told, found = _deferred("0.15.0")
    assert told == {"applies": False}
    assert len(found["loaded"]) == found["count"]
    assert found["found"]


def test_deferred_parts_only_where_each_import_line_is_found():
    """Another version's ``__init__`` (a line missing, or twice): imported as it is."""
    source = "".join(f"{compat._import_line(module)}\n" for module in compat.DEFERRED_PARTS)
    lighter = compat.without_deferred_parts("import os\n" + source + "x = 1\n")
    assert lighter is not None
    assert lighter.splitlines()[0] == "import os" and lighter.splitlines()[-1] == "x = 1"
    assert all(line.startswith("pass  # ") for line in lighter.splitlines()[1:-1])
    assert compat.without_deferred_parts(source.replace("ROI import *", "ROI import ROI")) \
        is None
    assert compat.without_deferred_parts(source + "from .imageview import *\n") is None
