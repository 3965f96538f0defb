"""Bring your own Function: open a file or import path, the built-in editor, hot reload.

:func:`install` adds to the main window

- File > Open File… (Ctrl+O), Open Import Path… (Ctrl+Shift+I), New Function (Ctrl+N),
  Edit Current Function (Ctrl+E) and an Open Example submenu; drag-and-drop of ``.py`` files
  onto the window; View > Editor and View > Backward Inspector (Ctrl+B);
- the Editor tab (:class:`playground.views.editor.FunctionEditor`; Apply is Ctrl+Return) and the
  non-modal "Restore unsaved editor text" offer in the status bar;
- the Inspector tab (:class:`playground.views.inspector_view.InspectorView`), refreshed whenever the
  session has new inputs;
- hot reload: the file of a Function opened from a file (or an import path) is watched and
  re-imported when saved, rename-saves included; a deleted file keeps the last good Function.

``AUTOGRAD_PLAYGROUND_TAB=inspector`` (or ``editor``, ``code``) opens the window on that tab,
e.g. for ``--screenshot``. Everything that can go wrong goes through ``session.errorRaised``
(the error banner); the dialogs are attributes (``chooser``, ``ask_open_file``,
``ask_import_path``) so tests replace them instead of clicking through modal windows.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import sys
import traceback
from pathlib import Path

from PySide6.QtCore import QEvent, QFileSystemWatcher, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QInputDialog,
    QLabel,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from customgrad import loader
from customgrad.errors import CustomGradError, TargetError, format_traceback
from customgrad.inputs import TensorSpec, format_shape
from customgrad.inspector import ERROR, WARNING, Inspection
from customgrad.loader import Target, functions_in, is_function, resolve
from customgrad.problem import specs_for
from playground.state import paths
from playground.views.editor import FunctionEditor, RestoreOffer
from playground.views.inspector_view import InspectorView
from playground.workers.inspector import InspectorRunner

RELOAD_DEBOUNCE_MS = 200


# ---- dialogs (replaceable) ------------------------------------------------------------------
def _can_show_dialogs() -> bool:
    app = QGuiApplication.instance()
    return app is not None and QGuiApplication.platformName() not in ("offscreen", "minimal")


def choose_function(parent, where: str, names: list[str]) -> str | None:
    """Ask which of several Functions to open; None when cancelled (or no screen)."""
    if not _can_show_dialogs():
        return None
    name, ok = QInputDialog.getItem(
        parent, "Choose a Function", f"{where} defines several autograd Functions.\n"
        "Which one do you want to open?", names, 0, False)
    return name if ok and name else None


def ask_open_file(parent, start: str) -> str | None:
    path, _ = QFileDialog.getOpenFileName(
        parent, "Open a Python file with a torch.autograd.Function", start,
        "Python files (*.py);;All files (*)")
    return path or None


def ask_import_path(parent) -> str | None:
    text, ok = QInputDialog.getText(
        parent, "Open import path", "A Function of an installed package, as "
        "package.module:Class (or package.module to choose):")
    return text.strip() if ok and text.strip() else None


# ---- helpers --------------------------------------------------------------------------------
def is_file_spec(spec: str) -> bool:
    """True for ``path/to/file.py[:Class]`` (as :func:`customgrad.loader.resolve` decides)."""
    where, _ = split_spec(spec)
    return where.endswith(".py") or os.sep in where or "/" in where


def split_spec(spec: str) -> tuple[str, str | None]:
    """``where[:Class]`` -> (where, Class or None); a Windows drive letter is not a class."""
    text = str(spec).strip()
    head, sep, tail = text.rpartition(":")
    if sep and tail and tail.isidentifier() and not (len(head) == 1 and head.isalpha()):
        return head, tail
    return text, None


def _same_file(a: str | os.PathLike | None, b: str | os.PathLike | None) -> bool:
    if not a or not b:
        return False
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _class_line(cls: type) -> int | None:
    try:
        return inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return None


def _import_location(exc: BaseException) -> tuple[str | None, int | None]:
    """The deepest traceback frame in a real file outside importlib (where an import broke)."""
    if isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
        return os.path.abspath(exc.filename), exc.lineno
    found: tuple[str | None, int | None] = (None, None)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        if name.startswith("<") or os.path.abspath(name) == os.path.abspath(__file__):
            continue
        found = (os.path.abspath(name), lineno)
    return found


def import_module(name: str, reload: bool = False):
    """Import (or re-import) ``name``; TargetError naming the file and line that failed."""
    try:
        module = sys.modules.get(name) if reload else None
        if module is not None:
            return loader.run_module_code(lambda: importlib.reload(module), name)
        return loader.run_module_code(lambda: importlib.import_module(name), name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        file, line = _import_location(exc)
        raise TargetError(f"Cannot import {name!r}: {type(exc).__name__}: {exc}", file=file,
                          line=line, details=format_traceback(exc)) from None


def gallery_source(target: Target) -> str:
    """A gallery Function's class with its module's imports, ready for the editor."""
    source = target.source
    try:
        module_source = inspect.getsource(sys.modules[target.function.__module__])
        tree = ast.parse(module_source)
        imports = [ast.get_source_segment(module_source, node) for node in tree.body
                   if isinstance(node, (ast.Import, ast.ImportFrom))]
    except (KeyError, OSError, TypeError, SyntaxError):
        imports = ["import torch", "from torch.autograd import Function"]
    header = "\n".join(i for i in imports if i)
    doc = f'"""{target.label}, copied from the gallery to edit."""\n\n'
    return f"{doc}{header}\n\n\n{source.rstrip()}\n"


class _OwnWindow(QWidget):
    """A top-level window (still a child of the main window, so zoom and themes reach it)
    holding the editor or the inspector; ``closed`` puts it back into its tab."""

    closed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, Qt.WindowType.Window)

    def closeEvent(self, event) -> None:
        self.closed.emit()
        super().closeEvent(event)


# ---- the controller ------------------------------------------------------------------------
class Byof(QObject):
    """Wires the editor, the inspector, the File actions and the file watcher to a window."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.session = session = window.session
        self.chooser = choose_function
        self.ask_open_file = ask_open_file
        self.ask_import_path = ask_import_path
        self.last_dir = str(paths.resources_dir() / "examples")
        self._prefer_class: str | None = None
        self._carry: dict | None = None  # inputs of the Function copied into the editor
        self._inspected_problem = None
        self.reloads = 0

        # tabs
        self.editor = FunctionEditor()
        self.inspector = InspectorView()
        self.runner = InspectorRunner(parent=self)
        tabs = window.side_tabs
        tabs.addTab(self.editor, "Editor")
        tabs.addTab(self.inspector, "Inspector")
        self.restore_offer = RestoreOffer()
        window.statusBar().addPermanentWidget(self.restore_offer)
        self.restore_offer.setVisible(self.editor.restorable is not None)
        self._floating: dict[QWidget, QWidget] = {}
        self._placeholders: dict[QWidget, QWidget] = {}
        self.editor.window_button.clicked.connect(lambda: self.detach(self.editor))
        self.inspector.window_button.clicked.connect(lambda: self.detach(self.inspector))

        # hot reload
        self.watcher = QFileSystemWatcher(self)
        self.watched: str | None = None
        self._watched_text: bytes | None = None
        self._gone = False
        self._reload_timer = QTimer(self, singleShot=True, interval=RELOAD_DEBOUNCE_MS)
        self._reload_timer.timeout.connect(self.reload_if_changed)
        self.watcher.fileChanged.connect(self._file_changed)
        self.watcher.directoryChanged.connect(self._directory_changed)

        self._make_actions()
        window.setAcceptDrops(True)
        window.installEventFilter(self)
        self.editor.code.viewport().installEventFilter(self)

        session.resolver = self.resolve
        session.targetChanged.connect(self._target_changed)
        session.jacobianReady.connect(lambda _report: self._checked())
        session.jacobianFailed.connect(lambda why: self._checked() if why != "cancelled" else None)
        session.errorRaised.connect(self._error)
        window.errors.jump.connect(self._jump)
        self.editor.applied.connect(self._apply)
        self.editor.replaced.connect(self._replaced)
        self.editor.backedUp.connect(self._backed_up)
        self.editor.restoreAvailable.connect(self.restore_offer.setVisible)
        self.restore_offer.restoreClicked.connect(self.restore_editor_text)
        self.restore_offer.discardClicked.connect(self.editor.discard_restore)
        self.runner.started.connect(self.inspector.show_waiting)
        self.runner.finished.connect(self._inspected)
        self.runner.failed.connect(self._inspection_failed)
        self.inspector.rerunRequested.connect(self.inspect_now)

    # ---- menus ---------------------------------------------------------------------------
    def _make_actions(self) -> None:
        w = self.window
        menu = w.menus["file"]
        before = w.actions_by_name.get("quit")
        self.actions: dict[str, QAction] = {}
        for name, text, keys, slot, tip in (
                ("open_file", "&Open File…", ["Ctrl+O"], self.open_file_dialog,
                 "Open a .py file with a torch.autograd.Function (or drop it on the window)"),
                ("open_import", "Open &Import Path…", ["Ctrl+Shift+I"], self.open_import_dialog,
                 "Open a Function of an installed package: package.module:Class"),
                ("new_function", "&New Function", ["Ctrl+N"], self.new_function,
                 "Write a Function in the built-in editor, starting from a working template"),
                ("edit_function", "&Edit Current Function", ["Ctrl+E"], self.edit_current,
                 "Copy the current Function into the editor to change it")):
            action = QAction(text, w)
            action.setShortcuts([QKeySequence(k) for k in keys])
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.setStatusTip(tip)
            action.setToolTip(tip)
            action.triggered.connect(slot)
            w.addAction(action)
            if before is not None:
                menu.insertAction(before, action)
            else:
                menu.addAction(action)
            self.actions[name] = action
        examples = sorted((paths.resources_dir() / "examples").glob("*.py"))
        if examples:
            sub = QMenu("Open E&xample", menu)
            if before is not None:
                menu.insertMenu(before, sub)
            else:
                menu.addMenu(sub)
            for path in examples:
                action = sub.addAction(path.name)
                action.setToolTip(str(path))
                action.triggered.connect(lambda _=False, p=str(path): self.open_path(p))
            self.examples_menu = sub
        if before is not None:
            menu.insertSeparator(before)

        view = w.menus["view"]
        for name, text, keys, widget in (
                ("show_editor", "Editor", [], self.editor),
                ("show_inspector", "Backward Inspector", ["Ctrl+B"], self.inspector)):
            action = QAction(text, w)
            action.setShortcuts([QKeySequence(k) for k in keys])
            action.triggered.connect(lambda _=False, widget=widget: self.show_tab(widget))
            w.addAction(action)
            view.addAction(action)
            self.actions[name] = action
        self.actions["apply"] = self.editor.apply_action
        w.actions_by_name.update(self.actions)

    def show_tab(self, widget) -> None:
        """Show the editor, the inspector or the code: its tab, or its own window."""
        holder = self._floating.get(widget)
        if holder is not None:
            holder.show()
            holder.raise_()
            holder.activateWindow()
        else:
            self.window.side_tabs.setCurrentWidget(widget)

    # ---- own windows -----------------------------------------------------------------------
    def detach(self, widget) -> QWidget:
        """Move the editor or the inspector from its tab into its own window; closing that
        window puts it back (a projector needs more room than the tab has)."""
        if widget in self._floating:
            return self._floating[widget]
        tabs = self.window.side_tabs
        index = tabs.indexOf(widget)
        title = tabs.tabText(index).rstrip(" ⚠")
        placeholder = QWidget()
        label = QLabel(f"The {title.lower()} is in its own window.")
        back = QPushButton(f"Put the {title.lower()} back here")
        box = QVBoxLayout(placeholder)
        box.addWidget(label)
        box.addWidget(back, 0, Qt.AlignmentFlag.AlignLeft)
        box.addStretch(1)
        tabs.removeTab(index)
        tabs.insertTab(index, placeholder, title)
        tabs.setCurrentIndex(index)
        holder = _OwnWindow(self.window)
        holder.setWindowTitle(f"{title} — Autograd playground")
        layout = QVBoxLayout(holder)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(widget)
        widget.show()
        holder.resize(max(700, self.window.width() // 2), max(600, self.window.height() - 80))
        holder.closed.connect(lambda w=widget: self.attach(w))
        back.clicked.connect(holder.close)
        self._floating[widget] = holder
        self._placeholders[widget] = placeholder
        widget.window_button.setEnabled(False)
        holder.show()
        return holder

    def attach(self, widget) -> None:
        """Back into its tab."""
        holder = self._floating.pop(widget, None)
        placeholder = self._placeholders.pop(widget, None)
        if holder is None or placeholder is None:
            return
        tabs = self.window.side_tabs
        index = tabs.indexOf(placeholder)
        title = tabs.tabText(index)
        tabs.removeTab(index)
        placeholder.deleteLater()
        tabs.insertTab(index, widget, title)
        tabs.setCurrentIndex(index)
        widget.window_button.setEnabled(True)
        holder.hide()
        holder.deleteLater()

    # ---- opening ---------------------------------------------------------------------------
    def resolve(self, spec: str) -> Target:
        """:func:`customgrad.loader.resolve`, plus: a file with several Functions asks which
        (``chooser``), and a failing import path names the file and line that broke."""
        try:
            return resolve(spec)
        except TargetError as exc:
            better = self._recover(str(spec).strip(), exc)
            if better is None:
                raise
            return better

    def _recover(self, text: str, exc: TargetError) -> Target | None:
        where, class_name = split_spec(text)
        if is_file_spec(text):
            # the loader hands over the Functions it found: no second import of the file
            functions = exc.choices
            if class_name is not None or not exc.file or len(functions) < 2:
                return None
            names = [f.__name__ for f in functions]
            base = os.path.basename(exc.file)
            choice = self._prefer_class if self._prefer_class in names else \
                self.chooser(self.window, base, names)
            if choice not in names:
                raise TargetError(
                    f"{base} defines several Functions ({', '.join(names)}) and none was chosen: "
                    f"open it again and pick one, or name it, e.g. {base}:{names[0]}.",
                    file=exc.file, line=_class_line(functions[1])) from None
            cls = functions[names.index(choice)]
            return Target(f"{text}:{choice}", cls, f"{choice} ({base})",
                          file=os.path.abspath(exc.file),
                          code=getattr(sys.modules.get(cls.__module__), "__source__", None))
        if class_name is not None and not exc.file and exc.details:
            import_module(where)  # raises the same failure with its file and line
        return None

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
        text = text.strip()
        if not text:
            return
        where, class_name = split_spec(text)
        if class_name is not None or is_file_spec(text):
            self.session.set_target(text)
            return
        try:
            module = import_module(where)
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
        self.session.set_target(f"{where}:{choice}")

    def open_import_dialog(self) -> None:
        text = self.ask_import_path(self.window)
        if text:
            self.open_import_path(text)

    # ---- drag and drop ---------------------------------------------------------------------
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
        elif kind == QEvent.Type.Close and watched is self.window:
            self.runner.cancel()  # user code stuck in the inspector stops with the window
            self.editor.flush()
            for widget in list(self._floating):
                self.attach(widget)
        return super().eventFilter(watched, event)

    # ---- the editor ------------------------------------------------------------------------
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
        self.show_tab(self.editor)
        self.editor.code.setFocus()

    def _backed_up(self, backup: str) -> None:
        self.session.notice.emit(f"Your previous editor text is kept in {backup} (Ctrl+Z in the "
                                 "editor brings it back too).")

    def _replaced(self) -> None:
        self._carry = None  # the text is no longer a copy of the current Function

    def restore_editor_text(self) -> None:
        self.editor.restore()
        self.show_tab(self.editor)

    def _apply(self, path: str) -> None:
        current = self.session.target
        keep = current is not None and _same_file(current.file, path)
        self._prefer_class = current.function.__name__ if keep else None
        if self._carry is not None and not keep:
            # the copy of a Function starts with its inputs (kept until it loads)
            for table, values in self._carry.items():
                setattr(self.session.settings, table, dict(values))
            keep = True
        try:
            self.session.set_target(path, keep=keep)
        finally:
            self._prefer_class = None

    def _error(self, exc: BaseException) -> None:
        if self.session.problem is None and not self.runner.busy:
            self.inspector.show_failure(exc)  # no inputs: nothing to inspect
            self._tab_mark(True)
        file, line = getattr(exc, "file", None), getattr(exc, "line", None)
        if _same_file(file, self.editor.path):
            if line:
                self.editor.mark_line(line)
            self.editor.show_problem(str(exc).splitlines()[0] if str(exc) else
                                     type(exc).__name__, line)

    def _jump(self, file: str, line: int) -> None:
        if _same_file(file, self.editor.path):
            self.show_tab(self.editor)
            self.editor.mark_line(line)
            self.editor.code.setFocus()
        else:
            self.show_tab(self.window.code)

    # ---- hot reload ------------------------------------------------------------------------
    def _watch_path(self, target: Target) -> str | None:
        if target.entry is not None or not target.file or not os.path.isfile(target.file):
            return None
        if _same_file(target.file, self.editor.path):
            return None  # the editor applies its own file
        return os.path.abspath(target.file)

    def _target_changed(self, target: Target) -> None:
        if _same_file(target.file, self.editor.path):
            self._carry = None
        self.runner.cancel()
        self._inspected_problem = None
        self.inspector.reset(f"Waiting for the Jacobian check of {target.label}…")
        self._tab_mark(False)
        path = self._watch_path(target)
        if path != self.watched:
            for old in self.watcher.files() + self.watcher.directories():
                self.watcher.removePath(old)
            self.watched = path
            if path is not None:
                self.watcher.addPath(path)
                self.watcher.addPath(os.path.dirname(path))
        self._gone = False
        self._watched_text = self._read(path) if path else None

    @staticmethod
    def _read(path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except OSError:
            return None

    def _file_changed(self, path: str) -> None:
        if not _same_file(path, self.watched):
            return
        if os.path.exists(path) and path not in self.watcher.files():
            self.watcher.addPath(path)  # a rename-save replaced the watched file
        self._reload_timer.start()

    def _directory_changed(self, _directory: str) -> None:
        path = self.watched
        if path is None:
            return
        exists = os.path.exists(path)
        if exists and path not in self.watcher.files():
            self.watcher.addPath(path)
        if not exists or self._read(path) != self._watched_text or self._gone:
            self._reload_timer.start()

    def reload_if_changed(self) -> None:
        """Re-import the watched file when its text changed (called 200 ms after a save)."""
        path, target = self.watched, self.session.target
        if path is None or target is None:
            return
        if not os.path.exists(path):
            if not self._gone:
                self._gone = True
                self.session.notice.emit(
                    f"{os.path.basename(path)} was deleted or moved: {target.function.__name__} "
                    "stays loaded as it was, and reloads if the file comes back.")
            return
        if path not in self.watcher.files():
            self.watcher.addPath(path)
        text = self._read(path)
        if text == self._watched_text:
            self._gone = False
            return
        self._watched_text = text
        self._gone = False
        self.reloads += 1
        spec = target.spec
        if not is_file_spec(spec):
            try:
                import_module(target.function.__module__, reload=True)
            except TargetError as exc:
                self.session.errorRaised.emit(exc)
                return
        self.window.statusBar().showMessage(f"{os.path.basename(path)} changed: reloading…",
                                            3000)
        self._prefer_class = target.function.__name__
        try:
            self.session.set_target(spec, keep=True)
        finally:
            self._prefer_class = None

    # ---- the inspector ---------------------------------------------------------------------
    def _checked(self) -> None:
        """A Jacobian check ended: inspect its problem once. Waiting for the check (instead
        of starting with it) keeps the user's code on one thread at a time."""
        problem = self.session.problem
        if problem is not None and problem is not self._inspected_problem:
            self.inspect_now()

    def inspect_now(self) -> None:
        """One forward + backward at the current problem's inputs, on a worker thread."""
        problem = self.session.problem
        if problem is None:
            return
        self._inspected_problem = problem
        self.runner.run(problem.function, problem.args, problem.settings.seed)

    def _inspected(self, inspection: Inspection) -> None:
        self.inspector.show_inspection(inspection)
        serious = inspection.error is not None or any(
            s.severity in (ERROR, WARNING) for s in inspection.surprises)
        self._tab_mark(serious)
        bad = inspection.nonfinite
        if bad:
            self.session.notice.emit("NaN or Inf: " + " ".join(s.message for s in bad)
                                     + " The Inspector tab shows where.")

    def _inspection_failed(self, exc: BaseException) -> None:
        self.inspector.show_failure(exc)
        self._tab_mark(True)

    def _tab_mark(self, serious: bool) -> None:
        tabs = self.window.side_tabs
        title = "Inspector ⚠" if serious else "Inspector"
        index = tabs.indexOf(self._placeholders.get(self.inspector, self.inspector))
        tabs.setTabText(index, title)
        holder = self._floating.get(self.inspector)
        if holder is not None:
            holder.setWindowTitle(f"{title} — Autograd playground")

    # ---- look and shutdown -----------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop the inspector's user code, write the pending autosave, stop watching."""
        self.runner.cancel()
        self.editor.flush()
        self._reload_timer.stop()
        for old in self.watcher.files() + self.watcher.directories():
            self.watcher.removePath(old)


def install(window) -> Byof:
    """Add the File menu entries, drag-and-drop, the editor and inspector tabs to ``window``."""
    byof = Byof(window)
    window.byof = byof
    tab = os.environ.get("AUTOGRAD_PLAYGROUND_TAB", "").strip().lower()
    if tab:  # e.g. AUTOGRAD_PLAYGROUND_TAB=inspector autograd-playground --screenshot x.png
        tabs = window.side_tabs
        for index in range(tabs.count()):
            if tabs.tabText(index).lower().startswith(tab):
                tabs.setCurrentIndex(index)
                break
    return byof
