"""Offscreen Qt for every test, set before any QApplication exists; user folders in a temp dir;
the fixtures several test files share (``home``, ``window``)."""

import dataclasses
import os
import tempfile

import pytest

from customgrad.errors import serialise_ast_parse

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_NO_RESTORE", "1")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_HOME", tempfile.mkdtemp(prefix="playground-test-"))


@pytest.fixture
def home(tmp_path, configure):
    """The test's own config folder (preferences, autosave, the editor's files)."""
    path = tmp_path / "home"
    configure(home=path)
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
# the tests run the app's windows and workers' threads in this process, as the app's entry
# point does (playground.app.application): parses one at a time (customgrad.errors)
serialise_ast_parse()


@pytest.fixture
def configure():
    """``configure(loop="thread", home=path)``: customgrad.config's fields changed for this
    test (the environment is read once, at first use), put back after it."""
    from customgrad import config

    before = config.current()
    yield lambda **changes: config.use(dataclasses.replace(config.current(), **changes))
    config.use(before)
