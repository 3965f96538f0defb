"""The app started with a target that does not open (a wrong path, a syntax error, a
misspelled gallery name): the last session's Function opens
instead, else KillHead, and the banner names the problem and what opened (the window was
left empty: no Function, no inputs, no code)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from customgrad.problems.settings import Settings
from playground import app
from playground.state import session_files
from playground.state.session import Session

DATA = Path(__file__).resolve().parents[1] / "data"
TIMEOUT = 20_000


@pytest.fixture
def home(tmp_path, configure):
    """A home of its own: no last session unless the test writes one."""
    configure(home=tmp_path / "home")
    return tmp_path


def started(qtbot, argv):
    """The window as the app starts it for ``argv``, its session still held."""
    session = Session(held=True)
    window, start = app.window_for(session, app._parser().parse_args(argv))
    qtbot.addWidget(window)
    assert start()
    return window


def released(qtbot, window):
    """The session's work let go; the window once its Function is built and checked."""
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.release()
    return window


def banner(window) -> str | None:
    return None if window.errors.isHidden() else window.errors.text()


@pytest.mark.parametrize("which, said", [
    ("nope", "File not found"), ("syntax", "Syntax error in broken_syntax.py, line 5"),
    ("killhed", "Did you mean killhead?")])
def test_a_target_that_fails_leaves_killhead_and_the_banner_through_its_build(
        qtbot, home, which, said):
    broken = home / "broken_syntax.py"
    shutil.copy(DATA / "broken_syntax.py.txt", broken)
    target = {"nope": str(home / "nope.py"), "syntax": str(broken), "killhed": "killhed"}
    window = started(qtbot, [target[which]])
    assert window.session.target.spec == "killhead"
    assert said in banner(window) and "KillHead opens instead." in banner(window)
    released(qtbot, window)  # the build of KillHead clears a build's error, not this one
    assert window.session.problem is not None
    assert said in (banner(window) or "")
    assert window.session.settings.target == "killhead"
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target("exp")  # another Function opens: the news is old
    assert banner(window) is None
    window.session.shutdown(wait=0.5)


def test_the_last_session_opens_instead_where_there_is_one(qtbot, home):
    session_files.write(session_files.last_session_path(),
                        session_files.make(Settings(target="linear_bug", seed=7)))
    window = started(qtbot, [str(home / "nope.py")])
    assert window.session.target.spec == "linear_bug"
    assert window.session.settings.seed == 7
    label = window.session.target.label
    assert f"{label} opens instead." in banner(window)
    released(qtbot, window)
    assert "File not found" in (banner(window) or "")
    window.session.shutdown(wait=0.5)


def test_a_failed_target_offers_no_other_file(qtbot, home):
    """The command line named a file with a syntax error; the last session's Function was
    another file's: its offer ("This session uses a Function from a file: loop.py — Load
    loop.py") came below the syntax error's banner, two banners, and not what was asked for.
    KillHead opens, one banner says so."""
    other = home / "loop.py"
    other.write_text("import torch\n", encoding="utf-8")
    session_files.write(session_files.last_session_path(),
                        session_files.make(Settings(target=f"{other}:Loop")))
    broken = home / "broken_syntax.py"
    shutil.copy(DATA / "broken_syntax.py.txt", broken)
    window = started(qtbot, [str(broken)])
    sessions = window.classroom.sessions
    assert sessions.pending is None and sessions.bar.isHidden()
    assert window.session.target.spec == "killhead"
    assert "Syntax error in broken_syntax.py" in banner(window)
    assert "KillHead opens instead." in banner(window)
    window.session.shutdown(wait=0.5)


def test_a_target_that_opens_says_nothing(qtbot, home):
    window = released(qtbot, started(qtbot, ["linear_bug"]))
    assert window.session.target.spec == "linear_bug" and banner(window) is None
    window.session.shutdown(wait=0.5)


@pytest.mark.parametrize("argv", [["killhead", "--screenshot", "shot.png"], ["killhead"]],
                         ids=["screenshot", "no-restore"])
def test_a_start_that_restores_no_preferences_still_applies_the_light_theme(qtbot, home, argv):
    """Where preferences are not restored (a screenshot; AUTOGRAD_PLAYGROUND_NO_RESTORE, set
    for the tests), the window has the light theme's colours, as after F2 back to it, not the
    style's own; and the screenshot's theme is not remembered."""
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    from playground.views import theme

    qapp = QApplication.instance()
    before = qapp.palette()
    qapp.setPalette(qapp.style().standardPalette())  # Fusion's, as at a start
    try:
        window = started(qtbot, argv)
        role = QPalette.ColorRole.Highlight
        assert qapp.palette().color(role) == theme.palette("light").color(role)
        assert window.preferences.store.value("view/theme", None) is None
    finally:
        qapp.setPalette(before)


def test_the_command_lines_zoom_and_theme_are_the_first_paints(qtbot, home):
    """--zoom 100 showed the remembered zoom until torch had arrived (the window's start),
    then jumped."""
    session = Session(held=True)
    window, start = app.window_for(session, app._parser().parse_args(
        ["--zoom", "125", "--theme", "high-contrast"]))
    qtbot.addWidget(window)
    assert (window.preferences.zoom, window.preferences.theme) == (125, "high-contrast")
    assert start()
    assert (window.preferences.zoom, window.preferences.theme) == (125, "high-contrast")
