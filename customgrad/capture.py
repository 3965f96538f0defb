"""A Function and its arguments taken from a running program (``playground.show``).

:func:`settings_for` turns forward's actual arguments into :class:`Settings` (the tensors as
``given`` inputs, the rest as constants). :func:`capture` recovers a Function's source where
there is no module to import it from again (a ``__main__`` script, a notebook cell): the class
and what it uses from its module (imports, helper functions, plain constants), as one text a
worker process or a session file can run again. Only the standard library and torch.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import linecache
import symtable
import sys
import textwrap
from dataclasses import dataclass, field

import torch

from customgrad.errors import SpecError
from customgrad.inputs import GIVEN, forward_parameters
from customgrad.settings import Settings

#: values a captured text can spell out as themselves
_LITERALS = (bool, int, float, complex, str, bytes, type(None))


def settings_for(function: type, args: tuple, base: Settings | None = None) -> Settings:
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
    floating = [a for _, a in tensors if a.is_floating_point()]
    dtype = floating[0].dtype if floating else torch.float64
    if dtype not in (torch.float32, torch.float64):
        raise SpecError(f"{name}: {tensors[0][0]} is {str(dtype).replace('torch.', '')}; the "
                        "playground works in float32 or float64: convert it first (.float()).")
    settings.dtype = str(dtype).replace("torch.", "")
    devices = {a.device.type if a.device.index in (None, 0) else str(a.device)
               for _, a in tensors}
    if len(devices) > 1:
        raise SpecError(f"{name}: the tensors are on different devices "
                        f"({', '.join(sorted(devices))}); put them on one.")
    settings.device = devices.pop()
    for p, value in zip(params, args):
        if isinstance(value, torch.Tensor):
            if value.is_complex() or value.numel() == 0:
                kind = "a complex" if value.is_complex() else "an empty"
                raise SpecError(f"{p.name}: {kind} tensor cannot be checked or trained here.",
                                field=p.name)
            settings.given[p.name] = value.detach().to("cpu", copy=True)
            settings.init[p.name] = GIVEN
            if not value.is_floating_point():
                settings.trained[p.name] = False
        elif isinstance(value, _LITERALS) and not isinstance(value, (complex, bytes)):
            settings.constants[p.name] = value
        else:
            raise SpecError(f"{p.name} is a {type(value).__name__}; the playground takes "
                            "tensors and plain constants (numbers, booleans, text, None).",
                            field=p.name)
    return settings


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


def importable(function: type) -> str | None:
    """``module:Class`` where another process can import ``function`` by name, else None."""
    module, qualname = function.__module__, function.__qualname__
    if module in ("__main__", "builtins") or "<locals>" in qualname or "." in qualname:
        return None
    try:
        loaded = sys.modules.get(module) or importlib.import_module(module)
    except Exception:
        return None
    if getattr(loaded, "__file__", None) is None or getattr(loaded, qualname, None) is not function:
        return None
    return f"{module}:{qualname}"


def capture(function: type) -> Captured:
    """``function``'s class and what it uses from its module, as one runnable text."""
    name = function.__name__
    try:
        source = _source_of(function)
    except (OSError, TypeError, SyntaxError) as exc:
        return Captured(name, None, why=f"its source cannot be found ({exc})")
    namespace = _globals_of(function)
    pieces, missing, done = [], [], {name}
    header: list[str] = []
    _bring(source, namespace, header, pieces, missing, done, depth=0)
    text = "\n".join([f'"""{name}, as playground.show captured it from your program."""', "",
                      *dict.fromkeys(header), "", *pieces, source])
    why = f"it uses {', '.join(missing)} from its module, which cannot be copied" if missing \
        else ""
    return Captured(name, text.rstrip() + "\n", missing, why)


def _bring(source: str, namespace: dict, header: list[str], pieces: list[str],
           missing: list[str], done: set[str], depth: int) -> None:
    """Add what ``source`` uses from ``namespace``: imports to ``header``, the source of
    helpers defined there to ``pieces`` (before their users), the rest to ``missing``."""
    for name in sorted(_free_names(source)):
        if name in done or hasattr(builtins, name):
            continue
        done.add(name)
        if name not in namespace:
            missing.append(name)
            continue
        value = namespace[name]
        line = _import_line(name, value)
        if line is not None:
            header.append(line)
        elif isinstance(value, _LITERALS) or _literal_tuple(value):
            pieces.append(f"{name} = {value!r}\n")
        elif (inspect.isfunction(value) or inspect.isclass(value)) and depth < 8 \
                and getattr(value, "__name__", None) == name:
            try:
                helper = _source_of(value)
            except (OSError, TypeError, SyntaxError):
                missing.append(name)
                continue
            _bring(helper, namespace, header, pieces, missing, done, depth + 1)
            pieces.append(helper + "\n")
        else:
            missing.append(name)


def _literal_tuple(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, _LITERALS) for v in value)


def _import_line(name: str, value: object) -> str | None:
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
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or module == "__main__" or not isinstance(qualname, str) \
            or "." in qualname or "<" in qualname:
        return None
    loaded = sys.modules.get(module)
    if loaded is None or getattr(loaded, qualname, None) is not value:
        return None
    return f"from {module} import {qualname}" + ("" if qualname == name else f" as {name}")


def _free_names(source: str) -> set[str]:
    """Global names ``source`` reads and does not define itself."""
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


def _globals_of(function: type) -> dict:
    """The namespace ``function``'s methods read their globals from."""
    for value in vars(function).values():
        code = getattr(getattr(value, "__func__", value), "__globals__", None)
        if isinstance(code, dict):
            return code
    module = sys.modules.get(function.__module__)
    return vars(module) if module is not None else {}


def _source_of(obj: object) -> str:
    """The source of a class or function: ``inspect.getsource``, else (a class in a notebook
    cell, whose module has no file) the class statement found around its methods' code in
    the text the interpreter compiled them from."""
    try:
        return _dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        if not inspect.isclass(obj):
            raise
    codes = [getattr(getattr(v, "__func__", v), "__code__", None) for v in vars(obj).values()]
    codes = [c for c in codes if c is not None]
    if not codes:
        raise OSError(f"{obj.__name__} has no methods to find it by")
    lines = linecache.getlines(codes[0].co_filename)
    if not lines:
        raise OSError(f"the text of {codes[0].co_filename} is not available")
    text = "".join(lines)
    tree = ast.parse(text)
    first = codes[0].co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == obj.__name__ \
                and node.lineno <= first <= (node.end_lineno or first):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return _dedent("".join(lines[start - 1:node.end_lineno]))
    raise OSError(f"class {obj.__name__} was not found in {codes[0].co_filename}")


def _dedent(text: str) -> str:
    return textwrap.dedent(text).rstrip() + "\n"
