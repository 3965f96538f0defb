"""Where the user's code runs in the window's own process, said: a crash there ends the
window, so the window shows why isolation is off for as long as it is (issue 35), never
silently. Worker threads call :func:`say`; the session window listens to :data:`WATCH`."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class _Watch(QObject):
    #: why the Function's code runs in the window's process (a sentence)
    said = Signal(str)


#: created on import (the GUI thread's: the session imports this module)
WATCH = _Watch()


def say(function, why: str) -> None:
    """``function``'s code (a class, or its name) runs here because of ``why``."""
    name = getattr(function, "__name__", None) or str(function)
    WATCH.said.emit(f"Isolation off: {name} runs in the window's own process ({why}), so a "
                    "crash in it ends the window.")


NOT_PORTABLE = "a worker process cannot load a Function made at run time"
THREAD_MODE = "AUTOGRAD_PLAYGROUND_LOOP=thread"


def could_not_load(exc) -> str:
    text = str(exc).strip().rstrip(".")
    return f"a worker process could not load it: {text}" if text else \
        "a worker process could not load it"
