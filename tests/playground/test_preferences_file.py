"""The preferences' file is only ever read as plain values: a pickle in it never runs, a damaged
value gives its default and a note, a failed write is said and leaves no temporary file."""

from __future__ import annotations

import binascii
import json
import os

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QByteArray, QSettings

from playground.main_window import MainWindow
from playground.state import paths
from playground.state.preferences import DEFAULT_HIDDEN, Preferences
from playground.state.session import Session
from playground.state.stored import PreferenceStore

#: the app started as a process with damaged or unwritable files
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def home(tmp_path, configure):
    folder = tmp_path / "home"
    configure(home=folder, no_restore=True)
    return folder


class Planted:
    """What an attacker pickles: unpickling it creates ``marker`` (open(marker, "w"))."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def plant_ini(tmp_path, **values):
    """classroom.ini as QSettings writes it (writing never unpickles), and the marker file."""
    marker = tmp_path / "code-ran"
    ini = QSettings(str(paths.config_dir() / "classroom.ini"), QSettings.Format.IniFormat)
    for key, value in values.items():
        ini.setValue(key.replace("__", "/"), Planted(marker) if value is Planted else value)
    ini.sync()
    del ini
    return marker


def start_window(qtbot):
    win = MainWindow(Session(), restore_prefs=True)
    qtbot.addWidget(win)
    win.show()
    return win


def test_a_pickle_in_the_settings_file_never_runs(qtbot, tmp_path):
    marker = plant_ini(tmp_path, view__zoom=Planted, view__theme="dark",
                       presentation__hidden="loss,code")
    assert "PyObjectWrapper" in (paths.config_dir() / "classroom.ini").read_text()
    win = start_window(qtbot)
    assert not marker.exists()
    # the earlier version's plain values still apply; the pickled one is left out
    prefs = win.preferences
    assert (prefs.zoom, prefs.theme) == (100, "dark")
    assert prefs.hidden_panels == {"loss", "code"}
    win.preferences.set_zoom(125)
    assert not marker.exists()
    saved = json.loads((paths.config_dir() / "preferences.json").read_text())
    assert saved["view/zoom"] == 125 and saved["view/theme"] == "dark"


def test_values_qt_would_decode_are_refused(qtbot):
    """``hidden=@Rect(...)`` once ended every start in a traceback (a QRect is no list)."""
    ini = paths.config_dir() / "classroom.ini"
    ini.write_text("[presentation]\nhidden=@Rect(0 0 10 10)\n[view]\nzoom=@Size(3 4)\n"
                   "theme=@Variant(\\0\\0\\0\\x7f garbage)\n")
    win = start_window(qtbot)
    prefs = win.preferences
    assert prefs.hidden_panels == set(DEFAULT_HIDDEN)
    assert (prefs.zoom, prefs.theme) == (100, "light")


@pytest.mark.parametrize("value", [
    {"view/zoom": "huge", "view/theme": 5, "presentation/hidden": "picker",
     "view/jacobian_details": 7, "layout/main": "not base64!"},
    {"view/zoom": 1e308, "view/theme": "neon", "presentation/hidden": 3,
     "view/jacobian_details": "yes", "layout/main": 12},
])
def test_damaged_values_give_defaults_and_a_note(qtbot, value):
    (paths.config_dir() / "preferences.json").write_text(json.dumps(value))
    win = start_window(qtbot)
    prefs = win.preferences
    assert (prefs.zoom, prefs.theme) == (100, "light")
    assert not win.jacobian.details_shown()
    text = win.notice.text()
    assert "Preferences: " in text and "Defaults were used" in text
    for key in ("view/zoom", "view/theme", "view/jacobian_details", "layout/main"):
        assert key in text, key


@pytest.mark.parametrize("text", ["{ not json", "[" * 100_000 + "]" * 100_000,
                                  '{"view/zoom": ' + "9" * 5000 + "}", "[1, 2]",
                                  '{"view/zoom": {"a": 1}}', "\udcff"])
def test_a_damaged_file_still_starts(qtbot, text):
    (paths.config_dir() / "preferences.json").write_text(text, errors="surrogateescape")
    win = start_window(qtbot)
    assert win.preferences.zoom == 100
    assert "preferences.json" in win.notice.text()


def test_layout_reads_back_on_python_3_10(tmp_path, monkeypatch):
    """binascii.a2b_base64 takes strict_mode from Python 3.11 on: on 3.10, which the package
    supports, reading a remembered layout raised TypeError at every start after the first."""
    real = binascii.a2b_base64
    monkeypatch.setattr(binascii, "a2b_base64", lambda data, /: real(data))  # 3.10's signature
    state = QByteArray(b"\x00\xff\x01splitter")
    Preferences(PreferenceStore(tmp_path / "p.json")).remember_layout({"main": state}, False)
    again = Preferences(PreferenceStore(tmp_path / "p.json"))
    assert again.splitter_state("main") == state and again.problems == []


def test_layout_round_trips_as_text(tmp_path):
    store = PreferenceStore(tmp_path / "p.json")
    prefs = Preferences(store)
    state = QByteArray(b"\x00\xff\x01splitter")
    prefs.remember_layout({"main": state}, area_user_set=True)
    again = Preferences(PreferenceStore(tmp_path / "p.json"))
    assert again.splitter_state("main") == state
    assert again.area_user_set() and again.problems == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_failed_write_is_said_and_leaves_nothing(qtbot, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    prefs = Preferences(PreferenceStore(folder / "p.json"))
    folder.chmod(0o500)
    try:
        with qtbot.waitSignal(prefs.saveFailed) as blocker:
            prefs.set_zoom(150)
    finally:
        folder.chmod(0o700)
    assert "could not be saved" in blocker.args[0]
    assert list(folder.iterdir()) == []


def test_a_failed_write_cleans_its_temporary_file(qtbot, tmp_path, monkeypatch):
    """A full disk: the temporary file was begun, the rename never came."""
    prefs = Preferences(PreferenceStore(tmp_path / "p.json"))

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with qtbot.waitSignal(prefs.saveFailed) as blocker:
        prefs.set_theme("dark")
    assert "No space left on device" in blocker.args[0]
    assert list(tmp_path.iterdir()) == []


def test_a_failed_autosave_is_said_once_and_leaves_no_temporary_file(qtbot, monkeypatch):
    """A full disk: the last session's autosave failed silently and left a .tmp file."""
    from playground.state import session_files

    win = start_window(qtbot)
    notices = []
    win.session.notice.connect(notices.append)

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    win.classroom.sessions.save_last_session()
    win.classroom.sessions.save_last_session()
    said = [n for n in notices if "cannot be kept for the next start" in n]
    assert len(said) == 1 and "No space left on device" in said[0]
    folder = session_files.last_session_path().parent
    assert not list(folder.glob("*.tmp"))
    monkeypatch.undo()
    win.classroom.sessions.save_last_session()
    assert session_files.last_session_path().exists()


def test_a_home_that_cannot_be_written_still_starts(qtbot, tmp_path, configure):
    """A read-only fresh home: a raw traceback at every start (its folders could not be
    made). Here the home lies under a file, which no one can make folders in, root either."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    configure(home=blocker / "home")
    win = start_window(qtbot)
    assert win.preferences.zoom == 100
    with qtbot.waitSignal(win.preferences.saveFailed) as failed:
        win.preferences.set_zoom(150)
    assert "could not be saved" in failed.args[0]


def test_apply_on_a_full_disk_says_so_and_leaves_no_temporary_file(qtbot, monkeypatch):
    """Apply raised OSError into Qt (a traceback on stderr, nothing in the window)."""
    win = start_window(qtbot)
    editor = win.editor

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    assert editor.apply() is None
    assert "could not be saved" in editor.status.text()
    assert "No space left on device" in editor.status.text()
    assert not list(editor.path.parent.glob("*.tmp"))
