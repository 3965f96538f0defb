"""The landscape's grid in batches where forward takes a stack of points (the probe of
:mod:`customgrad.function.batching`), and one point at a time, exactly as before, where it does
not."""

from pathlib import Path

import numpy as np
import pytest
import torch

from customgrad.function import batching
from customgrad.landscape.plane import random_plane
from customgrad.landscape.surface import LossSurface, axes, grid
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "data" / "landscape_functions.py"
SIZE = 21


def grid_and_calls(name: str) -> tuple[np.ndarray, int]:
    """The whole SIZE x SIZE grid of ``name`` around its start on a seeded random plane, and
    how many times its forward ran for it."""
    problem = build(Settings(target=f"{DATA}:{name}", dtype="float64"))
    surface = LossSurface(problem.descent())
    x = surface.point()
    plane = random_plane(x, surface.shapes, seed=0)
    alphas, betas = axes((0.0, 0.0), 1.5, SIZE)
    # each forward counts its calls on Squares
    counter = vars(__import__(problem.function.__module__))["Squares"]
    counter.calls = 0
    *_, (values, complete) = grid(surface, plane, alphas, betas)
    assert complete
    return values, counter.calls


def one_at_a_time(monkeypatch, name: str) -> np.ndarray:
    with monkeypatch.context() as patch:
        patch.setattr(batching, "probe", lambda *args: False)
        values, calls = grid_and_calls(name)
    assert calls == SIZE * SIZE
    return values


def test_a_batchable_forward_gives_the_same_grid_in_far_fewer_calls(monkeypatch):
    before = one_at_a_time(monkeypatch, "Squares")
    values, calls = grid_and_calls("Squares")
    # 3 single calls for the probe, its batched call, the coarse grid's rest, one per row
    assert calls <= 3 + 1 + 1 + SIZE
    # float64; the same products entry by entry, only the mean over 3 entries summed in
    # another order: a few units of rounding
    assert np.allclose(values, before, rtol=1e-13, atol=0)
    assert np.isfinite(values).all()


@pytest.mark.parametrize("name", ["ShapeChecked", "SumScaled"])
def test_a_forward_that_raises_on_a_stack_or_mixes_it_is_called_point_by_point(
        monkeypatch, name):
    before = one_at_a_time(monkeypatch, name)
    values, calls = grid_and_calls(name)
    assert calls == SIZE * SIZE + 1  # the probe's one batched call, then as before
    assert np.array_equal(values, before)


def test_a_batch_that_raises_after_the_probe_goes_on_point_by_point(monkeypatch):
    before = one_at_a_time(monkeypatch, "Squares")
    stacked = LossSurface._stacked
    seen = []

    def fails_after_the_probe(self, points):
        seen.append(len(points))
        if len(seen) > 1:
            raise RuntimeError("out of memory")
        return stacked(self, points)

    monkeypatch.setattr(LossSurface, "_stacked", fails_after_the_probe)
    values, calls = grid_and_calls("Squares")
    assert len(seen) == 2  # the probe, then one batch that raised: never again
    assert calls == 3 + 1 + (SIZE * SIZE - 3)
    assert np.array_equal(values, before)


def test_the_probe_trusts_only_results_within_rounding():
    def f64(rows):
        return torch.tensor(rows, dtype=torch.float64)

    singles = [f64([1.0, 2.0]), f64([3.0, float("nan")])]
    rtol = batching.tolerance(torch.float64)
    close = f64([[1.0, 2.0 + 1e-15], [3.0, float("nan")]])
    assert batching.probe(lambda xs: close, torch.zeros(2, 1), singles, rtol)
    far = f64([[1.0, 2.0 + 1e-9], [3.0, float("nan")]])
    assert not batching.probe(lambda xs: far, torch.zeros(2, 1), singles, rtol)
    finite = f64([[1.0, 2.0], [3.0, 4.0]])
    assert not batching.probe(lambda xs: finite, torch.zeros(2, 1), singles, rtol)
    assert not batching.probe(lambda xs: close[:1], torch.zeros(2, 1), singles, rtol)

    def raises(xs):
        raise ValueError("scalars only")

    assert not batching.probe(raises, torch.zeros(2, 1), singles, rtol)
    # one input cannot tell a batch from a broadcast: not even called
    assert not batching.probe(raises, torch.zeros(1, 1), singles[:1], rtol)


def test_the_grids_points_are_the_planes_bit_for_bit():
    # the same products and sums entry by entry, in the same order, only for many points
    # at once: what the grid point by point computes is what it computed before
    from customgrad.landscape.surface import _points

    origin = torch.randn(50, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    plane = random_plane(origin, [(50,)], seed=1)
    alphas, betas = np.linspace(-1.3, 2.7, 9), np.linspace(-0.7, 0.9, 7)
    cells = [(i, j) for i in range(7) for j in range(9)]
    expected = torch.stack([plane.at(alphas[j], betas[i]) for i, j in cells])
    assert torch.equal(_points(plane, alphas, betas, cells), expected)
