"""What a target names and how to import it, without Qt: ``where[:Class]`` specs (parsed as
session files parse them), a module imported with the file and line where it broke, a gallery
Function's source for the editor."""

from __future__ import annotations

import ast
import inspect
import os
import sys
from typing import TYPE_CHECKING

from playground.state.session_files import is_file_spec

if TYPE_CHECKING:  # the loader imports torch: after the first paint
    from customgrad.targets import loader
    from customgrad.targets.loader import Target

__all__ = ["class_line", "gallery_source", "import_module", "is_file_spec", "same_file",
           "split_target"]


def same_file(a: str | os.PathLike | None, b: str | os.PathLike | None) -> bool:
    if not a or not b:
        return False
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def class_line(cls: type) -> int | None:
    from customgrad.function.shadow import source_lines

    try:
        return source_lines(cls)[1]  # a shadow's, as its worker read it
    except (OSError, TypeError):
        return None


def split_target(spec: str) -> tuple[str, str | None]:
    """:func:`customgrad.targets.loader.split_target` (the loader imported here, not before
    the window's first paint)."""
    from customgrad.targets.loader import split_target

    return split_target(spec)


def import_module(name: str, reload: bool = False, run_code: loader.RunCode | None = None):
    """Import (or re-import) ``name``, its top level run by ``run_code`` (the session's);
    TargetError naming the file and line that failed."""
    from customgrad.targets import loader

    return loader.import_user_module(name, reload=reload, run_code=run_code)


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
