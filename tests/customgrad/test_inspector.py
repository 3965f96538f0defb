"""The backward inspector's engine: inspect_call and its descriptions (the view and its worker:
tests/playground/test_inspector_view.py)."""

from __future__ import annotations

import math

import pytest
import torch

from customgrad.checking.inspector import (
    ERROR,
    NOTE,
    WARNING,
    describe_value,
    inspect_call,
    shape_text,
)
from customgrad.errors import FunctionError
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from tests.data import byof_errors as bad
from tests.data import user_functions as uf

TIMEOUT = 20_000


def problem(name: str):
    return build(Settings(target=name))


# ---- engine -----------------------------------------------------------------------------------
def test_killhead():
    p = problem("killhead")
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in p.args]
    ins = inspect_call(p.function, p.args, seed=0)
    assert [(v.name, v.shape) for v in ins.received] == [("grad_output", (3, 8))]
    assert ins.ctx_attributes["n"].describe() == "int 2"
    assert ins.saved == []
    assert ins.needs_input_grad == (True, False)
    assert [v.kind for v in ins.returned] == ["tensor", "none"]
    assert ins.returned[0].shape == (3, 8) and ins.returned[0].dtype == torch.float32
    assert ins.surprises == [] and ins.error is None
    # the gradient is what KillHead.backward gives for the seeded grad_output
    g = ins.received[0].values.clone()
    g[:, :2] = 0
    torch.testing.assert_close(ins.returned[0].values, g)
    assert all(torch.equal(a, b) for a, b in zip(p.args, before) if isinstance(a, torch.Tensor))


def test_functional_linear_shape_surprise():
    p = problem("functional_linear")
    ins = inspect_call(p.function, p.args)
    weight = ins.returned[1]
    assert weight.shape == (3, 5, 4) and weight.final_shape == (5, 4)
    assert "sums it to [5, 4]" in weight.note
    assert ins.returned[2].shape == (3, 5) and ins.returned[2].final_shape == (5,)
    summed = ins.by_kind("summed")
    assert [s.position for s in summed] == [1, 2]
    assert all(s.severity == NOTE for s in summed)
    assert "[3, 5, 4]" in summed[0].message and "[5, 4]" in summed[0].message
    assert [v.note for v in ins.saved] == ["same memory as input 'input'",
                                           "same memory as input 'weight'",
                                           "same memory as input 'bias'"]
    assert ins.needs_input_grad == (True, True, True)


def test_received_is_what_autograd_passes():
    p = problem("sort")  # indices output: materialized int64 zeros
    ins = inspect_call(p.function, p.args)
    assert [v.dtype for v in ins.received] == [torch.float32, torch.int64]
    assert ins.received[1].maximum == 0

    class Two(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.mark_non_differentiable(y := x * 3)
            return x * 2, y

        @staticmethod
        def backward(ctx, a, b):
            return a * 2

    ins = inspect_call(Two, [torch.randn(2, 3)])
    assert [v.kind for v in ins.received] == ["tensor", "none"]
    assert [v.name for v in ins.received] == ["a", "b"]


def test_seed_decides_the_grad_outputs():
    p = problem("killhead")
    a = inspect_call(p.function, p.args, seed=1).received[0].values
    b = inspect_call(p.function, p.args, seed=1).received[0].values
    c = inspect_call(p.function, p.args, seed=2).received[0].values
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_new_style_function():
    x = torch.randn(3, 4, dtype=torch.float64)
    ins = inspect_call(uf.ScaleNewStyle, [x, 2.0, x.clone()])
    assert ins.ctx_attributes["factor"].text == "2.0"
    assert ins.ctx_attributes["has_bias"].text == "True"
    assert ins.needs_input_grad == (True, False, True)
    assert [v.kind for v in ins.returned] == ["tensor", "none", "tensor"]


def test_tensor_stored_on_ctx_is_a_note():
    class Stores(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            return 2 * ctx.x * grad_output

    ins = inspect_call(Stores, [torch.randn(2, 2)])
    assert ins.ctx_attributes["x"].is_tensor
    assert ins.by_kind("tensor_on_ctx") and "save_for_backward" in ins.surprises[0].message


@pytest.mark.parametrize(("function", "args", "kind"), [
    (bad.GradForConstant, [torch.randn(3, 4), 2], "non_tensor_argument"),
    (bad.WrongCount, [torch.randn(3, 4), 2], "count"),
    (uf.TooManyGradients, [torch.randn(3, 4)], "count"),
    (bad.WrongShape, [torch.randn(3, 4)], "wrong_shape"),
    (bad.WrongDtype, [torch.randn(3, 4)], "dtype"),
    (bad.WrongDevice, [torch.randn(3, 4)], "device"),
])
def test_contract_breaks_are_errors_not_exceptions(function, args, kind):
    ins = inspect_call(function, args)
    found = ins.by_kind(kind)
    assert found and found[0].severity == ERROR
    assert ins.returned  # what backward returned is still shown


def test_non_tensor_argument_gradient_message():
    ins = inspect_call(bad.GradForConstant, [torch.randn(3, 4), 2])
    assert ins.returned[1].shape == ()
    assert "n (position 1), which is an int" in ins.by_kind("non_tensor_argument")[0].message


def test_nan_in_outputs_and_gradients():
    x = torch.tensor([[-1.0, 2.0], [3.0, -4.0]])
    out = inspect_call(bad.NaNOutput, [x])
    assert [s.kind for s in out.nonfinite] == ["nan_output"]
    assert out.outputs[0].finite is False and out.nonfinite[0].severity == WARNING
    grad = inspect_call(bad.NaNGradient, [x])
    assert [s.kind for s in grad.nonfinite] == ["nan_gradient"]
    assert not grad.returned[0].finite


def test_backward_raising_keeps_what_came_before():
    ins = inspect_call(bad.BackwardRaises, [torch.randn(2, 3)])
    assert isinstance(ins.error, FunctionError)
    assert "backward is broken" in str(ins.error) and ins.error.line
    assert ins.received and ins.returned == []


def test_grad_output_modified_in_place_is_an_error():
    ins = inspect_call(uf.ModifiesGradOutput, [torch.randn(2, 3)])
    assert "in place" in str(ins.error)
    assert ins.received[0].values is not None  # the pristine grad_output


def test_forward_raising_raises():
    with pytest.raises(FunctionError, match="forward is broken"):
        inspect_call(bad.ForwardRaises, [torch.randn(2, 3)])
    with pytest.raises(FunctionError, match="outputs must be tensors"):
        inspect_call(bad.NonTensorOutput, [torch.randn(2, 3)])


def test_no_backward_without_a_differentiable_output():
    ins = inspect_call(uf.ArgsortOnly, [torch.randn(2, 3)])
    assert ins.received == [] and ins.notes


def test_none_gradient_for_a_tensor_is_a_note():
    ins = inspect_call(uf.MissingYGradient, [torch.randn(2), torch.randn(2)])
    assert ins.by_kind("none_gradient")[0].severity == NOTE


def test_unneeded_gradient_is_a_note():
    x = torch.randn(2, 3)
    ins = inspect_call(uf.ZeroGradY, [x, x.clone()], requires_grad=[True, False])
    assert ins.needs_input_grad == (True, False)
    assert ins.by_kind("unneeded_gradient")


def test_summary_and_helpers():
    p = problem("killhead")
    text = inspect_call(p.function, p.args).summary()
    assert "grad_output: [3, 8] float32" in text and "ctx.n: int 2" in text
    assert "ctx.needs_input_grad: (True, False)" in text
    assert shape_text(()) == "[]" and shape_text((3, 5, 4)) == "[3, 5, 4]"
    big = describe_value("big", torch.zeros(200, 200))
    assert big.values is None and big.minimum == 0
    nan = describe_value("nan", torch.tensor([math.nan, 1.0]))
    assert not nan.finite and nan.maximum == 1.0


class _NaNInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        scaled = g * 2
        return scaled * (x / x - 1) / 0.0  # <- NaN made here


class _NaNFromNumpy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        import numpy as np

        bad = torch.from_numpy(np.full(tuple(g.shape), np.nan))  # (no torch function)
        return g * 2 + bad  # <- NaN from numpy, seen at the first torch call taking it


class _NaNInForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 1.0
        return torch.log(y - 10.0)  # <- NaN in forward

    @staticmethod
    def backward(ctx, g):
        return g


def _marked(marker: str) -> int:
    from pathlib import Path

    lines = Path(__file__).read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if marker in text and "_marked" not in text)


@pytest.mark.parametrize(("function", "kind", "marker", "method"), [
    (_NaNInBackward, "nan_gradient", "# <- NaN made here", "backward"),
    (_NaNFromNumpy, "nan_gradient", "# <- NaN from numpy", "backward"),
    (_NaNInForward, "nan_output", "# <- NaN in forward", "forward"),
])
def test_a_nan_is_named_at_the_line_that_first_made_it(function, kind, marker, method):
    """The app said 'backward's gradient for x contains NaN or Inf' with no file or line."""
    x = torch.randn(3, 4, dtype=torch.float64)
    found = [s for s in inspect_call(function, [x]).surprises if s.kind == kind]
    assert len(found) == 1
    assert found[0].message.endswith(
        f", first appears at test_inspector.py:{_marked(marker)} (in {method}).")
