"""What one gallery entry is: a Function with the shapes, constants and notes its lesson uses.

The gallery's modules build entries from this; :mod:`customgrad.targets.catalog` reads them and
names the categories they fall into.
"""

from __future__ import annotations

import inspect
import textwrap
import types
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class GalleryEntry:
    """One gallery Function with the defaults the lesson uses."""

    name: str
    title: str
    category: str
    function: type[torch.autograd.Function]
    note: str
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    constants: dict[str, object] = field(default_factory=dict)
    init: dict[str, str] = field(default_factory=dict)
    trained: tuple[str, ...] | None = None
    twin_of: str | None = None
    correct: bool = True
    complex: bool = False  # inputs drawn complex, at the chosen precision

    @property
    def defined(self) -> type | types.ModuleType:
        """What the code view shows: the Function's class, or for a custom op the module
        that defines it."""
        return vars(self.function).get("__source_object__") or self.function

    @property
    def source(self) -> str:
        """The Function's class source, for the code view."""
        return textwrap.dedent(inspect.getsource(self.defined))

    @property
    def location(self) -> tuple[str, int]:
        """(file, first line) of the Function's class."""
        _, first = inspect.getsourcelines(self.defined)
        return inspect.getsourcefile(self.defined) or "", max(first, 1)
