"""playground.show: the app opened on the caller's own tensors and Function (a script's
``__main__``, a notebook cell, an importable module), saved into sessions as data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

pytest.importorskip("pytestqt")

import playground
from customgrad.errors import SpecError
from customgrad.function.inputs import GIVEN
from customgrad.targets.loader import PROCESS_LOCAL
from customgrad.workers.processes import portable
from playground import python_entry
from playground.state import paths, session_files
from tests.data.notebook import SCALE, SCALE_BUGGY, as_in_jupyter, run_cell

#: playground.show from scripts and notebooks, in processes
pytestmark = pytest.mark.slow

TIMEOUT = 20_000
ROOT = Path(__file__).resolve().parents[2]

def _notebook_class(text: str, name: str, number: int, namespace: dict | None = None) -> type:
    return run_cell(text, number, namespace)[name]


@pytest.fixture(autouse=True)
def jupyter_main(monkeypatch):
    """The notebook cells here run as in a kernel, whose ``__main__`` has no file."""
    as_in_jupyter(monkeypatch)


@pytest.fixture
def open_windows(qtbot):
    """show() windows opened during the test, closed (and their work stopped) after it."""
    yield python_entry._open
    for window in list(python_entry._open):
        window.session.shutdown(wait=0.5)
        window.close()
    qtbot.waitUntil(lambda: not python_entry._open, timeout=TIMEOUT)


def _show(qtbot, *args, **options):
    """show() without blocking, and the window once its first report arrived."""
    reports = []
    window = playground.show(*args, block=False, **options)
    window.session.jacobianReady.connect(reports.append)
    qtbot.waitUntil(lambda: len(reports) > 0, timeout=TIMEOUT)
    return window, reports


def test_the_window_starts_from_the_callers_tensors(qtbot, open_windows):
    scale = _notebook_class(SCALE_BUGGY, "Scale", 11)
    x = torch.randn(3, 4, dtype=torch.float64)
    w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    before = (x.clone(), w.detach().clone())
    window, reports = _show(qtbot, scale, x, w, 2.0)
    session = window.session
    assert window in open_windows and window.isVisible()
    assert torch.equal(session.problem.args[0], x) and torch.equal(session.problem.args[1], w)
    assert session.problem.args[2] == 2.0 and session.settings.dtype == "float64"
    report = reports[0]
    assert not report.passed  # the twin forgets factor for w
    assert [b.passed for b in report.blocks] == [True, False]
    # the form offers the given tensor back, and the caller's tensors are untouched
    assert window.inputs.fields["x.init"].currentText() == GIVEN
    assert torch.equal(x, before[0]) and torch.equal(w.detach(), before[1]) and w.grad is None


def test_reset_returns_to_the_given_tensors_bit_for_bit(qtbot, open_windows):
    scale = _notebook_class(SCALE, "Scale", 12)
    x, w = torch.randn(2, 3), torch.randn(2, 3)
    window, _ = _show(qtbot, scale, x, w, 0.5, lr=0.1)
    session = window.session
    losses = []
    session.batchReady.connect(lambda batch: losses.extend(batch.losses.tolist()))
    session.run_steps(5)
    qtbot.waitUntil(lambda: session.step >= 5, timeout=TIMEOUT)
    first = list(losses[:5])
    with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT) as blocker:
        session.reset()
    assert blocker.args[0].passed and session.step == 0
    assert torch.equal(session.problem.args[0], x) and torch.equal(session.problem.args[1], w)
    losses.clear()
    session.run_steps(5)
    qtbot.waitUntil(lambda: len(losses) >= 5, timeout=TIMEOUT)
    assert losses[:5] == first  # the seeded loop from the same tensors: the same losses


def test_a_notebook_function_is_captured_so_that_workers_and_sessions_load_it(
        qtbot, open_windows, tmp_path):
    namespace = {"__name__": "__main__"}
    _notebook_class("import torch\nGAIN = 3.0\n", "torch", 13, namespace)
    gain = _notebook_class(
        "class Gain(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return GAIN * x\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return GAIN * g\n",
        "Gain", 14, namespace)
    x = torch.randn(5, dtype=torch.float64)
    window, reports = _show(qtbot, gain, x)
    target = window.session.target
    assert reports[0].passed
    assert target.function is gain  # the window holds the caller's own class
    assert portable(target) and "GAIN = 3.0" in target.code
    assert Path(target.file).parent == paths.editor_dir()

    saved = window.classroom.save_session(tmp_path / "gain.json")
    data = json.loads(Path(saved).read_text(encoding="utf-8"))
    assert data["function"]["kind"] == "editor" and "GAIN = 3.0" in data["function"]["source"]
    assert "npy" in json.dumps(data["settings"]["given"])
    loaded = session_files.read(saved)
    assert loaded.problems == []
    assert torch.equal(loaded.settings.given["x"], x)
    assert loaded.settings.init == {"x": GIVEN}


def test_a_function_that_cannot_be_captured_runs_here_and_its_session_says_so(
        qtbot, open_windows, tmp_path):
    namespace = {"__name__": "__main__", "torch": torch, "TABLE": {"gain": 2.0}}
    table = _notebook_class(
        "class Table(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return TABLE['gain'] * x\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return TABLE['gain'] * g\n",
        "Table", 15, namespace)
    window, reports = _show(qtbot, table, torch.randn(4, dtype=torch.float64))
    assert reports[0].passed
    assert window.session.target.spec == f"{PROCESS_LOCAL}:Table"
    assert not portable(window.session.target)
    assert "runs in this process" in window.notice.text()
    assert "uses TABLE from its module" in window.notice.text()
    # and the status bar says so for as long as it holds, not a passing notice (issue 35)
    qtbot.waitUntil(lambda: window.isolation_off.isVisible(), timeout=5_000)
    assert window.isolation_off.text() == (
        "⚠ Isolation off: Table runs in the window's own process (a worker process cannot "
        "load a Function made at run time), so a crash in it ends the window.")

    saved = window.classroom.save_session(tmp_path / "table.json")
    loaded = session_files.read(saved)
    assert loaded.settings.target == "killhead" and loaded.settings.given == {}
    assert any("open it from there again with playground.show()" in p for p in loaded.problems)


def test_an_importable_function_is_named_by_its_module(qtbot, open_windows):
    from customgrad.targets.gallery import MulConstant

    window, reports = _show(qtbot, MulConstant, torch.randn(3, 2, dtype=torch.float64), 4.0)
    assert window.session.target.spec == f"{MulConstant.__module__}:MulConstant"
    assert reports[0].passed and window.session.problem.args[1] == 4.0


def test_arguments_it_cannot_use_raise_before_any_window_opens(qtbot, open_windows):
    scale = _notebook_class(SCALE, "Scale", 16)
    with pytest.raises(SpecError, match="needs w, factor too"):
        playground.show(scale, torch.randn(3), block=False)
    with pytest.raises(SpecError, match="steps must be a whole number"):
        playground.show(scale, torch.randn(3), torch.randn(3), 1.0, steps=-1, block=False)
    with pytest.raises(TypeError, match=r"torch\.autograd\.Function subclass"):
        playground.show(torch.sin, torch.randn(3), block=False)
    assert open_windows == []


def test_a_script_blocks_until_the_window_closes(tmp_path):
    """A ``__main__`` script: show() returns once the window is closed (here by a timer, once
    the first check has arrived), the check having run on the script's own tensors."""
    script = tmp_path / "my_script.py"
    script.write_text(textwrap.dedent('''
        import torch
        import playground
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return 2 * x

            @staticmethod
            def backward(ctx, g):
                return 2 * g

        def watch():
            window = next(w for w in QApplication.topLevelWidgets()
                          if type(w).__name__ == "MainWindow")
            def report(r):
                print("verdict", r.passed, window.session.problem.args[0].tolist(), flush=True)
                QTimer.singleShot(0, window.close)
            window.session.jacobianReady.connect(report)

        if __name__ == "__main__":
            QTimer.singleShot(0, watch)
            playground.show(Double, torch.tensor([1.0, -2.5], dtype=torch.float64))
            print("show returned", flush=True)
    '''), encoding="utf-8")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=180, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "verdict True [1.0, -2.5]" in done.stdout
    assert done.stdout.index("verdict") < done.stdout.index("show returned")


def test_the_readme_example_of_show_runs(qtbot, open_windows, monkeypatch):
    """README "From Python": the show() block, run as a notebook with a Qt event loop runs
    it (show returns at once), after the blocks that define Scale and its tensors."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## From Python\n(.*?)(?=^## |\Z)", readme, re.S | re.M)[1]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    showing = [b for b in blocks if "playground.show(" in b]
    assert len(showing) == 1
    monkeypatch.setattr(python_entry, "loop_running", lambda app: True)
    namespace: dict = {"__name__": "__main__"}
    _notebook_class(blocks[0], "Scale", 17, namespace)  # the first cell defines Scale
    exec(compile(showing[0], "README.md (show block)", "exec"), namespace)
    window = namespace["window"]
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        pass
    assert blocker.args[0].passed
    assert torch.equal(window.session.problem.args[0], namespace["x"])


def test_the_signature_is_pinned():
    import inspect

    assert str(inspect.signature(python_entry.show)) == (
        "(function: 'type', *args: 'object', block: 'bool | None' = None, seed: 'int' = 0, "
        "steps: 'int | None' = None, lr: 'float | None' = None)")
    assert playground.__all__ == ["show"]


def test_a_show_window_leaves_the_apps_remembered_session_alone(qtbot, open_windows):
    last = session_files.last_session_path()
    last.unlink(missing_ok=True)
    window, _ = _show(qtbot, _notebook_class(SCALE, "Scale", 18), torch.randn(2), torch.randn(2),
                      1.0)
    window.classroom.sessions.save_last_session()
    window.close()
    qtbot.waitUntil(lambda: window not in open_windows, timeout=TIMEOUT)
    assert not last.exists()
