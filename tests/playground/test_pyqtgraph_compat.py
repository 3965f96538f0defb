"""The pyqtgraph patches apply to the versions they were checked on, and only there; the
dependency's bound in pyproject.toml is that range."""

from __future__ import annotations

import importlib
import re
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
