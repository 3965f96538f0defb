"""Tests of the code view: highlighted source, real line numbers, error line (offscreen Qt)."""

import pytest
from PySide6.QtGui import QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import QApplication

from playground.views.code_view import CodeView

SOURCE = '''class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output
'''


@pytest.fixture
def view(qtbot):
    # at the 100 % font without a style sheet, whatever a test before left on the application
    # (a zoom, a boost, high contrast's sheet: conftest.py puts them back): the line counts
    # below are read at that size
    w = CodeView()
    qtbot.addWidget(w)
    w.resize(900, 500)
    return w


def test_set_function_shows_title_note_file_and_source(view):
    view.set_function("Square", SOURCE, "x² has gradient <b>2x</b>.", "/tmp/sq.py", 40)
    assert view.editor.toPlainText() == SOURCE.rstrip("\n")
    assert view.source() == SOURCE.rstrip("\n")
    assert view.title_label.text() == "Square"
    assert view.note_label.text() == "x² has gradient <b>2x</b>."
    assert "sq.py" in view.file_label.text()
    assert "40" in view.file_label.text()
    assert view.file_label.isVisibleTo(view)
    assert view.editor.isReadOnly()


def test_without_a_file_the_file_label_is_hidden(view):
    view.set_function("Square", SOURCE, "note", "/tmp/sq.py", 3)
    view.set_function("Square", SOURCE, "note")
    assert not view.file_label.isVisibleTo(view)
    assert view.file is None
    assert view.first_line == 1


def test_highlighter_formats_the_python_source(view):
    view.set_function("Square", SOURCE, "")
    highlighter = view.editor.highlighter
    assert highlighter.document() is view.editor.document()
    first = view.editor.document().firstBlock()  # "class Square(Function):"
    formats = first.layout().formats()
    assert formats, "no syntax formats applied"
    keyword = next(f for f in formats if f.start == 0)  # "class"
    assert keyword.format.foreground().color().name() != "#000000"


def _keyword_colour(view):
    formats = view.editor.document().firstBlock().layout().formats()
    starts = [f for f in formats if f.start == 0]
    return starts[0].format.foreground().color().name() if starts else None


def test_the_code_is_coloured_right_after_the_first_paint(view, qtbot):
    """The lexer is built after the window's first paint (it takes a tenth of a second),
    in the style chosen meanwhile."""
    view.set_function("Square", SOURCE, "")
    assert view.editor._highlighter is None  # nothing built before anything is painted
    view.editor.set_style("monokai")
    view.show()
    qtbot.waitUntil(lambda: _keyword_colour(view) is not None, timeout=3000)
    dark = _keyword_colour(view)
    assert view.editor.palette().color(QPalette.ColorRole.Base).lightnessF() < 0.5
    view.editor.set_style("default")
    assert _keyword_colour(view) not in (None, dark)


def test_line_numbers_start_at_first_line(view):
    view.set_function("Square", SOURCE, "", "/tmp/sq.py", 120)
    assert view.line_number_text(0) == "120"
    assert view.line_number_text(2) == "122"
    narrow = view.editor.line_number_area_width()
    view.set_function("Square", SOURCE, "", "/tmp/sq.py", 99_990)
    assert view.line_number_text(9) == "99999"
    assert view.editor.line_number_area_width() > narrow
    assert view.editor.viewportMargins().left() == view.editor.line_number_area_width()


def test_highlight_line_marks_the_right_block(view):
    first = 57
    view.set_function("Square", SOURCE, "", "/tmp/sq.py", first)
    assert view.highlight_line(first + 2)
    selections = view.editor.extraSelections()
    assert len(selections) == 1
    assert selections[0].cursor.blockNumber() == 2
    assert selections[0].cursor.block().text() == "    def forward(ctx, x):"
    assert view.highlighted_line == first + 2
    assert view.editor.textCursor().blockNumber() == 2  # scrolled there

    view.clear_highlight()
    assert view.editor.extraSelections() == []
    assert view.highlighted_line is None


def test_highlight_line_outside_the_source_marks_nothing(view):
    view.set_function("Square", SOURCE, "", "/tmp/sq.py", 10)
    view.highlight_line(12)
    assert not view.highlight_line(9)
    assert not view.highlight_line(10 + 100)
    assert view.editor.extraSelections() == []


def test_new_function_clears_the_mark(view):
    view.set_function("Square", SOURCE, "", "/tmp/sq.py", 10)
    view.highlight_line(11)
    view.set_function("Square", SOURCE, "", "/tmp/sq.py", 10)
    assert view.editor.extraSelections() == []


def test_apply_font_scales_code_and_labels(view):
    view.set_function("Square", SOURCE, "note", "/tmp/sq.py", 1)
    font = QFont(view.font())
    font.setPointSizeF(19)
    view.apply_font(font)
    code = view.editor.font()
    assert code.pointSizeF() == pytest.approx(19)
    # a fixed-pitch font is asked for (what fontconfig answers differs between machines)
    assert code.family() == QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
    assert code.fixedPitch()
    assert code.styleHint() == QFont.StyleHint.Monospace
    assert view.note_label.font().pointSizeF() == pytest.approx(19)
    assert view.title_label.font().pointSizeF() > 19
    assert view.title_label.font().bold()
    assert view.file_label.font().pointSizeF() < 19


def test_set_style_switches_to_a_dark_theme(view):
    view.set_function("Square", SOURCE, "")
    light = view.editor.palette().color(QPalette.ColorRole.Base)
    view.set_style("monokai")
    dark = view.editor.palette().color(QPalette.ColorRole.Base)
    assert light.lightnessF() > 0.5 > dark.lightnessF()
    assert view.editor.palette().color(QPalette.ColorRole.Text).lightnessF() > 0.5
    assert view.editor.style_name == "monokai"
    with pytest.raises(Exception, match="nosuchstyle"):
        view.set_style("nosuchstyle")


def test_real_gallery_source(view):
    from customgrad.targets import catalog

    entry = catalog.get("killhead")
    file, first = entry.location
    view.set_function(entry.title, entry.source, entry.note, file, first)
    assert view.line_number_text(0) == str(first)
    assert view.editor.document().firstBlock().text().startswith("class KillHead")
    # The line "return result" of forward, by its real line number.
    lines = entry.source.splitlines()
    index = lines.index("        return result")
    assert view.highlight_line(first + index)
    assert view.editor.extraSelections()[0].cursor.block().text() == "        return result"
    view.grab()


def whole_lines(editor) -> int:
    """How many lines of the code the editor shows whole, from its first visible one."""
    offset, height = editor.contentOffset(), editor.viewport().height()
    block, count = editor.firstVisibleBlock(), 0
    while block.isValid() and editor.blockBoundingGeometry(block).translated(offset).bottom() \
            <= height:
        count, block = count + 1, block.next()
    return count


LONG = "\n".join(f"x{i} = {i}" for i in range(40))
NOTE = "Zeroes the first n columns. n is a <b>plain int</b>, stored on ctx; " * 3


def test_a_short_pane_folds_the_title_note_and_path_into_one_line(view, qtbot):
    """A 1280x720 window's code tab (about 430 x 195 pixels): the title, the note and the
    path took all but two lines; folded into one line, the code gets eight, and the note and
    path are one click (or a hover) away."""
    view.set_function("KillHead", LONG, NOTE, "/tmp/seeds.py", 19)
    view.show()
    view.resize(430, 195)
    qtbot.waitUntil(lambda: view.folded)
    # laid out again once folded (on a loaded machine, later than a fixed wait)
    qtbot.waitUntil(lambda: whole_lines(view.editor) >= 8)
    assert not view.note_scroll.isVisibleTo(view) and not view.file_label.isVisibleTo(view)
    assert view.note_button.isVisibleTo(view) and view.window_button.isVisibleTo(view)
    tip = view.note_button.toolTip()
    assert "n is a plain int, stored on ctx" in tip and "<b>" not in tip  # the note, whole
    assert "seeds.py, line 19" in tip
    view.note_button.click()  # the note and path above the code, for a moment
    assert view.note_scroll.isVisibleTo(view) and view.file_label.isVisibleTo(view)
    view.note_button.click()
    assert not view.note_scroll.isVisibleTo(view)

    view.resize(900, 500)  # room: title, note and path on lines of their own
    qtbot.waitUntil(lambda: not view.folded)
    qtbot.wait(50)
    assert view.note_scroll.isVisibleTo(view) and view.file_label.isVisibleTo(view)
    assert not view.note_button.isVisibleTo(view)
    assert whole_lines(view.editor) >= 6
    assert view.title_label.font().pointSizeF() > view.font().pointSizeF()


def test_held_highlighting_waits_for_its_release_then_colours(qtbot):
    """Held (the app: superqt and the lexer are imported off the GUI thread meanwhile), an
    editor's first paint makes no highlighter; released, each editor that painted makes its
    own, and editors made after colour from their first paint as before."""

    from playground.views import code_editor

    code_editor.hold_highlighting()
    try:
        views = [CodeView(), CodeView()]
        for view in views:
            qtbot.addWidget(view)
            view.set_function("Square", SOURCE, "", "/tmp/sq.py", 1)
            view.show()
            qtbot.waitExposed(view)
            view.editor.viewport().repaint()
        QApplication.processEvents()
        assert code_editor.highlighting_held()
        assert [v.editor._highlighter for v in views] == [None, None]
        code_editor.prepare_highlighting()  # what the app's helper thread runs
    finally:
        code_editor.release_highlighting()
    assert not code_editor.highlighting_held()
    qtbot.waitUntil(lambda: all(v.editor._highlighter is not None for v in views))
    later = CodeView()
    qtbot.addWidget(later)
    later.show()
    qtbot.waitExposed(later)
    qtbot.waitUntil(lambda: later.editor._highlighter is not None)


def test_an_editor_gone_before_the_release_is_skipped(qtbot):
    """An editor deleted while held is not called on the release (its connection went with
    it): the release raises nothing and the other editors still colour."""
    from PySide6.QtCore import QEvent

    from playground.views import code_editor

    code_editor.hold_highlighting()
    try:
        gone, kept = CodeView(), CodeView()
        qtbot.addWidget(kept)
        for view in (gone, kept):
            view.show()
            qtbot.waitExposed(view)
            view.editor.viewport().repaint()
        QApplication.processEvents()
        assert gone.editor._highlight_soon and kept.editor._highlight_soon
        gone.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    finally:
        code_editor.release_highlighting()
    qtbot.waitUntil(lambda: kept.editor._highlighter is not None)


def _mark_in_view(view) -> bool:
    editor = view.editor
    block = editor.document().findBlockByNumber(editor.highlighted_block)
    top = editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top()
    return 0 <= top and top + editor.blockBoundingRect(block).height() \
        <= editor.viewport().height()


def test_the_marked_line_stays_in_view_when_the_pane_shrinks(view, qtbot):
    """An error's banner takes its row after the line was marked (and a file opened with its
    error at start was marked before the window had its size): the marked line was below the
    code's last visible one, and the student did not see it."""
    source = "\n".join(f"x{n} = {n}" for n in range(1, 61))
    view.set_function("Long", source, "", "/tmp/long.py", 1)
    view.resize(500, 700)
    view.show()
    qtbot.waitExposed(view)
    assert view.highlight_line(45)
    assert _mark_in_view(view)
    view.resize(500, 160)
    qtbot.waitUntil(lambda: _mark_in_view(view), timeout=2000)
    assert view.highlighted_line == 45


def test_shows_knows_the_file_however_its_path_is_spelled(view, tmp_path, monkeypatch):
    path = tmp_path / "sq.py"
    path.write_text(SOURCE)
    view.set_function("Square", SOURCE, "", str(path), 1)
    monkeypatch.chdir(tmp_path)
    assert view.shows("sq.py") and view.shows(str(tmp_path / "." / "sq.py"))
    assert not view.shows(str(tmp_path / "other.py")) and not view.shows(None)
