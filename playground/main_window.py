"""The one-screen window: picker and form on the left; controls, loss, code and Jacobians."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from playground.features import byof, classroom
from playground.state.session import Session
from playground.views.code_view import CodeView
from playground.views.controls import ControlsBar
from playground.views.error_banner import ErrorBanner
from playground.views.form import InputsForm, LoopForm
from playground.views.jacobian_view import JacobianView
from playground.views.loss_plot import LossPlot
from playground.views.picker import FunctionPicker
from playground.views.shortcuts import TextFieldEscape


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
