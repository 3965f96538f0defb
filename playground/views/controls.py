"""Play/Pause, Step, Reset, the speed and "Check Jacobian here", with the current step and loss
shown large beside them (or, in presentation mode, beside the loss plot); in presentation mode
the open Function's name at the row's end (:class:`FunctionName`)."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QBoxLayout,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from playground.views import theme
from playground.views.fields import FittedLabel
from playground.views.fonts import fitted

__all__ = ["SPEEDS", "ControlsBar", "FunctionName", "ShortenedButton"]

#: the widest step and loss the readout keeps room for (a millionth step widens it once)
STEP_WIDEST = "step 000000"
LOSS_WIDEST = "loss −0.0000e+00"
READOUT_GAP = 24  # pixels between the step and the loss
#: the readout's least size (times the font) where its row is short: the buttons' own
LEAST_READOUT = 1.0
#: the Function's name while presenting, times the font (less where the buttons' row is
#: shorter than its line: it takes no height)
NAME_SCALE = 1.5
NAME_LEAST = 0.8  # set smaller to this share of its size before it is cut
GAP = 16  # pixels between the buttons and the name at least

SPEEDS = (("max speed", 0.0), ("1000 steps/s", 1000.0), ("100 steps/s", 100.0),
          ("30 steps/s", 30.0), ("10 steps/s", 10.0), ("3 steps/s", 3.0), ("1 step/s", 1.0))


class ShortenedButton(QPushButton):
    """A push button that says ``short`` where the row has no room for ``text``: its least
    width is the short text's, so it never makes the window wider than the screen (the
    high-contrast theme's padding at 150 % made 1280 px windows 1311 px wide). Its sizes
    are the two texts' own, whatever it says now: no back and forth."""

    def __init__(self, text: str, short: str, parent=None):
        self._texts = (text, short)
        self._hints: dict[tuple, tuple[QSize, QSize]] = {}
        super().__init__(text, parent)
        # narrower than its size hint where the row needs (a push button's policy is not)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def _sizes(self) -> tuple[QSize, QSize]:
        """The button's size hint with each text, in its font and the application's sheet."""
        app = QApplication.instance()
        key = (self.font().key(), app.styleSheet() if app is not None else "",
               self.iconSize().width(), self.minimumHeight())
        if key not in self._hints:
            probe = QPushButton()
            probe.setFont(self.font())
            probe.setMinimumHeight(self.minimumHeight())
            probe.ensurePolished()
            sizes = []
            for text in self._texts:
                probe.setText(text)
                sizes.append(probe.sizeHint())
            self._hints[key] = (sizes[0], sizes[1])
        return self._hints[key]

    def sizeHint(self) -> QSize:
        return self._sizes()[0]

    def minimumSizeHint(self) -> QSize:
        return self._sizes()[1]

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        whole = self.width() >= self._sizes()[0].width()
        text = self._texts[0 if whole else 1]
        if self.text() != text:
            self.setText(text)


class FunctionName(FittedLabel):
    """The open Function's name ("LinearFunction (find the bug)", "MyLinear (my_linear.py)"
    for a file's), bold, read from the back of a room: as wide as it asks where the row has
    the room, cut with "…" where it has not (the tooltip says it whole); as tall as the row
    is, never taller (it takes no height from the heatmaps)."""

    ALIGN = Qt.AlignmentFlag.AlignRight

    def __init__(self):
        super().__init__()
        self.setObjectName("PresentedFunction")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        self.setContentsMargins(GAP, 0, 0, 0)  # from the buttons, where the row is short

    def sizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance(self.text()) + GAP + 4, 0)

    def minimumSizeHint(self) -> QSize:
        return QSize(10, 0)

    def shown(self) -> tuple[str, QFont]:
        """The text as drawn at the width there is, and its font: smaller first (to
        :data:`NAME_LEAST` of its size), then cut with "…"."""
        text, width = self.text(), self.contentsRect().width()
        font = fitted(self.font(), text, width, NAME_LEAST)
        return QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, width), font



class ControlsBar(QWidget):
    """Play/Pause, Step, Reset, speed, and the current step and loss shown large."""

    readout_scale = 1.8  # step/loss readout size relative to the font (presentation: more)

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        self._running_now = False
        self.play = QPushButton("Play")
        self.step = QPushButton("Step")
        self.reset = QPushButton("Reset")
        self._color_icons()
        self.check = ShortenedButton("Check Jacobian here", "Check Jacobian")
        for button, tip in ((self.play, "Run gradient descent (Space)"),
                            (self.step, "Pause, then one step (S or Right)"),
                            (self.reset, "Back to step 0, same seed, same run (R)"),
                            (self.check, "Compare the Jacobians at the current point (C)")):
            button.setToolTip(tip)
            button.setMinimumHeight(36)
        self.speed = QComboBox()
        for label, rate in SPEEDS:
            self.speed.addItem(label, rate)
        self.speed.setToolTip("Steps per second while playing")
        self.step_label = QLabel("step 0")
        self.loss_label = QLabel("loss —")
        self._buttons = QHBoxLayout()
        self._buttons.setContentsMargins(0, 0, 0, 0)
        for w in (self.play, self.step, self.reset, self.speed, self.check):
            self._buttons.addWidget(w)
        self._buttons.addStretch(1)
        #: the open Function's name, at the row's end while presenting (show_function)
        self.function_name = FunctionName()
        self.function_name.hide()
        self._buttons.addWidget(self.function_name)
        #: the step and loss in large type: beside the buttons, or elsewhere (presentation
        #: mode puts it beside the loss plot, one number above the other: see lend_readout)
        self.readout = QWidget()
        self._readout = QBoxLayout(QBoxLayout.Direction.LeftToRight, self.readout)
        self._readout.setContentsMargins(0, 0, 0, 0)
        self._readout.addStretch(1)
        self._readout.addWidget(self.step_label)
        self._readout.addSpacing(READOUT_GAP)
        self._readout.addWidget(self.loss_label)
        # one row; the readout moves below the buttons when a large font needs the room
        self._layout = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.addLayout(self._buttons, 1)
        self._layout.addWidget(self.readout)
        self.apply_font(self.font())
        # Play, Step and Check: the window connects them (they wait for a field being typed)
        self.reset.clicked.connect(session.reset)
        self.speed.currentIndexChanged.connect(
            lambda i: session.set_rate(self.speed.itemData(i)))
        session.runningChanged.connect(self._running)
        session.batchReady.connect(self._batch)
        session.runReset.connect(self._reset)
        session.targetChanged.connect(self._target_changed)

    def show_function(self, shown: bool) -> None:
        """The open Function's name at the row's end (presentation mode: the room cannot
        read the window's title), or not."""
        self.function_name.setVisible(shown)
        self._fit_name()

    def _target_changed(self, target) -> None:
        self.function_name.setText(target.label)  # a file's: "Name (file.py)"

    def _fit_name(self) -> None:
        """The name :data:`NAME_SCALE` times the font, bold; smaller where a line of it
        would be taller than the buttons (the row must not grow for it)."""
        row = max(self.play.sizeHint().height(), self.play.minimumHeight())
        font = QFont(self.font())
        font.setBold(True)
        points = self._base_points * NAME_SCALE
        font.setPointSizeF(points)
        while QFontMetrics(font).height() > row and points > self._base_points:
            points = max(self._base_points, points - 0.5)
            font.setPointSizeF(points)
        if self.function_name.font() != font:
            self.function_name.setFont(font)

    def apply_font(self, font: QFont) -> None:
        """Buttons in ``font``; the step and loss readout ``readout_scale`` times larger (less
        where its row is narrower than that needs: see :meth:`_fit_readout`), the Function's
        name :data:`NAME_SCALE` times (less where the row is not as tall)."""
        self.setFont(font)
        self._base_points = font.pointSizeF() if font.pointSizeF() > 0 else 10.0
        self._set_readout_points(self._base_points * self.readout_scale)
        self._fit_name()
        for layout in (self._buttons, self._readout, self._layout):
            layout.invalidate()
        self.updateGeometry()
        self._arrange()

    def _readout_font(self, points: float) -> QFont:
        big = QFont(self.font())
        big.setPointSizeF(points)
        big.setBold(True)
        return big

    def _reserved_width(self, points: float) -> int:
        """The readout's width at ``points``: its two labels' fixed widths and the gap."""
        metrics = QFontMetrics(self._readout_font(points))
        return (metrics.horizontalAdvance(STEP_WIDEST) + READOUT_GAP
                + metrics.horizontalAdvance(LOSS_WIDEST))

    def _set_readout_points(self, points: float) -> None:
        big = self._readout_font(points)
        if self.step_label.font() == big and self.loss_label.font() == big:
            return
        for label in (self.step_label, self.loss_label):
            label.setFont(big)
        # fixed widths: a changing number must not re-layout (and repaint) the window
        metrics = QFontMetrics(big)
        self.loss_label.setMinimumWidth(metrics.horizontalAdvance(LOSS_WIDEST))
        self.step_label.setMinimumWidth(metrics.horizontalAdvance(STEP_WIDEST))

    def lend_readout(self, layout: QBoxLayout | None) -> None:
        """Show the readout in ``layout`` (elsewhere in the window), one number above the
        other; None: back beside the buttons, in one row."""
        if layout is None:
            self._readout.setDirection(QBoxLayout.Direction.LeftToRight)
            self._layout.addWidget(self.readout)
        else:
            self._readout.setDirection(QBoxLayout.Direction.TopToBottom)
            layout.addWidget(self.readout)
        self.readout.show()
        for label in (self.step_label, self.loss_label):
            label.setAlignment(Qt.AlignmentFlag.AlignRight if layout is not None
                               else Qt.AlignmentFlag.AlignLeft)
        self.updateGeometry()
        self._arrange()

    def readout_lent(self) -> bool:
        """Whether the readout is shown elsewhere (see lend_readout)."""
        return self.readout.parent() is not self

    def _readout_width(self) -> int:
        """The readout's width beside the buttons at its full size (0 while lent)."""
        if self.readout.parent() is not self:
            return 0
        return self._reserved_width(self._base_points * self.readout_scale)

    def _one_row_width(self) -> int:
        m = self._layout.contentsMargins()
        return (self._buttons.minimumSize().width() + self._layout.spacing()
                + self._readout_width() + m.left() + m.right())

    def minimumSizeHint(self) -> QSize:
        """As narrow as the buttons' row: the readout wraps below them, and is set smaller
        there where that row is narrower than it (it never makes the window wider than the
        screen: high contrast at 150 % with linear_bug's forms needed 1289 px)."""
        m = self._layout.contentsMargins()
        least = (self._reserved_width(self._base_points * LEAST_READOUT)
                 if self.readout.parent() is self else 0)
        width = max(self._buttons.minimumSize().width(), least)
        return QSize(width + m.left() + m.right(), super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        """One row where the buttons and the full-size readout fit, else the readout below;
        by the widths at full size only, never by the size the readout is set at now (no
        back and forth)."""
        wrap = self.width() < self._one_row_width()
        direction = QBoxLayout.Direction.TopToBottom if wrap else QBoxLayout.Direction.LeftToRight
        if self._layout.direction() != direction:
            self._layout.setDirection(direction)
            self.updateGeometry()
        self._fit_readout(wrap)

    def _fit_readout(self, wrapped: bool) -> None:
        """The readout at ``readout_scale`` times the font where its row has the room; in a
        row of its own narrower than that, the largest size (in tenths of a point, at least
        :data:`LEAST_READOUT` times the font) whose width fits it."""
        if self.readout.parent() is not self:
            return  # lent: sized where it is (presentation mode)
        points = self._base_points * self.readout_scale
        m = self._layout.contentsMargins()
        room = self.width() - m.left() - m.right()
        full = self._reserved_width(points)
        if wrapped and full > room:
            # the width grows about as the size: start from the size in proportion, then
            # step by tenths to the largest that fits (a few font measurements, not hundreds)
            least, most = self._base_points * LEAST_READOUT, points
            points = max(least, math.floor(points * room / full * 10) / 10)
            while points > least and self._reserved_width(points) > room:
                points = max(least, round(points - 0.1, 1))
            while points + 0.1 < most and self._reserved_width(round(points + 0.1, 1)) <= room:
                points = round(points + 0.1, 1)
        self._set_readout_points(points)

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._color_icons()
        super().changeEvent(event)

    def _color_icons(self) -> None:
        """The buttons' icons in the buttons' text colour: visible in every theme."""
        color = self.palette().color(QPalette.ColorRole.ButtonText)
        self.play.setIcon(theme.icon("pause" if self._running_now else "play", color))
        self.step.setIcon(theme.icon("step", color))
        self.reset.setIcon(theme.icon("reset", color))

    def _running(self, running: bool) -> None:
        self._running_now = bool(running)
        self.play.setText("Pause" if running else "Play")
        self._color_icons()

    def _batch(self, batch) -> None:
        record = batch.last
        if record is not None:
            self.step_label.setText(f"step {record.step + 1}")
            self.loss_label.setText(f"loss {_fmt(record.loss)}")

    def _reset(self, _label: str) -> None:
        self.step_label.setText("step 0")
        self.loss_label.setText("loss —")


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.6g}" if 1e-4 <= abs(x) < 1e6 or x == 0 else f"{x:.4e}"
