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
