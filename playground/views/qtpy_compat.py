"""qtpy's Qt modules without their star imports: each name of PySide6 taken as it is used.

superqt (the workers' ``create_worker``, the code panes' highlighter) imports ``qtpy.QtCore``,
``qtpy.QtGui`` and ``qtpy.QtWidgets``. Each runs ``from PySide6.QtX import *``: a ``getattr``
on every name of PySide6's module, which makes PySide6 create every class it has and each
class's enums (PySide6 creates them on first use, through Python's ``enum``): about 400
enums and a quarter of a second of CPU, in the window's process, between its first paint
and its first verdict (docs/startup.md). superqt and the app use a few dozen of those names.

:func:`lighter_qtpy` has qtpy's own modules run with each such line replaced by an import of
the names the module itself names (its patches of PySide6's classes run as before, on the
same classes), and a module ``__getattr__`` (PEP 562) that takes any other name from
PySide6's module the first time it is asked for, and keeps it: ``from qtpy.QtCore import
QObject`` gives PySide6's own ``QObject`` as before. Only on a qtpy version read for it
(:data:`CHECKED`), where qtpy picked PySide6, before those modules are imported, and where
each star line is found exactly once, alone on its line; anywhere else qtpy is imported as
it is. Checked by tests/playground/test_qtpy_compat.py.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.machinery
import sys
import types
from collections.abc import Callable
from typing import Any, ClassVar

__all__ = ["CHECKED", "STARS", "lighter_qtpy", "without_stars"]

#: qtpy's Qt modules and, for each, the PySide6 modules it star-imports (in its PySide6
#: branch), in the order it imports them
STARS: dict[str, tuple[str, ...]] = {
    "qtpy.QtCore": ("PySide6.QtCore",),
    "qtpy.QtGui": ("PySide6.QtGui", "PySide6.QtOpenGL"),
    "qtpy.QtWidgets": ("PySide6.QtWidgets",),
}
#: the qtpy versions whose three modules were read for this: low (included), high (excluded)
CHECKED = ((2, 4), (2, 5))


def _public(module: types.ModuleType) -> list[str]:
    """What ``from module import *`` binds (PySide6's modules have no ``__all__``); listing
    them creates nothing."""
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in dir(module) if n[:1] != "_"]


def _named_in(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names a module's code reads or binds anywhere (its functions' bodies included:
    they read the module's globals at call time), and those it deletes at its top level."""
    named: set[str] = set()
    deleted: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            named.add(node.id)
        elif isinstance(node, ast.alias):
            named.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            named.add(node.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Delete):
            deleted.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return named, deleted


def without_stars(source: str, stars: dict[str, list[str]]) -> tuple[str, set[str]] | None:
    """``source`` (one of qtpy's Qt modules) with each ``from <module> import *`` of
    ``stars`` (a module's name: its public names) replaced, on the same line, by importing
    the module and those of its names the source reads or binds itself (bound at the same
    point, so what the module binds before or after overrides as before); and the names it
    deletes. None unless each line is there exactly once, alone on its line."""
    lines = source.splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    named, deleted = _named_in(ast.parse(source))
    for module, public in stars.items():
        line = f"from {module} import *"
        if stripped.count(line) != 1:
            return None
        index = stripped.index(line)
        indent = lines[index][:len(lines[index]) - len(lines[index].lstrip())]
        used = sorted(named.intersection(public))
        imports = f"; from {module} import {', '.join(used)}" if used else ""
        lines[index] = (f"{indent}__import__({module!r}){imports}  # the rest as asked for"
                        " (playground.views.qtpy_compat)\n")
    return "".join(lines), deleted


def _taken_as_asked(module: types.ModuleType, sources: list[types.ModuleType],
                    deleted: set[str]) -> Callable[[str], Any]:
    """The module's ``__getattr__``: a name of its star-imported modules (the last one's
    first, as the stars bound them), fetched now and kept; else the module's own
    ``__getattr__`` (qtpy's: names of optional modules that failed to import), else
    AttributeError."""
    own = module.__dict__.get("__getattr__")
    public = [set(_public(source)) - deleted for source in reversed(sources)]

    def __getattr__(name: str) -> Any:  # (PEP 562: a module's missing names)
        for source, names in zip(reversed(sources), public):
            if name in names:
                value = getattr(source, name)
                setattr(module, name, value)
                return value
        if own is not None:
            return own(name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    return __getattr__


class _LighterModule(importlib.machinery.SourceFileLoader):
    """One of qtpy's Qt modules, run from its source without its star imports
    (:func:`without_stars`), given a ``__getattr__`` that takes their names as asked for."""

    sources: list[types.ModuleType]
    deleted: set[str]
    lighter: bool = False

    def get_code(self, fullname: str) -> Any:
        self.sources = []
        stars: dict[str, list[str]] = {}
        for name in STARS[fullname]:
            with contextlib.suppress(ImportError):
                self.sources.append(importlib.import_module(name))
                stars[name] = _public(self.sources[-1])
            if name not in stars:
                stars[name] = []  # not installed: the line still raises where it is
        source = self.get_data(self.path).decode("utf-8")
        lighter = without_stars(source, stars)
        if lighter is None:
            return super().get_code(fullname)
        self.lighter = True
        text, self.deleted = lighter
        return compile(text, self.path, "exec", dont_inherit=True)

    def exec_module(self, module: types.ModuleType) -> None:
        super().exec_module(module)
        if self.lighter:
            module.__getattr__ = _taken_as_asked(  # type: ignore[method-assign]
                module, self.sources, self.deleted)
            names = sorted({name for source in self.sources for name in _public(source)}
                           .union(n for n in module.__dict__ if n[:1] != "_") - self.deleted)
            # ``from qtpy.QtCore import *`` binds the names it bound before, fetched then
            module.__all__ = names
            module.__dir__ = lambda: sorted(set(module.__dict__) | set(names))  # type: ignore[method-assign]


class _LighterFinder:
    """Finds qtpy's three Qt modules (each once; it leaves ``sys.meta_path`` once all three
    are found) and loads each with :class:`_LighterModule`, where qtpy picked PySide6 on a
    checked version."""

    left: ClassVar[set[str]] = set(STARS)

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None):
        if fullname not in cls.left:
            return None
        cls.left.discard(fullname)
        if not cls.left:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(cls)  # type: ignore[arg-type]
        qtpy = sys.modules.get("qtpy")
        if qtpy is None or not getattr(qtpy, "PYSIDE6", False) \
                or not checked(getattr(qtpy, "__version__", "")):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _LighterModule(fullname, spec.origin or "")
        return spec


def checked(version: str) -> bool:
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    low, high = CHECKED
    return len(numbers) == 2 and low <= numbers < high


def lighter_qtpy() -> bool:
    """Have qtpy's Qt modules imported without their star imports (see the module's
    docstring). Only before any of them is imported; where qtpy then picks another binding
    or is another version, they are imported as they are. True where it will apply (or
    did)."""
    if _LighterFinder in sys.meta_path:
        return True
    if any(name in sys.modules for name in STARS):
        return all(isinstance(getattr(sys.modules[name].__spec__, "loader", None),
                              _LighterModule) for name in STARS if name in sys.modules)
    sys.meta_path.insert(0, _LighterFinder)  # type: ignore[arg-type]
    return True
