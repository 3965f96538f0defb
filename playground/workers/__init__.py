"""Everything off the GUI thread: building a problem, the Jacobian comparison, the descent loop
(in a process of its own) and guarded imports of user code. Reports through callbacks and Qt
signals; imports no view."""

#: what the window's worker processes run, for the fork server to import once when it starts
#: (the app's entry point and the session's warm-up ask for it; nothing does on import)
WORKER_MODULES = ("playground.workers.child_jobs",)
