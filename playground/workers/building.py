"""Building a problem off the GUI thread: resolve the target, validate the specs, draw the
inputs (the probes that guess constants and the forward that finds the outputs' shapes
call the user's code, so in a worker process where the Function can be loaded again: the
one kept for its checks, :mod:`customgrad.workers.warm`)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from customgrad.errors import Cancelled, FunctionError
from playground.workers import jobs
from playground.workers.policy import DEFAULT, JobPolicy

if TYPE_CHECKING:
    from customgrad.problems.problem import Problem
    from customgrad.problems.settings import Settings

#: how long preparing the inputs may call the user's code (its forward, the probes) before it
#: is stopped; counted from the build's start, with room for a cold fork server
BUILD_SECONDS = 60.0


class BuildStop:
    """When a build in a worker process stops: :meth:`cancel` (the user's Cancel, or a
    newer build), or ``seconds`` after it began."""

    def __init__(self, seconds: float | None = None):
        self.seconds = BUILD_SECONDS if seconds is None else seconds
        self.cancelled = threading.Event()
        self.deadline = time.monotonic() + self.seconds

    def cancel(self) -> None:
        self.cancelled.set()

    def __call__(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() > self.deadline


_warm = threading.Lock()
_warmed = False
_warmed_optim = False


def _build(settings: Settings, target, stop: BuildStop | None = None,
           policy: JobPolicy = DEFAULT) -> Problem:
    """build(), in a worker process where ``policy`` isolates, after warming torch's lazy
    imports once: two threads importing them for the first time at the same moment can
    collide inside torch (a half-imported sympy)."""
    import torch

    from customgrad.problems.problem import build

    global _warmed, _warmed_optim
    with _warm:
        if not _warmed:
            x = torch.ones(2, requires_grad=True)
            (x * 2).sum().backward()
            torch.vmap(torch.sin)(torch.ones(2, 2))
            _warmed = True
        if settings.optimizer != "sgd" and not _warmed_optim:
            # torch.optim's first optimizer imports torch._dynamo (and sympy): a second or
            # two, here rather than on the GUI thread when the run starts
            x = torch.ones(2, requires_grad=True)
            x.grad = torch.ones(2)
            torch.optim.SGD([x], lr=0.1, momentum=0.9).step()
            torch.optim.Adam([x], lr=0.1).step()
            _warmed_optim = True
    if jobs.isolated(target, target.function if target is not None else None, policy):
        return _build_in_child(settings, target, stop or BuildStop(), policy.worker)
    return build(settings, target)


def _build_in_child(settings: Settings, target, stop: BuildStop, worker) -> Problem:
    """build() in a worker process (``worker``'s, it calls the user's forward), the tensors
    shared back; this process's own build where the child cannot load the Function. ``stop``
    ends the child (Cancel; a forward stuck inside C past the time limit)."""
    from customgrad.problems.problem import build
    from playground.workers import child_jobs, head_start

    head_start.wait_for(child_jobs.warm_key_for(target), stop)
    if stop.cancelled.is_set():  # cancelled while it waited (the window closing, say): no
        raise Cancelled("Preparing the inputs was cancelled.")  # child starts for it
    try:
        return jobs.in_child_or_here(
            lambda: worker.call(child_jobs.build, target.spec, target.code, settings,
                                name=f"build {target.spec}",
                                warm_key=child_jobs.warm_key_for(target),
                                should_stop=stop).problem(target),
            lambda: build(settings, target), target.function)
    except Cancelled as exc:
        if stop.cancelled.is_set():
            was = f"; it was{exc.where()}" if exc.where() else ""
            raise Cancelled(f"Preparing the inputs was cancelled{was}.", file=exc.file,
                            line=exc.line, function=exc.function, stack=exc.stack) from None
        raise FunctionError(f"{target.label} was still running after {stop.seconds:g} s while "
                            f"the inputs were prepared{exc.where()}, and was stopped (an endless "
                            "loop, or a wait inside C, in its forward or in the probes that "
                            "guess its constants?).", file=exc.file, line=exc.line,
                            details=exc.stack) from None


def start_build(settings: Settings, target, on_problem, on_error,
                stop: BuildStop | None = None, policy: JobPolicy = DEFAULT):
    """Resolve the target, validate specs and draw inputs off the GUI thread (in a worker
    process where ``policy`` isolates); ``stop`` (a :class:`BuildStop`) ends it."""
    worker = jobs.create_worker(_build, settings, target, stop, policy, _start_thread=False,
                                _ignore_errors=True)
    worker.returned.connect(on_problem)
    worker.errored.connect(on_error)
    worker.start()
    return worker
