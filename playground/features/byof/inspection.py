"""The Backward Inspector tab follows the session: one forward + backward at the current
inputs once each Jacobian check has ended, on a worker thread; a ⚠ on the tab when it found
something serious."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from playground.workers.inspector import InspectorRunner

if TYPE_CHECKING:
    from customgrad.checking.inspector import Inspection

__all__ = ["InspectorLink"]


class InspectorLink(QObject):
    """Runs ``inspector`` (an InspectorView) for ``session``'s problem; ``set_title(text)``
    names its tab."""

    def __init__(self, session, *, inspector, set_title: Callable[[str], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.inspector = inspector
        self._set_title = set_title
        self.runner = InspectorRunner(parent=self)
        self._inspected_problem = None
        self.runner.started.connect(inspector.show_waiting)
        self.runner.finished.connect(self._inspected)
        self.runner.failed.connect(self._inspection_failed)
        inspector.rerunRequested.connect(self.inspect_now)

    def checked(self) -> None:
        """A Jacobian check ended: inspect its problem once. Waiting for the check (instead
        of starting with it) keeps the user's code on one thread at a time."""
        problem = self.session.problem
        if problem is not None and problem is not self._inspected_problem:
            self.inspect_now()

    def inspect_now(self) -> None:
        """One forward + backward at the current problem's inputs, on a worker thread."""
        problem = self.session.problem
        if problem is None:
            return
        self._inspected_problem = problem
        self.runner.run(problem.function, problem.args, problem.settings.seed, problem=problem,
                        policy=self.session.policy)

    def target_changed(self, target) -> None:
        self.runner.cancel()
        self._inspected_problem = None
        self.inspector.reset(f"Waiting for the Jacobian check of {target.label}…")
        self.mark(False)

    def show_error(self, exc: BaseException) -> None:
        """An error before there are inputs: nothing to inspect, the inspector says why."""
        if self.session.problem is None and not self.runner.busy:
            self.inspector.show_failure(exc)
            self.mark(True)

    def _inspected(self, inspection: Inspection) -> None:
        from customgrad.checking.inspector import ERROR, WARNING

        self.inspector.show_inspection(inspection)
        serious = inspection.error is not None or any(
            s.severity in (ERROR, WARNING) for s in inspection.surprises)
        self.mark(serious)
        bad = inspection.nonfinite
        if bad:
            # about this Function's run: it goes with it (another Function that failed to
            # build kept it, naming a line of the one before)
            self.session.runNotice.emit("NaN or Inf: " + " ".join(s.message for s in bad)
                                        + " The Inspector tab shows where.")

    def _inspection_failed(self, exc: BaseException) -> None:
        self.inspector.show_failure(exc)
        self.mark(True)

    def mark(self, serious: bool) -> None:
        self._set_title("Inspector ⚠" if serious else "Inspector")
