"""A line edit that validates as the user types and shows the reason at the field, the parser
of a number typed for a setting (the rule is the Settings object's own), and a one-line label
that elides rather than widen its pane."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QLabel, QLineEdit, QVBoxLayout, QWidget

from customgrad.errors import SpecError
from customgrad.problems.settings import Settings

__all__ = ["NARROW_LETTERS", "CheckedField", "ElidedLabel", "FittedLabel", "is_narrow",
           "setting_number"]

INVALID_STYLE = "QLineEdit { border: 2px solid #d62728; }"
#: what the message for an empty or unreadable field suggests writing
_EXAMPLES = {"lr": "0.1", "eps": "1e-6", "atol": "1e-5", "rtol": "1e-3", "nondet_tol": "1e-10"}


#: a bar narrower than this many letters of its font (1280x720 at 150 %) shows its buttons as
#: their signs, so that its text keeps the room
NARROW_LETTERS = 80


def is_narrow(bar: QWidget, font: QFont, letters: int = NARROW_LETTERS) -> bool:
    """Whether ``bar`` is narrower than ``letters`` letters of ``font``: by its width and
    font only, not by what it says (no back and forth)."""
    return bar.width() < letters * QFontMetrics(font).averageCharWidth()


def setting_number(name: str) -> Callable[[str], float]:
    """A parser for text typed as the number setting ``name``: the number, or SpecError
    saying what is wrong (unreadable, or against :meth:`Settings.check_field`'s rule)."""
    example = _EXAMPLES.get(name, "1e-3")

    def parse(text: str) -> float:
        text = text.strip()
        if not text:
            raise SpecError(f"{name}: enter a number such as {example}")
        try:
            value = float(text)
        except ValueError:
            raise SpecError(f"{name}: “{text}” is not a number (write e.g. {example})") from None
        problem = Settings.check_field(name, value)
        if problem is not None:
            raise SpecError(problem)
        return value

    return parse


class CheckedField(QWidget):
    """Text field + reason label; ``committed(value)`` fires on Enter/focus-out when valid."""

    committed = Signal(object)

    def __init__(self, text: str, parse: Callable[[str], object], tooltip: str = "",
                 parent=None):
        super().__init__(parent)
        self.parse = parse
        self.edit = QLineEdit(text)
        self.edit.setToolTip(tooltip)
        self.reason = _WrappedLabel()
        self.reason.setStyleSheet("color: #d62728;")
        self.reason.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        layout.addWidget(self.edit)
        layout.addWidget(self.reason)
        self._last = text
        self.edit.textEdited.connect(self._validate)
        self.edit.editingFinished.connect(self._commit)

    def _validate(self, text: str):
        try:
            value = self.parse(text)
        except (SpecError, ValueError) as exc:
            self.edit.setStyleSheet(INVALID_STYLE)
            self.reason.setText(str(exc))
            self.reason.show()
            return None, False
        self.edit.setStyleSheet("")
        self.reason.hide()
        return value, True

    def _commit(self):
        text = self.edit.text()
        value, ok = self._validate(text)
        if ok and text != self._last:
            self._last = text
            self.committed.emit(value)

    @property
    def valid(self) -> bool:
        return self.reason.isHidden()

    def unfinished(self) -> tuple[QLineEdit, str] | None:
        """The editor and why its typed text is not a value; None while it is one."""
        return None if self.valid else (self.edit, self.reason.text())

    def set_text(self, text: str):
        self._last = text
        self.edit.setText(text)
        self._validate(text)


class _WrappedLabel(QLabel):
    """A label whose text wraps, at least as tall as its lines need at its width: a layout
    that sizes by minimum sizes (a scroll area's content) would cut lines off."""

    def __init__(self):
        super().__init__()
        self.setWordWrap(True)

    def setText(self, text: str) -> None:
        super().setText(text)
        self._fit()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        need = self.heightForWidth(self.width()) if self.width() > 0 else -1
        if need > 0 and need != self.minimumHeight():
            self.setMinimumHeight(need)


class ElidedLabel(QLabel):
    """A one-line label that asks for no width: text too long for it is cut with "…" (at the
    end, or where ``mode`` says), or not shown at all with ``mode`` None (a title a few
    letters of which would say nothing); the tooltip shows it whole. Its text must not make
    its pane, and so the window, wider than a projector's screen."""

    def __init__(self, text: str = "",
                 mode: Qt.TextElideMode | None = Qt.TextElideMode.ElideRight, parent=None):
        super().__init__(parent)
        self.mode = mode
        self.setText(text)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def shown_text(self) -> str:
        """The text as drawn at the label's width now."""
        width = self.contentsRect().width()
        if self.mode is None:
            return self.text() if self.fontMetrics().horizontalAdvance(self.text()) <= width \
                else ""
        return self.fontMetrics().elidedText(self.text(), self.mode, width)

    def sizeHint(self) -> QSize:
        return QSize(10, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def paintEvent(self, event) -> None:
        with QPainter(self) as painter:  # ended here, whoever still holds this frame
            painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
            painter.drawText(self.contentsRect(),
                             int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                             self.shown_text())


class FittedLabel(ElidedLabel):
    """An :class:`ElidedLabel` whose text may be drawn smaller than its font: :meth:`shown`
    gives the text as drawn and the font it is drawn in (a subclass sets them smaller before
    it cuts); drawn aligned as :attr:`ALIGN` says, vertically centred."""

    ALIGN = Qt.AlignmentFlag.AlignLeft

    def shown(self) -> tuple[str, QFont]:
        return ElidedLabel.shown_text(self), QFont(self.font())

    def shown_text(self) -> str:
        return self.shown()[0]

    def paintEvent(self, event) -> None:
        text, font = self.shown()
        with QPainter(self) as painter:  # ended here, whoever still holds this frame
            painter.setFont(font)
            painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
            painter.drawText(self.contentsRect(),
                             int(self.ALIGN | Qt.AlignmentFlag.AlignVCenter), text)
