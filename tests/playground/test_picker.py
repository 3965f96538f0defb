"""The app's picker names the gallery's groups as the CLI's list does (one name per thing)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

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
