"""The projected (v^T J u) and double-backward checks."""

import pytest
import torch

from customgrad.checking.beyond_jacobian import double_backward_check, projected_check
from customgrad.cli import main
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets import catalog


@pytest.mark.parametrize("name", ["killhead", "linear", "softmax", "sincos", "sort"])
def test_projected_passes_correct_functions(name):
    p = build(Settings(target=name, dtype="float64"))
    assert projected_check(p.function, p.args).passed


@pytest.mark.parametrize("name", [e.name for e in catalog.entries()  # probes are real
                                  if e.category == "find-the-bug" and not e.complex])
def test_projected_fails_every_bug(name):
    p = build(Settings(target=name, dtype="float64"))
    report = projected_check(p.function, p.args, probes=8)
    assert not report.passed
    assert report.max_abs_error > 1e-3


def test_projected_handles_inputs_too_big_for_full_matrices(capsys):
    assert main(["check", "killhead", "--shape", "input=512x512"]) == 2
    assert "--projected" in capsys.readouterr().err
    assert main(["check", "killhead", "--shape", "input=512x512", "--projected", "3"]) == 0


def test_double_backward_verdicts():
    cube = build(Settings(target="cube_newstyle", dtype="float64"))
    report = double_backward_check(cube.function, cube.args)
    assert report.supported and report.passed
    lin = build(Settings(target="functional_linear", dtype="float64"))
    report = double_backward_check(lin.function, lin.args)
    assert not report.supported and "once_differentiable" in report.message


def test_double_backward_detects_a_wrong_second_derivative():
    class BadSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x.detach() ** 1.0 + 0 * x * x  # first order right, second wrong

    x = torch.rand(3, 4, dtype=torch.float64) + 0.5
    report = double_backward_check(BadSquare, [x])
    assert report.supported and not report.passed


class _GatherRows(torch.autograd.Function):
    """x[i, idx[i]] per row; backward scatters: torch.vmap has no batching rule for
    scatter_ and warns about its speed (nothing the user did)."""

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.shape = x.shape
        return x.gather(1, idx.unsqueeze(1)).squeeze(1)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        gx = torch.zeros(ctx.shape, dtype=g.dtype)
        gx.scatter_(1, idx.unsqueeze(1), g.unsqueeze(1))
        return gx, None


def test_vmaps_warning_about_its_own_speed_does_not_reach_the_user():
    """It reached the CLI's stderr as a UserWarning at the user's scatter_ line."""
    import warnings

    import customgrad

    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([1, 7, 0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = customgrad.check(_GatherRows, x, idx)
    assert report.passed
    assert not [w for w in caught if "performance drop" in str(w.message)], \
        [str(w.message) for w in caught]
