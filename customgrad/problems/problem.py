"""A Function with its specs and seeded inputs and targets: what a check or a run works on."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd import Function

from customgrad.checking.jacobian.comparison import compare
from customgrad.checking.jacobian.report import Report
from customgrad.checking.verification import CheckOptions
from customgrad.errors import FunctionError
from customgrad.function.contract import (
    Overtime,
    call_backward,
    normalize_outputs,
    run_user,
    run_user_within,
)
from customgrad.function.dtypes import differentiable, in_kind, parse_dtype
from customgrad.function.inputs import (
    UNANNOTATED,
    ConstSpec,
    Spec,
    TensorSpec,
    apply_overrides,
    derive_specs,
    draw,
    format_shape,
    guessed_parameters,
    is_integer_init,
    parse_device,
    refuse_keyword_only,
)
from customgrad.problems.settings import Settings
from customgrad.targets.loader import Target, resolve
from customgrad.training.descent import Descent


@dataclass(frozen=True)
class Guess:
    """A constant whose value nobody gave: the engine chose it, and the reports say so."""

    name: str
    value: object
    reason: str

    def to_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "reason": self.reason}


@dataclass
class Problem:
    """Everything drawn from one seed: forward's arguments and the descent targets."""

    target: Target
    specs: list[Spec]
    dtype: torch.dtype
    device: torch.device
    args: list[object]
    targets: list[torch.Tensor]
    settings: Settings
    #: the constants the engine chose (no annotation, default or setting gave their value)
    guesses: list[Guess] = field(default_factory=list)

    @property
    def function(self) -> type[Function]:
        return self.target.function

    def descent(self) -> Descent:
        s = self.settings
        return Descent(self.function, self.specs, self.args, self.targets, lr=s.lr, loss=s.loss,
                       optimizer=s.optimizer)

    def check_options(self, **changes) -> CheckOptions:
        """The settings' tolerances, memory cap and inputs to differentiate as
        :func:`customgrad.checking.verification.verify` takes them, with ``changes``."""
        s = self.settings
        options = CheckOptions(eps=s.eps, atol=s.atol, rtol=s.rtol, nondet_tol=s.nondet_tol,
                               memory_cap=s.memory_cap, differentiate=dict(s.differentiate))
        return dataclasses.replace(options, **changes)

    def compare(self, args: list | None = None, **kwargs) -> Report:
        """Jacobian comparison at ``args`` (default: the seeded starting point)."""
        s = self.settings
        options: dict[str, Any] = {"eps": s.eps, "atol": s.atol, "rtol": s.rtol,
                                   "memory_cap": s.memory_cap, "differentiate": s.differentiate}
        options.update(kwargs)
        return compare(self.function, self.args if args is None else args, **options)


def specs_for(target: Target, settings: Settings) -> list[Spec]:
    """Specs from forward's signature, then the gallery's defaults, then the settings."""
    specs = derive_specs(target.function)
    entry = target.entry
    if entry is not None:
        trained = None
        if entry.trained is not None:
            trained = {s.name: s.name in entry.trained for s in specs}
        specs = apply_overrides(specs, entry.shapes, entry.constants, entry.init, trained)
    refuse_keyword_only(target.function, {*settings.shapes, *settings.constants,
                                          *settings.init})
    return apply_overrides(specs, settings.shapes, settings.constants, settings.init,
                           settings.trained, settings.given)


def _leaf(value: object) -> object:
    """A throwaway argument as forward gets it: a floating-point tensor as the clone of a
    leaf that requires grad; an integer tensor (an index) or a constant as it is."""
    if isinstance(value, torch.Tensor) and differentiable(value):
        return value.requires_grad_().clone()
    return value


#: what a parameter is tried as when a probe asks whether it is a plain number: 2 rather than 1
#: or 0, so that a backward forgetting to scale by it still disagrees
PROBE_FLOAT, PROBE_INT = 2.0, 2
#: a probe's forward or backward still running after this long counts as a refusal
PROBE_SECONDS = 5.0


def _gradients(function: type[Function], specs: list[Spec], constants: dict[str, object],
               dtype: torch.dtype, device: torch.device) -> tuple | None:
    """One forward and backward with ``constants`` in place of those parameters' tensors:
    backward's gradients (an empty tuple where its graph node is not the Function's own), or
    None when the Function refuses them: raises, or runs past :data:`PROBE_SECONDS` (a
    backward that never returns must not hang the build; the check reports it). Through the
    user-code boundary, so a Cancelled or KeyboardInterrupt still stops it."""
    trial = [ConstSpec(s.name, constants[s.name]) if s.name in constants else s for s in specs]
    _, args = draw(trial, 0, dtype, device)
    call = [_leaf(a) for a in args]
    try:
        outs = normalize_outputs(function, run_user_within(
            function, "forward", lambda: function.apply(*call), PROBE_SECONDS))
        node = next((o.grad_fn for o in outs if o.grad_fn is not None), None)
        if getattr(node, "_forward_cls", None) is not function:
            return ()
        grads = [torch.ones_like(o) if differentiable(o) else None for o in outs]
        raw = run_user_within(function, "backward", lambda: call_backward(function, node, grads),
                              PROBE_SECONDS)
    except (FunctionError, Overtime):
        return None
    raw = raw if isinstance(raw, tuple) else (raw,)
    names = [s.name for s in specs]
    if any(k < len(raw) and raw[k] is not None for k, n in enumerate(names) if n in constants):
        return None  # a gradient for a number: this is not how the Function is meant
    return raw


def _as_numbers(function: type[Function], specs: list[Spec], names: list[str], dtype: torch.dtype,
                device: torch.device) -> dict[str, object] | None:
    """Values for ``names`` that the Function accepts as plain numbers (a float where it takes
    one, else an int), or None when it takes neither."""
    for value in (PROBE_FLOAT, PROBE_INT):
        constants: dict[str, object] = dict.fromkeys(names, value)
        if _gradients(function, specs, constants, dtype, device) is not None:
            break
    else:
        return None
    if value == PROBE_INT and len(names) > 1:  # some of them may still take a float
        for name in names:
            trial = {**constants, name: PROBE_FLOAT}
            if _gradients(function, specs, trial, dtype, device) is not None:
                constants = trial
    return constants


def _runs(names: list[str]) -> list[list[str]]:
    """The groups of ``names`` to try as plain numbers, in order: the trailing ones (the
    last, the last two...), then the leading ones, then each alone."""
    out: list[list[str]] = []
    for group in ([names[k:] for k in range(len(names) - 1, -1, -1)]
                  + [names[:k] for k in range(1, len(names) + 1)] + [[n] for n in names]):
        if group not in out:
            out.append(group)
    return out


def tensors_annotated_float(function: type[Function], specs: list[Spec], names: list[str],
                            dtype: torch.dtype, device: torch.device) -> list[Spec]:
    """``specs`` with each of ``names`` (annotated ``float``, without a default: so far a
    constant) a tensor where backward returns a gradient for it as one: ``x: float`` is
    often written for a tensor of floats."""
    order = [s.name for s in specs]
    for group in [names, *([n] for n in names)] if len(names) > 1 else [names]:
        trial = [TensorSpec(s.name) if s.name in group else s for s in specs]
        grads = _gradients(function, trial, {}, dtype, device) if group else None
        if not grads:
            continue
        taken = [n for n in group if order.index(n) < len(grads)
                 and isinstance(grads[order.index(n)], torch.Tensor)]
        specs = [TensorSpec(s.name) if s.name in taken else s for s in specs]
        names = [n for n in names if n not in taken]
    return specs


def infer_constants(function: type[Function], specs: list[Spec], candidates: list[str],
                    dtype: torch.dtype, device: torch.device) -> tuple[list[Spec], list[Guess]]:
    """Which of ``candidates`` (parameters with no annotation, default or setting, so far
    taken as tensors) are plain numbers, by probing the Function at throwaway inputs.

    A parameter is a number when backward returns None for it and forward takes a number
    there, or when forward refuses a tensor for the trailing parameters and takes numbers.
    At least one tensor input always remains. Nothing is inferred when every probe fails:
    the check then reports the Function's own error.
    """
    tensors = [s.name for s in specs if isinstance(s, TensorSpec)]
    candidates = [c for c in candidates if c in tensors]
    if not candidates or len(tensors) < 2:  # one tensor input always remains
        return specs, []
    found: dict[str, object] | None = None
    why = ""
    grads = _gradients(function, specs, {}, dtype, device)
    if grads is not None:
        pos = {s.name: k for k, s in enumerate(specs)}
        unused = [c for c in candidates if pos[c] < len(grads) and grads[pos[c]] is None]
        if unused and len(unused) < len(tensors):
            found = _as_numbers(function, specs, unused, dtype, device)
            why = "backward returns None for it"
    else:
        for names in _runs(candidates):
            if len(names) >= len(tensors):
                continue
            found = _as_numbers(function, specs, names, dtype, device)
            if found is not None:
                why = "forward does not take a tensor there"
                break
    if not found:
        return specs, []
    specs = [ConstSpec(s.name, found[s.name]) if s.name in found else s for s in specs]
    return specs, [Guess(name, value, f"{UNANNOTATED}; {why}") for name, value in found.items()]


def guesses_for(target: Target, settings: Settings, specs: list[Spec]) -> tuple[list[str],
                                                                                list[Guess]]:
    """The parameters neither the signature, the gallery nor the settings settle: those
    without annotation or default (to probe), and the annotated constants given a value."""
    given = set(settings.shapes) | set(settings.constants) | set(settings.given)
    if target.entry is not None:
        given |= set(target.entry.shapes) | set(target.entry.constants)
    open_ = {n: why for n, why in guessed_parameters(target.function).items() if n not in given}
    candidates = [n for n, why in open_.items() if why == UNANNOTATED]
    annotated = [Guess(s.name, s.value, open_[s.name]) for s in specs
                 if isinstance(s, ConstSpec) and s.name in open_ and open_[s.name] != UNANNOTATED]
    return candidates, annotated


def output_shapes(function: type[Function], specs: list[Spec], dtype: torch.dtype,
                  device: torch.device) -> list[tuple[int, ...]]:
    """Shapes of the differentiable outputs, from one forward at throwaway inputs."""
    return [shape for shape, _ in output_layout(function, specs, dtype, device)]


def output_layout(function: type[Function], specs: list[Spec], dtype: torch.dtype,
                  device: torch.device) -> list[tuple[tuple[int, ...], bool]]:
    """(shape, is complex) of each differentiable output, from one forward at throwaway
    inputs (a complex output's target is complex).

    This is also where a shape the Function rejects is reported, with its own message.
    """
    _, args = draw(specs, 0, dtype, device)
    call = [_leaf(a) for a in args]
    outs = normalize_outputs(function, run_user(function, "forward",
                                                lambda: function.apply(*call)))
    return [(tuple(o.shape), o.is_complex()) for o in outs
            if differentiable(o) and o.requires_grad]


def drawn_text(specs: list[Spec], dtype: torch.dtype) -> str:
    """What forward is given for each parameter, in words: ``x: a float64 tensor 3x8
    (normal), n: the constant 2``."""
    parts = []
    for spec in specs:
        if isinstance(spec, ConstSpec):
            parts.append(f"{spec.name}: the constant {spec.value!r}")
            continue
        if spec.value is not None:
            kind = str(spec.value.dtype if not differentiable(spec.value) else dtype)
        else:
            kind = str(torch.int64 if is_integer_init(spec.init) else dtype)
        parts.append(f"{spec.name}: a {kind.replace('torch.', '')} tensor "
                     f"{format_shape(spec.shape)} ({spec.init})")
    return ", ".join(parts)


def drawn_dtype(dtype: str, target: Target | None) -> torch.dtype:
    """The dtype the inputs are drawn in: ``dtype``, but its complex kind for a complex
    gallery entry (complex64 where float32 is chosen)."""
    chosen = parse_dtype(dtype)
    entry = None if target is None else target.entry
    return in_kind(chosen, True) if entry is not None and entry.complex else chosen


def build(settings: Settings, target: Target | None = None) -> Problem:
    """Resolve, validate and draw: raises CustomGradError subclasses with clear messages."""
    settings.validate()
    target = target or resolve(settings.target)
    dtype, device = drawn_dtype(settings.dtype, target), parse_device(settings.device)
    specs = specs_for(target, settings)
    candidates, guesses = guesses_for(target, settings, specs)
    floats = [g.name for g in guesses if g.reason == "annotated float, without a default"]
    specs = tensors_annotated_float(target.function, specs, floats, dtype, device)
    guesses = [g for g in guesses if not any(isinstance(s, TensorSpec) and s.name == g.name
                                             for s in specs)]
    specs, probed = infer_constants(target.function, specs, candidates, dtype, device)
    try:
        layout = output_layout(target.function, specs, dtype, device)
    except FunctionError as exc:
        if exc.phase != "forward" or getattr(exc, "returned", False):
            raise  # (not the inputs': what forward returned)
        text = str(exc).rstrip()
        error = FunctionError(f"{text}{'' if text.endswith('.') else '.'} forward was given "
                              f"{drawn_text(specs, dtype)}.", file=exc.file, line=exc.line,
                              details=exc.details, phase=exc.phase)
        error.drawn = True  # a front end may add how to draw them otherwise
        raise error from None
    targets, args = draw(specs, settings.seed, dtype, device, [s for s, _ in layout],
                         [c for _, c in layout])
    order = [s.name for s in specs]
    guesses = sorted(guesses + probed, key=lambda g: order.index(g.name))
    return Problem(target, specs, dtype, device, args, targets, settings, guesses)


__all__ = ["ConstSpec", "Guess", "Problem", "TensorSpec", "build", "infer_constants",
           "output_shapes", "specs_for"]
