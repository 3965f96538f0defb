"""Resolve a TARGET (gallery name, ``file.py[:Class]``, ``package.module:Class``) to a Function."""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import itertools
import os
import re
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

import torch
from torch.autograd import Function

from customgrad.errors import TargetError, format_traceback, is_ctrl_c
from customgrad.function import shadow
from customgrad.function.customop import function_for_op, op_by_name
from customgrad.targets import catalog
from customgrad.targets.gallery.entry import GalleryEntry

_counter = itertools.count()
#: the module part of the TARGET of a Function only the running program holds (one
#: ``playground.show`` got from a script or notebook, whose source could not be captured):
#: no other process can load it, and resolving it says so
PROCESS_LOCAL = "<python>"


@dataclass(frozen=True)
class Target:
    """A resolved Function with what the app and CLI show about it."""

    spec: str
    function: type[Function]
    label: str
    entry: GalleryEntry | None = None
    file: str | None = None
    #: the text that was run, for a Function loaded from a file (so that another process
    #: can load the very same code even if the file changed since)
    code: str | None = field(default=None, repr=False, compare=False)

    @property
    def source(self) -> str:
        if self.entry is not None:
            return self.entry.source
        try:
            return shadow.source_lines(self.function)[0]
        except (OSError, TypeError):
            if self.code is not None:  # a class captured from a notebook (playground.show)
                return self.code
            return f"# source of {self.label} is not available"

    @property
    def note(self) -> str:
        """A gallery entry's note, else the class's own docstring: never one it inherits (a
        Function without a docstring would show torch's Function.__doc__)."""
        if self.entry is not None:
            return self.entry.note
        doc = vars(self.function).get("__doc__")
        return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else ""


def is_function(obj: object) -> TypeGuard[type[Function]]:
    """True for a user subclass of ``torch.autograd.Function`` (not torch's own bases)."""
    return (inspect.isclass(obj) and issubclass(obj, torch.autograd.Function)
            and not obj.__module__.startswith("torch."))


def functions_in(module: types.ModuleType) -> list[type[Function]]:
    """Function subclasses defined in ``module`` itself, each once (an alias such as
    ``MyFn = Fn`` is the same class), in definition order (the module dict's order)."""
    found: list[type[Function]] = []
    for obj in vars(module).values():
        if is_function(obj) and obj.__module__ == module.__name__ and obj not in found:
            found.append(obj)
    return found


def _user_frame(tb, path: str) -> int | None:
    """The last traceback line inside ``path``."""
    line = None
    for frame, lineno in traceback.walk_tb(tb):
        if os.path.abspath(frame.f_code.co_filename) == os.path.abspath(path):
            line = lineno
    return line


#: ``run_code(run, label, origin)``: see :data:`run_module_code`
RunCode = Callable[..., object]


def _run_directly(run: Callable[[], object], label: str, origin: tuple | None = None) -> object:
    return run()


#: How user modules' top-level code runs where a caller gives no ``run_code`` of its own (the
#: loading functions take one): ``run_code(run, label, origin)`` calls ``run()`` and returns
#: its result (``label`` names the file or module; ``origin`` is ``("file", path, source)``
#: or ``("module", name)``, kinds ``op-file`` and ``op-module`` where the module registers a
#: torch.library op, ``reload`` for a module imported here before). An application passes
#: its own, for instance to keep its window live while the code runs, to stop code that
#: never finishes, or to run the code in a child process first (a segfault there ends only
#: the child), or there only: it then returns a :class:`customgrad.function.shadow.Shadowed` (not
#: for ``op-`` kinds or ``reload``), and the module holds shadows of its Functions (TargetErrors
#: it raises with ``from_worker`` set are the worker's, worded as the loader's own).
run_module_code: RunCode = _run_directly


def load_file(path: str | os.PathLike, source: str | None = None, kind: str = "file",
              run_code: RunCode | None = None) -> types.ModuleType:
    """Import ``path`` under a fresh unique module name, so a reload never mixes classes.

    ``source``: run this text as if it were the file's (default: read the file). The module's
    ``__source__`` holds the text that ran. ``run_code`` runs its top level (default
    :data:`run_module_code`)."""
    path = os.path.abspath(os.fspath(path))
    base = os.path.basename(path)  # the messages name the file; ``file`` gives its path
    if os.path.isdir(path):
        raise TargetError(f"{base} is a folder; give a .py file inside it.", file=path)
    if source is None and not os.path.isfile(path):
        raise TargetError(f"File not found: {base}", file=path)
    digest = hashlib.sha1(path.encode()).hexdigest()[:10]
    name = f"customgrad_user_{Path(path).stem}_{digest}_{next(_counter)}"
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    try:
        if source is None:  # as Python reads it: a BOM, a PEP 263 coding line, else UTF-8
            source = importlib.util.decode_source(Path(path).read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        reason = getattr(exc, "strerror", None) or exc  # (an OSError's text repeats the path)
        raise TargetError(f"Cannot read {base}: {reason}", file=path) from None
    try:
        code = compile(source, path, "exec")
    except SyntaxError as exc:
        raise TargetError(f"Syntax error in {os.path.basename(path)}, line {exc.lineno}: "
                          f"{exc.msg}.", file=path, line=exc.lineno,
                          details="".join(traceback.format_exception_only(exc))) from None
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:  # a name no module has (file.txt): no loader takes it
        raise TargetError(f"{base} is not a .py file: Python imports a Function's file only "
                          f"under a .py name; rename it to {Path(path).stem}.py.", file=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = os.path.dirname(path)
    added = folder not in sys.path
    if added:
        sys.path.append(folder)  # the user's file may import modules next to it
    try:
        ran = (run_code or run_module_code)(lambda: exec(code, module.__dict__),
                                            os.path.basename(path), (kind, path, source))
        if isinstance(ran, shadow.Shadowed):  # a worker process ran it: its Functions here
            ran.bind(module.__dict__, name)
            module.__kinds__ = ran.kinds  # type: ignore[attr-defined]  # (see __source__)
            _leave(folder, added)  # nothing here imports from it (a torch.py there would)
    except KeyboardInterrupt as exc:
        sys.modules.pop(name, None)
        _leave(folder, added)
        if is_ctrl_c(exc):
            raise
        raise _import_failed(exc, path) from None
    except TargetError as exc:
        _leave(folder, added)
        sys.modules.pop(name, None)
        if getattr(exc, "from_worker", False):  # a worker process's, worded as this one
            raise
        raise _import_failed(exc, path) from None
    except BaseException as exc:
        sys.modules.pop(name, None)
        _leave(folder, added)
        raise _import_failed(exc, path) from None
    # a mark of ours on the module: ModuleType's stub lets any attribute be read, not set
    module.__source__ = source  # type: ignore[attr-defined]
    return module


def _leave(folder: str, added: bool) -> None:
    """Take ``folder`` off ``sys.path`` again if :func:`load_file` put it there: where the
    module ran in a worker process (or failed), this process imports nothing from it."""
    if added and folder in sys.path:
        sys.path.remove(folder)


def _import_failed(exc: BaseException, path: str) -> TargetError:
    line = (_user_frame(exc.__traceback__, path) or getattr(exc, "user_line", None)
            or (getattr(exc, "line", None) if getattr(exc, "file", None) == path else None))
    said = f"Importing {os.path.basename(path)} failed with {type(exc).__name__}: {exc}"
    if isinstance(exc, ImportError) and "no known parent package" in str(exc):
        said = f"{said.rstrip('.')}. {_in_a_package(path)}"
    return TargetError(said, file=path, line=line, details=format_traceback(exc))


def _in_a_package(path: str) -> str:
    """What to do with a file a relative import needs its package for: its import path
    (``relpkg.layer``) and the folder to put on the path, where its folder is a package."""
    folder, parts = os.path.dirname(os.path.abspath(path)), [
        os.path.splitext(os.path.basename(path))[0]]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if len(parts) == 1:
        return ("A relative import (from .x import y) works in a package only: import it "
                "absolutely, or make its folder a package.")
    dotted = ".".join(parts)
    return (f"{os.path.basename(path)} is part of the package {parts[0]}: open it by its "
            f"import path, {dotted}, with {folder} on PYTHONPATH (the app: File > "
            f"Open Import Path…, Ctrl+Shift+I; the CLI: PYTHONPATH={folder} customgrad check "
            f"{dotted}).")


def kind_in(module: object, name: str) -> str | None:
    """What ``name`` in ``module`` is (:func:`customgrad.function.shadow.kind_of`), where it is
    bound
    to something that is not a Function of the module's own; None where it is not bound. A
    module a worker process ran holds only its Functions' shadows and the kinds of the rest."""
    if name in vars(module):
        obj = vars(module)[name]
        if is_function(obj):  # (a worker's shadow of one too)
            return f"a Function imported from {obj.__module__}, not one it defines"
        return shadow.kind_of(obj)
    return getattr(module, "__kinds__", {}).get(name)


def _pick(functions: list[type[Function]], class_name: str | None, where: str,
          path: str | None, module: object = None) -> type[Function]:
    if class_name:
        for cls in functions:
            if cls.__name__ == class_name:
                return cls
        names = ", ".join(c.__name__ for c in functions) or "none"
        kind = kind_in(module, class_name) if module is not None else None
        if kind is not None:
            found = f"its Functions: {names}" if functions else "it defines no Function"
            raise TargetError(f"{class_name} in {where} is {kind}, not a "
                              f"torch.autograd.Function subclass; {found}.", file=path)
        close = difflib.get_close_matches(class_name, [c.__name__ for c in functions], n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise TargetError(f"{where} has no autograd Function called {class_name!r} "
                          f"(found: {names}).{hint}", file=path)
    if not functions:
        raise TargetError(f"{where} defines no torch.autograd.Function subclass.", file=path)
    if len(functions) > 1:
        names = ", ".join(c.__name__ for c in functions)
        raise TargetError(f"{where} defines several Functions ({names}); choose one, e.g. "
                          f"{where}:{functions[0].__name__}.", file=path, choices=functions)
    return functions[0]


_OP_NAME = re.compile(r"(?:^|:)([A-Za-z_]\w*::[A-Za-z_]\w*(?:\.\w+)?)$")


def split_target(spec: str) -> tuple[str, str | None]:
    """A TARGET string as ``(where, name)``, without importing or reading anything.

    ``name`` is what follows the last ``:`` when it is a Python identifier (a class), or a
    torch.library op's qualified name ``ns::op[.overload]`` (it holds ``::``); None when the
    target names neither. ``where`` is the rest: a file, a module, a gallery name, or "" for a
    bare op. The text is stripped first; a one-letter head is a Windows drive, not a module::

        "killhead"            -> ("killhead", None)
        "dir/file.py"         -> ("dir/file.py", None)
        "dir/file.py:MyFn"    -> ("dir/file.py", "MyFn")
        "pkg.module:MyFn"     -> ("pkg.module", "MyFn")
        "mylib::myop"         -> ("", "mylib::myop")
        "dir/file.py:mylib::myop" -> ("dir/file.py", "mylib::myop")
        "pkg.module:mylib::myop"  -> ("pkg.module", "mylib::myop")
        "C:\\dir\\file.py:MyFn" -> ("C:\\dir\\file.py", "MyFn");  "C:MyFn" -> ("C:MyFn", None)
    """
    text = str(spec).strip()
    match = _OP_NAME.search(text)
    if match is not None:
        return text[:match.start(1)].rstrip(":"), match.group(1)
    head, sep, tail = text.rpartition(":")
    if sep and tail and tail.isidentifier() and not (len(head) == 1 and head.isalpha()):
        return head, tail
    return text, None


def is_file_target(where: str) -> bool:
    """True when the ``where`` of :func:`split_target` names a file (``.py``, or a path
    separator in it), False for a module or gallery name."""
    return where.endswith(".py") or os.sep in where or "/" in where


def _op_target(text: str, where: str, qualname: str, run_code: RunCode | None) -> Target:
    """``[path/to/file.py:|package.module:]mylib::myop``: a torch.library custom op, found
    after running what defines it."""
    file = None
    # registering the op is what the module's top level does: it runs here, not described
    if is_file_target(where):
        module = load_file(where, None, kind="op-file", run_code=run_code)
        file = os.path.abspath(where)
    elif where:
        module = import_user_module(where, kind="op-module", run_code=run_code)
    else:
        module = None
    op = op_by_name(qualname)
    return Target(text, function_for_op(op, source=module), f"{qualname} (torch.library op)",
                  file=file or (inspect.getsourcefile(module) if module is not None else None),
                  code=getattr(module, "__source__", None))


def import_user_module(where: str, kind: str = "module", reload: bool = False,
                       run_code: RunCode | None = None):
    """The module ``where`` imported as user code (re-imported with ``reload``, where this
    process imported it before); TargetError naming the file and line where it broke.
    ``run_code`` runs its top level (default :data:`run_module_code`)."""
    module = sys.modules.get(where) if reload else None
    run = (lambda: importlib.reload(module)) if module is not None else \
        (lambda: importlib.import_module(where))
    try:
        ran = (run_code or run_module_code)(run, where,
                                            (kind if module is None else "reload", where))
    except BaseException as exc:
        if is_ctrl_c(exc) or getattr(exc, "from_worker", False):
            raise  # (a worker process's TargetError is worded as this one)
        file, line = _import_location(exc)
        raise TargetError(f"Cannot import {where!r}: {type(exc).__name__}: {exc}"
                          f"{_launch_folder_hint(exc)}", file=file,
                          line=line, details=format_traceback(exc)) from None
    if isinstance(ran, shadow.Shadowed):  # a worker process imported it: its Functions here
        shadows = types.ModuleType(where)
        shadows.__file__ = ran.file
        ran.bind(vars(shadows))
        shadows.__kinds__ = ran.kinds  # type: ignore[attr-defined]  # (see load_file)
        return shadows
    return ran


def _launch_folder_hint(exc: BaseException) -> str:
    """Where the missing module is a file or package in the current folder: the worker
    processes import nothing from the folder you launch from (a random.py there would
    stand in for Python's own), so say how to name it."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    top = (name or "").partition(".")[0]
    here = Path.cwd()
    if not top or not ((here / f"{top}.py").is_file() or (here / top).is_dir()):
        return ""
    file = f"{top}.py" if (here / f"{top}.py").is_file() else f"{top}/..."
    return (f". It is in the current folder, which the worker processes never import from "
            f"(a random.py there would stand in for Python's own): give its file instead, "
            f"e.g. {file}:Class, or install it (pip install -e .)")


def _import_location(exc: BaseException) -> tuple[str | None, int | None]:
    """The deepest traceback frame in a real file outside importlib (where an import broke)."""
    if isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
        return os.path.abspath(exc.filename), exc.lineno
    file, line = getattr(exc, "file", None), getattr(exc, "line", None)
    if file and line:  # a worker process's crash
        return os.path.abspath(file), line
    if getattr(exc, "where_unknown", False):  # stopped from outside, its place not known:
        return None, None  # never the place of the code that stopped it
    found: tuple[str | None, int | None] = (None, None)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        if name.startswith("<") or os.path.abspath(name) == os.path.abspath(__file__):
            continue
        found = (os.path.abspath(name), lineno)
    return found


def _refuse_bad_class(text: str) -> None:
    """TargetError for a file or module followed by a colon and no class name (``mine.py:``,
    ``pkg.mod:3``), which would otherwise be looked up as a gallery name."""
    head, sep, tail = text.rpartition(":")
    if not sep or not head or (len(head) == 1 and head.isalpha()) or os.path.exists(text):
        return  # no colon, a Windows drive, or a file whose name holds a colon
    module = "." in head and all(p.isidentifier() for p in head.split("."))
    if not (is_file_target(head) or module):
        return  # a gallery name: its own message suggests the closest
    what = (f"{text!r}: {tail.strip()!r} after the colon is not a class name" if tail.strip()
            else f"{text!r} names no class after the colon")
    alone = f", or {head} alone for its only Function" if is_file_target(head) else ""
    raise TargetError(f"{what}; write {head}:ClassName{alone}.")


def import_target(where: str, class_name: str, function: type[Function]) -> Target:
    """The Target ``where:class_name``: ``function``, bound by that name in the module
    ``where`` (imported here, or its shadow)."""
    return Target(f"{where}:{class_name}", function, f"{class_name} ({where})",
                  file=shadow.source_file(function))


def resolve(spec: str, code: str | None = None, *, run_code: RunCode | None = None) -> Target:
    """Turn a TARGET string into a :class:`Target`; TargetError with a clear message otherwise.

    ``code``: for a file target, run this text instead of reading the file (a Target's
    :attr:`~Target.code`, e.g. to load the same Function again in another process).
    ``run_code``: how a user module's top level runs (default :data:`run_module_code`)."""
    text = str(spec).strip()
    if not text:
        raise TargetError("No Function given: name a gallery entry, a file.py or module:Class.")
    where, class_name = split_target(text)
    if class_name is None:
        _refuse_bad_class(text)
    if where == PROCESS_LOCAL:
        raise TargetError(f"{class_name or text} was defined in a script or notebook and "
                          "only that program holds it: open it from there again with "
                          "playground.show(...).")
    if class_name is not None and "::" in class_name:
        return _op_target(text, where, class_name, run_code)
    if is_file_target(where):
        module = load_file(where, code, run_code=run_code)
        path = os.path.abspath(where)
        cls = _pick(functions_in(module), class_name, os.path.basename(where), path, module)
        return Target(text, cls, f"{cls.__name__} ({os.path.basename(path)})", file=path,
                      code=module.__source__)
    if class_name is not None:
        module = import_user_module(where, run_code=run_code)
        obj = getattr(module, class_name, None)
        if obj is None and kind_in(module, class_name) is None:
            raise TargetError(f"Module {where!r} has no attribute {class_name!r}.")
        if not is_function(obj):
            raise TargetError(f"{where}:{class_name} is {kind_in(module, class_name)}, not a "
                              "torch.autograd.Function subclass.")
        return import_target(where, class_name, obj)
    if _dotted_module(text):  # ``package.module`` without ``:Class``: its one Function
        module = _importable(text, run_code)
        if module is not None:
            cls = _pick(functions_in(module), None, text, getattr(module, "__file__", None),
                        module)
            return import_target(text, cls.__name__, cls)
    entry = catalog.get(text)
    return Target(entry.name, entry.function, entry.title, entry=entry,
                  file=entry.location[0])


def _dotted_module(text: str) -> bool:
    """Whether ``text`` reads as a dotted module path (``tinylayers.ops``), which no
    gallery name is."""
    return "." in text and all(part.isidentifier() for part in text.split("."))


def _importable(where: str, run_code: RunCode | None):
    """The module ``where`` where it can be found (imported as user code: an error at its
    top level is the user's, raised), else None: the name is then a gallery name's typo.
    Found level by level by the path finders, which import nothing: ``find_spec`` of
    ``a.b`` would import the package ``a``, user code, in this process (the window's)."""
    import importlib.util
    from importlib.machinery import PathFinder

    parts = where.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])  # (a top-level name: nothing imported)
        for depth in range(2, len(parts) + 1):
            if spec is None or spec.submodule_search_locations is None:
                return None
            spec = PathFinder.find_spec(".".join(parts[:depth]),
                                        list(spec.submodule_search_locations))
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    return import_user_module(where, run_code=run_code)
