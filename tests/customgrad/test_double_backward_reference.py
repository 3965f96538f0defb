"""The double_backward sub-check by the verified reference alone
(customgrad.checking.beyond_jacobian.verified_double_backward): where autograd through the
user's backward (gradgradcheck's own analytic Jacobian) agrees with compressed finite
differences of backward, the verdict is passed, with no analytic pass and no full finite
differences; where it does not, gradgradcheck decides. The verdict is gradgradcheck's either
way, and the drawn second-order report (which still runs every pass) keeps its mask."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from customgrad.api import check
from customgrad.checking.beyond_jacobian import double_backward_check, verified_double_backward
from customgrad.checking.jacobian import numerical
from customgrad.checking.second_order import double_backward_report
from customgrad.targets.gallery import ENTRIES
from customgrad.targets.gallery.classic import Exp
from tests.customgrad.test_gallery import make_args
from tests.customgrad.test_second_order import _x
from tests.data import second_order_functions as so

#: the entry whose derivative of backward is wrong (row-major index into a 16 x 32 input)
WRONG = 77


class _SquareWrongAt(so._Derivative):
    """3 x^2, whose own derivative is right (6 x) but at one entry (3 x there)."""

    @staticmethod
    def backward(ctx, gg):
        (x,) = ctx.saved_tensors
        factor = torch.full_like(x, 6.0)
        factor.view(-1)[WRONG] = 3.0
        return gg * factor * x


class CubeWrongAtOneEntry(so.Cube):
    """x^3: first order right everywhere, double backward wrong at one entry of d grad_x / dx."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _SquareWrongAt.apply(x)


def test_the_sub_check_takes_neither_an_analytic_pass_nor_full_differences():
    """Exp 16x32: the verified reference gives the verdict; the second order's analytic
    pass (the same autograd matrix again, through the second order's backward) and full
    finite differences never run."""
    refuse = AssertionError("not for the double_backward sub-check")
    with mock.patch("customgrad.checking.jacobian.comparison.analytic_pass",
                    side_effect=refuse), \
            mock.patch.object(numerical.FiniteDifferences, "run", side_effect=refuse):
        fast = verified_double_backward(Exp, [_x(16, 32)])
    assert fast is not None and fast.passed and "verified" in fast.message


def test_the_sub_check_maps_no_memory_for_a_matrix_it_never_reads():
    """The reference's entries are written into the second order's numerical matrix; the
    sub-check reads only its verdict, so the matrix has no memory (its pages were faulted in
    one by one as the entries were written)."""
    from customgrad.checking.jacobian import workspace

    spaces = []
    real = workspace.allocate

    def kept(*args, **kwargs):
        spaces.append(real(*args, **kwargs))
        return spaces[-1]

    with mock.patch.object(workspace, "allocate", kept):
        fast = verified_double_backward(Exp, [_x(16, 32)])
    assert fast is not None and fast.passed
    (space,) = spaces
    assert space.num_t.is_meta and space.ana is None
    assert tuple(space.num_t.shape) == (2 * 512, 512)  # (x, grad_output) x grad_x
    assert space.reference is not None  # (the entries were written: the reference held)


def test_a_failed_verification_leaves_the_finite_differences_to_gradgradcheck():
    """A backward that detaches x: the reference's verification fails, and gradgradcheck
    takes the finite differences (they were taken twice: once in full for a report nobody
    read)."""
    with mock.patch.object(numerical.FiniteDifferences, "run", autospec=True,
                           side_effect=numerical.FiniteDifferences.run) as full:
        assert verified_double_backward(so.CubeDetached, [_x(4, 5)]) is None
    assert full.call_count == 0
    report = check(so.CubeDetached, _x(4, 5), checks=["double_backward"])
    assert report.checks["double_backward"].status == "failed"


def test_a_double_backward_wrong_at_one_entry_is_caught_with_its_mask():
    x = _x(16, 32)
    expected = torch.autograd.gradgradcheck(CubeWrongAtOneEntry.apply,
                                            (x.clone().requires_grad_(),),
                                            raise_exception=False)
    assert expected is False
    # the reference (autograd through backward, so through the wrong derivative) fails its
    # verification: gradgradcheck decides, and fails it
    assert verified_double_backward(CubeWrongAtOneEntry, [x]) is None
    report = check(CubeWrongAtOneEntry, x, checks=["jacobian", "double_backward"])
    assert report.checks["jacobian"].status == "passed"
    assert report.checks["double_backward"].status == "failed"
    # the drawn second order names that one entry, as before
    second = double_backward_report(CubeWrongAtOneEntry, [x])
    assert not second.passed
    assert [(b.output.name, b.input.name, b.mismatches) for b in second.blocks
            if not b.passed] == [("grad_x", "x", 1)]
    assert (second.worst.row, second.worst.col) == (WRONG, WRONG)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_every_gallery_function_keeps_gradgradchecks_verdict(entry):
    args, pos = make_args(entry)
    args = [a.detach() if i in pos else a for i, a in enumerate(args)]
    fast = verified_double_backward(entry.function, args, positions=pos)
    if fast is None:  # (once_differentiable, complex, or the reference does not hold)
        return
    assert fast.passed is double_backward_check(entry.function, args, positions=pos).passed
