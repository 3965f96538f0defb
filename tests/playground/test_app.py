"""The app end to end, offscreen: open, check, play/step/reset, errors, shutdown, screenshot."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import torch

from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets import catalog

pytest.importorskip("pytestqt")

from PySide6.QtCore import QTimer

from playground.main_window import MainWindow
from playground.state.loop import STUCK_SECONDS
from playground.state.session import Session
from playground.support import preview
from playground.workers.policy import JobPolicy

#: the whole window end to end, a check and a run in worker processes each
pytestmark = pytest.mark.slow

TIMEOUT = 20_000


@pytest.fixture(params=["process", "thread"])
def loop_mode(request, configure):
    """Run the test with the descent loop in a child process, and again on a thread."""
    configure(loop=request.param)
    return request.param


def assert_mode(session, mode):
    assert (session.ctrl.remote is not None) == (mode == "process")


def open_target(qtbot, win, name):
    """The first order's report of ``name``'s check, once the check has ended (its second
    order, which follows, included)."""
    with qtbot.waitSignal(win.session.secondOrderReady, timeout=TIMEOUT), \
            qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT) as blocker:
        win.session.set_target(name)
    return blocker.args[0]


@pytest.mark.parametrize("name", [e.name for e in catalog.entries()])
def test_opens_every_gallery_function(qtbot, window, name):
    report = open_target(qtbot, window, name)
    entry = catalog.get(name)
    assert report.passed == entry.correct or name == "ste_sign"
    assert window.windowTitle().endswith(entry.title)
    assert entry.function.__name__ in window.code.editor.toPlainText()


def test_a_failed_check_says_what_looks_wrong(qtbot, window):
    """The diagnosis reaches the banner (a phrase on the verdict line, the details below)
    and the difference heatmap (the block outlined, the kind written on it)."""
    import pyqtgraph as pg

    report = open_target(qtbot, window, "linear_bug")
    assert [d.kind for d in report.diagnoses] == ["transposed"]
    view = window.jacobian
    assert view.banner.verdict_label.text().endswith("— a transposed gradient?")
    # the first line Details shows
    assert view.banner.details_label.text().startswith("diagnosis: d output [3x4] / d weight [4x4]")
    words = [i for i in view.marks.diagnosis_items if isinstance(i, pg.TextItem)]
    assert [w.textItem.toPlainText() for w in words] == ["transposed"]
    weight = next(a for a in report.inputs if a.name == "weight")
    assert words[0].pos().x() == weight.offset - 0.5
    assert "checks: ✘ jacobian   ✔ undefined_grad" in view.banner.worst_label.text()
    open_target(qtbot, window, "linear")
    assert view.marks.diagnosis_items == [] and "—" not in view.banner.verdict_label.text()


NO_NONE = '''
import torch


class DoubleNoMaterialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return 2 * x

    @staticmethod
    def backward(ctx, grad_output):
        return 2 * grad_output  # None when the output's gradient is undefined
'''


def test_a_sub_check_that_fails_fails_the_verdict(qtbot, window, tmp_path):
    path = tmp_path / "no_none.py"
    path.write_text(NO_NONE)
    report = open_target(qtbot, window, str(path))
    assert report.mismatches == 0 and not report.passed
    assert report.checks["undefined_grad"].status == "failed"
    view = window.jacobian
    assert view.banner.verdict_label.text() == "✘ FAILED: undefined_grad (the Jacobian agrees)"
    assert "undefined_grad: backward fails when a grad_output is undefined" in \
        view.banner.worst_label.text()


def test_the_worker_sends_the_second_order_and_d_shows_it(qtbot, window):
    """Keyboard only: D switches the heatmaps to the double backward's (the View menu's
    action, listed in F1's table); a check then computes it however big (asked)."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from playground.views.shortcuts import shortcut_rows

    with qtbot.waitSignal(window.session.secondOrderReady, timeout=TIMEOUT) as blocker:
        window.session.set_target("sigmoid_bug")  # the first order's verdict comes first
    report = blocker.args[0]
    second = report.second_order
    assert second is not None and not second.passed and report.second_order_reason == ""
    assert ("D", "Second-order heatmaps (double backward)") in [
        row[:2] for row in shortcut_rows(window)]
    QTest.keyClick(window, Qt.Key.Key_D)
    view = window.jacobian
    assert view.order == 2 and window.session.second_order_asked
    assert window.actions_by_name["second_order"].isChecked()
    assert view.banner.verdict_label.text().startswith("✘ FAILED (double backward)")
    assert view.heatmaps.analytic_image.image.shape == second.shape
    QTest.keyClick(window, Qt.Key.Key_D)
    assert view.order == 1 and not window.session.second_order_asked


SLOW_SECOND_ORDER = """
import os
import time

import torch

FLAG, FACTOR, SLOW = {flag!r}, {factor}, [{slow}]


class Hold(torch.autograd.Function):
    \"\"\"The identity, whose backward (FACTOR times the gradient: 1 is right) is slow the
    first time and waits while FLAG exists: only a double backward of Square calls it.\"\"\"

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(SLOW.pop() if SLOW else 0)
        deadline = time.monotonic() + 60  # (a broken test ends anyway)
        while os.path.exists(FLAG) and time.monotonic() < deadline:
            time.sleep(0.01)
        return FACTOR * grad


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return 2 * Hold.apply(x) * grad_output
"""


def test_the_first_verdict_is_shown_while_its_second_order_is_computed(qtbot, window,
                                                                      tmp_path):
    """The double backward's check takes as long as the first order's again: the first
    verdict comes as soon as it exists (it waited for the second order), D then says the
    second is computing, and its heatmaps follow; a check cancelled or superseded while
    its second order computes never shows that second order."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from customgrad.checking.jacobian.report import COMPUTING

    flag = tmp_path / "hold"
    flag.touch()
    path = tmp_path / "square.py"
    path.write_text(SLOW_SECOND_ORDER.format(flag=str(flag), factor=1, slow=0))
    s, view = window.session, window.jacobian
    seconds: list = []
    s.secondOrderReady.connect(seconds.append)
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT) as blocker:
        s.set_target(f"{path}:Square")
    report = blocker.args[0]
    assert report.passed and report.second_order is None  # the double backward waits
    assert report.second_order_reason == COMPUTING
    assert "second order (double backward): computing…" in view.banner.worst_label.text()
    QTest.keyClick(window, Qt.Key.Key_D)
    assert view.order == 2
    assert view.banner.verdict_label.text() == "Second order: computing…"
    with qtbot.waitSignal(s.secondOrderReady, timeout=TIMEOUT):
        flag.unlink()
    second = seconds[-1].second_order
    assert second is not None and second.passed
    assert view.banner.verdict_label.text().startswith("✔")
    assert view.heatmaps.analytic_image.image.shape == second.shape

    # cancelled while the second order computes: the first verdict stays
    flag.touch()
    seconds.clear()
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        s.check_now()
    with qtbot.waitSignal(s.secondOrderReady, timeout=TIMEOUT):
        s.cancel_check()
    assert seconds[-1].second_order is None
    assert seconds[-1].second_order_reason == "not computed: cancelled"
    assert view.checked.passed and view.banner.verdict_label.text() == \
        "Second order not drawn"

    # superseded: only the newer check's second order arrives
    seconds.clear()
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        s.check_now()
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT) as newer:
        s.update(atol=2e-5)
    assert newer.args[0].atol == 2e-5 and newer.args[0].second_order_reason == COMPUTING
    with qtbot.waitSignal(s.secondOrderReady, timeout=TIMEOUT):
        flag.unlink()
    qtbot.wait(300)  # (a stale second order would come about now)
    assert [r.atol for r in seconds] == [2e-5] and seconds[0].second_order is not None


def test_the_status_bar_says_the_second_orders_verdict_when_it_arrives(qtbot, window,
                                                                       tmp_path):
    """The status bar said "Jacobian check passed" for the first order and kept it when the
    second order, computed after, failed."""
    path = tmp_path / "square.py"
    path.write_text(SLOW_SECOND_ORDER.format(flag=str(tmp_path / "none"), factor=2, slow=0))
    s = window.session
    said: list = []  # the status bar once the window has heard each report (it hears first)
    s.jacobianReady.connect(lambda r: said.append((r.passed, window.status.currentMessage())))
    s.secondOrderReady.connect(lambda r: said.append((r.second_order.passed,
                                                      window.status.currentMessage())))
    s.set_target(f"{path}:Square")
    qtbot.waitUntil(lambda: len(said) == 2, timeout=TIMEOUT)
    assert said[0][0] and said[0][1].startswith("Jacobian check passed")
    assert not said[1][0] and said[1][1].startswith(
        "Jacobian check passed; second order (double backward) FAILED")


def test_heatmaps_and_verdict_match_the_engine(qtbot, window):
    report = open_target(qtbot, window, "killhead_bug")
    engine = build(Settings(target="killhead_bug")).compare()
    np.testing.assert_allclose(window.jacobian.heatmaps.analytic_image.image,
                               engine.analytic.numpy())
    np.testing.assert_allclose(window.jacobian.heatmaps.numerical_image.image,
                               engine.numerical.numpy(), atol=1e-9)
    assert report.mismatches == engine.mismatches == 6
    text = window.jacobian.banner.verdict_label.text()
    assert "FAILED" in text and "6" in text


def test_play_pause_step_reset(qtbot, loop_mode, window):
    open_target(qtbot, window, "killhead")
    s = window.session
    s.update(steps=0)  # no step limit, so only pause() stops the run
    with qtbot.waitSignal(s.batchReady, timeout=TIMEOUT):
        s.step_once()
    assert_mode(s, loop_mode)
    qtbot.waitUntil(lambda: s.step == 1, timeout=TIMEOUT)
    first_loss = s.last_loss
    s.play()
    qtbot.waitUntil(lambda: s.step > 50, timeout=TIMEOUT)
    arrived = [time.monotonic()]
    s.batchReady.connect(lambda _batch: arrived.append(time.monotonic()))
    s.pause()
    assert window.controls.play.text().endswith("Play")
    paused_at = s.step
    # events, not a fixed sleep: the loop takes the pause (no instruction left unanswered,
    # no step under way), then the batch it had in flight arrives and nothing follows it
    qtbot.waitUntil(lambda: s.ctrl.stuck_for() == 0, timeout=TIMEOUT)
    # a batch is a frame (1/30 s) of steps: half a second with none is far more than the
    # one still in flight needs, on a loaded machine too
    qtbot.waitUntil(lambda: time.monotonic() - arrived[-1] > 0.5, timeout=TIMEOUT)
    assert s.step <= paused_at + 1000  # at most the batch in flight
    settled = s.step
    qtbot.wait(100)  # a paused loop sends nothing more
    assert s.step == settled
    s.step_once()
    qtbot.waitUntil(lambda: s.step == settled + 1, timeout=TIMEOUT)
    with qtbot.waitSignal(s.runReset, timeout=TIMEOUT):
        s.reset()
    assert s.step == 0
    s.step_once()
    qtbot.waitUntil(lambda: s.step == 1, timeout=TIMEOUT)
    assert s.last_loss == first_loss  # same seed, same run
    assert window.loss_plot.overlay_curves  # the earlier run is kept as an overlay


def test_play_never_waits_for_the_loop_process_to_start(qtbot, window, monkeypatch, configure):
    """Up to a second after start-up, a new loop process waits for the fork server to import
    torch: Play returns at once all the same, and the steps follow."""
    from customgrad.workers import runner

    configure(loop="process")

    ready = threading.Event()  # set by the test once play() has returned
    constructed = threading.Event()

    class SlowStart(runner.RemoteLoop):
        def __init__(self, problem, **options):
            ready.wait(TIMEOUT / 1000)  # a fork server still importing torch
            super().__init__(problem, **options)
            constructed.set()

    monkeypatch.setattr(runner, "RemoteLoop", SlowStart)
    open_target(qtbot, window, "killhead")
    s = window.session
    s.update(steps=0)
    s.play()
    # play() came back while the loop's process was still starting: had it waited for the
    # start, the constructor would have run to its end first
    assert not constructed.is_set()
    ready.set()
    qtbot.waitUntil(lambda: s.step > 10, timeout=TIMEOUT)
    assert isinstance(s.ctrl.remote, SlowStart)
    s.pause()


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no POSIX priorities here")
def test_the_windows_worker_processes_run_below_the_window(qtbot, window, configure):
    """The check's kept child and the loop's child run ``child_nice`` below the window, in
    its session (where Linux weighs them against it by their nice): the window's thread
    gets a core first when it wakes to paint (it waited behind them, 20-60 ms a frame)."""
    from customgrad import config
    from playground.workers.warm_worker import WORKER

    configure(loop="process")
    wanted = min(os.getpriority(os.PRIO_PROCESS, 0) + config.current().child_nice, 19)
    open_target(qtbot, window, "killhead")
    checked = WORKER.process
    assert checked is not None and checked.is_alive()  # kept for the next check
    assert os.getpriority(os.PRIO_PROCESS, checked.pid) == wanted
    assert os.getsid(checked.pid) == os.getsid(0)
    s = window.session
    s.update(steps=0)
    s.play()
    qtbot.waitUntil(lambda: s.step > 2, timeout=TIMEOUT)
    loop = s.ctrl.remote.process
    assert os.getpriority(os.PRIO_PROCESS, loop.pid) == wanted
    assert os.getsid(loop.pid) == os.getsid(0)
    s.pause()


IN_THE_LOOP_WHILE_FLAGGED = """
import multiprocessing
import os
import time

import torch

LOOP = multiprocessing.current_process().name.startswith("descent")  # the run's process


def wait_while(flag):
    deadline = time.monotonic() + 60  # (a broken test ends anyway)
    while os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.01)


if LOOP:
    wait_while({loading!r})  # the run's process loads slowly (as a spawned one does)


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if LOOP:
            wait_while({forward!r})
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
"""


def _open_flagged(qtbot, window, tmp_path, loading: bool = False, forward: bool = False):
    """Double, whose run's process waits while loading, or in forward, while a flag is
    there; the flags."""
    flags = {"loading": tmp_path / "loading.flag", "forward": tmp_path / "forward.flag"}
    path = tmp_path / "flagged.py"
    path.write_text(IN_THE_LOOP_WHILE_FLAGGED.format(**{k: str(v) for k, v in flags.items()}))
    open_target(qtbot, window, f"{path}:Double")
    for name, on in (("loading", loading), ("forward", forward)):
        if on:
            flags[name].write_text("")
    window.session.update(steps=0)
    return flags


def test_pause_while_the_loops_process_starts_does_not_end_it_as_stuck(qtbot, window,
                                                                     tmp_path, configure):
    """A loop's process that has not loaded the Function yet (spawned where there is no
    fork server, seconds) is starting, not stuck: Pause leaves it, the status bar says it is
    starting, and steps follow once it has."""
    configure(loop="process")
    flags = _open_flagged(qtbot, window, tmp_path, loading=True)
    s = window.session
    notices = []
    s.notice.connect(notices.append)
    s.play()
    qtbot.waitUntil(lambda: "Starting" in window.status.currentMessage(), timeout=TIMEOUT)
    s.pause()
    qtbot.wait(int(STUCK_SECONDS * 1000) + 500)  # past the moment Pause ends a stuck step
    assert not s.ctrl.ready and not [n for n in notices if "stuck" in n]
    process = s.ctrl.remote.process
    assert process.is_alive()
    assert "Starting" in window.status.currentMessage()
    flags["loading"].unlink()
    s.run_steps(2)
    qtbot.waitUntil(lambda: s.step == 2, timeout=TIMEOUT)
    assert s.ctrl.remote.process is process
    qtbot.waitUntil(lambda: "Starting" not in window.status.currentMessage(), timeout=TIMEOUT)


def test_reset_while_the_loops_process_starts_ends_it_at_once(qtbot, window, tmp_path,
                                                               configure):
    """Nothing to finish: the process goes (it held a worker thread of a pool of eight)."""
    configure(loop="process")
    _open_flagged(qtbot, window, tmp_path, loading=True)
    s = window.session
    s.play()
    qtbot.waitUntil(lambda: s.ctrl.remote is not None, timeout=TIMEOUT)
    ctrl, process = s.ctrl, s.ctrl.remote.process
    s.reset()
    # the loading flag holds it for a minute: ended well before that, and its thread freed
    qtbot.waitUntil(lambda: not process.is_alive() and ctrl.exited, timeout=10_000)


def test_pause_ends_a_run_whose_first_forward_is_stuck(qtbot, window, tmp_path,
                                                       configure):
    """The run's process calls forward once before its first step: stuck there, it has
    loaded the Function, and Pause ends it as it ends a stuck step."""
    configure(loop="process")
    _open_flagged(qtbot, window, tmp_path, forward=True)
    s = window.session
    notices = []
    s.notice.connect(notices.append)
    s.play()
    qtbot.waitUntil(lambda: s.ctrl.ready, timeout=TIMEOUT)
    process = s.ctrl.remote.process
    s.pause()
    qtbot.waitUntil(lambda: any("stuck" in n for n in notices),
                    timeout=int(STUCK_SECONDS * 1000) + 10_000)
    qtbot.waitUntil(lambda: not process.is_alive(), timeout=10_000)


def test_losses_equal_the_seed_script(qtbot, loop_mode, window):
    open_target(qtbot, window, "killhead")
    s = window.session
    losses = []
    s.batchReady.connect(lambda b: losses.extend(r.loss for r in b.records))
    s.run_steps(5)
    qtbot.waitUntil(lambda: len(losses) == 5, timeout=TIMEOUT)
    from customgrad.targets.gallery.seeds import KillHead

    torch.manual_seed(0)
    y = torch.empty(3, 8).normal_()
    x = torch.empty(y.size()).normal_().requires_grad_()
    expected = []
    for k in range(5):
        loss = torch.nn.MSELoss()(KillHead.apply(x, 2), y)
        if k > 0:
            x.grad.zero_()
        loss.backward()
        expected.append(loss.item())
        with torch.no_grad():
            x.sub_(1.0 * x.grad)
    assert losses == expected


def test_lr_change_mid_run_keeps_the_run(qtbot, loop_mode, window):
    open_target(qtbot, window, "killhead")
    s = window.session
    s.run_steps(10)
    qtbot.waitUntil(lambda: s.step == 10, timeout=TIMEOUT)
    s.update(lr=0.5)
    s.run_steps(1)
    qtbot.waitUntil(lambda: s.step == 11, timeout=TIMEOUT)
    assert s.last_record.lr == 0.5


def test_check_at_current_point_uses_trained_values(qtbot, loop_mode, window):
    open_target(qtbot, window, "sigmoid")
    s = window.session
    s.run_steps(30)
    qtbot.waitUntil(lambda: s.step == 30, timeout=TIMEOUT)
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT) as blocker:
        s.check_now()
    moved = blocker.args[0]
    start = s.problem.compare()
    assert moved.passed
    assert not np.allclose(moved.analytic.numpy(), start.analytic.numpy())


def test_invalid_shape_marked_at_the_field(qtbot, window):
    open_target(qtbot, window, "killhead")
    field = window.inputs.fields["input"]
    qtbot.keyClicks(field.edit, "x0")
    assert not field.valid
    assert "at least 1" in field.reason.text() or "number" in field.reason.text()
    assert window.session.settings.shapes == {}


def test_rejected_shape_shows_the_functions_message(qtbot, window):
    open_target(qtbot, window, "killhead")
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        window.session.update(shapes={"input": "8"})
    assert window.errors.isVisible()
    assert "IndexError" in window.errors.text()
    assert window.inputs.fields["input"].edit.text() == "8" or \
        window.session.settings.shapes == {"input": "8"}


RAISING = '''
import torch


class Raises(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("my backward is broken")
'''


def test_raising_function_shows_error_panel_with_file_and_line(qtbot, window, tmp_path):
    path = tmp_path / "raises.py"
    path.write_text(textwrap.dedent(RAISING))
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT) as blocker:
        window.session.set_target(str(path))
    exc = blocker.args[0]
    assert exc.file == str(path) and exc.line == 12
    assert "my backward is broken" in window.errors.text()
    assert f"{path}:12" in window.errors.text()
    open_target(qtbot, window, "killhead")  # still usable afterwards


HANGS = '''
import torch


class Hangs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        while True:
            pass
'''


def test_closing_while_running_leaves_no_thread(qtbot, loop_mode, tmp_path):
    win = MainWindow(Session())
    qtbot.addWidget(win)
    win.show()
    open_target(qtbot, win, "killhead")
    win.session.play()
    qtbot.waitUntil(lambda: win.session.step > 10, timeout=TIMEOUT)
    before = threading.active_count()
    remote = win.session.ctrl.remote
    assert_mode(win.session, loop_mode)
    win.close()
    qtbot.waitUntil(lambda: win.session.ctrl.exited, timeout=2000)
    assert threading.active_count() <= before
    if remote is not None:
        qtbot.waitUntil(lambda: not remote.process.is_alive(), timeout=2000)


STUCK_WHEN_FLAGGED = '''
import os

import torch

FLAG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hang.flag")


class StuckWhenFlagged(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        while os.path.exists(FLAG):
            pass
        return grad * 2
'''


def test_pause_regains_control_from_a_stuck_step(qtbot, loop_mode, window, tmp_path):
    """A backward stuck in an endless loop during a run: Pause stops it within about a
    second, says so, the window stays live, and the next Play starts the run over."""
    path = tmp_path / "stuck.py"
    path.write_text(textwrap.dedent(STUCK_WHEN_FLAGGED))
    open_target(qtbot, window, str(path))
    s = window.session
    s.update(steps=0)
    s.run_steps(3)
    qtbot.waitUntil(lambda: s.step == 3, timeout=TIMEOUT)
    flag = tmp_path / "hang.flag"
    flag.write_text("")
    notices, resets = [], []
    s.notice.connect(notices.append)
    s.runReset.connect(resets.append)
    s.play()
    assert_mode(s, loop_mode)
    qtbot.wait(300)  # the step is inside backward now
    started = time.perf_counter()
    ticks = []  # True for each tick before the step was called stuck
    timer = QTimer(interval=20)
    timer.timeout.connect(lambda: ticks.append(not any("stuck" in n for n in notices)))
    timer.start()
    s.pause()
    # Pause ends a stuck step STUCK_SECONDS later; the margin is for a loaded machine: what
    # this protects is that control comes back at all, and the window never waits for it
    qtbot.waitUntil(lambda: any("stuck" in n for n in notices),
                    timeout=int(STUCK_SECONDS * 1000) + 10_000)
    qtbot.waitUntil(lambda: s.descent_worker is None and bool(resets), timeout=10_000)
    timer.stop()
    assert time.perf_counter() - started >= STUCK_SECONDS * 0.9  # it waited for the step first
    # the window kept painting while it waited: a GUI thread held inside pause() would fire
    # no timer before the step was called stuck (how many fire depends on the machine's load)
    assert sum(ticks) >= 2
    assert s.step == 0 and not s.running
    flag.unlink()
    s.run_steps(2)
    qtbot.waitUntil(lambda: s.step == 2, timeout=TIMEOUT)


def test_cancel_a_stuck_backward(qtbot, window, tmp_path):
    path = tmp_path / "hangs.py"
    path.write_text(textwrap.dedent(HANGS))
    with qtbot.waitSignal(window.session.jacobianStarted, timeout=TIMEOUT):
        window.session.set_target(str(path))
    job = window.session.job
    qtbot.waitUntil(lambda: job is not None and job.thread_id is not None, timeout=TIMEOUT)
    with qtbot.waitSignal(window.session.jacobianFailed, timeout=5000):
        window.session.cancel_check()
    qtbot.waitUntil(lambda: job.done, timeout=3000)


def test_screenshot_command(tmp_path):
    out = tmp_path / "shot.png"
    proc = subprocess.run([sys.executable, "-m", "playground", "killhead", "--screenshot",
                           str(out), "--steps", "20"], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "propagateSizeHints" not in proc.stderr  # Qt's offscreen noise is filtered
    from PySide6.QtGui import QImage

    image = QImage(str(out))
    assert image.width() >= 1280 and image.height() >= 800
    colours = {image.pixel(x, y) for x in range(0, image.width(), 37)
               for y in range(0, image.height(), 37)}
    assert len(colours) > 20  # not blank


HEAP = """
import gc, os, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

qt = QApplication(sys.argv[:1])
from playground import app

settle, settled = app.settle_heap, []


def settle_and_quit():
    settle()
    settled.append((gc.get_freeze_count(), len(gc.get_objects())))
    QTimer.singleShot(200, qt.quit)


app.settle_heap = settle_and_quit  # the app calls it just before its work starts
QTimer.singleShot(60_000, qt.quit)
app.main(["killhead"])
frozen, loose = settled[0]
cycle = []
cycle.append(cycle)
del cycle
print(gc.isenabled(), frozen, loose, gc.collect(), flush=True)
os._exit(0)
"""


def test_the_app_freezes_its_long_lived_heap_and_still_collects(tmp_path):
    """A full collection would otherwise walk all of torch and Qt (over 0.1 s, the window
    frozen): the app freezes what its imports and its window made, once the window has
    painted and before its work starts."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path), "AUTOGRAD_PLAYGROUND_NO_RESTORE": "1"}
    proc = subprocess.run([sys.executable, "-c", HEAP], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    enabled, frozen, loose, collected = proc.stdout.split()
    assert enabled == "True"
    assert int(frozen) > 100_000 and int(loose) < int(frozen) // 10
    assert int(collected) >= 1  # garbage made afterwards is still collected


def _app(*args, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "playground", *args], capture_output=True,
                          text=True, timeout=180, env=env)


def test_a_screenshot_of_the_second_order_waits_for_it(tmp_path):
    """The first order's verdict comes before the second order is computed: a screenshot
    of the second order waits for it, and its exit code is the second order's."""
    path = tmp_path / "square.py"
    path.write_text(SLOW_SECOND_ORDER.format(flag=str(tmp_path / "none"), factor=2, slow=1.0))
    proc = _app(f"{path}:Square", "--steps", "0", "--order", "second", "--screenshot",
                str(tmp_path / "second.png"), tmp_path=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the first order passes, the second fails
    assert (tmp_path / "second.png").exists()


def test_screenshot_exit_codes_say_what_the_check_found(tmp_path):
    """One table, as customgrad's: 0 the check passed, 1 it failed, 2 any error."""
    proc = _app("killhead_bug", "--steps", "0", "--screenshot", str(tmp_path / "bug.png"),
                tmp_path=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert (tmp_path / "bug.png").exists()
    proc = _app("kilhead", "--steps", "0", "--screenshot", str(tmp_path / "typo.png"),
                tmp_path=tmp_path)
    assert proc.returncode == 2
    assert "kilhead" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--screenshot", "/nonexistent/dir/x.png"], "/nonexistent/dir does not exist"),
    (["--session", "/nonexistent/session.json"], "session file not found"),
])
def test_what_cannot_be_done_is_refused_before_the_window_opens(capsys, args, message):
    from playground import app

    assert app.main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["--size", "800"], ["--size", "3x"], ["--steps", "-1"]])
def test_bad_numbers_on_the_command_line_are_usage_errors(capsys, args):
    from playground import app

    with pytest.raises(SystemExit) as info:
        app.main(args)
    assert info.value.code == 2
    assert "autograd-playground: error:" in capsys.readouterr().err


def test_version(capsys):
    from importlib.metadata import version

    from playground import app

    with pytest.raises(SystemExit) as info:
        app.main(["--version"])
    assert info.value.code == 0
    expected = version("autograd-playground")
    assert capsys.readouterr().out.strip() == f"autograd-playground {expected}"


def test_no_display_message(monkeypatch, capsys):
    from playground import app

    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert app.main([]) == 2
    assert "xvfb-run" in capsys.readouterr().err


DOUBLE = '''
import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def test_a_function_the_loop_process_cannot_load_runs_on_a_thread(qtbot, window, tmp_path,
                                                                   monkeypatch, configure):
    """A module that exists only in this process (made at run time): the child process
    cannot import it, so the run goes on a thread, with nothing lost."""
    import types

    configure(loop="process")
    path = tmp_path / "made_at_run_time.py"
    path.write_text(textwrap.dedent(DOUBLE))
    module = types.ModuleType("only_in_this_process_xyz")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    open_target(qtbot, window, f"{module.__name__}:Double")
    s = window.session
    errors = []
    s.errorRaised.connect(errors.append)
    s.run_steps(3)
    qtbot.waitUntil(lambda: s.step == 3, timeout=TIMEOUT)
    assert s.ctrl.remote is None and not errors
    losses = [r for r in [s.last_loss] if r is not None]
    assert losses and math.isfinite(losses[0])


def test_a_replaced_big_report_is_freed_off_the_gui_thread(qtbot):
    """100 MB of tensors take 10 to 15 ms to free: never on the GUI thread."""
    import weakref

    from playground.support import discard

    window = MainWindow(Session())
    qtbot.addWidget(window)
    window.show()
    problem = build(Settings(target="killhead", shapes={"input": (32, 64)}, dtype="float64"))
    freed_on: list[str] = []

    def deliver():
        report = problem.compare()
        report.prepare_drawing(preview.preview_step(report.shape))
        for tensor in (report.analytic, report.numerical, report.difference(),
                       report.mismatch_mask()):
            weakref.finalize(tensor, lambda: freed_on.append(threading.current_thread().name))
        window.session.jacobianReady.emit(report)

    deliver()
    qtbot.wait(50)
    deliver()  # replaces the first report everywhere it is held
    assert discard.drain()
    qtbot.waitUntil(lambda: len(freed_on) == 4, timeout=5000)
    assert freed_on == ["discard"] * 4
    # the second report is still shown, whole
    assert window.jacobian.shown.report is window.classroom.exports.last_report
    assert window.jacobian.shown.analytic.shape == (2048, 2048)


def test_a_held_session_starts_its_work_only_once_released(qtbot):
    session = Session()
    session.hold()
    window = MainWindow(session)
    qtbot.addWidget(window)
    busy = []
    session.busyChanged.connect(busy.append)
    session.set_target("killhead")
    assert session.builder.build_worker is None and busy == [True]  # waiting, and it says so
    assert window.jacobian.banner.verdict_label.text() == "Preparing inputs…"
    session.update(seed=3)  # a change while held: one build, with the latest settings
    assert session.builder.build_worker is None
    with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT):
        session.release()
    assert session.problem.settings.seed == 3


def test_the_app_paints_its_window_before_any_work_starts(qtbot, monkeypatch):
    """Start-up: the first paint waits for no worker thread (nor for importing superqt)."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    from playground import app

    settled = []
    monkeypatch.setattr(app, "settle_heap", lambda: settled.append(True))  # not this process

    session = Session()
    session.hold()
    window = MainWindow(session)
    qtbot.addWidget(window)
    session.set_target("killhead")
    order = []

    class Watch(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and obj.isWidgetType() \
                    and obj.window() is window and not order:
                order.append("paint")
            return False

    watch = Watch()
    QApplication.instance().installEventFilter(watch)
    original = session.builder.start
    session.builder.start = lambda: (order.append("build"), original())
    try:
        app.release_after_show(session, window)
        qtbot.wait(50)
        assert order == []  # not shown yet: nothing starts
        window.show()
        qtbot.waitUntil(lambda: "build" in order, timeout=5000)
    finally:
        QApplication.instance().removeEventFilter(watch)
    assert order == ["paint", "build"] and settled == [True]
    qtbot.waitUntil(lambda: session.problem is not None, timeout=TIMEOUT)


def test_a_rebuild_during_a_comparison_says_preparing_not_computing(qtbot):
    session = Session()
    window = MainWindow(session)
    qtbot.addWidget(window)
    started = []
    session.jacobianStarted.connect(started.append)
    session.update(shapes={"input": (48, 64)}, dtype="float64")  # a 3072 x 3072 comparison
    session.set_target("killhead")
    qtbot.waitUntil(lambda: bool(started) and window.jacobian.is_computing(), timeout=TIMEOUT)
    session.update(seed=5)  # cancels it, and draws new inputs
    assert not window.jacobian.is_computing()
    assert window.jacobian.banner.verdict_label.text() == "Preparing inputs…"
    assert window.jacobian.banner.progress_bar.isHidden()
    with qtbot.waitSignal(session.jacobianReady, timeout=60_000):
        pass


@pytest.mark.parametrize("isolate", [True, False])
def test_a_big_check_is_drawn_pooled_to_the_windows_heatmaps(qtbot, window, monkeypatch,
                                                             isolate):
    """The worker pools the report to the heatmaps' size in this window, in a worker process
    too (which has no view to ask): a finer image would be averaged down by pyqtgraph at
    every repaint, on the GUI thread (it froze the window for about 20 ms after each check of
    2048 x 2048 entries)."""
    window.session.policy = JobPolicy(isolate=isolate)
    open_target(qtbot, window, "killhead")
    pixels = window.session.view_pixels  # the window's heatmaps, as they report their size
    fit = preview.drawing_steps((2048, 2048), pixels)[-1]
    assert fit > preview.preview_step((2048, 2048)) and pixels != preview.PREVIEW_PIXELS
    with qtbot.waitSignal(window.session.jacobianReady, timeout=60_000) as blocker:
        window.session.update(shapes={"input": "32x64"}, dtype="float64")
    report = blocker.args[0]
    assert window.session.job.isolated == isolate
    assert report.shape == (2048, 2048) and report.has_overview(fit)
    fitted = math.ceil(2048 / fit)
    image = window.jacobian.heatmaps.analytic_image.image
    assert image.shape == (fitted, fitted)
    assert fitted <= pixels  # nothing left for pyqtgraph to average down


SCALE = """
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * FACTOR

    @staticmethod
    def backward(ctx, grad):
        return grad * FACTOR
"""


def test_checks_of_one_function_share_a_worker_process_kept_warm(qtbot, window, tmp_path):
    """The build and the checks of one Function run in one worker process kept between them
    (the Function loaded once, the process's caches warm), with the same results as a fresh
    one's; the Function's new text gets a fresh process."""
    from playground.workers.warm_worker import WORKER

    first = open_target(qtbot, window, "killhead_bug")  # built, then checked
    assert window.session.job.isolated
    pid = WORKER.process.pid
    with qtbot.waitSignal(window.session.secondOrderReady, timeout=TIMEOUT), \
            qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        window.session.check_now()
    again = blocker.args[0]
    assert WORKER.process.pid == pid
    assert again.mismatches == first.mismatches == 6
    assert torch.equal(again.mismatch_mask(), first.mismatch_mask())
    # the same computation in the same kind of process, but not promised to the bit
    torch.testing.assert_close(again.analytic, first.analytic, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(again.numerical, first.numerical, rtol=1e-9, atol=1e-12)

    path = tmp_path / "scale.py"
    for factor in (2, 3):
        path.write_text(textwrap.dedent(SCALE).replace("FACTOR", str(factor)))
        then = time.time() - 60  # written well before it is loaded (see _FreshState)
        os.utime(path, (then, then))
        report = open_target(qtbot, window, str(path))
        assert report.passed and window.session.job.isolated
        assert WORKER.process.pid != pid  # new text: a fresh process
        pid = WORKER.process.pid
        torch.testing.assert_close(torch.diagonal(report.analytic),
                                   torch.full((report.shape[0],), float(factor),
                                              dtype=report.analytic.dtype))


def test_a_check_on_a_thread_sends_its_first_verdict_before_the_second_order(qtbot,
                                                                              monkeypatch):
    """A Function no worker process can load is checked on a thread: there too the first
    order's report goes out before the second order is computed."""
    from customgrad.checking import second_order
    from playground.workers import jobs
    from playground.workers.policy import JobPolicy

    held = threading.Event()
    beside = second_order.beside

    def slow_beside(*args, **kwargs):
        assert held.wait(TIMEOUT / 1000)
        return beside(*args, **kwargs)

    monkeypatch.setattr(second_order, "beside", slow_beside)
    problem = build(Settings(target="sigmoid_bug"))
    firsts, reports, errors = [], [], []
    jobs.JacobianJob(problem, None, {}, lambda p: None, reports.append, errors.append,
                     policy=JobPolicy(isolate=False), on_first=firsts.append)
    qtbot.waitUntil(lambda: bool(firsts), timeout=TIMEOUT)
    assert not reports and firsts[0].second_order is None and not firsts[0].passed
    held.set()
    qtbot.waitUntil(lambda: bool(reports or errors), timeout=TIMEOUT)
    assert not errors and reports[0].second_order is not None
    assert not reports[0].second_order.passed and reports[0].mismatches == firsts[0].mismatches


def test_a_comparison_waits_for_the_layout_only_so_long(qtbot, monkeypatch):
    """The worker holds off after a new matrix's first progress until the view has painted
    it; a view that never answers delays the comparison by LAYOUT_WAIT_SECONDS at most."""
    from playground.workers import jobs

    monkeypatch.setattr(jobs, "LAYOUT_WAIT_SECONDS", 0.3)
    problem = build(Settings(target="killhead"))
    firsts, reports, errors = [], [], []

    def progress(p):  # a view that never lays anything out
        if p.painted is not None:
            firsts.append((p.painted, time.monotonic()))

    started = time.monotonic()
    job = jobs.JacobianJob(problem, None, {}, progress, reports.append, errors.append)
    qtbot.waitUntil(lambda: bool(reports or errors), timeout=10000)
    elapsed = time.monotonic() - started
    qtbot.waitUntil(lambda: job.done, timeout=2000)
    assert not errors
    assert len(firsts) == 1 and not firsts[0][0].is_set()
    assert reports[0].passed and elapsed >= 0.3  # it did wait, and no longer
    assert reports[0].seconds < elapsed - 0.25  # the time shown is the comparison's own


def test_a_comparison_waits_for_big_previews_to_be_painted(qtbot, monkeypatch):
    """A big matrix's previews (a few a second) are painted while the worker waits, at most
    PAINT_WAIT_SECONDS each; the time shown leaves the waits out."""
    from playground.workers import jobs

    monkeypatch.setattr(jobs, "PAINT_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(preview, "REFRESH_SECONDS", 0.02)  # previews come often
    # 1,056 x 1,056 entries: over the million above which previews are rationed
    problem = build(Settings(target="killhead", shapes={"input": "33x32"}, dtype="float64"))
    held, reports, errors = [], [], []

    def progress(p):  # a view that never paints: each wait runs to its limit
        if p.painted is not None and (p.columns_done or p.rows_done):
            assert p.big_preview and p.numerical_preview is not None
            held.append(p)

    started = time.monotonic()
    jobs.JacobianJob(problem, None, {"eps": 1e-6}, progress, reports.append,
                     errors.append)
    qtbot.waitUntil(lambda: bool(reports or errors), timeout=60000)
    elapsed = time.monotonic() - started
    assert not errors and reports[0].passed
    assert held and not any(p.painted.is_set() for p in held)
    assert elapsed >= 0.05 * len(held)
    assert reports[0].seconds <= elapsed - 0.05 * len(held) + 0.01


def test_a_comparison_in_a_worker_process_computes_nothing_while_the_view_lays_it_out(
        qtbot, monkeypatch):
    """As a comparison on a thread waits while the view lays out a new matrix, a worker
    process's waits until the window has handled each progress (the paint then has the
    cores to itself): the matrices it shares with the window do not change meanwhile."""
    from playground.workers import child_jobs, jobs

    # the window waits for the layout almost as long as the child waits for the window
    monkeypatch.setattr(jobs, "LAYOUT_WAIT_SECONDS", child_jobs._Answer.WAIT_SECONDS - 0.05)
    problem = build(Settings(target="killhead", shapes={"input": "32x64"}, dtype="float64"))
    unchanged, reports, errors = [], [], []

    def progress(p):  # a view that takes 0.1 s to lay out the first progress's matrix
        if p.painted is None or unchanged or p.numerical is None:
            return
        before = p.numerical.clone()

        def laid_out():
            unchanged.append(torch.equal(before, p.numerical))
            p.painted.set()
        QTimer.singleShot(100, laid_out)

    job = jobs.JacobianJob(problem, None, {}, progress, reports.append, errors.append,
                           policy=JobPolicy(isolate=True, hold_child=True))
    qtbot.waitUntil(lambda: bool(reports or errors), timeout=60000)
    assert not errors and reports[0].shape == (2048, 2048) and job.isolated
    assert unchanged == [True]


def test_a_window_that_does_not_answer_is_waited_for_once(monkeypatch):
    """The worker process's side: it waits for the window's answer to each progress, and
    after one wait that ran out, no more in that comparison."""
    from playground.workers import child_jobs

    monkeypatch.setattr(child_jobs._Answer, "WAIT_SECONDS", 60.0)  # while answered
    sent = []
    channel = type("Channel", (), {"send": lambda self, message: sent.append(message)})()
    answer = child_jobs._Answer(channel)
    assert sent[0][0] == "answer" and sent[0][1] is answer.counter and answer.counter.item() == 0
    window = threading.Timer(0.02, lambda: answer.counter.fill_(1))  # answers the first
    window.start()
    answer.after(lambda: sent.append("progress 1"))
    window.join()
    assert answer.answering and answer.counter.item() == 1
    monkeypatch.setattr(child_jobs._Answer, "WAIT_SECONDS", 0.05)
    answer.after(lambda: sent.append("progress 2"))  # never answered: waited for once
    assert not answer.answering
    waited = answer.waited
    answer.after(lambda: sent.append("progress 3"))
    assert answer.waited == waited and sent[1:] == ["progress 1", "progress 2", "progress 3"]


def test_what_a_replaced_comparison_still_sends_is_dropped(qtbot):
    """A signal a worker queued before its comparison was replaced is still delivered (the
    disconnect does not take it back): its progress must not put the pane back to
    "Computing…", nor its report replace the new one."""
    session = Session()
    with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT) as first:
        session.set_target("killhead")
    stale_report = first.args[0]
    session.check_now()
    old = session.job
    stale = preview.PreparedProgress(0.5, "numerical", None, stale_report.numerical,
                                           stale_report.outputs, stale_report.inputs, 12, 0)
    stale.painted = threading.Event()

    def queue():  # as the old worker would, from its thread, before the replacement
        old.bridge.progress.emit(stale)
        old.worker.returned.emit(stale_report)

    thread = threading.Thread(target=queue)
    thread.start()
    thread.join()
    progress, reports = [], []
    session.jacobianProgress.connect(progress.append)
    session.jacobianReady.connect(reports.append)
    session.check_now()  # replaces it
    qtbot.waitUntil(lambda: bool(reports), timeout=TIMEOUT)
    qtbot.wait(50)
    assert all(p is not stale for p in progress) and stale.painted.is_set()  # worker let go
    assert reports and all(r is not stale_report for r in reports)
    session.shutdown(wait=1.0)


def test_a_cancel_ends_the_wait_for_the_layout(qtbot):
    from customgrad.errors import Cancelled
    from playground.workers import jobs

    problem = build(Settings(target="killhead"))
    reports, errors = [], []
    job = None

    def progress(p):  # cancel while the worker waits for a layout that never comes
        if p.painted is not None:
            job.cancel()

    job = jobs.JacobianJob(problem, None, {}, progress, reports.append, errors.append)
    qtbot.waitUntil(lambda: bool(reports or errors), timeout=5000)
    assert not reports and isinstance(errors[0], Cancelled)


def test_switching_functions_during_a_check_leaves_nothing_of_the_old_one(qtbot, window):
    """Another Function picked with the keyboard while a long check of KillHead fills its
    heatmaps in: the pane showed KillHead's block names ("input [48x48]", "output [48x48]")
    and grid under "Preparing inputs…" for the new one until its matrix came. Now nothing
    of the old check stays, the pane names the Function it prepares, and the new check
    labels its own blocks."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    s = window.session
    open_target(qtbot, window, "killhead")
    with qtbot.waitSignal(s.jacobianProgress, timeout=TIMEOUT,
                          check_params_cb=lambda p: bool(p.outputs)):
        s.update(shapes={"input": "48x48"})
    qtbot.waitUntil(lambda: "input [48x48]" in str(window.jacobian.labels.tick_labels),
                    timeout=TIMEOUT)
    window.picker.select("killhead")
    window.picker.tree.setFocus()
    QTest.keyClick(window.picker.tree, Qt.Key.Key_Down)  # |u v|
    QTest.keyClick(window.picker.tree, Qt.Key.Key_Return)
    pane = window.jacobian
    label = s.target.label
    assert s.target.entry.name == "abs_uv"
    assert pane.labels.tick_labels == ([], [])
    assert not pane.heatmaps.row_axis.label.isVisible()
    assert pane.heatmaps.outputs == pane.heatmaps.inputs == []
    assert pane.banner.verdict_label.text() == "Preparing inputs…"
    assert pane.hover_label.text().startswith(label)
    assert pane.checked is None and not pane.is_computing()
    qtbot.waitUntil(lambda: pane.checked is not None, timeout=TIMEOUT)
    assert [text for _, text in pane.labels.tick_labels[0]] == ["input1 [3x8]", "input2 [3x8]"]


def test_the_status_bar_says_the_check_not_ready_while_it_runs(qtbot, window):
    """After a build, the status bar said "Ready" for three seconds while the check that
    follows it ran beside it ("Checking at the start… 0 %" in the Jacobian pane)."""
    from playground.main_window import READY

    s = window.session
    with qtbot.waitSignal(s.jacobianStarted, timeout=TIMEOUT):
        s.set_target("killhead")
    assert window.status.currentMessage() != READY
    assert window.status.currentMessage() == "Checking at the start…"
    qtbot.waitUntil(lambda: window.jacobian.checked is not None, timeout=TIMEOUT)


def test_the_status_bar_does_not_say_checking_after_a_check_with_no_verdict(qtbot, window):
    """A backward that returns the wrong shape ends the check with no verdict: the status
    bar said "Checking at the start…" beside the error banner until something else spoke."""
    from playground.main_window import CHECK_NOT_COMPUTED

    user_functions = os.path.join(os.path.dirname(__file__), "..", "data", "user_functions.py")
    s = window.session
    with qtbot.waitSignal(s.jacobianFailed, timeout=TIMEOUT):
        s.set_target(f"{user_functions}:WrongShapeGradient")
    assert window.status.currentMessage() == CHECK_NOT_COMPUTED
    assert not window.errors.isHidden()
