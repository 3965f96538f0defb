"""Matrices written when read: where no one watches them fill (no progress listener,
matrices of the comparison's own), the compressed method's entries are written into the
report's matrices when they are first read. Whatever reads them (the heatmaps, ``--save``,
the notebook, pickling to the window) gets the matrices an eager comparison writes."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch
from torch.autograd import Function

import customgrad
from customgrad.checking.jacobian import compare
from customgrad.checking.jacobian.report import REFERENCE
from customgrad.targets.gallery.seeds import KillHead, LinearFunction


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


class LinearWrongAt(Function):
    """input @ weight.T with d out[2, 1] / d input[2, 3] off by 0.01 (caught under
    compression: one mismatch)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x.mm(w.t())

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        gx = g.mm(w)
        gx[2, 3] += 0.01 * g[2, 1]
        return gx, g.t().mm(x)


CASES = [(LinearFunction, lambda: [_x(8, 16), _x(6, 16, seed=1)]),
         (KillHead, lambda: [_x(8, 16), 2]),
         (LinearWrongAt, lambda: [_x(8, 16), _x(6, 16, seed=1)])]


def _pending(report) -> bool:
    return "fill" in report._cache


def _eager(function, args):
    """The comparison with a progress listener: every entry written as it comes."""
    return compare(function, args, progress=lambda p: None)


def _same_matrices(got, want):
    assert torch.equal(got.analytic, want.analytic)
    assert torch.equal(got.numerical, want.numerical)


@pytest.mark.parametrize("function, args", CASES)
def test_matrices_written_when_read_equal_the_eager_ones(function, args):
    report, eager = compare(function, args()), _eager(function, args())
    assert report.method.name == REFERENCE and report.analytic_path == "direct"
    assert _pending(report) and not _pending(eager)
    # what the comparison found needs no matrix: verdict, blocks, worst entry and its values
    assert report.blocks == eager.blocks and report.worst == eager.worst
    assert report.passed is eager.passed is (function is not LinearWrongAt)
    _same_matrices(report, eager)
    assert not _pending(report)
    assert torch.equal(report.mismatch_mask(), eager.mismatch_mask())


def test_a_passing_reports_mask_writes_nothing():
    report = compare(LinearFunction, [_x(8, 16), _x(6, 16, seed=1)])
    assert not report.mismatch_mask().any() and _pending(report)


@pytest.mark.parametrize("copy", ["pickle", "replace", "dataclasses.replace"])
def test_copies_of_a_report_read_the_written_matrices(copy):
    args = [_x(8, 16), _x(6, 16, seed=1)]
    report, eager = compare(LinearFunction, args), _eager(LinearFunction, args)
    if copy == "replace":
        other = report.replace(label="Linear")
        assert _pending(other)  # still put off, for both
    elif copy == "dataclasses.replace":
        other = dataclasses.replace(report, label="Linear")
    else:
        other = pickle.loads(pickle.dumps(report))
        assert "fill" not in other._cache
    _same_matrices(other, eager)
    _same_matrices(report, eager)


def test_check_keeps_the_matrices_put_off_and_its_heatmaps_read_them():
    args = [_x(8, 16), _x(6, 16, seed=1)]
    report = customgrad.check(LinearFunction, *args, checks=["jacobian"])
    assert _pending(report) and report.label is not None
    overview = report.overview(4)
    eager = _eager(LinearFunction, args)
    _same_matrices(report, eager)
    torch.testing.assert_close(overview.numerical, eager.overview(4).numerical, rtol=0, atol=0)


@pytest.mark.parametrize("function, args", CASES)
def test_matrices_not_kept_are_never_written(function, args):
    report = compare(function, args(), keep_matrices=False)
    eager = _eager(function, args())
    assert report.analytic is None and report.numerical is None and not _pending(report)
    assert report.blocks == eager.blocks and report.worst == eager.worst


def test_a_cancel_after_the_comparison_cannot_reach_the_written_matrices():
    """The deferred write never asks should_stop (it runs when the report is read)."""
    stop = [False]
    args = [_x(8, 16), _x(6, 16, seed=1)]
    report = compare(LinearFunction, args, should_stop=lambda: stop[0])
    stop[0] = True
    _same_matrices(report, _eager(LinearFunction, args))
