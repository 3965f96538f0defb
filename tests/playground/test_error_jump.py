"""An error's ``file:line`` in the window: the code pane marks a line only of the file it shows."""

from customgrad.errors import FunctionError

TIMEOUT = 60_000


def test_a_line_of_another_file_is_not_marked_in_the_code_shown(qtbot, window, tmp_path):
    """A syntax error in the file the command line named (KillHead opened instead): its link
    marked line 12 of KillHead's code, which the student took for their line 12."""
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target("killhead")
    line = window.code.first_line + 2
    other = tmp_path / "syntax.py"
    window.session.errorRaised.emit(FunctionError("Syntax error", str(other), line))
    assert window.code.highlighted_line is None
    window.errors.jump.emit(str(other), line)
    assert window.code.highlighted_line is None
    window.errors.jump.emit(window.session.target.file, line)
    assert window.code.highlighted_line == line


def test_in_presentation_the_link_shows_the_code_it_points_at(qtbot, window):
    """trial3 T13: presentation hides the side panel, and the link did nothing one could see."""
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target("killhead")
    window.show()
    qtbot.waitExposed(window)
    window.classroom.presentation.set_presentation(True, fullscreen=False)
    assert not window.code.isVisible()
    line = window.code.first_line + 2
    window.errors.jump.emit(window.session.target.file, line)
    assert window.code.isVisible() and window.code.highlighted_line == line
    window.classroom.presentation.set_presentation(False, fullscreen=False)
