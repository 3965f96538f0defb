"""Gradient descent on a Function's inputs: the seed's KillHead loop reproduced bit for bit."""

from __future__ import annotations

import gc
import math
from pathlib import Path

import pytest
import torch

from customgrad.errors import Cancelled, FunctionError, SpecError
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets import catalog
from customgrad.training.descent import Descent

KillHead = catalog.get("killhead").function
killhead = KillHead.apply


def seed_losses(seed: int, steps: int = 5, eta=1e-0, criterion=None) -> list[float]:
    """The seed script's loop (EE-559 5.7), run after torch.manual_seed(seed).

    ``eta`` may be a function of the step, to follow a learning rate changed mid-run.
    """
    torch.manual_seed(seed)
    y = torch.empty(3, 8).normal_()
    x = torch.empty(y.size()).normal_().requires_grad_()

    criterion = criterion or torch.nn.MSELoss()
    losses = []
    for k in range(steps):
        r = killhead(x, 2)
        loss = criterion(r, y)
        if k > 0:
            x.grad.zero_()
        loss.backward()
        losses.append(loss.item())
        with torch.no_grad():
            x.sub_((eta(k) if callable(eta) else eta) * x.grad)
    return losses


def killhead_problem(seed: int, **kw):
    options = {"target": "killhead", "shapes": {"input": "3x8"}, "constants": {"n": 2},
               "dtype": "float32", "lr": 1.0, "loss": "mse", "seed": seed}
    options.update(kw)
    return build(Settings(**options))


@pytest.mark.parametrize("seed", [0, 1, 7, 123])
def test_killhead_losses_equal_the_seed_script_exactly(seed):
    descent = killhead_problem(seed).descent()
    ours = [record.loss for record in descent.run(5)]
    # Exact float equality, not approx: the engine guarantees it. The loop runs the seed's own
    # operations in the seed's order, in the same process, so any CPU rounds both alike.
    assert ours == seed_losses(seed)


def test_target_is_drawn_before_the_input():
    """The seed draws y first, then x: the problem's target and input follow that order."""
    p = killhead_problem(11)
    torch.manual_seed(11)
    y = torch.empty(3, 8).normal_()
    x = torch.empty(3, 8).normal_()
    assert torch.equal(p.targets[0], y) and torch.equal(p.args[0], x)
    assert p.args[1] == 2 and p.args[0].dtype == torch.float32


def test_step_records():
    descent = killhead_problem(0).descent()
    records = list(descent.run(3))
    assert [r.step for r in records] == [0, 1, 2]
    assert all(r.lr == 1.0 for r in records)
    assert set(records[0].grad_norms) == {"input"}
    assert all(r.grad_norms["input"] > 0 for r in records)
    assert descent.step_count == 3
    # grad norm: MSE over 24 entries, only the 18 live ones carry a gradient
    torch.manual_seed(0)
    y = torch.empty(3, 8).normal_()
    x = torch.empty(3, 8).normal_().requires_grad_()
    torch.nn.MSELoss()(killhead(x, 2), y).backward()
    assert records[0].grad_norms["input"] == float(x.grad.norm())


def test_killed_head_never_moves():
    p = killhead_problem(5)
    descent = p.descent()
    start = p.args[0].clone()
    list(descent.run(4))
    now = descent.current_args()[0]
    assert torch.equal(now[:, :2], start[:, :2])
    assert not torch.equal(now[:, 2:], start[:, 2:])
    assert descent.current_args()[1] == 2


def test_lr_changes_mid_run_without_reset():
    descent = killhead_problem(7).descent()
    ours = [descent.step().loss for _ in range(2)]
    descent.lr = 0.25
    ours += [descent.step().loss for _ in range(3)]
    assert descent.step_count == 5
    expected = seed_losses(7, 5, eta=lambda k: 1.0 if k < 2 else 0.25)
    assert ours == expected
    assert ours != seed_losses(7, 5)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "1"])
def test_lr_must_be_positive(bad):
    descent = killhead_problem(0).descent()
    with pytest.raises(SpecError):
        descent.lr = bad
    assert descent.lr == 1.0
    p = killhead_problem(0)
    with pytest.raises(SpecError):
        Descent(p.function, p.specs, p.args, p.targets, lr=bad)


@pytest.mark.parametrize("loss, criterion", [
    ("l1", torch.nn.L1Loss()),
    ("sse", lambda r, y: ((r - y) ** 2).sum()),
])
def test_other_losses_match_their_formula(loss, criterion):
    descent = killhead_problem(1, loss=loss, lr=0.05).descent()
    ours = [r.loss for r in descent.run(5)]
    assert ours == seed_losses(1, 5, eta=0.05, criterion=criterion)
    assert ours[-1] < ours[0]


@pytest.mark.parametrize("loss, module", [("mse", torch.nn.MSELoss), ("l1", torch.nn.L1Loss)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_losses_called_as_kernels_equal_torch_modules_bit_for_bit(loss, module, dtype):
    """The loop calls the loss kernels directly (half the cost of the module); values and
    gradients must stay exactly those of torch.nn's modules."""
    from customgrad.training.descent import _loss

    generator = torch.Generator().manual_seed(5)
    for shape in [(3, 8), (17,), (4, 5, 6)]:
        out = torch.randn(*shape, dtype=dtype, generator=generator, requires_grad=True)
        target = torch.randn(*shape, dtype=dtype, generator=generator)
        ours, theirs = _loss(loss)(out, target), module()(out, target)
        assert torch.equal(ours, theirs)
        assert torch.equal(torch.autograd.grad(ours, out)[0], torch.autograd.grad(theirs, out)[0])


def test_losses_fall_back_to_the_modules_without_the_kernels(monkeypatch):
    from customgrad.training.descent import _loss

    monkeypatch.delattr(torch._C._nn, "mse_loss")
    assert isinstance(_loss("mse"), torch.nn.MSELoss)
    assert not isinstance(_loss("l1"), torch.nn.L1Loss)  # its kernel is still there


def test_unknown_loss_and_optimizer():
    p = killhead_problem(0)
    with pytest.raises(SpecError, match="loss"):
        Descent(p.function, p.specs, p.args, p.targets, loss="huber")
    with pytest.raises(SpecError, match="optimizer"):
        Descent(p.function, p.specs, p.args, p.targets, optimizer="lbfgs")


@pytest.mark.parametrize("optimizer, lr", [("momentum", 0.1), ("adam", 0.1)])
def test_momentum_and_adam_decrease_the_loss(optimizer, lr):
    descent = killhead_problem(3, optimizer=optimizer, lr=lr).descent()
    losses = [r.loss for r in descent.run(30)]
    assert losses[-1] < 0.5 * losses[0]
    # they follow torch.optim exactly
    torch.manual_seed(3)
    y = torch.empty(3, 8).normal_()
    x = torch.empty(3, 8).normal_().requires_grad_()
    opt = (torch.optim.SGD([x], lr=lr, momentum=0.9) if optimizer == "momentum"
           else torch.optim.Adam([x], lr=lr))
    expected = []
    for _ in range(30):
        opt.zero_grad()
        loss = torch.nn.MSELoss()(killhead(x, 2), y)
        loss.backward()
        expected.append(loss.item())
        opt.step()
    assert losses == expected


def test_lr_change_reaches_the_optimizer():
    descent = killhead_problem(3, optimizer="adam", lr=0.1).descent()
    descent.step()
    descent.lr = 0.01
    assert all(g["lr"] == 0.01 for g in descent._optimizer.param_groups)
    assert descent.step().lr == 0.01


def test_untrained_input_is_not_changed():
    p = build(Settings(target="functional_linear", seed=2))  # trains weight and bias only
    assert [s.trained for s in p.specs] == [False, True, True]
    descent = p.descent()
    start = [a.clone() for a in p.args]
    records = list(descent.run(3))
    assert set(records[0].grad_norms) == {"weight", "bias"}
    now = descent.current_args()
    assert torch.equal(now[0], start[0])
    assert not torch.equal(now[1], start[1]) and not torch.equal(now[2], start[2])
    assert records[-1].loss < records[0].loss
    # the problem's own arguments are never modified
    assert all(torch.equal(a, b) for a, b in zip(p.args, start))


def test_trained_override_turns_training_off():
    p = build(Settings(target="linear", trained={"weight": False}))
    descent = p.descent()
    assert set(descent.trained) == {"bias"}
    with pytest.raises(SpecError, match="no input is trained"):
        build(Settings(target="killhead", trained={"input": False})).descent()


def test_in_place_function_trains():
    p = build(Settings(target="relu_inplace", seed=4))
    start = p.args[0].clone()
    losses = [r.loss for r in p.descent().run(10)]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]
    assert torch.equal(p.args[0], start)


def test_two_outputs_add_their_losses():
    p = build(Settings(target="sincos", seed=0, lr=0.1))
    assert len(p.targets) == 2
    descent = p.descent()
    x = p.args[0]
    expected = float(torch.nn.MSELoss()(x.sin(), p.targets[0])
                     + torch.nn.MSELoss()(x.cos(), p.targets[1]))
    assert descent.step().loss == pytest.approx(expected, rel=1e-6)


def test_run_is_lazy():
    descent = killhead_problem(0).descent()
    gen = descent.run(100)
    next(gen)
    next(gen)
    assert descent.step_count == 2


def test_function_without_differentiable_output_cannot_descend():
    path = Path(__file__).resolve().parents[1] / "data" / "user_functions.py"
    p = build(Settings(target=f"{path}:ArgsortOnly"))
    assert p.targets == []
    with pytest.raises(FunctionError, match="no differentiable output"):
        p.descent()


class _StopsInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise Cancelled("stopped in backward")


@pytest.mark.parametrize("where", ["forward", "backward"])
def test_cancel_and_interrupt_pass_through_a_step_unchanged_and_leave_no_cycle(where):
    """What is not the user's fault is raised again as it is, and the step's frames (and the
    autograd graph they hold) are freed at once, not at the next garbage collection: the
    loop's process runs with automatic collection off."""
    p = killhead_problem(0)
    descent = Descent(_StopsInBackward, p.specs[:1], p.args[:1], p.targets)
    if where == "forward":
        descent.function = type("StopsInForward", (_StopsInBackward,), {
            "forward": staticmethod(lambda ctx, x: (_ for _ in ()).throw(KeyboardInterrupt()))})
    gc.collect()
    gc.disable()
    try:
        with pytest.raises(Cancelled if where == "backward" else KeyboardInterrupt) as info:
            descent.step()
        assert type(info.value) in (Cancelled, KeyboardInterrupt)
        del info
        assert gc.collect() == 0
    finally:
        gc.enable()
