"""The Jacobian pane's verdict banner: one line with the verdict (progress and Cancel while
computing) and a Details toggle that unfolds the numbers, the worst entry and the notes in a
drawer under it, above the heatmaps (:class:`DetailsDrawer`). The verdict keeps to its line,
cut where it must be (:class:`VerdictLabel`; the drawer then says it whole): a wrapped verdict
took the heatmaps' height, and gave it back only when a shorter one came.

Verdicts are spelled out with a symbol too, so nothing depends on telling green from red.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QPen
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

from playground.views.fields import FittedLabel, is_narrow
from playground.views.fitting import FitScroll
from playground.views.fonts import fitted, scaled

__all__ = ["DetailsDrawer", "DetailsScroll", "VerdictBanner", "VerdictLabel"]

# Banner colours: (background, border, text).
_PASS = ("#e3f3e6", "#1b7a36", "#0d4a1f")
_FAIL = ("#fde8e6", "#c0261c", "#7a110b")
_BORDER, _RADIUS = 2, 6  # pixels
_ANY_HEIGHT = 16_777_215  # Qt's QWIDGETSIZE_MAX
#: the Details button's short label, folded and unfolded
SHORT_DETAILS = {False: "\u25b6", True: "\u25bc"}
#: the most lines of text the unfolded details take (they scroll past them): the heatmaps
#: give the drawer its height, and keep the rest
DETAILS_LINES = 4


class VerdictLabel(FittedLabel):
    """The verdict's one line, as tall as a line of its font whatever it says. Too long for
    it, a verdict is set smaller first (down to :attr:`LEAST` of its size, as a slide's title
    shrinks to fit), then its "entries outside tolerance" words before the " — diagnosis?"
    (what a student needs: "✘ FAILED: 72 of 384 — transposed?"), then its counts ("✘ FAILED
    — transposed?"), then the diagnosis (Details leads with it), then
    the words that do not fit (or, where that would leave much less, the letters), cut with
    "…"; the text stays whole in :meth:`text` and the tooltip.
    ``cutChanged(cut)`` when it starts or stops being cut (another text, width or font)."""

    cutChanged = Signal(bool)
    LEAST = 0.75

    def __init__(self):
        self._cut = False
        super().__init__()
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def shown(self) -> tuple[str, QFont]:
        """The text as drawn at the label's width now, and the font it is drawn in."""
        text, width = self.text(), self.contentsRect().width()
        least = self._fitted(text, width)
        elided = QFontMetrics(least).elidedText(text, Qt.TextElideMode.ElideRight, width)
        head, dash, diagnosis = text.partition(" — ")
        counted = re.sub(r" (Jacobian )?entries (outside|within) tolerance$", "", head)
        # (a pass's tail, "— w unchecked: …", keeps to the line as a failure's diagnosis does)
        compact = [f"{counted} — {diagnosis}", f"{head.partition(':')[0]} — {diagnosis}"] \
            if dash else []
        words = head.split(" ")
        # whole words, then "…" ("… outside …", not "… outsi…"), where they keep most of
        # what letters cut would ("Jacobian not computed: …" said less than
        # "Jacobian not computed: BackwardRaises.backw…")
        cuts = [" ".join([*words[:n], "…"]) for n in range(len(words) - 1, 1, -1)]
        for candidate in [text, *compact, *([f"{head} …"] if dash else []), *cuts]:
            if candidate in cuts and len(candidate) < 0.7 * len(elided):
                break
            font = self._fitted(candidate, width)
            if QFontMetrics(font).horizontalAdvance(candidate) <= width:
                return candidate, font
        return elided, least

    def _fitted(self, text: str, width: int) -> QFont:
        """The label's font, smaller where ``text`` is wider than ``width`` (to fit, but not
        below LEAST of its size)."""
        return fitted(self.font(), text, width, self.LEAST)

    def is_cut(self) -> bool:
        """Whether the line shows less than the whole verdict."""
        return self.shown_text() != self.text()

    def setText(self, text: str) -> None:
        super().setText(text)
        self._check_cut()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._check_cut()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self._check_cut()

    def _check_cut(self) -> None:
        cut = self.is_cut()
        if cut != self._cut:
            self._cut = cut
            self.cutChanged.emit(cut)


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
        self._presenting = False
        self._short = False  # the buttons' short labels ("2nd", the Details triangle)
        self.verdict_label = VerdictLabel()
        self.verdict_label.setObjectName("JacobianVerdict")
        self.verdict_label.setTextFormat(Qt.TextFormat.PlainText)
        #: the whole verdict, first in the drawer, while its line shows less of it
        self.head_label = QLabel()
        self.details_label = QLabel()
        self.worst_label = QLabel()
        self.notes_label = QLabel()
        for label in (self.head_label, *self._detail_labels()):
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
        for label in (self.head_label, *self._detail_labels()):
            details.addWidget(label)
        self.head_label.hide()
        self.verdict_label.cutChanged.connect(self._show_head)
        self.setContentsMargins(_BORDER, _BORDER, _BORDER, _BORDER)  # inside the border
        box = QVBoxLayout(self)
        box.setContentsMargins(10, 4, 6, 4)
        box.setSpacing(3)
        box.addLayout(self._head)
        # the diagnosis first; scrolled past DETAILS_LINES lines, as tall whether the whole
        # verdict is said first or not (see DetailsScroll)
        details.addStretch(1)  # what the verdict's room leaves, under the lines
        self.details_scroll = DetailsScroll(self.details_box, self.head_label)
        self.progress_bar.hide()
        self.cancel_button.hide()

    def _detail_labels(self) -> tuple[QLabel, QLabel, QLabel]:
        return self.details_label, self.worst_label, self.notes_label

    def _show_head(self, cut: bool) -> None:
        self.head_label.setVisible(cut)

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
        self._label_details()
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
        keeps the height :meth:`hold_height` held."""
        self._state = state
        self.verdict_label.setText(head)
        self.head_label.setText(head)
        if not keep_space:
            self.details_scroll.setMinimumHeight(0)
            self.details_scroll.setMaximumHeight(_ANY_HEIGHT)
        for label, text in zip(self._detail_labels(), (details, worst, notes)):
            label.setText(text)
            if not keep_space:
                label.setVisible(bool(text) or keep_lines)
        self.restyle_colors()

    def hold_height(self) -> None:
        """Keep the unfolded details as tall as they are, until the next verdict (while
        computing: the drawer, and the heatmaps under it, must not move): empty detail lines
        ask for other heights than lines with text. (The verdict's line is one line whatever
        it says.) The next :meth:`set_text` without ``keep_space`` lets go, at once: the
        height the verdict's lines ask for is known then (:class:`DetailsScroll`)."""
        if self.details_scroll.isVisible():
            self.details_scroll.setFixedHeight(self.details_scroll.height())

    # ------------------------------------------------------------------ progress

    def start_progress(self, message: str) -> None:
        # the message is cut at the right where the bar narrows its line (the bar says it)
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
        self.progress_bar.hide()
        self.cancel_button.hide()

    # ------------------------------------------------------------------ fonts, colours

    def restyle(self, base: QFont, verdict_scale: float) -> None:
        """Fonts from ``base``, the verdict ``verdict_scale`` times its usual size."""
        self.verdict_label.setFont(scaled(base, 1.4 * verdict_scale, bold=True))
        self.details_button.setFont(scaled(base, 1.0))
        self.order_button.setFont(scaled(base, 1.0))
        self._presenting = verdict_scale != 1.0
        self._fit_buttons()
        self.head_label.setFont(scaled(base, 1.0, bold=True))
        for widget in (self.details_label, self.worst_label):
            widget.setFont(scaled(base, 1.0))
        self.notes_label.setFont(scaled(base, 0.92))
        height = max(self.progress_bar.sizeHint().height(),
                     self.cancel_button.sizeHint().height())
        self._row_strut.changeSize(0, height, QSizePolicy.Policy.Fixed,
                                   QSizePolicy.Policy.Fixed)
        self._head.invalidate()
        self.restyle_colors()

    def _fit_buttons(self) -> None:
        """"2nd order" and "Details" where there is room; "2nd" and the Details arrow
        alone while presenting (a larger verdict) or where the banner is narrow (1280x720 at
        150 %): the verdict keeps the room, to be read whole. By the banner's width and
        font only, not by what the verdict says: the buttons do not change with it."""
        short = self._presenting or is_narrow(self, self.details_button.font())
        self.order_button.setText("2nd" if short else "2nd order")
        self._short = short
        self._label_details()

    def _label_details(self) -> None:
        """"Details" beside the style's arrow; short, a triangle as tall as the letters of
        "2nd" beside it (▶ folded, ▼ unfolded): the style's arrow alone was a speck on a
        projector (presenting at 150 %), a "Details" there would take the verdict's words."""
        button, shown = self.details_button, self.details_button.isChecked()
        if self._short:
            button.setArrowType(Qt.ArrowType.NoArrow)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            button.setText(SHORT_DETAILS[shown])
        else:
            button.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            button.setText("Details")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self._fit_buttons()

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


class DetailsScroll(FitScroll):
    """The details' scroll area: as tall as their lines need at its width, up to
    :data:`DETAILS_LINES` lines. Measured by what changes it only when it asks again
    (its text, fonts and own width), so that no layout keeps a stale height: the lines at
    the width they have beside a scroll bar, whether one shows or not (its coming and going
    changes no width of the area's), and the whole verdict (``head``, first, shown while
    the verdict's line is cut) counted whether shown or not (whether that line is cut is
    known only once the banner is laid out, the progress bar hidden: the drawer's height,
    and the heatmaps', followed in a second pass)."""

    def __init__(self, content: QWidget, head: QLabel):
        super().__init__(content, most=DETAILS_LINES)
        self._head = head

    def _needed(self) -> int:
        content, head = self.widget(), self._head
        layout = content.layout()
        width = self.width() - 2 * self.frameWidth() \
            - self.verticalScrollBar().sizeHint().width()
        if width <= 0:
            return content.sizeHint().height()
        needed = layout.totalHeightForWidth(width) + 2 * self.frameWidth() + 2
        if head.isHidden() and head.text():
            needed += head.heightForWidth(width) + max(0, layout.spacing())
        return needed


class DetailsDrawer(QFrame):
    """The banner's details and the tolerance editors, in a drawer under the banner, in the
    pane's column: while it is open the heatmaps under it take that much less height
    (nothing outside the pane moves: :meth:`JacobianView.ideal_height` leaves it out), and
    when it closes they are where they were. Laid over the heatmaps, it hid their cells
    (linear_bug's Analytic and Numerical in presentation mode at 150 %). Its height follows
    the details' lines (:class:`DetailsScroll`: at most :data:`DETAILS_LINES`), held while
    a check computes, never the pane's height; where the pane is short it gives way to
    two lines, and the heatmaps keep their least height."""

    def __init__(self, pane: QWidget, banner: VerdictBanner, tolerances: QWidget):
        super().__init__(pane)
        self.setObjectName("JacobianDrawer")
        self.setFrameShape(QFrame.Shape.Box)
        self.setLineWidth(1)
        box = QVBoxLayout(self)
        box.setContentsMargins(8, 4, 8, 4)
        box.setSpacing(4)
        box.addWidget(banner.details_scroll)
        box.addWidget(tolerances)
        # any width (the pane's: it asks for none, the window's least width stays); as tall
        # as it asks, less where the pane is short
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        self.setVisible(banner.details_shown())
        banner.detailsToggled.connect(self.setVisible)
