"""A backward that returns None for a float input nobody chose (trial3 R1): the input is a
constant, as for a buffer (a mask, a filter: right), but a trained input's gradient forgotten
the same way passed with only a note on the seventh line. The verdict line now names it;
where the input requires grad (or is not --no-grad), gradcheck's FAILED stands."""

from __future__ import annotations

import textwrap

import torch

import customgrad
from tests.customgrad.test_cli import run_cli

SOURCE = textwrap.dedent('''\
    import torch


    class MulForgetW(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, None
    ''')


def _function(tmp_path):
    path = tmp_path / "none_grad.py"
    path.write_text(SOURCE)
    namespace: dict = {}
    exec(compile(SOURCE, str(path), "exec"), namespace)
    return path, namespace["MulForgetW"]


def test_the_verdict_line_names_an_input_backward_returns_none_for(tmp_path):
    _, fn = _function(tmp_path)
    x, w = torch.rand(3, 4, dtype=torch.float64), torch.rand(3, 4, dtype=torch.float64)
    report = customgrad.check(fn, x, w)
    assert report.passed and report.returns_none == ["w"]
    assert report.summary().endswith(
        "; w not checked: backward returns None for it (right for a buffer, a mask or a "
        "filter; for an input that is trained, its gradient is missing: --no-grad w or "
        "requires_grad says which)")
    assert report.to_dict()["returns_none"] == ["w"]
    # chosen by requires_grad, as gradcheck's inputs are: FAILED, as gradcheck
    w.requires_grad_()
    chosen = customgrad.check(fn, x.requires_grad_(), w)
    assert not chosen.passed and chosen.returns_none == []
    assert not torch.autograd.gradcheck(fn.apply, (x, w), raise_exception=False)
    assert "not checked" not in chosen.summary()


def test_the_cli_says_it_on_the_first_line_and_not_after_no_grad(capsys, tmp_path):
    path, _ = _function(tmp_path)
    code, out, _ = run_cli(capsys, "check", f"{path}:MulForgetW")
    assert code == 0
    assert "; w not checked: backward returns None for it" in out.splitlines()[0]
    code, out, _ = run_cli(capsys, "check", f"{path}:MulForgetW", "--no-grad", "w")
    assert code == 0 and "not checked" not in out


def test_two_inputs_are_named_together():
    class Both(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            return x * w + b

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    report = customgrad.check(Both, *(torch.rand(2, 3, dtype=torch.float64) for _ in "xwb"))
    # (x's block fails: g * 2 is not w; the verdict line names both constants)
    assert report.returns_none == ["w", "b"]
    assert "; w, b not checked: backward returns None for them (" in report.summary()


class _NoReturn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        grad = 2 * grad_output  # noqa: F841 (the return forgotten)


class _ReturnsNoneOnPurpose(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return None


def test_a_backward_without_return_is_said_to_return_nothing():
    """trial3 S11: "returns None for x ... or leave x out", for the only input."""
    report = customgrad.check(_NoReturn, torch.rand(3, 4, dtype=torch.float64))
    assert not report.passed
    assert [d.kind for d in report.diagnoses][:1] == ["no_gradient"]
    assert report.diagnoses[0].detail.startswith(
        "_NoReturn.backward returns nothing: it has no return statement with a value")
    other = customgrad.check(_ReturnsNoneOnPurpose, torch.rand(3, 4, dtype=torch.float64))
    assert other.diagnoses[0].detail.startswith(
        "_ReturnsNoneOnPurpose.backward returns None for x, which is differentiated")
