"""The banner's numbers in words: a NaN difference is written NaN with how many entries
(trial2's F-nan-cli: "inf" before), an infinite one still inf."""

from __future__ import annotations

import torch

import customgrad
from playground.views.jacobian import words
from tests.customgrad.test_cli_trial2 import _HalfNaN, _OneInf


def test_the_app_writes_a_nan_difference_as_nan_with_its_count():
    report = customgrad.check(_HalfNaN, torch.rand(3, 4, dtype=torch.float64))
    assert "max abs error NaN (in 48 entries)   ·   max rel error NaN   ·" in (
        words.verdict(report).details)


def test_the_app_still_writes_an_infinite_difference_inf():
    report = customgrad.check(_OneInf, torch.rand(3, 4, dtype=torch.float64))
    assert "max abs error inf   ·   max rel error inf   ·" in words.verdict(report).details


def test_a_pass_names_an_input_backward_returns_none_for(tmp_path):
    """trial3 R1: a forgotten gradient returned as None passed, the line saying nothing."""
    from tests.customgrad.test_returns_none import _function

    _, fn = _function(tmp_path)
    report = customgrad.check(fn, *(torch.rand(3, 4, dtype=torch.float64) for _ in "xw"))
    said = words.verdict(report)
    assert said.state == "passed"
    assert said.head == "✔ PASSED: all 144 Jacobian entries within tolerance — w's gradient is None"
    assert said.details.startswith("w is not checked: backward returns None for it. Right for "
                                   "a buffer (a mask, a filter): untick its grad box")


def test_a_pass_too_long_for_its_line_keeps_what_was_not_checked(qtbot):
    from PySide6.QtGui import QFont

    from playground.views.jacobian.view import JacobianView

    view = JacobianView()
    qtbot.addWidget(view)
    font = QFont(view.font())
    font.setPointSizeF(16.5)
    view.apply_font(font)
    view.resize(700, 500)
    view.show()
    qtbot.waitExposed(view)
    text = "✔ PASSED: all 144 Jacobian entries within tolerance — w's gradient is None"
    view.banner.set_text("passed", text)
    shown, _ = view.banner.verdict_label.shown()
    assert shown in ("✔ PASSED: all 144 — w's gradient is None", "✔ PASSED — w's gradient is None")
