"""What a plot builds that its first paint does not show, built when first used
(``pyqtgraph_compat.deferred_plot_forms``, ``unchanged_axis_labels_kept``): the "Plot Options"
form and menu work as pyqtgraph's own, the window's heatmaps never build theirs, an axis label
is re-typeset only when its text changes, and other pyqtgraph versions are left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyqtgraph as pg
import pytest

from playground.views import pyqtgraph_compat as compat

ROOT = Path(__file__).resolve().parents[2]
FORM = "ctrl"  # the form's widgets, in the plot's __dict__ once built

pytestmark = pytest.mark.skipif(not compat._form_checked(None),
                                reason="the deferred form follows pyqtgraph 0.14's constructor")


@pytest.fixture(autouse=True)
def _patched():
    assert compat.deferred_plot_forms() and compat.deferred_view_menus()
    assert compat.unchanged_axis_labels_kept()


def _menu_built(view_box) -> bool:
    return view_box.__dict__.get("_menu") not in (compat.DEFERRED_MENU, None)


def test_a_plot_is_built_without_its_form(qtbot):
    plot = pg.PlotItem()
    assert FORM not in plot.__dict__ and "ctrlMenu" not in plot.__dict__
    plot.addItem(pg.ImageItem(np.zeros((4, 4))))  # an image, a curve: nothing asks for it
    plot.addItem(pg.PlotCurveItem([0.0, 1.0], [1.0, 2.0]))
    plot.setTitle("a title")
    plot.setLabel("bottom", "step")
    assert FORM not in plot.__dict__


def test_the_right_click_menu_builds_the_form_with_its_submenus(qtbot):
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    plot = widget.getPlotItem()
    assert FORM not in plot.__dict__
    menu = plot.vb.getMenu(None)
    event = SimpleNamespace(acceptedItem=plot.vb)  # what the scene reads of a right click
    widget.scene().addParentContextMenus(plot.vb, menu, event)  # what a right click does
    texts = [a.text() for a in menu.actions()]
    assert "Plot Options" in texts and "Export..." in texts
    (options,) = [a for a in menu.actions() if a.text() == "Plot Options"]
    assert [a.text() for a in options.menu().actions()] == [
        "Transforms", "Downsample", "Average", "Alpha", "Grid", "Points"]
    assert FORM in plot.__dict__
    grid = options.menu().actions()[4].menu().actions()[0].defaultWidget()
    assert grid is plot.ctrl.gridGroup


def test_the_form_sets_the_plot_and_the_plot_sets_the_form(qtbot):
    plot = pg.PlotItem()
    curve = plot.plot([1.0, 10.0, 100.0])  # a data item: addItem reads the form
    assert FORM in plot.__dict__
    plot.ctrl.logYCheck.setChecked(True)  # the menu's check box
    assert curve.opts["logMode"] == [False, True] and plot.getAxis("left").logMode
    plot.setLogMode(y=False)  # the method
    assert not plot.ctrl.logYCheck.isChecked() and not plot.getAxis("left").logMode
    other = pg.PlotItem()
    other.showGrid(x=True, alpha=0.5)  # a setter on a plot without its form builds it
    assert other.ctrl.xGridCheck.isChecked() and other.getAxis("bottom").grid == 127


def test_the_form_built_late_holds_what_pyqtgraphs_own_holds(qtbot):
    """The state (every option of the form, the view's state) of a plot whose form is built
    on use, against pyqtgraph's own constructor in a process without the patch."""
    own, ours = (_run(SAVED_STATE, way) for way in ("own", "ours"))
    assert own["deferred"] is False and ours["deferred"] is True
    assert own["state"] == ours["state"]
    assert own["menus"] == ours["menus"]
    assert own["curve"] == ours["curve"] and own["grid"] == ours["grid"] == 100


#: builds a plot as the loss plot does and prints its saved state and its menus
SAVED_STATE = """
import json, sys
from PySide6.QtWidgets import QApplication
from playground.views import pyqtgraph_compat as compat
import numpy as np
import pyqtgraph as pg
app = QApplication([])

def go():
    plot = pg.PlotItem()
    deferred = "ctrl" not in plot.__dict__
    plot.showGrid(x=True, y=True, alpha=0.25)
    plot.setClipToView(True)
    plot.setDownsampling(auto=True, mode="peak")
    plot.plot(np.sin(np.arange(64.0)) + 2.0)
    c, curve = plot.ctrl, plot.listDataItems()[0]
    keys = ("logMode", "fftMode", "subtractMeanMode", "derivativeMode", "phasemapMode",
            "alphaHint", "alphaMode", "downsample", "autoDownsample", "downsampleMethod")
    seen = []  # the curve after each of the form's options, set as a user sets it in the menu
    for box in (c.logXCheck, c.fftCheck, c.subtractMeanCheck, c.derivativeCheck,
                c.phasemapCheck, c.meanRadio, c.autoDownsampleCheck, c.alphaGroup,
                c.autoAlphaCheck, c.maxTracesCheck, c.forgetTracesCheck):
        box.setChecked(not box.isChecked())
        seen.append(repr([curve.opts[k] for k in keys]))
        box.setChecked(not box.isChecked())
    c.alphaGroup.setChecked(True)
    c.autoAlphaCheck.setChecked(False)
    c.alphaSlider.setValue(500)
    c.gridAlphaSlider.setValue(100)
    c.downsampleSpin.setValue(3)
    seen.append(repr([curve.opts[k] for k in keys]))
    state = plot.saveState()
    menus = [a.text() for a in plot.ctrlMenu.actions()]
    print(json.dumps({"deferred": deferred, "state": repr(sorted(state.items())),
                      "menus": menus, "curve": seen,
                      "grid": plot.getAxis("bottom").grid}))

compat.deferred_plot_forms("0.15.0" if sys.argv[1] == "own" else None)  # own: left alone
go()
"""


def _run(script: str, way: str) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, "-c", script, way],
                         capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_plot_closed_before_its_form_was_built(qtbot):
    widget = pg.PlotWidget()
    plot = widget.getPlotItem()
    plot.close()
    assert plot.ctrlMenu is None and FORM not in plot.__dict__
    widget.close()


def test_a_view_box_builds_its_menu_when_asked_for(qtbot):
    view = pg.ViewBox()
    assert not _menu_built(view)
    menu = view.getMenu(None)  # a right click
    assert _menu_built(view) and view.menu is menu
    assert [a.text() for a in menu.actions()][:1] == ["View All"]
    assert view.getContextMenus(None) == menu.actions()


def test_a_view_box_menu_built_late_lists_the_named_views(qtbot):
    first, second = pg.ViewBox(name="first view"), pg.ViewBox(name="second view")
    assert not _menu_built(first) and not _menu_built(second)
    combo = second.menu.ctrl[0].linkCombo  # built now: the views named so far
    assert [combo.itemText(i) for i in range(combo.count())] == ["", "first view"]
    third = pg.ViewBox(name="third view")
    assert [combo.itemText(i) for i in range(combo.count())] == ["", "first view", "third view"]
    assert not _menu_built(first) and not _menu_built(third)
    second.menu.ctrl[0].linkCombo.setCurrentIndex(1)  # its form links the views, as before
    assert second.linkedView(0) is first


def test_a_view_box_menu_turned_off_first_is_never_built(qtbot):
    plot = pg.PlotItem()
    plot.setMenuEnabled(False)
    assert plot.vb.menu is None and plot.vb.getMenu(None) is None
    plot.setMenuEnabled(True)  # turned on again: built when asked for
    assert not _menu_built(plot.vb)
    assert plot.vb.getMenu(None) is not None
    plot.setMenuEnabled(False)  # turned off once built: dropped
    assert plot.vb.menu is None
    assert pg.PlotItem(enableMenu=False).vb.menu is None


def test_on_other_versions_the_form_is_left_to_pyqtgraph():
    assert compat.deferred_plot_forms("0.15.0") is False
    assert compat.deferred_view_menus("0.15.0") is False
    assert compat.deferred_plot_forms("0.13.7") is False  # checked, but its constructor differs
    assert compat.unchanged_axis_labels_kept("0.15.0") is False
    assert compat.deferred_plot_forms("0.14.0") is True


def test_the_windows_heatmaps_build_no_menus_and_the_loss_plot_its_own(window):
    maps = window.jacobian.heatmaps
    for plot in (*(p.plot for p in maps.panels), maps.rows_plot, maps.colorbar,
                 maps.difference_colorbar):
        assert FORM not in plot.__dict__, plot
        assert not _menu_built(plot.vb)
    loss = window.loss_plot.plot_item
    assert FORM in loss.__dict__  # its options are set as it is built
    assert not _menu_built(loss.vb)  # its export actions wait for it (compat.when_menu_built)


def test_the_loss_plots_menu_is_built_at_a_right_click_with_its_export_actions(window):
    """The loss plot's right-click menu (its view box's, about 50 widgets with its axis forms)
    is built at the first right click, not with the window: the export actions the classroom
    adds to it are added then, once, after pyqtgraph's own."""
    view = window.loss_plot.plot_item.vb
    assert not _menu_built(view)
    menu = view.getMenu(None)  # what a right click asks for
    texts = [a.text() for a in menu.actions()]
    assert texts[0] == "View All"
    assert texts[-3:] == ["Loss plot as PNG…", "Loss plot as SVG…", "Loss history as CSV…"]
    assert view.getMenu(None) is menu and [a.text() for a in menu.actions()] == texts


def test_what_is_added_to_a_menu_waits_for_it_or_goes_in_at_once(qtbot):
    added: list[object] = []
    waiting = pg.ViewBox()
    compat.when_menu_built(waiting, added.append)
    assert added == [] and not _menu_built(waiting)
    assert added == [waiting.menu]  # built: added to it, once
    assert waiting.menu is added[0] and len(added) == 1
    built = pg.ViewBox()
    menu = built.getMenu(None)
    compat.when_menu_built(built, added.append)  # built already: at once
    assert added[1:] == [menu]
    off = pg.ViewBox(enableMenu=False)
    compat.when_menu_built(off, added.append)  # no menu: never
    assert off.menu is None and len(added) == 2


def test_an_axis_label_is_typeset_again_only_when_it_changes(qtbot):
    plot = pg.PlotItem()
    axis = plot.getAxis("left")
    plot.setLabel("left", "loss")
    axis.setPen("k")  # the label takes the pen's colour: new HTML
    typeset: list[str] = []
    set_html = axis.label.setHtml
    axis.label.setHtml = lambda html: (typeset.append(html), set_html(html))
    for high in (1.0, 2.0, 5.0):
        plot.setYRange(0.0, high)
        axis.setPen("k")  # the same colour: the same HTML
    assert typeset == []
    assert axis.label.toPlainText() == "loss "
    plot.setLabel("left", "loss", units="m")
    assert len(typeset) == 1 and axis.label.toPlainText().startswith("loss (")
    axis.setTextPen("r")  # the colour is in the HTML: typeset again
    assert len(typeset) == 2 and "color" in typeset[-1]


def test_a_hidden_axis_label_is_typeset_as_it_is_shown_and_placed_for_its_text(qtbot):
    """A hidden label (most axes': no text) is not typeset at each change of pen, range or
    text while hidden; shown, it has the HTML and the place an axis typeset all along gives
    it (the same as pyqtgraph's own, in a fresh plot that sets the same)."""
    widget = pg.PlotWidget()
    qtbot.addWidget(widget)
    widget.resize(300, 300)
    widget.show()
    plot = widget.getPlotItem()
    axis = plot.getAxis("bottom")
    assert not axis.label.isVisibleTo(axis)
    typeset: list[str] = []
    set_html = axis.label.setHtml
    axis.label.setHtml = lambda html: (typeset.append(html), set_html(html))
    for colour in ("r", "g", "b"):
        axis.setPen(colour)
        axis.setTextPen(colour)
        plot.setXRange(0.0, 10.0 * len(typeset) + 1)
    axis.labelText = "a long label that was set while hidden"  # as setLabel sets it, unshown
    axis._updateLabel()
    assert typeset == []  # hidden all along: never typeset
    axis.showLabel(True)
    assert typeset == [axis.labelString()]  # once, as shown, with what it has now
    assert "a long label" in axis.label.toPlainText() and "#0000ff" in typeset[0]
    placed = axis.label.pos()
    axis.resizeEvent(None)  # where pyqtgraph places it for this text
    assert axis.label.pos() == placed
    axis.showLabel(True)  # shown already, the same HTML: not typeset again
    axis.setPen("b")
    assert len(typeset) == 1
    axis.showLabel(False)
    axis.setTextPen("r")
    assert len(typeset) == 1  # hidden again: waits
    axis.showLabel(True)
    assert len(typeset) == 2 and "#ff0000" in typeset[-1]
