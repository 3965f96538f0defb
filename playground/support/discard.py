"""Big results are freed on a thread of their own, never on the GUI's.

A 2048 x 2048 Jacobian report holds about 100 MB of tensors, and freeing them takes 10 to
15 ms: a visible hitch when the GUI thread drops the last reference (when the next report
replaces it). Views hand what they let go of to :func:`discard` just before they drop their
own reference; the discard thread lets go of it a moment later, so it is the last holder.
Freeing a tensor's memory does not hold the GIL, so the window keeps painting meanwhile.

Only plain data (reports, tensors, arrays) goes here, never a QObject: those belong to the
thread that made them.
"""

from __future__ import annotations

import queue
import threading
import time

#: how long the discard thread holds on: views drop their own references right after the
#: call, in the same slot, so that by then it is the last holder
GRACE_SECONDS = 0.25

_queue: queue.SimpleQueue = queue.SimpleQueue()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def discard(*objects) -> None:
    """Free ``objects`` (None ignored) on the discard thread, once the caller has let go."""
    kept = [o for o in objects if o is not None]
    if not kept:
        return
    _queue.put((time.monotonic() + GRACE_SECONDS, kept, None))
    _start()


def held(name: str) -> property:
    """An attribute whose old value goes to :func:`discard` when it is replaced or cleared:
    ``_report = held("report")`` in a view's class body."""
    private = f"_held_{name}"

    def get(self):
        return getattr(self, private, None)

    def set(self, value):
        old = getattr(self, private, None)
        if old is not None and old is not value:
            discard(old)
        setattr(self, private, value)

    return property(get, set, doc=f"{name} (freed on the discard thread when replaced)")


def _start() -> None:
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="discard", daemon=True)
            _thread.start()


def _run() -> None:
    while True:
        due, kept, done = _queue.get()
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        del kept  # the last reference, here: the memory is returned on this thread
        if done is not None:
            done.set()


def drain(timeout: float = 5.0) -> bool:
    """Wait until everything handed over so far has been let go of; False on timeout."""
    done = threading.Event()
    _queue.put((0.0, [], done))
    _start()
    return done.wait(timeout)
