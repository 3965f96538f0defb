"""Source of the selected Function, syntax highlighted, with its teaching note.

The code is shown in :class:`~playground.views.code_editor.CodeEditor` (read-only, line
numbers of the real file, one highlightable line), under the Function's title, note and path.
Where these would leave the code fewer than :data:`FULL_LINES` lines (a 1280x720 projector,
a zoom), they fold into one line: the title, a "Note" toggle (its tooltip: the note and the
path) and "Own window", the rest is code.
"""

from __future__ import annotations

import os

from PySide6 import QtGui
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QFont, QFontMetrics, QPalette, QTextCursor, QTextDocumentFragment
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from playground.views.code_editor import LIGHT_STYLE, CodeEditor
from playground.views.fields import ElidedLabel
from playground.views.fitting import FitScroll
from playground.views.fonts import code_font, point_size, scaled
from playground.views.theme import mix

__all__ = ["FULL_LINES", "CodeView", "TitleLabel"]

#: the fewest lines of code the view shows under the title, the note and the path each on
#: their own lines; with less room they fold into one line above the code
FULL_LINES = 6
#: the margin around the code's text, and folded (as little as reads)
_FULL_MARGIN, _FOLDED_MARGIN = 6, 2


class CodeView(QWidget):
    """Title, teaching note, file path and the highlighted source of one Function."""

    def __init__(self, parent: QWidget | None = None, style: str = LIGHT_STYLE) -> None:
        super().__init__(parent)
        self._file: str | None = None

        # one line: wrapped, a long title took the room of the code below it (and was cut at
        # a large zoom on a small screen); too long for the pane, it loses its file's name
        # first, then ends in "…" (whole: its tooltip)
        self.title_label = TitleLabel()

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

        #: open the code in a window of its own (see playground.features.byof.tab_windows)
        self.window_button = QToolButton()
        self.window_button.setText("Own window")
        self.window_button.setToolTip("Open the code in its own window (as large as you like, "
                                      "long lines whole); close that window to put it back")
        #: folded: shows the note and the path above the code, or hides them again
        self.note_button = QToolButton()
        self.note_button.setText("Note")
        self.note_button.setCheckable(True)
        self.note_button.setAutoRaise(True)
        self.note_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.note_button.setArrowType(Qt.ArrowType.RightArrow)
        self.note_button.toggled.connect(self._note_toggled)
        self.note_button.hide()
        self._folded = False
        self._frame, self._frame_shape = self.editor.frameWidth(), self.editor.frameShape()

        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.title_label, 1)
        head.addWidget(self.note_button)
        head.addWidget(self.window_button)
        self._layout = layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        layout.addLayout(head)
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
        self._file = os.fspath(file) if file is not None else None
        if self._file:
            shown = _display_path(self._file)
            self.file_label.setText(f"{shown}, line {int(first_line)}")
            self.file_label.setToolTip(self._file)
        else:
            self.file_label.clear()
            self.file_label.setToolTip("")
        # folded, the toggle's tooltip holds the note and the path whole
        said = [QTextDocumentFragment.fromHtml(note).toPlainText() if QtGui.Qt.mightBeRichText(note)
                else note, self.file_label.text()]
        self.note_button.setToolTip("\n\n".join(part for part in said if part))
        self._fit()
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

    # ------------------------------------------------------------------ folding

    @property
    def folded(self) -> bool:
        """Whether the title, the note and the path are folded into one line above the code
        (the room is short: see :data:`FULL_LINES`)."""
        return self._folded

    def full_lines(self) -> float:
        """Lines of code the full layout (title, note and path on lines of their own) leaves
        at the view's size."""
        font = self.font()
        chrome = 2 * 8 + QFontMetrics(scaled(font, 1.35, bold=True)).height()
        if self.note_label.text():
            chrome += 6 + self.note_scroll.sizeHint().height()
        if self._file:
            chrome += 6 + QFontMetrics(scaled(font, 0.85, minimum=6.0)).height()
        editor = self.editor
        chrome += 6 + 2 * self._frame + editor.horizontalScrollBar().sizeHint().height() \
            + 2 * _FULL_MARGIN
        return (self.height() - chrome) / editor.fontMetrics().lineSpacing()

    def _fit(self) -> None:
        """Folded where the full layout would leave the code fewer than FULL_LINES lines."""
        folded = self.full_lines() < FULL_LINES
        if folded != self._folded:
            self._folded = folded
            layout = self._layout
            # the tab's frame is below: a margin there would cost the code a line
            layout.setContentsMargins(*((4, 2, 4, 0) if folded else (8, 8, 8, 8)))
            layout.setSpacing(2 if folded else 6)
            # the pane's frame is the code's: its own frame, margin and horizontal scroll bar
            # would take the last line (long lines still scroll sideways: Shift+wheel, a
            # touchpad, a drag; whole in the code's own window)
            editor = self.editor
            editor.setFrameShape(QFrame.Shape.NoFrame if folded else self._frame_shape)
            editor.document().setDocumentMargin(_FOLDED_MARGIN if folded else _FULL_MARGIN)
            editor.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff if folded
                                                else Qt.ScrollBarPolicy.ScrollBarAsNeeded)
            self.window_button.setAutoRaise(folded)
            self.note_button.setChecked(False)  # folded anew: the note folded too
            self._apply_fonts(self.font())
        # the buttons no taller than the title's line (folded, they are flat): the code
        # keeps every pixel it had before they came
        tall = self.title_label.sizeHint().height()
        for button in (self.note_button, self.window_button):
            button.setMaximumHeight(tall)
        self._fit_buttons()
        self._show_parts()

    def _fit_buttons(self) -> None:
        """Folded where the Function's name and the buttons' words do not fit one line (a
        zoom on a projector cut "KillHead" to "KillHe…"), the buttons are their arrow and
        sign alone (their tooltips say what they do): the name is what the line is for.
        Decided by the words' widths, not by the buttons' size now: no back and forth."""
        title, note, window = (QFontMetrics(w.font()) for w in
                               (self.title_label, self.note_button, self.window_button))
        name = title.horizontalAdvance(self.title_label.name())
        pad = 2 * note.height()  # an arrow or a margin each side, and the layout's spacing
        words = note.horizontalAdvance("Note") + window.horizontalAdvance("Own window")
        margins = self._layout.contentsMargins()
        room = self.width() - margins.left() - margins.right()
        short = self._folded and name + words + 3 * pad > room
        self.note_button.setText("" if short else "Note")
        self.note_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly if short
                                            else Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.window_button.setText("↗" if short else "Own window")

    def _note_toggled(self, shown: bool) -> None:
        self.note_button.setArrowType(Qt.ArrowType.DownArrow if shown
                                      else Qt.ArrowType.RightArrow)
        self._show_parts()

    def _show_parts(self) -> None:
        note, file = bool(self.note_label.text()), bool(self._file)
        shown = not self._folded or self.note_button.isChecked()
        self.note_button.setVisible(self._folded and (note or file))
        self.note_label.setVisible(note)
        self.note_scroll.setVisible(shown and note)
        self.file_label.setVisible(shown and file)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()
        if self.editor.highlighted_block is not None:  # once the code's own size follows
            QTimer.singleShot(0, self._keep_mark_in_view)

    # ------------------------------------------------------------------ marks

    def _keep_mark_in_view(self) -> None:
        """The marked line back in the middle of the code if the pane's new size hid it: an
        error's banner takes its row after the line was marked, and a Function opened with
        its error at start was marked before the window had its size (the line was below
        the code's last one)."""
        editor = self.editor
        index = editor.highlighted_block
        if index is None:
            return
        block = editor.document().findBlockByNumber(index)
        top = editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top()
        if 0 <= top and top + editor.blockBoundingRect(block).height() \
                <= editor.viewport().height():
            return
        editor.highlight_block(index)

    def shows(self, file: str | os.PathLike[str] | None) -> bool:
        """Whether ``file`` is the file of the code shown (however its path is spelled)."""
        if not file or not self._file:
            return False
        return os.path.normcase(os.path.realpath(file)) == \
            os.path.normcase(os.path.realpath(self._file))

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
            self._fit()
        elif kind == QEvent.Type.PaletteChange:
            self._apply_label_colors()
        super().changeEvent(event)

    def _apply_fonts(self, font: QFont) -> None:
        # folded, the title is a line of the text's size
        self.title_label.setFont(scaled(font, 1.0 if self._folded else 1.35, bold=True))
        self.note_label.setFont(scaled(font))
        self.file_label.setFont(scaled(font, 0.85, minimum=6.0))
        self.editor.setFont(code_font(point_size(font)))

    def _apply_label_colors(self) -> None:
        pal = self.palette()
        dim = mix(
            pal.color(QPalette.ColorRole.WindowText), pal.color(QPalette.ColorRole.Window), 0.65
        )
        file_pal = self.file_label.palette()
        file_pal.setColor(QPalette.ColorRole.WindowText, dim)
        self.file_label.setPalette(file_pal)


class TitleLabel(ElidedLabel):
    """The Function's title, "Name (file.py)" for one of a file: where the line is short the
    file's name goes first (the path says it below the title, or in the Note's tooltip),
    then the name's end is cut with "…"."""

    def name(self) -> str:
        """The title without its file's name."""
        text = self.text()
        return text[:text.index(" (")] if " (" in text and text.endswith(")") else text

    def shown_text(self) -> str:
        text, width, metrics = self.text(), self.contentsRect().width(), self.fontMetrics()
        if metrics.horizontalAdvance(text) <= width:
            return text
        return metrics.elidedText(self.name(), Qt.TextElideMode.ElideRight, width)


def _display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel
