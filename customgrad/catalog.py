"""The gallery of example Functions, as the CLI, the loader and the app read it: every entry
in display order, and one by name.

Entries are built in :mod:`customgrad.gallery`; what an entry is, in
:mod:`customgrad.gallery.entry`. This module imports both; neither imports it.
"""

from __future__ import annotations

from customgrad.errors import TargetError
from customgrad.gallery import ENTRIES
from customgrad.gallery.entry import CATEGORIES, CATEGORY_TITLES, GalleryEntry

__all__ = ["CATEGORIES", "CATEGORY_TITLES", "GalleryEntry", "entries", "get"]


def entries() -> list[GalleryEntry]:
    """All gallery entries, in display order (by category, then as listed)."""
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(ENTRIES, key=lambda e: order[e.category])


def get(name: str) -> GalleryEntry:
    """The entry called ``name`` (case-insensitive); TargetError if none."""
    wanted = name.strip().lower()
    for entry in entries():
        if entry.name == wanted:
            return entry
    known = ", ".join(e.name for e in entries())
    raise TargetError(f"No gallery Function is called {name!r}. Known names: {known}.")
