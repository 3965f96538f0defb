"""Bars above the main area: a passing notice, and the question a session file asks before its
Function's code may run."""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable, Iterable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from playground.views.error_banner import LINK_STYLE, show_line_tip

__all__ = ["NoticeBar", "PendingSessionBar"]

#: what a session's Function is, by its kind (see playground.state.session_files)
_KINDS = {"editor": "a Function written in the editor", "file": "a Function from a file",
          "import": "a Function from a module"}


#: a file's line in a notice's words: "nan.py:14" (the name only, as the checks say it)
_SITE = re.compile(r"(?<![\w/\\.-])([\w.-]+\.py):(\d+)\b")


class NoticeBar(QLabel):
    """Something worth knowing (not an error): shown for 15 seconds, then hidden.

    A file's line in it ("first appears at nan.py:14") is a link where the file is one of
    ``files()`` (the code's, the editor's: set by the window): clicked, ``jump(file, line)``,
    the :class:`~playground.views.error_banner.ErrorBanner`'s own signal, which the window
    connects to the same place (the code pane at that line). :meth:`text` is the words
    without the link."""

    SHOWN_MS = 15000
    jump = Signal(str, int)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setStyleSheet("background: #fff4ce; border: 1px solid #c9a227; "
                           "border-radius: 4px; padding: 4px; color: #3b2f00;")
        self.hide()
        self._timer = QTimer(self, singleShot=True, interval=self.SHOWN_MS)
        self._timer.timeout.connect(self.hide)
        self._about_run = False  # the notice shown is about the run (see show_run_notice)
        #: the files a notice's "name.py:line" may be (full paths; set by the window)
        self.files: Callable[[], Iterable[str | None]] = lambda: ()
        self._plain = ""
        self._site: tuple[str, int] | None = None  # the linked (file, line)
        self.linkActivated.connect(self._follow)

    def text(self) -> str:
        """The notice's words (the link's as plain text)."""
        return self._plain

    def site(self) -> tuple[str, int] | None:
        """The (file, line) the notice's link shows; None without one."""
        return self._site

    def show_notice(self, text: str) -> None:
        self._about_run = False
        self._plain = f"ℹ {text}"
        match, self._site = self._find_site(self._plain)
        if match is None:
            self.setTextFormat(Qt.TextFormat.PlainText)
            self.setText(self._plain)
            self.setToolTip("")
        else:
            start, end = match.span()
            self.setTextFormat(Qt.TextFormat.RichText)
            self.setText(f"{html.escape(self._plain[:start])}<a href=\"line\" "
                         f"style=\"{LINK_STYLE}\">{html.escape(match.group(0))}</a>"
                         f"{html.escape(self._plain[end:])}")
            self.setToolTip(show_line_tip(*self._site))
        self.show()
        self._timer.start()

    def _find_site(self, text: str) -> tuple[re.Match | None, tuple[str, int] | None]:
        """The first "name.py:line" in ``text`` whose name is one of :attr:`files`'."""
        paths = [f for f in self.files() if f]
        for match in _SITE.finditer(text):
            name, line = match.group(1), int(match.group(2))
            for path in paths:
                if os.path.basename(path) == name:
                    return match, (path, line)
        return None, None

    def _follow(self, _href: str) -> None:
        if self._site is not None:
            self.jump.emit(*self._site)

    def show_run_notice(self, text: str) -> None:
        """A notice about the run: it goes when a new run starts (:meth:`run_started`)."""
        self.show_notice(text)
        self._about_run = True

    def run_started(self) -> None:
        """A new run: a notice about the last one no longer holds."""
        if self._about_run:
            self._about_run = False
            self._timer.stop()
            self.hide()


class PendingSessionBar(QFrame):
    """A session names a Function outside the gallery: say which, and ask before its Python
    code runs. ``loadRequested``: the user trusts it; ``dismissed``: keep the current one."""

    loadRequested = Signal()
    dismissed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("SessionConfirm")
        self.setStyleSheet("#SessionConfirm { background: #e8f0fe; border: 2px solid #1a56b8;"
                           " border-radius: 6px; } #SessionConfirm QLabel { color: #0c2a5b; }")
        self.label = QLabel(wordWrap=True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.load_button = QPushButton("Load")
        self.load_button.setToolTip("Run this Function's Python code and open the session")
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.setToolTip("Keep the current Function; forget this session")
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.label, 1)
        row.addWidget(self.load_button)
        row.addWidget(self.dismiss_button)
        self.load_button.clicked.connect(self.loadRequested)
        self.dismiss_button.clicked.connect(self.dismissed)
        self.hide()

    def ask(self, ref) -> None:
        """Show the question for ``ref`` (a session file's FunctionRef)."""
        where = ref.file if ref.kind in ("file", "editor") else ref.spec
        self.label.setText(
            f"This session uses {_KINDS.get(ref.kind, 'a Function')}: "
            f"<b>{html.escape(ref.display_name)}</b><br><small>{html.escape(where or '')}"
            "</small><br>Loading it runs its Python code. Load it only if you trust it.")
        self.load_button.setText(f"Load {ref.button_target}")
        self.show()
