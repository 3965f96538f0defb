"""One place where anything that went wrong is shown: message, file:line, traceback on demand.

The banner is one row: what went wrong (wrapped, in up to three lines; whole in its tooltip
and under Details), where (the file's name and line, a link to the code), Details and
Dismiss. Three lines and the whole path took the heatmaps' height on a projector (1280x720 at
150 %: 160 px of 236 left them) and made the window wider than the screen. Details unfolds
the whole message, the path and the traceback. The window's main area lends the row's
height from the loss plot (:class:`~playground.views.panes.MainArea`), not from the heatmaps.
"""

from __future__ import annotations

import os
import re
import sys

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from customgrad import errors
from customgrad.errors import FunctionError, SpecError, TargetError
from playground.views.fields import is_narrow

__all__ = ["LINK_STYLE", "ErrorBanner", "show_line_tip"]

#: customgrad's own code: its frames go out of a traceback that has the user's (the gallery's
#: Functions are the user's code here)
_LIBRARY = os.path.dirname(os.path.abspath(errors.__file__)) + os.sep
_GALLERY = os.path.join(_LIBRARY, "targets", "gallery") + os.sep
_FRAME = re.compile(r'^  File "([^"]+)", line \d+')

_ANY_WIDTH = 16_777_215  # Qt's QWIDGETSIZE_MAX
_KIND = {FunctionError: "Error in your Function", TargetError: "Error loading",
         SpecError: "Error in the inputs"}


class _Lines(QLabel):
    """Wrapped text no taller than :attr:`LINES` lines; what goes past them is cut (the
    banner's tooltip and Details have it whole)."""

    LINES = 3

    def __init__(self):
        super().__init__()
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def _cap(self) -> int:
        return self.LINES * self.fontMetrics().lineSpacing() + 2

    def heightForWidth(self, width: int) -> int:
        return min(super().heightForWidth(width), self._cap())

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(hint.width(), min(hint.height(), self._cap()))

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(hint.width(), min(hint.height(), self._cap()))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # cut: its first lines shown, not its middle ones
        cut = QLabel.heightForWidth(self, self.width()) > self.height()
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | (
            Qt.AlignmentFlag.AlignTop if cut else Qt.AlignmentFlag.AlignVCenter))


#: how a file:line link looks, in the error banner and in a notice
LINK_STYLE = "text-decoration: underline; color: #0b4f9c;"


def show_line_tip(file: str, line: int) -> str:
    """What a file:line link's tooltip says it does."""
    return f"Show {file}, line {line}, in the code"


class ErrorBanner(QFrame):
    """Non-modal; a new error replaces the old one, folded to its line. ``jump(file, line)``
    asks to show the code."""

    jump = Signal(str, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("ErrorBanner")
        self.setStyleSheet("#ErrorBanner { background: #fdecea; border: 2px solid #d62728;"
                           " border-radius: 6px; } QLabel { color: #5f0b0b; }")
        # "⚠ <the message>" beside the buttons, in up to three lines (the kind of error and
        # the message whole: its tooltip, and Details)
        self.title = _Lines()
        self.where = QPushButton()
        self.where.setFlat(True)
        self.where.setCursor(Qt.CursorShape.PointingHandCursor)
        self.where.setStyleSheet(f"{LINK_STYLE} text-align: left;")
        self.details_button = QPushButton("Details")
        self.details_button.setCheckable(True)
        self.details_button.setToolTip("The whole message, where it happened, the traceback")
        self.dismiss = QPushButton("Dismiss")
        # unfolded: the whole message, the path, the traceback
        self.message = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag
                              .TextSelectableByMouse)
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.location = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag
                               .TextSelectableByMouse)
        self.location.setTextFormat(Qt.TextFormat.PlainText)
        for label in (self.message, self.location):
            policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            policy.setHeightForWidth(True)
            label.setSizePolicy(policy)
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setMaximumHeight(220)
        self.more = QWidget()
        more = QVBoxLayout(self.more)
        more.setContentsMargins(0, 0, 0, 0)
        for widget in (self.message, self.location, self.details):
            more.addWidget(widget)
        self.more.hide()
        row = QHBoxLayout()
        row.addWidget(self.title, 1)
        for button in (self.where, self.details_button, self.dismiss):
            row.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 2, 4, 2)
        layout.setSpacing(4)
        layout.addLayout(row)
        layout.addWidget(self.more)
        self.dismiss.clicked.connect(self.hide)
        self.details_button.toggled.connect(self.more.setVisible)
        self.details_button.toggled.connect(self._fit_buttons)
        self.details_button.toggled.connect(self._fit_message)
        self.dismiss.setToolTip("Hide this message")
        self.where.clicked.connect(self._jump)
        self._location: tuple[str, int] | None = None
        self._kind = self._path = ""
        self.hide()

    def show_error(self, exc: BaseException, after: str | None = None) -> None:
        """``after``: a sentence said after the message (which Function is open after a
        load failed)."""
        kind = next((v for k, v in _KIND.items() if isinstance(exc, k)), "Error")
        message = str(exc) or type(exc).__name__
        if after:
            message = f"{message.rstrip()}\n{after}"
        self.message.setText(f"{kind}: {message}")
        self.title.setText(f"⚠ {' '.join(message.split())}")  # one line: breaks as spaces
        self.title.setToolTip(f"{kind}: {message}")
        file, line = getattr(exc, "file", None), getattr(exc, "line", None)
        self._location = (file, line) if file and line else None
        self.where.setVisible(bool(file))
        # the file's name on the line (a path would widen the window past the screen)
        name = os.path.basename(file) if file else ""
        self.where.setText(f"{name}:{line}" if line else name)
        self.where.setToolTip(show_line_tip(file, line) if line else file or "")
        # unfolded, the kind of error is said here (the message itself only where the line
        # above cuts it: it said the same sentence twice)
        self._kind, self._path = kind, (f"{file}:{line}" if line else file or "")
        self.location.setText(f"{kind}: {self._path}" if file else "")
        self.location.setVisible(bool(file))
        details = _users_frames(getattr(exc, "details", "") or "")
        self.details.setPlainText(details)
        self.details.setVisible(bool(details))
        self.details_button.setChecked(False)
        self.show()
        self._fit_message()

    def _fit_message(self, *_args) -> None:
        """The whole message under Details only where the folded line cuts it."""
        title = self.title
        cut = QLabel.heightForWidth(title, max(1, title.width())) > title.height() + 1
        self.message.setVisible(cut or not self.location.text())
        if self.location.text():  # the kind once: on the message where it is shown
            self.location.setText(self._path if self.message.isVisibleTo(self)
                                  else f"{self._kind}: {self._path}")

    def _fit_buttons(self, *_args) -> None:
        # narrow, the buttons are their signs: the message keeps the room (1280x720 at
        # 150 %: three lines of it, not four)
        short = is_narrow(self, self.font())
        shown = self.details_button.isChecked()
        self.details_button.setText(("▾" if shown else "▸") if short else "Details")
        self.dismiss.setText("✕" if short else "Dismiss")
        # a push button is at least a style's width wide, whatever its text: as wide as
        # its sign where short
        width = 2 * self.fontMetrics().height() if short else _ANY_WIDTH
        for button in (self.details_button, self.dismiss):
            button.setMaximumWidth(width)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_buttons()
        self._fit_message()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self._fit_buttons()

    def apply_theme(self, name: str) -> None:
        """High contrast: the buttons in the banner's own dark red on white, bordered (the
        theme's white text on its black buttons lost the black on the pink banner, and read
        white on pink)."""
        sheet = ("QPushButton { color: #5f0b0b; background: #ffffff; border: 2px solid "
                 "#5f0b0b; padding: 3px 10px; } QPushButton:hover, QPushButton:checked "
                 "{ background: #ffff00; }") if name == "high-contrast" else ""
        for button in (self.details_button, self.dismiss):
            button.setStyleSheet(sheet)

    def text(self) -> str:
        """What the banner says, whole (unfolded or not)."""
        return f"{self.message.text()} {self.location.text()}"

    def _jump(self) -> None:
        if self._location:
            self.jump.emit(*self._location)


def _users_frames(text: str) -> str:
    """A traceback without customgrad's own frames (each ``File`` line and the lines under
    it) and torch's before the user's first (``Function.apply`` calling forward: a trace that
    started in torch read as torch's fault), and a line saying how many went; whole where
    nothing of the user's is in it."""
    torch = sys.modules.get("torch")
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep \
        if torch is not None and getattr(torch, "__file__", None) else None
    lines, kept, i, users = text.splitlines(), [], 0, False
    dropped = {"customgrad's own": 0, "torch's before your code": 0}
    while i < len(lines):
        match = _FRAME.match(lines[i])
        if match:
            path = match.group(1)
            ours = path.startswith(_LIBRARY) and not path.startswith(_GALLERY)
            torchs = torch_dir is not None and path.startswith(torch_dir)
            if ours or (torchs and not users):
                dropped["customgrad's own" if ours else "torch's before your code"] += 1
                i += 1
                while i < len(lines) and lines[i].startswith("    "):
                    i += 1
                continue
            users = users or not torchs
        kept.append(lines[i])
        i += 1
    if not any(dropped.values()) or not users:
        return text.rstrip("\n")
    said = "; ".join(f"{n} frame{'s' if n > 1 else ''} of {whose}"
                     for whose, n in dropped.items() if n)
    return "\n".join([*kept, f"({said} left out)"])
