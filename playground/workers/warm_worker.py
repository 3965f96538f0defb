"""The app's worker process kept warm between the jobs of the Function on show
(:class:`customgrad.workers.warm.WarmWorker`): the build, the checks and the landscape use it, and
the session ends it when the window closes. One for the whole app, as there is one window."""

from __future__ import annotations

from customgrad.workers.warm import WarmWorker

WORKER = WarmWorker()
