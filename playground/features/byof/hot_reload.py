"""Hot reload: the file of a Function opened from a file (or an import path) is watched and
re-imported when saved, rename-saves included; a deleted file keeps the last good Function."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer

from customgrad.errors import TargetError
from playground.features.byof.targets import import_module, is_file_spec, same_file

if TYPE_CHECKING:
    from customgrad.targets.loader import Target

__all__ = ["RELOAD_DEBOUNCE_MS", "HotReload"]

RELOAD_DEBOUNCE_MS = 200


class HotReload(QObject):
    """Watches the current Function's file (not the ``editor``'s own: it applies itself).

    ``reopen(spec, class_name)`` opens ``spec`` again, keeping the inputs and preferring
    ``class_name`` when the file has several Functions.
    """

    def __init__(self, session, *, editor, status, reopen: Callable[[str, str], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.editor = editor
        self.status = status
        self._reopen = reopen
        self.watcher = QFileSystemWatcher(self)
        self.watched: str | None = None
        self._watched_text: bytes | None = None
        self._gone = False
        self.reloads = 0
        self._timer = QTimer(self, singleShot=True, interval=RELOAD_DEBOUNCE_MS)
        self._timer.timeout.connect(self.reload_if_changed)
        self.watcher.fileChanged.connect(self._file_changed)
        self.watcher.directoryChanged.connect(self._directory_changed)

    def _watch_path(self, target: Target) -> str | None:
        if target.entry is not None or not target.file or not os.path.isfile(target.file):
            return None
        if same_file(target.file, self.editor.path):
            return None  # the editor applies its own file
        return os.path.abspath(target.file)

    def follow(self, target: Target) -> None:
        """Watch ``target``'s file from now on (nothing, for a gallery or editor Function)."""
        path = self._watch_path(target)
        if path != self.watched:
            self._unwatch()
            self.watched = path
            if path is not None:
                self.watcher.addPath(path)
                self.watcher.addPath(os.path.dirname(path))
        self._gone = False
        self._watched_text = self._read(path) if path else None

    def stop(self) -> None:
        self._timer.stop()
        self._unwatch()

    def _unwatch(self) -> None:
        for old in self.watcher.files() + self.watcher.directories():
            self.watcher.removePath(old)

    @staticmethod
    def _read(path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except OSError:
            return None

    def _file_changed(self, path: str) -> None:
        if not same_file(path, self.watched):
            return
        if os.path.exists(path) and path not in self.watcher.files():
            self.watcher.addPath(path)  # a rename-save replaced the watched file
        self._timer.start()

    def _directory_changed(self, _directory: str) -> None:
        path = self.watched
        if path is None:
            return
        exists = os.path.exists(path)
        if exists and path not in self.watcher.files():
            self.watcher.addPath(path)
        if not exists or self._read(path) != self._watched_text or self._gone:
            self._timer.start()

    def reload_if_changed(self) -> None:
        """Re-import the watched file when its text changed (called 200 ms after a save)."""
        from customgrad.function.shadow import description_of

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
        if not is_file_spec(spec) and description_of(target.function) is None:
            # (a shadow's module was never imported here: its worker imports it afresh)
            try:
                import_module(target.function.__module__, reload=True,
                              run_code=self.session.run_code)
            except TargetError as exc:
                self.session.errorRaised.emit(exc)
                return
        self.status.showMessage(f"{os.path.basename(path)} changed: reloading…", 3000)
        self._reopen(spec, target.function.__name__)
