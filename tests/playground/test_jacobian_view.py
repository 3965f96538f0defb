"""JacobianView offscreen: heatmaps, shared colour scale, verdict, hover, tolerances, progress."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import threading

import numpy as np
import pytest
import torch

from customgrad.checking import jacobian
from customgrad.checking.diagnosis import PHRASES
from customgrad.checking.jacobian import Axis, Block, Entry, Progress, Report
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings

pytest.importorskip("pytestqt")

from PySide6.QtCore import QEvent, QObject, QPointF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication

from playground.support import preview
from playground.views import jacobian as jacobian_view
from playground.views.jacobian import JacobianView, banner, words
from playground.views.jacobian.geometry import (
    abbreviations,
    cell_aspect,
    fit_labels,
    grid_lines,
    view_height,
)


@functools.cache
def report_for(target: str, keep_matrices: bool = True) -> Report:
    return build(Settings(target=target)).compare(keep_matrices=keep_matrices)


@pytest.fixture
def view(qtbot):
    w = JacobianView()
    qtbot.addWidget(w)
    w.resize(1200, 560)
    return w


def _absmax(*tensors: torch.Tensor) -> float:
    return max(float(t.nan_to_num(0.0, 0.0, 0.0).abs().max()) for t in tensors)


def _ticks(axis_item) -> list[tuple[float, str]]:
    return list(axis_item._tickLevels[0])


def test_images_hold_the_report_matrices(view):
    report = report_for("killhead_bug")
    view.show_report(report)
    np.testing.assert_array_equal(view.heatmaps.analytic_image.image, report.analytic.numpy())
    np.testing.assert_array_equal(view.heatmaps.numerical_image.image, report.numerical.numpy())
    np.testing.assert_array_equal(view.heatmaps.difference_image.image, report.difference().numpy())
    assert view.heatmaps.analytic_image.axisOrder == "row-major"
    # cell (r, c) is centred on (c, r): the images are shifted by half a cell
    assert view.heatmaps.analytic_image.mapToParent(0.5, 0.5).x() == pytest.approx(0.0)
    assert view.heatmaps.analytic_image.mapToParent(0.5, 0.5).y() == pytest.approx(0.0)


def test_analytic_and_numerical_share_one_symmetric_scale(view):
    report = report_for("linear")
    view.show_report(report)
    controlled = [ref() for ref in view.heatmaps.colorbar.img_list]
    maps = view.heatmaps
    assert maps.analytic_image in controlled and maps.numerical_image in controlled
    low, high = view.heatmaps.colorbar.levels()
    assert low == -high
    assert high == pytest.approx(_absmax(report.analytic, report.numerical))
    for image in (view.heatmaps.analytic_image, view.heatmaps.numerical_image):
        np.testing.assert_allclose(image.getLevels(), (low, high))
    # the difference has its own symmetric scale, never smaller than atol
    d_low, d_high = view.heatmaps.difference_colorbar.levels()
    assert d_low == -d_high
    assert d_high == pytest.approx(max(_absmax(report.difference()), report.atol))
    assert maps.difference_image in [ref() for ref in maps.difference_colorbar.img_list]


def test_failing_difference_scale_is_the_largest_error(view):
    report = report_for("killhead_bug")
    view.show_report(report)
    assert view.heatmaps.difference_colorbar.levels() == pytest.approx((-1.0, 1.0))


def test_verdict_passed(view):
    report = report_for("linear")
    view.show_report(report)
    text = view.banner.verdict_label.text()
    assert "PASSED" in text and "✔" in text and "FAILED" not in text
    assert f"{report.total:,}" in text


def test_verdict_failed_with_count_worst_entry_and_notes(view):
    report = report_for("killhead_bug")
    view.show_report(report)
    text = view.banner.verdict_label.text()
    assert "FAILED" in text and "✘" in text
    assert f"{report.mismatches} of {report.total}" in text
    assert "max abs error 1" in view.banner.details_label.text()
    assert "worst: d output[0, 0] / d input[0, 0]: analytic 1, numerical 0" in \
        view.banner.worst_label.text()
    assert "float32 rule" in view.banner.notes_label.text()


def test_shape_surprise_notes_are_listed(view):
    view.show_report(report_for("functional_linear"))
    assert view.banner.notes_label.text().count("shape surprise") == 2


def test_failing_blocks_are_named(view):
    report = report_for("linear_bug")
    view.show_report(report)
    failing = [b for b in report.blocks if not b.passed]
    assert failing
    assert f"failing blocks: {failing[0].name}" in view.banner.worst_label.text()


def test_hover_text_names_indices_and_values(view):
    report = report_for("linear")
    view.show_report(report)
    weight = report.inputs[1]
    row, col = 7, weight.offset + 6  # output[1, 2] / weight[1, 2]
    a, n = float(report.analytic[row, col]), float(report.numerical[row, col])
    text = view.hover_text(row, col)
    assert text.startswith("output[1, 2]  /  weight[1, 2]")
    assert f"analytic {a:.6g}" in text
    assert f"numerical {n:.6g}" in text  # the middle matrix, named as its title names it
    assert f"difference {a - n:.6g}" in text
    assert "within tolerance" in text
    assert view.hover_text(-1, 0) == "" and view.hover_text(0, report.shape[1]) == ""


def test_hover_text_of_a_mismatch(view):
    view.show_report(report_for("killhead_bug"))
    text = view.hover_text(0, 0)
    assert text.startswith("output[0, 0]  /  input[0, 0]")
    assert "analytic 1   numerical 0   difference 1" in text
    assert "outside tolerance" in text


def test_hover_text_is_a_pure_function_of_axes_indices_and_values():
    """No Qt, no view: given the blocks, an entry's indices and its values, the text."""
    outputs = [Axis("out", 0, (2, 3), 0), Axis("loss", 1, (), 6)]
    inputs = [Axis("x", 0, (4,), 0), Axis("scale", 1, (), 4)]
    assert words.hover_text(outputs, inputs, 4, 2, 1.5, 1.25) == \
        "out[1, 1]  /  x[2]   analytic 1.5   numerical 1.25   difference 0.25"
    assert words.hover_text(outputs, inputs, 6, 4, 0.0, float("nan"), outside=True) == \
        "loss  /  scale   analytic 0   numerical NaN   difference NaN   ✘ outside tolerance"
    assert words.hover_text(outputs, inputs, 0, 0, 1.0, 1.0, outside=False).endswith(
        "difference 0   ✔ within tolerance")
    # while computing: what lies past the rows/columns done is not computed yet
    assert words.hover_text(outputs, inputs, 3, 1, None, 2.0, computing=True, rows_done=0,
                            cols_done=4) == \
        "out[1, 0]  /  x[1]   analytic not computed yet   numerical 2   " \
        "difference not computed yet"
    assert "numerical not computed yet" in words.hover_text(
        outputs, inputs, 0, 3, 1.0, 0.0, computing=True, rows_done=7, cols_done=3)
    assert words.hover_text(outputs, inputs, 7, 0, 1.0, 1.0) == ""  # outside the matrix
    assert words.hover_text(outputs, inputs, 0, -1, 1.0, 1.0) == ""
    assert words.hover_text([], [], 0, 0, None, None) == ""


def test_hover_hint_and_legend_are_pure():
    assert words.hover_hint(False) == "Rows are output elements, columns are input elements."
    wash = words.hover_hint(True, "wash", True)
    assert wash.startswith("Amber cells are outside tolerance") and "double-click" in wash
    assert words.hover_hint(True, "", True).startswith("The ring marks the entry closest")
    blocks = words.legend(_axes(3), _axes(2, 4))
    assert blocks == "Columns: input [2], weight [4].  Rows: input [3].  "
    assert words.hover_hint(True, "outline", blocks=blocks).startswith(blocks + "Outlined")


def test_block_lines_sit_on_the_blocks_edges():
    xs, ys = grid_lines(_axes(3), _axes(2, 4))  # 3 rows; columns 2 | 4
    pairs = list(zip(zip(xs[::2], ys[::2]), zip(xs[1::2], ys[1::2])))
    assert pairs == [((-0.5, -0.5), (-0.5, 2.5)), ((1.5, -0.5), (1.5, 2.5)),
                     ((5.5, -0.5), (5.5, 2.5)),  # vertical: left edge, between, right edge
                     ((-0.5, -0.5), (5.5, -0.5)), ((-0.5, 2.5), (5.5, 2.5))]


def test_mouse_over_a_heatmap_updates_the_hover_label(view, qtbot):
    with qtbot.waitExposed(view):
        view.show()
    view.show_report(report_for("killhead_bug"))
    qtbot.wait(50)
    maps = view.heatmaps
    for image in (maps.analytic_image, maps.numerical_image, maps.difference_image):
        vb = image.getViewBox()
        scene_pos = vb.mapViewToScene(QPointF(5, 2))  # column 5, row 2
        view._mouse_moved(scene_pos)
        assert view.hover_label.text() == view.hover_text(2, 5)
    view._mouse_moved(QPointF(-1000, -1000))
    assert "hover over a cell" in view.hover_label.text()  # back to the hint


def test_mismatches_are_outlined_and_worst_is_ringed(view):
    report = report_for("killhead_bug")
    view.show_report(report)
    mask = report.mismatch_mask().numpy()
    x, y = view.marks.mismatch_markers.getData()
    assert len(x) == report.mismatches == int(mask.sum())
    assert all(mask[int(r), int(c)] for r, c in zip(y, x))
    for panel in view.heatmaps.panels:
        wx, wy = panel.worst.getData()
        assert (wx[0], wy[0]) == (report.worst.col, report.worst.row)
    assert view.marks.mismatch_overlay.image is None


class _CountingReport(Report):
    """A Report that counts calls of difference() and mismatch_mask() and memoizes them,
    as the worker thread will have done before the GUI gets the report."""

    def __init__(self, report: Report):
        super().__init__(**{f.name: getattr(report, f.name)
                            for f in dataclasses.fields(Report) if f.init})
        object.__setattr__(self, "calls", {"difference": 0, "mismatch_mask": 0})
        object.__setattr__(self, "_memo", {})

    def difference(self):
        self.calls["difference"] += 1
        if "difference" not in self._memo:
            self._memo["difference"] = super().difference()
        return self._memo["difference"]

    def mismatch_mask(self):
        self.calls["mismatch_mask"] += 1
        if "mask" not in self._memo:
            self._memo["mask"] = super().mismatch_mask()
        return self._memo["mask"]


@pytest.mark.parametrize("target", ["linear_bug", "sigmoid_bug", "softmax_bug", "abs_uv_bug",
                                    "relu_inplace", "linear"])
def test_the_report_s_difference_and_mask_are_shown(view, target):
    report = _CountingReport(report_for(target))
    view.show_report(report)
    assert report.calls["mismatch_mask"] <= (1 if report.mismatches else 0)
    # shown as they are: no copies on the GUI thread
    assert np.shares_memory(view.heatmaps.difference_image.image, report.difference().numpy())
    assert np.shares_memory(view.heatmaps.analytic_image.image, report.analytic.numpy())
    assert np.shares_memory(view.heatmaps.numerical_image.image, report.numerical.numpy())
    mask = report.mismatch_mask().numpy()
    x, y = view.marks.mismatch_markers.getData()
    assert len(x) == report.mismatches
    marked = np.zeros_like(mask)
    marked[y.astype(int), x.astype(int)] = True
    np.testing.assert_array_equal(marked, mask)
    # the hover verdict agrees with the engine's mask
    rows, cols = report.shape
    for row, col in [(0, 0), (rows - 1, cols - 1), *zip(*np.nonzero(mask))][:20]:
        text = view.hover_text(int(row), int(col))
        assert ("outside tolerance" in text) == bool(mask[row, col])


def _fake_report(rows: int, cols: int, bad: int) -> Report:
    out, inp = Axis("output", 0, (rows,), 0), Axis("input", 0, (cols,), 0)
    analytic = torch.zeros(rows, cols, dtype=torch.float64)
    analytic.view(-1)[:bad] = 1.0
    numerical = torch.zeros(cols, rows, dtype=torch.float64).T
    block = Block(out, inp, mismatches=bad, max_abs_error=1.0, max_rel_error=1e5)
    worst = Entry(0, 0, "output", "input", (0,), (0,), 0, 0, 1.0, 0.0)
    return Report(outputs=[out], inputs=[inp], blocks=[block], worst=worst,
                  eps=1e-6, atol=1e-5, rtol=1e-3, numerical_dtype=torch.float64,
                  analytic_path="direct", analytic=analytic, numerical=numerical)


def test_many_mismatches_become_a_mask_image(view):
    report = _fake_report(100, 120, jacobian_view.SCATTER_LIMIT + 1)
    view.show_report(report)
    assert view.marks.mismatch_overlay.image is not None
    np.testing.assert_array_equal(view.marks.mismatch_overlay.image.astype(bool),
                                  report.mismatch_mask().numpy())
    assert len(view.marks.mismatch_markers.getData()[0]) == 0
    assert "FAILED" in view.banner.verdict_label.text()


def test_tick_labels_name_the_output_blocks(view):
    report = report_for("sincos")
    view.show_report(report)
    # the rows are labelled once, in a column of their own left of the analytic view
    assert _ticks(view.heatmaps.row_axis) == [(11.5, "output0 [3x8]"), (35.5, "output1 [3x8]")]
    assert view.labels.tick_labels[1] == _ticks(view.heatmaps.row_axis)
    for panel in view.heatmaps.panels:
        assert _ticks(panel.plot.getAxis("bottom")) == [(11.5, "x [3x8]")]
        _, gy = panel.grid.getData()
        horizontal = {float(y) for y0, y in zip(gy[::2], gy[1::2]) if y0 == y}
        assert horizontal == {-0.5, 23.5, 47.5}


def test_tick_labels_name_the_input_blocks(view):
    view.show_report(report_for("functional_linear"))
    assert view.labels.tick_labels[0] == [(5.5, "input [3x4]"), (21.5, "weight [5x4]"),
                                     (34.0, "bias [5]")]
    for panel in view.heatmaps.panels:
        assert _ticks(panel.plot.getAxis("bottom")) == view.labels.tick_labels[0]
        gx, _ = panel.grid.getData()
        vertical = {float(x) for x0, x in zip(gx[::2], gx[1::2]) if x0 == x}
        assert vertical == {-0.5, 11.5, 31.5, 36.5}


def test_views_are_linked(view, qtbot):
    with qtbot.waitExposed(view):
        view.show()
    view.show_report(report_for("linear"))
    qtbot.wait(50)
    sizes = {round(panel.plot.vb.width()) for panel in view.heatmaps.panels}
    assert max(sizes) - min(sizes) <= 1  # equal widths, so linked ranges look the same
    first = view.heatmaps.panels[0].plot.vb
    first.setRange(xRange=(2, 8), yRange=(1, 4), padding=0)
    view.heatmaps.panels[2].plot.vb.scaleBy((0.5, 0.5))
    qtbot.wait(20)
    for panel in view.heatmaps.panels:
        for got, want in zip(panel.plot.vb.viewRange(), first.viewRange()):
            assert got == pytest.approx(want)
        assert panel.plot.vb.state["yInverted"]
        assert panel.plot.vb.state["aspectLocked"] == first.state["aspectLocked"]
    # the row labels follow the rows
    assert view.heatmaps.rows_plot.vb.viewRange()[1] == pytest.approx(first.viewRange()[1])


def _type(qtbot, edit, text):
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def test_invalid_tolerance_is_marked_and_not_emitted(view, qtbot):
    view.set_tolerances(1e-6, 1e-5, 1e-3)
    with qtbot.assertNotEmitted(view.tolerancesChanged):
        _type(qtbot, view.tolerance_row.atol_edit, "abc")
    assert view.tolerance_row.atol_edit.property("invalid") is True
    assert "not a number" in view.tolerance_row.atol_edit.toolTip()
    assert "atol" in view.tolerance_row.message.text()
    with qtbot.assertNotEmitted(view.tolerancesChanged):
        _type(qtbot, view.tolerance_row.eps_edit, "0")
    assert view.tolerance_row.eps_edit.property("invalid") is True
    assert "greater than 0" in view.tolerance_row.message.text()


def test_tolerance_editors_say_what_the_settings_rule_says(view, qtbot):
    """One rule per field: the editors show Settings.check_field's words."""
    row = view.tolerance_row
    for edit, name, text in ((row.eps_edit, "eps", "-1e-6"), (row.atol_edit, "atol", "-1"),
                             (row.rtol_edit, "rtol", "inf")):
        with qtbot.assertNotEmitted(view.tolerancesChanged):
            _type(qtbot, edit, text)
        assert edit.toolTip() == Settings.check_field(name, float(text))
        assert edit.toolTip() in view.tolerance_row.message.text()


def test_negative_tolerance_is_invalid(view, qtbot):
    with qtbot.assertNotEmitted(view.tolerancesChanged):
        _type(qtbot, view.tolerance_row.rtol_edit, "-1e-3")
    assert view.tolerance_row.rtol_edit.property("invalid") is True


def test_valid_tolerance_emits_once(view, qtbot):
    view.set_tolerances(1e-6, 1e-5, 1e-3)
    with qtbot.waitSignal(view.tolerancesChanged, timeout=1000) as blocker:
        _type(qtbot, view.tolerance_row.rtol_edit, "2e-3")
    assert blocker.args == [1e-6, 1e-5, 2e-3]
    assert view.tolerance_row.rtol_edit.property("invalid") is False
    assert view.tolerances() == (1e-6, 1e-5, 2e-3)
    with qtbot.assertNotEmitted(view.tolerancesChanged):  # unchanged: nothing to emit
        view.tolerance_row.rtol_edit.editingFinished.emit()


def test_fixing_an_invalid_tolerance_clears_the_mark(view, qtbot):
    view.set_tolerances(1e-6, 1e-5, 1e-3)
    _type(qtbot, view.tolerance_row.eps_edit, "1e-")
    assert view.tolerance_row.eps_edit.property("invalid") is True
    with qtbot.waitSignal(view.tolerancesChanged, timeout=1000) as blocker:
        _type(qtbot, view.tolerance_row.eps_edit, "1e-7")
    assert blocker.args[0] == 1e-7
    assert view.tolerance_row.eps_edit.property("invalid") is False
    assert view.tolerance_row.message.text() == ""


def test_set_tolerances_shows_values_without_emitting(view, qtbot):
    with qtbot.assertNotEmitted(view.tolerancesChanged):
        view.set_tolerances(1e-4, 1e-3, 1e-2)
    row = view.tolerance_row
    assert (row.eps_edit.text(), row.atol_edit.text(), row.rtol_edit.text()) == \
        ("0.0001", "0.001", "0.01")


def _snapshots(target: str) -> tuple[list[Progress], Report]:
    seen: list[Progress] = []

    def keep(p: Progress):
        seen.append(Progress(p.fraction, p.phase,
                             None if p.analytic is None else p.analytic.clone(),
                             p.numerical.clone(), p.outputs, p.inputs, p.columns_done,
                             p.rows_done))
    report = build(Settings(target=target)).compare(progress=keep)
    return seen, report


def test_progress_ui_during_computation(view, qtbot):
    assert view.banner.progress_bar.isHidden() and view.banner.cancel_button.isHidden()
    view.start("Comparing Jacobians…")
    assert not view.banner.progress_bar.isHidden() and not view.banner.cancel_button.isHidden()
    assert view.banner.progress_bar.value() == 0
    assert not view.tolerance_row.check_button.isEnabled()
    assert "Comparing Jacobians" in view.banner.verdict_label.text()
    seen, report = _snapshots("killhead_bug")
    assert seen
    for p in seen:
        view.show_progress(p)
        assert not view.banner.progress_bar.isHidden()
        assert view.banner.progress_bar.value() == round(p.fraction * 1000)
    view.show_report(report)
    assert view.banner.progress_bar.isHidden() and view.banner.cancel_button.isHidden()
    assert view.tolerance_row.check_button.isEnabled()
    assert "FAILED" in view.banner.verdict_label.text()


class _Resizes(QObject):
    """The sizes a widget is resized to."""

    def __init__(self):
        super().__init__()
        self.sizes: list[tuple[int, int]] = []

    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Resize:
            self.sizes.append(event.size().toTuple())
        return False


@pytest.mark.parametrize("points", [9.0, 11.0, 16.5])
@pytest.mark.parametrize("details", [False, True], ids=["folded", "unfolded"])
@pytest.mark.parametrize("width", [640, 900, 1200])
def test_a_check_leaves_the_heatmaps_as_they_were(view, qtbot, width, details, points):
    """A check's start and its verdict lay the heatmaps out no more (tens of milliseconds
    on the GUI thread, and they would jump): the banner keeps its height, whether the last
    verdict took one line or two, the one-line message comes first where the progress bar
    narrows the line, the bar and Cancel are taller than a line of text, or the details are
    unfolded (an empty line is a pixel taller than one with text), or the message is longer
    than the narrowed line (it does not wrap there)."""
    font = QFont(view.font())
    font.setPointSizeF(points)
    view.apply_font(font)
    view.set_details_shown(details)
    _shown(view, qtbot, "killhead_bug", width)
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)  # the report's layout
    resizes = _Resizes()
    view.heatmaps.graphics.installEventFilter(resizes)
    view.start("Comparing Jacobians at the starting point of a long run…")  # one line
    qtbot.wait(50)
    assert resizes.sizes == []
    view.show_report(report_for("killhead_bug"))  # the same verdict again
    qtbot.wait(50)
    assert resizes.sizes == []
    assert view.banner.contentsRect() == view.banner.rect().adjusted(2, 2, -2, -2)  # border


@pytest.mark.parametrize(("target", "colours"), [("killhead", banner._PASS),
                                                 ("killhead_bug", banner._FAIL), (None, None)])
def test_the_banner_wears_the_verdict_s_colours(view, qtbot, target, colours):
    """Green for a pass, red for a failure, the pane's own colours while there is none:
    the frame's background and border, and the verdict's text (the details are in the
    drawer, in the pane's colours)."""
    if target is None:
        view.clear()
        palette = view.palette()
        colours = tuple(palette.color(role).name() for role in (
            QPalette.ColorRole.AlternateBase, QPalette.ColorRole.Mid,
            QPalette.ColorRole.WindowText))
    else:
        _shown(view, qtbot, target)
    image = view.banner.grab().toImage()
    middle = image.width() // 2
    assert image.pixelColor(middle, 0).name() == colours[1]  # the border
    assert image.pixelColor(middle, 4).name() == colours[0]  # inside it, above the text
    assert view.banner.verdict_label.palette().color(QPalette.ColorRole.WindowText).name() \
        == colours[2]
    for label in view.banner._detail_labels():
        assert label.palette().color(QPalette.ColorRole.WindowText) == \
            view.drawer.palette().color(QPalette.ColorRole.WindowText)


def test_engine_progress_blanks_what_is_not_computed_yet(view, monkeypatch):
    """The engine leaves entries not computed yet at zero: the view must not draw them as
    zeros, nor hover them as values."""
    monkeypatch.setattr(jacobian.limits, "CHUNK_ELEMENTS", 24)  # one column / row per batch
    monkeypatch.setattr(jacobian.limits, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(preview, "REFRESH_SECONDS", 0.0)
    seen, report = _snapshots("killhead_bug")
    view.start()
    numerical_steps = [p for p in seen if p.phase == "numerical" and p.columns_done < 24]
    analytic_steps = [p for p in seen if p.phase == "analytic" and p.rows_done < 24]
    assert numerical_steps and analytic_steps
    for p in numerical_steps:
        view.show_progress(p)
        shown = view.heatmaps.numerical_image.image
        c = p.columns_done
        np.testing.assert_array_equal(shown[:, :c], report.numerical[:, :c].numpy())
        assert np.isnan(shown[:, c:]).all()
        assert "numerical not computed yet" in view.hover_text(0, c)
        assert "numerical not computed yet" not in view.hover_text(0, c - 1)
    for p in analytic_steps:
        view.show_progress(p)
        shown = view.heatmaps.analytic_image.image
        r = p.rows_done
        np.testing.assert_array_equal(shown[:r], report.analytic[:r].numpy())
        assert np.isnan(shown[r:]).all()
        assert np.isnan(view.heatmaps.difference_image.image[r:]).all()
        assert "analytic not computed yet" in view.hover_text(r, 0)
    view.show_report(report)
    np.testing.assert_array_equal(view.heatmaps.analytic_image.image, report.analytic.numpy())


def _half_done(report: Report, fraction: float) -> Progress:
    rows, cols = report.shape
    numerical = report.numerical.clone()
    analytic = report.analytic.clone()
    if fraction <= 0.5:
        numerical[:, round(2 * fraction * cols):] = math.nan
        analytic[:] = math.nan
        phase = "numerical"
    else:
        analytic[round((2 * fraction - 1) * rows):] = math.nan
        phase = "analytic"
    return Progress(fraction, phase, analytic, numerical, report.outputs, report.inputs)


def test_progress_fills_the_heatmaps_in(view):
    report = report_for("killhead_bug")
    view.start()
    numerical_phase = _half_done(report, 0.25)
    view.show_progress(numerical_phase)
    np.testing.assert_array_equal(view.heatmaps.numerical_image.image,
                                  numerical_phase.numerical.numpy())
    assert np.isnan(view.heatmaps.numerical_image.image[:, 12:]).all()
    assert view.heatmaps.analytic_image.image is None  # nothing of the analytic Jacobian yet
    assert view.heatmaps.difference_image.image is None
    assert "column" in view.hover_label.text()
    assert "not computed yet" in view.hover_text(0, 20)
    analytic_phase = _half_done(report, 0.75)
    view.show_progress(analytic_phase)
    np.testing.assert_array_equal(view.heatmaps.analytic_image.image,
                                  analytic_phase.analytic.numpy())
    expected = report.difference().numpy().copy()
    expected[12:] = math.nan  # rows whose analytic entries are not computed yet
    np.testing.assert_array_equal(view.heatmaps.difference_image.image, expected)
    low, high = view.heatmaps.colorbar.levels()
    assert low == -high and high >= 1.0
    assert "not computed yet" in view.hover_text(20, 3)
    view.show_report(report)
    np.testing.assert_array_equal(view.heatmaps.difference_image.image, report.difference().numpy())


def test_big_progress_is_previewed_and_redrawn_by_timer(view, qtbot):
    n = preview.PREVIEW_PIXELS * 2
    axes = ([Axis("output", 0, (n,), 0)], [Axis("input", 0, (n,), 0)])
    numerical = torch.full((n, n), math.nan, dtype=torch.float64)
    numerical[:, :4] = 2.0
    view.start()
    view.show_progress(Progress(0.001, "numerical", None, numerical, *axes))
    assert view.heatmaps.numerical_image.image.shape == (n // 2, n // 2)
    assert view.heatmaps.colorbar.levels() == (-2.0, 2.0)
    numerical[:, 4:8] = -3.0
    view.show_progress(Progress(0.002, "numerical", None, numerical, *axes))
    assert view.live.refresh_timer.isActive()  # too soon for a second redraw of this size
    qtbot.waitUntil(lambda: view.heatmaps.colorbar.levels() == (-3.0, 3.0), timeout=2000)


def test_cancel_and_check_buttons_emit(view, qtbot):
    view.start()
    with qtbot.waitSignal(view.cancelRequested, timeout=1000):
        qtbot.mouseClick(view.banner.cancel_button, Qt.MouseButton.LeftButton)
    view.show_failure("cancelled")
    with qtbot.waitSignal(view.checkRequested, timeout=1000):
        qtbot.mouseClick(view.tolerance_row.check_button, Qt.MouseButton.LeftButton)


def test_failure_is_shown_in_the_banner(view):
    view.start()
    view.show_failure("forward raised ValueError")
    assert view.banner.verdict_label.text() == "Jacobian not computed: forward raised ValueError"
    assert view.banner.progress_bar.isHidden() and view.banner.cancel_button.isHidden()
    assert view.tolerance_row.check_button.isEnabled()


def test_report_without_matrices_shows_the_verdict_only(view):
    report = report_for("killhead_bug", keep_matrices=False)
    assert report.analytic is None
    view.show_report(report)
    assert "FAILED" in view.banner.verdict_label.text()
    assert f"{report.mismatches} of {report.total}" in view.banner.verdict_label.text()
    maps = view.heatmaps
    assert maps.analytic_image.image is None and maps.difference_image.image is None
    assert "not kept" in view.hover_label.text()
    assert view.hover_text(0, 0) == "output[0, 0]  /  input[0, 0]"


def test_clear_resets_everything(view):
    view.show_report(report_for("killhead_bug"))
    view.clear()
    assert view.heatmaps.analytic_image.image is None
    assert len(view.marks.mismatch_markers.getData()[0]) == 0
    assert "No Jacobian yet" in view.banner.verdict_label.text()


def test_apply_font_scales_banner_and_axes(view):
    base = QFont(view.font())
    base.setPointSizeF(20)
    view.apply_font(base)
    assert view.banner.verdict_label.font().pointSizeF() == pytest.approx(28)
    axis = view.heatmaps.panels[0].plot.getAxis("bottom")
    assert axis.style["tickFont"].pointSizeF() == pytest.approx(20)
    assert view.heatmaps.colorbar.axis.style["tickFont"].pointSizeF() == pytest.approx(20)
    assert view.heatmaps.panels[0].plot.titleLabel.opts["size"] == "23.0pt"


def test_a_palette_and_a_font_set_while_held_restyle_the_pane_once(view, monkeypatch):
    """A theme and a zoom applied together (the window's start, a new theme) restyle the pane
    once, after both, with the palette and the font it has then; not inside the hold."""
    restyles = []
    restyle = type(view)._restyle_now
    monkeypatch.setattr(type(view), "_restyle_now", lambda self: (
        restyles.append((self.font().pointSizeF(), self.palette().color(
            QPalette.ColorRole.Text).name())), restyle(self)))
    palette = QPalette(view.palette())
    palette.setColor(QPalette.ColorRole.Text, QColor("#123456"))
    font = QFont(view.font())
    font.setPointSizeF(font.pointSizeF() + 3)
    with view.restyles_held():
        with view.restyles_held():  # nested: the outer hold restyles
            view.setPalette(palette)
            view.apply_font(font)
        assert restyles == []
    assert restyles == [(pytest.approx(font.pointSizeF()), "#123456")]
    assert view.heatmaps.text_color == "#123456"
    with view.restyles_held():
        pass  # nothing asked: nothing done
    assert len(restyles) == 1
    view.apply_font(font, verdict_scale=2.0)  # outside a hold: at once, as before
    assert len(restyles) == 2


def test_a_new_font_restyles_the_pane_once(view, monkeypatch):
    """apply_font's own font change restyles nothing: the pane restyles once after it (it
    restyled twice, the second time with nothing new, while the window was built)."""
    restyles = []
    restyle = type(view)._restyle_now
    monkeypatch.setattr(type(view), "_restyle_now", lambda self: (restyles.append(self.font()),
                                                                    restyle(self)))
    font = QFont(view.font())
    font.setPointSizeF(font.pointSizeF() + 3)
    view.apply_font(font)
    assert restyles == [font]
    assert view.banner.verdict_label.font().pointSizeF() == pytest.approx(
        font.pointSizeF() * 1.4)
    view.apply_font(font, verdict_scale=2.0)  # the same font, a new scale: restyled all the same
    assert len(restyles) == 2
    assert view.banner.verdict_label.font().pointSizeF() == pytest.approx(
        font.pointSizeF() * 2.8)


def test_pixel_sized_fonts_work(view):
    font = QFont(view.font())
    font.setPixelSize(20)
    view.apply_font(font)
    assert view.banner.verdict_label.font().pixelSize() == 28
    assert view.heatmaps.panels[0].plot.titleLabel.opts["size"] == "23px"
    view.show_report(report_for("linear"))
    assert "PASSED" in view.banner.verdict_label.text()


def test_renders_without_errors(view, qtbot):
    with qtbot.waitExposed(view):
        view.show()
    for target in ("killhead_bug", "sincos", "functional_linear"):
        view.show_report(report_for(target))
        qtbot.wait(20)
        assert not view.grab().isNull()


# ---------------------------------------------------------------------- layout


def _shown(view, qtbot, target: str, width: int = 1200, height: int = 560):
    view.resize(width, height)
    with qtbot.waitExposed(view):
        view.show()
    view.show_report(report_for(target))
    qtbot.wait(50)


def _scene_rect(item):
    return item.sceneBoundingRect()


def test_the_three_views_share_the_width(view, qtbot):
    _shown(view, qtbot, "linear_bug")
    vbs = [panel.plot.vb for panel in view.heatmaps.panels]
    widths = [vb.width() for vb in vbs]
    assert max(widths) - min(widths) <= 1
    # no reserved space for row labels on the views that do not show them
    for panel in view.heatmaps.panels:
        assert not panel.plot.getAxis("left").isVisible()
    assert view.heatmaps.row_axis.isVisible()
    # together the views take most of the width: labels and colour bars are all the rest
    assert sum(widths) >= 0.65 * view.heatmaps.graphics.width()
    # the row labels line up with the views' rows
    rows = _scene_rect(view.heatmaps.rows_plot.vb)
    for vb in vbs:
        assert _scene_rect(vb).top() == pytest.approx(rows.top(), abs=1)
        assert _scene_rect(vb).bottom() == pytest.approx(rows.bottom(), abs=1)
    # compact colour bars, right next to the view they belong to
    line = view.fontMetrics().height()
    for bar, vb in ((view.heatmaps.colorbar, vbs[1]), (view.heatmaps.difference_colorbar, vbs[2])):
        assert bar.vb.width() <= 2 * line
        assert 0 <= _scene_rect(bar).left() - _scene_rect(vb).right() <= 12


def test_wide_matrices_fill_the_view(view, qtbot):
    _shown(view, qtbot, "linear_bug")  # 12 x 32
    vb = view.heatmaps.panels[0].plot.vb
    rows, cols = view.heatmaps.shape
    (x0, x1), (y0, y1) = vb.viewRange()
    drawn_width = vb.width() * cols / (x1 - x0)
    drawn_height = vb.height() * rows / (y1 - y0)
    assert drawn_width >= 0.9 * vb.width()
    assert drawn_height >= 0.95 * jacobian_view.FILL_TARGET * vb.height()


def test_cell_aspect():
    aspect = cell_aspect
    target, most = jacobian_view.FILL_TARGET, jacobian_view.MAX_CELL_STRETCH
    assert aspect(24, 24, 300, 280) == 1.0  # square cells fill most of the view
    assert aspect(0, 5, 300, 280) == 1.0 and aspect(5, 5, 0, 0) == 1.0  # nothing to fit
    # wide: cells grow taller (pyqtgraph's ratio is x pixels / y pixels per unit), just
    # enough to fill FILL_TARGET of the height
    ratio = aspect(16, 24, 250, 400)
    assert 1 < 1 / ratio < most
    assert 250 * 16 / 24 / ratio == pytest.approx(target * 400)
    # an elongated one (a side twice the other) fills the whole height: it uses the width
    ratio = aspect(12, 32, 250, 190)
    assert 1 < 1 / ratio < most
    assert 250 * 12 / 32 / ratio == pytest.approx(190)
    assert 1 / aspect(12, 80, 250, 190) == most
    # the height the pane asks for: square cells, or an elongated matrix's stretched ones
    assert view_height(24, 24, 300) == 300 and view_height(40, 12, 120) == 400
    assert view_height(12, 32, 320) == pytest.approx(320 * 12 / 32 * most)
    # tall: cells grow wider
    ratio = aspect(40, 12, 250, 190)
    assert ratio == most
    # extreme: a single row still fills MIN_FILL of the height
    ratio = aspect(1, 1000, 250, 190)
    assert 250 / 1000 / ratio == pytest.approx(jacobian_view.MIN_FILL * 190)
    # no jumps: the stretch follows the view's size smoothly
    stretches = [1 / aspect(12, 32, w, 190) for w in range(150, 400)]
    assert max(abs(a - b) for a, b in itertools.pairwise(stretches)) < 0.05


def _axes(*sizes: int) -> list[Axis]:
    out, offset = [], 0
    for k, size in enumerate(sizes):
        out.append(Axis(("input", "weight", "bias")[k], k, (size,), offset))
        offset += size
    return out


def _fit(axes, length, low=None, high=None):
    total = sum(a.size for a in axes)
    low = -0.5 if low is None else low
    high = total - 0.5 if high is None else high
    return fit_labels(axes, low, high, length, lambda text: 8 * len(text), None, gap=6)


def test_block_labels_shorten_then_hide_when_blocks_get_narrow():
    axes = _axes(12, 20, 5)  # "input [12]", "weight [20]", "bias [5]"
    ticks, full = _fit(axes, 740)  # 20 px a column
    assert full and [t for _, t in ticks] == ["input [12]", "weight [20]", "bias [5]"]
    assert [p for p, _ in ticks] == pytest.approx([5.5, 21.5, 34.0])
    ticks, full = _fit(axes, 222)  # 6 px a column: bias [5] would not fit its 30 px
    assert not full and [t for _, t in ticks] == ["input [12]", "weight [20]", "bias"]
    ticks, full = _fit(axes, 160)  # 4.3 px a column: names only
    assert [t for _, t in ticks] == ["input", "weight", "bias"]
    for (position, _), a in zip(ticks, axes):  # every label stays on its block
        assert a.offset - 0.5 <= position <= a.offset + a.size - 0.5
    # 3.6 px a column: the labels before bias move left along their blocks to make room
    # for it (they stayed centred, and bias lost its label, down from 148 px)
    ticks, full = _fit(axes, 132)
    assert [t for _, t in ticks] == ["input", "weight", "bias"]
    for (position, _), a in zip(ticks, axes):
        assert a.offset - 0.5 <= position <= a.offset + a.size - 0.5
    ticks, full = _fit(axes, 128)  # 3.5 px a column: the smallest block loses its label
    assert [t for _, t in ticks] == ["input", "weight"]
    ticks, full = _fit(axes, 74)  # 2 px a column: the biggest keeps its label
    assert ticks == [(21.5, "weight")]
    assert _fit(axes, 40) == ([], False)
    # zoomed into the weight block: its label, at the centre of what is visible
    ticks, full = _fit(axes, 400, low=14.5, high=24.5)
    assert ticks == [(pytest.approx(19.5), "weight [20]")]


def test_a_narrow_block_s_label_is_cut_short_rather_than_dropped():
    """With ``shorten`` (the column axis), a block too narrow for its name gets the name cut
    short with "…": the crowded names first, the short ones with room stay whole."""

    assert abbreviations("grad_output") == ["grad_outp…", "grad_out…", "grad_ou…", "grad_o…",
                                            "grad…", "gra…", "gr…", "g…"]
    axes = [Axis(name, k, (size,), offset) for k, (name, size, offset) in enumerate(
        [("input", 12, 0), ("weight", 20, 12), ("bias", 5, 32), ("grad_output", 15, 37)])]
    total = 52

    def fit(length):
        return fit_labels(axes, -0.5, total - 0.5, length, lambda text: 8 * len(text), None,
                          gap=6, shorten=abbreviations)

    ticks, _full = fit(170)  # 3.3 px a column: no room for "grad_output" (88 px in 49)
    assert [t for _, t in ticks] == ["input", "weight", "bias", "gr…"]
    for (position, _), a in zip(ticks, axes):
        assert a.offset - 0.5 <= position <= a.offset + a.size - 0.5
    without, _full = fit_labels(axes, -0.5, total - 0.5, 170, lambda text: 8 * len(text),
                                None, gap=6)
    assert [t for _, t in without] == ["input", "weight"]  # bias and grad_output had none
    ticks, _full = fit(104)  # 2 px a column: every block still named
    assert len(ticks) == 4 and all(t.endswith("…") for _, t in ticks[1:])


def test_a_narrow_block_keeps_a_label_where_another_can_be_cut_shorter():
    """linear_bug's columns at 1280 x 720, 150 % (the widths DejaVu Sans draws there):
    "input weight" and no "bias", which was dropped once the clash between weight and bias
    had nothing shorter left, while input still had; now input is cut and bias keeps one."""
    axes = [Axis("input", 0, (3, 4), 0), Axis("weight", 1, (4, 4), 12),
            Axis("bias", 2, (4,), 28)]
    widths = {"bias": 45, "bias [4]": 84, "bi…": 43, "b…": 36, "input": 57,
              "input [3x4]": 122, "inp…": 56, "in…": 43, "i…": 29, "weight": 75,
              "weight [4x4]": 140, "weig…": 74, "wei…": 60, "we…": 54, "w…": 40}
    ticks, full = fit_labels(axes, -0.5, 31.5, 150, widths.__getitem__, None, gap=10.5,
                             shorten=abbreviations)
    texts = [t for _, t in ticks]
    assert len(texts) == 3 and not full, texts
    for text, axis in zip(texts, axes):
        assert text == axis.name or (text.endswith("…") and axis.name.startswith(text[:-1]))


def test_block_ticks_fall_back_to_names_in_a_narrow_window(view, qtbot):
    def titles():
        return [panel.plot.titleLabel.text for panel in view.heatmaps.panels]

    _shown(view, qtbot, "functional_linear", width=1400)
    wide = view.labels.tick_labels[0]
    assert [t for _, t in wide] == ["input [3x4]", "weight [5x4]", "bias [5]"]
    assert "Columns:" not in view.hover_label.text()
    # functional_linear's forward is torch's: the middle heatmap is the verified reference
    assert titles() == ["Analytic (backward)", "Numerical (autograd of forward, verified)",
                        "Difference (a − n)"]
    view.resize(640, 560)
    qtbot.waitUntil(lambda: view.labels.tick_labels[0] != wide, timeout=2000)
    texts = [t for _, t in view.labels.tick_labels[0]]
    assert "weight" in texts and "weight [5x4]" not in texts
    assert titles() == ["Analytic", "Numerical", "Difference"]  # short, but all alike
    for panel in view.heatmaps.panels:  # what tick_labels says is what the axes show
        assert _ticks(panel.plot.getAxis("bottom")) == view.labels.tick_labels[0]
    # what the axes no longer say in full, the hint line spells out
    hint = view.hover_label.text()
    assert "Columns: input [3x4], weight [5x4], bias [5]." in hint
    assert "Rows: output [3x5]." in hint
    view.resize(1400, 560)
    qtbot.waitUntil(lambda: view.labels.tick_labels[0] == wide, timeout=2000)
    assert "Columns:" not in view.hover_label.text()
    assert titles()[0] == "Analytic (backward)"


# ---------------------------------------------------------------------- big matrices


def _two_block_report(rows: int, cols: int, bad: int) -> Report:
    """rows x cols, inputs a | b; ``bad`` mismatches at the start of block b's first row."""
    out = Axis("output", 0, (rows,), 0)
    a, b = Axis("a", 0, (cols // 2,), 0), Axis("b", 1, (cols - cols // 2,), cols // 2)
    analytic = torch.zeros(rows, cols, dtype=torch.float64)
    analytic[0, b.offset:b.offset + bad] = 1.0
    numerical = torch.zeros(cols, rows, dtype=torch.float64).T
    blocks = [Block(out, a), Block(out, b, mismatches=bad, max_abs_error=1.0,
                                   max_rel_error=1e5)]
    worst = Entry(0, 1, "output", "b", (0,), (0,), 0, b.offset, 1.0, 0.0)
    return Report(outputs=[out], inputs=[a, b], blocks=blocks, worst=worst,
                  eps=1e-6, atol=1e-5, rtol=1e-3, numerical_dtype=torch.float64,
                  analytic_path="direct", analytic=analytic, numerical=numerical)


def _record_scans(monkeypatch) -> list[int]:
    """Sizes of the matrices read whole (for peaks or pooling) from now on."""
    sizes: list[int] = []
    def recorder(original):
        def recording(matrix, *args):
            sizes.append(matrix.numel())
            return original(matrix, *args)
        return recording
    for name in ("finite_absmax", "pool_signed"):
        monkeypatch.setattr(jacobian.matrices, name, recorder(getattr(jacobian.matrices, name)))
    return sizes


def test_big_report_reads_no_whole_matrix(view, monkeypatch):
    report = _CountingReport(_fake_report(1100, 1000, 40))  # one block of 1.1M entries
    assert report.analytic.numel() > jacobian_view.SCAN_ENTRIES
    step = preview.preview_step(report.shape)
    assert step == 2
    report.prepare_drawing(step)  # what the worker thread does
    sizes = _record_scans(monkeypatch)
    view.show_report(report)
    assert sizes == []  # nothing left to read whole on the GUI thread
    # levels: the ringed worst entry's values, and the largest |a - n|
    assert view.heatmaps.colorbar.levels() == (-1.0, 1.0)
    assert view.heatmaps.difference_colorbar.levels() == (-1.0, 1.0)
    # drawn pooled 2 x 2, keeping the largest magnitude of each cell
    assert view.heatmaps.analytic_image.image.shape == (550, 500)
    np.testing.assert_array_equal(view.heatmaps.analytic_image.image[0, :20], np.ones(20))
    image = view.heatmaps.analytic_image.image
    assert not image[0, 20:].any() and not image[1:].any()
    # finding 40 mismatches in 1.1M entries would mean a scan: the mask is drawn instead
    assert len(view.marks.mismatch_markers.getData()[0]) == 0
    wash = view.marks.mismatch_overlay.image
    assert wash.shape == (550, 500) and wash[0, :20].all() and wash.sum() == 20
    assert "Amber cells" in view.hover_label.text()
    assert "outside tolerance" in view.hover_text(0, 0)
    assert "within tolerance" in view.hover_text(5, 5)


def test_big_report_outlines_mismatches_of_a_small_failing_block(view, monkeypatch):
    report = _two_block_report(1100, 1200, 30)  # 1.32M entries, the failing half 660k
    report.prepare_drawing(preview.preview_step(report.shape))
    sizes = _record_scans(monkeypatch)
    view.show_report(report)
    assert sizes == []
    x, y = view.marks.mismatch_markers.getData()
    assert sorted(zip(y.astype(int), x.astype(int))) == [(0, 600 + k) for k in range(30)]
    assert view.marks.mismatch_overlay.image is None
    assert "Outlined cells" in view.hover_label.text()


def test_the_view_says_its_size_in_pixels_as_it_changes(view, qtbot):
    """The session keeps the heatmaps' size for the check jobs (a view wrote it into a
    module global the workers read)."""
    said = []
    view.pixelsChanged.connect(said.append)
    with qtbot.waitExposed(view):
        view.show()
    view.resize(700, 500)
    qtbot.waitUntil(lambda: said and said[-1] == view.heatmaps.pixels)
    before = said[-1]
    view.resize(1400, 1000)
    qtbot.waitUntil(lambda: said[-1] > before)
    assert said[-1] == view.heatmaps.pixels <= preview.PREVIEW_PIXELS


@pytest.mark.slow
def test_a_big_report_is_drawn_pooled_to_the_views_pixels_and_finer_when_zoomed(
        view, qtbot, monkeypatch):
    """Fitted, each heatmap is pooled to about the views' size (pyqtgraph would otherwise
    average a bigger image down at every repaint, on the GUI thread); zoomed in, finer."""
    with qtbot.waitExposed(view):
        view.show()
    report = _fake_report(2048, 2048, 40)
    pixels = view.heatmaps.pixels  # the views' size, as they report it
    assert pixels < 500
    steps = preview.drawing_steps(report.shape, pixels)
    fit = math.ceil(2048 / pixels)
    assert steps == (3, fit)  # finer: at most PREVIEW_PIXELS cells a side; fitted
    fitted = math.ceil(2048 / fit)
    for step in steps:
        report.prepare_drawing(step)  # what the worker thread does
    sizes = _record_scans(monkeypatch)
    view.show_report(report)
    assert view.heatmaps.analytic_image.image.shape == (fitted, fitted)
    np.testing.assert_array_equal(view.heatmaps.difference_image.image,
                                  report.overview(fit).difference.numpy())
    # a pooled cell of many entries still shows the bad entries in full strength
    assert view.heatmaps.analytic_image.image[0, 0] == 1.0
    view._user_zoomed()  # what zooming with the wheel or dragging calls
    assert view.heatmaps.analytic_image.image.shape == (683, 683)
    assert view.marks.mismatch_overlay.image.shape == (683, 683)
    view.fit()
    assert view.heatmaps.analytic_image.image.shape == (fitted, fitted)
    assert view.marks.mismatch_overlay.image.shape == (fitted, fitted)
    assert sizes == []  # every pooling was the worker's: nothing read whole here
    # the pooled image still lines up with the entries: cell (r, c) centred on (c, r)
    assert view.heatmaps.analytic_image.mapToParent(0.5, 0.5).x() == pytest.approx(fit / 2 - 0.5)


def test_prepared_progress_needs_no_reduction_on_the_gui_thread(view, monkeypatch):
    """The worker makes the previews, their difference and its peak: a torch reduction on
    the GUI thread waits for the cores the comparison keeps busy."""
    report = report_for("killhead_bug")
    progress = _half_done(report, 0.75)
    progress.rows_done, progress.columns_done = 12, report.shape[1]
    progress.value_peak = report.value_peak()  # the engine tracks it as it goes
    prepared = preview.ProgressPreparer()(progress)  # on the worker thread, in the app
    assert prepared.difference_preview is not None
    calls = []
    monkeypatch.setattr(preview, "absmax", lambda matrix: calls.append(matrix) or 0.0)
    view.start()
    view.show_progress(prepared)
    assert calls == []
    expected = report.difference().numpy().copy()
    expected[12:] = math.nan
    np.testing.assert_array_equal(view.heatmaps.difference_image.image, expected)
    peak = float(np.nanmax(np.abs(expected)))
    assert prepared.difference_peak == peak
    assert view.heatmaps.difference_colorbar.levels()[1] >= peak


def test_new_colour_levels_do_not_re_typeset_the_bars_hidden_labels(view, monkeypatch):
    """A colour bar has no unit label: a change of levels (a few a second while computing)
    must not re-typeset one, which cost about 4 ms a bar on the GUI thread."""
    typeset = []
    for bar in (view.heatmaps.colorbar, view.heatmaps.difference_colorbar):
        monkeypatch.setattr(bar.axis.label, "setHtml", typeset.append)
    view.heatmaps.set_levels(view.heatmaps.colorbar, 3e-7)
    view.heatmaps.set_levels(view.heatmaps.difference_colorbar, 250.0)
    assert typeset == []
    assert view.heatmaps.colorbar.levels() == (-3e-7, 3e-7)
    assert view.heatmaps.colorbar.axis.autoSIPrefixScale == 1.0  # tick values are shown unscaled


def _first_progress(report: Report):
    """What the worker hands over first: the new matrix's outputs and inputs, no entry yet."""
    progress = Progress(0.0, "numerical", None, torch.zeros(report.shape, dtype=torch.float64),
                        report.outputs, report.inputs, 0, 0)
    prepared = preview.ProgressPreparer()(progress)
    prepared.painted = threading.Event()
    return prepared


def test_the_worker_waits_for_the_new_matrix_to_be_painted(view, qtbot):
    """The first repaint of a new matrix is the pane's costliest: the view says when it is
    done, so the comparison starts after it rather than competing with it."""
    with qtbot.waitExposed(view):
        view.show()
    progress = _first_progress(report_for("killhead"))
    painted = []  # at each repaint: the layout shown, and whether the worker was let go
    spy = _PaintSpy(painted, lambda: (view._layout_key, progress.painted.is_set()))
    # kept: Qt does not keep a filter alive
    view.heatmaps.graphics.viewport().installEventFilter(spy)
    view.show_progress(progress)
    assert not progress.painted.is_set()  # not before the repaint
    qtbot.waitUntil(progress.painted.is_set, timeout=2000)
    key = view._layout_key
    # the pane repainted the new matrix before the worker was let go
    assert key is not None and (key, False) in painted
    # the same matrix again (a check every K steps): nothing to lay out, no wait
    again = _first_progress(report_for("killhead"))
    view.show_progress(again)
    assert again.painted.is_set()
    # an ended comparison lets a waiting worker go at once
    other = _first_progress(report_for("linear"))
    view.show_progress(other)
    assert not other.painted.is_set()
    view.clear()
    assert other.painted.is_set()


def test_a_hidden_or_collapsed_view_does_not_hold_the_worker(view, qtbot):
    progress = _first_progress(report_for("killhead"))
    assert not view.heatmaps.graphics.isVisible()
    view.show_progress(progress)
    assert progress.painted.is_set()
    # shown, but squeezed to nothing (a splitter dragged shut): no paint is coming either
    from PySide6.QtWidgets import QSplitter, QWidget

    splitter = QSplitter(Qt.Orientation.Vertical)
    qtbot.addWidget(splitter)
    squeezed = JacobianView()  # the splitter owns it
    splitter.addWidget(QWidget())
    splitter.addWidget(squeezed)
    splitter.resize(1200, 600)
    with qtbot.waitExposed(splitter):
        splitter.show()
    splitter.setSizes([600, 0])
    qtbot.wait(50)
    viewport = squeezed.heatmaps.graphics.viewport()
    assert squeezed.heatmaps.graphics.isVisible() and viewport.visibleRegion().isEmpty()
    collapsed = _first_progress(report_for("linear"))
    squeezed.show_progress(collapsed)
    assert collapsed.painted.is_set()
    splitter.setSizes([300, 300])  # dragged open again: it waits for the repaint
    qtbot.wait(50)
    assert not viewport.visibleRegion().isEmpty()
    again = _first_progress(report_for("killhead"))
    squeezed.show_progress(again)
    assert not again.painted.is_set()
    qtbot.waitUntil(again.painted.is_set, timeout=2000)


class _PaintSpy(QObject):
    def __init__(self, seen: list, probe=lambda: True):
        super().__init__()
        self.seen, self.probe = seen, probe

    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint:
            self.seen.append(self.probe())
        return False


class _EventSpy(QObject):
    def __init__(self, kind, seen: list, name: object = True):
        super().__init__()
        self.kind, self.seen, self.name = kind, seen, name

    def eventFilter(self, watched, event):
        if event.type() == self.kind:
            self.seen.append(self.name)
        return False


def test_a_new_matrix_is_laid_out_in_a_pass_of_its_own(view, qtbot):
    """With a worker waiting, a new matrix's layout waits for the next turn of the event loop
    (it is not piled onto what else came in), and is settled before the repaint (no layout
    after it, which would cost a second one)."""
    with qtbot.waitExposed(view):
        view.show()
    events = []
    spies = [_EventSpy(QEvent.Type.LayoutRequest, events, "layout"),
             _EventSpy(QEvent.Type.Paint, events, "paint")]
    view.heatmaps.graphics.ci.installEventFilter(spies[0])
    view.heatmaps.graphics.viewport().installEventFilter(spies[1])
    view.show_report(report_for("killhead"))
    qtbot.waitUntil(lambda: "paint" in events, timeout=2000)
    qtbot.wait(50)
    events.clear()
    progress = _first_progress(report_for("sincos"))  # two outputs: the axes change size
    key = view._layout_key
    view.show_progress(progress)
    assert view._layout_key == key  # not yet
    qtbot.waitUntil(lambda: view._layout_key != key, timeout=2000)
    qtbot.waitUntil(progress.painted.is_set, timeout=2000)
    qtbot.wait(50)
    assert "layout" in events and "paint" in events
    last_layout = len(events) - 1 - events[::-1].index("layout")
    assert last_layout < events.index("paint"), events  # all laid out before the first paint
    # a comparison that ends (or another that starts) first lets the waiting worker go
    for end, target in ((view.clear, "killhead"), (view.start, "linear")):
        other = _first_progress(report_for(target))
        shape = view.heatmaps.shape
        view.show_progress(other)
        end()
        assert other.painted.is_set()
        qtbot.wait(20)
        assert view.heatmaps.shape == shape  # and it is not drawn afterwards


def test_a_newer_progress_replaces_one_held_for_its_layout(view, qtbot):
    """The worker stopped waiting for a held first progress (the GUI thread was busy) and sent
    a newer one: the held one is never shown after it (the bar and heatmaps would go back)."""
    with qtbot.waitExposed(view):
        view.show()
    view.start()
    report = report_for("killhead")
    first = _first_progress(report)
    view.show_progress(first)
    assert view.gate.deferred is first
    numerical = report.numerical.clone()
    numerical[:, 4:] = float("nan")
    newer = preview.PreparedProgress(0.5, "numerical", None, numerical, report.outputs,
                                           report.inputs, 4, 0)
    newer.numerical_preview = numerical.numpy().copy()
    view.show_progress(newer)
    assert first.painted.is_set() and view.gate.deferred is None
    bar, shown = view.banner.progress_bar.value(), view.heatmaps.numerical_image.image.copy()
    assert bar == 500
    qtbot.wait(30)
    assert view.banner.progress_bar.value() == bar
    np.testing.assert_array_equal(view.heatmaps.numerical_image.image, shown)


def test_a_report_is_repainted_a_turn_of_the_event_loop_later(view, qtbot):
    """Setting a report out and repainting the pane would otherwise share one pass of the
    event loop: together 10 to 30 ms with input and timers waiting."""
    from PySide6.QtCore import QTimer

    with qtbot.waitExposed(view):
        view.show()
    view.show_report(report_for("killhead"))
    qtbot.waitUntil(view.heatmaps.graphics.updatesEnabled, timeout=2000)
    qtbot.wait(50)
    painted, at_next_turn = [], []
    spy = _EventSpy(QEvent.Type.Paint, painted)
    view.heatmaps.graphics.viewport().installEventFilter(spy)
    view.show_report(report_for("sigmoid_bug"))
    QTimer.singleShot(0, lambda: at_next_turn.append(len(painted)))
    qtbot.waitUntil(lambda: bool(painted), timeout=2000)
    assert at_next_turn == [0]


def test_the_worker_waits_for_a_big_matrix_preview_to_be_painted(view, qtbot):
    with qtbot.waitExposed(view):
        view.show()
    report = report_for("killhead")
    view.show_progress(_first_progress(report))
    qtbot.waitUntil(lambda: view._layout_key is not None and not view.gate.deferred, timeout=2000)
    qtbot.wait(50)
    numerical = report.numerical.clone()
    numerical[:, 4:] = 0.0
    progress = preview.PreparedProgress(0.25, "numerical", None, numerical, report.outputs,
                                              report.inputs, 4, 0)
    progress.numerical_preview = numerical.numpy().copy()
    progress.big_preview, progress.painted = True, threading.Event()
    view.show_progress(progress)
    assert not progress.painted.is_set()
    qtbot.waitUntil(progress.painted.is_set, timeout=2000)
    # nothing new drawn (a progress without previews): no paint to wait for
    bare = preview.PreparedProgress(0.3, "numerical", None, numerical, report.outputs,
                                          report.inputs, 5, 0)
    bare.painted = threading.Event()
    view.show_progress(bare)
    assert bare.painted.is_set()


def test_the_diagnosis_tag_keeps_clear_of_the_ringed_worst_entry():
    """The tag ("transposed", "factor") sits above the matrix, over its block: at the
    block's left edge, or ending at its right edge where a worst entry in the top row rings
    up into the tag's room there; where both would touch the ring, the edge farther from it.
    (Inside the block, at its top left, it hid the top row's cells, and sat on the ring.)"""
    from playground.views.jacobian.marks import tag_place

    block = (3.5, -0.5, 16.0, 12.0)  # linear_bug's weight block: columns 4 to 19, rows 0-11
    size, reach, top = (5.0, 1.5), (1.0, 1.0), -0.6
    assert tag_place(block, (15.0, 8.0), size, reach, top) == 3.5  # far below: the left
    assert tag_place(block, None, size, reach, top) == 3.5
    assert tag_place(block, (5.0, 0.0), size, reach, top) == 14.5  # top row, left: right
    # a block's lower rows: the tag above the matrix is clear of any ring there
    assert tag_place((3.5, 5.5, 16.0, 6.0), (5.0, 6.0), size, reach, top) == 3.5
    # a narrow block, the ring under both: the edge farther from it
    assert tag_place((3.5, -0.5, 6.0, 2.0), (5.0, 0.0), size, reach, top) == 4.5


@functools.cache
def with_second_order(target: str) -> Report:
    """The report the app's worker sends: the first order's, the second order's beside it."""
    from playground.workers.child_jobs import prepared

    problem = build(Settings(target=target))
    return prepared(problem.compare(), None, problem.function, problem.args)


def test_the_order_switch_draws_the_double_backward_and_back(view, qtbot):
    report = with_second_order("sigmoid_bug")
    second = report.second_order
    view.show_report(report)
    assert "(double backward)" not in view.banner.verdict_label.text()
    assert "second order (double backward): ✘" in view.banner.worst_label.text()
    with qtbot.waitSignal(view.orderChanged) as changed:
        qtbot.mouseClick(view.banner.order_button, Qt.MouseButton.LeftButton)
    assert changed.args == [2] and view.order == 2
    np.testing.assert_array_equal(view.heatmaps.analytic_image.image, second.analytic.numpy())
    np.testing.assert_array_equal(view.heatmaps.numerical_image.image, second.numerical.numpy())
    verdict = view.banner.verdict_label.text()
    assert verdict.startswith(f"✘ FAILED (double backward): {second.mismatches:,} of")
    assert verdict.endswith(f"{PHRASES[second.diagnoses[0].kind]}?")
    assert view.banner.details_label.text().startswith(
        "diagnosis: SigmoidBuggy's double backward returns the same gradients whatever")
    assert view.banner.worst_label.text().startswith("worst: d grad_x")
    assert [p.title for p in view.heatmaps.panels][:2] == [
        "Double backward (analytic)", "Numerical (finite diff. of backward)"]
    assert view.hover_text(0, 0).startswith("grad_x[0, 0]  /  x[0, 0]")
    view.toggle_order()  # the D key's
    assert view.order == 1 and not view.banner.order_button.isChecked()
    np.testing.assert_array_equal(view.heatmaps.analytic_image.image, report.analytic.numpy())
    assert view.heatmaps.panels[0].title == "Analytic (backward)"


def test_second_order_shown_without_one_says_why(view):
    report = with_second_order("numpy_tanh")  # backward is @once_differentiable
    view.set_order(2)
    view.show_report(report)
    assert view.banner.verdict_label.text() == "Second order not drawn"
    assert "@once_differentiable" in view.banner.details_label.text()
    assert view.heatmaps.analytic_image.image is None
    view.set_order(1)
    assert view.banner.verdict_label.text().startswith("✔ PASSED")
    assert "second order: not drawn: " in view.banner.worst_label.text()


def test_second_order_titles_give_way_to_the_panels_names_where_they_do_not_fit(view, qtbot):
    """The second order's short titles over narrow views overlapped their neighbours'."""
    def titles():
        return [panel.plot.titleLabel.text for panel in view.heatmaps.panels]

    view.set_order(2)
    view.resize(1400, 560)
    with qtbot.waitExposed(view):
        view.show()
    view.show_report(with_second_order("killhead"))
    qtbot.waitUntil(lambda: titles()[0] == "Double backward (analytic)", timeout=2000)
    metrics = QFontMetrics(view.labels.title_font)
    seen = []
    for width in range(1400, 399, -50):
        view.resize(width, 560)
        qtbot.wait(20)
        if titles() not in seen:
            seen.append(titles())
        for panel in view.heatmaps.panels:  # each fits over its view, while one can
            assert metrics.horizontalAdvance(panel.shown_title) <= \
                view.heatmaps.view_box.width() or panel.shown_title == panel.short
    # killhead's backward is torch's: its second order is the verified reference
    assert seen == [["Double backward (analytic)", "Numerical (autograd of backward, verified)",
                     "Difference (a − n)"],
                    ["Double backward", "Numerical", "Difference"],
                    ["Analytic", "Numerical", "Difference"]]


def test_the_middle_title_says_which_method_made_the_matrix(view, qtbot):
    """The verified reference (autograd of forward) where it held, finite differences where
    forward hides from autograd (numpy), the notes saying why; the second order's title by its
    own method."""
    def middle():
        return view.heatmaps.panels[1].plot.titleLabel.text

    _shown(view, qtbot, "numpy_tanh", width=1600)
    assert middle() == "Numerical (finite diff.)"
    assert "   numerical " in view.hover_text(0, 0)
    assert "• numerical Jacobian by finite differences, two forward calls per column " \
           "(autograd cannot see" in view.banner.notes_label.text()
    view.show_report(with_second_order("killhead"))
    qtbot.waitUntil(lambda: middle() == "Numerical (autograd of forward, verified)",
                    timeout=2000)
    assert "numerical Jacobian by" not in view.banner.notes_label.text()  # the title says it
    # one name for the middle matrix, whichever method made it: it was "Numerical" while a
    # check ran and "Reference" once done (the rule's n, "Difference (a − n)", the README)
    assert "   numerical " in view.hover_text(0, 0) and "reference" not in view.hover_text(0, 0)
    assert view.heatmaps.panels[1].short == "Numerical"
    view.set_order(2)  # the double backward's reference: autograd through backward
    assert middle() == "Numerical (autograd of backward, verified)"
    view.show_report(with_second_order("sigmoid_bug"))  # its second order: differences
    assert middle() == "Numerical (finite diff. of backward)"
    assert "two backward calls per column" in view.banner.notes_label.text()
    view.start()  # while a check runs: the last report's titles (nothing moves)
    assert middle() == "Numerical (finite diff. of backward)"
    view.set_order(1)
    assert middle() == "Numerical (autograd of forward, verified)"
    view.clear()
    assert middle() == "Numerical (finite diff.)"


def test_method_lines_in_words():
    reference = report_for("killhead")
    assert words.method_line(reference, 2).startswith(
        "numerical Jacobian by autograd through backward, verified")
    unknown = dataclasses.replace(reference, method=jacobian.report.Method())
    assert words.method_line(unknown, 2) == \
        "numerical Jacobian by finite differences, two backward calls per column"


def test_a_check_that_did_not_run_says_why_in_one_short_line(view, qtbot):
    """linear_bug with a non-square weight: its backward's wrong-shaped gradient stops the
    check. The banner's large head said the whole message (five lines at 1280 x 720, the
    heatmaps squeezed below, still showing the matrices of the inputs before); it now says
    what raised in short, the message under Details, and no matrix of other inputs stays."""
    _shown(view, qtbot, "linear_bug", width=840, height=420)
    message = ("LinearFunctionBuggy.backward returned a gradient of shape [4x3] for weight, "
               "whose shape is [3x4].")
    view.start()
    view.show_failure(message)
    qtbot.wait(50)
    label = view.banner.verdict_label
    # the error itself, cut at a word by the line where long (trial3 T15: "the error above
    # says why" stayed after the error banner was dismissed, and nothing was above)
    assert label.text() == f"Jacobian not computed: {message}"
    assert label.height() <= 2.5 * label.fontMetrics().lineSpacing()  # one line, or two
    assert view.banner.details_label.text() in ("", message)
    assert view.shown.numerical is None and view.labels.tick_labels == ([], [])
    assert not view.hover_label.text().startswith("Checking")
    view.show_failure("LinearFunctionBuggy.forward raised RuntimeError: The expanded size "
                      "of the tensor (3) must match the existing size (4)")
    assert label.text() == "Jacobian not computed: LinearFunctionBuggy.forward raised " \
                           "RuntimeError"
    view.show_failure("cancelled")  # the user's Cancel: nothing more to say
    assert label.text() == "Jacobian not computed: cancelled"

