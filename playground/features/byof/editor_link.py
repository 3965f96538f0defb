"""The built-in editor and the session: New Function, Edit Current Function (its inputs come
along), Apply (Ctrl+Return), the editor's own errors at their line, and last time's unsaved
text offered back in the status bar."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject

from customgrad.errors import CustomGradError
from playground.features.byof.targets import gallery_source, same_file

__all__ = ["EditorLink"]


class EditorLink(QObject):
    """Connects ``editor`` (a FunctionEditor) and ``restore_offer`` to ``session``.

    ``show_tab(widget)`` brings a side tab (or its own window) forward; ``code`` is the code
    view; ``open_editor_file(path, class_name, carry_over)`` opens what the editor wrote.
    """

    def __init__(self, session, *, editor, restore_offer, code, show_tab: Callable,
                 open_editor_file: Callable, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.editor = editor
        self.code = code
        self._show_tab = show_tab
        self._open = open_editor_file
        self._carry: dict | None = None  # inputs of the Function copied into the editor
        restore_offer.setVisible(editor.restorable is not None)
        editor.applied.connect(self._apply)
        editor.replaced.connect(self._replaced)
        editor.backedUp.connect(self._backed_up)
        editor.restoreAvailable.connect(restore_offer.setVisible)
        restore_offer.restoreClicked.connect(self.restore_editor_text)
        restore_offer.discardClicked.connect(editor.discard_restore)

    def new_function(self) -> None:
        """The template in the editor tab (the previous text is backed up, Ctrl+Z too)."""
        self.editor.new_function()
        self._editor_shown()

    def edit_current(self) -> None:
        """Copy the current Function's file (or gallery class) into the editor."""
        target = self.session.target
        if target is None:
            self.new_function()
            return
        if target.entry is None and target.file and os.path.isfile(target.file):
            text = Path(target.file).read_text(encoding="utf-8")
        else:
            text = gallery_source(target)
        tables = self._input_tables()
        self.editor.set_text(text)
        self._carry = tables
        self._editor_shown()

    def _input_tables(self) -> dict | None:
        """The current Function's inputs (gallery defaults included) as settings tables, so
        its copy in the editor starts with the same shapes, constants and init."""
        from customgrad.function.inputs import TensorSpec, format_shape
        from customgrad.problems.problem import specs_for

        target = self.session.target
        try:
            specs = specs_for(target, self.session.settings)
        except CustomGradError:
            return None
        tables: dict[str, dict] = {"shapes": {}, "constants": {}, "init": {}, "trained": {}}
        for spec in specs:
            if isinstance(spec, TensorSpec):
                if spec.shape:
                    tables["shapes"][spec.name] = format_shape(spec.shape)
                tables["init"][spec.name] = spec.init
                tables["trained"][spec.name] = spec.trained
            else:
                tables["constants"][spec.name] = spec.value
        return tables

    def _editor_shown(self) -> None:
        self._show_tab(self.editor)
        self.editor.code.setFocus()

    def _backed_up(self, backup: str) -> None:
        self.session.notice.emit(f"Your previous editor text is kept in {backup} (Ctrl+Z in the "
                                 "editor brings it back too).")

    def _replaced(self) -> None:
        self._carry = None  # the text is no longer a copy of the current Function

    def restore_editor_text(self) -> None:
        self.editor.restore()
        self._show_tab(self.editor)

    def _apply(self, path: str) -> None:
        current = self.session.target
        carry_over = current is not None and same_file(current.file, path)
        prefer = current.function.__name__ if carry_over else None
        if self._carry is not None and not carry_over:
            # the copy of a Function starts with its inputs (kept until it loads)
            for table, values in self._carry.items():
                setattr(self.session.settings, table, dict(values))
            carry_over = True
        self._open(path, prefer, carry_over)

    def target_changed(self, target) -> None:
        if same_file(target.file, self.editor.path):
            self._carry = None

    def show_error(self, exc: BaseException) -> None:
        """An error in the editor's file: marked at its line, said below the text."""
        file, line = getattr(exc, "file", None), getattr(exc, "line", None)
        if same_file(file, self.editor.path):
            if line:
                self.editor.mark_line(line)
            self.editor.show_problem(str(exc).splitlines()[0] if str(exc) else
                                     type(exc).__name__, line)

    def jump(self, file: str, line: int) -> None:
        """The error banner's file:line: in the editor if it is the editor's, else the code;
        a file the code does not show (one that failed to load: a syntax error, while the
        Function open before stays open) is shown there whole first."""
        if same_file(file, self.editor.path):
            self._show_tab(self.editor)
            self.editor.mark_line(line)
            self.editor.code.setFocus()
            return
        if not same_file(file, self.code.file) and not self._show_failed_file(file):
            return  # (gone since): no line of another file is marked; the banner says it
        self._show_tab(self.code)
        self.code.highlight_line(line)

    def _show_failed_file(self, file: str) -> bool:
        """``file`` in the code pane, whole; False where it cannot be read."""
        try:
            text = Path(file).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        name = os.path.basename(file)
        target = self.session.target
        still = f" (the Function open is still {target.label})" if target is not None else ""
        self.code.set_function(name, text, f"{name}, shown for the error banner's line{still}.",
                               file, 1)
        return True
