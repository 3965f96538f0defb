"""Tensor arguments that forward also reads through a callable argument (a closure, a bound
module method, a functools.partial, a module): gradient checkpoints, applied as
``CheckpointFunction.apply(run_function, length, *inputs, *params)``.

gradcheck perturbs the caller's tensors in place, which is what the closure reads, and judges
their Jacobian blocks for real. customgrad checked copies, which the closure never sees: the
numerical block of such an argument was zero, and a backward computing that gradient by hand
FAILED, right or wrong. It now finds them (customgrad.function.closures), uses the caller's
tensor itself, and puts it back bit for bit. Every case asserts gradcheck's verdict, ours
equal to it, the mismatch masks equal entry for entry (gradcheck's on the caller's tensors),
and the caller's tensors bit-identical after our check.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Function

import customgrad
from customgrad.errors import FunctionError
from customgrad.function.closures import closure_read, lent
from tests.customgrad.test_real_layers import Case, _rand, gradcheck_mask, gradcheck_verdict
from tests.customgrad.test_real_layers_4 import CheckpointFunction, CheckpointKeepsCtx

# ==== the Functions: checkpoints whose backward computes the parameters' gradients by hand ====


class DenseCheckpoint(Function):
    """``run_function(x) = tanh(x @ weight + bias)``, reading weight and bias through its
    closure, checkpointed: forward saves the arguments, backward differentiates by hand."""

    @staticmethod
    def forward(ctx, run_function, x, weight, bias):
        ctx.save_for_backward(x, weight, bias)
        with torch.no_grad():
            return run_function(x)

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.saved_tensors
        y = torch.tanh(x @ weight + bias)
        gz = g * (1 - y * y)
        return None, gz @ weight.T, x.T @ gz, gz.sum(0)


class DenseCheckpointWrongBias(DenseCheckpoint):
    """The bias gradient forgets tanh's derivative: wrong in the block the closure reads."""

    @staticmethod
    def backward(ctx, g):
        none, gx, gw, _ = DenseCheckpoint.backward(ctx, g)
        return none, gx, gw, g.sum(0)


class DenseCheckpointDetached(DenseCheckpoint):
    """Right first derivative; tanh's derivative from a detached y, so its own derivative
    (the double backward) misses a term."""

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.saved_tensors
        y = torch.tanh(x @ weight + bias).detach()
        gz = g * (1 - y * y)
        return None, gz @ weight.T, x.T @ gz, gz.sum(0)


def _dense(x, weight, bias):
    return torch.tanh(x @ weight + bias)


class Dense(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(_rand(3, 4, seed=1))
        self.bias = nn.Parameter(_rand(4, seed=2))

    def forward(self, x):
        return _dense(x, self.weight, self.bias)

    def _forward(self, x):  # guided-diffusion's name for the checkpointed body
        return _dense(x, self.weight, self.bias)


def _reader(kind: str):
    """(run_function, weight, bias): the function reads the very weight and bias returned,
    through ``kind``: a bound module method, the module itself, a lambda's closure, or a
    functools.partial's keywords."""
    if kind in ("bound-method", "module"):
        m = Dense()
        return (m._forward if kind == "bound-method" else m), m.weight, m.bias
    w, b = _rand(3, 4, seed=1).requires_grad_(), _rand(4, seed=2).requires_grad_()
    if kind == "lambda":
        return (lambda x: _dense(x, w, b)), w, b
    return functools.partial(_dense, weight=w, bias=b), w, b


KINDS = ["bound-method", "module", "lambda", "partial"]


def _dense_case(kind: str, function: type, expected: str) -> Case:
    def make():
        run_function, w, b = _reader(kind)
        return run_function, _rand(2, 3).requires_grad_(), w, b
    return Case(f"{kind}-{function.__name__}", function, make, expected)


def _bits(args) -> list:
    """Each tensor argument's exact state: its bits, version, requires_grad and .grad."""
    return [(a.detach().clone().view(torch.int64) if a.dtype == torch.float64 else a.clone(),
             a._version, a.requires_grad, a.grad)
            for a in args if isinstance(a, torch.Tensor)]


def _assert_untouched(args, before, versions: bool = True) -> None:
    """Bit for bit as ``before``; the same version (but where forward itself writes into
    them, as any call does), requires_grad and .grad."""
    for (bits, version, requires_grad, grad), a in zip(
            before, [a for a in args if isinstance(a, torch.Tensor)]):
        now = a.detach().view(torch.int64) if a.dtype == torch.float64 else a.detach()
        assert torch.equal(now, bits)
        assert (a.requires_grad, a.grad) == (requires_grad, grad)
        assert a._version == version or not versions


def _assert_gradchecks(case: Case) -> customgrad.checking.jacobian.Report:
    """gradcheck's verdict on the caller's tensors is the case's, ours is it, the masks are
    equal, and our check left the caller's tensors bit for bit as they were."""
    args = case.make()
    before = _bits(args)
    report = customgrad.check(case.function, *args)
    _assert_untouched(args, before)
    assert gradcheck_verdict(case, args, as_given=True) == case.expected
    assert ("passed" if report.passed else "failed") == case.expected, report.text()
    mask = gradcheck_mask(case, args, as_given=True)
    assert torch.equal(report.mismatch_mask(), mask)
    assert report.mismatches == int(mask.sum())
    return report


def _block(report, name: str) -> torch.Tensor:
    axis = next(a for a in report.inputs if a.name == name)
    return report.numerical[:, axis.offset:axis.offset + axis.size]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("function, expected", [(DenseCheckpoint, "passed"),
                                                (DenseCheckpointWrongBias, "failed")])
def test_a_checkpoint_differentiating_its_parameters_by_hand_gets_gradchecks_verdict(
        kind, function, expected):
    """Right: PASSED in both (it FAILED here, the closure's blocks judged against zeros);
    wrong in the bias block: FAILED in both, with the same mask (the bias's entries)."""
    report = _assert_gradchecks(_dense_case(kind, function, expected))
    assert _block(report, "weight").abs().max() > 0.1  # judged for real, not zeros
    assert (report.mismatch_mask()[:, -4:].any()) == (expected == "failed")
    assert sum("is also read through run_function" in n for n in report.notes) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_with_nothing_requiring_grad_the_closures_tensors_are_still_judged(kind):
    """No argument requires grad: every floating-point one is differentiated, the closure's
    made to require grad for the check (backward's gradients are taken over them) and put
    back after, not requiring grad."""
    run_function, w, b = _reader(kind)
    for t in (w, b):
        t.requires_grad_(False)
    args = (run_function, _rand(2, 3), w, b)
    before = _bits(args)
    right = customgrad.check(DenseCheckpoint, *args)
    wrong = customgrad.check(DenseCheckpointWrongBias, *args)
    _assert_untouched(args, before)
    assert right.passed and not wrong.passed
    assert [a.name for a in right.inputs] == ["x", "weight", "bias"]
    assert wrong.mismatch_mask()[:, :-4].sum() == 0  # only the bias block


def test_a_copy_of_the_closures_tensor_is_a_constant_of_its_own():
    """A detached copy is not what the closure reads: no note names it, and its block is
    zero (as gradcheck's, handed that copy)."""
    run_function, w, b = _reader("lambda")
    args = (run_function, _rand(2, 3).requires_grad_(), w.detach().clone().requires_grad_(), b)
    report = customgrad.check(DenseCheckpoint, *args)
    assert [n.split()[0] for n in report.notes if "read through" in n] == ["bias"]
    assert _block(report, "weight").abs().max() == 0
    assert not report.passed  # (backward's weight gradient against a zero block)
    case = Case("copy", DenseCheckpoint, lambda: args, "failed")
    assert gradcheck_verdict(case, args, as_given=True) == "failed"
    assert torch.equal(report.mismatch_mask(), gradcheck_mask(case, args, as_given=True))


# ==== guided-diffusion's checkpoint as it is used: a module's bound method and parameters ====


class ResBlock(nn.Module):
    """A residual block's body as guided-diffusion checkpoints it: ``checkpoint(self._forward,
    (x,), self.parameters(), self.use_checkpoint)``."""

    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 4)
        self.conv = nn.Conv1d(4, 4, 1)  # (kernel 1: a small matrix for a test)
        self.double()
        gen = torch.Generator().manual_seed(3)
        with torch.no_grad():  # (versions above 0, as an initialised module's)
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))

    def _forward(self, x):
        return self.conv(F.silu(self.norm(x)))


def _res_block_case(function: type, expected: str) -> Case:
    def make():
        block = ResBlock()
        args = ((_rand(2, 4, 3).requires_grad_(),), tuple(block.parameters()))
        return (block._forward, len(args[0]), *args[0], *args[1])
    return Case(f"guided-diffusion-{function.__name__}", function, make, expected)


def test_guided_diffusions_checkpoint_keeping_ctx_passes_with_its_parameters_judged():
    """The reentrant checkpoint (guided-diffusion's without ``del``): PASSED in both, the
    parameters' blocks non-zero (they were zeros against backward's None)."""
    report = _assert_gradchecks(_res_block_case(CheckpointKeepsCtx, "passed"))
    assert [a.name for a in report.inputs] == [f"args{k}" for k in range(5)]
    for k in range(1, 5):
        assert _block(report, f"args{k}").abs().max() > 0.01


def test_guided_diffusions_own_checkpoint_fails_reentrant_where_gradcheck_raises():
    """The original frees ctx's lists: gradcheck raises at its second row, customgrad fails
    ``reentrant`` (docs/parity.md); the caller's parameters are as they were."""
    case = _res_block_case(CheckpointFunction, "error")
    args = case.make()
    before = _bits(args)
    report = customgrad.check(case.function, *args)
    _assert_untouched(args, before)
    assert not report.passed and report.checks["reentrant"].status == "failed"
    assert gradcheck_verdict(case, args, as_given=True) == "error"


# ==== a tensor read through the closure and written by forward ================================


class Tracking(nn.Module):
    """A dense layer keeping a running mean of its input, updated in place by each forward
    (as BatchNorm's running statistics): the output does not depend on it."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(_rand(3, 4, seed=1))
        self.register_buffer("running", _rand(3, seed=5))

    def forward(self, x):
        self.running.mul_(0.9).add_(0.1 * x.detach().mean(0))
        return torch.tanh(x @ self.weight)


class TrackingCheckpoint(Function):
    """A checkpoint handed the module's weight and buffer; backward by hand."""

    @staticmethod
    def forward(ctx, run_function, x, weight, running):
        ctx.save_for_backward(x, weight)
        with torch.no_grad():
            return run_function(x)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        gz = g * (1 - torch.tanh(x @ weight) ** 2)
        return None, gz @ weight.T, x.T @ gz, None


def test_a_buffer_read_through_the_closure_and_written_by_forward_is_put_back():
    """Every forward call updates the caller's buffer (through ``self``), gradcheck's too:
    both PASS, and after our check the buffer is bit for bit as it was (after gradcheck's, it
    has moved)."""
    case = Case("tracking", TrackingCheckpoint,
                lambda: (lambda m: (m, _rand(2, 3).requires_grad_(), m.weight, m.running))(
                    Tracking()), "passed")
    args = case.make()
    before = _bits(args)
    report = customgrad.check(case.function, *args)
    _assert_untouched(args, before, versions=False)  # (forward's own writes: new versions)
    assert report.passed, report.text()
    assert sum("read through run_function" in n for n in report.notes) == 2
    assert gradcheck_verdict(case, args, as_given=True) == "passed"
    assert not torch.equal(args[3], before[2][0].view(torch.float64))  # gradcheck moved it


class RaisesPerturbed(DenseCheckpoint):
    """Raises where its weight is not the caller's original: within the finite differences,
    with the caller's tensor perturbed in place."""

    original = torch.empty(0)

    @staticmethod
    def forward(ctx, run_function, x, weight, bias):
        if not torch.equal(weight, RaisesPerturbed.original):
            raise ValueError("a perturbed weight")
        return DenseCheckpoint.forward(ctx, run_function, x, weight, bias)


def test_the_callers_tensors_are_put_back_when_the_check_raises():
    run_function, w, b = _reader("lambda")
    for t in (w, b):
        t.requires_grad_(False)
    args = (run_function, _rand(2, 3), w, b)
    before = _bits(args)
    RaisesPerturbed.original = w.detach().clone()
    with pytest.raises((FunctionError, ValueError), match="a perturbed weight"):
        customgrad.check(RaisesPerturbed, *args)
    _assert_untouched(args, before)


# ==== the double backward, beside gradgradcheck's =============================================


@pytest.mark.parametrize("function, verdict", [(DenseCheckpoint, "passed"),
                                               (DenseCheckpointDetached, "failed")])
def test_the_double_backward_of_a_closure_reading_checkpoint_is_gradgradchecks(
        function, verdict):
    """gradgradcheck on the caller's tensors (the closure's): a backward built of
    differentiable operations passes, one with tanh's derivative detached fails; the
    double_backward sub-check says the same, and leaves the caller's tensors as they were."""
    run_function, w, b = _reader("bound-method")
    x = _rand(2, 3).requires_grad_()
    with torch.random.fork_rng():
        torch.manual_seed(1)
        expected = torch.autograd.gradgradcheck(
            lambda *t: function.apply(run_function, *t), (x, w, b), raise_exception=False)
    assert ("passed" if expected else "failed") == verdict
    args = (run_function, x, w, b)
    before = _bits(args)
    report = customgrad.check(function, *args, checks=["double_backward"])
    _assert_untouched(args, before)
    assert report.agrees
    assert report.checks["double_backward"].status == verdict


def test_a_checkpoint_whose_backward_is_not_differentiable_fails_as_in_gradgradcheck():
    """The reentrant checkpoint's backward takes ``autograd.grad`` without a graph:
    gradgradcheck fails it on the caller's tensors ("Numerical gradient for function expected
    to be zero"), and so does the sub-check."""
    case = _dense_case("bound-method", CheckpointKeepsCtx, "passed")
    run_function, x, w, b = case.make()
    args = (run_function, 1, x, w, b)
    with torch.random.fork_rng():
        torch.manual_seed(1)
        assert not torch.autograd.gradgradcheck(case.call, args, raise_exception=False)
    report = customgrad.check(case.function, *args, checks=["double_backward"])
    assert report.checks["double_backward"].status == "failed"


# ==== finding them ============================================================================


_GLOBAL = _rand(3, seed=9)


def _reads_global(x):
    return x * _GLOBAL


def _nested():
    w = _rand(3, seed=7)

    def inner(x):
        return x * w

    return (lambda x: inner(x)), w


def test_closure_read_finds_each_way_a_callable_holds_a_tensor():
    t = _rand(3)
    m = Dense()
    outer, deep = _nested()

    def default(x, w=t):
        return x * w
    assert closure_read([lambda x: x * t, t]) == {1: 0}
    assert closure_read([functools.partial(torch.mul, t), 1, t]) == {2: 0}
    assert closure_read([functools.partial(torch.mul, other=t), t]) == {1: 0}
    assert closure_read([m._forward, m.weight, m.bias, t]) == {1: 0, 2: 0}
    assert closure_read([t, m, m.bias]) == {2: 1}
    assert closure_read([default, t]) == {1: 0}
    assert closure_read([_reads_global, _GLOBAL]) == {1: 0}
    assert closure_read([outer, deep]) == {1: 0}  # lambda -> inner -> w: two levels down


def test_closure_read_finds_nothing_it_should_not():
    t = _rand(3)
    assert closure_read([t, 2, "x"]) == {}  # no callable
    assert closure_read([lambda x: x * t, t.clone()]) == {}  # a copy
    assert closure_read([torch.tanh, t]) == {}  # a builtin holds nothing
    assert closure_read([lambda x: x * t, t.t()]) == {}  # (another tensor object)
    assert closure_read([lambda x: x, torch.empty(0)]) == {}


def test_lent_puts_back_values_grad_and_requires_grad_also_on_error():
    t = _rand(3)
    t.grad = _rand(3, seed=1)
    grad, before = t.grad, _bits([t])
    with pytest.raises(RuntimeError, match="inside"), lent([t], [t]):
        assert t.requires_grad
        with torch.no_grad():
            t.data.add_(1.0)
            t.grad.add_(1.0)
        t.grad = None
        raise RuntimeError("inside")
    _assert_untouched([t], before)
    assert t.grad is grad and torch.equal(grad, _rand(3, seed=1))


# ==== the window's worker path ================================================================


@pytest.mark.parametrize("function, first, double", [
    (DenseCheckpoint, True, "passed"), (DenseCheckpointDetached, True, "failed"),
    (DenseCheckpointWrongBias, False, "passed")])
def test_the_workers_path_gives_the_same_verdicts(function, first, double):
    """What a worker runs (playground.workers.child_jobs.compare): ``verify`` with progress
    and matrices in shared memory, then the drawn second-order report beside it. (The app
    itself cannot hand a Function a callable: from a file forward's parameter is drawn as a
    tensor, ``playground.show`` refuses it as a constant; this is the engine's part.)"""
    from customgrad.checking import second_order
    from customgrad.checking.verification import CheckOptions, verify
    from customgrad.workers import sharing

    args = list(_dense_case("bound-method", function, "").make())
    before = _bits(args)
    seen: list = []
    report = verify(function, args, CheckOptions(checks=frozenset({"double_backward"})),
                    progress=seen.append, allocate=sharing.shared_zeros)
    second, why = second_order.beside(report, function, args)
    _assert_untouched(args, before)
    assert report.agrees == first and seen
    assert report.checks["double_backward"].status == double
    assert second is not None and second.passed == (double == "passed"), why
