"""torch in the window's process, imported after the window's first paint (issue 33).

The window's modules import the engine's (torch) where a function runs, not at module
level, so the window paints within a second or so; torch (2 to 3 s) is then imported on a
helper thread while the window stays usable, and what needs it (opening the first Function,
the session's builds and checks) runs once it has arrived: :func:`when_arrived`.

Importing torch off the main thread is what the workers' fork server does too; torch's
import installs no signal handler and needs nothing of the GUI thread. Whatever on the GUI
thread imports torch meanwhile (a module of the engine, on a click) waits for this import
to finish (Python's lock on the module), as it would have waited for its own.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, Slot

__all__ = ["arrived", "expect", "start", "when_arrived"]

_waiting: list[Callable[[], None]] = []
#: pending: the app imports torch after the first paint (:func:`expect`), not yet arrived;
#: started: that import has begun
_state = {"pending": False, "started": False}
_bridge: list[QObject] = []  # the one bridge, kept alive


def _imported() -> bool:
    """torch is imported in full here (not half-way, on another thread)."""
    torch = sys.modules.get("torch")
    return torch is not None and not getattr(torch.__spec__, "_initializing", False)


def arrived() -> bool:
    """Whether the work that waits for torch may run now: true unless the app said it
    imports torch after its first paint (:func:`expect`) and that import has not ended
    (elsewhere, a test, a notebook, a program of the user's, the engine imports torch where
    it needs it)."""
    return not _state["pending"]


def expect() -> None:
    """The app imports torch after its window's first paint (:func:`start`): until then,
    what :func:`when_arrived` is given waits. Nothing waits where torch is imported already."""
    if not _imported():
        _state["pending"] = True


def when_arrived(fn: Callable[[], None]) -> None:
    """Call ``fn`` on the GUI thread once torch has arrived (now, if it has), in the order
    asked."""
    if arrived():
        fn()
    else:
        _waiting.append(fn)


class _Bridge(QObject):
    """Lives on the GUI thread; its signal, sent from the importing thread, is queued there."""

    imported = Signal()

    @Slot()
    def arrive(self) -> None:
        _arrive()


def _arrive() -> None:
    _state["pending"] = False
    while _waiting:
        _waiting.pop(0)()


def start() -> None:
    """Import torch on a helper thread (once; garbage collection off meanwhile, and what it
    made frozen after, as for the window's own imports: torch makes about 200,000 objects
    that live as long as the app, which the collection just before the first work
    (:func:`playground.app.settle_heap`) walked on the GUI thread, 0.2 to 0.5 s here); what
    :func:`when_arrived` holds runs on the GUI thread after. An import that fails lets
    them run too: the engine's next import of torch raises the error, where it is said."""
    if _state["started"] or arrived():
        return
    _state["started"] = True
    bridge = _Bridge()
    _bridge.append(bridge)
    bridge.imported.connect(bridge.arrive)

    def work() -> None:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with contextlib.suppress(Exception):  # said where the engine imports it next
                import torch  # noqa: F401

                gc.freeze()  # as app.imports_frozen freezes the window's (see there)
        finally:
            if was_enabled:
                gc.enable()
            bridge.imported.emit()

    threading.Thread(target=work, name="import torch", daemon=True).start()
