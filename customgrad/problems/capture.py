"""A Function and its arguments taken from a running program (``playground.show``).

:func:`settings_for` turns forward's actual arguments into :class:`Settings` (the tensors as
``given`` inputs, the rest as constants). :func:`capture` recovers a Function's source where
there is no module to import it from again (a ``__main__`` script, a notebook cell): the class
and what it uses from its module (imports, helper functions, plain constants), as one text a
worker process or a session file can run again. Only the standard library and torch.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import inspect
import math
import reprlib
import symtable
import sys
import textwrap
import types
from dataclasses import dataclass, field

import torch
from torch.autograd import Function

from customgrad.errors import SpecError
from customgrad.function.dtypes import DOUBLE, DTYPES, differentiable, in_kind
from customgrad.function.inputs import (
    CONST_TYPES,
    GIVEN,
    format_shape,
    forward_parameters,
    is_constant,
    parse_shape,
)
from customgrad.function.shadow import class_source, own_functions
from customgrad.problems.settings import Settings


def settings_for(function: type[Function], args: tuple, base: Settings | None = None) -> Settings:
    """``base`` (default: fresh settings) for ``function`` at forward's arguments ``args``, as
    ``apply`` takes them: each tensor a ``given`` input (its values, detached onto the CPU),
    everything else a constant. dtype and device follow the tensors. SpecError naming the
    argument where one cannot be used."""
    params = forward_parameters(function)
    name = function.__name__
    if len(args) > len(params):
        raise SpecError(f"{name}.forward takes {len(params)} arguments "
                        f"({', '.join(p.name for p in params)}), but {len(args)} were given.")
    missing = [p.name for p in params[len(args):] if p.default is inspect.Parameter.empty]
    if missing:
        raise SpecError(f"{name}.forward needs {', '.join(missing)} too: give every argument "
                        "apply takes (tensors and constants).")
    settings = Settings() if base is None else base
    settings.target = ""
    settings.shapes, settings.constants, settings.init = {}, {}, {}
    settings.trained, settings.given = {}, {}
    tensors = [(p.name, a) for p, a in zip(params, args) if isinstance(a, torch.Tensor)]
    if not tensors:
        raise SpecError(f"{name}: no argument is a tensor, so there is nothing to check.")
    for arg, tensor in tensors:
        _check_tensor(arg, tensor)
    floating = [a.dtype for _, a in tensors if differentiable(a)]
    # float64 where any tensor is: each given tensor keeps its values exactly (and its kind:
    # the precision is the dtype's, complex or real the tensor's own)
    double = not floating or bool(set(DOUBLE.values()) & set(floating))
    settings.dtype = str(in_kind(torch.float64 if double else torch.float32,
                                 any(d.is_complex for d in floating)))[6:]
    devices = {a.device.type if a.device.index in (None, 0) else str(a.device)
               for _, a in tensors}
    if len(devices) > 1:
        raise SpecError(f"{name}: the tensors are on different devices "
                        f"({', '.join(sorted(devices))}); put them on one.")
    settings.device = devices.pop()
    for p, value in zip(params, args):
        if isinstance(value, torch.Tensor):
            settings.given[p.name] = value.detach().to("cpu", copy=True)
            settings.init[p.name] = GIVEN
            settings.shapes[p.name] = format_shape(tuple(value.shape))
            if not value.is_floating_point():
                settings.trained[p.name] = False
        elif is_constant(value) and all(_finite(v) for v in (
                value if isinstance(value, (tuple, list)) else (value,))):
            settings.constants[p.name] = value
        else:
            raise SpecError(f"{p.name} is {reprlib.repr(value)} ({type(value).__name__}); the "
                            "playground takes tensors and plain constants (finite numbers, "
                            "booleans, text, None).", field=p.name)
    return settings


#: the types of the constants a session file holds as they are


def _finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _check_tensor(name: str, tensor: torch.Tensor) -> None:
    """SpecError naming ``name`` for a tensor the playground cannot take as it is."""
    dtype = str(tensor.dtype).replace("torch.", "")
    if tensor.layout != torch.strided or tensor.device.type == "meta":
        problem = f"is a {str(tensor.layout).replace('torch.', '')} tensor" \
            if tensor.layout != torch.strided else "is on the meta device (it has no values)"
        raise SpecError(f"{name} {problem}; give a dense tensor with values "
                        "(.to_dense(), or a real device).", field=name)
    if differentiable(tensor) and tensor.dtype not in DTYPES.values():
        raise SpecError(f"{name} is {dtype}; the playground works in float32, float64, "
                        "complex64 or complex128: "
                        "convert it first (.float() or .double()).", field=name)
    if tensor.numel() == 0:
        raise SpecError(f"{name}: an empty tensor cannot be checked or trained here.",
                        field=name)
    if tensor.dim():
        parse_shape(tuple(tensor.shape), name)  # the limits a typed shape has


@dataclass
class Captured:
    """A Function's source, made to run on its own: ``text`` (None where even the class
    source is not to be had), and the names it uses that could not be brought along."""

    name: str
    text: str | None
    missing: list[str] = field(default_factory=list)
    why: str = ""

    @property
    def complete(self) -> bool:
        return self.text is not None and not self.missing


def importable(function: type[Function]) -> str | None:
    """``module:Class`` where another process can import ``function`` by name, else None."""
    module, qualname = function.__module__, function.__qualname__
    if module in ("__main__", "builtins") or "<locals>" in qualname or "." in qualname:
        return None
    loaded = sys.modules.get(module)  # where the class lives: imported (never imported here)
    if getattr(loaded, "__file__", None) is None or getattr(loaded, qualname, None) is not function:
        return None
    return f"{module}:{qualname}"


def capture(function: type[Function]) -> Captured:
    """``function``'s class and what it uses from its module, as one runnable text."""
    name = function.__name__
    try:
        source = _source_of(function)
    except (OSError, TypeError, SyntaxError) as exc:
        return Captured(name, None, why=f"its source cannot be found ({exc})")
    namespace = _globals_of(function)
    pieces: list[str] = []
    missing, done = list(_closure_names(function)), {name}
    header: list[str] = []
    lazy = _lazy_annotations(function)
    _bring(source, namespace, header, pieces, missing, done, depth=0, lazy=lazy)
    future = ["from __future__ import annotations", ""] if lazy else []
    text = "\n".join([f'"""{name}, as playground.show captured it from your program."""', "",
                      *future, *dict.fromkeys(header), "", *pieces, source]).rstrip() + "\n"
    try:
        compile(text, f"{name}.py", "exec")
    except (SyntaxError, ValueError) as exc:
        return Captured(name, None, why=f"its captured source does not compile ({exc})")
    why = f"it uses {', '.join(missing)} from its module, which cannot be copied" if missing \
        else ""
    return Captured(name, text, missing, why)


def _closure_names(function: type[Function]) -> list[str]:
    """The variables of enclosing functions that ``function``'s methods read (a class made
    inside a function): their values live in this process only."""
    names: list[str] = []
    for method in own_functions(function):
        names += [n for n in method.__code__.co_freevars if n != "__class__" and n not in names]
    return names


def _lazy_annotations(function: type[Function]) -> bool:
    """True when ``function``'s module has ``from __future__ import annotations``: its
    annotations are text, never evaluated, so what they name need not come along."""
    methods = own_functions(function)
    return bool(methods and methods[0].__code__.co_flags & __future__.annotations.compiler_flag)


def _bring(source: str, namespace: dict, header: list[str], pieces: list[str],
           missing: list[str], done: set[str], depth: int, lazy: bool = False) -> None:
    """Add what ``source`` uses from ``namespace``: imports to ``header``, the source of
    helpers defined there to ``pieces`` (before their users), the rest to ``missing``. The
    module's own names come first: ``from torch import sum`` shadows the builtin."""
    for name in sorted(_free_names(source, lazy)):
        if name in done:
            continue
        done.add(name)
        if name not in namespace:
            if not hasattr(builtins, name):
                missing.append(name)
            continue
        value = namespace[name]
        line = _import_line(name, value, namespace)
        if line is not None:
            header.append(line)
        elif _literal(value):
            pieces.append(f"{name} = {value!r}\n")
        elif (inspect.isfunction(value) or inspect.isclass(value)) and depth < 8 \
                and getattr(value, "__name__", None) == name:
            try:
                helper = _source_of(value)
            except (OSError, TypeError, SyntaxError):
                missing.append(name)
                continue
            _bring(helper, namespace, header, pieces, missing, done, depth + 1, lazy)
            pieces.append(helper + "\n")
        else:
            missing.append(name)


def _literal(value: object) -> bool:
    """True for a value whose ``repr`` is the Python that makes it again: a plain constant
    of exactly a builtin type (a finite float: ``inf`` is no name), or a tuple of them."""
    if type(value) is tuple:
        return all(_literal(v) for v in value)
    return type(value) in CONST_TYPES and _finite(value)


def _import_line(name: str, value: object, namespace: dict) -> str | None:
    """The import that binds ``name`` to ``value`` again elsewhere, or None."""
    if inspect.ismodule(value):
        module = value.__name__
        if module == "__main__":
            return None
        if "." not in module:
            return f"import {module}" if module == name else f"import {module} as {name}"
        parent, _, leaf = module.rpartition(".")
        return f"from {parent} import {leaf}" if leaf == name else \
            f"import {module} as {name}"
    home = getattr(value, "__module__", None)
    candidates = [sys.modules.get(home)] if isinstance(home, str) and home != "__main__" else []
    # a builtin such as torch.sin names no module of its own: the modules imported here
    candidates += [v for v in namespace.values() if inspect.ismodule(v)
                   and v.__name__ != "__main__"]
    for candidate in candidates:
        if candidate is None:
            continue
        for attribute in dict.fromkeys((getattr(value, "__qualname__", None), name)):
            if isinstance(attribute, str) and attribute.isidentifier() \
                    and getattr(candidate, attribute, None) is value:
                return f"from {candidate.__name__} import {attribute}" + \
                    ("" if attribute == name else f" as {name}")
    return None


def _free_names(source: str, lazy: bool = False) -> set[str]:
    """Global names ``source`` reads and does not define itself (with ``lazy``
    annotations, not those it reads in annotations only)."""
    if lazy:
        source = _without_annotations(source)
    table = symtable.symtable(source, "<captured>", "exec")
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    stack = [table]
    while stack:
        scope = stack.pop()
        stack.extend(scope.get_children())
        for symbol in scope.get_symbols():
            top = scope is table
            if symbol.is_referenced() and (top or symbol.is_global()):
                used.add(symbol.get_name())
    return used - defined


def _without_annotations(source: str) -> str:
    """``source`` with every annotation removed (what lazy annotations never evaluate)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return ast.unparse(tree)


def _globals_of(function: type[Function]) -> dict:
    """The namespace ``function``'s methods read their globals from."""
    methods = own_functions(function)
    if methods:
        return methods[0].__globals__
    module = sys.modules.get(function.__module__)
    return vars(module) if module is not None else {}


def _source_of(obj: type | types.FunctionType) -> str:
    """The source of a class (:func:`customgrad.function.shadow.class_source`: the very class, in a
    notebook cell too) or a function."""
    if inspect.isclass(obj):
        return _dedent(class_source(obj)[0])
    return _dedent(inspect.getsource(obj))


def _dedent(text: str) -> str:
    return textwrap.dedent(text).rstrip() + "\n"
