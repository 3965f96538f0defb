"""One forward + backward of a custom Function, laid open.

:func:`inspect_call` runs ``apply`` once at the given arguments, then shows

- what ``backward`` received (one seeded random gradient per differentiable output, exactly as
  autograd hands them over: materialized zeros or ``None`` for the other outputs),
- what ``forward`` left on ``ctx`` (``saved_tensors``, plain attributes such as ``ctx.n``,
  ``needs_input_grad``),
- what ``backward`` returned, raw (``backward`` is called directly, so a ``[3, 5, 4]`` gradient
  that autograd would sum to the ``[5, 4]`` weight is seen as ``[3, 5, 4]``),
- and the surprises: gradients autograd sums, refuses or discards, gradients for non-tensor
  arguments, NaN or Inf in outputs or gradients.

Torch only (no Qt): the app runs it on a worker thread and draws the :class:`Inspection`.
"""

from __future__ import annotations

import inspect as _inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.autograd import Function

from customgrad.errors import FunctionError, SpecError
from customgrad.function.contract import (
    autograd_casts,
    call_backward,
    dtype_note,
    nonfinite_site,
    normalize_outputs,
    run_user,
)
from customgrad.function.inputs import forward_parameters

#: tensors with more elements than this keep no values (only shape, dtype and statistics)
VALUES_LIMIT = 1 << 14

NOTE, WARNING, ERROR = "note", "warning", "error"


def shape_text(shape: tuple[int, ...] | None) -> str:
    """``[3, 5, 4]`` as torch prints it; ``[]`` for a scalar."""
    if shape is None:
        return "?"
    return "[" + ", ".join(str(d) for d in shape) + "]"


def dtype_text(dtype: torch.dtype | None) -> str:
    return str(dtype).removeprefix("torch.") if dtype is not None else "?"


@dataclass
class Value:
    """One thing the inspector shows: a tensor, ``None``, a plain object or a missing value.

    Tensors keep their shape, dtype, device and (up to :data:`VALUES_LIMIT` elements) a
    detached float64 CPU copy of their values for drawing.
    """

    name: str
    kind: str  # "tensor", "none", "object" or "missing"
    shape: tuple[int, ...] | None = None
    dtype: torch.dtype | None = None
    device: str | None = None
    values: torch.Tensor | None = None
    finite: bool = True
    minimum: float | None = None
    maximum: float | None = None
    text: str = ""  # repr of a non-tensor
    type_name: str = ""  # type of a non-tensor
    note: str = ""  # e.g. "same memory as input x", "autograd sums it to [5, 4]"
    final_shape: tuple[int, ...] | None = None  # a returned gradient after autograd's summing

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    def describe(self) -> str:
        """``[3, 8] float64``, ``None``, ``int 2`` or ``missing``."""
        if self.kind == "tensor":
            where = "" if self.device in (None, "cpu") else f" on {self.device}"
            return f"{shape_text(self.shape)} {dtype_text(self.dtype)}{where}"
        if self.kind == "none":
            return "None"
        if self.kind == "missing":
            return "missing"
        return f"{self.type_name} {self.text}"


@dataclass
class Surprise:
    """Something worth knowing about the call: legal but surprising (note), suspicious
    (warning), or refused by autograd (error)."""

    kind: str
    message: str
    severity: str = NOTE
    position: int | None = None


@dataclass
class Inspection:
    """What one forward + backward did; see the module docstring."""

    function_name: str
    params: list[str]
    inputs: list[Value]
    outputs: list[Value]
    received: list[Value] = field(default_factory=list)
    saved: list[Value] = field(default_factory=list)
    ctx_attributes: dict[str, Value] = field(default_factory=dict)
    needs_input_grad: tuple[bool, ...] = ()
    returned: list[Value] = field(default_factory=list)
    surprises: list[Surprise] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: FunctionError | None = None  # backward raised: the rest is still shown
    seed: int = 0

    @property
    def nonfinite(self) -> list[Surprise]:
        """The NaN/Inf surprises (outputs and gradients)."""
        return [s for s in self.surprises if s.kind in ("nan_output", "nan_gradient")]

    def by_kind(self, kind: str) -> list[Surprise]:
        return [s for s in self.surprises if s.kind == kind]

    def summary(self) -> str:
        """The whole inspection as plain text (for the CLI, logs and tests)."""
        lines = [f"{self.function_name}: one forward + backward (grad_outputs drawn with seed "
                 f"{self.seed})"]

        def section(title: str, values: list[Value]) -> None:
            lines.append(f"{title}:")
            if not values:
                lines.append("  (nothing)")
            for v in values:
                extra = f"  ({v.note})" if v.note else ""
                lines.append(f"  {v.name}: {v.describe()}{extra}")

        section("forward received", self.inputs)
        section("forward returned", self.outputs)
        section("backward received", self.received)
        section("ctx.saved_tensors", self.saved)
        section("ctx attributes", list(self.ctx_attributes.values()))
        lines.append(f"ctx.needs_input_grad: {self.needs_input_grad}")
        section("backward returned", self.returned)
        if self.error is not None:
            lines.append(f"backward failed: {self.error}")
        for s in self.surprises:
            lines.append(f"{s.severity}: {s.message}")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)


class _Stop(Exception):
    """Raised from the intercepted node to stop autograd right before the user's backward."""


def describe_value(name: str, value: object) -> Value:
    """A :class:`Value` for anything: tensors keep a small CPU copy of their values."""
    if value is None:
        return Value(name, "none")
    if not isinstance(value, torch.Tensor):
        return Value(name, "object", text=_short_repr(value), type_name=type(value).__name__)
    t = value.detach()
    v = Value(name, "tensor", tuple(t.shape), t.dtype, str(t.device))
    if t.device.type == "meta" or t.is_sparse or t.layout != torch.strided:
        return v
    try:
        numbers = t.abs() if t.is_complex() else t
        numbers = numbers.to("cpu", torch.float64)
    except (RuntimeError, TypeError):
        return v
    finite = torch.isfinite(numbers)
    v.finite = bool(finite.all()) if numbers.numel() else True
    good = numbers[finite]
    if good.numel():
        v.minimum, v.maximum = float(good.min()), float(good.max())
    if numbers.numel() <= VALUES_LIMIT:
        v.values = numbers.clone()
    return v


def _short_repr(value: object, limit: int = 60) -> str:
    try:
        text = repr(value)
    except Exception:  # a user object whose __repr__ fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _article(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return (a.data_ptr() == b.data_ptr() and a.data_ptr() != 0 and a.shape == b.shape
                and a.stride() == b.stride())
    except (RuntimeError, NotImplementedError):
        return False


def _grad_names(function: type[Function], count: int) -> list[str]:
    """backward's own parameter names for its gradient inputs (grad_output, ...)."""
    names: list[str] = []
    star = None
    try:
        params = list(_inspect.signature(function.backward).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            star = p.name
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    out = []
    for k in range(count):
        if k < len(names):
            out.append(names[k])
        else:
            out.append(f"{star or 'grad_outputs'}[{k - len(names) if star else k}]")
    return out


def inspect_call(function: type[Function], args: list, seed: int = 0,
                 requires_grad: list[bool] | None = None) -> Inspection:
    """One forward + backward of ``function`` at ``args``, laid open.

    Floating-point tensor arguments require grad (as in the Jacobian check) unless
    ``requires_grad`` says otherwise. ``args`` are not modified. Raises FunctionError when
    forward fails (there is nothing to inspect then); a failing backward is kept in
    ``Inspection.error`` with everything seen before it.
    """
    params = [p.name for p in forward_parameters(function)]
    args = list(args)
    if len(args) != len(params):
        raise SpecError(f"{function.__name__}.forward takes {len(params)} arguments "
                        f"({', '.join(params)}), {len(args)} were given.")
    call: list[object] = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            t = a.detach().clone()
            wants = t.is_floating_point() or t.is_complex()
            if requires_grad is not None:
                wants = wants and bool(requires_grad[i])
            # apply gets a clone of the leaf, so a forward that works in place (mark_dirty)
            # never modifies a leaf
            call.append(t.requires_grad_().clone() if wants else t)
        else:
            call.append(a)
    result = Inspection(function.__name__, params,
                        [describe_value(p, a) for p, a in zip(params, call)], [], seed=seed)

    raw = run_user(function, "forward", lambda: function.apply(*call))
    outs = normalize_outputs(function, raw)
    out_names = ["output"] if len(outs) == 1 else [f"output[{k}]" for k in range(len(outs))]
    result.outputs = [describe_value(n, o) for n, o in zip(out_names, outs)]
    for k, v in enumerate(result.outputs):
        if v.is_tensor and not v.finite:
            result.surprises.append(Surprise(
                "nan_output", f"forward's {out_names[k]} contains NaN or Inf at these inputs"
                f"{_first_made(function, 'forward', lambda: function.apply(*_copies(call)))}.",
                WARNING, k))

    node = next((o.grad_fn for o in outs if o.grad_fn is not None
                 and getattr(o.grad_fn, "_forward_cls", None) is function), None)
    if node is None:
        result.notes.append("No output has the Function's own graph node (no input requires "
                            "grad, or no output is differentiable): autograd never calls "
                            "backward here.")
        return result
    _read_ctx(result, node, call, outs, params)
    received = _received(function, node, outs, seed)
    result.received = [describe_value(n, g)
                       for n, g in zip(_grad_names(function, len(received)), received)]
    grads = [g.clone() if isinstance(g, torch.Tensor) else g for g in received]
    try:
        returned = call_backward(function, node, grads)
    except FunctionError as exc:
        result.error = exc
        return result
    _check_returned(result, function, call, returned)
    bad = [k for k, s in enumerate(result.surprises) if s.kind == "nan_gradient"]
    if bad:  # where backward made it: its line, found by running it once more
        where = _first_made(function, "backward",
                            lambda: call_backward(function, node, _copies(received)))
        for k in bad:
            s = result.surprises[k]
            result.surprises[k] = Surprise(s.kind, s.message.rstrip(".") + where + ".",
                                           s.severity, s.position)
    return result


def _copies(values) -> list:
    """``values`` with each tensor cloned (a leaf that requires grad stays one)."""
    return [v.detach().clone().requires_grad_(v.requires_grad)
            if isinstance(v, torch.Tensor) and v.requires_grad
            else v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _first_made(function: type[Function], method: str, call: Callable[[], object]) -> str:
    """``, first appears at nan.py:14 (in backward)``: where ``call`` first makes a NaN or
    Inf (:func:`customgrad.function.contract.nonfinite_site`; one from numpy, at the first
    torch call that takes it); '' where that is not known."""
    import os

    file, line = nonfinite_site(function, call)
    return f", first appears at {os.path.basename(file)}:{line} (in {method})" \
        if file and line else ""


def _read_ctx(result: Inspection, node, call: list, outs: tuple, params: list[str]) -> None:
    """saved_tensors, plain attributes and needs_input_grad of the graph node (the ctx)."""

    def origin(t: torch.Tensor) -> str:
        for p, a in zip(params, call):
            if isinstance(a, torch.Tensor) and _same_memory(t, a):
                return f"input {p!r}"
        for k, o in enumerate(outs):
            if _same_memory(t, o):
                return "the output" if len(outs) == 1 else f"output[{k}]"
        return ""

    try:
        saved = tuple(node.saved_tensors)
    except RuntimeError as exc:
        saved = ()
        result.notes.append(f"ctx.saved_tensors cannot be read: {exc}")
    for k, t in enumerate(saved):
        v = describe_value(f"saved_tensors[{k}]", t)
        if isinstance(t, torch.Tensor):
            where = origin(t)
            v.note = f"same memory as {where}" if where else "computed in forward"
        result.saved.append(v)
    for name, value in vars(node).items():
        if name.startswith("_"):
            continue
        v = describe_value(f"ctx.{name}", value)
        if isinstance(value, torch.Tensor):
            where = origin(value)
            if where:
                v.note = f"same memory as {where}"
                result.surprises.append(Surprise(
                    "tensor_on_ctx",
                    f"ctx.{name} holds {where} directly; save inputs and outputs with "
                    "ctx.save_for_backward instead, so autograd can detect in-place changes "
                    "and no reference cycle keeps them alive.", NOTE))
        result.ctx_attributes[name] = v
    try:
        result.needs_input_grad = tuple(bool(b) for b in node.needs_input_grad)
    except (AttributeError, RuntimeError, TypeError):
        result.needs_input_grad = ()


def _received(function: type[Function], node, outs: tuple, seed: int) -> list:
    """The grad_outputs autograd hands to backward when every differentiable output gets a
    seeded random gradient (the others: materialized zeros, or None after
    ``ctx.set_materialize_grads(False)``).

    Found by running autograd up to the Function's node and stopping it there; if that ever
    fails (another torch version), the engine's convention is used instead.
    """
    gen = torch.Generator().manual_seed(int(seed))
    diff = [o for o in outs if o.requires_grad and o.grad_fn is node]
    seeds = []
    for o in diff:
        draw = torch.randn(o.shape, generator=gen, dtype=torch.float64)
        seeds.append(draw.to(o.dtype).to(o.device) if not o.is_complex()
                     else torch.complex(draw, torch.zeros_like(draw)).to(o.dtype).to(o.device))
    captured: list = []

    def capture(*grads):
        captured.append(grads)
        raise _Stop

    try:
        node.apply = capture
        try:
            if any(d.is_complex() for d in diff):
                torch.autograd.backward(diff, seeds, retain_graph=True)
            else:
                # the same seeds reach the node, and torch imports no sympy on this path
                total = sum((d * s).sum() for d, s in zip(diff, seeds))
                torch.autograd.backward(total, retain_graph=True)
        except _Stop:
            pass
        except RuntimeError as exc:
            if "_Stop" not in str(exc) and not captured:
                raise
    except (RuntimeError, AttributeError, TypeError):
        captured.clear()
    finally:
        try:
            del node.apply
        except AttributeError:
            pass
    if captured:
        return list(captured[0])
    it = iter(seeds)
    return [next(it) if (o.requires_grad and o.grad_fn is node) else torch.zeros_like(o)
            for o in outs]


def _check_returned(result: Inspection, function: type[Function], call: list, raw) -> None:
    """Compare backward's raw result with forward's arguments, like autograd would."""
    grads = raw if isinstance(raw, tuple) else (raw,)
    params = result.params
    needs = result.needs_input_grad
    add = result.surprises.append
    for pos in range(max(len(params), len(grads))):
        g = grads[pos] if pos < len(grads) else None
        if pos >= len(params):
            if g is not None:
                result.returned.append(describe_value(f"extra[{pos}]", g))
            continue
        param = params[pos]
        arg = call[pos]
        if pos >= len(grads):
            result.returned.append(Value(f"grad for {param}", "missing"))
            continue
        v = describe_value(f"grad for {param}", g)
        result.returned.append(v)
        wanted = needs[pos] if pos < len(needs) else isinstance(arg, torch.Tensor)
        if g is None:
            if isinstance(arg, torch.Tensor) and wanted:
                add(Surprise("none_gradient", f"backward returns None for {param}: autograd "
                             "treats its gradient as zero.", NOTE, pos))
            continue
        if not isinstance(arg, torch.Tensor):
            v.note = "autograd refuses this"
            add(Surprise("non_tensor_argument",
                         f"backward returned a gradient for {param} (position {pos}), which is "
                         f"{_article(type(arg).__name__)}, not a tensor: autograd refuses it. "
                         "Return None there.", ERROR, pos))
            continue
        if not isinstance(g, torch.Tensor):
            v.note = "not a tensor"
            add(Surprise("not_tensor", f"backward returned {_article(type(g).__name__)} as the "
                         f"gradient of {param}; gradients must be tensors or None.", ERROR, pos))
            continue
        _check_tensor_gradient(v, param, pos, g, arg, wanted, add)
    if len(grads) < len(params) or any(g is not None for g in grads[len(params):]):
        count = len(grads)
        add(Surprise("count", f"backward returned {count} gradient{'s' if count != 1 else ''}, "
                     f"but forward takes {len(params)} argument"
                     f"{'s' if len(params) != 1 else ''} ({', '.join(params)}): return one per "
                     "argument, None for non-tensors.", ERROR))


def _check_tensor_gradient(v: Value, param: str, pos: int, g: torch.Tensor, arg: torch.Tensor,
                           wanted: bool, add: Callable[[Surprise], None]) -> None:
    """The checks on a tensor gradient for a tensor argument: wanted at all, then device,
    dtype, shape (summed by autograd, or refused) and finiteness; notes go on ``v``."""
    if not wanted:
        v.note = "discarded by autograd"
        add(Surprise("unneeded_gradient",
                     f"backward computed a gradient for {param}, but "
                     f"ctx.needs_input_grad[{pos}] is False, so autograd throws it away "
                     "(check ctx.needs_input_grad to skip that work).", NOTE, pos))
    if g.device != arg.device:
        v.note = "wrong device"
        add(Surprise("device", f"backward returned the gradient of {param} on "
                     f"{g.device}, but {param} is on {arg.device}: autograd refuses it.",
                     ERROR, pos))
        return
    if g.dtype != arg.dtype:
        cast = autograd_casts(g.dtype, arg.dtype)
        add(Surprise("dtype", dtype_note(param, g.dtype, arg.dtype) if cast else
                     f"backward returned the gradient of {param} as {dtype_text(g.dtype)}, "
                     f"but {param} is {dtype_text(arg.dtype)}: autograd refuses it.",
                     NOTE if cast else ERROR, pos))
    if g.shape != arg.shape:
        try:
            summed = g.sum_to_size(arg.shape)
        except RuntimeError:
            v.note = "wrong shape"
            add(Surprise("wrong_shape",
                         f"backward returned a gradient of shape {shape_text(tuple(g.shape))}"
                         f" for {param}, whose shape is {shape_text(tuple(arg.shape))}: "
                         "autograd refuses it.", ERROR, pos))
            return
        v.final_shape = tuple(summed.shape)
        v.note = f"autograd sums it to {shape_text(v.final_shape)}"
        add(Surprise("summed",
                     f"shape surprise: backward returns a {shape_text(tuple(g.shape))} "
                     f"gradient for {param}; autograd sums it to {param}'s "
                     f"{shape_text(tuple(arg.shape))}.", NOTE, pos))
    else:
        v.final_shape = tuple(g.shape)
    if not v.finite:
        add(Surprise("nan_gradient", f"backward's gradient for {param} contains NaN or Inf "
                     "at these inputs.", WARNING, pos))


__all__ = ["ERROR", "NOTE", "VALUES_LIMIT", "WARNING", "Inspection",
           "Surprise", "Value", "describe_value", "dtype_text", "inspect_call", "shape_text"]
