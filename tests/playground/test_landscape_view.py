"""The Landscape tab: its worker (a worker process), when its model computes again, what the
view draws and writes, and the tab in the window following a run."""

from __future__ import annotations

import os
import textwrap
import threading
import time

import numpy as np
import pytest
import torch

pytest.importorskip("pytestqt")

from PySide6.QtCore import QObject, Qt, Signal

from customgrad.landscape import Landscape, Plane
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from playground.state.landscape import LandscapeModel
from playground.support.contours import shown_values
from playground.views.landscape.geometry import arrow_ends, head_angle
from playground.workers.landscape import LandscapeRunner
from playground.workers.policy import JobPolicy

TIMEOUT = 20_000


def logged(tmp_path, seconds: float = 0.0):
    """A problem whose Function's forward writes its process id to a log (and sleeps
    ``seconds``), built here; the log, emptied."""
    log = tmp_path / "pids.txt"
    source = tmp_path / "logged.py"
    source.write_text(textwrap.dedent(f"""
        import os
        import time
        import torch

        class Logged(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: "4"):
                with open({str(log)!r}, "a") as f:
                    f.write(f"{{os.getpid()}} ")
                time.sleep({seconds!r})
                return 3 * x

            @staticmethod
            def backward(ctx, grad):
                return 3 * grad
        """))
    problem = build(Settings(target=f"{source}:Logged", dtype="float64"))
    log.write_text("")
    return problem, log


def test_the_grid_is_computed_in_a_worker_process(qtbot, tmp_path):
    problem, log = logged(tmp_path)
    runner = LandscapeRunner()
    partial = []
    runner.progress.connect(lambda _serial, landscape, _contours: partial.append(landscape))
    with qtbot.waitSignal(runner.finished, timeout=TIMEOUT) as done:
        runner.run(problem, 2, [1.0, 1.0], {"size": 13})
    result, contours = done.args[1:]
    assert contours.values.shape == (13, 13) and len(contours.xs) == len(contours.ys) > 0
    assert result.complete and result.losses.shape == (13, 13) and result.step == 2
    assert partial and not partial[0].complete  # the coarse grid came first
    pids = set(log.read_text().split())
    assert pids and str(os.getpid()) not in pids
    assert result.words == "same direction, as long"


def test_a_cancelled_landscape_ends_its_worker_process(qtbot, tmp_path):
    problem, log = logged(tmp_path, 0.01)
    runner = LandscapeRunner()
    with qtbot.waitSignal(runner.progress, timeout=TIMEOUT):  # the coarse grid: it is busy
        runner.run(problem, 0, [], {"size": 41})  # (1,681 losses: 17 s and more)
    with qtbot.waitSignal(runner.failed, timeout=TIMEOUT) as failed:
        runner.cancel()
    assert type(failed.args[1]).__name__ == "Cancelled"
    (pid,) = {int(p) for p in log.read_text().split()}

    def ended() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    qtbot.waitUntil(ended, timeout=TIMEOUT)


def test_the_applications_end_stops_the_landscape_and_leaves_the_wait_to_the_pool(
        qtbot, monkeypatch):
    """At quit the runner stops its landscape and returns: the one wait for worker threads is
    the thread pool's (app.end_workers). It waited up to 2 s for its own thread first, and
    the pool 3 s more after that."""
    from PySide6.QtCore import QCoreApplication, QThreadPool

    from customgrad.errors import Cancelled
    from playground.workers import landscape as landscape_worker

    started, ended = threading.Event(), threading.Event()

    def work(job, *_args):
        started.set()
        while not job["stop"]:
            time.sleep(0.01)
        time.sleep(1.0)  # a worker process winding down after the stop
        ended.set()
        raise Cancelled("the landscape was cancelled.")

    monkeypatch.setattr(landscape_worker, "_work", work)
    runner = LandscapeRunner()
    runner.run(None, 0, [], {})
    assert started.wait(TIMEOUT / 1000)
    QCoreApplication.instance().aboutToQuit.emit()
    assert not ended.is_set()  # quitting did not wait for the landscape's thread
    QThreadPool.globalInstance().waitForDone(TIMEOUT)
    assert ended.is_set()


def test_path_updates_reuse_the_kept_worker_process(qtbot, tmp_path):
    from customgrad.workers.warm import WarmWorker

    worker = WarmWorker(keep_seconds=60.0)  # (the test's own: the policy hands it to the job)
    problem, log = logged(tmp_path)
    old = os.path.getmtime(tmp_path / "logged.py") - 3600  # (a file written as a job starts
    os.utime(tmp_path / "logged.py", (old, old))  # may not be what ran: no child is kept)
    runner = LandscapeRunner()
    pids = []
    try:
        for steps in (1, 2):  # a path update after another: no new process start for each
            with qtbot.waitSignal(runner.finished, timeout=TIMEOUT):
                runner.run(problem, steps, [1.0] * steps, {"size": 0},
                           policy=JobPolicy(worker=worker))
            pids.append(set(log.read_text().split()))
            log.write_text("")
    finally:
        worker.end()
    assert len(pids[0]) == 1 and pids[0] == pids[1]  # (a fresh child each: two pids)
    assert str(os.getpid()) not in pids[0]


class FakeSession(QObject):
    problemReady = Signal(object)
    runReset = Signal(str)
    batchReady = Signal(object)
    runningChanged = Signal(bool)
    problem = object()
    policy = JobPolicy()


class FakeRunner(QObject):
    progress = Signal(int, object, object)
    finished = Signal(int, object, object)
    failed = Signal(int, object)

    def __init__(self):
        super().__init__()
        self.serial, self.calls, self.cancels = 0, [], 0

    def run(self, problem, steps, lrs, options, policy):
        self.serial += 1
        self.calls.append((steps, dict(options)))
        return self.serial

    def cancel(self):
        self.cancels += 1

    def finish(self, step, current=(0.0, 0.0), off_plane=0.0):
        axis = np.linspace(-1, 1, 5)
        plane = Plane(torch.zeros(3, dtype=torch.float64),
                      *torch.eye(3, dtype=torch.float64)[:2])
        path = np.array([[0.5, 0.5], current])
        self.finished.emit(self.serial, Landscape("f", step, plane, axis, axis, None, True,
                                                  path, np.ones(2), np.ones(2), 0.0, 1.0, 1.0,
                                                  0.0, off_plane), None)


class Batch:
    """``count`` steps at learning rate 1."""

    def __init__(self, count):
        from customgrad.training.descent import StepRecord

        self.records = [StepRecord(k, 1.0, {}, 1.0) for k in range(count)]
        self.last = self.records[-1]

    def __len__(self):
        return len(self.records)


def test_the_model_works_only_while_shown_and_keeps_the_plane_while_the_run_plays(qtbot):
    session, runner = FakeSession(), FakeRunner()
    model = LandscapeModel(session, runner)
    session.batchReady.emit(Batch(3))
    assert runner.calls == []  # hidden: nothing computed
    model.set_active(True)
    assert runner.calls[-1][0] == 3 and runner.calls[-1][1]["size"] == model.size
    runner.finish(3)
    session.batchReady.emit(Batch(2))  # the run goes on: the path on the plane kept
    assert runner.calls[-1][0] == 5 and runner.calls[-1][1]["size"] == 0
    assert runner.calls[-1][1]["plane"] is model.shown.plane
    session.batchReady.emit(Batch(2))  # one job at a time: this one waits
    assert len(runner.calls) == 2
    runner.finish(5, current=(0.2, -0.1))
    assert runner.calls[-1][0] == 7 and runner.calls[-1][1]["size"] == 0
    runner.finish(7, current=(0.9, 0.0))  # the point left the middle of the view
    assert runner.calls[-1][0] == 7 and runner.calls[-1][1]["size"] == model.size


def test_a_new_plane_a_pause_at_a_new_point_and_a_hide(qtbot):
    session, runner = FakeSession(), FakeRunner()
    model = LandscapeModel(session, runner)
    model.set_active(True)
    runner.finish(0)
    model.set_mode("pca")
    assert runner.calls[-1][1]["mode"] == "pca" and runner.calls[-1][1]["size"] > 0
    runner.finish(0)
    session.batchReady.emit(Batch(4))
    runner.finish(4, current=(0.1, 0.1))
    count = len(runner.calls)
    session.runningChanged.emit(False)  # paused at step 4: a plane through it
    assert len(runner.calls) == count + 1 and runner.calls[-1][1]["size"] > 0
    cancels = runner.cancels
    model.set_active(False)  # hidden (or the window closes): what runs is stopped
    assert runner.cancels == cancels + 1


def test_arrows_keep_their_ratio_and_point_down_the_gradients():
    start = np.zeros(2)
    a, t, stretched = arrow_ends(start, np.array([2.0, 0.0]), np.array([0.0, 1.0]), 10.0)
    assert np.hypot(*a) == pytest.approx(2 * np.hypot(*t)) and not stretched
    assert a[0] < 0 and t[1] < 0  # the negative gradients
    _, t, stretched = arrow_ends(start, np.array([100.0, 0.0]), np.array([0.0, 1.0]), 10.0)
    assert stretched and np.hypot(*t) > 0.1 * np.hypot(*_)
    assert head_angle(start, np.array([1.0, 0.0])) == pytest.approx(180)
    assert head_angle(start, np.array([0.0, 1.0])) == pytest.approx(90)
    values, log = shown_values(np.array([[1e-4, 1.0], [10.0, 100.0]]))
    assert log and values[0, 0] == pytest.approx(-4)
    assert not shown_values(np.array([[1.0, 2.0]]))[1]


def test_the_tab_draws_the_run_and_exports_it(qtbot, window, tmp_path):
    view, session = window.landscape, window.session
    with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT):
        session.set_target("mulconstant_bug")
    with qtbot.waitSignal(view.model.ready, timeout=TIMEOUT):
        window.side_tabs.setCurrentWidget(window.landscape_page)  # (the tab holding view)
    session.update(steps=0)
    for _ in range(3):
        session.step_once()
        qtbot.waitUntil(lambda: view.landscape is not None and session.step >= 1,
                        timeout=TIMEOUT)
    qtbot.waitUntil(lambda: view.plot.landscape is not None
                    and len(view.plot.path.xData) == session.step + 1, timeout=TIMEOUT)
    shown = view.landscape
    assert view.plot.image.image is not None and shown.complete
    assert "0.4x as long" in view.legend.text() and "your backward" in view.legend.text()
    (_, backward, _), (_, true, _) = view.plot.arrows
    assert backward.opts["pen"].style() == Qt.PenStyle.SolidLine
    assert true.opts["pen"].style() == Qt.PenStyle.DashLine
    for suffix in ("png", "svg", "npy", "csv"):
        written = view.export(tmp_path / f"landscape.{suffix}")
        assert written.stat().st_size > 0
    assert np.array_equal(np.load(tmp_path / "landscape.npy"), shown.losses, equal_nan=True)
    assert (tmp_path / "landscape.csv").read_text().count("\n") == shown.losses.size + 1


def test_the_step_tab_names_the_arrow_in_its_colour():
    from customgrad.training.descent import StepRecord
    from playground.views.arrows import ARROW_COLOURS
    from playground.views.explainer import explain

    record = StepRecord(3, 0.5, {"x": 1.0}, 0.1)
    for dark in (False, True):
        after = explain(record, Settings(), "F", None, dark)["after"]
        backward, true = ARROW_COLOURS[dark]
        assert f"color:{backward}'>━━ solid arrow (your backward)" in after
        assert f"color:{true}'>╍╍ dashed arrow (true gradient)" in after


def test_the_model_keeps_each_steps_learning_rate_for_the_replay(qtbot):
    from customgrad.training.descent import StepRecord

    session = FakeSession()
    model = LandscapeModel(session, FakeRunner())
    session.batchReady.emit(Batch(2))
    changed = Batch(3)  # the learning rate changed within this batch, after its first step
    changed.records = [StepRecord(2, 1.0, {}, 1.0)] + [StepRecord(k, 1.0, {}, 0.5)
                                                       for k in (3, 4)]
    changed.last = changed.records[-1]
    session.batchReady.emit(changed)
    assert model.lrs == [1.0, 1.0, 1.0, 0.5, 0.5]


@pytest.mark.slow  # the whole window
def test_L_shows_the_tab_with_room_and_the_tab_never_widens_the_window(qtbot, window):
    prefs = window.classroom.preferences
    prefs.set_theme("high-contrast", remember=False)  # (its controls have wide borders)
    prefs.set_zoom(150, remember=False)
    window.classroom.layout.set_side_panel(False)
    qtbot.wait(50)
    narrowest = window.minimumSizeHint().width()
    window.actions_by_name["landscape"].trigger()
    qtbot.wait(50)
    assert window.minimumSizeHint().width() <= narrowest  # (the Landscape tab widened it)
    assert window.side_tabs.currentWidget() is window.landscape_page  # (its pane inside)
    assert window.landscape.isVisible()
    qtbot.waitUntil(lambda: window.landscape.width() > 0.25 * window.width(), timeout=TIMEOUT)
    view = window.landscape
    view.status.setText("Step 20: loss 1.029 " + "and a long explanation " * 10)
    chars = view.fontMetrics().averageCharWidth()
    assert view.minimumSizeHint().width() < 80 * chars  # (the status line set it: 250)


def test_a_notebook_shows_a_landscape_as_the_tab_draws_it():
    from customgrad.landscape import compute

    shown = compute(build(Settings(target="mulconstant_bug")), 3, size=9)
    png = shown._repr_png_()
    assert png.startswith(b"\x89PNG")


def test_contours_are_traced_in_plane_coordinates():
    from pyqtgraph.functions import isocurve

    from playground.support.contours import levels, prepare

    alphas, betas = np.linspace(-4, 6, 41), np.linspace(-7, 3, 41)
    a, b = np.meshgrid(alphas, betas)  # [beta, alpha], as a landscape's grid
    losses = (a - 1) ** 2 + 4 * (b + 2) ** 2
    traced = prepare(losses, alphas, betas, isocurve)
    finite = np.isfinite(traced.xs)
    assert not traced.log and traced.low == losses.min() and finite.sum() > 100
    _, _, steps = levels(losses)
    x, y = traced.xs[finite], traced.ys[finite]
    # every traced point lies on one of the levels: its distance to the level set (the
    # loss's difference over its slope) is within a tenth of a grid step (0.25); linear
    # interpolation leaves 3 % of one, a shift by a quarter step (a pixel-centre slip) 26 %
    miss = np.min(np.abs(((x - 1) ** 2 + 4 * (y + 2) ** 2)[:, None] - np.array(steps)), axis=1)
    assert (miss / np.hypot(2 * (x - 1), 8 * (y + 2))).max() < 0.1 * 0.25


@pytest.mark.slow  # the app as a process, a screenshot
def test_screenshot_of_the_landscape_tab(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen",
           "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path / "home")}
    shot = tmp_path / "landscape.png"
    proc = subprocess.run([sys.executable, "-m", "playground", "killhead", "--tab", "landscape",
                           "--steps", "3", "--screenshot", str(shot)], capture_output=True,
                          text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr
    assert shot.stat().st_size > 0


def test_where_the_gradients_are_parallel_the_d2_axis_says_what_it_is():
    from playground.views.landscape.geometry import axis_titles, note_line

    parallel = "the two gradients are parallel: the second direction is the path's largest " \
               "principal direction"
    assert axis_titles("gradients", ("backward", "path"))[1] == "d2 (the path's direction)"
    assert axis_titles("gradients")[1] == "d2 (true gradient)"
    assert note_line(parallel) == ""  # the axis says it: no line under a small picture
    assert note_line("both gradients are zero here").startswith("Both")


def test_the_colour_bars_title_clears_its_tick_labels_at_big_fonts(qtbot):
    from pyqtgraph.functions import isocurve
    from PySide6.QtGui import QFont, QImage, QPainter

    from customgrad.landscape import compute
    from playground.support.contours import prepare
    from playground.views.landscape.plot import LandscapePlot

    shown = compute(build(Settings(target="mulconstant_bug")), 20, size=9)  # (log10: "-3")
    plot = LandscapePlot()
    qtbot.addWidget(plot)
    plot.resize(500, 400)
    font = QFont(plot.font())
    font.setPointSizeF(24)  # as big as at zoom 150 % in presentation mode
    plot.setFont(font)
    plot.show()
    plot.show_landscape(shown, prepare(shown.losses, shown.alphas, shown.betas, isocurve))
    axis = plot.bar.axis
    margin = axis.label.document().documentMargin()  # (around the text: not drawn)

    def title_and_ticks():
        plot.grab()  # (the axis measures its tick labels as it paints)
        image = QImage(10, 10, QImage.Format.Format_ARGB32)
        painter = QPainter(image)
        try:
            _, _, texts = axis.generateDrawSpecs(painter)
        finally:
            painter.end()
        title = axis.label.mapRectToParent(
            axis.label.boundingRect().adjusted(margin, margin, -margin, -margin))
        return title, max(rect.right() for rect, _flags, _text in texts)

    def clear() -> bool:  # (once the layouts caught up: the title is placed as they do)
        title, ticks_end = title_and_ticks()
        return title.left() >= ticks_end - 1 and title.right() <= axis.width() + 1

    # clear of the tick labels and inside the axis (pyqtgraph placed it to a pixel), as big
    # as the axes' titles (at a fixed 45 px and pyqtgraph's 9 pt it overlapped the tick
    # labels at zoom 150 %)
    qtbot.waitUntil(clear, timeout=TIMEOUT)
    title, _ = title_and_ticks()
    bottom = plot.plot_item.getAxis("bottom").label.boundingRect()
    assert axis.label.isVisible()
    assert title.width() == pytest.approx(bottom.height() - 2 * margin, abs=1)


def test_an_axis_title_longer_than_the_picture_is_elided_to_fit(qtbot):
    from PySide6.QtGui import QFont, QFontMetrics

    from playground.views.landscape.plot import LandscapePlot

    plot = LandscapePlot()
    qtbot.addWidget(plot)
    plot.resize(360, 170)  # the tab's picture at 1280x720, zoom 150 %, presenting
    font = QFont(plot.font())
    font.setPointSizeF(24)
    plot.setFont(font)
    plot.show()
    qtbot.wait(50)
    left, box = plot.plot_item.getAxis("left"), plot.plot_item.vb.size()
    qtbot.waitUntil(lambda: left.labelText.endswith("…"), timeout=TIMEOUT)
    assert QFontMetrics(font).horizontalAdvance(left.labelText) <= box.height()
    assert left.labelText.startswith("d2")  # (it was cut at both ends: "2 (true gradien")
    metrics = QFontMetrics(font)
    around = plot.height() - plot.plot_item.vb.size().height()
    room = (metrics.horizontalAdvance("d2 (true)")
            + metrics.horizontalAdvance("d2 (true gradient)")) // 2
    plot.resize(360, int(around + room))  # room for the short title, not the whole
    qtbot.waitUntil(lambda: left.labelText == "d2 (true)", timeout=TIMEOUT)
    plot.resize(360, 700)
    qtbot.waitUntil(lambda: left.labelText == "d2 (true gradient)", timeout=TIMEOUT)


def test_where_your_backward_gives_zero_the_axes_say_what_d1_and_d2_are(qtbot):
    from customgrad.landscape.plane import gradient_plane
    from playground.views.landscape.plot import LandscapePlot

    origin, zero = torch.zeros(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    true = torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)
    path = torch.tensor([[0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    plots = {}
    for name, analytic in (("zero", zero), ("parallel", 2 * true)):
        plane = gradient_plane(origin, analytic, true, path, [(3,)])
        axis = np.linspace(-1, 1, 5)
        shown = Landscape("f", 1, plane, axis, axis, None, True, plane.project(path),
                          np.zeros(2), np.zeros(2), 0.0, 1.0, 1.0, 0.0)
        plots[name] = plot = LandscapePlot()
        qtbot.addWidget(plot)
        plot.show_landscape(shown)
    titles = {name: [plot.plot_item.getAxis(side).labelText for side in ("bottom", "left")]
              for name, plot in plots.items()}
    # (a backward that returns zeros: d1 is the true gradient, d2 the path's; the axes said
    # "your backward" and "true gradient")
    assert titles["zero"] == ["d1 (true gradient)", "d2 (the path's direction)"]
    assert titles["parallel"] == ["d1 (your backward)", "d2 (the path's direction)"]


def test_the_picture_is_built_when_the_tab_is_first_shown_at_its_shape(qtbot, window):
    """The tab is hidden at the start: its pyqtgraph picture is built when it is first shown
    (not with the window, before the first paint), laid out before the model starts its
    first grid, whose shape is the picture's, and followed as it resizes."""
    from playground.views.landscape.plot import LandscapePlot

    view = window.landscape
    qtbot.waitExposed(window)
    assert window.findChildren(LandscapePlot) == []
    started_at = []
    set_active = view.model.set_active
    view.model.set_active = lambda active: (started_at.append(view.model.aspect) if active
                                            else None, set_active(active))
    window.show_landscape()
    (plot,) = window.findChildren(LandscapePlot)
    assert plot is view.plot and plot.isVisible() and view.isAncestorOf(plot)
    qtbot.waitUntil(lambda: plot.plot_item.vb.width() > 0)
    box = plot.plot_item.vb.size()
    # (a scroll bar may take its width from the picture after: a few per cent)
    assert started_at and started_at[0] == pytest.approx(box.width() / box.height(), rel=0.15)
    assert view.model.aspect == pytest.approx(box.width() / box.height())


def test_the_tab_builds_its_pane_when_first_shown_by_its_key(qtbot, window):
    """The Landscape tab is hidden at the start: its pane is built when the tab is first
    shown (here by L, never shown before), not with the window (before its first paint);
    its model follows the session from the start."""
    from playground.state.landscape import LandscapeModel
    from playground.views.landscape import LandscapeView

    qtbot.waitExposed(window)
    page = window.landscape_page
    assert not page.built and window.findChildren(LandscapeView) == []
    (model,) = window.session.findChildren(LandscapeModel)  # built with the window
    assert not model.active
    window.actions_by_name["landscape"].trigger()
    assert page.built
    (view,) = window.findChildren(LandscapeView)
    assert window.landscape is view and view.model is model and page.isAncestorOf(view)
    assert window.side_tabs.currentWidget() is page
    assert view.isVisible() and model.active  # shown with its tab, at once
    assert view.geometry() == page.rect()  # it fills the page


def test_asked_for_before_its_tab_is_shown_the_pane_waits_hidden(qtbot, window):
    qtbot.waitExposed(window)
    view = window.landscape  # built on demand, hidden with its tab
    assert window.landscape_page.built and not view.isVisible() and not view.model.active
    window.side_tabs.setCurrentWidget(window.landscape_page)
    assert window.landscape is view and view.isVisible() and view.model.active
