"""Bring your own Function: open a file or import path, the built-in editor, hot reload.

:class:`Byof` is made by the main window with the views it needs, and adds

- File > Open File… (Ctrl+O), Open Import Path… (Ctrl+Shift+I), New Function (Ctrl+N),
  Edit Current Function (Ctrl+E) and an Open Example submenu; drag-and-drop of ``.py`` files
  onto the window; View > Editor and View > Backward Inspector (Ctrl+B);
- the Editor tab (:class:`playground.views.editor.FunctionEditor`; Apply is Ctrl+Return) and the
  non-modal "Restore unsaved editor text" offer in the status bar (:mod:`.editor_link`);
- the Inspector tab (:class:`playground.views.inspector_view.InspectorView`), refreshed whenever the
  session has new inputs (:mod:`.inspection`);
- both, and the code, in a window of their own on request (:mod:`.tab_windows`);
- hot reload (:mod:`.hot_reload`): the file of a Function opened from a file (or an import
  path) is watched and re-imported when saved; a deleted file keeps the last good Function.

Everything that can go wrong goes through ``session.errorRaised`` (the error banner); the
dialogs are attributes (``chooser``, ``ask_open_file``, ``ask_import_path``) so tests replace
them instead of clicking through modal windows.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QMenu

from customgrad.errors import TargetError
from playground.features.byof.dialogs import ask_import_path, ask_open_file, choose_function
from playground.features.byof.editor_link import EditorLink
from playground.features.byof.hot_reload import HotReload
from playground.features.byof.inspection import InspectorLink
from playground.features.byof.tab_windows import TabWindows
from playground.features.byof.targets import (
    class_line,
    import_module,
    is_file_spec,
    same_file,
    split_target,
)
from playground.state import paths
from playground.workers.jobs import shadowing

if TYPE_CHECKING:
    from customgrad.targets.loader import Target

__all__ = ["Byof", "ask_import_path", "ask_open_file", "choose_function", "is_file_spec",
           "split_target"]


#: the fewest lines of text the editor shows in its tab before it takes its own window
EDITOR_LINES = 6

class Byof(QObject):
    """Own Functions in ``window``: opening them, the editor, the inspector, hot reload.

    ``tabs``: the side tabs (holding ``editor`` and ``inspector``); ``errors``: the error
    banner (its file:line link); ``code``: the code view; ``restore_offer``: in the status bar.
    """

    def __init__(self, session, *, window, commands, menus, tabs, status, errors, code, editor,
                 inspector, restore_offer) -> None:
        super().__init__(window)
        self.window = window
        self.session = session
        self.editor = editor
        self.inspector = inspector
        self.restore_offer = restore_offer
        self.chooser = choose_function
        self.ask_open_file = ask_open_file
        self.ask_import_path = ask_import_path
        self.last_dir = str(paths.resources_dir() / "examples")
        self._prefer_class: str | None = None
        self.tab_windows = TabWindows(tabs, window, parent=self)
        self.editor_link = EditorLink(
            session, editor=editor, restore_offer=restore_offer, code=code,
            show_tab=self.show_tab, open_editor_file=self._open_preferring, parent=self)
        self.inspection = InspectorLink(
            session, inspector=inspector,
            set_title=lambda title: self.tab_windows.set_title(inspector, title), parent=self)
        self.hot_reload = HotReload(
            session, editor=editor, status=status,
            reopen=lambda spec, name: self._open_preferring(spec, name, True), parent=self)
        editor.window_button.clicked.connect(lambda: self.tab_windows.detach(editor))
        inspector.window_button.clicked.connect(lambda: self.tab_windows.detach(inspector))
        code.window_button.clicked.connect(lambda: self.tab_windows.detach(code))
        self.actions = self._make_actions(commands, menus)
        window.setAcceptDrops(True)
        window.installEventFilter(self)
        editor.code.viewport().installEventFilter(self)  # a drop there opens, not inserts
        session.resolver = self.resolve
        session.targetChanged.connect(self._target_changed)
        session.jacobianReady.connect(lambda _report: self.inspection.checked())
        session.jacobianFailed.connect(
            lambda why: None if why.startswith("cancelled") else self.inspection.checked())
        session.errorRaised.connect(self._error)
        errors.jump.connect(self.editor_link.jump)

    # ---- the parts, as tests and the window use them ----------------------------------------
    @property
    def runner(self):
        return self.inspection.runner

    @property
    def watcher(self):
        return self.hot_reload.watcher

    @property
    def watched(self) -> str | None:
        return self.hot_reload.watched

    def show_tab(self, widget) -> None:
        """Show the editor, the inspector or the code: its tab, or its own window. The editor
        goes to its own window where its tab would show fewer than :data:`EDITOR_LINES`
        lines (a 1280x720 window, a hidden side panel): New Function there opened a text
        area a few pixels tall."""
        self.tab_windows.show(widget)
        if widget is self.editor and self._cramped():
            self.tab_windows.detach(widget)

    def _cramped(self) -> bool:
        editor = self.editor
        if editor.window() is not self.window:
            return False  # in its own window already
        if not editor.isVisible():
            return True  # the side panel is hidden (F9, presentation)
        self.window.layout().activate()  # (a window just shown may not be laid out yet)
        editor.layout().activate()
        code = editor.code
        return code.viewport().height() < EDITOR_LINES * code.fontMetrics().lineSpacing()

    def new_function(self) -> None:
        self.editor_link.new_function()

    def restore_editor_text(self) -> None:
        self.editor_link.restore_editor_text()

    # ---- menus ------------------------------------------------------------------------------
    def _make_actions(self, commands, menus) -> dict:
        menu = menus["file"]
        before = commands.by_name.get("quit")
        actions = {}
        for name, text, keys, slot, tip in (
                ("open_file", "&Open File…", ["Ctrl+O"], self.open_file_dialog,
                 "Open a .py file with a torch.autograd.Function (or drop it on the window)"),
                ("open_import", "Open &Import Path…", ["Ctrl+Shift+I"], self.open_import_dialog,
                 "Open a Function of an installed package: package.module:Class"),
                ("new_function", "&New Function", ["Ctrl+N"], self.editor_link.new_function,
                 "Write a Function in the built-in editor, starting from a working template"),
                ("edit_function", "&Edit Current Function", ["Ctrl+E"],
                 self.editor_link.edit_current,
                 "Copy the current Function into the editor to change it")):
            actions[name] = commands.add(name, text, keys, slot, menu, before=before, tip=tip)
        examples = sorted((paths.resources_dir() / "examples").glob("*.py"))
        if examples:
            sub = QMenu("Open E&xample", menu)
            menu.insertMenu(before, sub)
            for path in examples:
                action = sub.addAction(path.name)
                action.setToolTip(str(path))
                action.triggered.connect(lambda _=False, p=str(path): self.open_path(p))
            self.examples_menu = sub
        if before is not None:
            menu.insertSeparator(before)
        for name, text, keys, widget in (
                ("show_editor", "Editor", [], self.editor),
                ("show_inspector", "Backward Inspector", ["Ctrl+B"], self.inspector)):
            actions[name] = commands.add(name, text, keys,
                                         lambda _=False, widget=widget: self.show_tab(widget),
                                         menus["view"])
        actions["apply"] = commands.by_name["apply"] = self.editor.apply_action
        return actions

    # ---- opening ----------------------------------------------------------------------------
    def resolve(self, spec: str) -> Target:
        """:func:`customgrad.targets.loader.resolve`, plus: a file with several Functions asks which
        (``chooser``), and a failing import path names the file and line that broke."""
        from customgrad.targets.loader import resolve

        try:
            return resolve(spec, run_code=self.session.run_code)
        except TargetError as exc:
            better = self._recover(str(spec).strip(), exc)
            if better is None:
                raise
            return better

    def _recover(self, text: str, exc: TargetError) -> Target | None:
        """The Function the user picks of several in a file; None where the error stands (it
        names the file and line already)."""
        from customgrad.targets.loader import Target

        _where, class_name = split_target(text)
        # the loader hands over the Functions it found: no second import of the file
        functions = exc.choices
        if not is_file_spec(text) or class_name is not None or not exc.file \
                or len(functions) < 2:
            return None
        names = [f.__name__ for f in functions]
        base = os.path.basename(exc.file)
        choice = self._prefer_class if self._prefer_class in names else \
            self.chooser(self.window, base, names)
        if choice not in names:
            raise TargetError(
                f"{base} defines several Functions ({', '.join(names)}) and none was chosen: "
                f"open it again and pick one, or name it, e.g. {base}:{names[0]}.",
                file=exc.file, line=class_line(functions[1])) from None
        cls = functions[names.index(choice)]
        return Target(f"{text}:{choice}", cls, f"{choice} ({base})",
                      file=os.path.abspath(exc.file),
                      code=getattr(sys.modules.get(cls.__module__), "__source__", None))

    def _open_preferring(self, spec: str, class_name: str | None, carry_over: bool) -> None:
        """Open ``spec`` (keeping the inputs if ``carry_over``); of several Functions in the file,
        ``class_name`` without asking."""
        self._prefer_class = class_name
        try:
            self.session.set_target(spec, carry_over=carry_over)
        finally:
            self._prefer_class = None

    def open_path(self, path: str | os.PathLike) -> None:
        """Open a .py file: its only Function, or the one the user picks."""
        path = os.path.abspath(os.fspath(path))
        self.last_dir = os.path.dirname(path)
        self.session.set_target(path)

    def open_file_dialog(self) -> None:
        path = self.ask_open_file(self.window, self.last_dir)
        if path:
            self.open_path(path)

    def open_import_path(self, text: str) -> None:
        """``package.module:Class``, or ``package.module`` to pick one of its Functions."""
        from customgrad.targets.loader import functions_in, import_target, is_function

        text = text.strip()
        if not text:
            return
        where, class_name = split_target(text)
        if class_name is not None or is_file_spec(text):
            self.session.set_target(text)
            return
        try:
            # as the session loads it: its Functions listed, not run here
            with shadowing(self.session.policy):
                module = import_module(where, run_code=self.session.run_code)
        except TargetError as exc:
            self.session.errorRaised.emit(exc)
            return
        functions = functions_in(module)
        if not functions:
            functions = [obj for obj in vars(module).values() if is_function(obj)]
        names = [f.__name__ for f in functions]
        if not names:
            self.session.errorRaised.emit(TargetError(
                f"Module {where!r} has no torch.autograd.Function subclass.",
                file=getattr(module, "__file__", None)))
            return
        choice = names[0] if len(names) == 1 else self.chooser(self.window, where, names)
        if choice not in names:
            self.session.errorRaised.emit(TargetError(
                f"{where} has several Functions ({', '.join(names)}) and none was chosen: "
                f"open it again and pick one, or name it, e.g. {where}:{names[0]}.",
                file=getattr(module, "__file__", None)))
            return
        # the Target resolve() would make, from the module in hand (its top level ran once)
        self.session.set_target(import_target(where, choice, functions[names.index(choice)]))

    def open_import_dialog(self) -> None:
        text = self.ask_import_path(self.window)
        if text:
            self.open_import_path(text)

    # ---- drag and drop ----------------------------------------------------------------------
    @staticmethod
    def dropped_files(mime) -> list[str]:
        if mime is None or not mime.hasUrls():
            return []
        return [url.toLocalFile() for url in mime.urls()
                if url.isLocalFile() and url.toLocalFile().endswith(".py")]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            if self.dropped_files(event.mimeData()):
                event.acceptProposedAction()
                return True
        elif kind == QEvent.Type.Drop:
            files = self.dropped_files(event.mimeData())
            if files:
                event.acceptProposedAction()
                if len(files) > 1:
                    self.session.notice.emit(f"{len(files)} files dropped: opening the first, "
                                             f"{os.path.basename(files[0])}.")
                QTimer.singleShot(0, lambda: self.open_path(files[0]))
                return True
        return super().eventFilter(watched, event)

    # ---- the session's news -----------------------------------------------------------------
    def _target_changed(self, target: Target) -> None:
        folder = os.path.dirname(os.path.abspath(target.file)) if target.file else None
        if target.entry is None and folder and os.path.isdir(folder) \
                and not same_file(folder, paths.editor_dir()):
            # the Open dialog starts in the open file's folder (a gallery Function or the
            # editor's: the folder last opened from, at first the examples)
            self.last_dir = folder
        self.editor_link.target_changed(target)
        self.inspection.target_changed(target)
        self.hot_reload.follow(target)

    def _error(self, exc: BaseException) -> None:
        self.inspection.show_error(exc)
        self.editor_link.show_error(exc)

    # ---- shutdown ---------------------------------------------------------------------------
    def window_closing(self) -> None:
        """The window closes: user code stuck in the inspector stops with it, the editor's
        autosave is written, the editor and inspector come back into their tabs."""
        self.runner.cancel()
        self.editor.flush()
        self.tab_windows.attach_all()

    def shutdown(self) -> None:
        """Stop the inspector's user code, write the pending autosave, stop watching."""
        self.runner.cancel()
        self.editor.flush()
        self.hot_reload.stop()
