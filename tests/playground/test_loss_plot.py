"""Tests of the live loss plot (offscreen Qt)."""

import csv

import numpy as np
import pytest
from PySide6.QtGui import QFont

from playground.views.loss_plot import LossPlot
from playground.views.loss_plot.runs import (
    DIRECT_POINTS,
    ENVELOPE_BUCKETS,
    PATH_POINTS,
    Envelope,
    Run,
    legend_corner,
    quiet_corner,
    stepped_range,
)


@pytest.fixture
def plot(qtbot):
    w = LossPlot()
    qtbot.addWidget(w)
    w.resize(900, 500)
    return w


def original(curve):
    x, y = curve.getOriginalDataset()
    return (np.empty(0), np.empty(0)) if x is None else (x, y)


def legend_texts(w):
    return [label.text for _sample, label in w.legend.items]


def test_append_batches_give_the_curve_the_appended_points(plot):
    plot.start_run("lr=0.1")
    steps = np.arange(30)
    losses = np.linspace(3.0, 0.1, 30)
    for lo in range(0, 30, 10):
        plot.append(steps[lo : lo + 10], losses[lo : lo + 10])
    x, y = original(plot.current_curve)
    np.testing.assert_array_equal(x, steps)
    np.testing.assert_array_equal(y, losses)
    assert plot.point_count == 30


def test_pending_points_reach_the_curve_without_being_asked(plot, qtbot):
    plot.start_run("run")
    for lo in range(0, 50, 10):  # faster than the redraw rate: some are deferred
        plot.append(np.arange(lo, lo + 10), np.ones(10))
    qtbot.waitUntil(lambda: plot.status_label.text().startswith("50 points"), timeout=2000)


def test_append_rejects_mismatched_lengths(plot):
    with pytest.raises(ValueError, match="differ in length"):
        plot.append(np.arange(3), np.ones(4))


def test_start_run_twice_keeps_one_overlay_in_the_legend(plot):
    plot.start_run("first")
    plot.append(np.arange(5), np.ones(5))
    plot.start_run("second")
    plot.append(np.arange(3), np.full(3, 2.0))

    assert len(plot.overlay_curves) == 1
    overlay = plot.overlay_curves[0]
    assert overlay is not plot.current_curve
    np.testing.assert_array_equal(original(overlay)[1], np.ones(5))
    np.testing.assert_array_equal(original(plot.current_curve)[1], np.full(3, 2.0))
    assert legend_texts(plot) == ["first", "second"]
    # The overlay is drawn fainter: a thinner pen than the current run.
    assert overlay.opts["pen"].widthF() < plot.current_curve.opts["pen"].widthF()
    assert plot.current_label == "second"


def test_a_run_without_points_leaves_no_overlay(plot):
    plot.start_run("empty")
    plot.start_run("real")
    assert plot.overlay_curves == []
    assert legend_texts(plot) == ["real"]


def test_clear_history_removes_overlays_and_their_legend_entries(plot):
    for label in ("a", "b", "c"):
        plot.start_run(label)
        plot.append(np.arange(4), np.arange(4.0) + 1)
    assert len(plot.overlay_curves) == 2
    overlays = list(plot.overlay_curves)

    plot.clear_button.click()

    assert plot.overlay_curves == []
    assert legend_texts(plot) == ["c"]
    items = plot.plot_item.listDataItems()
    assert plot.current_curve in items
    assert all(o not in items for o in overlays)


def test_overlays_are_capped(qtbot):
    w = LossPlot(max_overlays=2)
    qtbot.addWidget(w)
    for i in range(5):
        w.start_run(f"run {i}")
        w.append(np.arange(3), np.ones(3))
    assert len(w.overlay_curves) == 2
    assert legend_texts(w) == ["run 2", "run 3", "run 4"]


def test_reset_current_empties_the_current_run_only(plot):
    plot.start_run("a")
    plot.append(np.arange(4), np.ones(4))
    plot.start_run("b")
    plot.append(np.arange(4), np.array([1.0, np.nan, 2.0, 3.0]))
    assert plot.nonfinite_count == 1

    plot.reset_current()

    assert plot.point_count == 0
    assert plot.nonfinite_count == 0
    assert len(original(plot.current_curve)[0]) == 0
    assert len(plot.overlay_curves) == 1
    assert legend_texts(plot) == ["a", "b"]
    plot.append(np.arange(2), np.array([5.0, 4.0]))
    np.testing.assert_array_equal(original(plot.current_curve)[1], [5.0, 4.0])


def test_log_checkbox_toggles_log_mode_of_the_plot(plot):
    plot.start_run("a")
    plot.append(np.arange(5), np.array([1.0, 0.5, 0.1, 0.05, 0.01]))
    plot.log_checkbox.setChecked(True)
    assert plot.log_y()
    assert plot.plot_item.ctrl.logYCheck.isChecked()
    assert plot.plot_item.getAxis("left").logMode
    assert plot.current_curve.opts["logMode"] == [False, True]

    plot.start_run("b")  # a new curve inherits the log mode
    assert plot.current_curve.opts["logMode"] == [False, True]

    plot.set_log_y(False)
    assert not plot.log_checkbox.isChecked()
    assert not plot.plot_item.ctrl.logYCheck.isChecked()
    assert plot.current_curve.opts["logMode"] == [False, False]
    assert plot.overlay_curves[0].opts["logMode"] == [False, False]


def test_log_y_from_the_plot_menu_updates_the_checkbox(plot):
    plot.plot_item.ctrl.logYCheck.setChecked(True)
    assert plot.log_checkbox.isChecked()


def test_a_million_points_in_a_hundred_batches(plot):
    plot.start_run("big")
    n, batches = 1_000_000, 100
    size = n // batches
    for b in range(batches):
        steps = np.arange(b * size, (b + 1) * size)
        plot.append(steps, np.exp(-steps / 2e5))
    assert plot.point_count == n
    # the view follows the whole run: the curve holds its envelope, a few thousand points
    # whatever the run's length, with the run's ends and extremes
    x, y = original(plot.current_curve)
    assert len(x) <= 4 * ENVELOPE_BUCKETS
    assert (x[0], x[-1]) == (0, n - 1)
    assert (y.max(), y.min()) == (1.0, np.exp(-(n - 1) / 2e5))
    assert plot.current_curve.curve.opts["segmentedLineMode"] == "on"  # not one long path
    plot.grab()  # draws without trouble
    # zoomed by hand: every point again, for the detail (pyqtgraph clips and downsamples)
    plot.plot_item.vb.sigRangeChangedManually.emit([True, False])
    x, y = original(plot.current_curve)
    assert len(x) == n and y[-1] == np.exp(-(n - 1) / 2e5)
    plot.follow()
    assert len(original(plot.current_curve)[0]) <= 4 * ENVELOPE_BUCKETS


def test_a_short_curve_is_one_path_with_every_point(plot):
    plot.start_run("short")
    plot.append(np.arange(PATH_POINTS), np.linspace(1, 0, PATH_POINTS))
    assert len(original(plot.current_curve)[0]) == PATH_POINTS
    assert plot.current_curve.curve.opts["segmentedLineMode"] == "auto"  # smooth joins
    plot.append(np.arange(PATH_POINTS, DIRECT_POINTS), np.zeros(DIRECT_POINTS - PATH_POINTS))
    assert len(original(plot.current_curve)[0]) == DIRECT_POINTS
    assert plot.current_curve.curve.opts["segmentedLineMode"] == "on"


def _batches(rng, n):
    start = 0
    while start < n:
        stop = min(n, start + int(rng.integers(1, 300)))
        yield start, stop
        start = stop


@pytest.mark.parametrize("seed", range(4))
def test_an_envelope_kept_in_step_is_the_one_pooled_at_once(seed):
    """Fed in batches of any size, an envelope's buckets are the runs of ``width``
    consecutive points, each with its own first, last, least and largest values."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20_000))
    steps, losses = np.arange(n, dtype=np.float64), rng.standard_normal(n)
    envelope = Envelope(buckets=16)
    for start, stop in _batches(rng, n):
        envelope.extend(steps[start:stop], losses[start:stop])
        assert envelope.count <= 32
    w, c = envelope.width, envelope.count
    assert c == -(-n // w) and (c > 16 or w == 1)  # merged only when more than 32 buckets
    for b in range(c):
        part = losses[b * w:(b + 1) * w]
        assert (envelope.lo[b], envelope.hi[b]) == (part.min(), part.max())
        assert (envelope.y0[b], envelope.y1[b]) == (part[0], part[-1])
        assert (envelope.x0[b], envelope.x1[b]) == (b * w, min(n, (b + 1) * w) - 1)


def test_an_envelopes_curve_goes_through_each_bucket_in_its_direction():
    envelope = Envelope(buckets=2)
    envelope.extend(np.arange(6.0), np.array([5.0, 1, 3, 0, 4, 6]))  # 3 buckets of 2
    x, y = envelope.curve()
    np.testing.assert_array_equal(x, [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(y, [5, 1, 3, 0, 4, 6])  # falls, falls, rises
    envelope.clear()
    assert envelope.curve()[0].size == 0


@pytest.mark.parametrize("log", [False, True])
def test_non_finite_zero_and_negative_losses_do_not_break_the_plot(plot, qtbot, log):
    with qtbot.waitExposed(plot):
        plot.show()
    plot.set_log_y(log)
    plot.start_run("diverging")
    plot.append(np.arange(4), np.array([1.0, 0.5, 0.0, -0.2]))
    plot.append(np.arange(4, 8), np.array([np.nan, np.inf, -np.inf, 0.3]))
    plot.append(np.array([8.0, np.nan]), np.array([0.2, 0.1]))  # a NaN step too

    assert plot.nonfinite_count == 4
    x, y = original(plot.current_curve)
    np.testing.assert_array_equal(x, [0, 1, 2, 3, 7, 8])
    np.testing.assert_array_equal(y, [1.0, 0.5, 0.0, -0.2, 0.3, 0.2])
    assert "4 NaN/Inf dropped" in legend_texts(plot)[-1]
    assert "4 NaN/Inf dropped" in plot.status_label.text()
    image = plot.grab()
    assert not image.isNull()
    rect = plot.plot_item.getViewBox().viewRect()
    assert np.isfinite([rect.left(), rect.right(), rect.top(), rect.bottom()]).all()


def test_only_non_finite_losses_in_log_mode(plot):
    plot.set_log_y(True)
    plot.start_run("nan")
    plot.append(np.arange(3), np.full(3, np.nan))
    plot.append(np.arange(3, 5), np.zeros(2))
    assert plot.nonfinite_count == 3
    plot.grab()


def test_export_csv_writes_every_run(plot, tmp_path):
    plot.start_run("lr=0.1")
    plot.append(np.arange(3), np.array([1.0, 0.5, 0.25]))
    plot.start_run("lr, big")  # a comma in the label is quoted
    plot.append(np.array([0.0, 1.0]), np.array([2.0, np.nan]))
    plot.append(np.array([1.5]), np.array([0.1]))

    path = tmp_path / "loss.csv"
    plot.export_csv(path)

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows == [
        ["run", "step", "loss"],
        ["lr=0.1", "0", "1.0"],
        ["lr=0.1", "1", "0.5"],
        ["lr=0.1", "2", "0.25"],
        ["lr, big", "0", "2.0"],
        ["lr, big", "1.5", "0.1"],
    ]


def test_apply_font_resizes_ticks_axis_labels_and_legend(plot):
    plot.start_run("a")
    plot.append(np.arange(3), np.ones(3))
    font = QFont(plot.font())
    font.setPointSizeF(21)

    plot.apply_font(font)

    for name in ("left", "bottom"):
        axis = plot.plot_item.getAxis(name)
        assert axis.style["tickFont"].pointSizeF() == pytest.approx(21)
        assert "font-size: 23.1pt" in axis.labelString()
    assert plot.legend.opts["labelTextSize"] == "21.0pt"
    assert "font-size:21pt" in plot.legend.items[0][1].item.toHtml()
    assert plot.log_checkbox.font().pointSizeF() == pytest.approx(21)
    assert plot.plot_item.getAxis("bottom").labelText == "step"
    assert plot.plot_item.getAxis("left").labelText == "loss"


def test_legend_hidden_until_the_first_point(plot):
    """No empty box before the first run, and no "run 1" over an empty plot (a Function
    that failed to build: the run never got a point)."""
    assert not plot.legend.isVisible()
    plot.start_run("a")
    assert not plot.legend.isVisible()
    plot.append(np.arange(3.0), np.ones(3))
    plot.flush()
    assert plot.legend.isVisible()
    plot.reset_current()  # Reset: the run is empty again
    assert not plot.legend.isVisible()
    plot.append(np.arange(3.0), np.ones(3))
    plot.flush()
    plot.start_run("b")  # the earlier run's curve stays: named
    assert plot.legend.isVisible()


def test_legend_moves_below_a_curve_that_ends_high(plot):
    plot.start_run("falls")
    steps = np.arange(20, dtype=np.float64)
    plot.append(steps, 1.0 / (1.0 + steps))  # ends low: the top right is free
    plot.flush()
    assert plot.legend_corner == "top"
    plot.start_run("flat")
    plot.append(steps, 1.2 - 0.01 * steps)  # ends in the upper half of the view
    plot.flush()
    assert plot.legend_corner == "bottom"
    top_left = plot.legend.mapToParent(plot.legend.boundingRect().topLeft())
    assert top_left.y() > plot.plot_item.vb.height() / 2  # drawn in the lower half


def test_a_new_run_is_repainted_a_turn_of_the_event_loop_later(plot, qtbot):
    # the slot that starts a run (a reset, a new Function) does more; the plot's repaint,
    # with its overlays, gets a pass of the event loop of its own
    from playground.views import pacing

    with qtbot.waitExposed(plot):
        plot.show()
    plot.start_run("run 1")
    plot.append(np.arange(50.0), np.linspace(1.0, 0.1, 50))
    plot.flush()
    qtbot.wait(20)
    plot.start_run("run 2")
    assert plot.plot_widget in pacing.held() and not plot.plot_widget.updatesEnabled()
    qtbot.waitUntil(plot.plot_widget.updatesEnabled, timeout=2000)
    assert pacing.held() == []


def test_the_view_range_changes_in_steps_and_log_y_snaps_to_decades():
    """No widget: stepped_range is a function of the runs and the view range."""
    run = Run("a", curve=None)
    run.extend(np.array([0.0, 1.0, 2.0, 3.0]), np.array([4.0, 2.0, np.nan, 0.5]))
    assert run.n == 3 and run.nonfinite == 1
    assert stepped_range([run], ((0, 1), (0, 1)), log_y=False, force=True) == \
        ((0.0, 4.5), (0.0, 4.0))
    assert stepped_range([run], ((0, 5), (0, 8)), log_y=False) == (None, None)  # all in view
    assert stepped_range([run], ((0, 5), (0, 3)), log_y=False) == (None, (0.0, 6.0))  # doubles
    assert stepped_range([run], ((0, 5), (0, 0)), log_y=True) == (None, (-1, 1))  # decades
    assert stepped_range([Run("empty", curve=None)], ((0, 1), (0, 1)), False) == (None, None)


def test_the_legend_goes_below_a_curve_that_ends_in_the_upper_half():
    assert legend_corner(1.0, (0.0, 4.0), log_y=False) == "top"
    assert legend_corner(3.5, (0.0, 4.0), log_y=False) == "bottom"
    assert legend_corner(100.0, (0.0, 3.0), log_y=True) == "bottom"  # 10^2 of 10^0..10^3


def test_the_legend_goes_where_it_covers_none_of_the_curve():
    """A loss that blows up at the end (linear_bug at lr 1): the legend went to the bottom
    right, since the curve ends high, and covered the tail's rise there; the top left
    covers none of it."""
    steps = np.arange(20.0)
    losses = np.where(steps < 15, 1.0, 10.0 ** (steps - 14))
    view = ((0.0, 29.0), (0.0, 1.2e5))
    size = (0.5, 0.3)
    preferred = legend_corner(float(losses[-1]), view[1], log_y=False)
    assert preferred == "bottom"
    assert quiet_corner(steps, losses, view, size, False, preferred) == "top left"
    falling = 1.0 / (1.0 + steps)  # ends low, the top right free: it stays there
    assert quiet_corner(steps, falling, ((0.0, 29.0), (0.0, 1.0)), size, False, "top") == "top"


def test_a_tall_legend_leaves_the_curve_s_end_in_sight():
    """F9 at 150 %: two runs' legend, most of the short plot's height, went to the top
    right, its frame on the falling curve's tail and end; the end stays in sight."""
    steps = np.arange(101.0)
    losses = 0.22 + 1.4 * np.exp(-steps / 6)
    view = ((0.0, 150.0), (0.05, 1.65))  # a07's: the end 2 px under the legend's frame
    size = (0.46, 0.86)
    corner = quiet_corner(steps, losses, view, size, False, "top")
    x = (steps[-1] - view[0][0]) / (view[0][1] - view[0][0])
    y = (losses[-1] - view[1][0]) / (view[1][1] - view[1][0])
    a, b, c, d = {"top": (1 - size[0], 1, 1 - size[1], 1),
                  "bottom": (1 - size[0], 1, 0, size[1]),
                  "top left": (0, size[0], 1 - size[1], 1),
                  "bottom left": (0, size[0], 0, size[1])}[corner]
    margin = 0.04  # a frame touching the line hides it too
    assert not (a - margin <= x <= b + margin and c - margin <= y <= d + margin), corner


def test_a_long_legend_text_wraps_to_stay_in_a_narrow_plot(qtbot):
    """Presentation mode at 150 % on a projector: '… (5 NaN/Inf dropped)' ran past the
    plot's right edge; now the count goes on a line of its own, and back on one line where
    the plot is wide again."""
    w = LossPlot()
    qtbot.addWidget(w)
    w.resize(460, 200)
    w.show()
    font = QFont(w.font())
    font.setPointSizeF(16.5)
    w.apply_font(font)
    w.start_run("run 1: seed 0, lr 1, sgd")
    steps = np.arange(40.0)
    w.append(steps, np.where(steps < 35, 1.0, np.inf))
    w.flush()
    qtbot.wait(10)
    vb = w.plot_item.vb
    assert w.nonfinite_count == 5
    assert w.legend.boundingRect().width() + 12 <= vb.width()
    assert legend_texts(w) == ["run 1: seed 0, lr 1, sgd<br>(5 NaN/Inf dropped)"]
    w.resize(1400, 400)
    qtbot.waitUntil(lambda: vb.width() > 1000)
    assert legend_texts(w) == ["run 1: seed 0, lr 1, sgd (5 NaN/Inf dropped)"]


def test_the_legend_is_placed_from_the_points_drawn_not_all_of_them(plot, monkeypatch):
    """Each flush placed the legend from every point of the run (a million at the end of a
    long one); while the view follows, the curve's envelope is enough, and a view zoomed in
    by hand reads the points in it."""
    from playground.views.loss_plot import plot as plot_module

    seen = []

    def spy(steps, losses, *rest):
        seen.append(len(steps))
        return quiet_corner(steps, losses, *rest)
    monkeypatch.setattr(plot_module, "quiet_corner", spy)
    plot.start_run("long")
    n = 20 * DIRECT_POINTS
    plot.append(np.arange(float(n)), np.linspace(2.0, 1.0, n))
    plot.flush()
    assert seen and seen[-1] <= 4 * ENVELOPE_BUCKETS
    steps = np.arange(1000.0)
    losses = np.where(steps < 900, 1.0, 50.0)  # high at the end: out of a view of 0 to 100
    view, size = ((0.0, 100.0), (0.0, 2.0)), (0.4, 0.3)
    assert quiet_corner(steps, losses, view, size, False, "bottom") == \
        quiet_corner(steps[:102], losses[:102], view, size, False, "bottom")


@pytest.mark.parametrize("n", [1, 2, 5])
def test_the_step_axis_shows_whole_steps_only(plot, qtbot, n):
    """Steps are whole numbers: a run of one or two points labelled 0.2, 0.4... before."""
    plot.start_run("lr=0.1")
    plot.append(np.arange(n, dtype=np.int64), np.linspace(1.0, 0.5, n))
    plot.flush()
    plot.show()
    qtbot.waitExposed(plot)
    axis = plot.plot_item.getAxis("bottom")
    low, high = plot.plot_item.vb.viewRange()[0]
    values = [v for _spacing, level in axis.tickValues(low, high, axis.width()) for v in level]
    assert values and all(float(v).is_integer() for v in values), values


def test_a_lone_point_is_marked_with_a_dot_until_the_second(plot):
    """trial3 T9: one step drew nothing ("1 points", no line to draw)."""
    plot.start_run("run 1")
    plot.append(np.array([0.0]), np.array([2.5]))
    curve = plot.current_curve
    assert curve.opts["symbol"] == "o"
    assert curve.opts["symbolBrush"].color() == curve.opts["pen"].color()
    assert plot.status_label.text() == "1 point"
    plot.append(np.array([1.0]), np.array([2.0]))
    assert plot.current_curve.opts["symbol"] is None
    assert plot.status_label.text() == "2 points"
    plot.start_run("run 2")  # a run of one point kept as an overlay keeps its dot, recoloured
    plot.append(np.array([0.0]), np.array([1.0]))
    lone = plot.current_curve
    plot.start_run("run 3")
    assert lone.opts["symbol"] == "o"
    assert lone.opts["symbolBrush"].color() == lone.opts["pen"].color()


def test_clearing_every_run_forgets_their_range(plot):
    """trial3 R4: another Function's empty plot kept the last run's range (0 to 8e+22)."""
    plot.start_run("run 1")
    plot.append(np.arange(5.0), np.array([1.0, 1e3, 1e9, 1e15, 8e22]))
    plot.flush()
    assert plot.plot_item.vb.viewRange()[1][1] > 1e22
    plot.start_run("run 2")  # the first run an overlay, its range kept: it is still drawn
    assert plot.plot_item.vb.viewRange()[1][1] > 1e22
    plot.clear_history()
    assert plot.plot_item.vb.viewRange() == [[0, 1], [0, 1]]
