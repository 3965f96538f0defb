"""The code editor widget the code panes share: a QPlainTextEdit with a line-number gutter (the
Qt "Code Editor" example), pygments highlighting through superqt's CodeSyntaxHighlight, and one
highlightable line (e.g. where an error was raised). Line numbers are those of the real file:
they start at ``first_line``. Read-only here; the Editor tab makes it editable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFontDatabase,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from playground.views.fonts import scaled
from playground.views.theme import mix

if TYPE_CHECKING:
    from superqt.utils import CodeSyntaxHighlight

__all__ = ["DARK_STYLE", "LIGHT_STYLE", "CodeEditor", "hold_highlighting", "prepare_highlighting",
           "release_highlighting"]

LIGHT_STYLE = "default"
DARK_STYLE = "monokai"


def _color(value: str | None) -> QColor | None:
    """A QColor from a pygments colour string ('#rrggbb', 'rrggbb'), else None."""
    if not value or value in ("inherit", "transparent"):
        return None
    if not value.startswith("#"):
        value = "#" + value
    color = QColor(value)
    return color if color.isValid() else None


class _Highlighting(QObject):
    """Says when the editors may make their highlighters (made on the GUI thread)."""

    released = Signal()


#: the held gate (:func:`hold_highlighting`), while held; empty otherwise
_held: list[_Highlighting] = []


def hold_highlighting() -> None:
    """Editors make their highlighters once :func:`release_highlighting` is called, not from
    their first paint: the app has :func:`prepare_highlighting` run off the GUI thread
    meanwhile (superqt's import and pygments' lexer froze the window right after its first
    paint: docs/startup.md). Called on the GUI thread, before the editors paint."""
    if not _held:
        _held.append(_Highlighting())


def highlighting_held() -> bool:
    return bool(_held)


def prepare_highlighting() -> None:
    """What making a highlighter imports and builds, on any thread: superqt's module (and
    qtpy, pygments' formatter) and pygments' Python lexer, whose token table is compiled
    once per class, on its first instance. Makes no Qt object."""
    from pygments.lexers import get_lexer_by_name
    from superqt.utils import CodeSyntaxHighlight  # noqa: F401 (imported for the GUI thread)

    get_lexer_by_name("python")


def release_highlighting() -> None:
    """On the GUI thread: the editors waiting (:func:`hold_highlighting`) make their
    highlighters in turn, and editors made from now on from their first paint as usual."""
    if _held:
        gate = _held.pop()  # kept until the signal is sent (its QObject goes with it)
        gate.released.emit()


class _LineNumberArea(QWidget):
    """The gutter; all painting is done by the editor."""

    def __init__(self, editor: CodeEditor) -> None:
        super().__init__(editor)
        self._editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self._editor.line_number_area_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self._editor.paint_line_numbers(event)


class CodeEditor(QPlainTextEdit):
    """Read-only code editor with real-file line numbers and one highlightable line."""

    def __init__(self, parent: QWidget | None = None, style: str = LIGHT_STYLE) -> None:
        super().__init__(parent)
        self._first_line = 1
        self._highlighted: int | None = None  # block index of the highlighted line
        self._style_name = style
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        # Mouse selection only: keyboard selection would draw a blinking caret.
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.line_number_area = _LineNumberArea(self)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.document().setDocumentMargin(6)

        self.blockCountChanged.connect(self._update_line_number_area_width)
        self.updateRequest.connect(self._update_line_number_area)

        self._highlighter: CodeSyntaxHighlight | None = None
        self._highlight_soon = False
        self._apply_style_colors()
        self._update_line_number_area_width()

    @property
    def highlighter(self) -> CodeSyntaxHighlight:
        """The syntax highlighter, made on first use: building pygments' Python lexer takes
        a tenth of a second, so the window paints first and colours the code a moment later
        (see :meth:`paintEvent`; in the app, once superqt and the lexer are ready:
        :func:`hold_highlighting`)."""
        if self._highlighter is None:
            from superqt.utils import CodeSyntaxHighlight

            # Passing the editor (not its document) lets superqt set the Base colour too.
            self._highlighter = CodeSyntaxHighlight(self, "python", self._style_name)
            self._apply_style_colors()
        return self._highlighter

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if self._highlighter is None and not self._highlight_soon:
            self._highlight_soon = True
            if _held:  # made once its imports are ready (the app's: hold_highlighting)
                _held[0].released.connect(self._highlight_soon_now)
            else:
                self._highlight_soon_now()

    def _highlight_soon_now(self) -> None:
        QTimer.singleShot(0, self, lambda: self.highlighter)  # dropped if self is gone

    # ------------------------------------------------------------------ numbers

    @property
    def first_line(self) -> int:
        return self._first_line

    def set_first_line(self, first_line: int) -> None:
        self._first_line = int(first_line)
        self._update_line_number_area_width()
        self.line_number_area.update()

    def line_number(self, block_index: int) -> int:
        return self._first_line + block_index

    def line_number_text(self, block_index: int) -> str:
        """The gutter text of block ``block_index`` (0-based)."""
        return str(self.line_number(block_index))

    def line_number_area_width(self) -> int:
        last = self._first_line + max(1, self.blockCount()) - 1
        digits = max(2, len(str(max(1, last))))
        pad = max(6, self.fontMetrics().horizontalAdvance("9"))
        return pad + self.fontMetrics().horizontalAdvance("9") * digits + pad

    def _update_line_number_area_width(self, _count: int = 0) -> None:
        self.setViewportMargins(self.line_number_area_width(), 0, 0, 0)

    def _update_line_number_area(self, rect: QRect, dy: int) -> None:
        if dy:
            self.line_number_area.scroll(0, dy)
        else:
            self.line_number_area.update(
                0, rect.y(), self.line_number_area.width(), rect.height()
            )
        if rect.contains(self.viewport().rect()):
            self._update_line_number_area_width()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        cr = self.contentsRect()
        self.line_number_area.setGeometry(
            QRect(cr.left(), cr.top(), self.line_number_area_width(), cr.height())
        )

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._update_line_number_area_width()
            cr = self.contentsRect()
            self.line_number_area.setGeometry(
                QRect(cr.left(), cr.top(), self.line_number_area_width(), cr.height())
            )
            self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * 4)

    def paint_line_numbers(self, event: QPaintEvent) -> None:
        area = self.line_number_area
        painter = QPainter(area)
        painter.fillRect(event.rect(), self._gutter_bg)
        painter.setFont(self.font())
        block = self.firstVisibleBlock()
        index = block.blockNumber()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        width = area.width() - max(6, self.fontMetrics().horizontalAdvance("9"))
        height = self.fontMetrics().height()
        bold = scaled(self.font(), bold=True)
        while block.isValid() and top <= event.rect().bottom():
            if block.isVisible() and bottom >= event.rect().top():
                if index == self._highlighted:
                    painter.setPen(self._mark_fg)
                    painter.setFont(bold)
                else:
                    painter.setPen(self._gutter_fg)
                    painter.setFont(self.font())
                painter.drawText(
                    0, top, width, height, Qt.AlignmentFlag.AlignRight, self.line_number_text(index)
                )
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())
            index += 1
        painter.end()

    # ------------------------------------------------------------------ marks

    @property
    def highlighted_block(self) -> int | None:
        """Block index (0-based) of the highlighted line, or None."""
        return self._highlighted

    def highlight_block(self, index: int) -> bool:
        """Mark block ``index`` (0-based) and scroll it into the middle of the view."""
        if not 0 <= index < self.blockCount():
            self.clear_highlight()
            return False
        self._highlighted = index
        self._apply_extra_selections()
        block = self.document().findBlockByNumber(index)
        cursor = QTextCursor(block)
        self.setTextCursor(cursor)
        self.centerCursor()
        self.line_number_area.update()
        return True

    def clear_highlight(self) -> None:
        self._highlighted = None
        self.setExtraSelections([])
        self.line_number_area.update()

    def _apply_extra_selections(self) -> None:
        if self._highlighted is None:
            self.setExtraSelections([])
            return
        selection = QTextEdit.ExtraSelection()
        selection.format.setBackground(self._mark_bg)
        selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        cursor = QTextCursor(self.document().findBlockByNumber(self._highlighted))
        cursor.clearSelection()
        selection.cursor = cursor
        self.setExtraSelections([selection])

    # ------------------------------------------------------------------ style

    @property
    def style_name(self) -> str:
        return self._style_name

    def set_style(self, name: str) -> None:
        """Switch the pygments style, e.g. "default" (light) or "monokai" (dark)."""
        from pygments.styles import get_style_by_name

        get_style_by_name(name)  # raises pygments.util.ClassNotFound for unknown names
        self._style_name = name
        if self._highlighter is not None:
            self._highlighter.setTheme(name)
        self._apply_style_colors()

    def apply_code_style(self, name: str) -> None:
        """What :func:`playground.views.theme.apply_theme` calls: the theme's code style."""
        self.set_style(name)

    def _apply_style_colors(self) -> None:
        from pygments.styles import get_style_by_name
        from pygments.token import Token

        style = get_style_by_name(self._style_name)
        bg = _color(style.background_color) or QColor("#ffffff")
        dark = bg.lightnessF() < 0.5
        fg = _color(style.style_for_token(Token.Text).get("color")) or (
            QColor("#f8f8f2") if dark else QColor("#1a1a1a")
        )
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.Base, bg)
        pal.setColor(QPalette.ColorRole.Text, fg)
        selection = _color(getattr(style, "highlight_color", None)) or (
            QColor("#49483e") if dark else QColor("#cfe3ff")
        )
        pal.setColor(QPalette.ColorRole.Highlight, selection)
        pal.setColor(QPalette.ColorRole.HighlightedText, fg)
        self.setPalette(pal)
        self._gutter_bg = _color(getattr(style, "line_number_background_color", None)) or mix(
            fg, bg, 0.06
        )
        self._gutter_fg = _color(getattr(style, "line_number_color", None)) or mix(fg, bg, 0.5)
        # The error line: a clear red wash that keeps the code readable.
        self._mark_bg = QColor("#6e2a2a") if dark else QColor("#ffd7d5")
        self._mark_fg = QColor("#ff8a80") if dark else QColor("#c62828")
        self._apply_extra_selections()
        self.line_number_area.update()
        self.viewport().update()


