"""Bring your own Function, offscreen: open a file / import path / the editor, hot reload,
errors with file:line, autosave restore, drag-and-drop."""

from __future__ import annotations

import copy
import os
import re
import shutil
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

import customgrad
from customgrad.errors import FunctionError, TargetError
from customgrad.function.shadow import description_of
from playground.features import byof
from playground.main_window import MainWindow
from playground.state.session import Session
from playground.views import editor
from playground.workers import jobs

#: the whole window in each test: files opened, edited, reloaded
pytestmark = pytest.mark.slow

TIMEOUT = 20_000
DATA = Path(__file__).resolve().parents[1] / "data"
ERRORS = DATA / "byof_errors.py"
FUNCTIONS = DATA / "byof_functions.py"


def make_window(qtbot):
    win = MainWindow(Session())
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    return win


def open_target(qtbot, win, spec):
    with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT) as blocker:
        win.session.set_target(spec)
    return blocker.args[0]


def marker_line(path: Path, marker: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if f"# <- {marker}" in line:
            return number
    raise AssertionError(marker)


def tab_texts(win) -> list[str]:
    return [win.side_tabs.tabText(i) for i in range(win.side_tabs.count())]


# ---- menus and opening ------------------------------------------------------------------------
def test_menus_tabs_and_shortcuts(window):
    actions = window.actions_by_name
    assert actions["open_file"].shortcut().toString() == "Ctrl+O"
    assert actions["open_import"].shortcut().toString() == "Ctrl+Shift+I"
    assert actions["edit_function"].shortcut().toString() == "Ctrl+E"
    assert actions["show_inspector"].shortcut().toString() == "Ctrl+B"
    assert actions["new_function"].shortcut().toString() == "Ctrl+N"
    assert actions["apply"].shortcut().toString() == "Ctrl+Return"
    file_menu = [a.text() for a in window.menus["file"].actions()]
    assert file_menu.index("&Open File…") < file_menu.index("&Quit")
    assert "Open E&xample" in file_menu
    assert {"Editor", "Inspector"} <= {t.rstrip(" ⚠") for t in tab_texts(window)}
    window.byof.show_tab(window.byof.editor)
    assert window.byof.editor.apply_button.isVisibleTo(window)


def test_open_file_through_the_dialog(qtbot, window):
    window.byof.ask_open_file = lambda parent, start: str(DATA / "single_function.py")
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        window.byof.actions["open_file"].trigger()
    assert blocker.args[0].passed
    assert window.session.target.function.__name__ == "Cube"
    assert "class Cube" in window.code.editor.toPlainText()


def test_open_dialog_starts_in_the_open_files_folder_and_the_picker_lists_its_functions(
        qtbot, window, tmp_path):
    """The Open dialog started in the examples folder whatever was open, and the picker
    listed the gallery only: a file's other Functions took File > Open and a choice."""
    starts = []
    window.byof.ask_open_file = lambda parent, start: starts.append(start)
    own = tmp_path / "mine"
    own.mkdir()
    shutil.copy(FUNCTIONS, own / "two.py")
    assert open_target(qtbot, window, f"{own / 'two.py'}:Double").passed
    window.byof.actions["open_file"].trigger()
    assert Path(starts[-1]) == own
    picker = window.picker
    listed = picker.file_functions()
    assert [spec.rsplit(":", 1)[1] for spec in listed] == ["Double", "Triple"]
    assert picker.file_group.text(0) == "File: two.py"
    assert [i.text(0) for i in picker.tree.selectedItems()] == ["Double"]
    triple = picker.file_group.child(1)
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        picker.tree.itemClicked.emit(triple, 0)
    assert window.session.target.function.__name__ == "Triple"
    assert [i.text(0) for i in picker.tree.selectedItems()] == ["Triple"]
    # a gallery Function: the file's list stays (a student compares theirs with it), the
    # gallery's row selected
    assert open_target(qtbot, window, "killhead").passed
    assert picker.file_functions() == listed and not picker.file_group.isHidden()
    assert [i.data(0, Qt.ItemDataRole.UserRole) for i in picker.tree.selectedItems()] \
        == ["killhead"]
    window.byof.actions["open_file"].trigger()
    assert Path(starts[-1]) == own  # the folder last opened from


def test_several_functions_ask_which(qtbot, window):
    asked = []

    def chooser(parent, where, names):
        asked.append((where, names))
        return "Triple"

    window.byof.chooser = chooser
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.byof.open_path(FUNCTIONS)
    assert asked == [("byof_functions.py", ["Double", "Triple"])]
    assert window.session.target.function.__name__ == "Triple"
    assert window.session.target.spec.endswith("byof_functions.py:Triple")


def test_choosing_among_several_functions_imports_the_file_once(qtbot, window, tmp_path):
    log = tmp_path / "imports.log"
    two = tmp_path / "two.py"
    two.write_text(f"import os; open({str(log)!r}, 'a').write(f'{{os.getpid()}} ')\n"
                   + FUNCTIONS.read_text(encoding="utf-8"))
    # written a while ago: a kept worker does not trust a file written just before its job,
    # and whether the build started within that margin would decide the count below
    past = time.time() - 60
    os.utime(two, (past, past))
    window.byof.chooser = lambda parent, where, names: "Double"
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.byof.open_path(two)
    assert window.session.target.function.__name__ == "Double"
    # its top level never ran in this process, and once in a worker process to list the
    # Functions (not again once one was chosen); then once in the worker kept for the build
    # and the check
    pids = log.read_text().split()
    assert str(os.getpid()) not in pids and len(pids) == len(set(pids)) == 2
    assert description_of(window.session.target.function) is not None


def test_several_functions_none_chosen_is_an_error(qtbot, window):
    window.byof.chooser = lambda parent, where, names: None
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT) as blocker:
        window.session.set_target(str(FUNCTIONS))  # as the command line does
    exc = blocker.args[0]
    assert isinstance(exc, TargetError)
    text = window.errors.text()
    assert "several Functions (Double, Triple)" in text and "none was chosen" in text
    assert f"{FUNCTIONS}:{marker_line(FUNCTIONS, 'second Function')}" in text
    open_target(qtbot, window, "killhead")


def test_command_line_class_needs_no_choice(qtbot, window):
    window.byof.chooser = lambda *a: pytest.fail("must not ask")
    open_target(qtbot, window, f"{FUNCTIONS}:Double")
    assert window.session.target.function.__name__ == "Double"


def test_open_import_path(qtbot, window):
    window.byof.ask_import_path = lambda parent: "tests.data.byof_functions:Double"
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        window.byof.actions["open_import"].trigger()
    assert blocker.args[0].passed
    assert window.session.target.spec == "tests.data.byof_functions:Double"
    assert window.windowTitle().endswith("Double (tests.data.byof_functions)")


def test_open_import_path_of_a_module_asks_which(qtbot, window):
    window.byof.chooser = lambda parent, where, names: names[-1]
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.byof.open_import_path("tests.data.byof_functions")
    assert window.session.target.spec == "tests.data.byof_functions:Triple"


def test_broken_import_path_names_file_and_line(qtbot, window):
    path = DATA / "import_error.py"
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        window.byof.open_import_path("tests.data.import_error:Anything")
    text = window.errors.text()
    assert "refuses to load" in text
    assert f"{path}:{marker_line(path, 'import_error')}" in text
    open_target(qtbot, window, "killhead")


def test_drop_a_file_on_the_window(qtbot, window):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(DATA / "single_function.py"))])
    actions = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(QPoint(50, 50), actions, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(50, 50), actions, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        QApplication.sendEvent(window, drop)
    assert window.session.target.function.__name__ == "Cube"


def test_drop_ignores_other_files(window):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(DATA / "broken_syntax.py.txt"))])
    assert window.byof.dropped_files(mime) == []


# ---- errors -----------------------------------------------------------------------------------
def _expect_error(qtbot, win, spec, message, file, line):
    with qtbot.waitSignal(win.session.errorRaised, timeout=TIMEOUT) as blocker:
        win.session.set_target(spec)
    assert win.errors.isVisible()
    text = win.errors.text()
    assert re.search(message, text), text
    where = f"{file}:{line}" if line else str(file)
    assert where in text, text
    return blocker.args[0]


RUNTIME_ERRORS = [
    ("ForwardRaises", r"forward raised ValueError: forward is broken"),
    ("BackwardRaises", r"backward raised ValueError: backward is broken"),
    ("WrongCount", r"returned 1 gradient, but forward takes 2 arguments"),
    ("WrongShape", r"gradient of shape \[5\] for x"),
    ("WrongDtype", r"as complex64, but x is float32"),
    ("WrongDevice", r"on meta, but x is on cpu"),
    ("GradForConstant", r"gradient for n .*not a tensor"),
    ("NonTensorOutput", r"forward returned a float"),
]


@pytest.mark.parametrize(("name", "message"), RUNTIME_ERRORS, ids=[n for n, _ in RUNTIME_ERRORS])
def test_function_errors_show_message_and_location(qtbot, window, name, message):
    exc = _expect_error(qtbot, window, f"{ERRORS}:{name}", message, ERRORS,
                        marker_line(ERRORS, name))
    assert isinstance(exc, FunctionError)
    report = open_target(qtbot, window, "killhead")  # the app stays usable
    assert report.passed and not window.errors.isVisible()


def test_load_errors_show_message_and_location(qtbot, window, tmp_path):
    broken = tmp_path / "broken_syntax.py"
    shutil.copy(DATA / "broken_syntax.py.txt", broken)
    _expect_error(qtbot, window, str(broken), r"Syntax error in broken_syntax.py, line 5",
                  broken, 5)
    failing = DATA / "import_error.py"
    _expect_error(qtbot, window, str(failing), r"Importing import_error.py failed with "
                  r"RuntimeError", failing, marker_line(failing, "import_error"))
    empty = DATA / "no_function.py"
    _expect_error(qtbot, window, str(empty), r"defines no torch.autograd.Function", empty, None)
    window.byof.chooser = lambda *a: None
    _expect_error(qtbot, window, str(FUNCTIONS), r"none was chosen", FUNCTIONS,
                  marker_line(FUNCTIONS, "second Function"))
    missing = tmp_path / "missing.py"
    _expect_error(qtbot, window, str(missing), r"File not found", missing, None)
    assert open_target(qtbot, window, "killhead").passed


def test_the_link_of_a_file_that_failed_to_load_shows_that_file_at_its_line(qtbot, window,
                                                                           tmp_path):
    """A syntax error's ``broken_syntax.py:5``: the file that failed, at line 5, in the Code
    tab (it highlighted line 5 of the Function still open, not shown: the user never saw
    their line)."""
    assert open_target(qtbot, window, "killhead").passed
    broken = tmp_path / "broken_syntax.py"
    shutil.copy(DATA / "broken_syntax.py.txt", broken)
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        window.session.set_target(str(broken))
    assert window.session.target.spec == "killhead"
    window.errors.where.click()
    assert window.side_tabs.currentWidget() is window.code
    assert os.path.samefile(window.code.file, broken) and window.code.highlighted_line == 5
    assert "def broken(x:" in window.code.source()
    assert "broken_syntax.py" in window.code.title_label.text()
    assert open_target(qtbot, window, "linear").passed  # the next Function: its own code
    assert "LinearFunction" in window.code.source() and window.code.highlighted_line is None


def test_a_failed_load_keeps_the_function_that_was_open(qtbot, window, tmp_path):
    """A wrong path, a syntax error, a class that is not a Function, a misspelled gallery
    name, or a session file naming any of them: the Function open stays open, its code and
    inputs shown, and the banner says so (a session file emptied the window)."""
    assert not open_target(qtbot, window, "linear_bug").passed
    label = window.session.target.label
    broken = tmp_path / "broken_syntax.py"
    shutil.copy(DATA / "broken_syntax.py.txt", broken)
    not_a_function = tmp_path / "notfn.py"
    not_a_function.write_text("import torch\n\nclass NotAFunction(torch.nn.Module):\n"
                              "    pass\n")
    bad = [str(tmp_path / "nope.py"), str(broken), f"{not_a_function}:NotAFunction",
           "linear_bgu"]
    for spec in bad:
        with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
            window.session.set_target(spec)
        assert window.session.target.spec == "linear_bug", spec
        assert f"{label} stays open" in window.errors.text(), spec
    for spec in bad:
        settings = copy.deepcopy(window.session.settings)
        settings.target = spec
        with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
            window.session.load_settings(settings)
        assert window.session.target is not None, spec
        assert window.session.target.spec == "linear_bug", spec
        assert window.session.settings.target == "linear_bug", spec
        assert f"{label} stays open" in window.errors.text(), spec
    assert "LinearFunction" in window.windowTitle()
    assert window.session.problem is not None  # its inputs are still there to run


def test_a_file_whose_top_level_never_ends_is_stopped(qtbot, window, tmp_path, monkeypatch):
    """Its top level runs on a helper thread while the GUI thread runs the event loop; after
    the timeout the code is stopped and the error names the line it was on."""
    timeout = 1.5
    monkeypatch.setattr(jobs, "IMPORT_TIMEOUT", timeout)
    live = []
    waiting = []  # True while the GUI thread is inside the wait for the module's thread
    wait_live = jobs._wait_live

    def recording(done, seconds):
        start = time.perf_counter()
        waiting.append(True)
        try:
            wait_live(done, seconds)
        finally:
            waiting.pop()
        live.append(time.perf_counter() - start)
    monkeypatch.setattr(jobs, "_wait_live", recording)
    endless = tmp_path / "endless.py"
    endless.write_text("import torch\n\nn = 0\nwhile n >= 0:  # <- forever\n    n += 1\n")
    open_target(qtbot, window, "killhead")  # a settled window, as when a user opens a file
    ticks = []
    timer = QTimer(interval=20)
    timer.timeout.connect(lambda: ticks.append(bool(waiting)))
    timer.start()
    exc = _expect_error(qtbot, window, str(endless), r"Importing endless.py failed with "
                        r"TopLevelTooSlow: .*still running after 1.5 s", endless, 4)
    timer.stop()
    # timers (and so painting) went on while the module spun on its thread: a GUI thread inside
    # the import would fire none of them until the import was given up. How many fire depends
    # on the machine's load (the module's thread competes for the GIL), so only their presence
    # is asserted, not their spacing.
    assert sum(ticks) >= 2
    assert isinstance(exc, TargetError)
    assert sum(live) >= timeout * 0.8  # the GUI thread was in the event loop, not in the module
    assert open_target(qtbot, window, "killhead").passed  # and the app stays usable


def test_a_top_level_blocked_outside_python_is_reported(qtbot, window, tmp_path, monkeypatch):
    """time.sleep cannot be interrupted, but the worker process trying the module first can
    be ended: the app says so, and nothing of it runs on in the window's process."""
    monkeypatch.setattr(jobs, "IMPORT_TIMEOUT", 0.3)
    blocked = tmp_path / "blocked.py"
    blocked.write_text("import time\n\ntime.sleep(20)\n")
    open_target(qtbot, window, "killhead")
    exc = _expect_error(qtbot, window, str(blocked), r"Importing blocked.py failed with "
                        r"TopLevelTooSlow: .*blocked outside Python .* and was stopped",
                        blocked, None)
    assert not [t for t in threading.enumerate() if t.name.endswith("blocked.py")]
    assert isinstance(exc, TargetError)
    assert open_target(qtbot, window, "killhead").passed


@pytest.mark.parametrize("name", ["NaNOutput", "NaNGradient"])
def test_nan_and_inf_are_surfaced(qtbot, window, name):
    notices = []
    window.session.notice.connect(notices.append)
    window.session.runNotice.connect(notices.append)  # (a NaN's: about the Function's run)
    open_target(qtbot, window, f"{ERRORS}:{name}")
    qtbot.waitUntil(lambda: any("NaN or Inf" in n for n in notices), timeout=TIMEOUT)
    assert window.notice.isVisibleTo(window)
    assert "NaN or Inf" in window.notice.text()
    kind = "forward's output" if name == "NaNOutput" else "gradient for x"
    assert kind in window.notice.text()
    assert "⚠" in window.side_tabs.tabText(window.side_tabs.indexOf(window.byof.inspector))


# ---- the editor -------------------------------------------------------------------------------
def test_new_function_template_applies_and_passes(qtbot, window, home):
    b = window.byof
    b.actions["new_function"].trigger()
    assert window.side_tabs.currentWidget() is b.editor
    assert b.editor.text() == editor.template_text()
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        b.editor.apply_button.click()
    assert blocker.args[0].passed
    target = window.session.target
    assert target.function.__name__ == "MyFunction"
    assert Path(target.file) == home / "data" / "editor" / "my_function.py"
    assert "class MyFunction" in window.code.editor.toPlainText()


def test_ctrl_return_applies(qtbot, window):
    b = window.byof
    b.show_tab(b.editor)
    window.activateWindow()
    b.editor.code.setFocus()
    qtbot.waitUntil(b.editor.code.hasFocus, timeout=5000)
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        qtbot.keyClick(b.editor.code, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert window.session.target.function.__name__ == "MyFunction"


def test_typing_in_the_editor_triggers_no_shortcut(qtbot, window):
    open_target(qtbot, window, "killhead")
    b = window.byof
    b.show_tab(b.editor)
    window.activateWindow()
    b.editor.code.setFocus()
    b.editor.code.moveCursor(b.editor.code.textCursor().MoveOperation.End)
    qtbot.keyClicks(b.editor.code, "s r c ")
    assert b.editor.text().endswith("s r c ")
    assert window.session.step == 0 and not window.session.running


EDITED = '''
import torch


class Halve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x / 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output / 2
'''


def test_editor_syntax_error_marks_the_line_and_the_banner_jumps(qtbot, window):
    b = window.byof
    b.editor.set_text(EDITED.replace("return x / 2", "return x / "))
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        b.editor.apply()
    text = window.errors.text()
    assert f"{b.editor.path}:8" in text and "Syntax error" in text
    assert b.editor.code.highlighted_block == 7
    window.side_tabs.setCurrentWidget(window.code)
    b.editor.code.clear_highlight()
    window.errors.where.click()
    assert window.side_tabs.currentWidget() is b.editor
    assert b.editor.code.highlighted_block == 7
    b.editor.set_text(EDITED)
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        b.editor.apply()
    assert blocker.args[0].passed and not window.errors.isVisible()
    assert window.session.target.function.__name__ == "Halve"


def test_editor_backward_error_marks_the_line(qtbot, window):
    b = window.byof
    b.editor.set_text(EDITED.replace("return grad_output / 2", "return grad_output.foo()"))
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        b.editor.apply()
    assert "AttributeError" in window.errors.text()
    assert f"{b.editor.path}:12" in window.errors.text()
    assert b.editor.code.highlighted_block == 11


def test_editor_apply_keeps_shapes_and_choice(qtbot, window):
    b = window.byof
    asked = []
    b.chooser = lambda parent, where, names: asked.append(names) or "Halve"
    b.editor.set_text(EDITED + "\n\n" + EDITED.replace("Halve", "Other").replace(
        "import torch\n", ""))
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        b.editor.apply()
    assert asked == [["Halve", "Other"]]
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.update(shapes={"x": "2x5"})
    b.editor.set_text(b.editor.text().replace("x / 2", "x * 0.5"))
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        b.editor.apply()
    assert len(asked) == 1  # the same Function again: no second question
    assert window.session.target.function.__name__ == "Halve"
    assert tuple(window.session.problem.args[0].shape) == (2, 5)


def test_edit_current_gallery_function(qtbot, window):
    open_target(qtbot, window, "killhead")
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.update(shapes={"input": "4x5"})
    b = window.byof
    b.actions["edit_function"].trigger()
    text = b.editor.text()
    assert "class KillHead" in text and "import torch" in text
    assert window.side_tabs.currentWidget() is b.editor
    # a typo first: the copy keeps the gallery's inputs (n = 2, input 4x5) until it loads
    def type_text(new):  # as the user would (set_text would start a new text)
        b.editor.code.selectAll()
        b.editor.code.insertPlainText(new)

    type_text(text.replace("def backward", "def backward(:"))
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        b.editor.apply()
    assert b.editor.status.text().startswith("✘ line")
    type_text(text)
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        b.editor.apply()
    assert blocker.args[0].passed
    assert window.session.target.file == str(b.editor.path)
    assert window.session.problem.args[1] == 2
    assert tuple(window.session.problem.args[0].shape) == (4, 5)


def test_new_function_backs_up_edited_text(qtbot, window, home):
    b = window.byof
    b.editor.set_text(EDITED)
    notices = []
    window.session.notice.connect(notices.append)
    b.new_function()
    backups = list((home / "data" / "editor").glob("unsaved-*.py"))
    assert len(backups) == 1 and backups[0].read_text() == EDITED
    assert notices and str(backups[0]) in notices[-1]
    b.editor.code.undo()
    assert b.editor.text() == EDITED


# ---- autosave ---------------------------------------------------------------------------------
def test_autosave_and_restore_offer(qtbot, home):
    first = make_window(qtbot)
    try:
        assert not first.byof.restore_offer.isVisibleTo(first)
        first.byof.editor.code.moveCursor(first.byof.editor.code.textCursor().MoveOperation.End)
        first.byof.editor.code.insertPlainText("\n# my precious edit\n")
        typed = first.byof.editor.text()
        autosave = home / "data" / "editor-autosave.py"
        qtbot.waitUntil(lambda: autosave.exists() and autosave.read_text() == typed,
                        timeout=5000)
    finally:
        first.close()
        first.session.shutdown(wait=0.5)
    second = make_window(qtbot)
    try:
        b = second.byof
        assert b.restore_offer.isVisibleTo(second)
        assert b.restore_offer.restore_button.text() == "Restore unsaved editor text"
        assert b.editor.text() == editor.template_text()  # nothing replaced without asking
        b.restore_offer.restore_button.click()
        assert b.editor.text() == typed
        assert not b.restore_offer.isVisibleTo(second)
        assert second.side_tabs.currentWidget() is b.editor
    finally:
        second.byof.shutdown()
        second.session.shutdown(wait=0.5)


def test_no_offer_for_the_template_and_discard_keeps_a_copy(qtbot, home):
    autosave = home / "data" / "editor-autosave.py"
    autosave.parent.mkdir(parents=True, exist_ok=True)
    autosave.write_text(editor.template_text())
    win = make_window(qtbot)
    assert not win.byof.restore_offer.isVisibleTo(win)
    win.byof.shutdown()
    win.session.shutdown(wait=0.5)
    autosave.write_text("last time's text\n")
    win = make_window(qtbot)
    try:
        assert win.byof.restore_offer.isVisibleTo(win)
        win.byof.restore_offer.discard_button.click()
        assert not win.byof.restore_offer.isVisibleTo(win)
        previous = home / "data" / editor.PREVIOUS_AUTOSAVE_NAME
        assert previous.read_text() == "last time's text\n"
    finally:
        win.byof.shutdown()
        win.session.shutdown(wait=0.5)


def test_typing_before_answering_keeps_last_times_text(qtbot, home):
    autosave = home / "data" / "editor-autosave.py"
    autosave.parent.mkdir(parents=True, exist_ok=True)
    autosave.write_text("last time's text\n")
    win = make_window(qtbot)
    try:
        win.byof.editor.code.insertPlainText("# new\n")
        win.byof.editor.write_autosave()
        previous = home / "data" / editor.PREVIOUS_AUTOSAVE_NAME
        assert previous.read_text() == "last time's text\n"
        assert win.byof.editor.restorable == "last time's text\n"
        win.byof.restore_editor_text()
        assert win.byof.editor.text() == "last time's text\n"
    finally:
        win.byof.shutdown()
        win.session.shutdown(wait=0.5)


# ---- hot reload -------------------------------------------------------------------------------
SCALE = '''
import torch


class Scale(torch.autograd.Function):
    VERSION = {version}

    @staticmethod
    def forward(ctx, x, {const}=2.0):
        ctx.k = {const}
        return x * {const} * {factor}

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.k * {factor}, None
'''


def scale_source(version, factor=1, const="k"):
    return textwrap.dedent(SCALE.format(version=version, factor=factor, const=const))


def test_hot_reload_plain_and_rename_saves(qtbot, window, tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    path = folder / "scale.py"
    path.write_text(scale_source(1))
    s = window.session
    open_target(qtbot, window, str(path))
    assert window.byof.watched == str(path)
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        s.update(shapes={"x": "2x3"}, constants={"k": 1.5}, seed=7)

    # plain save
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT) as blocker:
        path.write_text(scale_source(2, factor=3))
    assert blocker.args[0].passed
    assert s.target.function.VERSION == 2
    assert s.settings.constants == {"k": 1.5} and s.settings.seed == 7
    assert tuple(s.problem.args[0].shape) == (2, 3)

    # rename-saves, twice: the watcher must follow the new file each time
    for version in (3, 4):
        tmp = folder / f".scale.py.{version}.tmp"
        tmp.write_text(scale_source(version))
        with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
            os.replace(tmp, path)
        assert s.target.function.VERSION == version
        qtbot.waitUntil(lambda: str(path) in window.byof.watcher.files(), timeout=5000)
    assert tuple(s.problem.args[0].shape) == (2, 3)

    # a parameter renamed: its constant is reset, and a notice says so
    with qtbot.waitSignals([s.notice, s.jacobianReady], timeout=TIMEOUT):
        path.write_text(scale_source(5, const="m"))
    assert "k" in window.notice.text() and "Reset" in window.notice.text()
    assert s.target.function.VERSION == 5


def test_hot_reload_syntax_error_then_fix(qtbot, window, tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(scale_source(1))
    s = window.session
    open_target(qtbot, window, str(path))
    with qtbot.waitSignal(s.errorRaised, timeout=TIMEOUT):
        path.write_text(scale_source(2).replace("return x *", "return x *)"))
    assert "Syntax error" in window.errors.text() and f"{path}:" in window.errors.text()
    assert s.target.function.VERSION == 1  # the last good one stays loaded
    assert s.problem is not None
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        path.write_text(scale_source(3))
    assert s.target.function.VERSION == 3 and not window.errors.isVisible()


def test_deleted_file_keeps_the_last_good_function(qtbot, window, tmp_path):
    path = tmp_path / "scale.py"
    path.write_text(scale_source(1))
    s = window.session
    open_target(qtbot, window, str(path))
    with qtbot.waitSignal(s.notice, timeout=TIMEOUT) as blocker:
        path.unlink()
    assert "deleted" in blocker.args[0] and "Scale stays loaded" in blocker.args[0]
    assert s.target.function.VERSION == 1 and s.problem is not None
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        path.write_text(scale_source(2))  # it comes back
    assert s.target.function.VERSION == 2


def test_hot_reload_of_an_import_path(qtbot, window, tmp_path, monkeypatch):
    package = tmp_path / "byof_pkg_reload"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "ops.py"
    module.write_text(scale_source(1))
    monkeypatch.syspath_prepend(str(tmp_path))
    s = window.session
    open_target(qtbot, window, "byof_pkg_reload.ops:Scale")
    assert window.byof.watched == str(module)
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        module.write_text(scale_source(2))
    assert s.target.function.VERSION == 2


def test_gallery_and_editor_files_are_not_watched(qtbot, window):
    open_target(qtbot, window, "killhead")
    assert window.byof.watched is None
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.byof.editor.apply()
    assert window.byof.watched is None


def test_close_stops_everything(qtbot, home):
    win = make_window(qtbot)
    win.byof.editor.code.insertPlainText("# unsaved\n")
    win.close()
    autosave = home / "data" / "editor-autosave.py"
    assert autosave.read_text().startswith("# unsaved\n")
    assert not win.byof.runner.busy
    win.byof.shutdown()
    assert not win.byof.watcher.files()
    win.session.shutdown(wait=0.5)


def test_editor_and_inspector_in_their_own_windows(qtbot, window):
    b = window.byof
    tabs = window.side_tabs
    index = tabs.indexOf(b.editor)
    b.editor.window_button.click()
    holder = b.editor.window()
    assert holder is not window and holder.isVisible()
    assert tabs.indexOf(b.editor) == -1 and tabs.tabText(index) == "Editor"
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        b.editor.apply_button.click()  # still applies from its own window
    b.inspector.window_button.click()
    qtbot.waitUntil(lambda: b.inspector.rows["received"] != [], timeout=TIMEOUT)
    assert b.inspector.window() is not window
    holder.close()
    assert b.editor.window() is window and tabs.indexOf(b.editor) == index
    window.close()  # brings the inspector back too
    assert b.inspector.window() is window



def test_the_code_in_its_own_window_and_back(qtbot, window):
    """The code tab's "Own window" (a projector's small tab): the code in a window of its
    own, unfolded there; an error's line is still marked in it; closing puts it back."""
    code, tabs = window.code, window.side_tabs
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target("killhead")
    window.resize(1280, 720)
    qtbot.waitUntil(lambda: code.folded, timeout=5000)
    index = tabs.indexOf(code)
    code.window_button.click()
    holder = code.window()
    assert holder is not window and holder.isVisible()
    assert tabs.indexOf(code) == -1 and tabs.tabText(index) == "Code"
    assert not code.window_button.isEnabled()
    qtbot.waitUntil(lambda: not code.folded, timeout=5000)  # the room of its own window
    assert code.highlight_line(code.first_line + 1)
    holder.close()
    assert code.window() is window and tabs.indexOf(code) == index
    assert code.window_button.isEnabled()

def test_new_function_in_a_small_window_opens_the_editor_in_its_own(qtbot, window):
    """At 1280x720 the editor's tab showed about four lines (a projector's resolution):
    New Function now gives it its own window, with room; closing it puts it back. So does
    a hidden side panel (F9). At the fixture's 1400x900 it stays in its tab."""
    b = window.byof
    b.actions["new_function"].trigger()
    assert b.editor.window() is window and window.side_tabs.currentWidget() is b.editor
    code = b.editor.code
    assert code.viewport().height() >= byof.EDITOR_LINES * code.fontMetrics().lineSpacing()
    lines = byof.EDITOR_LINES * code.fontMetrics().lineSpacing()
    window.resize(1280, 720)
    qtbot.waitUntil(lambda: code.viewport().height() < lines, timeout=5000)  # laid out
    b.actions["new_function"].trigger()
    holder = b.editor.window()
    assert holder is not window and holder.isVisible()
    qtbot.waitUntil(lambda: code.viewport().height() >= lines, timeout=5000)
    holder.close()
    assert b.editor.window() is window
    window.classroom.layout.set_side_panel(False)
    window.resize(1400, 900)
    qtbot.waitUntil(lambda: window.height() == 900, timeout=5000)
    b.actions["new_function"].trigger()
    assert b.editor.window() is not window and b.editor.isVisible()
    assert window.side_tabs.isHidden()  # the panel stays as the teacher left it


def test_default_chooser_without_a_screen_returns_none():
    assert byof.choose_function(None, "x.py", ["A", "B"]) is None


def test_the_window_holds_shadows_only_of_what_the_session_loads(qtbot, window):
    """customgrad.check on a file target from the same program (a notebook that also shows
    the app) still gets the real class: shadows are the session's alone."""
    from customgrad.targets import loader

    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target(f"{FUNCTIONS}:Double")
    assert description_of(window.session.target.function) is not None
    direct = loader.resolve(f"{FUNCTIONS}:Double")
    assert description_of(direct.function) is None
    assert customgrad.check(direct.function, torch.randn(3, dtype=torch.float64)).passed


def test_an_import_path_module_that_never_ends_is_named_with_its_own_line(qtbot, window,
                                                                        tmp_path, monkeypatch):
    """Stopped in the worker process, the error points at the module's line, never at the
    app's code that stopped it."""
    monkeypatch.setattr(jobs, "IMPORT_TIMEOUT", 1.0)
    package = tmp_path / "spinning_pkg_xyz"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "spin.py").write_text("n = 0\nwhile n >= 0:  # <- forever\n    n += 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT) as blocker:
        window.session.set_target("spinning_pkg_xyz.spin:Anything")
    exc = blocker.args[0]
    assert "TopLevelTooSlow" in str(exc) and "still running after 1 s" in str(exc)
    assert (exc.file, exc.line) == (str(package / "spin.py"), 2)
    assert "spinning_pkg_xyz.spin" not in sys.modules  # never imported here


ENUM_MODULE = '''
import enum
import os
import torch

open(PIDS_LOG, "a").write(f"{os.getpid()} ")


class Mode(enum.IntEnum):
    DOUBLE = 2


class Scaled(torch.autograd.Function):
    KIND = Mode.DOUBLE

    @staticmethod
    def forward(ctx, x, mode: int = Mode.DOUBLE):
        ctx.mode = mode
        return x * mode

    @staticmethod
    def backward(ctx, g):
        return g * ctx.mode, None
'''


def test_a_users_enum_default_reaches_the_window_as_its_plain_value(qtbot, window, tmp_path):
    """An IntEnum default (or class attribute) would make the window import the user's
    module to unpickle it: it travels as its int."""
    log = tmp_path / "pids.log"
    path = tmp_path / "enum_fn.py"
    path.write_text(f"PIDS_LOG = {str(log)!r}\n" + ENUM_MODULE, encoding="utf-8")
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        window.session.set_target(str(path))
    assert blocker.args[0].passed
    assert str(os.getpid()) not in log.read_text().split()
    specs = window.session.problem.specs
    assert type(specs[1].value) is int and specs[1].value == 2
    assert type(window.session.target.function.KIND) is int


def test_an_import_path_module_runs_once_to_be_listed_and_never_here(qtbot, window, tmp_path,
                                                                     monkeypatch):
    log = tmp_path / "pids.log"
    package = tmp_path / "listed_pkg_xyz"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "two.py").write_text(
        f"import os\nopen({str(log)!r}, 'a').write(f'{{os.getpid()}} ')\n"
        + FUNCTIONS.read_text(encoding="utf-8"), encoding="utf-8")
    # written a while ago: a kept worker does not trust a file written just before its job
    past = time.time() - 60
    for written in ("__init__.py", "two.py"):
        os.utime(package / written, (past, past))
    monkeypatch.syspath_prepend(str(tmp_path))
    window.byof.chooser = lambda parent, where, names: "Triple"
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.byof.open_import_path("listed_pkg_xyz.two")
    assert window.session.target.spec == "listed_pkg_xyz.two:Triple"
    assert description_of(window.session.target.function) is not None
    # listed once; then the worker kept for the build and the check imports it once
    pids = log.read_text().split()
    assert str(os.getpid()) not in pids and len(pids) == len(set(pids)) == 2
