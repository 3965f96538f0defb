"""The architecture holds: customgrad never imports Qt, and playground keeps its layers.

import-linter's contracts live in pyproject.toml. They run here with this interpreter (never
skipped), and a copy of the tree with one forbidden import shows that they can fail.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(no_cache=True))")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LINT], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _contract_names() -> list[str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    contracts = text.split("[tool.importlinter]", 1)[1]
    return re.findall(r'^name = "(.*)"$', contracts, re.M)


def test_import_linter_contracts_are_kept():
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    output = " ".join(proc.stdout.split())  # the report wraps long names
    names = _contract_names()
    assert len(names) >= 3
    for name in names:
        assert f"{name} KEPT" in output, name


def _copy_tree(tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy)
    for package in ("customgrad", "playground"):
        shutil.copytree(ROOT / package, copy / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _add_import(module: Path, statement: str) -> None:
    text = module.read_text(encoding="utf-8")
    head, sep, rest = text.partition("from __future__ import annotations\n")
    assert sep, module
    module.write_text(f"{head}{sep}\n{statement}\n{rest}", encoding="utf-8")


def test_a_state_module_importing_a_view_breaks_the_layers(tmp_path):
    copy = _copy_tree(tmp_path)
    _add_import(copy / "playground" / "state" / "session_files.py",
                "import playground.views.zoom  # noqa")
    proc = _lint(copy)
    assert proc.returncode != 0
    output = " ".join(proc.stdout.split())
    assert "playground.state is not allowed to import playground.views" in output


def test_a_view_starting_a_worker_breaks_its_contract(tmp_path):
    copy = _copy_tree(tmp_path)
    _add_import(copy / "playground" / "views" / "picker.py", "import playground.workers.jobs")
    proc = _lint(copy)
    assert proc.returncode != 0
    assert "playground.views is not allowed to import playground.workers" in proc.stdout


@pytest.mark.parametrize("module, statement, message", [
    ("views/loss_plot/plot.py", "import playground.views.jacobian.words  # noqa",
     "playground.views.loss_plot is not allowed to import playground.views.jacobian"),
    ("views/fonts.py", "import playground.views.picker  # noqa",
     "playground.views.fonts is not allowed to import playground.views.picker"),
], ids=["pane-imports-a-pane", "helper-imports-a-pane"])
def test_panes_stay_independent_and_helpers_never_import_a_pane(tmp_path, module, statement,
                                                                 message):
    copy = _copy_tree(tmp_path)
    _add_import(copy / "playground" / module, statement)
    proc = _lint(copy)
    assert proc.returncode != 0
    assert message in " ".join(proc.stdout.split())


@pytest.mark.parametrize("module, statement, messages", [
    ("checking/fits.py", "import customgrad.workers.memory  # noqa",
     ["customgrad.checking is not allowed to import customgrad.workers"]),
    ("training/descent.py", "import multiprocessing  # noqa",
     ["customgrad.training is not allowed to import multiprocessing"]),
    ("function/inputs.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    import customgrad.checking.findings  # noqa",
     ["customgrad.function is not allowed to import customgrad.checking"]),
], ids=["numerics-import-a-worker", "numerics-import-multiprocessing", "typing-only-upward"])
def test_customgrad_keeps_its_layers_and_its_numerics_start_no_process(tmp_path, module,
                                                                       statement, messages):
    copy = _copy_tree(tmp_path)
    _add_import(copy / "customgrad" / module, statement)
    proc = _lint(copy)
    assert proc.returncode != 0
    output = " ".join(proc.stdout.split())
    for message in messages:
        assert message in output


def test_worker_process_code_importing_qt_breaks_its_contract(tmp_path):
    copy = _copy_tree(tmp_path)
    _add_import(copy / "playground" / "support" / "preview.py", "import PySide6.QtCore  # noqa")
    proc = _lint(copy)
    assert proc.returncode != 0
    assert "playground.support is not allowed to import PySide6" in " ".join(proc.stdout.split())


@pytest.mark.slow
def test_engine_imports_without_qt_modules():
    code = ("import sys, customgrad.cli, customgrad.problems.problem, "
            "customgrad.checking.jacobian; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'pyqtgraph', 'superqt', 'qtpy', 'playground')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_numerics_import_no_worker_modules():
    """Checking a Function never loads the worker modules (torch itself imports
    multiprocessing; a contract in pyproject keeps customgrad's numerics from importing it)."""
    code = ("import sys, customgrad.checking.jacobian, customgrad.checking.subchecks, "
            "customgrad.checking.diagnosis, customgrad.training.descent; bad = [m for m in "
            "sys.modules if m.startswith('customgrad.workers')]; print(bad); "
            "sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def import_cycles(*packages: str) -> list[tuple[str, str]]:
    """Pairs of modules that import each other, directly or through others. Imports under
    ``TYPE_CHECKING`` count: a module that needs another's names to be read is above it."""
    import grimp

    graph = grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)
    found = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                found.add(tuple(sorted((module, imported))))
    return sorted(found)


def test_no_import_cycles():
    assert import_cycles("customgrad", "playground") == []


def test_the_cycle_check_finds_one_through_a_lazy_or_a_typing_import(tmp_path, monkeypatch):
    package = tmp_path / "cyclic_pkg_xyz"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic_pkg_xyz import b, d\n")
    (package / "b.py").write_text("def later():\n    from cyclic_pkg_xyz import c\n")
    (package / "c.py").write_text("import cyclic_pkg_xyz.a\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from cyclic_pkg_xyz import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyclic_pkg_xyz") == [
        ("cyclic_pkg_xyz.a", "cyclic_pkg_xyz.b"), ("cyclic_pkg_xyz.a", "cyclic_pkg_xyz.c"),
        ("cyclic_pkg_xyz.a", "cyclic_pkg_xyz.d"), ("cyclic_pkg_xyz.b", "cyclic_pkg_xyz.c")]
