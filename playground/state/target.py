"""The session's target part: which Function is open, the settings carried over to a new one,
and its Problem built off the GUI thread (a build still running when another is asked for is
out of date: a serial number drops what it sends)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

from customgrad.errors import Cancelled, CustomGradError, FunctionError
from playground.state.owner import Owner
from playground.workers.building import BuildStop, start_build
from playground.workers.jobs import shadowing

if TYPE_CHECKING:
    from customgrad.problems.problem import Problem
    from customgrad.problems.settings import Settings
    from customgrad.targets.loader import Target

#: turns a TARGET string into a Target (the app's asks which Function of a file)
Resolver = Callable[[str], "Target"]


def carried_over(old: Settings, spec: str, params: set[str],
                 carry_over: bool) -> tuple[Settings, set[str]]:
    """``old`` for the target ``spec`` whose forward takes ``params``: its shapes, constants,
    init and trained flags kept (when ``carry_over``) for the parameters that remain; and the names
    dropped."""
    new = copy.deepcopy(old)
    new.target = spec
    dropped: set[str] = set()
    for table in ("shapes", "constants", "init", "trained", "given", "differentiate"):
        values = getattr(old, table) if carry_over else {}
        setattr(new, table, {k: v for k, v in values.items() if k in params})
        dropped |= set(values) - params
    return new, dropped


def _real_kind(dtype: str) -> str:
    """A complex dtype's real one at its precision (complex64 -> float32,
    :func:`~customgrad.function.dtypes.in_kind`'s pairs); another, or one not supported (a
    session's float16), as it is."""
    from customgrad.function.dtypes import in_kind, parse_dtype

    try:
        return str(in_kind(parse_dtype(dtype), False)).replace("torch.", "")
    except CustomGradError:
        return dtype


class TargetBuilder:
    """The Function the session shows and the Problem built for it; it says so through the
    session's signals (``targetChanged``, ``settingsChanged``, ``specsChanged``,
    ``busyChanged``, ``errorRaised``) and hands a built Problem to
    :meth:`Session.problem_built <playground.state.session.Session.problem_built>`."""

    def __init__(self, session: Owner, resolver: Resolver, *, held: bool = False) -> None:
        self.session = session
        self.resolver = resolver
        self.target: Target | None = None
        self.problem: Problem | None = None
        self.build_worker: object | None = None
        self._stop = BuildStop()
        self._serial = 0
        self._held = held
        self._waiting = False  # a build asked for while held
        self._busy = False

    # ---- choosing ----------------------------------------------------------------------------
    def resolved(self, spec: str | Target) -> Target | None:
        """``spec`` as a Target; None where it does not load (``errorRaised`` says why)."""
        from customgrad.targets.loader import Target

        try:
            # the window holds shadows of a user module's Functions
            with shadowing(self.session.policy):
                return spec if isinstance(spec, Target) else self.resolver(spec)
        except CustomGradError as exc:
            self.session.errorRaised.emit(exc)
            return None

    def choose(self, spec: str | Target, carry_over: bool | None = None) -> bool:
        """Make ``spec`` the target, the settings carried over (see
        :meth:`Session.set_target <playground.state.session.Session.set_target>`); False
        where it does not load (the target that was open stays)."""
        from customgrad.function.inputs import forward_parameters

        target = self.resolved(spec)
        if target is None:
            return False
        session = self.session
        if carry_over is None:
            carry_over = self.target is not None and self.target.spec == target.spec
        try:
            params = {p.name for p in forward_parameters(target.function)}
        except CustomGradError as exc:
            session.errorRaised.emit(exc)
            return False
        new, dropped = carried_over(session.settings, target.spec, params, carry_over)
        real = _real_kind(new.dtype)
        if not carry_over and target.entry is not None and not target.entry.complex \
                and real != new.dtype:
            # a lesson opens in its own kind: a teacher going on from the complex lesson got
            # every next one in complex (the README's tour no more); the precision stays
            new.dtype = real
            session.notice.emit(f"dtype {real}: {target.label} is a real lesson.")
        if dropped:
            session.notice.emit(f"Reset to defaults: {', '.join(sorted(dropped))} (no longer "
                                f"parameters of {target.function.__name__}.forward).")
        self.target = target
        session.settings = new
        session.targetChanged.emit(target)
        session.settingsChanged.emit(new)
        return True

    # ---- building ----------------------------------------------------------------------------
    def rebuild(self) -> None:
        """Drop the Problem and build it again for the target and settings now (or wait, while
        held). The caller has stopped the run and the checks of the old one."""
        from customgrad.problems.problem import specs_for

        self.cancel()
        self._waiting = False
        self._serial += 1  # a build still running is out of date, whatever follows
        self.problem = None
        if self.target is None:
            self._set_busy(False)
            return
        try:
            self.session.specsChanged.emit(specs_for(self.target, self.session.settings))
        except CustomGradError as exc:
            self._set_busy(False)
            self.session.errorRaised.emit(exc)
            return
        self._set_busy(True)
        if self._held:
            self._waiting = True
            return
        self.start()

    def start(self) -> None:
        serial = self._serial
        self._stop = BuildStop()
        self.build_worker = start_build(
            copy.deepcopy(self.session.settings), self.target,
            lambda problem: self._built(serial, problem),
            lambda exc: self._failed(serial, exc), self._stop, self.session.policy)

    def cancel(self) -> None:
        """Stop a build preparing the inputs (a forward stuck inside C, say): its child ends."""
        self._stop.cancel()

    @property
    def busy(self) -> bool:
        """Whether a build is running or waiting (``busyChanged`` says when this changes)."""
        return self._busy

    def hold(self) -> None:
        self._held = True

    def release(self) -> None:
        self._held = False
        if self._waiting:
            self._waiting = False
            if self.target is not None:
                self.start()
            else:
                self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.session.busyChanged.emit(busy)

    def _built(self, serial: int, problem: Problem) -> None:
        if serial != self._serial:
            return
        self._set_busy(False)
        self.problem = problem
        self.session.problem_built(problem)

    def _failed(self, serial: int, exc: Exception) -> None:
        if serial != self._serial:
            return
        self._set_busy(False)
        self.session.jacobianFailed.emit(str(exc))
        if isinstance(exc, FunctionError) and getattr(exc, "drawn", False):
            # the inputs drawn did not suit forward (the CLI names its options): where to
            # change them here
            exc = FunctionError(
                f"{exc} Change them in the Inputs form: a shape, an init (randint(a,b) for an "
                "int64 tensor: indices, class targets), a constant.",
                file=exc.file, line=exc.line, details=exc.details, phase=exc.phase)
        if not isinstance(exc, Cancelled):  # the user's Cancel: no error
            self.session.errorRaised.emit(exc)
