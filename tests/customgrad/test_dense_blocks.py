"""A matrix product's reference held as its products over row colours (``entries.ByColour``):
the same entries, colours, verification sums and reports as the triples it replaces, and a
backward wrong at one entry (inside its pattern, outside it, NaN, infinite) gets the
row-by-row report and gradcheck's verdict."""

from __future__ import annotations

import warnings
from unittest import mock

import pytest
import torch

from customgrad.checking.jacobian import analytic, colouring, compare, exact
from customgrad.checking.jacobian.entries import ByColour, Entries
from customgrad.checking.jacobian.report import REFERENCE
from customgrad.targets.gallery.seeds import LinearFunction
from tests.customgrad.test_compressed_adversarial import Linear


def _x(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def _args():
    return [_x(16, 32), _x(16, 32, seed=1)]


def _gradcheck(function, args) -> bool:
    leaves = [a.detach().clone().requires_grad_() for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.autograd.gradcheck(function.apply, tuple(leaves), raise_exception=False,
                                        check_undefined_grad=False)


def _captured(function, args):
    """The report, and the reference's entries as the analytic pass received them."""
    seen = []
    real = analytic.compressed_pass

    def spy(space, *a):
        seen.append(space.reference)
        return real(space, *a)
    with mock.patch.object(analytic, "compressed_pass", spy):
        report = compare(function, args)
    return report, seen[0]


def _same_report(got, want):
    """Bit for bit: the matrices, every block's statistics, the worst entry (and its values),
    the mask and the method."""
    assert repr(got.blocks) == repr(want.blocks) and repr(got.worst) == repr(want.worst)
    for a, b in ((got.analytic, want.analytic), (got.numerical, want.numerical)):
        assert torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)  # (bit for bit, NaN too)
    assert torch.equal(got.mismatch_mask(), want.mismatch_mask())
    assert got.method == want.method and got.passed is want.passed


def _off_at(block, at, value, name):
    """Linear with ``value`` added to the gradient of the input ``block`` (0: x, 1: w) at
    ``at`` wherever out[5, 7] (for x: out[3, 2]) is seeded (where its seed is 0, so is what
    is added: NaN * 0 would be NaN everywhere)."""
    seed = (3, 2) if block == 0 else (5, 7)

    def backward(ctx, g):
        grads = list(Linear.backward(ctx, g))
        s = g[seed]
        grads[block][at] = grads[block][at] + torch.where(s != 0, value * s, 0 * s)
        return tuple(grads)
    return type(name, (Linear,), {"backward": staticmethod(backward),
                                  "__doc__": f"{value} on {'xw'[block]}{list(at)} from "
                                             f"out{list(seed)}"})


WrongInWeight = _off_at(1, (7, 11), 0.01, "WrongInWeight")  # (w[7] feeds out[:, 7])
StrayInWeight = _off_at(1, (6, 11), 0.01, "StrayInWeight")  # (no entry there)
NanAtOneEntry = _off_at(0, (3, 5), float("nan"), "NanAtOneEntry")
InfAtOneEntry = _off_at(0, (3, 5), float("inf"), "InfAtOneEntry")


def test_a_matrix_products_reference_is_held_by_colour_with_the_triples_report():
    """LinearFunction's reference is kept as its products over the crossings' row colours,
    and its report is the one of the triples it replaces, bit for bit (a right backward and
    one wrong at one entry); the triples it gives are those, in their order."""
    for function in (LinearFunction, WrongInWeight):
        report, found = _captured(function, _args())
        assert isinstance(found, ByColour) and report.method.name == REFERENCE
        with mock.patch.object(exact, "DENSE_WITHIN", 0):
            as_triples, triples = _captured(function, _args())
        assert type(triples) is Entries
        _same_report(report, as_triples)
        for a, b in zip(found.triples(), triples.triples()):
            assert torch.equal(a, b)
    assert report.mismatches == 1


def test_the_crossings_over_classes_of_columns_colour_the_rows_as_over_every_column():
    """Columns reached alike by both groupings have the same crossing rows: the colours over
    the classes are scipy's colours over every column's crossings."""
    seen = []
    real = exact.Traced._crossed

    def spy(self, reach, size, pacer):
        found = real(self, reach, size, pacer)
        across = self._reach_across(size, pacer)
        rows_x, cols_x = exact._crossings(reach, across, size, self.space.rows)
        seen.append((found, colouring.group_columns(cols_x, rows_x, self.space.rows),
                     len(rows_x)))
        return found
    with mock.patch.object(exact.Traced, "_crossed", spy):
        compare(LinearFunction, _args())
    found, colour, crossings = seen[0]
    assert torch.equal(found.colour, colour)
    assert found.owners.shape[1] == 32  # (16 rows of x, 16 of w)
    assert int(found.values.count_nonzero()) == crossings == 256 * 64


def test_the_sums_by_colour_are_the_triples_sums_bit_for_bit():
    """The verification's sums over the products (every place, a 0 adding nothing) are the
    sums over the triples, bit for bit, with zeros, negative entries and places no row owns."""
    _, found = _captured(LinearFunction, _args())
    values = found.values.clone()
    values[:, ::5] = 0.0  # (owned places whose entry is 0)
    values[1] *= -1
    held = ByColour(values, found.owners, found.class_of, found.colour)
    weights = torch.rand((2, values.shape[1]), dtype=torch.float64,
                         generator=torch.Generator().manual_seed(4)).sub_(0.5)
    assert torch.equal(held.sums(weights, 256), Entries(*held.triples()).sums(weights, 256))
    rows = held.triples()[0]
    assert held.most_in_a_row(256) <= int(torch.bincount(rows).max())


def test_every_column_at_once_first_skips_the_column_colouring_where_it_holds():
    """Where no colouring can have fewer than 16 colours (a row holds 64 entries), the sums
    along every column are taken before the columns are coloured, and hold: no colouring."""
    calls = []
    real = exact.group_columns

    def counted(rows, cols, n):
        calls.append(n)
        return real(rows, cols, n)
    with mock.patch.object(exact, "group_columns", counted):
        report = compare(LinearFunction, _args())
    assert report.passed and (report.method.colours, report.method.forwards) == (1, 4)
    assert 1024 not in calls  # (the crossings' colouring, over 256 rows, only)


@pytest.mark.parametrize("function, mismatches", [
    (WrongInWeight, 1), (StrayInWeight, 1), (NanAtOneEntry, 1), (InfAtOneEntry, 1)])
def test_a_backward_wrong_at_one_entry_gets_the_row_by_row_report(function, mismatches):
    """Inside the pattern (the entry compared), outside it, NaN or infinite (the products
    prove nothing: every row): the mask, blocks and worst entry of every row computed, and
    gradcheck's verdict (taken where the entry is finite: gradcheck's own rows are the
    row-by-row report's, which the parity tests hold)."""
    report = compare(function, _args())
    with mock.patch.object(analytic, "compressed_pass", lambda *a: False):
        rows = compare(function, _args())
    _same_report(report, rows)
    assert report.mismatches == mismatches and not report.passed
    assert report.method.name == REFERENCE
    if function in (WrongInWeight, StrayInWeight):
        assert not _gradcheck(function, _args())


def test_the_worst_entry_read_before_the_matrices_are_written():
    """A failing report's worst entry (its values) comes from the entries held by colour,
    before the matrices are written; the same once they are."""
    report = compare(WrongInWeight, _args())
    assert report.worst.analytic != report.worst.numerical
    assert report.analytic[report.worst.row, report.worst.col] == report.worst.analytic
    assert report.numerical[report.worst.row, report.worst.col] == report.worst.numerical
