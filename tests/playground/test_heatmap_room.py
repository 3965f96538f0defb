"""Nothing lies over a heatmap cell: the diagnosis tag ("transposed") sits above the matrix, in
room the views keep free there, and the Details drawer above the heatmaps, in the pane's
column. linear_bug (a failing 12 x 32 Jacobian) on a projector (1280 x 720 at 150 %) and a
laptop (1440 x 900 at 100 %), in two themes. Geometry only (exact under offscreen Qt: the same
fonts, sizes and layouts give the same pixels)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QRect, QRectF

from tests.playground.test_layout import (  # noqa: F401 (app_font: the fixture, autouse)
    _layout_now,
    _settle,
    _window,
    app_font,
)

SCREENS = [(1280, 720, 150), (1440, 900, 100)]


def _cells(win) -> list[QRect]:
    """Every shown heatmap's matrix (all its cells), in the Jacobian pane's pixels."""
    view = win.jacobian
    rows, cols = view.heatmaps.shape
    graphics = view.heatmaps.graphics
    rects = []
    for panel in view.heatmaps.panels:
        vb = panel.plot.vb
        box = vb.mapViewToScene(QRectF(-0.5, -0.5, cols, rows)).boundingRect()
        seen = box.intersected(vb.sceneBoundingRect())  # the part the view shows
        rect = graphics.mapFromScene(seen).boundingRect()
        rects.append(rect.translated(graphics.mapTo(view, QPoint(0, 0))))
    return rects


def _tags(win) -> list[QRect]:
    view = win.jacobian
    graphics = view.heatmaps.graphics
    tags = [i for i in view.marks.diagnosis_items if isinstance(i, pg.TextItem)]
    return [graphics.mapFromScene(t.mapRectToScene(t.boundingRect())).boundingRect()
            .translated(graphics.mapTo(view, QPoint(0, 0))) for t in tags]


def _shrunk(rect: QRect) -> QRect:
    """A rectangle less its one-pixel rim (the rounding of scene to pixels)."""
    return rect.adjusted(1, 1, -1, -1)


@pytest.mark.parametrize(("width", "height", "percent"), SCREENS)
@pytest.mark.parametrize("theme_name", ["light", "high-contrast"])
def test_the_diagnosis_tag_hides_no_cell(qtbot, width, height, percent, theme_name):
    """The "transposed" tag lay over the Difference heatmap's top row (at its block's top
    left, the view clipping it there); it sits above the matrix, in room the views keep
    free, whole inside the view, over its block."""
    win = _window(qtbot, width, height, theme_name, percent, target="linear_bug")
    try:
        view = win.jacobian
        tags = _tags(win)
        assert [t.textItem.toPlainText() for t in view.marks.diagnosis_items
                if isinstance(t, pg.TextItem)] == ["transposed"]
        difference = _cells(win)[2]
        seen = view.heatmaps.panels[2].plot.vb.sceneBoundingRect()
        seen_rect = view.heatmaps.graphics.mapFromScene(seen).boundingRect().translated(
            view.heatmaps.graphics.mapTo(view, QPoint(0, 0)))
        for tag in tags:
            assert not _shrunk(tag).intersects(difference), (tag, difference)
            assert tag.bottom() <= difference.top() + 1 and tag.top() >= seen_rect.top() - 1
            assert seen_rect.left() - 1 <= tag.left() and tag.right() <= seen_rect.right() + 1
        assert view.heatmaps.top_pad > 0
        # the whole matrix still in view: the room is taken above it, not from its rows
        rows, cols = view.heatmaps.shape
        (x0, x1), (y0, y1) = view.heatmaps.view_box.viewRange()
        assert x0 <= -0.5 and x1 >= cols - 0.5 and y0 < -0.5 and y1 >= rows - 0.5
    finally:
        win.session.shutdown(wait=0.5)


def test_no_tag_no_room_above_the_matrix(qtbot):
    """A passing check has no tag, and its matrix keeps all the views' height."""
    win = _window(qtbot, 1280, 720, percent=150, target="killhead")
    try:
        view = win.jacobian
        assert view.shown.report.passed and view.marks.tag_height() == 0
        assert view.heatmaps.top_pad == 0
    finally:
        win.session.shutdown(wait=0.5)


def _heatmaps_now(win) -> list:
    """Where the heatmaps are: the graphics, each matrix' cells, the main area's split."""
    graphics = win.jacobian.heatmaps.graphics
    return [graphics.geometry(), _cells(win), win.main_area.sizes(), _layout_now(win)]


@pytest.mark.parametrize(("width", "height", "percent"), SCREENS)
@pytest.mark.parametrize("theme_name", ["light", "high-contrast"])
def test_the_details_drawer_hides_no_cell(qtbot, width, height, percent, theme_name):
    """Details unfolded lay over the heatmaps (under their titles): in presentation mode at
    150 % it hid Analytic and Numerical whole. It lies above them, under the banner: no
    cell, title or tag under it; the heatmaps keep their least height (on the laptop the
    loss plot gives all the drawer needs: they keep every pixel); folded, they are where
    they were, to the pixel, the main area's split too."""
    present = percent == 150
    win = _window(qtbot, width, height, theme_name, percent, present=present,
                  target="linear_bug")
    try:
        view = win.jacobian
        folded = _heatmaps_now(win)
        view.set_details_shown(True)
        _settle(qtbot, win)
        drawer = view.drawer.geometry()
        assert view.drawer.isVisible() and view.banner.details_label.isVisible()
        assert drawer.top() > view.banner.geometry().bottom()
        graphics = view.heatmaps.graphics
        assert drawer.bottom() < graphics.geometry().top()
        for cell in _cells(win):
            assert not _shrunk(cell).intersects(drawer), (cell, drawer)
        for tag in _tags(win):
            assert not tag.intersects(drawer), (tag, drawer)
        assert graphics.height() >= graphics.minimumHeight() > 0
        rows = view.heatmaps.shape[0]
        assert _cells(win)[0].height() >= 4 * rows  # every row still a few pixels tall
        if not present:  # the loss plot had the room to give (the split is fitted to
            # within 2 px of the pane's ideal height: MainArea.fit)
            assert graphics.width() == folded[0].width()
            assert abs(graphics.height() - folded[0].height()) <= 2
            assert all(abs(c.height() - f.height()) <= 2 for c, f in zip(_cells(win), folded[1]))
        view.set_details_shown(False)
        _settle(qtbot, win)
        assert _heatmaps_now(win) == folded
    finally:
        win.session.shutdown(wait=0.5)
