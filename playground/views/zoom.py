"""One zoom level for every pane: the application font, and ``apply_font`` on each view.

Views that size things from the font themselves (plot axes, heatmap labels, the verdict
banner, the big step/loss readout) have an ``apply_font(font)`` method; everything else
follows the application font.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QComboBox, QToolTip, QWidget

from playground.state.preferences import MAX, MIN, STEPS, clamp, step_zoom
from playground.views import app_filters

__all__ = ["MAX", "MIN", "STEPS", "WheelZoom", "apply_zoom", "base_point_size", "polish_again",
           "step_zoom"]

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
    if sheet and sheet != app.styleSheet():
        app.setStyleSheet(sheet)  # a theme's: polishes every widget, at the new font
    elif sheet:
        # widgets under a style sheet keep the font they were polished with: polish again
        polish_again()
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


def polish_again() -> None:
    """Every widget of the application polished once by its style, parents before their
    children, and told its style changed: what setting the application's style sheet again
    does, at a fraction of the cost.

    Under an application style sheet a widget takes the font of its parent when it is
    polished, and keeps it through later font changes. Setting the same sheet again polishes
    every widget again, but Qt's pass (``updateObjects``) goes through each widget once and
    then again under each of its ancestors (a deep widget many times over: the counts are in
    docs/performance-log.md), after Qt had thrown away every widget's matched rules. With
    the same sheet the rules still hold (their em lengths follow the widget's font), so one
    polish each, top down, leaves every widget's font, palette and geometry as the sheet set
    again does (tests/playground/test_classroom.py compares them). Hidden widgets too: a
    stacked page's size hint sizes the page shown."""
    seen: set[int] = set()
    order: list[QWidget] = []
    for top in QApplication.topLevelWidgets():
        for widget in [top, *top.findChildren(QWidget)]:
            if id(widget) not in seen:
                seen.add(id(widget))
                order.append(widget)
    change = QEvent(QEvent.Type.StyleChange)
    for widget in order:
        if shiboken6.isValid(widget):
            _keep_own_font(widget)
            widget.style().polish(widget)
            QApplication.sendEvent(widget, change)


#: where Qt's style sheet style keeps the font a widget had when it first polished it
_SHEET_FONT = "_q_styleSheetWidgetFont"


def _keep_own_font(widget: QWidget) -> None:
    """A widget given a font of its own (a view's title, the step and loss readout) keeps it
    when it is polished again. Qt's style sheet style puts back, at each polish, the font the
    widget had when the sheet first polished it (it keeps it in a property, updated by
    ``setFont`` only on a widget with a sheet of its own): a view set its font again after
    the pass, but one that skips an unchanged font kept what went with the old one (the
    readout's widths at 110 % after 110 -> 100 %: "Check Jacobian" cut). The kept font
    is the widget's now, over the parts it set (the kept font's, and those its parent's does
    not set)."""
    kept = widget.property(_SHEET_FONT)
    if not isinstance(kept, QFont) or not widget.testAttribute(Qt.WidgetAttribute.WA_SetFont):
        return
    now = widget.font()
    parent = widget.parentWidget()
    inherited = parent.font().resolveMask() if parent is not None and not widget.isWindow() \
        else 0
    own = QFont(now)
    own.setResolveMask(kept.resolveMask() | (now.resolveMask() & ~inherited))
    if own != kept or own.resolveMask() != kept.resolveMask():
        widget.setProperty(_SHEET_FONT, own)


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
