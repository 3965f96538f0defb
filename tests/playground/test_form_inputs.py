"""The inputs form: the per-input *grad* choice (the inputs the Jacobian check differentiates),
forward's defaults as constants, tuple constants."""

from __future__ import annotations

import pytest

from customgrad.function.inputs import TensorSpec


def test_grad_unchecked_makes_an_input_a_constant_of_the_check(qtbot):
    pytest.importorskip("pytestqt")
    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        form.show_specs([TensorSpec("x"), TensorSpec("taps")])
        grad = form.fields["taps.grad"]
        assert grad.isChecked() and form.fields["x.grad"].isChecked()
        grad.setChecked(False)
        assert session.settings.differentiate == {"taps": False}
        grad.setChecked(True)
        assert session.settings.differentiate == {}
        session.update(differentiate={"x": False})  # a session opened, say
        assert not form.fields["x.grad"].isChecked() and grad.isChecked()
    finally:
        session.shutdown(wait=0.5)


def test_the_choice_is_kept_for_a_function_taking_the_same_input():
    from customgrad.problems.settings import Settings
    from playground.state.target import carried_over

    old = Settings(differentiate={"taps": False, "gone": False})
    new, dropped = carried_over(old, "other", {"x", "taps"}, carry_over=True)
    assert new.differentiate == {"taps": False} and "gone" in dropped


def test_a_constant_defaulting_to_none_takes_any_value(qtbot):
    """forward's ``k=None``: an editable constant labelled as taking any value."""
    pytest.importorskip("pytestqt")
    from customgrad.function.inputs import ConstSpec
    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        form.show_specs([TensorSpec("X"), ConstSpec("dim", 0, (-1,)),
                         ConstSpec("k", None, (None,))])
        labels = [form.rows.itemAt(r, form.rows.ItemRole.LabelRole).widget().text()
                  for r in range(form.rows.rowCount())]
        assert "k (any)" in labels and "dim (int)" in labels
        assert form.fields["k"].edit.text() == "None"
        assert "forward's default: -1" in form.fields["dim"].edit.toolTip()
    finally:
        session.shutdown(wait=0.5)


def test_a_tuple_constant_is_edited_as_a_tuple(qtbot):
    pytest.importorskip("pytestqt")
    from customgrad.function.inputs import ConstSpec
    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        form.show_specs([TensorSpec("x"), ConstSpec("dims", (1,))])
        field = form.fields["dims"]
        assert field.edit.text() == "(1,)"
        assert field.parse("0, 1") == (0, 1) and field.parse("(0,)") == (0,)
    finally:
        session.shutdown(wait=0.5)
