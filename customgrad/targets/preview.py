"""What the code view shows of a TARGET before torch is imported: the text of its file, read and
parsed (``ast``), never imported or run.

A gallery entry's class (or, for a custom op, its module) is found from the gallery's own
source: which module each class is imported from, and the entry's note, are read from
``customgrad/targets/gallery/__init__.py`` as written (a test holds them equal to what the
imported gallery says). A user's ``file.py[:Class]`` shows its class the way the loaded
Function will (the class statement, decorators included), or the whole file where the class
cannot be told without running it. Only the standard library.
"""

from __future__ import annotations

import ast
import functools
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

from customgrad.targets import catalog

__all__ = ["Preview", "preview"]

_GALLERY = Path(__file__).resolve().parent / "gallery"


@dataclass(frozen=True)
class Preview:
    """The code view's title, source, note, file and first line of a Function not loaded yet."""

    title: str
    source: str
    note: str = ""
    file: str | None = None
    first_line: int = 1


def preview(spec: str) -> Preview | None:
    """What the code view can show of ``spec`` (a gallery name or ``file.py[:Class]``) from
    its file's text alone; None for anything else (a module, an op, a file that cannot be
    read: the view waits for the Function to load)."""
    text = str(spec).strip()
    where, name = _split(text)
    if where.endswith(".py") and (name is None or name.isidentifier()):
        return _file_preview(where, name)
    if name is None:
        return _gallery_preview(text)
    return None


def _split(text: str) -> tuple[str, str | None]:
    """``where`` and ``name`` as the loader's split_target makes them, for the two kinds read
    here (a one-letter head is a Windows drive)."""
    head, sep, tail = text.rpartition(":")
    if sep and tail.isidentifier() and not (len(head) == 1 and head.isalpha()):
        return head, tail
    return text, None


def _file_preview(where: str, name: str | None) -> Preview | None:
    path = os.path.abspath(where)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    base = os.path.basename(path)
    found = _class_in(text, name)
    if found is None:  # not found without running the file (several, or made at run time)
        return Preview(f"{name} ({base})" if name else base, text, "", path, 1)
    cls, source, first = found
    return Preview(f"{cls} ({base})", source, "", path, first)


def _class_in(text: str, name: str | None) -> tuple[str, str, int] | None:
    """(name, source, first line) of the class ``name`` at the top level of ``text``, or
    without a name of its one class whose bases name a ``Function``; None where there is no
    such single class, or the text does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    if name is not None:
        chosen = [node for node in classes if node.name == name][-1:]
    else:
        chosen = [node for node in classes if any(_base_name(b) == "Function"
                                                  for b in node.bases)]
    if len(chosen) != 1:
        return None
    node = chosen[0]
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = text.splitlines(keepends=True)[first - 1:node.end_lineno or node.lineno]
    return node.name, textwrap.dedent("".join(lines)), first


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _gallery_preview(name: str) -> Preview | None:
    wanted = name.lower()
    listed = next((e for e in catalog.listing() if e.name == wanted), None)
    found = _gallery_sources().get(wanted)
    if listed is None or found is None:
        return None
    module, cls, note = found
    path = _GALLERY / f"{module}.py"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if cls is None:  # a custom op: its module is what the view shows
        return Preview(listed.title, textwrap.dedent(text), note, str(path), 1)
    shown = _class_in(text, cls)
    if shown is None:
        return None
    _name, source, first = shown
    return Preview(listed.title, source, note, str(path), first)


@functools.cache
def _gallery_sources() -> dict[str, tuple[str, str | None, str]]:
    """name -> (module of the gallery, class there or None for the whole module, note), as
    the gallery's ``__init__`` builds its entries; empty where it cannot be read."""
    try:
        tree = ast.parse((_GALLERY / "__init__.py").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return {}
    prefix = "customgrad.targets.gallery"
    home: dict[str, str] = {}  # a class or module name -> its gallery module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if node.module.startswith(prefix + "."):
                    home[alias.asname or alias.name] = node.module.rsplit(".", 1)[1]
                elif node.module == prefix:
                    home[alias.asname or alias.name] = alias.name
    found: dict[str, tuple[str, str | None, str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "GalleryEntry"):
            continue
        given = {k.arg: k.value for k in node.keywords}
        name, note, function = given.get("name"), given.get("note"), given.get("function")
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            continue
        note_text = note.value if isinstance(note, ast.Constant) and isinstance(
            note.value, str) else ""
        where = _defined_in(function, home)
        if where is not None:
            found[name.value] = (*where, note_text)
    return found


def _defined_in(function: ast.expr | None, home: dict[str, str]) -> tuple[str, str | None] | None:
    """(module, class or None) of an entry's ``function=``: a class imported from a gallery
    module, or ``function_for_op(op, source=module)`` (the module shown whole)."""
    if isinstance(function, ast.Name) and function.id in home:
        return home[function.id], function.id
    if isinstance(function, ast.Call):
        source = next((k.value for k in function.keywords if k.arg == "source"), None)
        if isinstance(source, ast.Name) and source.id in home:
            return home[source.id], None
    return None
