"""The app's worker process kept warm between the jobs of the Function on show
(:class:`customgrad.workers.warm.WarmWorker`): the head start warms it, and a session's jobs (the
build, the checks, the landscape) use it as their :class:`~playground.workers.policy.JobPolicy`
names it (this one unless a test gives another); the session ends it when the window closes.
One for the whole app, as there is one window."""

from __future__ import annotations

from customgrad.workers.warm import WarmWorker

WORKER = WarmWorker()
