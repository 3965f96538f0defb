"""What a target names and how to import it, without Qt: ``where[:Class]`` specs (parsed as
session files parse them), a module imported with the file and line where it broke, a gallery
Function's source for the editor."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import sys
import traceback

from customgrad import loader
from customgrad.errors import TargetError, format_traceback
from customgrad.loader import Target, split_target
from playground.state.session_files import is_file_spec

__all__ = ["class_line", "gallery_source", "import_module", "is_file_spec", "same_file",
           "split_target"]


def same_file(a: str | os.PathLike | None, b: str | os.PathLike | None) -> bool:
    if not a or not b:
        return False
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def class_line(cls: type) -> int | None:
    try:
        return inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return None


def _import_location(exc: BaseException) -> tuple[str | None, int | None]:
    """The deepest traceback frame in a real file outside importlib (where an import broke)."""
    if isinstance(exc, SyntaxError) and exc.filename and not exc.filename.startswith("<"):
        return os.path.abspath(exc.filename), exc.lineno
    if getattr(exc, "file", None) and getattr(exc, "line", None):  # a worker process's crash
        return os.path.abspath(exc.file), exc.line
    found: tuple[str | None, int | None] = (None, None)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        if name.startswith("<") or os.path.abspath(name) == os.path.abspath(__file__):
            continue
        found = (os.path.abspath(name), lineno)
    return found


def import_module(name: str, reload: bool = False):
    """Import (or re-import) ``name``; TargetError naming the file and line that failed."""
    try:
        module = sys.modules.get(name) if reload else None
        if module is not None:
            return loader.run_module_code(lambda: importlib.reload(module), name,
                                          ("module", name))
        return loader.run_module_code(lambda: importlib.import_module(name), name,
                                      ("module", name))
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        file, line = _import_location(exc)
        raise TargetError(f"Cannot import {name!r}: {type(exc).__name__}: {exc}", file=file,
                          line=line, details=format_traceback(exc)) from None


def gallery_source(target: Target) -> str:
    """A gallery Function's class with its module's imports, ready for the editor."""
    source = target.source
    try:
        module_source = inspect.getsource(sys.modules[target.function.__module__])
        tree = ast.parse(module_source)
        imports = [ast.get_source_segment(module_source, node) for node in tree.body
                   if isinstance(node, (ast.Import, ast.ImportFrom))]
    except (KeyError, OSError, TypeError, SyntaxError):
        imports = ["import torch", "from torch.autograd import Function"]
    header = "\n".join(i for i in imports if i)
    doc = f'"""{target.label}, copied from the gallery to edit."""\n\n'
    return f"{doc}{header}\n\n\n{source.rstrip()}\n"
