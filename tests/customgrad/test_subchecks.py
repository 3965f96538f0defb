"""Each sub-check fails on a Function built to fail it and passes on its correct twin, and
agrees with torch.autograd.gradcheck's own option for that check."""

from __future__ import annotations

import pytest
import torch
from torch.autograd import Function

from customgrad.checking import subchecks
from customgrad.errors import SpecError


def x64(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


class SinJvp(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * x.cos()


class SinJvpBug(SinJvp):
    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 2 * t * x.cos()


class Cube(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * x ** 2


class CubeNotBatchable(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        scale = torch.tensor(g.tolist(), dtype=g.dtype)  # leaves torch: vmap cannot follow
        return 3 * scale * x ** 2


class DoubleNoMaterialize(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return None if g is None else 2 * g


class DoubleNoMaterializeBug(DoubleNoMaterialize):
    @staticmethod
    def backward(ctx, g):
        return 2 * g  # g is None when the output's gradient is undefined


class ShiftedBackward(DoubleNoMaterialize):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g + 1  # a zero grad_output gives a nonzero gradient


class Twice(Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class TwiceInFloat32(Twice):
    @staticmethod
    def backward(ctx, g):
        return (2 * g).float()


class TwiceNoisy(Twice):
    @staticmethod
    def backward(ctx, g):
        return 2 * g + 1e-6 * torch.randn_like(g)


class TwiceScaledByGradOutput(Twice):
    """Right wherever grad_output is nonzero; NaN where it is all zero (0 / 0)."""

    @staticmethod
    def backward(ctx, g):
        return 2 * g * (g.abs().max() / g.abs().max())


def gradcheck_verdict(function, x, **option) -> bool:
    try:
        return torch.autograd.gradcheck(function.apply, (x.clone().requires_grad_(),),
                                        raise_exception=False, **option)
    except Exception:  # gradcheck lets some backward errors through: a failure all the same
        return False


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name, correct, buggy, option", [
    ("forward_ad", SinJvp, SinJvpBug, {"check_forward_ad": True}),
    ("batched_grad", Cube, CubeNotBatchable, {"check_batched_grad": True}),
    ("undefined_grad", DoubleNoMaterialize, DoubleNoMaterializeBug,
     {"check_undefined_grad": True}),
    ("undefined_grad", Twice, ShiftedBackward, {"check_undefined_grad": True}),
    ("undefined_grad", Twice, TwiceScaledByGradOutput, {}),  # NaN where gradcheck says
    # "backward not multiplied by grad_output" (its default test of zero grad_outputs)
    ("nondeterminism", Twice, TwiceNoisy, {"nondet_tol": 0.0}),
    ("grad_dtypes", Twice, TwiceInFloat32, None),
])
def test_a_sub_check_fails_its_buggy_twin_only(name, correct, buggy, option):
    x = x64(3, 4)
    good = subchecks.run(correct, [x], [name])[name]
    bad = subchecks.run(buggy, [x], [name])[name]
    assert good.status == "passed", good.detail
    assert bad.status == "failed" and bad.detail
    if option is not None:  # the same verdicts as gradcheck's own option for this check
        assert gradcheck_verdict(correct, x, **option)
        assert not gradcheck_verdict(buggy, x, **option)


def test_checks_a_function_cannot_have_are_skipped_with_the_reason():
    found = subchecks.run(Twice, [x64(2)], ["forward_ad"])
    assert found["forward_ad"].status == "skipped" and "jvp" in found["forward_ad"].detail


def test_batched_gradients_need_no_vmap_rule_as_in_gradcheck():
    """gradcheck batches the backward pass: a Function without vmap staticmethod or
    generate_vmap_rule passes where its backward is made of torch operations."""
    found = subchecks.run(Twice, [x64(2)], ["batched_grad"])["batched_grad"]
    assert found.status == "passed" and gradcheck_verdict(Twice, x64(2),
                                                          check_batched_grad=True)


def test_defaults_follow_gradcheck_and_order_is_fixed():
    found = subchecks.run(Twice, [x64(3)])
    assert list(found) == ["jacobian", "undefined_grad"]
    everything = subchecks.run(Twice, [x64(3)], reversed(subchecks.NAMES))
    assert list(everything) == list(subchecks.NAMES)
    assert all(c.passed for c in everything.values())
    assert everything["jacobian"].to_dict()["status"] == "passed"


def test_names_are_parsed_strictly():
    assert subchecks.parse("jacobian, forward_ad") == ("jacobian", "forward_ad")
    with pytest.raises(SpecError, match="unknown check 'gradients'"):
        subchecks.parse("jacobian,gradients")
