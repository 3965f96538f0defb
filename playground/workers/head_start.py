"""The first check's head start: the worker process kept for the first Function builds it and
checks it once as soon as the fork server has torch, while the window's process is still
importing and building the window (seconds). The window's own build and check, which wait
for its first paint, then find that process warm (the Function loaded, a comparison made)
instead of forking one and loading the Function after the paint.

Only gallery Functions get a head start: their code is the package's own, loaded at once
anyway; a file or import path is the user's code, which runs when the window asks (a
session's file waits for the user's click). What the head start computes is not shown: the
window's build and check run again in the same process, with the window's settings.

Only the standard library in the window's process (:func:`start` runs before the window
imports torch, beside it); the jobs import the engine in the worker process.
"""

from __future__ import annotations

import os
import threading

#: the longest a head start may take (a cold fork server on a loaded machine included)
SECONDS = 60.0


class HeadStart:
    """One Function's head start: :attr:`done` once its jobs have ended, however."""

    def __init__(self, spec: str):
        self.spec = spec
        #: the worker process's key (:func:`~playground.workers.child_jobs.warm_key_for`)
        self.warm_key = ("problem", spec, None)
        self.done = threading.Event()
        #: the window's build asked for the process: the head start's check is skipped
        self.wanted = threading.Event()
        self.pid: int | None = None
        self.checked = False
        self.error: BaseException | None = None


_current: HeadStart | None = None


def start(spec: str) -> HeadStart | None:
    """Build and check gallery Function ``spec`` in the kept worker process, on a thread of
    its own; None (nothing started) for anything but a gallery name."""
    global _current
    from customgrad.targets import catalog

    spec = spec.strip()
    if spec.lower() not in {entry.name for entry in catalog.listing()}:
        return None
    head = HeadStart(spec)
    _current = head
    threading.Thread(target=_run, args=(head,), name="head start", daemon=True).start()
    return head


def _run(head: HeadStart) -> None:
    import time

    from playground.workers.warm_worker import WORKER

    deadline = time.monotonic() + SECONDS

    def late() -> bool:
        return time.monotonic() > deadline

    try:
        head.pid = WORKER.call(built_here, head.spec, warm_key=head.warm_key, should_stop=late,
                               name=f"build {head.spec}")
        if not head.wanted.is_set():
            WORKER.call(checked_here, warm_key=head.warm_key, should_stop=late,
                        name=f"Jacobian check {head.spec}")
            head.checked = True
    except Exception as exc:  # the window's own build meets the same trouble, and says it
        head.error = exc
    finally:
        head.done.set()


def wait_for(warm_key: tuple, stop=None) -> None:
    """Before the window's job for ``warm_key`` takes the kept worker process: wait for a head
    start of the same Function to end (it skips its check), so that the job finds that
    process warm and idle, not busy (a busy one sends the job to a fresh process). ``stop``
    (a callable) ends the wait early."""
    head = _current
    if head is None or head.warm_key != warm_key:
        return
    head.wanted.set()
    while not head.done.wait(0.05):
        if stop is not None and stop():
            return


#: the problem the head start built, in the worker process, for its check
_problem = None


def built_here(spec: str, channel) -> int:
    """In the worker process: load and build ``spec`` with default settings, as
    :func:`playground.workers.child_jobs.build` does (the Function stays loaded there); this
    process's id."""
    global _problem
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings
    from customgrad.workers.processes import load_target

    channel.context(spec)
    _problem = build(Settings(target=spec), load_target(spec, None, channel.targets))
    return os.getpid()


def checked_here(channel) -> None:
    """In the worker process: the Jacobian check of the problem :func:`built_here` made,
    and what follows it in the window's check (:func:`playground.workers.child_jobs.compare`)."""
    global _problem
    from customgrad.checking.verification import verify
    from playground.workers import child_jobs

    problem, _problem = _problem, None
    if problem is not None:
        child_jobs.prepared(verify(problem.function, problem.args, problem.check_options()))
