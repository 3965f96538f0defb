"""The NaN notice's ``file:line`` is a link, as an error banner's is: clicked, the code pane
shows that line (trial finding #5: "... first appears at nan.py:14 (in backward)" named the
line in words only)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from playground.views.error_banner import LINK_STYLE, show_line_tip
from playground.views.notices import NoticeBar

TIMEOUT = 60_000
ERRORS = Path(__file__).parents[1] / "data" / "byof_errors.py"


def _backward_nan_line() -> int:
    """byof_errors.py's line where NaNGradient's backward makes the NaN."""
    lines = ERRORS.read_text().splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("class NaNGradient"))
    return next(k for k in range(start, len(lines)) if "math.nan" in lines[k]) + 1




def _shown(label) -> str:
    """What the label shows, rich text and all (QLabel's own text, not the words)."""
    return QLabel.text(label)


def test_the_nan_notice_s_line_is_a_link_that_shows_it(qtbot, window):
    notices = []
    window.session.notice.connect(notices.append)
    window.session.runNotice.connect(notices.append)
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target(f"{ERRORS}:NaNGradient")
    qtbot.waitUntil(lambda: any("NaN or Inf" in n for n in notices), timeout=TIMEOUT)
    notice, line = window.notice, _backward_nan_line()
    assert f"first appears at byof_errors.py:{line} (in backward)" in notice.text()
    file, at = notice.site()
    assert Path(file).resolve() == ERRORS.resolve() and at == line
    assert notice.textFormat() == Qt.TextFormat.RichText
    assert f">byof_errors.py:{line}</a>" in _shown(notice)
    assert notice.toolTip() == show_line_tip(file, line)
    window.code.clear_highlight()
    assert window.code.highlighted_line is None
    notice.linkActivated.emit("line")  # as a click on it does
    assert window.code.highlighted_line == line
    assert window.side_tabs.currentWidget() is window.code


def test_a_notice_links_only_a_file_it_knows(qtbot, tmp_path):
    """A name that is none of the files (another file's line, a sentence with "x.py:3" in
    it) stays words; the words read the same either way."""
    bar = NoticeBar()
    qtbot.addWidget(bar)
    known = tmp_path / "nan.py"
    bar.files = lambda: (None, str(known))
    bar.show_notice("gradient contains NaN, first appears at other.py:14 (in backward).")
    assert bar.site() is None and bar.textFormat() == Qt.TextFormat.PlainText
    assert bar.text() == "ℹ gradient contains NaN, first appears at other.py:14 (in backward)."
    bar.show_notice("gradient <x> contains NaN, first appears at nan.py:14 (in backward).")
    assert bar.site() == (str(known), 14)
    assert bar.text() == "ℹ gradient <x> contains NaN, first appears at nan.py:14 (in backward)."
    shown = _shown(bar)
    assert "&lt;x&gt;" in shown and f'style="{LINK_STYLE}">nan.py:14</a>' in shown
    with qtbot.waitSignal(bar.jump) as jumped:
        bar.linkActivated.emit("line")
    assert jumped.args == [str(known), 14]
