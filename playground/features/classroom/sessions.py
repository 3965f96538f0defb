"""Session files in the window: open, save, the last session kept for the next start, and the
bar that asks before a session's own Function runs.

A session never imports a Function file (or module) without the user's click: it shows the
gallery's Function meanwhile, and the bar names the file and offers to load it.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from playground.state import session_files
from playground.views import theme

__all__ = ["SessionFiles"]

AUTOSAVE_MS = 1500  # the last session is written this long after the last change


class SessionFiles(QObject):
    """Opens and saves ``session`` with the view of ``preferences`` (zoom, theme); asks with
    ``panes.pending_bar`` (:attr:`bar`), reports in ``panes.status``.

    ``settingsLoading(settings)`` comes just before settings from a file are loaded: the
    views forget what was typed and show the new values.
    """

    settingsLoading = Signal(object)

    def __init__(self, session, preferences, panes, *, dialogs,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.preferences = preferences
        self.bar = bar = panes.pending_bar
        self.status = panes.status
        self.dialogs = dialogs
        self.session_path: Path | None = None
        self.pending: session_files.Loaded | None = None
        self.restored = False
        #: write the session for the next start (False for a playground.show window)
        self.remember = True
        self._placeholder: str | None = None
        self._autosave_failed = False
        self._autosave = QTimer(self, singleShot=True, interval=AUTOSAVE_MS)
        self._autosave.timeout.connect(self.save_last_session)
        bar.loadRequested.connect(self.load_pending)
        bar.dismissed.connect(self._dismiss_pending)
        preferences.viewChosen.connect(self._autosave.start)
        # bound methods, not lambdas: Qt drops them when this object goes before the session
        session.settingsChanged.connect(self._settings_changed)
        session.targetChanged.connect(self._target_changed)

    # ---- saving -----------------------------------------------------------------------------
    def session_data(self) -> dict:
        """The session as saved: the pending one while it waits for confirmation."""
        prefs = self.preferences
        if self.pending is not None:
            p = self.pending
            data = session_files.make(p.settings, p.function.name, prefs.zoom, prefs.theme)
            data["function"] = p.function.to_dict()
            return data
        target = self.session.target
        return session_files.make(self.session.settings, target.label if target else "",
                                  prefs.zoom, prefs.theme)

    def save_session(self, path: str | os.PathLike | None = None, ask: bool = False):
        """Write the session to ``path`` (or the file it came from; else ask). The path."""
        if path is None:
            path = None if ask else self.session_path
            if path is None:
                path = self.dialogs.ask_save_path("Save session", "Sessions (*.json)",
                                                  "session.json")
                if not path:
                    return None
                if not str(path).lower().endswith(".json"):
                    path = f"{path}.json"
        try:
            written = session_files.write(path, self.session_data())
        except OSError as exc:
            self.session.notice.emit(f"Could not save the session: {exc}")
            return None
        self.session_path = Path(written)
        self.status.showMessage(f"Session saved to {written}", 4000)
        return written

    def save_last_session(self) -> None:
        """Remember the session for the next start (quietly; a failure is said once, until
        a save succeeds again)."""
        self._autosave.stop()
        if not self.remember:
            return
        try:
            session_files.write(session_files.last_session_path(), self.session_data())
        except OSError as exc:
            if not self._autosave_failed:
                self._autosave_failed = True
                self.session.notice.emit(f"The session cannot be kept for the next start: "
                                         f"{exc}")
        else:
            self._autosave_failed = False

    # ---- opening ----------------------------------------------------------------------------
    def open_session_dialog(self) -> None:
        path = self.dialogs.ask_open_path("Open session", "Sessions (*.json);;All files (*)")
        if path:
            self.open_session(path)

    def open_session(self, path: str | os.PathLike,
                     what: str = "Session") -> session_files.Loaded:
        """Open a session file: view and settings at once; a Function file waits for a click.

        A damaged file still opens: what is valid is used, defaults for the rest, and the
        notice says what was wrong.
        """
        path = Path(path)
        loaded = session_files.read(path, tuple(theme.THEMES))
        if loaded.raw is not None and what == "Session":
            self.session_path = path
        if loaded.theme:
            self.preferences.set_theme(loaded.theme, remember=False)
        if loaded.zoom:
            self.preferences.set_zoom(loaded.zoom, remember=False)
        if loaded.problems:
            self.session.notice.emit(
                f"{what} {path.name}: " + "; ".join(loaded.problems)
                + ". The valid parts were used, defaults for the rest.")
        if loaded.function.needs_confirmation:
            self._set_pending(loaded)
        else:
            self._clear_pending()
            self._apply(loaded.settings)
        return loaded

    def restore_last_session(self, offer: bool = True) -> bool:
        """Reopen the session of the last run, if there is one. Without ``offer``, not one
        whose Function waits for a click (a file's: what the command line named failed to
        open, and "Load loop.py" below its banner offered what the user had not asked for)."""
        path = session_files.last_session_path()
        if not path.exists():
            return False
        if not offer and session_files.read(path, tuple(theme.THEMES)).function \
                .needs_confirmation:
            return False
        self.open_session(path, what="The last session")
        self.session_path = None
        self.restored = self.session.target is not None or self.pending is not None
        return self.restored

    def _apply(self, settings) -> None:
        self.settingsLoading.emit(settings)
        self.session.load_settings(settings)

    # ---- a Function that waits for the user's click -----------------------------------------
    def _set_pending(self, loaded: session_files.Loaded) -> None:
        self.pending = loaded
        self.bar.ask(loaded.function)
        if self.session.target is None:
            self._placeholder = session_files.describe(self.session.settings.target).spec
            self.session.set_target(self.session.settings.target)
        else:
            self._placeholder = self.session.target.spec
        self._autosave.start()

    def load_pending(self) -> None:
        """The user chose to run the pending session's Function: open it."""
        loaded = self.pending
        if loaded is None:
            return
        ref = session_files.write_editor_source(loaded.function)
        settings = copy.deepcopy(loaded.settings)
        settings.target = ref.spec
        self._clear_pending()
        self._apply(settings)

    def _dismiss_pending(self) -> None:
        self._clear_pending()
        self._autosave.start()

    def _clear_pending(self) -> None:
        self.pending = None
        self._placeholder = None
        self.bar.hide()

    def _target_changed(self, target) -> None:
        if self.pending is not None and self._placeholder is not None \
                and target.spec != self._placeholder:
            self._clear_pending()  # the user chose another Function meanwhile
        self._autosave.start()

    def _settings_changed(self, _settings) -> None:
        self._autosave.start()
