"""One place where anything that went wrong is shown: message, file:line, traceback on demand."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
)

from customgrad.errors import FunctionError, SpecError, TargetError

_KIND = {FunctionError: "Your Function", TargetError: "Loading", SpecError: "Input"}


class ErrorBanner(QFrame):
    """Non-modal; a new error replaces the old one. ``jump(file, line)`` asks to show the code."""

    jump = Signal(str, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("ErrorBanner")
        self.setStyleSheet("#ErrorBanner { background: #fdecea; border: 2px solid #d62728;"
                           " border-radius: 6px; } QLabel { color: #5f0b0b; }")
        self.title = QLabel()
        self.message = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag
                              .TextSelectableByMouse)
        self.where = QPushButton()
        self.where.setFlat(True)
        self.where.setCursor(Qt.CursorShape.PointingHandCursor)
        self.where.setStyleSheet("text-decoration: underline; color: #0b4f9c; text-align: left;")
        self.details_button = QPushButton("Show traceback")
        self.details_button.setCheckable(True)
        self.dismiss = QPushButton("Dismiss")
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setMaximumHeight(220)
        self.details.hide()
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addStretch(1)
        top.addWidget(self.details_button)
        top.addWidget(self.dismiss)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(self.where, alignment=Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        self.dismiss.clicked.connect(self.hide)
        self.details_button.toggled.connect(self.details.setVisible)
        self.where.clicked.connect(self._jump)
        self._location: tuple[str, int] | None = None
        self.hide()

    def show_error(self, exc: BaseException, after: str | None = None) -> None:
        """``after``: a sentence said after the message (which Function is open after a
        load failed)."""
        kind = next((v for k, v in _KIND.items() if isinstance(exc, k)), "Problem")
        self.title.setText(f"<b>⚠ {kind}: something went wrong</b>")
        message = str(exc) or type(exc).__name__
        if after:
            message = f"{message.rstrip()}\n{after}"
        self.message.setText(message)
        file, line = getattr(exc, "file", None), getattr(exc, "line", None)
        self._location = (file, line) if file and line else None
        self.where.setVisible(bool(file))
        self.where.setText(f"{file}:{line}  (show in code)" if line else f"{file or ''}")
        details = getattr(exc, "details", "") or ""
        self.details.setPlainText(details)
        self.details_button.setVisible(bool(details))
        self.details_button.setChecked(False)
        self.show()

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
        return f"{self.title.text()} {self.message.text()} {self.where.text()}"

    def _jump(self) -> None:
        if self._location:
            self.jump.emit(*self._location)
