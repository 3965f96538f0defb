"""torch in the window's process arrives after the first paint
(:mod:`playground.workers.torch_import`): what waits for it runs once it has, in order, and
a Function chosen meanwhile opens then (its loader needs torch), the window painting on.
torch is imported in this test process already: the waiting is made by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from playground.main_window import LOADING_TORCH
from playground.workers import torch_import


@pytest.fixture
def loading(monkeypatch):
    """torch_import as it is while the helper thread imports torch (not imported yet)."""
    monkeypatch.setitem(torch_import._state, "pending", True)
    monkeypatch.setitem(torch_import._state, "started", True)
    monkeypatch.setattr(torch_import, "_waiting", [])
    monkeypatch.setattr(torch_import, "imported", lambda: False)


def test_what_waits_for_torch_runs_once_it_arrives_in_order(loading):
    order = []
    torch_import.when_arrived(lambda: order.append("open"))
    torch_import.when_arrived(lambda: order.append("release"))
    assert not torch_import.arrived() and order == []
    torch_import._arrive()
    assert torch_import.arrived() and order == ["open", "release"]
    torch_import.when_arrived(lambda: order.append("later"))  # arrived: at once
    assert order == ["open", "release", "later"]


def test_a_function_picked_while_torch_loads_opens_once_it_arrives(window, loading):
    """The window says what it waits for; a click in the picker opens nothing yet (it would
    wait for torch on the GUI thread), then opens the Function, and the form its inputs."""
    window.show_torch_loading()
    assert window.status.currentMessage() == LOADING_TORCH
    assert window.jacobian.banner.verdict_label.text() == "Loading torch…"
    window.picker.picked.emit("sigmoid")
    assert window.session.target is None
    torch_import._arrive()
    assert window.session.target is not None and window.session.target.spec == "sigmoid"
    assert window.status.currentMessage() != LOADING_TORCH


def test_without_the_app_nothing_waits_for_torch():
    """A window made without app.main (a test, playground.show from a notebook) opens its
    Function at once, torch imported by the engine where it needs it: nothing said that
    torch comes later."""
    assert torch_import.arrived()
    ran = []
    torch_import.when_arrived(lambda: ran.append(True))
    assert ran == [True]



#: imports torch as the app does (torch_import.start, after expect); prints whether what
#: waited ran, and whether torch's objects were frozen by then (a frozen object is no
#: longer among those a collection walks: gc.get_objects leaves out the frozen ones)
FROZEN = """
import gc, sys
from PySide6.QtCore import QCoreApplication, QTimer
from playground.workers import torch_import
app = QCoreApplication([])
torch_import.expect()
ran = []
torch_import.when_arrived(lambda: (ran.append(True), app.quit()))
QTimer.singleShot(120_000, app.quit)  # a liveness bound only
torch_import.start()
app.exec()
torch = sys.modules["torch"]
walked = {id(o) for o in gc.get_objects()}
print("ran", ran == [True], "walked", id(vars(torch)) in walked or id(torch.Tensor) in walked)
"""


@pytest.mark.slow
def test_torch_arrives_frozen_so_the_first_collection_does_not_walk_it():
    """torch's ~200,000 objects live as long as the app: frozen as the import ends (as the
    window's own imports are), the collection just before the first work
    (app.settle_heap, on the GUI thread) no longer walks them all: 0.2 to 0.5 s here, between
    torch's arrival and the first build."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", FROZEN], cwd=root, env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ran", "True", "walked", "False"]


def test_torch_imported_before_the_app_still_waits_for_the_first_paint(monkeypatch):
    """A program that imported torch before starting the app: what waits for torch (the
    first Function, the session's work) waits for the first paint all the same (the window
    paints after the same work as when torch comes later), and runs as the app starts the
    import after that paint, at once, in order."""
    monkeypatch.setitem(torch_import._state, "pending", False)
    monkeypatch.setitem(torch_import._state, "started", False)
    monkeypatch.setattr(torch_import, "_waiting", [])
    assert torch_import.imported()  # this test process has it
    torch_import.expect()
    order = []
    torch_import.when_arrived(lambda: order.append("open"))
    torch_import.when_arrived(lambda: order.append("release"))
    assert not torch_import.arrived() and order == []
    torch_import.start()  # after the first paint
    assert torch_import.arrived() and order == ["open", "release"]


def test_the_pickers_notes_wait_for_torch_with_the_app(qtbot, loading):
    """The gallery's notes in the picker's tooltips import the gallery (torch): where the app
    waits for torch, the window is built without them, and they come as it arrives."""
    from playground.main_window import MainWindow
    from playground.state.session import Session

    window = MainWindow(Session(held=True), restore_prefs=False, restore_session=False)
    qtbot.addWidget(window)
    item = window.picker._items["killhead"]
    assert item.toolTip(0) == "killhead"
    window.show_torch_loading()
    torch_import._arrive()
    assert item.toolTip(0).startswith("killhead: ") and len(item.toolTip(0)) > 20


def test_torchs_library_loads_without_the_interpreters_lock(monkeypatch):
    """torch's C++ library is found where torch keeps it and loaded through ``dlopen`` (a
    foreign call: the lock is released); where torch cannot be found it says so, and the
    import loads it as before."""
    import importlib.util
    import sys

    if sys.platform == "win32":
        pytest.skip("Windows loads torch's libraries its own way (torch/__init__.py)")
    assert torch_import.load_libraries_unlocked()  # loaded already here: the same handle
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert not torch_import.load_libraries_unlocked()


def test_in_background_runs_the_work_on_a_helper_thread_then_on_the_gui_thread(qtbot):
    """The work runs on a thread of the name given, then ``then`` on the GUI thread, also
    where the work raised."""
    import threading

    where = []
    for work, count in ((lambda: where.append(threading.current_thread().name), 2),
                        (lambda: 1 / 0, 3)):
        torch_import.in_background(work, lambda: where.append(threading.current_thread()),
                                   "helper")
        qtbot.waitUntil(lambda: len(where) == count)  # noqa: B023 (waited for at once)
    assert where[0] == "helper"
    assert where[1] is where[2] is threading.main_thread()


def test_the_collector_stays_off_until_the_last_helper_thread_leaves():
    """Two helper threads overlapping (torch's import, the highlighter's): the collector
    is back on only once both have left, and left as it was if it was off."""
    import gc

    assert gc.isenabled()
    first, second = torch_import.collector_off(), torch_import.collector_off()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the other still imports
    second.__exit__(None, None, None)
    assert gc.isenabled()
    gc.disable()
    try:
        with torch_import.collector_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
