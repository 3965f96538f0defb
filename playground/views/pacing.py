"""Repaints of the heavy graphics views, handed out one per turn of the event loop.

A pyqtgraph view repaints from inside the slot that changed it (Qt's graphics view paints
the window as soon as the scene has processed its changes), so a slot that sets out a report
or starts a run, and the repaints of the loss plot and the heatmaps it causes, all land in
one pass of the event loop: 15 to 30 ms during which input and timers wait. ``paint_later``
holds a view's repaint; the held views then repaint one at a time, the next only once the
one before has painted, each in a pass of its own.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QAbstractScrollArea, QWidget
from shiboken6 import isValid

#: the longest the next view waits for the one before it to paint (it may never: covered)
PAINT_WAIT_MS = 50


class _Pacer(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.held: list[QWidget] = []
        self.painting: QWidget | None = None  # released, its paint not seen yet
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(1)  # a turn of the event loop
        self.timer.timeout.connect(self._release_one)
        self.fallback = QTimer(self)
        self.fallback.setSingleShot(True)
        self.fallback.setInterval(PAINT_WAIT_MS)
        self.fallback.timeout.connect(self._painted)

    def hold(self, widget: QWidget) -> None:
        if widget in self.held or not widget.updatesEnabled():
            return
        widget.setUpdatesEnabled(False)
        self.held.append(widget)
        if self.painting is None and not self.timer.isActive():
            self.timer.start()

    def _release_one(self) -> None:
        while self.held:
            widget = self.held.pop(0)
            if not isValid(widget):
                continue
            widget.setUpdatesEnabled(True)  # repaints it whole
            if self.held and widget.isVisible():
                # where a scroll area (a graphics view) paints
                target = widget.viewport() if isinstance(widget, QAbstractScrollArea) else widget
                target.installEventFilter(self)
                self.painting = target
                self.fallback.start()
                return

    def release_all(self) -> None:
        self.timer.stop()
        self._painted()  # stop waiting for a paint
        while self.held:
            widget = self.held.pop(0)
            if isValid(widget):
                widget.setUpdatesEnabled(True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.painting and event.type() == QEvent.Type.Paint:
            self._painted()  # the next is released a turn after this paint
        return False

    def _painted(self) -> None:
        self.fallback.stop()
        if self.painting is not None and isValid(self.painting):
            self.painting.removeEventFilter(self)
        self.painting = None
        if self.held:
            self.timer.start()


_pacer: _Pacer | None = None


def paint_later(widget: QWidget) -> None:
    """Hold ``widget``'s repaint for a turn of the event loop, and until any held before it
    has painted."""
    global _pacer
    if _pacer is None or not isValid(_pacer):
        _pacer = _Pacer()
    _pacer.hold(widget)


def release_all() -> None:
    """Let every held view repaint now: before the window is grabbed (an image of it is
    saved), which draws a held view as bare background."""
    if _pacer is not None and isValid(_pacer):
        _pacer.release_all()


def held() -> list[QWidget]:
    """The widgets whose repaint is held (for tests)."""
    return [] if _pacer is None or not isValid(_pacer) else list(_pacer.held)
