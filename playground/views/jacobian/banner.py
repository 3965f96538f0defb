"""The Jacobian pane's verdict banner: one line with the verdict (progress and Cancel while
computing) and a Details toggle that unfolds the numbers, the worst entry and the notes in a
drawer over the heatmaps (:class:`DetailsDrawer`).

Verdicts are spelled out with a symbol too, so nothing depends on telling green from red.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPalette, QPen
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpacerItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from playground.views.fitting import FitScroll
from playground.views.fonts import scaled

__all__ = ["DetailsDrawer", "VerdictBanner"]

# Banner colours: (background, border, text).
_PASS = ("#e3f3e6", "#1b7a36", "#0d4a1f")
_FAIL = ("#fde8e6", "#c0261c", "#7a110b")
_BORDER, _RADIUS = 2, 6  # pixels
_ANY_HEIGHT = 16_777_215  # Qt's QWIDGETSIZE_MAX


class VerdictBanner(QFrame):
    """The banner; ``pane`` is the widget whose colours it takes while neutral, and a share
    of whose height the details may take. The details (:attr:`details_scroll`) are laid out
    by a :class:`DetailsDrawer`, not in the banner.

    Signals: ``cancelRequested()`` from Cancel, ``detailsToggled(shown)`` when the details
    are unfolded or folded."""

    cancelRequested = Signal()
    detailsToggled = Signal(bool)
    #: the first order (1) or the second (2) asked for with the switch
    orderRequested = Signal(int)

    def __init__(self, pane: QWidget):
        super().__init__()
        self.setObjectName("JacobianBanner")
        self._pane = pane
        self._state = "neutral"
        self.verdict_label = QLabel()
        self.verdict_label.setObjectName("JacobianVerdict")
        self.details_label = QLabel()
        self.worst_label = QLabel()
        self.notes_label = QLabel()
        for label in (self.verdict_label, *self._detail_labels()):
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setTextFormat(Qt.TextFormat.PlainText)
            # any width, and as tall as the wrapped text needs there: lines wrap, never
            # overlap (the height-for-width flag must be kept when the policy is replaced)
            policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            policy.setHeightForWidth(True)
            label.setSizePolicy(policy)
        self._build_head()
        self.details_box = QWidget()
        details = QVBoxLayout(self.details_box)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(3)
        for label in self._detail_labels():
            details.addWidget(label)
        self.setContentsMargins(_BORDER, _BORDER, _BORDER, _BORDER)  # inside the border
        box = QVBoxLayout(self)
        box.setContentsMargins(10, 4, 6, 4)
        box.setSpacing(3)
        box.addLayout(self._head)
        # the diagnosis first; scrolled past 0.6 of the pane's height: the drawer covers the
        # heatmaps, it takes no room from them
        self.details_scroll = FitScroll(self.details_box, pane, share=0.6)
        self.progress_bar.hide()
        self.cancel_button.hide()

    def _detail_labels(self) -> tuple[QLabel, QLabel, QLabel]:
        return self.details_label, self.worst_label, self.notes_label

    def _build_head(self) -> None:
        """The verdict line: the verdict, the progress bar, Cancel and the Details toggle."""
        self.details_button = QToolButton()
        self.details_button.setObjectName("JacobianDetails")
        self.details_button.setCheckable(True)
        self.details_button.setText("Details")
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolTip("Show the errors, the worst entry, the notes and the "
                                       "tolerances")
        self.details_button.toggled.connect(self.set_details_shown)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setTextVisible(True)
        self.progress_bar.setMinimumWidth(120)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the comparison")
        self.cancel_button.clicked.connect(self.cancelRequested)
        self._build_order_switch()
        self._head = QHBoxLayout()
        self._head.setSpacing(8)
        self._head.addWidget(self.verdict_label, 3)
        self._head.addWidget(self.progress_bar, 2)
        self._head.addWidget(self.cancel_button)
        self._head.addWidget(self.order_button, 0, Qt.AlignmentFlag.AlignTop)
        self._head.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignTop)
        # the row as tall as the progress bar and Cancel while they are hidden too: showing
        # them must not make it taller (see restyle)
        self._row_strut = QSpacerItem(0, 0, QSizePolicy.Policy.Fixed,
                                      QSizePolicy.Policy.Fixed)
        self._head.addItem(self._row_strut)

    def _build_order_switch(self) -> None:
        """The first order / second order switch: pressed, the heatmaps show the second
        order (D too). One button: two took the room of the verdict's line in presentation
        mode at 150 %, and the heatmaps' height with it."""
        self.order_button = QToolButton()
        self.order_button.setObjectName("JacobianOrder")
        self.order_button.setCheckable(True)
        self.order_button.setToolTip("Second order (D): your backward differentiated by "
                                     "autograd (double backward) against finite differences "
                                     "of backward; again for the first order")
        self.order_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keys stay the window's
        self.order_button.toggled.connect(lambda on: self.orderRequested.emit(2 if on else 1))

    def set_order(self, order: int) -> None:
        """Show ``order`` (1 or 2) as the chosen one (emits nothing)."""
        self.order_button.blockSignals(True)
        self.order_button.setChecked(order == 2)
        self.order_button.blockSignals(False)

    # ------------------------------------------------------------------ details

    def details_shown(self) -> bool:
        return self.details_button.isChecked()

    def set_details_shown(self, shown: bool) -> None:
        """Unfold the details or fold them to the verdict line; ``detailsToggled`` says so."""
        shown = bool(shown)
        if self.details_button.isChecked() != shown:
            self.details_button.setChecked(shown)  # comes back here through toggled
            return
        self.details_button.setArrowType(Qt.ArrowType.DownArrow if shown
                                         else Qt.ArrowType.RightArrow)
        self.details_scroll.setVisible(shown)
        self.detailsToggled.emit(shown)

    # ------------------------------------------------------------------ text

    def set_text(self, state: str, head: str, details: str = "", worst: str = "",
                 notes: str = "", *, keep_space: bool = False, keep_lines: bool = False,
                 ) -> None:
        """The banner in ``state`` ("passed", "failed" or "neutral"). The detail lines keep
        their place when empty while ``keep_lines`` (a verdict, or one coming), so the banner
        keeps its height from one verdict to the next and the heatmaps below never jump (nor
        are laid out again: tens of milliseconds on the GUI thread); ``keep_space`` also
        keeps extra height a wrapped line had."""
        self._state = state
        self.verdict_label.setText(head)
        if not keep_space:
            self.verdict_label.setMinimumHeight(0)
            self.details_scroll.setMinimumHeight(0)
            self.details_scroll.setMaximumHeight(_ANY_HEIGHT)
        for label, text in zip(self._detail_labels(), (details, worst, notes)):
            label.setText(text)
            if not keep_space:
                label.setVisible(bool(text) or keep_lines)
        self.restyle_colors()

    def hold_height(self) -> None:
        """Keep the verdict's line and the unfolded details as tall as they are, until the
        next verdict (while computing: the heatmaps below must not jump): the message may
        take fewer lines than the verdict did, and empty detail lines ask for other heights
        than lines with text."""
        if self.verdict_label.isVisible():  # laid out: its height is real
            self.verdict_label.setMinimumHeight(self.verdict_label.height())
        if self.details_scroll.isVisible():
            self.details_scroll.setFixedHeight(self.details_scroll.height())

    # ------------------------------------------------------------------ progress

    def start_progress(self, message: str) -> None:
        # one line while computing, cut at the right if it must be (the bar says the
        # message too): wrapped where the bar narrows it, it would grow the banner
        self.verdict_label.setWordWrap(False)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat(f"{message}  %p%")
        self.progress_bar.show()
        self.offer_cancel()

    def offer_cancel(self) -> None:
        """Cancel shown and enabled (without the progress bar while inputs are prepared)."""
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)

    def set_progress(self, fraction: float, phase: str) -> None:
        self.progress_bar.setValue(round(fraction * 1000))
        self.progress_bar.setFormat(f"{phase}…  %p%")

    def end_progress(self) -> None:
        self.verdict_label.setWordWrap(True)
        self.progress_bar.hide()
        self.cancel_button.hide()

    # ------------------------------------------------------------------ fonts, colours

    def restyle(self, base: QFont, verdict_scale: float) -> None:
        """Fonts from ``base``, the verdict ``verdict_scale`` times its usual size."""
        self.verdict_label.setFont(scaled(base, 1.4 * verdict_scale, bold=True))
        self.details_button.setFont(scaled(base, 1.0))
        self.order_button.setFont(scaled(base, 1.0))
        self.order_button.setText("2nd order" if verdict_scale == 1.0 else "2nd")
        # presenting (a larger verdict): the toggle is its arrow only, the verdict keeps a line
        self.details_button.setText("Details" if verdict_scale == 1.0 else "")
        self.details_button.setToolButtonStyle(
            Qt.ToolButtonStyle.ToolButtonTextBesideIcon if verdict_scale == 1.0
            else Qt.ToolButtonStyle.ToolButtonIconOnly)
        for widget in (self.details_label, self.worst_label):
            widget.setFont(scaled(base, 1.0))
        self.notes_label.setFont(scaled(base, 0.92))
        height = max(self.progress_bar.sizeHint().height(),
                     self.cancel_button.sizeHint().height())
        self._row_strut.changeSize(0, height, QSizePolicy.Policy.Fixed,
                                   QSizePolicy.Policy.Fixed)
        self._head.invalidate()
        self.restyle_colors()

    def restyle_colors(self) -> None:
        """The colours of the state: the frame is painted (paintEvent) and the labels'
        text colour set in their palettes. Not a style sheet: setting one re-polishes every
        widget in the banner, a few milliseconds of the GUI thread at each check's start
        and verdict, when the view has the heatmaps to lay out and paint."""
        fg = QColor(self._colors()[2])
        label = self.verdict_label  # the details are in the drawer, in the pane's colours
        if label.palette().color(QPalette.ColorRole.WindowText) != fg:
            palette = QPalette()  # this role set, the others the banner's
            palette.setColor(QPalette.ColorRole.WindowText, fg)
            label.setPalette(palette)
        self.update()

    def _colors(self) -> tuple[str, str, str]:
        """(background, border, text) of the state."""
        if self._state == "passed":
            return _PASS
        if self._state == "failed":
            return _FAIL
        pal = self._pane.palette()
        return (pal.color(QPalette.ColorRole.AlternateBase).name(),
                pal.color(QPalette.ColorRole.Mid).name(),
                pal.color(QPalette.ColorRole.WindowText).name())

    def paintEvent(self, event) -> None:
        background, border, _text = self._colors()
        half = _BORDER / 2
        with QPainter(self) as painter:  # ended here, whoever still holds this frame
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(QPen(QColor(border), _BORDER))
            painter.setBrush(QColor(background))
            painter.drawRoundedRect(QRectF(self.rect()).adjusted(half, half, -half, -half),
                                    _RADIUS, _RADIUS)


class DetailsDrawer(QFrame):
    """The banner's details and the tolerance editors, in a drawer laid over the top left
    of the heatmaps under the banner, not in the pane's column: unfolded inside the banner
    they took the heatmaps' height (a 12x32 Jacobian 179 px tall at 1280x720, 142 px in
    presentation mode at 150 %); the drawer takes none. At most :attr:`SHARE` of the pane's
    width and the height below the banner; the details scroll where they need more."""

    SHARE = 0.55

    def __init__(self, pane: QWidget, banner: VerdictBanner, tolerances: QWidget):
        super().__init__(pane)
        self.setObjectName("JacobianDrawer")
        self._pane, self._banner = pane, banner
        self.setFrameShape(QFrame.Shape.Box)
        self.setLineWidth(2)
        self.setAutoFillBackground(True)
        box = QVBoxLayout(self)
        box.setContentsMargins(8, 6, 8, 6)
        box.setSpacing(4)
        box.addWidget(banner.details_scroll)
        box.addWidget(tolerances)
        self.setVisible(banner.details_shown())
        banner.detailsToggled.connect(self._toggled)
        pane.installEventFilter(self)

    def _toggled(self, shown: bool) -> None:
        self.setVisible(shown)
        self.place()

    def eventFilter(self, watched, event) -> bool:
        if watched is self._pane and event.type() == event.Type.Resize:
            self.place()
        return False

    def place(self) -> None:
        """Under the banner, at the pane's left edge, as tall as its contents need."""
        if self.isHidden():
            return
        pane = self._pane
        least = self.layout().itemAt(1).widget().minimumSizeHint().width() + 20
        width = min(pane.width() - 8, max(200, least, int(pane.width() * self.SHARE)))
        top = self._banner.geometry().bottom() + 2
        room = max(0, pane.height() - top - 4)
        layout = self.layout()
        need = layout.totalHeightForWidth(width) if layout.hasHeightForWidth() \
            else self.sizeHint().height()
        # at the left: the Difference heatmap, with its diagnosis tag, stays in sight
        self.setGeometry(4, top, width, min(need, room))
        self.raise_()

    def event(self, event) -> bool:
        if event.type() == event.Type.LayoutRequest:
            QWidget.event(self, event)
            self.place()
            return True
        return super().event(event)
