"""The app's picker names the gallery's groups as the CLI's list does (one name per thing)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from customgrad.targets import catalog
from playground.views.picker import FunctionPicker


def test_picker_headings_are_the_catalog_titles(qtbot):
    picker = FunctionPicker()
    qtbot.addWidget(picker)
    groups = [picker.tree.topLevelItem(i) for i in range(picker.tree.topLevelItemCount())]
    headings = [g.text(0) for g in groups if not g.isHidden()]  # "This file": a file's
    assert headings == [catalog.CATEGORY_TITLES[c] for c in catalog.CATEGORIES]
    assert headings[0] == "From the lessons"
    first = picker.tree.topLevelItem(1).child(0)
    assert first.text(0) == catalog.entries()[0].title  # entries by their display title too


def _shown_names(picker) -> list[str]:
    return [item.data(0, Qt.ItemDataRole.UserRole)
            for i in range(picker.tree.topLevelItemCount())
            if not (group := picker.tree.topLevelItem(i)).isHidden()
            for item in (group.child(j) for j in range(group.childCount()))
            if not item.isHidden()]


def test_return_in_the_search_opens_its_first_function_and_the_list_has_the_keys(qtbot):
    """Keys only: "linear" typed in the search, then Return, opened nothing (nor did Down
    reach the list); the keys stayed in the field, where Space and S are letters. Return
    opens the first Function shown and the list takes the keys; Down goes to the list on
    it, where Down and Return pick another."""
    picker = FunctionPicker()
    qtbot.addWidget(picker)
    with qtbot.waitExposed(picker):
        picker.show()
    picker.activateWindow()
    qtbot.waitUntil(picker.isActiveWindow)
    picker.search.setFocus()
    QTest.keyClicks(picker.search, "linear")
    shown = _shown_names(picker)
    assert len(shown) >= 2 and all("linear" in n.lower() or "linear" in
                                   picker._items[n].text(0).lower() for n in shown)
    with qtbot.waitSignal(picker.picked) as picked:
        QTest.keyClick(picker.search, Qt.Key.Key_Return)
    assert picked.args == [shown[0]]
    assert picker.tree.hasFocus() and picker.tree.currentItem() is picker._items[shown[0]]
    picker.search.setFocus()
    with qtbot.assertNotEmitted(picker.picked):
        QTest.keyClick(picker.search, Qt.Key.Key_Down)
    assert picker.tree.hasFocus() and picker.tree.currentItem() is picker._items[shown[0]]
    QTest.keyClick(picker.tree, Qt.Key.Key_Down)
    with qtbot.waitSignal(picker.picked) as picked:
        QTest.keyClick(picker.tree, Qt.Key.Key_Return)
    assert picked.args == [shown[1]]


def test_return_in_a_search_that_shows_nothing_opens_nothing(qtbot):
    picker = FunctionPicker()
    qtbot.addWidget(picker)
    picker.show()
    QTest.keyClicks(picker.search, "no such function")
    assert _shown_names(picker) == []
    with qtbot.assertNotEmitted(picker.picked):
        QTest.keyClick(picker.search, Qt.Key.Key_Return)
        QTest.keyClick(picker.search, Qt.Key.Key_Down)
    assert picker.search.text() == "no such function"
    # the list says so, instead of lying empty
    assert not picker.no_match.isHidden()
    assert picker.no_match.text(0) == "No Function matches “no such function”"
    picker.search.clear()
    assert picker.no_match.isHidden() and _shown_names(picker)


def test_a_newly_opened_files_list_is_not_hidden_by_an_old_search(qtbot):
    """A student typed "kill" in the search, then opened their file (Ctrl+O): its group was
    filtered out by "kill", and the list looked empty. Another file's list clears the
    search; the same file's list again (another of its Functions opened) keeps it."""
    picker = FunctionPicker()
    qtbot.addWidget(picker)
    picker.show()
    picker.search.setText("kill")
    picker.show_file("mine.py", [("mine.py:Cube", "Cube"), ("mine.py:Square", "Square")])
    assert picker.search.text() == ""
    assert _shown_names(picker)[:2] == ["mine.py:Cube", "mine.py:Square"]
    picker.search.setText("squ")
    picker.show_file("mine.py", [("mine.py:Cube", "Cube"), ("mine.py:Square", "Square")])
    assert picker.search.text() == "squ" and _shown_names(picker)[0] == "mine.py:Square"
    assert "mine.py:Cube" not in _shown_names(picker)


def test_ctrl_f_puts_the_keys_in_the_search_with_its_text_selected(qtbot, window):
    """A teacher with keys only had no way to the search: Ctrl+F did nothing, and "linear"
    typed with the focus elsewhere ran one-key shortcuts (L, R: a reset, C: a check)."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    picker = window.picker
    picker.search.setText("sigm")
    window.controls.play.setFocus()
    action = window.actions_by_name["find_function"]
    assert "Ctrl+F" in [k.toString() for k in action.shortcuts()]
    action.trigger()
    assert picker.search.hasFocus() and picker.search.selectedText() == "sigm"
    QTest.keyClicks(picker.search, "linear")  # typed over the selection
    assert picker.search.text() == "linear"


def test_the_function_open_stays_in_view_when_the_list_grows_with_a_zoom(qtbot):
    """At 150 % (set once torch had loaded) LinearFunction (find the bug), selected, was
    scrolled out of the list: the rows grew, the scroll position stayed."""
    from PySide6.QtGui import QFont

    picker = FunctionPicker()
    qtbot.addWidget(picker)
    picker.resize(300, 200)
    with qtbot.waitExposed(picker):
        picker.show()
    picker.select("linear_bug")
    item = picker._items["linear_bug"]

    def in_view() -> bool:
        return picker.tree.viewport().rect().contains(picker.tree.visualItemRect(item))

    qtbot.waitUntil(in_view)
    font = QFont(picker.font())
    font.setPointSizeF(font.pointSizeF() * 2)
    picker.apply_font(font)
    qtbot.waitUntil(in_view)


def test_ctrl_f_in_presentation_opens_the_picker_over_the_window(qtbot, window):
    """Presentation hides the picker: Ctrl+F typed into a search no one could see, and
    Return opened a Function the room never saw chosen. The picker opens over the window
    (at the window's zoom), Return opens its first match, and the popup goes."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    window.actions_by_name["presentation"].trigger()
    assert not window.picker.isVisible()
    window.actions_by_name["find_function"].trigger()
    popup = window.classroom.search_popup
    assert popup is not None and popup.isVisible()
    assert popup.geometry().intersects(window.geometry())
    assert popup.picker.font().pointSizeF() == window.picker.font().pointSizeF()
    qtbot.waitUntil(popup.picker.search.hasFocus)
    QTest.keyClicks(popup.picker.search, "mulconstant (find")
    with qtbot.waitSignal(window.session.targetChanged, timeout=30_000) as changed:
        QTest.keyClick(popup.picker.search, Qt.Key.Key_Return)
    assert changed.args[0].spec == "mulconstant_bug"
    qtbot.waitUntil(lambda: not popup.isVisible())
    assert window.preferences.presenting
