"""Banners and titles on a projector (1280 x 720, at 100 % and 150 %): an error's banner, the
verdict's line and the code's title take their room from what can give it, never from the
heatmaps, and the layout is the same again once they go. Geometry only (exact under
offscreen Qt: the same fonts, sizes and layouts give the same pixels)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence
from PySide6.QtWidgets import QApplication, QWidget

from customgrad.errors import FunctionError
from playground.main_window import MainWindow
from playground.state.session import Session
from playground.views.code_view import CodeView
from playground.views.jacobian.view import JacobianView
from playground.views.panes import MainArea
from tests.playground.test_layout import (  # noqa: F401 (app_font: the fixture, autouse)
    TIMEOUT,
    _layout_now,
    _press,
    _settle,
    _window,
    app_font,
)

DATA = "tests/data/byof_errors.py"
#: a long message (two lines at 150 %) in a long path, with a traceback, as a user's file has
LONG_PATH = "/home/teacher/courses/autograd/week-07/exercises/solutions/my_linear_function.py"
MESSAGE = ("LinearFunctionBuggy.backward returned a gradient of shape [4x3] for weight, whose "
           "shape is [3x4].")


def _heatmaps(win) -> tuple[int, float, float]:
    """The heatmaps' height on screen: their view, the matrix' box in it, and its width."""
    vb = win.jacobian.heatmaps.view_box
    return win.jacobian.heatmaps.graphics.height(), vb.height(), vb.width()


def _key(qtbot, win, sequence: str) -> None:
    combo = QKeySequence(sequence)[0]
    _press(qtbot, win, combo.key(), combo.keyboardModifiers())
    _settle(qtbot, win)


@pytest.mark.slow
@pytest.mark.parametrize("percent", [100, 150])
def test_an_error_banner_takes_no_height_from_the_heatmaps(qtbot, percent):
    """WrongShape's backward returns a gradient of the wrong shape: the error banner above
    (a long path, a traceback) and the pane's "Jacobian not computed" line. At 1280x720 the
    banner's three lines took the heatmaps' height (at 150 %: 160 px of 236 left them) and its
    path made the window wider than the screen; now the loss plot gives the room, the
    heatmaps keep every pixel with the banner or without it, through F5/Esc, F9, F2 and a
    zoom back and forth, and the layout is the same again once it goes."""
    win = _window(qtbot, 1280, 720, percent=percent)
    try:
        win.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is win)
        start, start_area = _layout_now(win), win.main_area.sizes()
        start_heatmaps = _heatmaps(win)
        with qtbot.waitSignal(win.session.jacobianFailed, timeout=TIMEOUT):
            win.session.set_target(f"{DATA}:WrongShape")
        _settle(qtbot, win)
        assert win.errors.isVisible()
        assert win.width() == 1280
        shown = _heatmaps(win)
        error = FunctionError(MESSAGE, file=LONG_PATH, line=12,
                              details="Traceback (most recent call last):\n" * 8)
        win.session.errorRaised.emit(error)  # a longer one, over it
        _settle(qtbot, win)
        assert win.errors.isVisible() and win.width() == 1280
        assert _heatmaps(win) == shown
        banner = win.errors.height()
        win.errors.dismiss.click()
        _settle(qtbot, win)
        gone, gone_layout, gone_area = _heatmaps(win), _layout_now(win), win.main_area.sizes()
        status = win.status.height()
        assert gone == shown  # the heatmaps were not what gave way
        for keys in (["F5", "Esc"], ["F9", "F9"], ["F2", "F2", "F2"], ["Ctrl+-", "Ctrl+="]):
            area = win.main_area.sizes()
            win.session.errorRaised.emit(error)
            _settle(qtbot, win)
            for sequence in keys:
                _key(qtbot, win, sequence)
            assert win.errors.isVisible() and win.errors.height() == banner, keys
            assert _heatmaps(win) == gone, keys
            win.errors.dismiss.click()
            _settle(qtbot, win)
            # (the pane's height comes back on the area's fitting, turns of the event loop
            # later: a loaded CI read it before; it must still come back exactly)
            qtbot.waitUntil(lambda: win.main_area.sizes()[1] == gone_area[1], timeout=5000)
            assert _layout_now(win) == gone_layout, keys
            assert win.main_area.sizes()[1] == gone_area[1], keys  # the Jacobian pane's
            assert win.main_area.sizes() == area, keys
            assert win.status.height() == status, keys
        with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT):
            win.session.set_target("killhead")  # another Function: the layout it had
        _settle(qtbot, win)
        assert _heatmaps(win) == start_heatmaps
        assert _layout_now(win) == start
        assert win.main_area.sizes()[1] == start_area[1]
    finally:
        win.session.shutdown(wait=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("percent", [100, 150])
def test_the_verdict_keeps_its_line_and_the_heatmaps_their_height(qtbot, percent):
    """linear_bug's verdict ("✘ FAILED: 72 of 384 entries outside tolerance — a transposed
    gradient?") wrapped to three lines at 150 % and took the heatmaps' height (and killhead's
    passing one to two); the line is one line whatever it says, the count is read on it, and
    Details says it whole."""
    win = _window(qtbot, 1280, 720, percent=percent, target="linear_bug")
    try:
        j = win.jacobian
        before, banner = _heatmaps(win), j.banner.height()
        label = j.banner.verdict_label
        assert "— a transposed gradient?" in label.text()
        # the diagnosis read on the line, what a student needs (trial2): the words
        # "entries outside tolerance", then the counts, go first
        assert label.shown_text().startswith("✘ FAILED")
        assert label.shown_text().endswith("— a transposed gradient?")
        report = j.checked
        j.show_failure(f"{MESSAGE}\n{MESSAGE}")  # a check that did not run: a long head
        _settle(qtbot, win)
        assert j.banner.height() == banner
        j.show_report(report)
        _settle(qtbot, win)
        assert _heatmaps(win) == before and j.banner.height() == banner
        j.set_details_shown(True)
        _settle(qtbot, win)
        cut = label.shown_text() != label.text()
        assert j.banner.head_label.isVisible() == cut
        j.set_details_shown(False)  # the drawer above the heatmaps: as they were once it folds
        _settle(qtbot, win)
        assert _heatmaps(win) == before
    finally:
        win.session.shutdown(wait=0.5)


@pytest.mark.slow
def test_the_code_tabs_title_reads_whole_at_150_percent(qtbot):
    """1280x720 at 150 %: the folded Code tab cut "KillHead" to "KillHe…" beside "Note" and
    "Own window"; the buttons are their signs there, and the name is read whole."""
    win = _window(qtbot, 1280, 720, percent=150)
    try:
        code = win.code
        win.side_tabs.setCurrentWidget(code)
        _settle(qtbot, win)
        assert code.folded
        assert code.title_label.shown_text() == "KillHead"
        with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT):
            win.session.set_target("linear_bug")
        _settle(qtbot, win)
        name = code.title_label.name()
        assert code.title_label.shown_text() == name
        assert name == win.session.target.label.split(" (")[0]
    finally:
        win.session.shutdown(wait=0.5)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["killhead", "linear_bug"])
def test_high_contrast_at_150_percent_fits_a_projector(qtbot, target):
    """High contrast pads its buttons: at 150 % the controls' row ("Check Jacobian here")
    and the forms made a 1280 px window 1311 px wide, off the projector's edge. The button
    says "Check Jacobian" where the row is short; the window keeps to the screen. With
    linear_bug's forms (weight, bias: a wider left pane) the step and loss readout's fixed
    width made it 1289 px: the readout is set a little smaller there, read whole."""
    win = _window(qtbot, 1280, 720, theme_name="high-contrast", percent=150, target=target)
    try:
        assert win.minimumSizeHint().width() <= 1280 and win.width() == 1280
        check = win.controls.check
        assert check.text() in ("Check Jacobian here", "Check Jacobian")
        assert check.fontMetrics().horizontalAdvance(check.text()) < check.width()
        controls = win.controls
        for label in (controls.step_label, controls.loss_label):
            assert label.fontMetrics().horizontalAdvance(label.text()) <= label.width()
            assert label.geometry().right() < controls.width()
        # still the large readout: more than the buttons' font, at most its full size
        base = controls.font().pointSizeF()
        assert base < controls.loss_label.font().pointSizeF() <= base * controls.readout_scale
        assert _heatmaps(win)[0] > 0 and win.jacobian.heatmaps.graphics.isVisible()
    finally:
        win.session.shutdown(wait=0.5)


def _ink_height(widget) -> int:
    """How tall what ``widget`` draws inside its frame is, in pixels: the rows (3 px in from
    its edges) holding a pixel far from the inside's most common colour (its background)."""
    image = widget.grab().toImage()
    inside = range(3, image.height() - 3), range(3, image.width() - 3)
    counts: dict[int, int] = {}
    for y in inside[0]:
        for x in inside[1]:
            counts[image.pixel(x, y)] = counts.get(image.pixel(x, y), 0) + 1
    background = QColor(max(counts, key=counts.__getitem__))

    def far(x, y) -> bool:
        c = QColor(image.pixel(x, y))
        return abs(c.red() - background.red()) + abs(c.green() - background.green()) \
            + abs(c.blue() - background.blue()) > 200

    rows = [y for y in inside[0] if any(far(x, y) for x in inside[1])]
    return rows[-1] - rows[0] + 1 if rows else 0


@pytest.mark.slow
@pytest.mark.parametrize("theme_name", ["light", "high-contrast"])
def test_the_details_button_reads_on_a_projector(qtbot, theme_name):
    """Presenting at 1280x720, 150 %: the Details button was the style's arrow alone, a
    speck a few pixels tall beside "2nd". Its mark is as tall as the letters of "2nd",
    the button as tall as "2nd"'s, folded and unfolded; the verdict keeps its words and the
    heatmaps their height."""
    win = _window(qtbot, 1280, 720, theme_name=theme_name, percent=150, present=True,
                  target="linear_bug")
    try:
        banner = win.jacobian.banner
        details, order = banner.details_button, banner.order_button
        assert order.text() == "2nd"
        letters = _ink_height(order)
        shown, heatmaps = banner.verdict_label.shown_text(), _heatmaps(win)
        for unfolded in (False, True, False):
            banner.set_details_shown(unfolded)
            _settle(qtbot, win)
            assert details.height() == order.height()
            assert _ink_height(details) >= 0.8 * letters, (_ink_height(details), letters)
            assert banner.verdict_label.shown_text() == shown
        assert shown == "✘ FAILED: 72 of 384 — a transposed gradient?"
        assert _heatmaps(win) == heatmaps
    finally:
        win.session.shutdown(wait=0.5)


@pytest.mark.slow
def test_the_row_label_follows_the_heatmaps_height_through_a_round_of_themes(qtbot):
    """KillHead at 1280x720, 150 %, an error banner above: the one output's row label
    ("output [3x8]", written upwards) was fitted when the graphics view resized, not when the
    views inside it did; fitted at a passing height, it read "output" with room for the
    whole, and a round of themes (F2) changed which. It is the whole label wherever that
    fits the views' height, before, during and after the round."""
    from PySide6.QtGui import QFontMetrics

    from playground.views.fonts import scaled
    from playground.views.jacobian.geometry import block_label

    win = _window(qtbot, 1280, 720, percent=150)
    try:
        win.session.errorRaised.emit(FunctionError(MESSAGE, file=LONG_PATH, line=3,
                                                   details="Traceback ...\n" * 5))
        _settle(qtbot, win)
        heatmaps = win.jacobian.heatmaps
        whole = block_label(heatmaps.outputs[0])
        seen = []
        for name in (None, "dark", "high-contrast", "light"):
            if name is not None:
                win.preferences.set_theme(name, remember=False)
                _settle(qtbot, win)
            metrics = QFontMetrics(scaled(win.jacobian.font(), 1.0))
            room = heatmaps.view_box.height()
            shown = heatmaps.row_axis.label.toPlainText().strip()
            fits = metrics.horizontalAdvance(whole) <= room
            assert (shown == whole) == fits, (name, shown, room)
            # and drawn along the views, centred on them: not past their top
            label, axis = heatmaps.row_axis.label, heatmaps.row_axis
            drawn = label.mapRectToScene(label.boundingRect())
            along = axis.mapRectToScene(axis.boundingRect())
            assert along.top() - 1 <= drawn.top() and drawn.bottom() <= along.bottom() + 1, \
                (name, drawn, along)
            assert abs(drawn.center().y() - along.center().y()) <= 2, (name, drawn, along)
            seen.append((shown, room))
        assert seen[-1] == seen[0] and seen[0][0] == whole
    finally:
        win.session.shutdown(wait=0.5)


@pytest.mark.slow
def test_a_zoom_in_and_out_gives_the_window_its_size_back(qtbot):
    """1280x720 at 150 %: 175 % needs a wider window, and Qt grows it (1435 px); back at
    150 % the window stayed 1435 px wide, off the projector's edge, and the normal layout
    did not come back. It is 1280x720 again, with the layout it had."""
    win = _window(qtbot, 1280, 720, percent=150, target="linear_bug")
    try:
        before, area = _layout_now(win), win.main_area.sizes()
        heatmaps = _heatmaps(win)
        win.preferences.zoom_by(1)
        _settle(qtbot, win)
        assert win.preferences.zoom == 175 and win.width() > 1280
        win.preferences.zoom_by(-1)
        _settle(qtbot, win)
        assert (win.width(), win.height()) == (1280, 720)
        assert _layout_now(win) == before and win.main_area.sizes() == area
        assert _heatmaps(win) == heatmaps
    finally:
        win.session.shutdown(wait=0.5)


@pytest.mark.slow
def test_a_zoom_set_before_the_window_shows_does_not_keep_it_wide_after_a_zoom_back(qtbot):
    """``autograd-playground --zoom 150`` (or the remembered zoom) is set before the window
    shows: its size then, Qt's 640x480 before any, was kept as the size to give back, which
    no zoom ever fits in. From there, 175 % grew the window (1357 px on a 1280x720 screen)
    and 150 %, 125 %, even 100 % left it that wide, its right edge off the projector."""
    win = MainWindow(Session(), restore_prefs=False, restore_session=False)
    qtbot.addWidget(win)
    try:
        win.preferences.set_zoom(150, remember=False)  # as the start does, before show
        win.resize(1280, 720)
        with qtbot.waitExposed(win):
            win.show()
        with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT):
            win.session.set_target("linear_bug")
        _settle(qtbot, win)
        assert (win.width(), win.height()) == (1280, 720)
        win.preferences.zoom_by(1)
        _settle(qtbot, win)
        assert win.preferences.zoom == 175 and win.width() > 1280
        win.preferences.zoom_by(-1)
        _settle(qtbot, win)
        assert (win.preferences.zoom, win.width(), win.height()) == (150, 1280, 720)
    finally:
        win.session.shutdown(wait=0.5)


# ---- the parts, without a window -------------------------------------------------------------

def _font(points: float) -> QFont:
    font = QFont(QApplication.instance().font())
    font.setPointSizeF(points)
    return font


class _Pane(QWidget):
    """A Jacobian pane as the main area sees it: an ideal height, and its signal."""

    idealHeightChanged = Signal()
    ideal = 300

    def ideal_height(self) -> int:
        return self.ideal


def test_the_heatmaps_pane_goes_back_to_its_height_after_a_drift(qtbot):
    """A round of themes (F2 three times) at 150 % left the heatmaps 1 px short now and
    then (338 -> 337 px, the loss plot 1 px taller): a theme's passes changed the area's
    height for a moment, the splitter shared it, and the fit left a pane within 2 px of its
    height where it was. The height fitted last comes back exactly; an ideal height that
    moves a pixel as the views take their height is still left alone (no back and forth)."""
    upper, pane = QWidget(), _Pane()
    area = MainArea(upper, pane)
    qtbot.addWidget(area)
    area.resize(600, 500)
    with qtbot.waitExposed(area):
        area.show()
    area.fit()
    total = sum(area.sizes())
    assert area.sizes() == [total - 300, 300]
    area.setSizes([total - 299, 299])  # the splitter shared a passing change of height
    area.fit()
    assert area.sizes() == [total - 300, 300]
    pane.ideal = 301  # a pixel more as the views took their height: left as it is
    area.fit()
    assert area.sizes() == [total - 300, 300]
    pane.ideal = 320  # a new ideal height (another zoom, a new matrix): taken
    area.fit()
    assert area.sizes() == [total - 320, 320]


@pytest.mark.parametrize("width", [1000, 620, 400])
def test_a_verdict_too_long_for_its_line_is_set_smaller_then_cut_at_a_word(qtbot, width):
    """The verdict's line as at 150 % (16.5 pt): a long verdict drops its diagnosis, then
    whole words, and is drawn no smaller than 3/4 of its size; the banner is as tall with
    any verdict, and the drawer says the whole verdict while the line shows less."""
    view = JacobianView()
    qtbot.addWidget(view)
    view.apply_font(_font(16.5))
    view.resize(width, 500)
    view.show()
    qtbot.waitExposed(view)
    banner, label = view.banner, view.banner.verdict_label
    heights = set()
    for text in ("✔ PASSED", "✘ FAILED: 72 of 384 entries outside tolerance — a transposed "
                 "gradient?", "Jacobian not computed: " + "x" * 80):
        banner.set_text("failed", text)
        QApplication.processEvents()
        heights.add(banner.height())
        shown, font = label.shown()
        assert font.pointSizeF() >= 0.75 * label.font().pointSizeF() - 1e-9
        assert label.fontMetrics().lineSpacing() <= label.height()
        compact = ("✘ FAILED: 72 of 384 — a transposed gradient?",
                   "✘ FAILED — a transposed gradient?")
        assert shown == text or shown.endswith("…") or shown in compact
        assert (not banner.head_label.isHidden()) == (shown != text)
        if shown != text and "FAILED" in text and width >= 1000:
            # the counts and the diagnosis, without "entries outside tolerance" (trial2:
            # the diagnosis, what a student needs, was what went)
            assert shown == compact[0]
        elif shown != text and "FAILED" in text and shown not in compact:
            assert shown.startswith("✘ FAILED: 72 of")
            assert not shown.endswith(("outsi…", "toleranc…"))  # whole words
    assert len(heights) == 1


def test_a_folded_code_title_keeps_the_functions_name(qtbot):
    """The Code tab at 1280x720, 150 % (about 370 x 190 px, 16.5 pt): the file's name goes,
    then the buttons' words; the Function's name stays whole."""
    view = CodeView()
    qtbot.addWidget(view)
    view.apply_font(_font(16.5))
    view.resize(370, 190)
    view.show()
    qtbot.waitExposed(view)
    for title, name in (("KillHead", "KillHead"),
                        ("LinearFunctionBuggy (my_linear_function.py)", "LinearFunctionBuggy")):
        view.set_function(title, "x = 1\n" * 20, "A note.", LONG_PATH, 3)
        QApplication.processEvents()
        assert view.folded
        assert view.title_label.shown_text() == name
        assert view.title_label.toolTip() == title
    view.resize(900, 190)  # room: the words come back
    QApplication.processEvents()
    assert view.note_button.text() == "Note" and view.window_button.text() == "Own window"
    assert view.title_label.shown_text() == "LinearFunctionBuggy (my_linear_function.py)"
    assert Qt.ToolButtonStyle.ToolButtonTextBesideIcon == view.note_button.toolButtonStyle()


@pytest.mark.slow
@pytest.mark.parametrize("percent", [100, 150])
def test_a_diagnosis_tag_is_read_whole_inside_its_heatmap(qtbot, percent):
    """linear_bug's "transposed" tag, at the weight block's top left, ran past the
    Difference heatmap's right edge at 1280x720, 150 % and read "transpos"; it is moved left
    into the view, whole."""
    import pyqtgraph as pg

    win = _window(qtbot, 1280, 720, percent=percent, target="linear_bug")
    try:
        marks = win.jacobian.marks
        tags = [i for i in marks.diagnosis_items if isinstance(i, pg.TextItem)]
        assert [t.textItem.toPlainText() for t in tags] == ["transposed"]
        seen = win.jacobian.heatmaps.panels[2].plot.vb.sceneBoundingRect()
        for tag in tags:
            rect = tag.mapRectToScene(tag.boundingRect())
            assert seen.left() - 1 <= rect.left() and rect.right() <= seen.right() + 1, \
                (rect, seen)
    finally:
        win.session.shutdown(wait=0.5)


def test_a_legend_wider_than_the_loss_plot_is_hidden_till_there_is_room(qtbot):
    """The loss plot at 1280x720, 150 % (about 350 x 150 px, 16.5 pt): the legend "run 1:
    seed 0, lr 1, sgd" was wider than the plot, its left cut off ("un 1: …"), over the
    curve; it is hidden there, and back where it fits."""
    import numpy as np

    from playground.views.loss_plot import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.apply_font(_font(16.5))
    plot.start_run("run 1: seed 0, lr 1, sgd")
    plot.append(np.arange(5), np.linspace(1.0, 0.5, 5))
    plot.flush()
    for width, shown in ((350, False), (900, True), (350, False)):
        plot.resize(width, 300)
        plot.show()
        qtbot.waitExposed(plot)
        qtbot.wait(20)
        vb = plot.plot_item.vb
        assert plot.legend.isVisible() == shown, width
        assert (plot.legend.width() <= vb.width()) == shown, width


def test_a_verdict_cut_at_a_word_only_where_that_keeps_most_of_it(qtbot):
    """"Jacobian not computed: BackwardRaises.backward raised ValueError" at 150 %: cut at
    whole words it read "Jacobian not computed: …" (what raised gone); it keeps the letters
    that fit instead."""
    view = JacobianView()
    qtbot.addWidget(view)
    view.apply_font(_font(16.5))
    view.resize(740, 400)
    with qtbot.waitExposed(view):
        view.show()
    view.show_failure("BackwardRaises.backward raised ValueError: backward is broken")
    QApplication.processEvents()
    shown = view.banner.verdict_label.shown_text()
    assert shown.startswith("Jacobian not computed: BackwardRaises"), shown


@pytest.mark.slow
def test_a_hidden_notice_takes_no_height_from_the_window(qtbot):
    """Qt's status bar sizes itself by every widget in it, hidden or not: the restore offer,
    hidden, whose buttons a change of theme had polished taller, left the bar 7 px taller
    after a round of themes. Hidden, the notices take nothing; shown, what they need."""
    win = _window(qtbot, 1280, 720, percent=150)
    try:
        bar = win.status.height()
        for theme in ("dark", "high-contrast", "light"):
            win.preferences.set_theme(theme, remember=False)
            _settle(qtbot, win)
        assert win.status.height() == bar
        win.isolation_off.show_reason("the loop runs on a thread of the window")
        _settle(qtbot, win)
        assert win.status.height() >= win.isolation_off.minimumSizeHint().height() > 0
        win.isolation_off.show_reason("")
        _settle(qtbot, win)
        assert win.status.height() == bar
    finally:
        win.session.shutdown(wait=0.5)
