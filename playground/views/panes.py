"""The window's two containers that size themselves: the left pane (picker above, forms below)
and the main area (loss plot above, the Jacobian pane below); and a side tab's page that
builds its pane when first shown."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QScrollArea, QSplitter, QVBoxLayout, QWidget

__all__ = ["BuiltWhenShown", "LeftPane", "MainArea"]


class LeftPane(QWidget):
    """The Function picker above; the forms below, in a scroll area that never scrolls
    sideways (so :meth:`fit_width` keeps the pane as wide as the forms need)."""

    START_WIDTH = 380  # its narrowest, and its width in a fresh layout

    def __init__(self, picker: QWidget, forms: list[QWidget], parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(picker, 3)
        #: the forms, one under the other, inside the scroll area
        self.form_holder = QWidget()
        form_layout = QVBoxLayout(self.form_holder)
        form_layout.setContentsMargins(0, 0, 0, 0)
        for form in forms:
            form_layout.addWidget(form)
        form_layout.addStretch(1)
        self.scroll = QScrollArea(widgetResizable=True)
        self.scroll.setWidget(self.form_holder)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMinimumWidth(self.START_WIDTH)
        layout.addWidget(self.scroll, 4)
        # new rows (a Function with a longer constant's label, "scale (float)") need a new
        # width as a zoom does: the form's right edge was cut (trained, grad, Regenerate)
        self._fit_timer = QTimer(self, singleShot=True, interval=0)
        self._fit_timer.timeout.connect(self.fit_width)
        self.form_holder.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.form_holder and event.type() == QEvent.Type.LayoutRequest:
            self._fit_timer.start()
        return super().eventFilter(watched, event)

    def fit_width(self) -> None:
        """Wide enough for the forms at the current font (a zoom): they would clip else."""
        m = self.layout().contentsMargins()
        needed = (self.form_holder.minimumSizeHint().width()
                  + self.scroll.verticalScrollBar().sizeHint().width()
                  + 2 * self.scroll.frameWidth() + m.left() + m.right() + 4)
        old, new = self.minimumWidth(), max(self.START_WIDTH, needed)
        self.setMinimumWidth(new)
        splitter = self.parentWidget()
        if new < old and isinstance(splitter, QSplitter) and self.width() <= old:
            # the pane was as narrow as it could be: it narrows with its forms (a theme or
            # zoom gone back), it does not keep the width they needed for a moment
            sizes, index = splitter.sizes(), splitter.indexOf(self)
            spare = sizes[index] - new
            if spare > 0 and len(sizes) > 1:
                sizes[index] = new
                sizes[index + 1 if index + 1 < len(sizes) else index - 1] += spare
                splitter.setSizes(sizes)


class MainArea(QSplitter):
    """``upper`` (the loss plot and side panel) above ``pane`` (the Jacobian pane) below.

    The pane gets the height its heatmaps' square cells need at the width there is
    (``pane.ideal_height()``, refreshed on ``pane.idealHeightChanged``), leaving ``upper`` at
    least its minimum; unless the user has moved the splitter (:attr:`user_set`).

    ``bars``: widgets shown above the area now and then (the error banner, a notice) that
    take their height from ``upper``'s minimum, not from the pane: the heatmaps keep their
    height while a bar is shown, and the layout is the same again once it goes."""

    #: ``upper``'s least height, in lines of the font: a loss plot that still reads
    #: (about 120 pixels at 100 %); the side panel beside it scrolls below its own minimum
    UPPER_LINES = 7

    def __init__(self, upper: QWidget, pane: QWidget, parent=None,
                 bars: Sequence[QWidget] = ()) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self._bars = list(bars)
        self.setChildrenCollapsible(False)
        self.addWidget(upper)
        self.addWidget(pane)
        self.setSizes([290, 560])
        #: the user moved the splitter: keep it where it is
        self.user_set = False
        self._fitted: int | None = None  # the pane's height fit() set last
        self.splitterMoved.connect(self._moved)
        self._fit_timer = QTimer(self, singleShot=True, interval=0)
        self._fit_timer.timeout.connect(self.fit)
        pane.idealHeightChanged.connect(self._fit_timer.start)

    def _moved(self, *_args) -> None:
        self.user_set = True

    def schedule_fit(self) -> None:
        """Fit once the layouts have caught up (a panel shown or hidden, a font changed)."""
        self._fit_timer.start()

    def reset(self) -> None:
        """Give the Jacobian pane its room again (forget where the user put the splitter)."""
        self.user_set = False
        self.fit()

    def fit(self) -> None:
        """The pane's ideal height, within what there is (see the class)."""
        upper, pane = self.widget(0), self.widget(1)
        if self.user_set or upper.isHidden() or pane.isHidden() or not self.isVisible():
            return
        sizes = self.sizes()
        total = sum(sizes)
        if total <= 0:
            return
        least = max(upper.minimumHeight(), upper.minimumSizeHint().height())
        floor = max(least, self.UPPER_LINES * self.fontMetrics().height() - self.lent())
        height = max(pane.minimumSizeHint().height(), min(pane.ideal_height(), total - floor))
        want = [total - height, height]
        # a pane within 2 px of its height is left there (its ideal height can move a pixel
        # as the views take it: no back and forth), unless that height is the one fitted
        # last: the split drifted from it (a theme's passes left the heatmaps 1 px short
        # after a round of themes), and the pane goes back to it exactly
        drifted = height == self._fitted and sizes != want
        if drifted or any(abs(a - b) > 2 for a, b in zip(want, sizes)):
            self.setSizes(want)
            self._fitted = height

    def lent(self) -> int:
        """The height the bars shown take above the area (with the spacing before each)."""
        column = self.parentWidget().layout() if self.parentWidget() is not None else None
        spacing = max(0, column.spacing()) if column is not None else 0
        return sum(bar.height() + spacing for bar in self._bars if bar.isVisible())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_timer.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._fit_timer.start()


class BuiltWhenShown(QWidget):
    """A tab's page that builds its pane (``build()``) the first time it is shown, or asked
    for (:attr:`pane`), not with the window: a side tab hidden at the start costs nothing
    before the window's first paint (docs/startup.md). The pane fills the page (no margins),
    built under the palette and font the page has then, as any new widget is."""

    def __init__(self, build: Callable[[], QWidget], parent=None) -> None:
        super().__init__(parent)
        self._build: Callable[[], QWidget] | None = build
        self._pane: QWidget | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)

    @property
    def built(self) -> bool:
        return self._pane is not None

    @property
    def pane(self) -> QWidget:
        """The pane, built now where it was not."""
        if self._pane is None:
            assert self._build is not None
            self._pane, self._build = self._build(), None
            self.layout().addWidget(self._pane)
            if self.isVisible():  # (else Qt shows it a turn of the event loop later)
                self._pane.show()
        return self._pane

    def showEvent(self, event) -> None:
        self.pane  # noqa: B018 (built before the page's first paint)
        super().showEvent(event)
