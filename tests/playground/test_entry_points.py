"""What the app's entry points do explicitly, and importing its modules does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split()


def test_importing_the_workers_leaves_the_fork_server_s_imports_alone():
    """The fork server's list of modules is the app's to extend (its entry point, the
    session's warm-up), not a side effect of importing playground.workers.jobs."""
    assert _run("import ast; parse = ast.parse; "
                "from customgrad.workers import processes; before = list(processes.PRELOAD); "
                "import playground.workers.jobs; "
                "print(processes.PRELOAD == before, ast.parse is parse)") == ["True", "True"]


def test_the_app_s_entry_point_locks_ast_parse():
    """playground.app.application (the app's and playground.show's start) makes ast.parse
    one thread at a time: the GUI thread and the workers' threads parse at once."""
    assert _run("import ast, sys; parse = ast.parse; import playground.app as app; "
                "same = ast.parse is parse; app.application(); "
                "print(same, ast.parse is not parse or sys.version_info >= (3, 13))") \
        == ["True", "True"]
