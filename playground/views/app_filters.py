"""The application's event filters written in Python, and a pause for them while a theme or a
zoom restyles every widget.

An event filter on the application sees every event of every widget, and one written in
Python costs a call into the interpreter each time. A theme change or a zoom step sends
tens of thousands of events in one go (a style sheet polishes the application's ~660
widgets again: Polish, StyleChange, FontChange, PaletteChange, LayoutRequest for each):
the two filters the window installs (Escape in a text field, Ctrl + wheel) took as long as
the polish itself, about half of the freeze (docs/performance-log.md, 2026-11-29). Those
events are none a filter acts on, and no key or wheel event can arrive in the middle of that
synchronous work, so :func:`paused` takes the filters out for its duration.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import shiboken6
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication

__all__ = ["install", "installed", "paused", "uninstall"]

_filters: list[QObject] = []
_depth = [0]


def install(event_filter: QObject) -> None:
    """Install ``event_filter`` on the application (as ``installEventFilter`` does), known to
    :func:`paused`."""
    QApplication.instance().installEventFilter(event_filter)
    _filters.append(event_filter)


def uninstall(event_filter: QObject) -> None:
    """Take ``event_filter`` off the application, and out of :func:`paused`'s list (a filter
    whose window is gone is, once Qt deletes it; the tests end a window's filters at once)."""
    if shiboken6.isValid(event_filter):
        QApplication.instance().removeEventFilter(event_filter)
    _filters[:] = [f for f in _filters if f is not event_filter]


def installed() -> list[QObject]:
    """The filters :func:`install` installed that are still alive, oldest first."""
    _filters[:] = [f for f in _filters if shiboken6.isValid(f)]
    return list(_filters)


@contextmanager
def paused() -> Iterator[None]:
    """The filters of :func:`install` out of the application's way inside (nested: the
    outermost restores them), back afterwards in the order they were installed in. Only for
    synchronous work that processes no input events."""
    app = QApplication.instance()
    live = installed() if _depth[0] == 0 else []
    for event_filter in live:
        app.removeEventFilter(event_filter)
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        for event_filter in live:
            if shiboken6.isValid(event_filter):
                app.installEventFilter(event_filter)
