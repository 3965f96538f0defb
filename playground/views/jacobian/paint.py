"""The handshake with the worker of a running comparison: it waits, at a new matrix's first
progress and after a big matrix's previews, for the Jacobian pane to paint them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

from playground.views.pacing import paint_later

if TYPE_CHECKING:
    from customgrad.checking.jacobian import Progress

__all__ = ["PaintGate"]


class PaintGate(QObject):
    """The worker's side of a comparison waits, at a new matrix's first progress and after a
    big matrix's previews, for the pane to paint them (``progress.painted``): a paint takes a
    half to a quarter of the time while the comparison does not compete for the cores and the
    interpreter. ``show(progress)`` draws a progress held back for a pass of its own."""

    def __init__(self, graphics: QWidget, show: Callable[[Progress], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self._graphics = graphics
        self._show = show
        self._waiter: threading.Event | None = None
        self.deferred: Progress | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(1)
        self._timer.timeout.connect(self._show_deferred)
        graphics.viewport().installEventFilter(self)

    def defer(self, progress: Progress) -> None:
        """Show ``progress`` (a new matrix) in a pass of the event loop of its own (laying it
        out takes 5 to 15 ms), not in one with whatever else came in meanwhile."""
        self.drop()
        self.deferred = progress
        self._timer.start()

    def drop(self) -> None:
        """Forget a progress not shown yet (its comparison ended, another began, or a newer
        progress came), and let its worker go."""
        self._timer.stop()
        progress, self.deferred = self.deferred, None
        if progress is not None:
            progress.painted.set()

    def _show_deferred(self) -> None:
        progress, self.deferred = self.deferred, None
        if progress is not None:
            self._show(progress)

    def paint_next_pass(self) -> None:
        """Hold the heatmaps' repaint for a turn of the event loop (see
        playground.views.pacing). Setting a report or a new matrix's layout out takes the GUI
        thread 5 to 15 ms, and the repaint that follows as much again; in one pass they would
        keep input and timers waiting twice as long."""
        paint_later(self._graphics)

    @staticmethod
    def settle_layout() -> None:
        """Apply the layout requests a new matrix posted (axes and labels change size) now,
        while the worker waits: left for later, they came after the first repaint and cost
        a second one of the whole pane, with the comparison competing for the cores."""
        for _ in range(3):  # a plot's new size asks its parent layout again
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)

    def await_paint(self, event: threading.Event) -> None:
        """Set ``event`` once the heatmaps have been repainted (at once if they are not on
        screen, or collapsed to nothing)."""
        self.release()
        if self.on_screen():
            self._waiter = event
        else:  # no paint is coming
            event.set()

    def release(self) -> None:
        """Let the waiting worker go."""
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()

    def on_screen(self) -> bool:
        """Whether the heatmaps can be painted now: not hidden, collapsed, minimised or
        covered."""
        graphics = self._graphics
        handle = graphics.window().windowHandle()
        return (graphics.isVisible() and not graphics.viewport().visibleRegion().isEmpty()
                and handle is not None and handle.isExposed())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._waiter is not None:
            QTimer.singleShot(0, self.release)  # once this paint is done
        return False
