"""The window's process starts the workers' fork server first thing, before its own imports:
the server imports torch in a process of its own while the window is imported and built, so
the first check does not wait for both imports one after the other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from customgrad.workers import processes

#: starts the app as a process
pytestmark = pytest.mark.slow


ROOT = Path(__file__).resolve().parents[2]
#: (PYTHONPATH: the fork server, which imports playground.workers.child_jobs, runs this tree's
#: code too, not an installed copy's)
#: runs app.main with the fork server's start and the window's imports replaced by probes;
#: prints whether the server was asked for before the window's imports began, and whether
#: torch was loaded in this process by then
SCRIPT = """
import contextlib, sys, threading
from customgrad.workers import processes
asked = threading.Event()
seen = {}

def warm():
    seen["torch"] = "torch" in sys.modules
    seen["preload"] = list(processes.PRELOAD)
    asked.set()

processes.warm = warm
import os
os.getloadavg = lambda: (float(sys.argv[2]), 0.0, 0.0)
import playground.app as app

@contextlib.contextmanager
def imports():
    remote = "playground.workers.child_jobs" in seen.get("preload", [])
    print("asked", asked.wait(float(sys.argv[3])), "torch", seen.get("torch"), "remote", remote,
          flush=True)
    raise SystemExit(0)
    yield

app.imports_frozen = imports
app.main(["killhead", "--screenshot", sys.argv[1]])
"""


def _start(tmp_path, load: float, wait: float) -> list[str]:
    """What the probes saw, the machine's load average reading ``load``; waits ``wait`` s at
    most for the server's start (it is asked for on a thread of its own)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "s.png"), str(load),
                           str(wait)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_with_a_core_free_the_fork_server_starts_before_the_window_imports_torch(tmp_path):
    if not processes.fork_server():
        return  # children are spawned here: there is no server to start
    seen = _start(tmp_path, load=0.0, wait=30)
    assert seen == ["asked", "True", "torch", "False", "remote", "True"]


def test_with_every_core_busy_it_waits_for_the_window(tmp_path):
    """Both imports would share the cores: the window would paint seconds later, for a
    verdict no sooner. The Session starts the server once the window is built, as before."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    seen = _start(tmp_path, load=float(cores), wait=1)
    assert seen == ["asked", "False", "torch", "None", "remote", "False"]


#: runs app.main on killhead with a core free; at the first verdict, prints whether torch was
#: loaded in this process when the head start began, and whether the window's build and check
#: ran in the head start's worker process (the one kept now)
HEAD_START = """
import os, sys
os.getloadavg = lambda: (0.0, 0.0, 0.0)
import playground.app as app
from playground.workers import head_start
from playground.workers.warm_worker import WORKER
seen = {}
start = head_start.start

def probe(spec):
    import playground.workers.warm_worker  # what the head start's thread calls
    seen["torch"] = "torch" in sys.modules
    return start(spec)

head_start.start = probe
release = app.release_after_show

def watched(session, window, settle=True):
    def ready(_report):
        head = head_start._current
        same = head is not None and head.done.wait(60) and head.pid == WORKER.process.pid
        print("torch", seen.get("torch"), "error", head and head.error, "same", same, flush=True)
        os._exit(0)
    session.jacobianReady.connect(ready)
    release(session, window, settle)

app.release_after_show = watched
app.main(["killhead", "--screenshot", sys.argv[1]])
"""


def test_the_first_check_gets_a_head_start_in_the_process_the_window_then_uses(tmp_path):
    """The kept worker process builds and checks killhead while the window's process is still
    importing (no torch there yet); the window's own build and check then run in that same
    process, warm. (Its key holds the environment: set by an import after the head start, a
    variable such as qtpy's QT_API made the window's jobs start another process.)"""
    if not processes.fork_server():
        return  # children are spawned here: the head start needs the fork server
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", HEAD_START, str(tmp_path / "s.png")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["torch", "False", "error", "None", "same", "True"]


def test_the_first_target_is_read_without_the_engine(tmp_path, configure):
    """Which Function gets the head start: the command line's, else the last session's where
    the window restores it, else killhead; none for a session file or an unreadable last
    session (a file target there is refused by head_start.start itself)."""
    from playground import app
    from playground.state.paths import last_session_path
    from playground.workers import head_start

    configure(home=tmp_path)
    assert app.first_target("linear", None, restoring=False) == "linear"
    assert app.first_target(None, "s.json", restoring=False) is None
    assert app.first_target(None, None, restoring=True) == "killhead"  # no last session
    last_session_path().write_text('{"settings": {"target": "sigmoid"}}', encoding="utf-8")
    assert app.first_target(None, None, restoring=True) == "sigmoid"
    assert app.first_target(None, None, restoring=False) == "killhead"
    last_session_path().write_text("not json {", encoding="utf-8")
    assert app.first_target(None, None, restoring=True) is None
    assert head_start.start("my_layer.py:Double") is None  # the user's code waits for the window


def test_the_window_s_build_waits_for_the_head_start_of_its_own_function_only(monkeypatch):
    """The window's build waits for a head start of the same Function (and asks it to skip
    its check), so that it finds the kept process idle rather than busy; another Function's
    head start, or none, holds it up not at all."""
    import threading

    from playground.workers import head_start

    head = head_start.HeadStart("killhead")
    monkeypatch.setattr(head_start, "_current", head)
    head_start.wait_for(("problem", "linear", None))
    assert not head.wanted.is_set()
    threading.Timer(0.2, head.done.set).start()
    head_start.wait_for(("problem", "killhead", None))
    assert head.wanted.is_set() and head.done.is_set()
    stopped = head_start.HeadStart("killhead")
    monkeypatch.setattr(head_start, "_current", stopped)
    head_start.wait_for(stopped.warm_key, stop=lambda: True)  # Cancel: no wait
    assert not stopped.done.is_set()


def test_while_the_workers_import_torch_the_status_bar_says_so(qtbot, monkeypatch):
    """Under load the first 'Preparing inputs…' lasted over 15 s with nothing said of why:
    until the fork server has started a child (it imports torch), the status bar says the
    worker processes are starting; afterwards 'Preparing inputs…' as before."""
    import threading

    from playground.main_window import PREPARING, WORKERS_STARTING, MainWindow
    from playground.state.session import Session

    monkeypatch.setattr(processes, "_a_child_started", threading.Event())
    monkeypatch.setattr(processes, "fork_server", lambda: True)
    window = MainWindow(Session(held=True), restore_prefs=False, restore_session=False)
    qtbot.addWidget(window)
    try:
        window.session.set_target("killhead")  # held: the build waits, busy meanwhile
        assert window.status.currentMessage() == WORKERS_STARTING
        processes.child_started()
        window.session.busyChanged.emit(True)  # the next build, as the session says it
        assert window.status.currentMessage() == PREPARING
    finally:
        window.session.shutdown(wait=0.5)


#: app.main as the user starts it (no --screenshot), watched: what the window's process had
#: loaded, and what its status bar said, at the window's first paint; then the first verdict
FIRST_PAINT = """
import os, sys, threading
import playground.app as app
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication
seen = {}
release = app.release_after_show

class Where:  # which thread imports superqt.utils (the code's highlighter's module)
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "superqt.utils":
            seen.setdefault("superqt", threading.current_thread().name)
        return None
sys.meta_path.insert(0, Where)

def watched(session, window, settle=True):
    class FirstPaint(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and obj.isWidgetType() \\
                    and obj.window() is window and "torch" not in seen:
                seen["torch"] = "torch" in sys.modules
                seen["engine"] = sorted(m for m in ("customgrad.checking.jacobian.comparison",
                                                    "customgrad.checking.diagnosis",
                                                    "customgrad.checking.inspector",
                                                    "pyqtgraph.exporters", "pygments.lexers")
                                        if m in sys.modules)
                seen["status"] = window.status.currentMessage()
                seen["coloured"] = window.code.editor._highlighter is not None
            return False

    def ready(report):
        print("torch", seen.get("torch"), "engine", seen.get("engine"), flush=True)
        print("status", seen.get("status"), flush=True)
        print("verdict", report.passed, flush=True)
        print("superqt imported on", seen.get("superqt"), "coloured", seen.get("coloured"),
              window.code.editor._highlighter is not None, flush=True)
        os._exit(0)
    app_ = QApplication.instance()
    app_.installEventFilter(FirstPaint(app_))
    session.jacobianReady.connect(ready)
    release(session, window, settle)

app.release_after_show = watched
sys.exit(f"exited ({app.main(['killhead'])}) before a verdict")
"""


def test_the_window_paints_before_torch_then_checks_as_before():
    """The window's process paints its window before it imports torch, or the engine's
    numerics, diagnosis and inspector, pyqtgraph's exporters or pygments' lexers (the first
    paint needs none of them: they were most of its wait); its status bar says that torch is
    loading. torch then arrives (a helper thread imports it) and the first check runs to its
    verdict as before. The code's highlighter is made after the first paint, once superqt
    (and pygments' lexer) were imported on a helper thread, not on the GUI thread (where it
    froze the window for 0.2 to 0.3 s right after its first paint)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", FIRST_PAINT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "torch False engine []"
    assert lines[1].startswith("status Loading torch…")
    assert lines[2] == "verdict True"
    assert lines[3] == "superqt imported on highlighting coloured False True"


#: app.main on argv[1], watched: at the window's first paint, whether torch was loaded and
#: what the Code tab held (written to argv[2]); keys typed into the Editor tab then; at the
#: first verdict, whether the code was coloured and the typed text kept, and the Code tab's
#: text again (argv[3])
CODE_AT_FIRST_PAINT = """
import os, sys
import playground.app as app
from PySide6.QtCore import QEvent, QObject
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
seen = {}
release = app.release_after_show

def watched(session, window, settle=True):
    class FirstPaint(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and obj.isWidgetType() \\
                    and obj.window() is window and "torch" not in seen:
                seen["torch"] = "torch" in sys.modules
                with open(sys.argv[2], "w", encoding="utf-8") as f:
                    f.write(window.code.source())
                seen["line"] = window.code.first_line
                window.editor.code.moveCursor(window.editor.code.textCursor().MoveOperation.End)
                QTest.keyClicks(window.editor.code, "# typed while torch loads")
            return False

    def ready(report):
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            f.write(window.code.source())
        print("torch", seen.get("torch"), "line", seen.get("line"), flush=True)
        print("coloured", window.code.editor._highlighter is not None, flush=True)
        print("typed", window.editor.text().endswith("# typed while torch loads"), flush=True)
        print("pid", os.getpid(), flush=True)
        os._exit(0)
    app_ = QApplication.instance()
    app_.installEventFilter(FirstPaint(app_))
    session.jacobianReady.connect(ready)
    release(session, window, settle)

app.release_after_show = watched
sys.exit(f"exited ({app.main([sys.argv[1]])}) before a verdict")
"""


def _code_at_first_paint(tmp_path, target: str) -> tuple[list[str], str, str]:
    """What CODE_AT_FIRST_PAINT printed (the window's process id last), and the Code tab's
    text at the first paint and at the first verdict."""
    at_paint, at_verdict = tmp_path / "paint.txt", tmp_path / "verdict.txt"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT),
           "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path / "home")}
    # -X faulthandler: a crash says where (CI saw this process end on SIGSEGV once, with
    # nothing on stderr; not reproduced in 20 runs)
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CODE_AT_FIRST_PAINT,
                           target, str(at_paint), str(at_verdict)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return (proc.stdout.split(), at_paint.read_text(encoding="utf-8"),
            at_verdict.read_text(encoding="utf-8"))


def test_the_code_tab_shows_a_gallery_function_at_the_first_paint(tmp_path):
    """The Code tab was empty until torch had arrived (seconds): it now holds the Function's
    source at the window's first paint, read from the gallery's file (torch not loaded), the
    same text and line as once the Function has opened; the Editor takes keys meanwhile and
    keeps them."""
    from customgrad.function.shadow import source_lines
    from customgrad.targets import catalog

    entry = catalog.get("linear")
    printed, at_paint, at_verdict = _code_at_first_paint(tmp_path, "linear")
    source = entry.source.expandtabs(4).rstrip("\n")
    assert at_paint == source == at_verdict
    assert printed[:8] == ["torch", "False", "line", str(source_lines(entry.function)[1]),
                           "coloured", "True", "typed", "True"]


def test_the_code_tab_shows_a_user_file_at_the_first_paint_without_running_it(tmp_path):
    """A user's file: its Function's class is in the Code tab at the first paint, read from
    the file; neither torch nor the file ran in the window's process (the file notes every
    process that runs it)."""
    ran = tmp_path / "ran.txt"
    user = tmp_path / "my_square.py"
    user.write_text(
        "import os\nimport torch\n\n"
        f"with open({str(ran)!r}, 'a') as f:\n    f.write(f'{{os.getpid()}}\\n')\n\n\n"
        "class Square(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n"
        "        return x * x\n\n"
        "    @staticmethod\n    def backward(ctx, grad):\n        (x,) = ctx.saved_tensors\n"
        "        return 2 * x * grad\n", encoding="utf-8")
    printed, at_paint, at_verdict = _code_at_first_paint(tmp_path, str(user))
    assert at_paint.startswith("class Square(torch.autograd.Function):")
    assert at_paint == at_verdict
    assert printed[:4] == ["torch", "False", "line", "8"]
    assert printed[4:8] == ["coloured", "True", "typed", "True"]
    pids = ran.read_text().split()
    assert pids and printed[9] not in pids  # it ran, in worker processes only


def test_a_function_picked_while_torch_loads_shows_its_code_at_once(qtbot, monkeypatch):
    """Picked before torch has arrived, a Function opens once it has: its source is in the
    Code tab at once meanwhile (it was the one before, or empty)."""
    from customgrad.targets import catalog
    from playground.main_window import MainWindow
    from playground.state.session import Session
    from playground.workers import torch_import

    monkeypatch.setitem(torch_import._state, "pending", True)
    monkeypatch.setattr(torch_import, "_waiting", [])
    window = MainWindow(Session(held=True), restore_prefs=False, restore_session=False)
    qtbot.addWidget(window)
    try:
        window.picker.picked.emit("sigmoid")
        assert window.session.target is None  # it waits for torch
        assert window.code.source() == catalog.get("sigmoid").source.rstrip("\n")
        assert "Sigmoid" in window.windowTitle()
    finally:
        window.session.shutdown(wait=0.5)
