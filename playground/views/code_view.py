"""Source of the selected Function, syntax highlighted, with its teaching note.

The editor is a read-only QPlainTextEdit with a line-number gutter (the Qt
"Code Editor" example), pygments highlighting through superqt's
CodeSyntaxHighlight, and one highlightable line (e.g. where an error was raised).
Line numbers are those of the real file: they start at ``first_line``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pygments.styles import get_style_by_name
from pygments.token import Token
from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from playground.views.fitting import FitScroll
from playground.views.fonts import point_size

if TYPE_CHECKING:
    from superqt.utils import CodeSyntaxHighlight

__all__ = ["CodeEditor", "CodeView", "code_font"]

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


def _mix(a: QColor, b: QColor, t: float) -> QColor:
    """t * a + (1 - t) * b, opaque."""
    return QColor.fromRgbF(
        t * a.redF() + (1 - t) * b.redF(),
        t * a.greenF() + (1 - t) * b.greenF(),
        t * a.blueF() + (1 - t) * b.blueF(),
    )




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
        (see :meth:`paintEvent`)."""
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
        bold = QFont(self.font())
        bold.setBold(True)
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
        get_style_by_name(name)  # raises pygments.util.ClassNotFound for unknown names
        self._style_name = name
        if self._highlighter is not None:
            self._highlighter.setTheme(name)
        self._apply_style_colors()

    def _apply_style_colors(self) -> None:
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
        self._gutter_bg = _color(getattr(style, "line_number_background_color", None)) or _mix(
            fg, bg, 0.06
        )
        self._gutter_fg = _color(getattr(style, "line_number_color", None)) or _mix(fg, bg, 0.5)
        # The error line: a clear red wash that keeps the code readable.
        self._mark_bg = QColor("#6e2a2a") if dark else QColor("#ffd7d5")
        self._mark_fg = QColor("#ff8a80") if dark else QColor("#c62828")
        self._apply_extra_selections()
        self.line_number_area.update()
        self.viewport().update()


class CodeView(QWidget):
    """Title, teaching note, file path and the highlighted source of one Function."""

    def __init__(self, parent: QWidget | None = None, style: str = LIGHT_STYLE) -> None:
        super().__init__(parent)
        self._file: str | None = None

        self.title_label = QLabel()
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        self.title_label.setWordWrap(True)
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.note_label = QLabel()
        self.note_label.setWordWrap(True)
        self.note_label.setTextFormat(Qt.TextFormat.AutoText)
        self.note_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note_label.setOpenExternalLinks(True)
        self.note_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)

        self.file_label = QLabel()
        self.file_label.setTextFormat(Qt.TextFormat.PlainText)
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long path must not force the whole window wider.
        self.file_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.file_label.setVisible(False)

        self.editor = CodeEditor(style=style)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        layout.addWidget(self.title_label)
        # a long note scrolls rather than take the code's room (or the window's, zoomed in)
        self.note_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.note_scroll = FitScroll(self.note_label, self, share=0.4)
        layout.addWidget(self.note_scroll)
        layout.addWidget(self.file_label)
        layout.addWidget(self.editor, 1)

        self._apply_fonts(self.font())
        self._apply_label_colors()

    # ------------------------------------------------------------------ content

    def set_function(
        self,
        title: str,
        source: str,
        note: str,
        file: str | os.PathLike[str] | None = None,
        first_line: int = 1,
    ) -> None:
        """Show one Function. Line numbers start at ``first_line`` (its line in ``file``)."""
        self.title_label.setText(title)
        self.note_label.setText(note)
        self.note_label.setVisible(bool(note))
        self.note_scroll.setVisible(bool(note))
        self._file = os.fspath(file) if file is not None else None
        if self._file:
            shown = _display_path(self._file)
            self.file_label.setText(f"{shown}, line {int(first_line)}")
            self.file_label.setToolTip(self._file)
            self.file_label.setVisible(True)
        else:
            self.file_label.clear()
            self.file_label.setToolTip("")
            self.file_label.setVisible(False)
        self.editor.clear_highlight()
        self.editor.set_first_line(first_line)
        self.editor.setPlainText(source.expandtabs(4).rstrip("\n"))
        self.editor.moveCursor(QTextCursor.MoveOperation.Start)
        self.editor.ensureCursorVisible()

    def clear(self) -> None:
        self.set_function("", "", "")

    @property
    def file(self) -> str | None:
        return self._file

    @property
    def first_line(self) -> int:
        return self.editor.first_line

    def source(self) -> str:
        return self.editor.toPlainText()

    def line_number_text(self, block_index: int) -> str:
        return self.editor.line_number_text(block_index)

    # ------------------------------------------------------------------ marks

    def highlight_line(self, lineno: int) -> bool:
        """Mark line ``lineno`` of the real file and scroll to it.

        Returns False (and clears any mark) when the line is not in the shown source.
        """
        return self.editor.highlight_block(int(lineno) - self.editor.first_line)

    def clear_highlight(self) -> None:
        self.editor.clear_highlight()

    @property
    def highlighted_line(self) -> int | None:
        index = self.editor.highlighted_block
        return None if index is None else self.editor.line_number(index)

    # ------------------------------------------------------------------ look

    def set_style(self, name: str) -> None:
        """Pygments style of the code: "default" (light), "monokai" (dark), ..."""
        self.editor.set_style(name)

    def apply_font(self, font: QFont) -> None:
        """Labels follow ``font``; the code gets a monospace font of the same point size."""
        self.setFont(font)
        self._apply_fonts(font)

    def changeEvent(self, event: QEvent) -> None:
        kind = event.type()
        if kind == QEvent.Type.FontChange:
            self._apply_fonts(self.font())
        elif kind == QEvent.Type.PaletteChange:
            self._apply_label_colors()
        super().changeEvent(event)

    def _apply_fonts(self, font: QFont) -> None:
        size = point_size(font)
        title = QFont(font)
        title.setPointSizeF(size * 1.35)
        title.setBold(True)
        self.title_label.setFont(title)
        note = QFont(font)
        note.setPointSizeF(size)
        self.note_label.setFont(note)
        small = QFont(font)
        small.setPointSizeF(max(6.0, size * 0.85))
        self.file_label.setFont(small)
        self.editor.setFont(code_font(size))

    def _apply_label_colors(self) -> None:
        pal = self.palette()
        dim = _mix(
            pal.color(QPalette.ColorRole.WindowText), pal.color(QPalette.ColorRole.Window), 0.65
        )
        file_pal = self.file_label.palette()
        file_pal.setColor(QPalette.ColorRole.WindowText, dim)
        self.file_label.setPalette(file_pal)


def code_font(points: float) -> QFont:
    """The system's fixed-pitch font at ``points``, asked for as monospace twice over (the
    family, and the style hint): what a machine's fontconfig then picks is its own affair."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    font.setPointSizeF(points)
    return font


def _display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel
