"""customgrad is a plain torch library: it never imports Qt, pyqtgraph or superqt."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contract():
    """import-linter is in the test extra: run it with this interpreter, never skip."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(no_cache=True))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "customgrad never imports Qt or plotting KEPT" in proc.stdout


def test_engine_imports_without_qt_modules():
    code = ("import sys, customgrad.cli, customgrad.problem, customgrad.jacobian; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'pyqtgraph', 'superqt', 'qtpy', 'playground')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
