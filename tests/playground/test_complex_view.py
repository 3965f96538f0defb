"""Complex Functions in the window: the form offers complex dtypes, a complex block is labelled
with its parts, and hovering over an entry of a complex input gives the element whole (its
real- and imaginary-part entries as one complex number, as gradcheck compares it)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import customgrad
from customgrad.checking.jacobian import Axis
from playground.views.jacobian import words
from playground.views.jacobian.contents import Shown
from playground.views.jacobian.geometry import block_label
from tests.data import complex_functions as cf


def test_a_complex_block_is_labelled_with_its_parts():
    assert block_label(Axis("z", 0, (3, 4), 0, 2)) == "z [3x4] re, im"
    assert block_label(Axis("x", 0, (3, 4), 0)) == "x [3x4]"


def test_complex_numbers_read_with_their_sign():
    assert words.complex_number(complex(1.5, 0.25)) == "1.5+0.25i"
    assert words.complex_number(complex(-2, -1)) == "-2−1i"
    assert words.complex_entry(None, None) == ""


def test_hovering_over_a_complex_input_gives_both_parts():
    report = customgrad.check(cf.AbsSquaredConj, torch.tensor([[1 + 2j, 3 - 1j]],
                                                               dtype=torch.complex128))
    shown = Shown()
    shown.report = report
    shown.analytic, shown.numerical = report.analytic.numpy(), report.numerical.numpy()
    shown.mask = report.mismatch_mask().numpy()
    # row 0 (output[0, 0]), column 1: z.imag[0, 0]; d|z|^2 = 2z, the bug gives 2 conj(z)
    text = shown.hover_text(report.outputs, report.inputs, 0, 1)
    assert text.startswith("output[0, 0]  /  z.imag[0, 0]")
    assert "as gradcheck: analytic 2−4i, numerical 2+4i" in text
    # the same element's real-part column says the same
    assert "analytic 2−4i" in shown.hover_text(report.outputs, report.inputs, 0, 0)
    # z[0, 1] = 3 - 1j: 2z = 6-2i, the bug's 2 conj(z) = 6+2i
    text = shown.hover_text(report.outputs, report.inputs, 1, 2)
    assert text.startswith("output[0, 1]  /  z.real[0, 1]")
    assert "as gradcheck: analytic 6+2i, numerical 6−2i" in text


def test_a_real_input_has_no_complex_reading():
    shown = Shown()
    shown.analytic = shown.numerical = np.eye(2)
    axes = [Axis("x", 0, (2,), 0)]
    assert "as gradcheck" not in shown.hover_text(axes, axes, 0, 0)


def test_the_form_offers_complex_dtypes(qtbot):
    pytest.importorskip("pytestqt")
    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        offered = [form.dtype.itemText(i) for i in range(form.dtype.count())]
        assert offered == ["float32", "float64", "complex64", "complex128"]
        form.dtype.setCurrentText("complex128")
        assert session.settings.dtype == "complex128"
    finally:
        session.shutdown(wait=0.5)


def test_the_form_shows_a_complex_gallery_entrys_dtype(qtbot):
    """complex_mul draws complex64 inputs at float32's precision: the box said float32."""
    pytest.importorskip("pytestqt")
    from playground.state.session import Session
    from playground.views.form import InputsForm

    session = Session()
    try:
        form = InputsForm(session)
        qtbot.addWidget(form)
        with qtbot.waitSignal(session.problemReady, timeout=20_000) as ready:
            session.set_target("complex_mul")
        assert session.settings.dtype == "float32" and form.dtype.currentText() == "complex64"
        assert str(ready.args[0].dtype) == "torch.complex64"
        with qtbot.waitSignal(session.problemReady, timeout=20_000) as ready:
            form.dtype.setCurrentText("float64")  # the precision: complex128 drawn
        assert form.dtype.currentText() == "complex128"
        assert str(ready.args[0].dtype) == "torch.complex128"
        with qtbot.waitSignal(session.problemReady, timeout=20_000):
            session.set_target("killhead")
        assert form.dtype.currentText() == "float64"
    finally:
        session.shutdown(wait=0.5)


def test_the_step_tab_works_a_complex_update_through_whole():
    """It cast complex gradients to real (a ComplexWarning): the imaginary parts were lost."""
    from playground.views import explainer

    before = torch.tensor([1 + 1j, 2 - 2j], dtype=torch.complex64)
    grad = torch.tensor([0.5 - 0.25j, 0.0 + 0j], dtype=torch.complex64)
    rows = explainer.example_entries(before, grad, before - grad, count=1)
    assert rows == [((0,), 1 + 1j, 0.5 - 0.25j, 0.5 + 1.25j)]
    assert explainer._num(0.5 - 0.25j) == "(0.5−0.25i)"
    assert explainer.as_matrix(explainer._array(grad)).tolist() == [[0.5, -0.25, 0.0, 0.0]]
