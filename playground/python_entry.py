"""``playground.show(MyFunction, x, w, 2)``: the desktop app on your own tensors.

The window opens on exactly these arguments (their values: each tensor is a ``given`` input,
each other argument a constant), the Function already loaded, even one defined in a script's
``__main__`` or a notebook cell (:mod:`playground.state.from_python`). The Jacobian check and
the descent start from these tensors, and Reset returns to them. From a script the call
blocks until the window closes; where a Qt event loop already runs (IPython or Jupyter after
``%gui qt``) it returns at once and the window stays live.
"""

from __future__ import annotations

from customgrad.errors import SpecError
from customgrad.problems.capture import settings_for
from customgrad.targets.loader import is_function
from playground import app as _app

#: windows opened without blocking: kept alive here until they close
_open: list = []


def show(function: type, *args: object, block: bool | None = None, seed: int = 0,
         steps: int | None = None, lr: float | None = None):
    """Open the playground on ``function`` at forward's arguments ``args`` (as ``apply``
    takes them) and return the window.

    ``block``: wait until the window closes (default: unless a Qt event loop runs already,
    as in IPython after ``%gui qt``). ``seed`` draws the descent's targets; ``steps`` and
    ``lr`` set the loop. Raises ``SpecError`` (before any window opens) for arguments the
    playground cannot use, ``TypeError`` when ``function`` is not a Function subclass.
    """
    if not is_function(function):
        raise TypeError(f"show() takes a torch.autograd.Function subclass, not {function!r}.")
    settings = settings_for(function, args)
    settings.seed = seed
    for name, value in (("steps", steps), ("lr", lr)):
        if value is not None:
            problem = settings.check_field(name, value)
            if problem is not None:
                raise SpecError(problem, field=name)
            setattr(settings, name, value)
    # (not app.imports_frozen: gc.freeze would keep the caller's cyclic garbage for good)
    from PySide6.QtCore import Qt

    from playground.main_window import MainWindow
    from playground.state.from_python import target_for
    from playground.state.session import Session

    qapp = _app.application()
    target, notice = target_for(function)
    session = Session(held=True)
    window = MainWindow(session, restore_session=False)
    # the standalone app's remembered session stays its own (and no tensors are written
    # into it every few seconds): save this one with File > Save session
    window.classroom.sessions.remember = False
    session.open(target, settings)
    _app.fit_to_screen(qapp, window)
    window.show()
    if notice:
        session.notice.emit(notice)
    _app.release_after_show(session, window, settle=False)
    if block is None:
        block = not loop_running(qapp)
    if block:
        qapp.exec()
        return window
    window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
    _open.append(window)
    window.destroyed.connect(lambda *_: _open.remove(window) if window in _open else None)
    return window


def loop_running(qapp) -> bool:
    """True where a Qt event loop already runs for this thread (IPython's ``%gui qt``
    integration, or a call from inside a running app)."""
    shell = _ipython()
    if shell is not None and str(getattr(shell, "active_eventloop", "")).startswith("qt"):
        return True
    return qapp.thread().loopLevel() > 0


def _ipython():
    try:
        return get_ipython()  # type: ignore[name-defined]
    except NameError:
        return None
