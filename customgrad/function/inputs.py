"""Input specs derived from a Function's ``forward`` signature, and seeded tensors drawn from them.

A parameter without a default is a tensor input; a parameter with an int/float/bool/None/str
default is a constant. Annotations refine the guess (``n: int`` is a constant), a probe of the
Function can too (:func:`customgrad.problems.problem.infer_constants`), and every spec can be
overridden.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
from torch.autograd import Function

from customgrad.defaults import DEFAULT_SHAPE, SCALAR, format_shape
from customgrad.errors import SpecError
from customgrad.function.dtypes import in_kind, same_kind

MAX_ELEMENTS = 50_000_000
#: the constants a form edits and a session stores
CONST_TYPES = (int, float, bool, str, type(None))
#: the sequences of constants taken as one constant (``dim=(0, 1)``, ``sizes=[2, 3]``)
SEQUENCE_TYPES = (tuple, list)


def is_constant(value: object) -> bool:
    """A plain constant, or a tuple or list of them (not nested): what forward takes as one
    non-tensor argument."""
    if isinstance(value, SEQUENCE_TYPES):
        return type(value) in SEQUENCE_TYPES and all(
            type(v) in CONST_TYPES or isinstance(v, int) for v in value)
    return isinstance(value, CONST_TYPES)


#: the values that travel between processes as they are (see plain)
PLAIN_TYPES = (bool, int, float, complex, str, bytes, type(None))
_UNIFORM = re.compile(r"^uniform\(\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\)$")
#: ``randint(a,b)``: whole numbers a <= k < b, as an int64 tensor (indices, class targets)
_RANDINT = re.compile(r"^randint\(\s*([-+]?[0-9]+)\s*,\s*([-+]?[0-9]+)\s*\)$")


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument of ``forward``: shape, how it is drawn, whether descent trains it."""

    name: str
    shape: tuple[int, ...] = DEFAULT_SHAPE
    init: str = "normal"
    trained: bool = True
    #: the tensor itself where its init is ``given`` (``playground.show`` on your tensors)
    value: torch.Tensor | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ConstSpec:
    """A non-tensor argument of ``forward`` with its value, and forward's default for it
    (``defaults``: a one-tuple holding it, empty where forward has none)."""

    name: str
    value: object = None
    defaults: tuple = field(default=(), compare=False, repr=False)


Spec = TensorSpec | ConstSpec


def is_new_style(function: type[Function]) -> bool:
    """True when the Function defines ``setup_context`` (forward then takes no ctx)."""
    for klass in function.__mro__:
        if klass.__module__.startswith("torch."):
            return False
        if "setup_context" in vars(klass):
            return True
    return False


def forward_parameters(function: type[Function]) -> list[inspect.Parameter]:
    """The parameters of ``forward`` that ``apply`` takes (ctx removed for ctx-style Functions)."""
    try:
        params = list(inspect.signature(function.forward).parameters.values())
    except (TypeError, ValueError) as exc:
        raise SpecError(f"Cannot read the signature of {function.__name__}.forward: {exc}") from exc
    if not is_new_style(function):
        params = params[1:]
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise SpecError(
                f"{function.__name__}.forward takes *{p.name}; give it named parameters "
                "so the playground knows its inputs (customgrad.check(Function, *args) in "
                "Python takes it as it is, naming what you pass)."
            )
        if p.kind == p.KEYWORD_ONLY and p.default is p.empty:
            raise SpecError(
                f"{function.__name__}.forward has the keyword-only parameter {p.name} without "
                "a default, but apply passes arguments by position; make it positional.")
    # apply passes arguments by position: keyword-only ones keep their defaults
    return [p for p in params if p.kind != p.KEYWORD_ONLY]


def refuse_keyword_only(function: type[Function], names) -> None:
    """SpecError where one of ``names`` (given a shape, a constant, an init) is a keyword-only
    parameter of ``forward``: apply passes arguments by position, so it keeps its default
    (gradcheck's ``apply`` cannot set it either)."""
    try:
        params = inspect.signature(function.forward).parameters.values()
    except (TypeError, ValueError):
        return
    for p in params:
        if p.kind == p.KEYWORD_ONLY and p.name in names:
            raise SpecError(
                f"{p.name} is a keyword-only parameter of {function.__name__}.forward: apply "
                f"passes arguments by position, so it keeps its default ({p.default!r}); make "
                "it positional to set it.", field=p.name)


def spelled_out(function: type[Function], count: int) -> type[Function]:
    """``function`` itself, or where its ``forward`` takes ``*args`` (``forward(ctx, *inputs)``,
    as ``torch.utils.checkpoint``'s Function), a subclass whose ``forward`` names the
    ``count`` arguments it is called with: ``inputs0``, ``inputs1``, ... after the named ones.
    It hands them on to the user's ``forward`` unchanged; backward, ``setup_context`` and
    everything else are the user's own (the check needs names for the inputs it reports)."""
    try:
        params = list(inspect.signature(function.forward).parameters.values())
    except (TypeError, ValueError):
        return function  # forward_parameters says why
    star = next((p for p in params if p.kind == p.VAR_POSITIONAL), None)
    if star is None:
        return function
    ctx = [] if is_new_style(function) else params[:1]
    named = [p for p in params[len(ctx):] if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)]
    taken = {p.name for p in params}
    extra = []
    for k in range(max(0, count - len(named))):
        name = f"{star.name}{k}"
        while name in taken:
            name += "_"
        extra.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY))
    return _forward_naming(function, [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY)
                                      for p in (*ctx, *named)] + extra)


def as_applied(function: type[Function], count: int) -> type[Function]:
    """``function`` itself, or where it is a ctx-style Function applied to fewer arguments
    than its ``forward`` names (the rest keep forward's defaults), a subclass whose
    ``forward`` names only those ``count``: for a ctx-style Function ``apply`` hands autograd
    the arguments it is given (Python fills the defaults inside forward), so backward returns
    one gradient per argument given (the PyTorch tutorial's ``BatchNorm.apply(X)`` for
    ``forward(ctx, X, eps=1e-3)`` returns one), as gradcheck calls it. Filled in, the
    defaults would be arguments autograd asks a gradient for (an error where gradcheck
    passes). A ``setup_context``-style Function's ``apply`` binds the defaults itself (one
    gradient each): it is kept as it is, as is one given every argument."""
    if is_new_style(function):
        return function
    try:
        params = list(inspect.signature(function.forward).parameters.values())
    except (TypeError, ValueError):
        return function  # forward_parameters says why
    named = [p for p in params[1:] if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if count >= len(named) or any(p.default is p.empty for p in named[count:]):
        return function  # all given, or with_defaults names the missing one
    return _forward_naming(function, [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY)
                                      for p in (*params[:1], *named[:count])])


def _forward_naming(function: type[Function], params: list[inspect.Parameter]) -> type[Function]:
    """A subclass of ``function`` whose ``forward`` has the signature ``params`` and hands
    its arguments on to the user's ``forward`` unchanged."""
    original = function.forward

    def forward(*args):
        return original(*args)

    forward.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    forward.__doc__ = original.__doc__
    return type(function.__name__, (function,), {
        "forward": staticmethod(forward), "__module__": function.__module__,
        "__qualname__": function.__qualname__, "__doc__": function.__doc__})


def with_defaults(function: type[Function], args: list | tuple) -> list:
    """forward's arguments ``args`` as ``apply`` takes them, completed with forward's defaults
    (as Python fills them for ``apply``); SpecError for too many, or a missing one without a
    default."""
    params = forward_parameters(function)
    name = function.__name__
    if len(args) > len(params):
        raise SpecError(f"{name}.forward takes {len(params)} arguments "
                        f"({', '.join(p.name for p in params)}), {len(args)} were given.")
    missing = [p.name for p in params[len(args):] if p.default is inspect.Parameter.empty]
    if missing:
        raise SpecError(f"{name}.forward takes {len(params)} arguments "
                        f"({', '.join(p.name for p in params)}), {len(args)} were given: "
                        f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no "
                        "default.")
    return [*args, *(p.default for p in params[len(args):])]


def annotation_text(annotation: object) -> str:
    """An annotation as text (``Optional[int]`` keeps its int); empty for none."""
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


_CONST_DEFAULTS = {"int": 1, "float": 1.0, "bool": False, "str": ""}
_WRAPPERS = {"typing", "Optional", "Union", "None", "NoneType"}


def _const_kind(annotation: str) -> str | None:
    """``int``, ``float``, ``bool`` or ``str`` for such an annotation (also ``Optional[int]``,
    ``int | None``); None for anything else."""
    words = [w for w in re.findall(r"[A-Za-z_]+", annotation) if w not in _WRAPPERS]
    if words and all(w in _CONST_DEFAULTS for w in words):
        return words[0]
    return None


def plain(value: object) -> object:
    """``value`` as exactly its builtin type: an ``IntEnum`` member as its int, a ``str``
    enum's as its text. A constant travels between processes, and a member of a class of the
    user's module would make the receiving process import that module (the window never
    does), so a default is its plain value everywhere."""
    if type(value) in PLAIN_TYPES:
        return value
    kinds: tuple[type, ...] = (bool, int, float, complex, str, bytes)  # bool first: an int too
    for kind in kinds:
        if isinstance(value, kind):
            return str.__str__(value) if kind is str else kind(value)
    return value


def _derive(function: type[Function]) -> list[tuple[Spec, str]]:
    """Each parameter's spec, with how it was guessed where the signature does not say: an
    empty string when it does (a Tensor annotation, a default), else the reason."""
    out: list[tuple[Spec, str]] = []
    for p in forward_parameters(function):
        ann = annotation_text(p.annotation)
        has_default = p.default is not inspect.Parameter.empty
        kind = _const_kind(ann)
        if "Tensor" in ann:  # the annotation wins, even over a None default
            out.append((TensorSpec(p.name), ""))
        elif has_default and is_constant(p.default):
            value = type(p.default)(plain(v) for v in p.default) \
                if isinstance(p.default, SEQUENCE_TYPES) else plain(p.default)
            out.append((ConstSpec(p.name, value, (value,)), ""))
        elif not has_default and kind is not None:
            out.append((ConstSpec(p.name, _CONST_DEFAULTS[kind]),
                        f"annotated {kind}, without a default"))
        elif not has_default and not ann:
            out.append((TensorSpec(p.name), UNANNOTATED))
        else:
            out.append((TensorSpec(p.name), ""))
    return out


#: the reason given for a parameter with neither an annotation nor a default
UNANNOTATED = "no annotation, no default"


def derive_specs(function: type[Function]) -> list[Spec]:
    """Guess the specs of ``function.forward``'s parameters from defaults and annotations."""
    return [spec for spec, _ in _derive(function)]


def guessed_parameters(function: type[Function]) -> dict[str, str]:
    """The parameters whose spec the signature does not settle, with the reason: a constant
    annotated ``int`` (``float``...) without a default, or a parameter with neither
    (:data:`UNANNOTATED`, taken as a tensor unless a probe shows it is a plain number)."""
    return {spec.name: why for spec, why in _derive(function) if why}


#: a tensor of no dimensions (one element), as a shape is written
#: the one shape grammar, ``N(xN)*``: whole numbers in ASCII digits joined by ``x`` (or ``X``),
#: spaces allowed around each ``x``; or :data:`SCALAR`
SHAPE_GRAMMAR = re.compile(r"[0-9]+(?:\s*[xX]\s*[0-9]+)*")
_NOT_A_SEPARATOR = re.compile(r"[^0-9\s,*×()\[\]]")


def parse_shape(text: str | tuple | list, name: str = "shape") -> tuple[int, ...]:
    """The shape ``text`` (``"3x8"``, ``"3 X 8"``, ``"5"``, ``"scalar"``) or a sequence of
    whole numbers, as a tuple; SpecError naming ``name`` otherwise.

    The grammar is :data:`SHAPE_GRAMMAR`, for the CLI's ``--shape``, the app's form and
    session files alike. Every dimension is at least 1: a tensor without elements has no
    Jacobian to compare and no loss to descend.
    """
    if isinstance(text, (tuple, list)):
        dims = [_sequence_dim(d, name) for d in text]
    else:
        raw = str(text).strip()
        if raw.lower() == SCALAR:
            return ()
        if not raw:
            raise SpecError(f"{name}: {_EMPTY}", field=name)
        if not SHAPE_GRAMMAR.fullmatch(raw):
            raise SpecError(f"{name}: {_shape_problem(raw)}", field=name)
        dims = [int(part) for part in re.split(r"\s*[xX]\s*", raw)]
    if not dims:
        raise SpecError(f"{name}: {_EMPTY}", field=name)
    for d in dims:
        if d < 1:
            raise SpecError(f"{name}: dimension {d} must be at least 1 (a tensor without "
                            "elements has nothing to check or train).", field=name)
    if len(dims) > 8:
        raise SpecError(f"{name}: {len(dims)} dimensions is more than the 8 supported.", field=name)
    if math.prod(dims) > MAX_ELEMENTS:
        raise SpecError(
            f"{name}: {'x'.join(map(str, dims))} has {math.prod(dims):,} elements, more than "
            f"the {MAX_ELEMENTS:,} allowed.", field=name)
    return tuple(dims)


#: an empty shape's message (a 0-d tensor is spelt scalar: '' and '()' were refused without it)
_EMPTY = f"empty shape; write it like 3x8 (8 for one dimension, {SCALAR} for a 0-d tensor)."


def _sequence_dim(value: object, name: str) -> int:
    """One dimension of a shape given as a tuple or list (the gallery's, an old session's)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{name}: {value!r} is not a number; write a shape like 3x8.", field=name)
    if isinstance(value, float) and not value.is_integer():
        raise SpecError(f"{name}: dimension {value} is not a whole number.", field=name)
    return int(value)


def _shape_problem(raw: str) -> str:
    """Why ``raw`` is not a shape, with the nearest one that is where there is one."""
    parts = re.split(r"\s*[xX]\s*", raw)
    digits = re.findall(r"[0-9]+", raw)
    if len(parts) > 1 and all(re.fullmatch(r"[0-9]*", p) for p in parts):
        if parts[0] and parts[-1]:
            return f"{raw!r} has two x's in a row; did you mean {'x'.join(digits)}?"
        where = "before the first x" if not parts[0] else "after the last x"
        return f"{raw!r}: a dimension is missing {where}; write a shape like 3x8."
    for part in parts:
        if re.fullmatch(r"[0-9]+", part):
            continue
        try:
            value = float(part)
        except ValueError:
            value = None
        if value is not None and not value.is_integer():
            return f"dimension {part} is not a whole number."
        if value is not None and value < 1:
            return f"dimension {part} must be at least 1."
        if value is not None:
            return f"dimension {part!r}: write it in digits only, as {int(value)}."
        if not _NOT_A_SEPARATOR.search(raw):
            if not digits:
                return f"{raw!r} is not a shape; write it like 3x8 ({SCALAR} for a 0-d tensor)."
            return f"{raw!r}: separate the dimensions with x, as in {'x'.join(digits)}."
        return f"{part!r} is not a number; write a shape like 3x8."
    return f"{raw!r} is not a shape; write it like 3x8 ({SCALAR} for a 0-d tensor)."


def parse_const(text: str, like: object = None, name: str = "constant") -> object:
    """Parse a constant typed on the command line or in a form, guided by its current value."""
    raw = str(text).strip()
    low = raw.lower()
    if low in ("none", "null"):
        return None
    if raw[:1] in "([" or isinstance(like, SEQUENCE_TYPES):
        return _parse_sequence(raw, like, name)
    try:
        # true/false make a bool where the constant is a bool or untyped: "false" typed
        # for a float is an error, and for a str it is the text "false"
        if isinstance(like, bool) or (like is None and low in ("true", "false")):
            if low in ("true", "1", "yes", "on"):
                return True
            if low in ("false", "0", "no", "off"):
                return False
            raise ValueError
        if isinstance(like, int):
            value = float(raw)
            if not value.is_integer():
                raise SpecError(f"{name}: {raw} is not a whole number.", field=name)
            return int(value)
        if isinstance(like, float):
            return float(raw)
        if isinstance(like, str):
            return raw
        try:
            return int(raw)
        except ValueError:
            try:
                return float(raw)
            except ValueError:
                return raw
    except ValueError:
        kind = type(like).__name__
        raise SpecError(f"{name}: {raw!r} is not a valid {kind}.", field=name) from None


def _parse_sequence(raw: str, like: object, name: str) -> tuple | list:
    """``(2,)``, ``[1, 2]``, ``2, 3``: a tuple or list of plain constants (a list where
    written in brackets or where the constant was one; else a tuple)."""
    try:
        value = ast.literal_eval(raw if raw[:1] in "([" else f"({raw},)")
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, SEQUENCE_TYPES) or not is_constant(value):
        raise SpecError(f"{name}: {raw!r} is not a tuple of numbers; write it like (2,) or "
                        "(0, 1).", field=name)
    kind = list if raw[:1] == "[" or (raw[:1] != "(" and isinstance(like, list)) else tuple
    return kind(value)


#: the init of a tensor whose values were given (``playground.show``): not drawn at all
GIVEN = "given"


def parse_init(text: str, name: str = "init") -> str:
    """Validate an init: ``normal``, ``uniform(a,b)``, ``zeros``, ``ones``, ``randint(a,b)``
    (an int64 tensor of whole numbers a <= k < b: indices) or ``given`` (the tensor passed
    to ``playground.show``)."""
    value = str(text).strip().lower().replace(" ", "")
    if value in ("normal", "zeros", "ones", GIVEN):
        return value
    match = _UNIFORM.match(value) or _RANDINT.match(value)
    if match:
        kind = value.partition("(")[0]
        low, high = float(match.group(1)), float(match.group(2))
        if not low < high:
            raise SpecError(f"{name}: {kind}(a, b) needs a < b.", field=name)
        return value
    raise SpecError(f"{name}: unknown init {text!r}; use normal, uniform(a,b), zeros, ones or "
                    "randint(a,b) (whole numbers, for indices).", field=name)


def is_integer_init(init: str) -> bool:
    """True for ``randint(a,b)``: the tensor is drawn as int64, whatever the dtype."""
    return _RANDINT.match(init) is not None


def available_devices() -> list[str]:
    """The devices torch reports available here, ``cpu`` first."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def parse_device(name: str) -> torch.device:
    text = str(name).strip().lower()
    base = text.split(":")[0]
    if base not in ("cpu", "cuda", "mps"):
        raise SpecError(f"device {name!r} is unknown; use cpu, cuda or mps.", field="device")
    if base not in available_devices():
        raise SpecError(
            f"device {text!r} is not available on this machine (available: "
            f"{', '.join(available_devices())}).", field="device")
    try:
        device = torch.device(text)
        if device.type == "cuda" and device.index is not None:
            if device.index >= torch.cuda.device_count():
                raise SpecError(f"device {text!r}: there are only {torch.cuda.device_count()} "
                                "CUDA devices.", field="device")
    except RuntimeError as exc:
        raise SpecError(f"device {name!r}: {exc}", field="device") from None
    return device


def apply_overrides(specs: list[Spec], shapes: dict | None = None, constants: dict | None = None,
                    init: dict | None = None, trained: dict | None = None,
                    given: dict | None = None) -> list[Spec]:
    """Return ``specs`` with overrides applied; a shape turns a constant into a tensor and back.

    ``given``: tensors by name, for the inputs whose init is ``given``: such an input is that
    very tensor (its shape, its values; trained only if it is floating point)."""
    shapes, constants = dict(shapes or {}), dict(constants or {})
    init, trained, given = dict(init or {}), dict(trained or {}), dict(given or {})
    names = {s.name for s in specs}
    for kind, table in (("shape", shapes), ("constant", constants), ("init", init),
                        ("trained", trained)):
        unknown = sorted(set(table) - names)
        if unknown:
            raise SpecError(
                f"{kind} given for {', '.join(unknown)}, but forward's parameters are "
                f"{', '.join(s.name for s in specs) or '(none)'}.", field=unknown[0])
    out: list[Spec] = []
    for spec in specs:
        name = spec.name
        if name in constants:
            value = constants[name]
            if isinstance(value, str) and isinstance(spec, ConstSpec):
                value = parse_const(value, spec.value, name)
            elif isinstance(value, str):
                value = parse_const(value, None, name)
            elif isinstance(value, list) and isinstance(spec, ConstSpec) \
                    and isinstance(spec.value, tuple):
                value = tuple(value)  # a tuple written into a session file reads as a list
            spec = ConstSpec(name, value, spec.defaults if isinstance(spec, ConstSpec) else ())
        if name in shapes:
            base = spec if isinstance(spec, TensorSpec) else TensorSpec(name)
            spec = replace(base, shape=parse_shape(shapes[name], name))
        if isinstance(spec, TensorSpec):
            if name in init:
                spec = replace(spec, init=parse_init(init[name], name))
            if name in trained:
                spec = replace(spec, trained=bool(trained[name]))
            if spec.init == GIVEN:
                spec = _given(spec, given.get(name), shapes.get(name))
        out.append(spec)
    return out


def _given(spec: TensorSpec, value: object, shape: str | tuple | list | None) -> TensorSpec:
    """``spec`` holding the tensor given for it; SpecError where there is none, or where a
    shape typed since differs from it."""
    name = spec.name
    if not isinstance(value, torch.Tensor):
        raise SpecError(f"{name}: its init is 'given', but no tensor was given for it; use "
                        "normal, uniform(a,b), zeros or ones.", field=name)
    if shape is not None and parse_shape(shape, name) != tuple(value.shape):
        raise SpecError(
            f"{name} is the tensor you gave ({format_shape(tuple(value.shape))}); to draw a "
            f"{format_shape(parse_shape(shape, name))} one instead, set its init to normal.",
            field=name)
    return replace(spec, shape=tuple(value.shape), value=value,
                   trained=spec.trained and value.is_floating_point())


def _fill(tensor: torch.Tensor, init: str, generator: torch.Generator) -> torch.Tensor:
    if init == "normal":
        return tensor.normal_(generator=generator)
    if init == "zeros":
        return tensor.zero_()
    if init == "ones":
        return tensor.fill_(1.0)
    match = _RANDINT.match(init)
    if match is not None:
        return tensor.random_(int(match.group(1)), int(match.group(2)), generator=generator)
    match = _UNIFORM.match(init)
    if match is None:
        raise SpecError(f"unknown init {init!r}")
    return tensor.uniform_(float(match.group(1)), float(match.group(2)), generator=generator)


def draw(specs: list[Spec], seed: int, dtype: torch.dtype, device: torch.device,
         target_shapes: Sequence[tuple[int, ...]] = (), target_complex: Sequence[bool] = ()
         ) -> tuple[list[torch.Tensor], list[object]]:
    """Draw targets first, then tensor inputs in signature order, from one seeded generator.
    A target is complex where ``target_complex`` says so (a complex output's), else real, in
    ``dtype``'s precision.

    The generator is a private CPU one seeded like ``torch.manual_seed(seed)``, so the stream
    is the one the seed scripts see, on every device, without touching global state.
    """
    generator = torch.Generator().manual_seed(int(seed))
    kinds = list(target_complex) or [dtype.is_complex] * len(target_shapes)
    targets = [torch.empty(shape, dtype=in_kind(dtype, c)).normal_(generator=generator)
               .to(device) for shape, c in zip(target_shapes, kinds)]
    args: list[object] = []
    for spec in specs:
        if isinstance(spec, TensorSpec) and spec.value is not None:  # given, not drawn
            tensor = spec.value.detach().clone()
            args.append(tensor.to(same_kind(dtype, tensor)).to(device))  # its kind kept
        elif isinstance(spec, TensorSpec):
            kind = torch.int64 if is_integer_init(spec.init) else dtype
            tensor = _fill(torch.empty(spec.shape, dtype=kind), spec.init, generator)
            args.append(tensor.to(device))
        else:
            args.append(spec.value)
    return targets, args
