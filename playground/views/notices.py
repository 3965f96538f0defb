"""Bars above the main area: a passing notice, and the question a session file asks before its
Function's code may run."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

__all__ = ["NoticeBar", "PendingSessionBar"]

#: what a session's Function is, by its kind (see playground.state.session_files)
_KINDS = {"editor": "a Function written in the editor", "file": "a Function from a file",
          "import": "a Function from a module"}


class NoticeBar(QLabel):
    """Something worth knowing (not an error): shown for 15 seconds, then hidden."""

    SHOWN_MS = 15000

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setStyleSheet("background: #fff4ce; border: 1px solid #c9a227; "
                           "border-radius: 4px; padding: 4px; color: #3b2f00;")
        self.hide()
        self._timer = QTimer(self, singleShot=True, interval=self.SHOWN_MS)
        self._timer.timeout.connect(self.hide)
        self._about_run = False  # the notice shown is about the run (see show_run_notice)

    def show_notice(self, text: str) -> None:
        self._about_run = False
        self.setText(f"ℹ {text}")
        self.show()
        self._timer.start()

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
