"""The side tabs hidden at the start (Step, Landscape) build their panes when first shown,
not with the window before its first paint (docs/startup.md); each catches up with what the
session did meanwhile. The Landscape tab's: tests/playground/test_landscape_view.py."""

from __future__ import annotations

import pytest

TIMEOUT = 20_000


def open_target(qtbot, win, name):
    with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT):
        win.session.set_target(name)


def point_size(font) -> float:
    return font.pointSizeF()


def test_the_step_tab_is_built_when_first_shown_and_catches_up_with_the_run(qtbot, window):
    """The Step tab is hidden at the start: its explainer is built when the tab is first
    shown, not with the window (before its first paint). Built after the Function opened and
    a step was taken, in a zoom and theme set meanwhile, it shows that step as one built with
    the window does, at that zoom."""
    from playground.views.explainer import StepExplainer

    assert not window.step_page.built and window.findChildren(StepExplainer) == []
    open_target(qtbot, window, "killhead")
    window.preferences.set_zoom(150)
    window.preferences.set_theme("dark", remember=False)
    with qtbot.waitSignal(window.session.batchReady, timeout=TIMEOUT):
        window.session.step_once()
    assert not window.step_page.built
    window.classroom.show_explainer()
    (explainer,) = window.findChildren(StepExplainer)
    assert window.explainer is explainer and window.side_tabs.currentWidget() is window.step_page
    assert explainer.isVisible()
    qtbot.waitUntil(lambda: explainer.head.text() == "Step 1")
    assert "mean squared error" in explainer.body.text() + explainer.update_text.text()
    assert point_size(explainer.head.font()) == pytest.approx(
        1.35 * point_size(window.font()), rel=0.05)  # the zoom's font, as apply_font sets it


def test_a_step_tab_built_after_a_new_run_says_nothing_has_happened_yet(qtbot, window):
    open_target(qtbot, window, "killhead")
    explainer = window.explainer  # asked for: built now, hidden
    assert explainer.head.text() == "Step 0: nothing has happened yet"  # (as on targetChanged)
    assert not explainer.isVisible()
