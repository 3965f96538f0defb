"""The gallery of example Functions, as the CLI, the loader and the app read it: every entry
in display order, and one by name.

The names, titles and categories are data here (:data:`LISTING`), so that ``customgrad list``
and a misspelled name's suggestion need no torch; a test holds them equal to the gallery's own.
Entries, with their Functions, are built in :mod:`customgrad.targets.gallery` (imported on first
use); what an entry is, in :mod:`customgrad.targets.gallery.entry`.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from customgrad.errors import TargetError

if TYPE_CHECKING:
    from customgrad.targets.gallery.entry import GalleryEntry

__all__ = ["CATEGORIES", "CATEGORY_TITLES", "LISTING", "GalleryEntry", "Listed", "entries", "get",
           "listing", "suggest"]

CATEGORIES = ("seed", "classic", "find-the-bug")
#: what the CLI's list and the app's picker call each category (JSON gives both)
CATEGORY_TITLES = {"seed": "From the lessons", "classic": "Classics (one ctx feature each)",
                   "find-the-bug": "Find the bug"}


@dataclass(frozen=True)
class Listed:
    """What a list shows of a gallery entry, without its Function."""

    name: str
    title: str
    category: str
    #: the Function's class name
    function: str
    correct: bool = True
    twin_of: str | None = None
    #: made with torch.library.custom_op (torch 2.4 and newer), listed only where it exists
    custom_op: bool = False


#: every gallery entry in the gallery's own order (tests/customgrad/test_catalog.py checks it)
LISTING = (
    Listed("killhead", "KillHead", "seed", "KillHead"),
    Listed("abs_uv", "|u v| (the seed's Something)", "seed", "Something"),
    Listed("functional_linear", "FunctionalLinear", "seed", "FunctionalLinear"),
    Listed("linear", "LinearFunction", "seed", "LinearFunction"),
    Listed("mulconstant", "MulConstant", "seed", "MulConstant"),
    Listed("mulconstant_nomat", "MulConstant with set_materialize_grads(False)", "seed",
           "MulConstantNoMaterialize"),
    Listed("exp", "Exp (saves its output)", "classic", "Exp"),
    Listed("sigmoid", "Sigmoid (saves its output)", "classic", "Sigmoid"),
    Listed("sincos", "SinCos (two outputs)", "classic", "SinCos"),
    Listed("sort", "Sort (non-differentiable indices)", "classic", "Sort"),
    Listed("relu_inplace", "ReLU in place (mark_dirty)", "classic", "ReluInplace"),
    Listed("numpy_tanh", "Tanh in NumPy", "classic", "NumpyTanh"),
    Listed("cube_newstyle", "Cube (new style: setup_context, vmap)", "classic", "Cube"),
    Listed("softmax", "Softmax (coupled outputs)", "classic", "Softmax"),
    Listed("ste_sign", "Sign, straight-through", "classic", "SignSTE", correct=False),
    Listed("complex_mul", "z * w (complex)", "classic", "ComplexMul"),
    Listed("killhead_bug", "KillHead (find the bug)", "find-the-bug", "KillHeadBuggy",
           correct=False, twin_of="killhead"),
    Listed("mulconstant_bug", "MulConstant (find the bug)", "find-the-bug", "MulConstantBuggy",
           correct=False, twin_of="mulconstant"),
    Listed("abs_uv_bug", "|u v| (find the bug)", "find-the-bug", "SomethingBuggy",
           correct=False, twin_of="abs_uv"),
    Listed("linear_bug", "LinearFunction (find the bug)", "find-the-bug",
           "LinearFunctionBuggy", correct=False, twin_of="linear"),
    Listed("softmax_bug", "Softmax (find the bug)", "find-the-bug", "SoftmaxBuggy",
           correct=False, twin_of="softmax"),
    Listed("sigmoid_bug", "Sigmoid (find the bug)", "find-the-bug", "SigmoidBuggy",
           correct=False, twin_of="sigmoid"),
    Listed("complex_mul_bug", "z * w, complex (find the bug)", "find-the-bug", "ComplexMulBuggy",
           correct=False, twin_of="complex_mul"),
    Listed("sin_op", "sin as a torch.library custom op", "classic", "sin", custom_op=True),
    Listed("sin_op_bug", "sin custom op (find the bug)", "find-the-bug", "sin_bug",
           correct=False, twin_of="sin_op", custom_op=True),
)


def __getattr__(name: str):
    if name == "GalleryEntry":  # imports torch: on first use
        from customgrad.targets.gallery.entry import GalleryEntry

        return GalleryEntry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _has_custom_op() -> bool:
    """Whether torch has torch.library.custom_op, read from its version while torch is not
    imported (importing it would take seconds)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return hasattr(torch.library, "custom_op")
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(n) for n in re.findall(r"\d+", version)[:2])
    return (major, minor) >= (2, 4)


def _ordered(items: list) -> list:
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(items, key=lambda e: order[e.category])


def listing() -> list[Listed]:
    """All gallery entries as data, in display order (by category, then as listed)."""
    ops = _has_custom_op()
    return _ordered([e for e in LISTING if ops or not e.custom_op])


def entries() -> list[GalleryEntry]:
    """All gallery entries, in display order (by category, then as listed)."""
    from customgrad.targets.gallery import ENTRIES

    return _ordered(ENTRIES)


def suggest(name: str) -> str | None:
    """The gallery name closest to a misspelled ``name`` (difflib's), or None."""
    close = difflib.get_close_matches(name.strip().lower(), [e.name for e in listing()], n=1)
    return close[0] if close else None


def get(name: str) -> GalleryEntry:
    """The entry called ``name`` (case-insensitive); TargetError if none."""
    wanted = name.strip().lower()
    for entry in entries():
        if entry.name == wanted:
            return entry
    close = suggest(name)
    hint = f" Did you mean {close}?" if close else ""
    known = ", ".join(e.name for e in listing())
    raise TargetError(f"No gallery Function is called {name!r}.{hint} Known names: {known}.")
