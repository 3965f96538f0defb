"""The app's worker process kept warm between the jobs of the Function on show
(:class:`customgrad.workers.warm.WarmWorker`): the head start warms it, and a session's jobs (the
build, the checks, the landscape) use it as their :class:`~playground.workers.policy.JobPolicy`
names it (this one unless a test gives another); the session ends it when the window closes.
One for the whole app, as there is one window."""

from __future__ import annotations

from customgrad import config
from customgrad.workers.warm import WarmWorker


def nice() -> int:
    """How far below the window the app's worker processes run (``CUSTOMGRAD_CHILD_NICE``,
    5): the window's thread gets a core first when it wakes to paint, and a worker has the
    core whenever the window does not want it."""
    return config.current().child_nice


WORKER = WarmWorker(nice=nice())
