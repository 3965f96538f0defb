"""Stand-ins for a user module's Functions: what a process that must never run the user's code
(the app's window) knows of them.

A worker process imports the module and :func:`describe` s each Function in it: name,
``forward``'s parameters (annotations as text, constant defaults as values), whether it takes
``ctx``, docstring, source and line, plain class attributes. :func:`shadow` turns such a
:class:`Description` back into a ``torch.autograd.Function`` subclass with the same signature,
whose ``forward`` and ``backward`` refuse to run: everything that calls the Function does so in
a worker process, which loads the real one by the target's spec. Only the standard library
and torch.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass, field

import torch
from torch.autograd import Function

from customgrad.errors import FunctionError
from customgrad.function.inputs import PLAIN_TYPES, annotation_text, is_new_style, plain


@dataclass
class Parameter:
    name: str
    kind: int  # inspect.Parameter's kind, as a number
    default: object = inspect.Parameter.empty
    annotation: str = ""


class Opaque:
    """A default the window cannot hold (an object of the user's module): its text only."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


@dataclass
class Description:
    """A Function as a worker process saw it, picklable."""

    name: str
    qualname: str
    module: str
    #: defined in the module itself (not imported into it)
    defined_here: bool
    new_style: bool
    parameters: list[Parameter]
    doc: str | None = None
    source: str | None = None
    file: str | None = None
    line: int | None = None
    attributes: dict = field(default_factory=dict)


def describe(cls: type[Function], module_name: str) -> Description:
    """What the window needs to know of ``cls``, found in the module ``module_name``."""
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    parameters = [Parameter(p.name, int(p.kind), _default(p.default),
                            annotation_text(p.annotation))
                  for p in params]
    try:
        text, line = class_source(cls)
    except (OSError, TypeError, SyntaxError):
        text, line = None, None
    try:
        file = inspect.getsourcefile(cls)
    except (OSError, TypeError):
        file = None
    doc = vars(cls).get("__doc__")
    attributes = {k: plain(v) for k, v in vars(cls).items()
                  if not k.startswith("__") and isinstance(v, PLAIN_TYPES)}
    return Description(cls.__name__, cls.__qualname__, cls.__module__,
                       cls.__module__ == module_name, is_new_style(cls), parameters,
                       str(plain(doc)) if isinstance(doc, str) else None, text, file, line,
                       attributes)


def _default(value: object) -> object:
    """A default as the window may hold it: a constant as its plain value, anything else
    (an object of the user's module) as its text."""
    if value is inspect.Parameter.empty or isinstance(value, PLAIN_TYPES):
        return plain(value)
    try:
        return Opaque(repr(value))
    except Exception:  # a user's __repr__ that raises
        return Opaque(f"<{type(value).__name__} object>")


def shadow(description: Description, module: str | None = None) -> type:
    """A Function subclass standing in for ``description`` (its ``__module__`` is ``module``
    where given): same name, signature, docstring, plain attributes; it never runs."""
    d = description

    def refuse(*args, **kwargs):
        raise FunctionError(
            f"{d.name} runs in worker processes only: this process holds its description, "
            "not its code. Open it again to load it in a new worker process.")

    forward = _with_signature(refuse, d)
    namespace = {"forward": staticmethod(forward), "backward": staticmethod(refuse),
                 "__doc__": d.doc, "__module__": module or d.module,
                 "__qualname__": d.qualname, "__shadow__": d, **d.attributes}
    if d.new_style:
        namespace["setup_context"] = staticmethod(refuse)
    return type(d.name, (torch.autograd.Function,), namespace)


def _with_signature(function, description: Description):
    def forward(*args, **kwargs):
        return function(*args, **kwargs)

    # read by inspect.signature; mypy's function type has no room for it
    forward.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(p.name, inspect._ParameterKind(p.kind), default=p.default,
                          annotation=p.annotation or inspect.Parameter.empty)
        for p in description.parameters])
    return forward


def description_of(function: type[Function]) -> Description | None:
    """The description a shadow stands for; None for a real Function."""
    return vars(function).get("__shadow__") if isinstance(function, type) else None


def source_lines(function: type[Function]) -> tuple[str, int]:
    """``function``'s source and first line (a shadow's as its worker process read them);
    OSError or TypeError where there is none, as ``inspect.getsourcelines``."""
    d = description_of(function)
    if d is None:
        return class_source(function)
    if d.source is None:
        raise OSError(f"the source of {d.name} was not available")
    return d.source, d.line or 1


def source_file(function: type[Function]) -> str | None:
    """The file ``function`` was written in (a shadow's as its worker process read it), or
    the pseudo-file its methods were compiled from where its module has no file: a notebook
    cell's ``<ipython-input-...>``, whose ``__main__`` has no ``__file__`` (``inspect`` raises
    OSError there). None where neither is known."""
    d = description_of(function)
    if d is not None:
        return d.file
    try:
        return inspect.getsourcefile(function)
    except (OSError, TypeError):
        functions = own_functions(function)
        return functions[0].__code__.co_filename if functions else None


@dataclass
class Shadowed:
    """What :data:`customgrad.targets.loader.run_module_code` returns where a worker process ran the
    module instead of this one: the module's Functions, described, and the names it binds
    them to (an alias ``MyFn = Fn`` is the same class, as in the module)."""

    descriptions: list[Description]
    names: dict[str, int]
    #: the module's file, where it has one
    file: str | None = None
    #: what each of its other public names is (:func:`kind_of`), for a message that names it
    kinds: dict[str, str] = field(default_factory=dict)

    def bind(self, namespace: dict, module: str | None = None) -> None:
        """Put a shadow of each Function into ``namespace`` under its names; those defined
        in the module itself get ``module`` as theirs (the name it has in this process)."""
        made = [shadow(d, module if d.defined_here else None) for d in self.descriptions]
        for name, index in self.names.items():
            namespace[name] = made[index]


def describe_module(module: types.ModuleType, is_function) -> Shadowed:
    """Every Function ``module`` binds (those ``is_function`` accepts), described, in the
    module's order (run in a worker process)."""
    seen: dict[int, int] = {}
    descriptions: list[Description] = []
    names: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for name, obj in vars(module).items():
        if is_function(obj):
            if id(obj) not in seen:
                seen[id(obj)] = len(descriptions)
                descriptions.append(describe(obj, module.__name__))
            names[name] = seen[id(obj)]
        elif not name.startswith("_"):
            kinds[name] = kind_of(obj)
    return Shadowed(descriptions, names, getattr(module, "__file__", None), kinds)


def kind_of(obj: object) -> str:
    """What ``obj``, which is not a Function of the user's, is, in a sentence's words ("an
    nn.Module subclass", "a function"): for a message when someone names it as their Function."""
    if inspect.isclass(obj):
        if issubclass(obj, torch.nn.Module):
            return "an nn.Module subclass"
        if issubclass(obj, torch.autograd.Function):
            return "torch's own Function base class"
        return "a class that does not subclass torch.autograd.Function"
    if inspect.ismodule(obj):
        return "a module"
    if isinstance(obj, torch.nn.Module):
        return "an nn.Module instance"
    if isinstance(obj, torch.Tensor):
        return "a tensor"
    if inspect.isroutine(obj):
        return "a function"
    return f"a value of type {type(obj).__name__}"


def own_functions(cls: type) -> list:
    """The plain functions of the methods ``cls`` defines itself (static, class or plain):
    their code says where the class was written, their globals what it reads."""
    found = [getattr(v, "__func__", v) for v in vars(cls).values()]
    return [f for f in found if inspect.isfunction(f)]


def class_source(cls: type) -> tuple[str, int]:
    """A class's source and first line, found around its methods' code in the text the
    interpreter compiled them from (a file, or a notebook cell that only linecache knows):
    ``inspect.getsource`` finds the first class of that name in the file, which is not this
    one when a script defines it twice. ``inspect.getsourcelines`` where it has no methods."""
    functions = own_functions(cls)
    if functions:
        found = _class_around(cls.__name__, functions[0].__code__)
        if found is not None:
            return found
    lines, first = inspect.getsourcelines(cls)
    return textwrap.dedent("".join(lines)), first


def _class_around(name: str, code) -> tuple[str, int] | None:
    """The innermost ``class name`` statement around ``code`` in its file, and its first
    line (a decorator's), or None."""
    lines = linecache.getlines(code.co_filename)
    if not lines:
        return None
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return None
    line = code.co_firstlineno
    around = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
              and node.name == name and node.lineno <= line <= (node.end_lineno or line)]
    if not around:
        return None
    node = max(around, key=lambda n: n.lineno)
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return textwrap.dedent("".join(lines[start - 1:node.end_lineno])), start
