"""Where the session's jobs run the user's code: a value the session owns and hands to each job
it starts (the build, the check, the inspector, the landscape, the import of a user module),
so that a test or the benchmark changes it through the session, never through a module
global."""

from __future__ import annotations

from dataclasses import dataclass, field

from customgrad.workers.warm import WarmWorker
from playground.workers.warm_worker import WORKER


@dataclass(frozen=True)
class JobPolicy:
    """``isolate``: the Function's code runs in worker processes (a crash there, a segfault, an
    abort, ``os._exit``, memory, ends that process, not the window's); a Function no child can
    load again (a class made in ``__main__``) still runs on a thread here, and the window says
    so. ``hold_child``: a check in a worker process waits while the view paints, as one on a
    thread does (off, it computes on meanwhile: the benchmark's "unheld" way). ``worker``: the
    worker process kept warm between the jobs of the Function on show (the build, the checks,
    the landscape); the app's own, which its head start warms, unless a test gives one of its
    own."""

    isolate: bool = True
    hold_child: bool = True
    worker: WarmWorker = field(default=WORKER, compare=False)


#: what a job started without one follows (the app's own)
DEFAULT = JobPolicy()
