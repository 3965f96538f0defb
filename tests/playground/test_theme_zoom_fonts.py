"""Leaving high contrast (a style sheet) at one zoom, then zooming: every pane follows the
zoom (trial3 T12: high contrast at 150 % then light at 100 % left the forms and the side
tabs at 150 %, the rest at 100 %); and the command line's --tab opens each side tab, as
AUTOGRAD_PLAYGROUND_TAB does (trial3 C4)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QApplication, QLabel

from playground.main_window import MainWindow
from playground.state.session import Session


@pytest.mark.parametrize("light", ["light", "dark"])
def test_every_pane_follows_the_zoom_after_high_contrast_is_left(qtbot, light):
    win = MainWindow(Session(), restore_prefs=False, restore_session=False)
    qtbot.addWidget(win)
    win.resize(1280, 720)
    prefs = win.preferences
    start = QApplication.font().pointSizeF()
    # as a start does: the remembered look (restore_prefs), then the command line's, before
    # the window shows
    prefs.set_theme("high-contrast", remember=False)
    prefs.set_zoom(150, remember=False)
    prefs.set_theme(light, remember=False)
    prefs.set_zoom(100, remember=False)
    win.show()
    QApplication.processEvents()
    assert QApplication.font().pointSizeF() == pytest.approx(start)
    labels = [label for label in win.loop_form.findChildren(QLabel) if label.text()]
    assert labels
    for widget in (*labels, win.side_tabs.tabBar()):
        assert widget.font().pointSizeF() == pytest.approx(start), (
            type(widget).__name__, getattr(widget, "text", lambda: "")())


@pytest.mark.parametrize("tab", ["code", "editor", "inspector", "step", "landscape"])
def test_the_command_line_opens_every_tab_the_environment_does(qtbot, tab):
    """trial3 C4: --tab editor was refused while AUTOGRAD_PLAYGROUND_TAB=editor worked."""
    from playground.app import _parser

    assert _parser().parse_args(["--tab", tab]).tab == tab
    win = MainWindow(Session(), restore_prefs=False, restore_session=False)
    qtbot.addWidget(win)
    win.open_tab(tab)
    assert win.side_tabs.tabText(win.side_tabs.currentIndex()).lower().startswith(tab)
