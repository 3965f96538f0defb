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

__all__ = ["arrived", "expect", "imported", "in_background", "start", "when_arrived"]

_waiting: list[Callable[[], None]] = []
#: pending: the app imports torch after the first paint (:func:`expect`), not yet arrived;
#: started: that import has begun
_state = {"pending": False, "started": False}


def imported() -> bool:
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
    what :func:`when_arrived` is given waits. Where torch is imported already (a program
    that imported it before starting the app), it waits all the same, for the first paint
    only: the window paints first, with the same work before it as when torch comes later,
    and :func:`start` lets it run at once."""
    _state["pending"] = True


def when_arrived(fn: Callable[[], None]) -> None:
    """Call ``fn`` on the GUI thread once torch has arrived (now, if it has), in the order
    asked."""
    if arrived():
        fn()
    else:
        _waiting.append(fn)


class _Bridge(QObject):
    """Lives on the GUI thread; its signal, sent from a helper thread, is queued there."""

    done = Signal(object)

    @Slot(object)
    def call(self, fn: Callable[[], None]) -> None:
        _bridges.remove(self)
        fn()


_bridges: list[_Bridge] = []  # the bridges of the helper threads still running, kept alive


def in_background(work: Callable[[], None], then: Callable[[], None], name: str) -> None:
    """Run ``work`` on a helper thread named ``name`` (garbage collection off meanwhile),
    then ``then`` on the GUI thread (whether ``work`` raised or not: its error is left to
    whoever needs what it made next). Called on the GUI thread."""
    bridge = _Bridge()
    _bridges.append(bridge)
    bridge.done.connect(bridge.call)

    def run() -> None:
        try:
            with collector_off(), contextlib.suppress(Exception):
                work()
        finally:
            bridge.done.emit(then)

    threading.Thread(target=run, name=name, daemon=True).start()


#: the helper threads running with the collector off, and whether it was on before the first
_collector = {"off": 0, "was_enabled": False}
_collector_lock = threading.Lock()


@contextlib.contextmanager
def collector_off():
    """Garbage collection off while any helper thread is inside this, and back as it was
    once the last has left (two threads each saving and restoring ``gc.isenabled()`` would
    turn it back on while the other still imports)."""
    with _collector_lock:
        if not _collector["off"]:
            _collector["was_enabled"] = gc.isenabled()
            gc.disable()
        _collector["off"] += 1
    try:
        yield
    finally:
        with _collector_lock:
            _collector["off"] -= 1
            if not _collector["off"] and _collector["was_enabled"]:
                gc.enable()


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
    if arrived():
        return
    if imported():  # here before the app (or a second start): only the paint was waited for
        _arrive()
        return
    if _state["started"]:
        return
    _state["started"] = True

    def work() -> None:  # an error is said where the engine imports torch next
        load_libraries_unlocked()
        import torch  # noqa: F401

        gc.freeze()  # as app.imports_frozen freezes the window's (see there)

    in_background(work, _arrive, "import torch")


#: torch's C++ library, whose loading is most of the time ``import torch._C`` holds the
#: interpreter's lock (Linux's and macOS's names; Windows loads its libraries its own way)
_CPU_LIBRARIES = ("libtorch_cpu.so", "libtorch_cpu.dylib")


def load_libraries_unlocked() -> bool:
    """Load torch's C++ library (``libtorch_cpu``, hundreds of MB) without holding the
    interpreter's lock, before ``import torch`` needs it.

    ``import torch._C`` loads it as a dependency of the extension module, inside the import, which
    holds the lock throughout: its static initialisers (thousands of operator registrations) ran
    for up to a second (docs/startup.md), during which the GUI thread could not run a line of
    Python (the window froze once while torch loaded). ``dlopen`` called through ctypes releases
    the lock, as every foreign call does, so the same initialisers run beside the GUI thread;
    the import then finds the library loaded (it is never unloaded: torch's own import keeps it
    too). It runs nothing of torch's Python and changes no symbol's scope: the library is opened
    with the flags Python opens extension modules with, as the extension's own dependency would
    be. False where there is nothing to load this way (torch not installed, another layout, no
    ``dlopen``): the import then loads it as before."""
    import ctypes
    import importlib.util
    import os

    spec = importlib.util.find_spec("torch")
    folders = spec.submodule_search_locations if spec is not None else None
    if not folders:
        return False
    for name in _CPU_LIBRARIES:
        path = os.path.join(folders[0], "lib", name)
        if os.path.isfile(path):
            break
    else:
        return False
    try:
        dlopen = ctypes.CDLL(None).dlopen
    except (AttributeError, OSError):
        return False
    dlopen.restype = ctypes.c_void_p
    dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return bool(dlopen(os.fsencode(path), sys.getdlopenflags()))
