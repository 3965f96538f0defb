"""Source of the selected Function, syntax highlighted, with its teaching note.

The code is shown in :class:`~playground.views.code_editor.CodeEditor` (read-only, line
numbers of the real file, one highlightable line), under the Function's title, note and path.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont, QPalette, QTextCursor
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from playground.views.code_editor import LIGHT_STYLE, CodeEditor
from playground.views.fields import ElidedLabel
from playground.views.fitting import FitScroll
from playground.views.fonts import code_font, point_size, scaled
from playground.views.theme import mix

__all__ = ["CodeView"]


class CodeView(QWidget):
    """Title, teaching note, file path and the highlighted source of one Function."""

    def __init__(self, parent: QWidget | None = None, style: str = LIGHT_STYLE) -> None:
        super().__init__(parent)
        self._file: str | None = None

        # one line: wrapped, a long title took the room of the code below it (and was cut at
        # a large zoom on a small screen); too long for the pane, it ends in "…" (whole: its
        # tooltip)
        self.title_label = ElidedLabel()

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
        self.title_label.setFont(scaled(font, 1.35, bold=True))
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


def _display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel
