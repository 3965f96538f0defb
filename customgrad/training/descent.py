"""The seed's KillHead gradient-descent loop, generalised to any Function.

With KillHead 3x8, n=2, lr 1.0, MSE and float32 the losses equal the seed script's bit for bit:
target first, then inputs, from the seeded generator; ``x.sub_(eta * x.grad)`` each step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.autograd import Function

from customgrad.defaults import LOSSES, OPTIMIZERS
from customgrad.errors import FunctionError, SpecError
from customgrad.function.contract import (
    PASS_THROUGH,
    normalize_outputs,
    passes,
    raise_user_error,
    run_user,
)
from customgrad.function.dtypes import differentiable
from customgrad.function.inputs import TensorSpec


@dataclass(frozen=True)
class StepDetail:
    """One trained input during one step: its value before, its gradient, its value after."""

    before: torch.Tensor
    grad: torch.Tensor
    after: torch.Tensor


#: Gradients up to this many elements are kept by reference and their norms computed when
#: first read (or for a whole batch at once, see :func:`pack_records`); larger ones at once.
LAZY_NORM_NUMEL = 1 << 16


class StepRecord:
    """What one step did: the loss before the update and each trained input's gradient norm.

    ``detail`` (CPU copies of before/grad/after per trained input) is filled only while
    :attr:`Descent.keep_detail` is on, e.g. for the app's step explainer.

    ``grad_norms`` of small gradients is computed when first read: most records are only
    plotted (their loss), and a norm costs as much as a small step's arithmetic. Until then
    the record keeps the gradients (``grads``, a tuple in the order of ``names``).
    """

    __slots__ = ("_grads", "_names", "_norms", "detail", "loss", "lr", "step")

    def __init__(self, step: int, loss: float, grad_norms: dict[str, float] | None = None,
                 lr: float = 1.0, detail: dict[str, StepDetail] | None = None,
                 grads: tuple | None = None, names: tuple[str, ...] = ()):
        self.step, self.loss, self.lr, self.detail = step, loss, lr, detail
        self._norms = grad_norms
        self._grads: tuple | None = None
        self._names: tuple[str, ...] = ()
        if grad_norms is None and grads is not None:
            self._grads, self._names = grads, names

    @property
    def grad_norms(self) -> dict[str, float]:
        if self._norms is None:
            self._norms = {name: _norm(g) for name, g in zip(self._names, self._grads or ())}
            self._grads = None
        return self._norms

    def __getstate__(self):
        return (self.step, self.loss, self.grad_norms, self.lr, self.detail)

    def __setstate__(self, state):
        self.step, self.loss, self._norms, self.lr, self.detail = state
        self._grads, self._names = None, ()

    def __eq__(self, other):
        if not isinstance(other, StepRecord):
            return NotImplemented
        return self.__getstate__() == other.__getstate__()

    # Python's way to say unhashable (mypy wants a method there)
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self):
        return (f"StepRecord(step={self.step}, loss={self.loss!r}, "
                f"grad_norms={self.grad_norms!r}, lr={self.lr!r})")


def _norm(grad: torch.Tensor | None) -> float:
    return 0.0 if grad is None else float(torch.linalg.vector_norm(grad))


def pack_records(records: list[StepRecord]) -> tuple | list[StepRecord]:
    """``records`` as plain columns (steps, losses, learning rates, input names, and a column
    of gradient norms per input), for sending to another process: a batch's norms cost one
    reduction per input instead of one per record, and plain lists pickle far faster than
    objects. Records with step details, or whose inputs differ, are returned as they are."""
    if not records or any(r.detail is not None for r in records):
        return records
    first = records[0]
    names = list(first._names if first._norms is None else first.grad_norms)
    norms = None
    columns = [r._grads for r in records
               if r._norms is None and r._grads is not None and list(r._names) == names]
    if len(columns) == len(records):
        try:
            norms = [torch.linalg.vector_norm(torch.stack([grads[k] for grads in columns])
                                              .reshape(len(records), -1), dim=1).tolist()
                     for k in range(len(names))]
        except (TypeError, RuntimeError):  # a gradient vanished or changed shape
            norms = None
    if norms is None:
        if any(list(r.grad_norms) != names for r in records):
            return records
        norms = [[r.grad_norms[name] for r in records] for name in names]
    return ([r.step for r in records], [r.loss for r in records], [r.lr for r in records],
            names, norms)


def unpack_records(packed: tuple | list[StepRecord]) -> list[StepRecord]:
    """The StepRecords that :func:`pack_records` made ``packed`` from."""
    if isinstance(packed, list):
        return packed
    steps, losses, lrs, names, norms = packed
    return [StepRecord(step, loss, dict(zip(names, values)), lr)
            for step, loss, lr, *values in zip(steps, losses, lrs, *norms)]


class Batch:
    """What the loop yields: the new steps, and forward's args when a snapshot was due.

    A batch crosses from the loop's process as plain columns (:func:`pack_records`): the
    window reads :attr:`steps` and :attr:`losses` as arrays and :attr:`last` as one record;
    :attr:`records` are made only when asked for."""

    def __init__(self, records: list[StepRecord], snapshot: list | None = None,
                 paused: bool = False):
        self._records: list[StepRecord] | None = records
        self._packed: tuple | list[StepRecord] = records
        self.snapshot = snapshot
        self.paused = paused

    @property
    def records(self) -> list[StepRecord]:
        if self._records is None:
            self._records = unpack_records(self._packed)
        return self._records

    def __len__(self) -> int:
        packed = self._packed
        return len(packed) if isinstance(packed, list) else len(packed[0])

    def _column(self, index: int, name: str) -> np.ndarray:
        packed = self._packed
        values = (packed[index] if isinstance(packed, tuple)
                  else [getattr(r, name) for r in packed])
        return np.asarray(values, dtype=np.float64)

    @property
    def steps(self) -> np.ndarray:
        """The steps' numbers (float64, for plotting)."""
        return self._column(0, "step")

    @property
    def losses(self) -> np.ndarray:
        return self._column(1, "loss")

    @property
    def last(self) -> StepRecord | None:
        """The latest step's record (None for an empty batch)."""
        if not len(self):
            return None
        if self._records is None and isinstance(self._packed, tuple):
            steps, losses, lrs, names, norms = self._packed
            return unpack_records(([steps[-1]], [losses[-1]], [lrs[-1]], names,
                                   [column[-1:] for column in norms]))[0]
        return self.records[-1]

    def __getstate__(self):
        # the records travel as columns (see pack_records): a batch holds hundreds of them
        packed = self._packed
        if isinstance(packed, list):
            packed = pack_records(packed)
        return packed, self.snapshot, self.paused

    def __setstate__(self, state):
        self._packed, self.snapshot, self.paused = state
        self._records = self._packed if isinstance(self._packed, list) else None


def _loss(name: str):
    """The loss of ``output`` against ``target`` (always the same shape: :meth:`Descent.step`
    checks it first)."""
    if name == "mse":
        return _kernel("mse_loss") or torch.nn.MSELoss()
    if name == "l1":
        return _kernel("l1_loss") or torch.nn.L1Loss()
    if name == "sse":
        return lambda r, y: ((r - y) ** 2).sum()
    raise SpecError(f"loss {name!r} is unknown; use {', '.join(LOSSES)}.", field="loss")


def _kernel(name: str):
    """The mean-reduced loss kernel that ``torch.nn.functional.<name>`` ends in, called
    directly: the same arithmetic (so the seed's losses, bit for bit), without the module
    call, the argument checks and the ``broadcast_tensors`` of two same-shaped tensors that
    make the functional cost as much as a small step's forward. None where this torch has
    no such kernel."""
    try:
        kernel = getattr(torch._C._nn, name)
        mean = torch.nn._reduction.get_enum("mean")
    except AttributeError:
        return None
    return lambda output, target: kernel(output, target, mean)


class Descent:
    """Gradient descent on the trained inputs of a Function, one :meth:`step` at a time.

    ``lr`` may be changed between steps without resetting the run.
    """

    def __init__(self, function: type[Function], specs: list, args: list,
                 targets: list[torch.Tensor], lr: float = 1.0, loss: str = "mse",
                 optimizer: str = "sgd"):
        if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
            raise SpecError(f"learning rate must be a positive number, not {lr!r}.", field="lr")
        if optimizer not in OPTIMIZERS:
            raise SpecError(f"optimizer {optimizer!r} is unknown; use {', '.join(OPTIMIZERS)}.",
                            field="optimizer")
        if not targets:
            raise FunctionError(f"{function.__name__} has no differentiable output, so there is "
                                "no loss to descend.", phase="forward")
        self.function = function
        self.criterion = _loss(loss)
        self.loss_name, self.optimizer_name = loss, optimizer
        self.targets = targets
        self.names = [s.name for s in specs]
        self.args: list[object] = []
        self.trained: dict[str, torch.Tensor] = {}
        for spec, arg in zip(specs, args):
            if isinstance(spec, TensorSpec) and spec.trained and differentiable(arg):
                leaf = arg.detach().clone().requires_grad_()
                self.trained[spec.name] = leaf
                self.args.append(leaf)
            else:
                self.args.append(arg)
        if not self.trained:
            raise SpecError("no input is trained: tick 'trained' for at least one tensor input.",
                            field="trained")
        self._leaves = tuple(self.trained.values())
        self._names = tuple(self.trained)
        self._lazy_norms = sum(leaf.numel() for leaf in self._leaves) <= LAZY_NORM_NUMEL
        self.step_count = 0
        self.keep_detail = False
        self._dirty = _modifies_inputs(function, self.args)
        self._lr = float(lr)
        self._optimizer: torch.optim.Optimizer | None = None
        if optimizer == "momentum":
            self._optimizer = torch.optim.SGD(list(self.trained.values()), lr=lr, momentum=0.9)
        elif optimizer == "adam":
            self._optimizer = torch.optim.Adam(list(self.trained.values()), lr=lr)

    @property
    def lr(self) -> float:
        return self._lr

    @lr.setter
    def lr(self, value: float):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise SpecError(f"learning rate must be a positive number, not {value!r}.",
                            field="lr")
        self._lr = float(value)
        if self._optimizer is not None:
            for group in self._optimizer.param_groups:
                group["lr"] = self._lr

    def current_args(self) -> list[object]:
        """forward's arguments at the current point (detached copies of trained inputs)."""
        return [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in self.args]

    def loss(self) -> torch.Tensor:
        """The loss at the current point, with its graph (its ``backward`` runs the user's
        backward), without moving anything: what :mod:`customgrad.landscape` evaluates."""
        return self.evaluate()[1]

    def evaluate(self) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        """forward's outputs at the current point and the loss (as :meth:`loss`)."""
        fn = self.function
        call = self.args
        if self._dirty:
            call = [a.clone() if isinstance(a, torch.Tensor) and a.requires_grad else a
                    for a in self.args]
        outs = normalize_outputs(fn, run_user(fn, "forward", lambda: fn.apply(*call)))
        return outs, self._total_loss(outs)

    def step(self) -> StepRecord:
        """One forward, loss, backward and update; the record holds the loss before the update.

        Kept lean: this runs thousands of times a second, and the loop is benchmarked against
        the seed's bare loop (tests/benchmarks/bench.py). So user code is called inside this
        frame's own ``try`` (not through :func:`run_user`), and the record keeps the
        gradients as a tuple."""
        fn = self.function
        call = self.args
        if self._dirty:
            # a clone (exact) lets Functions that modify their input in place (mark_dirty) train
            call = [a.clone() if isinstance(a, torch.Tensor) and a.requires_grad else a
                    for a in self.args]
        try:
            raw = fn.apply(*call)
        except PASS_THROUGH as exc:
            if passes(exc):
                raise
            raise_user_error(fn, "forward", exc)
        except BaseException as exc:
            raise_user_error(fn, "forward", exc)
        outs = (raw,) if type(raw) is torch.Tensor else normalize_outputs(fn, raw)
        loss = self._total_loss(outs)
        leaves = self._leaves
        for leaf in leaves:
            # a fresh gradient each step (not zeroed in place), so a record can keep it
            leaf.grad = None
        try:
            loss.backward()
        except PASS_THROUGH as exc:
            if passes(exc):
                raise
            raise_user_error(fn, "backward", exc)
        except BaseException as exc:
            raise_user_error(fn, "backward", exc)
        value = loss.item()
        grads = tuple([leaf.grad for leaf in leaves])
        before = [leaf.detach().cpu().clone() for leaf in leaves] if self.keep_detail else None
        self._update(leaves, grads)
        record = self._record(value, grads, before)
        self.step_count += 1
        return record

    def _total_loss(self, outs: tuple) -> torch.Tensor:
        """The criterion summed over the differentiable outputs, each against its target;
        SpecError if an output changed shape or their number changed since the start."""
        fn = self.function
        targets = self.targets
        loss, count = None, 0
        for out in outs:
            if not (out.requires_grad and differentiable(out)):
                continue
            count += 1
            if count > len(targets):
                continue
            target = targets[count - 1]
            if out.shape != target.shape:
                raise SpecError(f"{fn.__name__}'s output changed shape during descent "
                                f"({list(target.shape)} -> {list(out.shape)}).")
            if out.is_complex():  # a real loss: the parts compared side by side
                out, target = torch.view_as_real(out), torch.view_as_real(target)
            term = self.criterion(out, target)
            loss = term if loss is None else loss + term
        if count != len(targets):
            raise SpecError(f"{fn.__name__} returned {count} differentiable outputs at step "
                            f"{self.step_count}, but {len(targets)} at the start.")
        assert loss is not None  # (targets is never empty: __init__ refuses that)
        return loss

    def _update(self, leaves: tuple, grads: tuple) -> None:
        """Move the trained inputs: plain SGD by hand (the seed's loop), else the optimizer."""
        if self._optimizer is None:
            lr = self._lr
            for leaf, grad in zip(leaves, grads):
                if grad is not None:
                    leaf.detach().sub_(lr * grad)  # as x.sub_(eta * x.grad) under no_grad
        else:
            with torch.no_grad():
                self._optimizer.step()

    def _record(self, value: float, grads: tuple, before: list | None) -> StepRecord:
        """The step's record: the loss, the gradients (their norms, or kept for later), and
        before/after details when asked for."""
        detail = None
        if before is not None:
            detail = {name: StepDetail(b, _grad_copy(leaf), leaf.detach().cpu().clone())
                      for name, b, leaf in zip(self.trained, before, self._leaves)}
        if self._lazy_norms:
            return StepRecord(self.step_count, value, None, self._lr, detail, grads, self._names)
        return StepRecord(self.step_count, value,
                          {name: _norm(g) for name, g in zip(self._names, grads)}, self._lr,
                          detail)

    def run(self, steps: int):
        """Yield one StepRecord per step (a generator, so callers can stop between steps)."""
        for _ in range(int(steps)):
            yield self.step()


def _modifies_inputs(function: type[Function], args: list) -> bool:
    """True when forward changes a tensor argument in place (``mark_dirty``), found by one call
    on copies; such Functions need a non-leaf copy of the trained inputs at each step."""
    copies = [a.detach().clone().requires_grad_().clone()
              if isinstance(a, torch.Tensor) and a.requires_grad else a for a in args]
    versions = [c._version if isinstance(c, torch.Tensor) else None for c in copies]
    run_user(function, "forward", lambda: function.apply(*copies))
    return any(isinstance(c, torch.Tensor) and c._version != v
               for c, v in zip(copies, versions))


def _grad_copy(leaf: torch.Tensor) -> torch.Tensor:
    if leaf.grad is None:
        return torch.zeros_like(leaf, device="cpu")
    return leaf.grad.detach().cpu().clone()
