"""The one-screen window: picker and form on the left; controls, loss, code and Jacobians."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QFont, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QBoxLayout,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from playground.features import byof, classroom
from playground.state.session import Session
from playground.views import theme
from playground.views.code_view import CodeView
from playground.views.error_banner import ErrorBanner
from playground.views.form import InputsForm, LoopForm
from playground.views.jacobian import JacobianView
from playground.views.loss_plot import LossPlot
from playground.views.picker import FunctionPicker
from playground.views.shortcuts import TextFieldEscape

SPEEDS = (("max speed", 0.0), ("1000 steps/s", 1000.0), ("100 steps/s", 100.0),
          ("30 steps/s", 30.0), ("10 steps/s", 10.0), ("3 steps/s", 3.0), ("1 step/s", 1.0))


class ControlsBar(QWidget):
    """Play/Pause, Step, Reset, speed, and the current step and loss shown large."""

    readout_scale = 1.8  # step/loss readout size relative to the font (presentation: more)

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self._running_now = False
        self.play = QPushButton("Play")
        self.step = QPushButton("Step")
        self.reset = QPushButton("Reset")
        self._color_icons()
        self.check = QPushButton("Check Jacobian here")
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
        #: the step and loss in large type: beside the buttons, or elsewhere (presentation
        #: mode puts it beside the loss plot, one number above the other: see lend_readout)
        self.readout = QWidget()
        self._readout = QBoxLayout(QBoxLayout.Direction.LeftToRight, self.readout)
        self._readout.setContentsMargins(0, 0, 0, 0)
        self._readout.addStretch(1)
        self._readout.addWidget(self.step_label)
        self._readout.addSpacing(24)
        self._readout.addWidget(self.loss_label)
        # one row; the readout moves below the buttons when a large font needs the room
        self._layout = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.addLayout(self._buttons, 1)
        self._layout.addWidget(self.readout)
        self.apply_font(self.font())
        self.play.clicked.connect(session.toggle)
        self.step.clicked.connect(session.step_once)
        self.reset.clicked.connect(session.reset)
        self.check.clicked.connect(session.check_now)
        self.speed.currentIndexChanged.connect(
            lambda i: session.set_rate(self.speed.itemData(i)))
        session.runningChanged.connect(self._running)
        session.batchReady.connect(self._batch)
        session.runReset.connect(self._reset)

    def apply_font(self, font: QFont) -> None:
        """Buttons in ``font``; the step and loss readout ``readout_scale`` times larger."""
        self.setFont(font)
        big = QFont(font)
        big.setPointSizeF((font.pointSizeF() if font.pointSizeF() > 0 else 10.0)
                          * self.readout_scale)
        big.setBold(True)
        for label in (self.step_label, self.loss_label):
            label.setFont(big)
        # fixed widths: a changing number must not re-layout (and repaint) the window
        self.loss_label.setMinimumWidth(self.loss_label.fontMetrics().horizontalAdvance(
            "loss −0.0000e+00"))
        self.step_label.setMinimumWidth(self.step_label.fontMetrics().horizontalAdvance(
            "step 0000000"))
        for layout in (self._buttons, self._readout, self._layout):
            layout.invalidate()
        self.updateGeometry()
        self._arrange()

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

    def _readout_width(self) -> int:
        return self._readout.minimumSize().width() if self.readout.parent() is self else 0

    def _one_row_width(self) -> int:
        m = self._layout.contentsMargins()
        return (self._buttons.minimumSize().width() + self._layout.spacing()
                + self._readout_width() + m.left() + m.right())

    def minimumSizeHint(self) -> QSize:
        """As narrow as the wider of the two rows: the readout can wrap below."""
        m = self._layout.contentsMargins()
        width = max(self._buttons.minimumSize().width(), self._readout_width())
        return QSize(width + m.left() + m.right(), super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        wrap = self.width() < self._one_row_width()
        direction = QBoxLayout.Direction.TopToBottom if wrap else QBoxLayout.Direction.LeftToRight
        if self._layout.direction() != direction:
            self._layout.setDirection(direction)
            self.updateGeometry()

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
        if batch.records:
            record = batch.records[-1]
            self.step_label.setText(f"step {record.step + 1}")
            self.loss_label.setText(f"loss {_fmt(record.loss)}")

    def _reset(self, _label: str) -> None:
        self.step_label.setText("step 0")
        self.loss_label.setText("loss —")


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.6g}" if 1e-4 <= abs(x) < 1e6 or x == 0 else f"{x:.4e}"


class MainWindow(QMainWindow):
    """Builds the views from the session and wires their signals to it."""

    def __init__(self, session: Session | None = None, *, restore_prefs: bool | None = None,
                 restore_session: bool | None = None):
        """``restore_*``: apply the remembered zoom and theme, reopen the last session
        (None: yes, unless AUTOGRAD_PLAYGROUND_NO_RESTORE is set)."""
        super().__init__()
        self.session = session or Session()
        s = self.session
        self.setWindowTitle("Autograd playground")
        self.picker = FunctionPicker()
        self.inputs = InputsForm(s)
        self.loop_form = LoopForm(s)
        self.controls = ControlsBar(s)
        self.errors = ErrorBanner()
        self.loss_plot = LossPlot()
        self.code = CodeView()
        self.jacobian = JacobianView()
        self.jacobian.set_tolerances(s.settings.eps, s.settings.atol, s.settings.rtol)

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(6, 6, 6, 6)
        left_layout.addWidget(self.picker, 3)
        form_holder = QWidget()
        form_layout = QVBoxLayout(form_holder)
        form_layout.setContentsMargins(0, 0, 0, 0)
        form_layout.addWidget(self.inputs)
        form_layout.addWidget(self.loop_form)
        form_layout.addStretch(1)
        scroll = QScrollArea(widgetResizable=True)
        scroll.setWidget(form_holder)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        left.setMinimumWidth(380)
        left_layout.addWidget(scroll, 4)

        # the side panel: secondary views, as tabs beside the loss plot (F9 hides it)
        self.side_tabs = QTabWidget()
        self.side_tabs.addTab(self.code, "Code")
        upper = QSplitter(Qt.Orientation.Horizontal)
        upper.addWidget(self.loss_plot)
        upper.addWidget(self.side_tabs)
        #: where presentation mode shows the step and loss, beside the loss plot
        self.readout_holder = QWidget()
        holder = QVBoxLayout(self.readout_holder)
        holder.setContentsMargins(12, 0, 12, 0)
        holder.addStretch(1)
        upper.addWidget(self.readout_holder)
        self.readout_holder.hide()
        upper.setStretchFactor(0, 1)
        upper.setStretchFactor(1, 1)
        upper.setStretchFactor(2, 0)
        upper.setSizes([500, 500])
        # the main area: the loss plot above, the Jacobian pane below, which gets the height
        # its heatmaps' square cells need at the width there is (see fit_main_area)
        right_split = QSplitter(Qt.Orientation.Vertical)
        right_split.setChildrenCollapsible(False)
        right_split.addWidget(upper)
        right_split.addWidget(self.jacobian)
        right_split.setSizes([290, 560])
        self.main_area = right_split
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 4, 4, 4)
        right_layout.addWidget(self.controls)
        right_layout.addWidget(self.errors)
        self.notice = QLabel(wordWrap=True)
        self.notice.setStyleSheet("background: #fff4ce; border: 1px solid #c9a227; "
                                  "border-radius: 4px; padding: 4px; color: #3b2f00;")
        self.notice.hide()
        self._notice_timer = QTimer(self, singleShot=True, interval=15000)
        self._notice_timer.timeout.connect(self.notice.hide)
        right_layout.addWidget(self.notice)
        right_layout.addWidget(right_split, 1)

        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(left)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([380, 1060])
        # the window itself takes the keyboard first: Space, S, R and C work from the start
        main.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setCentralWidget(main)
        #: name -> splitter, for remembering where the user put them
        self.splitters = {"main": main, "side": upper, "area": right_split}
        self._area_user_set = False  # the user moved the main area's splitter: keep it
        right_split.splitterMoved.connect(self._area_moved)
        self._fit_timer = QTimer(self, singleShot=True, interval=0)
        self._fit_timer.timeout.connect(self.fit_main_area)
        self.jacobian.idealHeightChanged.connect(self._fit_timer.start)
        right_split.installEventFilter(self)
        self.status = self.statusBar()
        self._make_actions()

        self.picker.picked.connect(s.set_target)
        s.targetChanged.connect(self._target_changed)
        s.runReset.connect(self.loss_plot.start_run)
        s.batchReady.connect(self._batch)
        s.jacobianStarted.connect(self.jacobian.start)
        s.jacobianProgress.connect(self.jacobian.show_progress)
        s.jacobianReady.connect(self._report)
        s.jacobianFailed.connect(self.jacobian.show_failure)
        s.errorRaised.connect(self._error)
        s.errorCleared.connect(self.errors.hide)
        s.notice.connect(self._notice)
        s.busyChanged.connect(self._busy)
        self.jacobian.tolerancesChanged.connect(
            lambda eps, atol, rtol: s.update(eps=eps, atol=atol, rtol=rtol))
        self.jacobian.cancelRequested.connect(s.cancel_check)
        self.jacobian.checkRequested.connect(s.check_now)
        self.errors.jump.connect(self._jump)
        byof.install(self)
        classroom.install(self, restore_prefs=restore_prefs, restore_session=restore_session)
        self._escape = TextFieldEscape(self, main)
        main.setFocus()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.main_area and event.type() in (QEvent.Type.Resize,
                                                          QEvent.Type.Show):
            self._fit_timer.start()
        return super().eventFilter(watched, event)

    def _area_moved(self, *_args) -> None:
        self._area_user_set = True

    def reset_main_area(self) -> None:
        """Give the Jacobian pane its room again (forget where the user put the splitter)."""
        self._area_user_set = False
        self.fit_main_area()

    def fit_main_area(self) -> None:
        """Give the Jacobian pane the height its square cells need at the width there is,
        leaving the loss plot (and side panel) at least their minimum; unless the user has
        put the splitter somewhere."""
        split = self.main_area
        upper, pane = split.widget(0), split.widget(1)
        if self._area_user_set or upper.isHidden() or pane.isHidden() \
                or not split.isVisible():
            return
        sizes = split.sizes()
        total = sum(sizes)
        if total <= 0:
            return
        floor = max(upper.minimumSizeHint().height(), upper.minimumHeight(),
                    4 * self.fontMetrics().height())
        height = max(pane.minimumSizeHint().height(), min(pane.ideal_height(), total - floor))
        want = [total - height, height]
        if any(abs(a - b) > 2 for a, b in zip(want, sizes)):
            split.setSizes(want)

    def _make_actions(self) -> None:
        s = self.session
        bar = self.menuBar()
        self.menus = {key: bar.addMenu(title) for key, title in (
            ("file", "&File"), ("run", "&Run"), ("view", "&View"), ("help", "&Help"))}
        self.actions_by_name: dict[str, QAction] = {}
        for name, text, keys, slot in (
                ("play", "Play / Pause", ["Space"], s.toggle),
                ("step", "One step", ["S", "Right"], s.step_once),
                ("reset", "Reset (same seed)", ["R"], s.reset),
                ("check", "Check the Jacobian at the current point", ["C"], s.check_now)):
            action = QAction(text, self)
            action.setShortcuts([QKeySequence(k) for k in keys])
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(slot)
            self.addAction(action)
            self.menus["run"].addAction(action)
            self.actions_by_name[name] = action
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        self.menus["file"].addAction(quit_action)
        self.actions_by_name["quit"] = quit_action

    def _target_changed(self, target) -> None:
        self.setWindowTitle(f"Autograd playground — {target.label}")
        self.picker.select(target.entry.name if target.entry else None)
        file, first = target.file, 1
        try:
            import inspect

            first = inspect.getsourcelines(target.function)[1]
        except (OSError, TypeError):
            pass
        self.code.set_function(target.label, target.source, target.note, file,
                               first)
        self.loss_plot.reset_current()
        self.loss_plot.clear_history()

    def _batch(self, batch) -> None:
        if batch.records:
            steps = np.fromiter((r.step for r in batch.records), dtype=np.float64,
                                count=len(batch.records))
            losses = np.fromiter((r.loss for r in batch.records), dtype=np.float64,
                                 count=len(batch.records))
            self.loss_plot.append(steps, losses)

    def _busy(self, busy: bool) -> None:
        self.status.showMessage("Preparing inputs…" if busy else "Ready", 0 if busy else 3000)
        if busy:
            self.jacobian.preparing()

    def _report(self, report) -> None:
        self.jacobian.show_report(report)
        verdict = "passed" if report.passed else "FAILED"
        self.status.showMessage(f"Jacobian check {verdict} in {report.seconds:.2f} s", 5000)

    def _error(self, exc) -> None:
        self.errors.show_error(exc)
        line = getattr(exc, "line", None)
        if line and getattr(exc, "file", None) == (self.session.target.file
                                                   if self.session.target else None):
            self.code.highlight_line(line)

    def _notice(self, text: str) -> None:
        self.notice.setText(f"ℹ {text}")
        self.notice.show()
        self._notice_timer.start()

    def _jump(self, file: str, line: int) -> None:
        self.code.highlight_line(line)

    def closeEvent(self, event) -> None:
        self.session.shutdown(wait=0.5)
        super().closeEvent(event)
