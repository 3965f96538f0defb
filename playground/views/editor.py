"""The built-in editor: write a Function, Apply it, and never lose what was typed.

- :class:`EditableCodeEditor`: the code view's editor (line numbers, pygments colours) made
  editable, with 4-space Tab and auto-indent.
- :class:`FunctionEditor`: the Editor tab. Apply (Ctrl+Return) writes the text to
  ``editor_dir()/my_function.py`` and emits ``applied(path)``; whatever is typed is saved
  (debounced, 1 s) to ``data_dir()/editor-autosave.py``.
- :class:`RestoreOffer`: the non-modal "Restore unsaved editor text" bar shown at start-up
  when the autosave holds something other than the template.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QFont, QKeyEvent, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from playground.state import paths
from playground.views.code_editor import DARK_STYLE, LIGHT_STYLE, CodeEditor
from playground.views.fields import ElidedLabel
from playground.views.fitting import FitScroll
from playground.views.fonts import code_font, point_size, scaled
from playground.views.status_notice import NoRoomWhileHidden

AUTOSAVE_NAME = "editor-autosave.py"
PREVIOUS_AUTOSAVE_NAME = "editor-autosave.previous.py"
EDITOR_FILE_NAME = "my_function.py"
AUTOSAVE_MS = 1000
INDENT = "    "


def template_path() -> Path:
    return paths.resources_dir() / "templates" / "new_function.py"


def template_text() -> str:
    """The New Function template (a working Function with comments)."""
    try:
        return template_path().read_text(encoding="utf-8")
    except OSError:  # a broken install: still give a working Function
        return _FALLBACK_TEMPLATE


_FALLBACK_TEMPLATE = '''import torch


class MyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x * grad_output
'''


def autosave_path() -> Path:
    return paths.data_dir() / AUTOSAVE_NAME


def editor_file() -> Path:
    """The file the editor's text is applied from (loaded like any user file)."""
    return paths.editor_dir() / EDITOR_FILE_NAME


def _same_text(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half; a
    failed write (a full disk) raises OSError and leaves no temporary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


class EditableCodeEditor(CodeEditor):
    """CodeEditor made editable: Tab inserts 4 spaces, Return keeps the indentation."""

    def __init__(self, parent: QWidget | None = None, style: str = LIGHT_STYLE) -> None:
        super().__init__(parent, style)
        self.setReadOnly(False)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextEditorInteraction)
        self.setTabChangesFocus(False)
        self.textChanged.connect(self._edited)

    def _edited(self) -> None:
        if self.highlighted_block is not None:
            self.clear_highlight()

    def highlight_line(self, lineno: int) -> bool:
        """Mark line ``lineno`` (1-based, as in tracebacks) and scroll to it."""
        return self.highlight_block(int(lineno) - self.first_line)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, mods = event.key(), event.modifiers()
        plain = mods in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)
        cursor = self.textCursor()
        if key == Qt.Key.Key_Tab and plain:
            if cursor.hasSelection():
                self._shift_lines(+1)
            else:
                column = cursor.positionInBlock()
                cursor.insertText(" " * (len(INDENT) - column % len(INDENT)))
            return
        if key == Qt.Key.Key_Backtab:
            self._shift_lines(-1)
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and plain:
            line = cursor.block().text()[:cursor.positionInBlock()]
            indent = line[:len(line) - len(line.lstrip(" "))]
            if line.rstrip().endswith(":"):
                indent += INDENT
            cursor.insertText("\n" + indent)
            self.ensureCursorVisible()
            return
        super().keyPressEvent(event)

    def _shift_lines(self, direction: int) -> None:
        cursor = self.textCursor()
        doc = self.document()
        first = doc.findBlock(cursor.selectionStart()).blockNumber()
        last = doc.findBlock(max(cursor.selectionStart(), cursor.selectionEnd() - 1)).blockNumber()
        edit = QTextCursor(doc)
        edit.beginEditBlock()
        for number in range(first, last + 1):
            block = doc.findBlockByNumber(number)
            edit.setPosition(block.position())
            if direction > 0:
                edit.insertText(INDENT)
            else:
                text = block.text()
                strip = min(len(INDENT), len(text) - len(text.lstrip(" ")))
                edit.movePosition(QTextCursor.MoveOperation.Right,
                                  QTextCursor.MoveMode.KeepAnchor, strip)
                edit.removeSelectedText()
        edit.endEditBlock()


class RestoreOffer(NoRoomWhileHidden, QFrame):
    """"Unsaved editor text from last time" with Restore and Discard buttons (non-modal)."""

    restoreClicked = Signal()
    discardClicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("RestoreOffer")
        self.label = QLabel("Unsaved editor text from last time")
        self.restore_button = QPushButton("Restore unsaved editor text")
        self.restore_button.setToolTip("Put the text you typed last time back into the editor")
        self.discard_button = QPushButton("Discard")
        self.discard_button.setToolTip(
            f"Forget it (a copy stays in {PREVIOUS_AUTOSAVE_NAME} in the data folder)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.addWidget(self.label)
        layout.addWidget(self.restore_button)
        layout.addWidget(self.discard_button)
        self.restore_button.clicked.connect(self.restoreClicked)
        self.discard_button.clicked.connect(self.discardClicked)
        self.apply_theme(False)
        self.hide()

    def apply_theme(self, dark: bool) -> None:
        bg, border, fg = ("#3a3200", "#c9a227", "#fff4ce") if dark else \
            ("#fff4ce", "#c9a227", "#3b2f00")
        self.setStyleSheet(f"#RestoreOffer {{ background: {bg}; border: 1px solid {border}; "
                           f"border-radius: 4px; }} #RestoreOffer QLabel {{ color: {fg}; }}")

    def apply_font(self, font: QFont) -> None:
        self.setFont(font)


class FunctionEditor(QWidget):
    """The Editor tab: title, Apply / New / status, and the editable code."""

    applied = Signal(str)  # the file the text was written to
    restoreAvailable = Signal(bool)  # an autosave from last time can be restored
    replaced = Signal()  # set_text / New / Restore replaced the whole text
    backedUp = Signal(str)  # replaced text that would have been lost was saved to this file

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = editor_file()
        self._template = template_text()
        self._applied_text: str | None = None
        self._restorable: str | None = None
        self._preserved = False
        self._loading = False

        # whole or not at all where the buttons leave too little room: the tab names it too
        self.title = ElidedLabel("Your Function", mode=None)
        self.file_label = QLabel()
        self.file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.file_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.file_label.setToolTip(str(self.path))
        style = self.style()
        self.apply_button = QPushButton(
            style.standardIcon(QStyle.StandardPixmap.SP_DialogApplyButton), "Apply")
        self.apply_button.setToolTip("Load this Function and check it (Ctrl+Return)")
        self.apply_button.setMinimumHeight(32)
        self.window_button = QPushButton("Own window")
        self.window_button.setToolTip("Open the editor in its own window (as large as you like); "
                                      "close that window to put it back")
        self.new_button = QPushButton("New")
        self.new_button.setToolTip("Start again from the template (Ctrl+N); the current text "
                                   "is kept in a backup file and Ctrl+Z brings it back")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.code = EditableCodeEditor()
        self.code.setPlaceholderText("Write a torch.autograd.Function here, then Apply.")

        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.window_button)
        top.addWidget(self.new_button)
        top.addWidget(self.apply_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(6)
        layout.addLayout(top)
        layout.addWidget(self.file_label)
        layout.addWidget(self.code, 1)
        layout.addWidget(FitScroll(self.status, self, share=0.3))  # a long error: scrolls

        self.apply_action = QAction("Apply", self)
        self.apply_action.setShortcuts([QKeySequence("Ctrl+Return"), QKeySequence("Ctrl+Enter")])
        self.apply_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.apply_action.triggered.connect(self.apply)
        self.addAction(self.apply_action)
        self.apply_button.clicked.connect(self.apply)
        self.new_button.clicked.connect(self.new_function)

        self._autosave_timer = QTimer(self, singleShot=True, interval=AUTOSAVE_MS)
        self._autosave_timer.timeout.connect(self.write_autosave)
        self.code.textChanged.connect(self._text_changed)

        self._set_text(self._template, undoable=False)
        self._show_status()
        self.apply_font(self.font())
        self.check_autosave()

    # ------------------------------------------------------------------ text

    def text(self) -> str:
        return self.code.toPlainText()

    def set_text(self, text: str) -> Path | None:
        """Replace the text (undoable with Ctrl+Z). Text that would be lost is first copied to
        a backup file in the editor folder, whose path is returned."""
        backup = self._backup_if_needed()
        self._set_text(text, undoable=True)
        self.write_autosave()
        if backup is not None:
            self.backedUp.emit(str(backup))
        self.replaced.emit()
        return backup

    def new_function(self) -> Path | None:
        """Back to the template; returns the backup of the previous text, if one was made."""
        return self.set_text(self._template)

    def _set_text(self, text: str, undoable: bool) -> None:
        self._loading = True
        try:
            if undoable:
                cursor = QTextCursor(self.code.document())
                cursor.select(QTextCursor.SelectionType.Document)
                cursor.insertText(text)
            else:
                self.code.setPlainText(text)
            self.code.moveCursor(QTextCursor.MoveOperation.Start)
            self.code.clear_highlight()
        finally:
            self._loading = False
        self._show_status()

    def _backup_if_needed(self) -> Path | None:
        text = self.text()
        if not text.strip() or _same_text(text, self._template) or (
                self._applied_text is not None and _same_text(text, self._applied_text)
                and self.path.is_file()
                and _same_text(self.path.read_text(encoding="utf-8"), text)):
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        backup = paths.editor_dir() / f"unsaved-{stamp}.py"
        k = 1
        while backup.exists():
            k += 1
            backup = paths.editor_dir() / f"unsaved-{stamp}-{k}.py"
        write_text_atomic(backup, text)
        return backup

    @property
    def modified(self) -> bool:
        """Edited since the last Apply (or never applied)."""
        return self._applied_text is None or self.text() != self._applied_text

    # ------------------------------------------------------------------ apply

    def apply(self) -> Path | None:
        """Write the text to the editor's file and emit ``applied``; None, and the status
        line saying why, where the file cannot be written (a full disk)."""
        text = self.text()
        try:
            write_text_atomic(self.path, text if text.endswith("\n") else text + "\n")
        except OSError as exc:
            self.status.setText(f"Not applied: {self.path.name} could not be saved ({exc}).")
            return None
        self._applied_text = text
        self.write_autosave()
        self._show_status()
        self.applied.emit(str(self.path))
        return self.path

    def mark_line(self, line: int) -> bool:
        """Mark an error line of the editor's file."""
        return self.code.highlight_line(line)

    def show_problem(self, message: str, line: int | None = None) -> None:
        """Say under the code that the applied text failed (the banner has the details)."""
        where = f"line {line}: " if line else ""
        self.status.setText(f"✘ {where}{message}")

    def _show_status(self) -> None:
        self.file_label.setText(f"File: {self.path}")
        if self._applied_text is None:
            self.status.setText("Not applied yet: press Apply (Ctrl+Return) to load and check "
                                "this Function.")
        elif self.modified:
            self.status.setText("Edited since the last Apply.")
        else:
            self.status.setText("Applied.")

    # ------------------------------------------------------------------ autosave

    def _text_changed(self) -> None:
        if self._loading:
            return
        self._autosave_timer.start()
        self._show_status()

    def write_autosave(self) -> None:
        """Save the text now (the debounce timer calls this one second after the last key)."""
        self._autosave_timer.stop()
        path = autosave_path()
        if self._restorable is not None and not self._preserved and path.exists():
            # the offer is still open: keep last time's text before overwriting it
            shutil.copyfile(path, path.with_name(PREVIOUS_AUTOSAVE_NAME))
            self._preserved = True
        try:
            write_text_atomic(path, self.text())
        except OSError:
            pass

    def flush(self) -> None:
        """Write a pending autosave now (on close)."""
        if self._autosave_timer.isActive():
            self.write_autosave()

    def check_autosave(self) -> bool:
        """Offer last time's text back when it differs from the template."""
        try:
            text = autosave_path().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        if text.strip() and not _same_text(text, self._template) \
                and not _same_text(text, self.text()):
            self._restorable = text
        else:
            self._restorable = None
        self.restoreAvailable.emit(self._restorable is not None)
        return self._restorable is not None

    @property
    def restorable(self) -> str | None:
        """Last time's text while it is offered back, else None."""
        return self._restorable

    def restore(self) -> None:
        """Put last time's text back (undoable); the template is backed up if edited."""
        text = self._restorable
        if text is None:
            return
        self._restorable = None
        self.set_text(text)
        self.restoreAvailable.emit(False)

    def discard_restore(self) -> None:
        """Decline the offer; last time's text stays in editor-autosave.previous.py."""
        if self._restorable is None:
            return
        path = autosave_path()
        if path.exists() and not self._preserved:
            shutil.copyfile(path, path.with_name(PREVIOUS_AUTOSAVE_NAME))
        self._preserved = True
        self._restorable = None
        self.write_autosave()
        self.restoreAvailable.emit(False)

    # ------------------------------------------------------------------ look

    def apply_font(self, font: QFont) -> None:
        """Labels follow ``font``; the code gets a monospace font of the same size."""
        self.setFont(font)
        self.title.setFont(scaled(font, 1.25, bold=True))
        self.file_label.setFont(scaled(font, 0.85, minimum=6.0))
        self.code.setFont(code_font(point_size(font)))

    def apply_theme(self, dark: bool) -> None:
        self.code.set_style(DARK_STYLE if dark else LIGHT_STYLE)
