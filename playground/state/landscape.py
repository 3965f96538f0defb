"""What the Landscape tab shows, and when it is computed again.

:class:`LandscapeModel` follows the session's run (its steps and their learning rates) and
keeps the last landscape drawn. While the tab is shown it asks its worker
(:class:`~playground.workers.landscape.LandscapeRunner`, a worker process) for:

- a whole landscape (a new plane through the current point, the grid coarse first) for a new
  problem or run, a new plane choice or grid size, when the run pauses at a new point, and
  when the current point has left the middle of the view or the plane
  (:func:`customgrad.landscape.moved_away`);
- otherwise, while the run plays, the path and the arrows only, on the plane kept: one at a
  time, the next when the last came back (so at most as often as it can be drawn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from customgrad.defaults import LANDSCAPE_MODES, LANDSCAPE_SIZE
from customgrad.errors import Cancelled
from playground.workers.landscape import LandscapeRunner

if TYPE_CHECKING:
    from customgrad.landscape import Landscape

FULL, PATH = "full", "path"


class LandscapeModel(QObject):
    """The landscape of the session's current run (see the module)."""

    started = Signal(str)  # what is being computed, in words
    progress = Signal(object, object)  # a partial Landscape (the coarse grid first), Contours
    ready = Signal(object, object)  # a whole Landscape, its Contours
    pathMoved = Signal(object)  # the path and arrows on the kept plane (no grid)
    failed = Signal(str)
    cleared = Signal()

    def __init__(self, session, runner: LandscapeRunner | None = None, parent=None) -> None:
        super().__init__(parent or session)
        self.session = session
        self.runner = runner or LandscapeRunner(self)
        self.mode = LANDSCAPE_MODES[0]
        self.size = LANDSCAPE_SIZE
        #: the picture's width over its height: the grid is widened to fill it
        self.aspect = 1.0
        #: the tab is shown: work is done only then
        self.active = False
        #: the last whole landscape (its plane and view are kept while the run plays)
        self.shown: Landscape | None = None
        self.lrs: list[float] = []
        self._running: str | None = None  # FULL or PATH: the job under way
        self._pending: str | None = None
        self._stale = True  # the shown landscape is not of the current point and plane
        session.problemReady.connect(self._new_run)
        session.runReset.connect(self._new_run)
        session.batchReady.connect(self._batch)
        session.runningChanged.connect(self._running_changed)
        self.runner.progress.connect(self._progress)
        self.runner.finished.connect(self._finished)
        self.runner.failed.connect(self._failed)

    @property
    def step(self) -> int:
        return len(self.lrs)

    # ---- what the view asks ---------------------------------------------------------------
    def set_active(self, active: bool) -> None:
        """The tab is shown (work as asked) or hidden (what runs is stopped; the window's
        closing hides it too)."""
        self.active = bool(active)
        if self.active and self._stale:
            self.request(FULL)
        elif not self.active and self._running is not None:
            self.runner.cancel()
            self._stale = self._stale or self._running == FULL or self._pending == FULL
            self._running = self._pending = None

    def set_mode(self, mode: str) -> None:
        if mode not in LANDSCAPE_MODES:
            raise ValueError(f"unknown plane {mode!r}")
        if mode != self.mode:
            self.mode = mode
            self.recompute()

    def set_size(self, size: int) -> None:
        if int(size) != self.size:
            self.size = max(3, int(size))
            self.recompute()

    def set_aspect(self, aspect: float) -> None:
        """The picture's shape, for the next grid (the one shown stays)."""
        self.aspect = min(8.0, max(1 / 8, float(aspect)))

    def recompute(self) -> None:
        """A new plane and grid at the current point, now (what ran is dropped)."""
        self._stale = True
        if self.active:
            self._start(FULL)

    def request(self, kind: str) -> None:
        """Ask for a landscape (FULL) or the path only (PATH): started when the worker is
        free, else queued (a whole one before a path)."""
        if kind == FULL:
            self._stale = True
        if not self.active or self.session.problem is None:
            return
        if self._running is not None:
            if self._pending != FULL:
                self._pending = kind
            return
        self._start(kind)

    # ---- the session's news ---------------------------------------------------------------
    def _new_run(self, *_args) -> None:
        self.runner.cancel()
        self._running = self._pending = None
        self.lrs = []
        self.shown = None
        self.cleared.emit()
        self.recompute()

    def _batch(self, batch) -> None:
        if not len(batch):
            return
        last = batch.last.lr
        if self.lrs and self.lrs[-1] != last:  # changed in this batch: at which step?
            self.lrs.extend(float(record.lr) for record in batch.records)
        else:  # (the records unpacked only then: a batch holds hundreds)
            self.lrs.extend([float(last)] * len(batch))
        self.request(PATH if self.shown is not None else FULL)

    def _running_changed(self, running: bool) -> None:
        if not running and self.shown is not None and self.shown.step != self.step:
            self.request(FULL)  # paused at a new point: the plane through it

    # ---- the worker's news ----------------------------------------------------------------
    def _start(self, kind: str) -> None:
        problem = self.session.problem
        if problem is None:
            return
        self._pending = None
        shown = self.shown
        if kind == PATH and shown is None:
            kind = FULL
        options = {"mode": self.mode, "size": self.size, "aspect": self.aspect}
        if kind == PATH and shown is not None:
            options.update(size=0, plane=shown.plane, box=(shown.center, shown.half))
        else:
            self._stale = False
            self.started.emit(f"Drawing the loss around step {self.step}…")
        self._running = kind
        self.runner.run(problem, self.step, self.lrs, options, policy=self.session.policy)

    def _progress(self, serial: int, partial: Landscape, contours) -> None:
        if serial == self.runner.serial and self._running == FULL:
            self.progress.emit(partial, contours)

    def _finished(self, serial: int, result: Landscape, contours=None) -> None:
        from customgrad.landscape import moved_away

        if serial != self.runner.serial:
            return
        kind, self._running = self._running, None
        if kind == FULL:
            self.shown = result
            self.ready.emit(result, contours)
        else:
            self.pathMoved.emit(result)
            if self.shown is not None and moved_away(self.shown, result.current,
                                                     result.off_plane):
                self._pending = FULL
        if result.step != self.step and self._pending is None:
            self._pending = PATH
        if self._pending is not None:
            self._start(self._pending)

    def _failed(self, serial: int, exc: BaseException) -> None:
        if serial != self.runner.serial:
            return
        self._running = self._pending = None
        if not isinstance(exc, Cancelled):
            self.failed.emit(str(exc))


__all__ = ["FULL", "PATH", "LandscapeModel"]
