"""Everything off the GUI thread: building a problem, the Jacobian comparison, the descent loop
(in a process of its own) and guarded imports of user code. Reports through callbacks and Qt
signals; imports no view."""
