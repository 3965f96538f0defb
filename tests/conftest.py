"""Offscreen Qt for every test, set before any QApplication exists; user folders in a temp dir;
the fixtures several test files share (``home``, ``window``)."""

import os
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_NO_RESTORE", "1")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_HOME", tempfile.mkdtemp(prefix="playground-test-"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The test's own config folder (preferences, autosave, the editor's files)."""
    path = tmp_path / "home"
    monkeypatch.setenv("AUTOGRAD_PLAYGROUND_HOME", str(path))
    return path


@pytest.fixture
def window(qtbot, home):
    """The app's window on a fresh Session, shown at 1400x900 in the test's own ``home``;
    its work (checks, the run, the editor's autosave) stopped after the test. A test file
    that needs more overrides it with a fixture of the same name that takes this one."""
    from playground.main_window import MainWindow
    from playground.state.session import Session

    win = MainWindow(Session())
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    yield win
    win.byof.shutdown()
    win.session.shutdown(wait=0.5)
