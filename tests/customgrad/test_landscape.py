"""The loss landscape's engine: planes, projections, the gradients' angle and length, the
replayed path, the grid (coarse first, cancellable) and when it is drawn again."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from customgrad.errors import Cancelled
from customgrad.landscape import Landscape, compute, moved_away, view_box
from customgrad.landscape.plane import (
    Plane,
    compare_gradients,
    gradient_plane,
    gradient_words,
    pca_plane,
    random_plane,
)
from customgrad.landscape.surface import LossSurface, replay
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "data" / "landscape_functions.py"
SHAPES = [(3, 4), (5,)]
D = 17


def problem(name: str, **fields):
    return build(Settings(target=f"{DATA}:{name}", dtype="float64", **fields))


def orthonormal(plane: Plane) -> None:
    assert float(plane.d1 @ plane.d1) == pytest.approx(1, abs=1e-12)
    assert float(plane.d2 @ plane.d2) == pytest.approx(1, abs=1e-12)
    assert float(plane.d1 @ plane.d2) == pytest.approx(0, abs=1e-12)


def test_random_plane_is_orthonormal_and_the_same_for_a_seed():
    origin = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    first, again = random_plane(origin, SHAPES, seed=3), random_plane(origin, SHAPES, seed=3)
    other = random_plane(origin, SHAPES, seed=4)
    orthonormal(first)
    assert torch.equal(first.d1, again.d1) and torch.equal(first.d2, again.d2)
    assert not torch.allclose(first.d1, other.d1)


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_planes_through_a_diverged_point_are_random_ones(bad):
    """A point with an inf or NaN entry (a run that diverged) cannot filter-normalise: the
    random directions are plain ones. pca_plane without a path raised TypeError, and
    random_plane said the inputs had a single entry."""
    origin = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    origin[0] = bad
    for plane in (pca_plane(origin, None, SHAPES), random_plane(origin, SHAPES)):
        orthonormal(plane)
        assert torch.isfinite(plane.d1).all() and torch.isfinite(plane.d2).all()


def test_gradient_plane_has_d1_along_your_backward_and_the_true_gradient_in_it():
    origin = torch.zeros(D, dtype=torch.float64)
    g = torch.Generator().manual_seed(2)
    analytic, true = torch.randn(D, generator=g, dtype=torch.float64), torch.randn(
        D, generator=g, dtype=torch.float64)
    plane = gradient_plane(origin, analytic, true, None, SHAPES)
    orthonormal(plane)
    assert torch.allclose(plane.d1, analytic / analytic.norm(), atol=1e-12)
    assert plane.distance(true) == pytest.approx(0, abs=1e-12)
    assert plane.note == ""


def test_parallel_gradients_take_the_paths_direction_else_a_seeded_random_one():
    origin = torch.zeros(D, dtype=torch.float64)
    analytic = torch.zeros(D, dtype=torch.float64)
    analytic[0] = 1
    path = torch.zeros(3, D, dtype=torch.float64)
    path[0, 5], path[1, 5] = 2.0, 1.0  # the path came along coordinate 5
    plane = gradient_plane(origin, analytic, 3 * analytic, path, SHAPES)
    orthonormal(plane)
    assert abs(float(plane.d2[5])) == pytest.approx(1)
    assert "principal" in plane.note
    first = gradient_plane(origin, analytic, 3 * analytic, None, SHAPES, seed=7)
    again = gradient_plane(origin, analytic, 3 * analytic, None, SHAPES, seed=7)
    orthonormal(first)
    assert torch.equal(first.d2, again.d2) and "random" in first.note


def test_pca_plane_finds_the_line_the_path_took():
    origin = torch.zeros(D, dtype=torch.float64)
    line = torch.zeros(D, dtype=torch.float64)
    line[2], line[9] = 0.6, 0.8
    wiggle = torch.zeros(D, dtype=torch.float64)
    wiggle[4] = 1.0
    path = torch.stack([k * line + 0.1 * (-1) ** k * wiggle for k in range(6, -1, -1)])
    plane = pca_plane(origin, path, SHAPES)
    orthonormal(plane)
    # about the current point, not the mean: the wiggle tilts d1 by about 1e-5
    assert abs(float(plane.d1 @ line)) == pytest.approx(1, abs=1e-4)
    assert abs(float(plane.d2[4])) == pytest.approx(1, abs=1e-4)


def test_a_known_path_projects_onto_its_coordinates():
    e = torch.eye(3, dtype=torch.float64)
    plane = Plane(torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64), e[0], e[1])
    path = torch.tensor([[3.0, 1.0, 1.0], [1.0, -1.0, 5.0], [1.0, 1.0, 1.0]],
                        dtype=torch.float64)
    assert np.allclose(plane.project(path), [[2, 0], [0, -2], [0, 0]])
    assert plane.distance(path[1]) == pytest.approx(4)


def test_angle_and_length_of_known_vectors_and_their_words():
    a = torch.tensor([1.0, 0.0], dtype=torch.float64)
    assert compare_gradients(a, 2 * a) == (0.0, 0.5)
    angle, ratio = compare_gradients(a, torch.tensor([1.0, 1.0], dtype=torch.float64))
    assert angle == pytest.approx(45) and ratio == pytest.approx(1 / math.sqrt(2))
    assert gradient_words(37.2, 0.5) == "37° apart, 0.5x as long"
    assert gradient_words(0.1, 1.0) == "same direction, as long"
    assert math.isnan(compare_gradients(0 * a, a)[0])


def test_a_backward_that_halves_the_gradient_is_half_as_long_in_the_same_direction():
    result = compute(problem("HalfGradient"), size=0)
    assert result.ratio == pytest.approx(0.5, rel=1e-6)  # central differences in float64
    assert result.angle < 0.01
    assert result.words == "same direction, 0.5x as long"


def test_a_transposed_backward_is_as_far_apart_as_A_r_and_A_transpose_r():
    from tests.data.landscape_functions import A

    p = problem("Transposed")
    x, target = p.args[0], p.targets[0]
    r = 2 * (A @ x - target) / target.numel()  # the MSE's gradient with respect to y
    expected = compare_gradients((A @ r).flatten(), (A.T @ r).flatten())
    result = compute(p, size=0)
    assert result.angle == pytest.approx(expected[0], abs=1e-4)
    assert result.ratio == pytest.approx(expected[1], rel=1e-6)
    # in the gradient plane, the analytic arrow lies along d1
    assert result.analytic[1] == pytest.approx(0, abs=1e-12)


def test_the_replayed_path_is_the_runs():
    p = problem("Transposed", lr=0.1)
    descent = p.descent()
    path = replay(descent, 5)
    run = p.descent()
    points = [run.current_args()[0].flatten().clone()]
    for _ in range(5):
        run.step()
        points.append(run.current_args()[0].flatten().clone())
    assert torch.allclose(path, torch.stack(points), rtol=0, atol=1e-12)


def test_the_grid_comes_coarse_first_then_whole_and_holds_the_loss():
    seen = []
    result = compute(problem("Transposed", lr=0.1), steps=3, size=13, progress=seen.append)
    assert seen and not seen[0].complete and result.complete
    assert result.losses.shape == (13, 13) and np.isfinite(result.losses).all()
    descent = problem("Transposed", lr=0.1).descent()
    surface = LossSurface(descent)
    a, b = result.alphas[5], result.betas[8]
    assert result.losses[8, 5] == pytest.approx(surface.value(result.plane.at(a, b)), rel=1e-12)
    # the current point (the plane's origin) is the path's last point
    assert np.allclose(result.current, [0, 0])
    assert result.loss == pytest.approx(surface.value(result.plane.origin), rel=1e-12)


def test_a_stop_request_cancels_the_grid():
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 40

    with pytest.raises(Cancelled):
        compute(problem("Transposed"), size=21, should_stop=stop)


def test_the_grid_is_drawn_again_when_the_point_moves_a_share_of_the_view_or_off_it():
    axis = np.linspace(-1, 1, 5)
    plane = Plane(torch.zeros(3, dtype=torch.float64), *torch.eye(3, dtype=torch.float64)[:2])
    shown = Landscape("f", 0, plane, axis, axis, None, True, np.zeros((1, 2)), np.zeros(2),
                      np.zeros(2), 0.0, 1.0, 1.0, 0.0)
    shown = dataclasses.replace(shown, path=np.array([[0.8, 0.8], [0.5, 0.5]]))
    assert not moved_away(shown, np.array([0.7, 0.3]), 0.0)  # a fifth of the half width
    assert moved_away(shown, np.array([0.9, 0.5]), 0.0)  # two fifths
    assert moved_away(shown, np.array([0.5, 0.5]), 0.4)  # as far off the plane


def test_the_view_box_is_centred_on_the_current_point_and_holds_the_path_and_arrows():
    center, half = view_box(np.array([[0.0, 0.0], [4.0, 2.0]]), [np.array([5.0, 0.0])], 1.0)
    assert center == (4.0, 2.0)
    assert half == pytest.approx(1.1 * 4)


def test_too_many_entries_for_central_differences_take_the_paths_plane(monkeypatch):
    import customgrad.landscape as landscape

    monkeypatch.setattr(landscape, "MAX_DIFFERENCES", 2)
    result = compute(problem("Transposed", lr=0.1), steps=3, size=0)
    assert result.plane.mode == "pca" and "too many" in result.plane.note
    assert np.isfinite(result.true).all()  # its part in the plane, from two slopes
