"""One zoom level for every pane: the application font, and ``apply_font`` on each view.

Views that size things from the font themselves (plot axes, heatmap labels, the verdict
banner, the big step/loss readout) have an ``apply_font(font)`` method; everything else
follows the application font.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QComboBox, QToolTip, QWidget

from playground.state.preferences import MAX, MIN, STEPS, clamp, step_zoom
from playground.views import app_filters

__all__ = ["MAX", "MIN", "STEPS", "WheelZoom", "apply_zoom", "base_point_size", "step_zoom"]

_BASE_PROPERTY = "playground_zoom_base_points"
_SET_PROPERTY = "playground_zoom_font_set"


def base_point_size() -> float:
    """The application font size at 100 % (remembered on the application the first time)."""
    app = QApplication.instance()
    value = app.property(_BASE_PROPERTY)
    if value:
        return float(value)
    size = app.font().pointSizeF()
    size = size if size > 0 else 10.0
    app.setProperty(_BASE_PROPERTY, size)
    return size


def zoomed_font(percent: float, boost: float = 1.0) -> QFont:
    font = QFont(QApplication.font())
    font.setPointSizeF(base_point_size() * clamp(percent) / 100 * boost)
    return font


@app_filters.paused()
def apply_zoom(window: QWidget, percent: float, boost: float = 1.0, *,
               sheet: str | None = None) -> QFont:
    """Scale the application font to ``percent`` of its start size and tell every view.

    ``sheet``: the application style sheet to set (a theme's, see theme.apply_theme); None
    keeps the one there is. Either is set once, after the application font."""
    font = zoomed_font(percent, boost)
    QApplication.setFont(font)
    # Qt posts the change to each widget: deliver it now, so sizes are right at once
    QApplication.sendPostedEvents(None, QEvent.Type.ApplicationFontChange)
    _forget_combo_sizes(window)
    QToolTip.setFont(font)
    app = QApplication.instance()
    sheet = app.styleSheet() if sheet is None else sheet
    if sheet:
        # widgets under a style sheet keep the font they were polished with: polish again
        app.setStyleSheet(sheet)
    owners = []
    for widget in [window, *window.findChildren(QWidget)]:
        method = getattr(widget, "apply_font", None)
        if callable(method):
            method(font)
            owners.append(widget)
    for widget in window.findChildren(QWidget):
        # the same for a widget with its own style sheet (banners), unless a view above it
        # sizes its fonts itself
        if (widget.styleSheet() or widget.property(_SET_PROPERTY)) \
                and not any(o.isAncestorOf(widget) for o in owners):
            if widget.styleSheet():
                widget.setStyleSheet(widget.styleSheet())  # children too, shown or not
            widget.setFont(font)
            widget.setProperty(_SET_PROPERTY, True)  # explicit now: keep it in step
    return font


def _forget_combo_sizes(window: QWidget) -> None:
    """A font change makes a combo box measure its size hint again but not its least size:
    measured at a larger zoom (a round of themes there measures again), a combo kept that
    width after zooming out, and the rows around it moved. A style change forgets both."""
    for combo in window.findChildren(QComboBox):
        QApplication.sendEvent(combo, QEvent(QEvent.Type.StyleChange))


class WheelZoom(QObject):
    """Ctrl + mouse wheel anywhere in ``window`` zooms (an application event filter)."""

    def __init__(self, window: QWidget, zoom_by) -> None:
        super().__init__(window)
        self._window = window
        self._zoom_by = zoom_by
        self._accumulated = 0

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (event.type() == QEvent.Type.Wheel
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier
                and isinstance(watched, QWidget) and watched.window() is self._window):
            self._accumulated += event.angleDelta().y() or event.angleDelta().x()
            while abs(self._accumulated) >= 120:
                direction = 1 if self._accumulated > 0 else -1
                self._accumulated -= 120 * direction
                self._zoom_by(direction)
            event.accept()
            return True
        return False
