"""One shape grammar, ``N(xN)*``, in every front end: the CLI's --shape, the app's form and
session files all go through customgrad.function.inputs.parse_shape, and a bad shape is the field's
fault (a SpecError naming it), never the Function's."""

from __future__ import annotations

import json

import pytest

from customgrad import cli
from customgrad.errors import SpecError
from customgrad.function.inputs import TensorSpec, parse_shape
from customgrad.problems.problem import build
from playground.state import session_files

BAD = ["3x", "x3", "3xx8", "0x3", "-3", "", "3,8", "3.5x2", "abc", "3 8"]


def message(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_shape(text, "input")
    return str(info.value)


@pytest.mark.parametrize("text", BAD)
def test_cli_blames_the_field_not_the_function(capsys, text):
    code = cli.main(["check", "killhead", "--shape", f"input={text}"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    flat = " ".join(err.split())
    assert flat == f"customgrad: {message(text)}"
    assert "KillHead" not in flat and "raised" not in flat


@pytest.mark.parametrize("text", ["3X8", " 3 x 8 ", "3 X8"])
def test_cli_takes_a_capital_x_and_spaces(capsys, text):
    assert cli.main(["check", "killhead", "--shape", f"input={text}", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["blocks"][0]["input_shape"] == [3, 8]


def test_the_form_uses_the_same_grammar(qtbot):
    pytest.importorskip("pytestqt")
    from PySide6.QtCore import Qt

    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        form.show_specs([TensorSpec("input")])
        field = form.fields["input"]
        for text in BAD:
            field.edit.setText("")
            qtbot.keyClicks(field.edit, text or "3")
            if not text:
                qtbot.keyClick(field.edit, Qt.Key.Key_Backspace)
            assert not field.valid, text
            assert field.reason.text() == message(text)
        field.edit.setText("")
        qtbot.keyClicks(field.edit, "4X5")
        assert field.valid
        assert "3,8" not in field.edit.toolTip()
    finally:
        session.shutdown(wait=0.5)


def test_the_shape_s_reason_spans_its_row(qtbot):
    """Why a shape is wrong reads under the whole row (shape, init, trained), not wrapped a
    word a line in the shape's own narrow column, pushing "trained" out of the pane."""
    pytest.importorskip("pytestqt")
    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        form.resize(360, 400)
        form.show_specs([TensorSpec("input")])
        with qtbot.waitExposed(form):
            form.show()
        field, trained = form.fields["input"], form.fields["input.trained"]
        width = trained.width()
        qtbot.keyClicks(field.edit, "x")  # "3x8x": a dimension missing after the last x
        qtbot.waitUntil(lambda: not field.reason.isHidden())
        qtbot.wait(50)
        row = trained.parentWidget()
        assert field.reason.parentWidget() is row
        assert field.reason.width() >= row.width() - 2
        assert trained.width() == width and trained.width() >= trained.sizeHint().width()
    finally:
        session.shutdown(wait=0.5)


def write_session(tmp_path, shape) -> session_files.Loaded:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": session_files.FORMAT, "version": 1,
                                "settings": {"target": "killhead", "shapes": {"input": shape}}}))
    return session_files.read(path)


@pytest.mark.parametrize(("old", "now"), [
    ("3,8", "3x8"), ("[3, 8]", "3x8"), ("(3, 8)", "3x8"), ("3*8", "3x8"), ("3×8", "3x8"),
    ("3 8", "3x8"), ("3x8", "3x8"), ("3 X 8", "3 X 8"), ([3, 8], "3x8"),
])
def test_old_sessions_still_open_with_their_shapes(tmp_path, old, now):
    """Older versions took 3,8 and the like: their sessions keep the shape, written 3x8."""
    loaded = write_session(tmp_path, old)
    assert loaded.settings.shapes == {"input": now}
    assert not loaded.problems
    assert build(loaded.settings).args[0].shape == (3, 8)


@pytest.mark.parametrize("text", ["3x", "x3", "3xx8", "0x3", "3,,8"])
def test_a_bad_shape_in_a_session_is_kept_and_refused_at_its_field(tmp_path, text):
    loaded = write_session(tmp_path, text)
    assert loaded.settings.shapes == {"input": text}  # what the user had is not thrown away
    with pytest.raises(SpecError) as info:
        build(loaded.settings)
    assert info.value.field == "input"
    assert str(info.value).startswith("input: ")


def test_a_memory_stop_writes_the_shapes_as_the_app_does():
    """The memory stop's message said "for x (3, 8), w (8, 8)" where the form, the block
    labels and every other message write "3x8": one formatter (format_shape) for all; a
    constant (no shape) is not listed."""
    from customgrad.function.inputs import ConstSpec, format_shape
    from playground.workers.jobs import shapes_named

    specs = [TensorSpec("x", (3, 8)), TensorSpec("w", (8, 8)), TensorSpec("s", ()),
             ConstSpec("scale", 2.0)]
    said = shapes_named(specs)
    assert said == "x 3x8, w 8x8, s scalar"
    assert said.split(", ")[0] == f"x {format_shape((3, 8))}"  # as the form's field says it
    assert "(" not in said
