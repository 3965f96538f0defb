"""The one-screen window: picker and form on the left; controls, loss, code and Jacobians.

:class:`MainWindow` composes, nothing more: it builds the views, lays them out, connects them
to the session, and hands each feature (own Functions, the classroom) the views, menus and
commands it works with.
"""

from __future__ import annotations

import os
import sys
from typing import cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget, QVBoxLayout, QWidget

from customgrad import config
from customgrad.errors import TargetError
from customgrad.workers import processes
from playground.features.byof import Byof
from playground.features.classroom import Classroom, Panes
from playground.features.commands import Commands
from playground.state.checks import CHECKING
from playground.state.landscape import LandscapeModel
from playground.state.preferences import Preferences
from playground.state.session import Session
from playground.views.code_view import CodeView
from playground.views.controls import ControlsBar
from playground.views.editor import FunctionEditor, RestoreOffer
from playground.views.error_banner import ErrorBanner
from playground.views.explainer import StepExplainer
from playground.views.form import InputsForm, LoopForm
from playground.views.inspector_view import InspectorView
from playground.views.isolation_notice import IsolationNotice
from playground.views.jacobian import JacobianView
from playground.views.landscape import LandscapeView
from playground.views.loss_plot import LossPlot
from playground.views.notices import NoticeBar, PendingSessionBar
from playground.views.panes import BuiltWhenShown, LeftPane, MainArea
from playground.views.picker import FunctionPicker
from playground.views.shortcuts import TextFieldEscape
from playground.workers import in_window, torch_import

#: the status bar while a new run's process loads the Function (a spawned one, where there is
#: no fork server, imports torch first: seconds)
LOOP_STARTING = "Starting the run's worker process…"
PREPARING = "Preparing inputs…"
#: the same while the workers' fork server has not started a child yet (it imports torch)
WORKERS_STARTING = "Preparing inputs… (the worker processes are starting: importing torch)"
#: the status bar once a build has ended (for three seconds)
READY = "Ready"
#: what the status bar says when a check ends with no verdict
CHECK_NOT_COMPUTED = "Jacobian not computed: the banner above the heatmaps says why"
CHECK_CANCELLED = "Jacobian check cancelled"
#: the same while the window's own process imports torch, after its first paint
LOADING_TORCH = "Loading torch… (once per start; the picker and the settings work " \
                "meanwhile)"


def _restore_default() -> bool:
    return not config.current().no_restore


class MainWindow(QMainWindow):
    """Builds the views from the session, wires their signals to it, adds the features."""

    def __init__(self, session: Session | None = None, *,
                 preferences: Preferences | None = None, restore_prefs: bool | None = None,
                 restore_session: bool | None = None):
        """``restore_*``: apply the remembered zoom and theme, reopen the last session
        (None: yes, unless AUTOGRAD_PLAYGROUND_NO_RESTORE is set)."""
        super().__init__()
        self.session = session or Session()
        self.preferences = preferences or Preferences(parent=self)
        self.setWindowTitle("Autograd playground")
        self._start_failure = False  # the banner says what failed to open at start
        self._spec_shown: str | None = None  # the Function open (its spec)
        self._running_on = False  # the check has run on without a word (Esc cancels it)
        self._build_views()
        main = self._build_layout()
        self.status = self.statusBar()
        self.status.addPermanentWidget(self.restore_offer)
        self.isolation_off = IsolationNotice()
        self.status.addPermanentWidget(self.isolation_off, 1)
        self._build_menus()
        self._connect_session()
        self._compose_features()
        self._give_escape()
        if restore_prefs if restore_prefs is not None else _restore_default():
            self.classroom.restore_prefs()
        if restore_session if restore_session is not None else _restore_default():
            self.classroom.restore_last_session()
        self._escape = TextFieldEscape(self, main)
        main.setFocus()

    @property
    def explainer(self) -> StepExplainer:
        """The Step tab's pane, built now where it was not (:attr:`step_page`)."""
        return cast(StepExplainer, self.step_page.pane)

    @property
    def landscape(self) -> LandscapeView:
        """The Landscape tab's pane, built now where it was not (:attr:`landscape_page`)."""
        return cast(LandscapeView, self.landscape_page.pane)

    # ---- building ---------------------------------------------------------------------------
    def _build_views(self) -> None:
        s = self.session
        self.picker = FunctionPicker()
        if torch_import.arrived() and torch_import.imported():  # else once it has arrived
            self.picker.show_notes()
        self.inputs = InputsForm(s)
        self.loop_form = LoopForm(s)
        self.controls = ControlsBar(s)
        self.errors = ErrorBanner()
        self.notice = NoticeBar()
        self.pending_bar = PendingSessionBar()
        self.loss_plot = LossPlot()
        self.code = CodeView()
        self.editor = FunctionEditor()
        self.inspector = InspectorView()
        #: the Step tab's page: it builds the explainer when first shown (or asked for:
        #: :attr:`explainer`), which then catches up with the run
        self.step_page = BuiltWhenShown(lambda: StepExplainer(s))
        # the Landscape tab's page builds its pane when first shown (or asked for:
        # :attr:`landscape`), not before the window's first paint; the model follows the
        # session from the start (the learning rates of the steps before)
        model = LandscapeModel(s)
        self.landscape_page = BuiltWhenShown(lambda: LandscapeView(model))
        self.restore_offer = RestoreOffer()
        self.jacobian = JacobianView()
        self.jacobian.set_tolerances(s.settings.eps, s.settings.atol, s.settings.rtol)

    def _build_layout(self) -> QSplitter:
        """Left: the picker and forms; right: the controls and bars above the main area (loss
        plot and side tabs, the Jacobian pane below). The outer splitter, returned."""
        self.left = LeftPane(self.picker, [self.inputs, self.loop_form])
        upper = self._build_upper()
        # the Jacobian pane gets the height its heatmaps' square cells need (see MainArea)
        self.main_area = MainArea(upper, self.jacobian,
                                  bars=[self.errors, self.notice, self.pending_bar])
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 4, 4, 4)
        for widget in (self.controls, self.errors, self.notice, self.pending_bar):
            right_layout.addWidget(widget)
        right_layout.addWidget(self.main_area, 1)
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(self.left)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([LeftPane.START_WIDTH, 1060])
        # the window itself takes the keyboard first: Space, S, R and C work from the start
        main.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setCentralWidget(main)
        #: name -> splitter, for remembering where the user put them
        self.splitters = {"main": main, "side": upper, "area": self.main_area}
        return main

    def _build_upper(self) -> QSplitter:
        """The loss plot, the side panel's tabs beside it (F9 hides them), and room for the
        step and loss in presentation mode."""
        self.side_tabs = QTabWidget()
        for widget, title in ((self.code, "Code"), (self.editor, "Editor"),
                              (self.inspector, "Inspector"), (self.step_page, "Step"),
                              (self.landscape_page, "Landscape")):
            self.side_tabs.addTab(widget, title)
        self.side_tabs.setTabToolTip(self.side_tabs.indexOf(self.step_page),
                                     "The last step of gradient descent, in numbers")
        # as short as the loss plot beside it may be (its tabs scroll): the heatmaps below
        # get the room first (see MainArea)
        self.side_tabs.setMinimumHeight(1)
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
        return upper

    def _build_menus(self) -> None:
        """The menu bar, and the Run menu's commands (the features add theirs)."""
        s = self.session
        bar = self.menuBar()
        self.menus = {key: bar.addMenu(title) for key, title in (
            ("file", "&File"), ("run", "&Run"), ("view", "&View"), ("help", "&Help"))}
        self.commands = Commands(self)
        #: every command of the window by name (the features' too)
        self.actions_by_name = self.commands.by_name
        play = self._after_typing(s.play, "Play")
        self.user_commands = {
            "play": lambda: s.pause() if s.running else play(),  # Pause never waits
            "step": self._after_typing(s.step_once, "Step"),
            "check": self._after_typing(s.check_now, "The check")}
        for name, text, keys, slot in (
                ("play", "Play / Pause", ["Space"], self.user_commands["play"]),
                ("step", "One step", ["S", "Right"], self.user_commands["step"]),
                ("reset", "Reset (same seed)", ["R"], s.reset),
                ("check", "Check the Jacobian at the current point", ["C"],
                 self.user_commands["check"])):
            self.commands.add(name, text, keys, slot, self.menus["run"])
        # Esc stops a check that runs on (its key: _give_escape)
        self.commands.add("cancel_check", "Cancel the check", (), s.cancel_check,
                          self.menus["run"]).setEnabled(False)
        quit_action = QAction("&Quit", self)  # in the menu only, as the platform has it
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        self.menus["file"].addAction(quit_action)
        self.actions_by_name["quit"] = quit_action

    def _after_typing(self, command, what: str):
        """``command`` as the user gives it: while a field holds typed text that is not a
        valid value, it would run on the value before, unseen; it waits instead, and the
        notice says for which field (it is marked) and why. The keyboard stays where it was:
        in the field, the next key pressed for a command (C) would be typed into it."""
        def run(*_args) -> None:
            for form in (self.inputs, self.loop_form, self.jacobian.tolerance_row):
                found = form.unfinished()
                if found is not None:
                    _widget, reason = found
                    self.session.notice.emit(f"{what} waits for the marked field: {reason}")
                    return
            command()
        return run

    def _connect_session(self) -> None:
        s = self.session
        self._loop_status = QTimer(self, interval=250)
        self._loop_status.timeout.connect(self._show_loop_status)
        self.picker.picked.connect(s.set_target)
        s.targetChanged.connect(self._target_changed)
        s.targetPending.connect(self.preview_target)
        s.runReset.connect(self.loss_plot.start_run)
        s.batchReady.connect(self._batch)
        s.jacobianStarted.connect(self.jacobian.start)
        s.jacobianRunningAt.connect(self.jacobian.running_at)
        s.jacobianStarted.connect(self._checking)
        s.jacobianProgress.connect(self.jacobian.show_progress)
        s.jacobianReady.connect(self._report)
        s.secondOrderReady.connect(self._second_order)
        s.jacobianFailed.connect(self.jacobian.show_failure)
        s.jacobianFailed.connect(self._check_failed)
        s.errorRaised.connect(self._error)
        s.errorCleared.connect(self._error_cleared)
        s.notice.connect(self.notice.show_notice)
        s.runNotice.connect(self.notice.show_run_notice)
        in_window.WATCH.said.connect(self.isolation_off.show_reason)  # (queued: worker threads)
        s.targetChanged.connect(self.isolation_off.target_changed)
        s.runReset.connect(self.notice.run_started)
        s.targetChanged.connect(self.notice.run_started)  # the last Function's run's notices
        s.busyChanged.connect(self._busy)
        # Esc cancels a check once the banner has said it runs on (_update_cancel_key)
        s.jacobianRunningAt.connect(lambda _w: self._update_cancel_key(running_on=True))
        for signal in (s.jacobianStarted, s.jacobianReady, s.secondOrderReady,
                       s.jacobianFailed, s.targetChanged):
            signal.connect(lambda *_a: self._update_cancel_key(running_on=False))
        # (after presentation has enabled its way out: the next turn of the event loop)
        self.preferences.presentingChanged.connect(
            lambda _on: QTimer.singleShot(0, self, self._update_cancel_key))
        s.loopStarted.connect(self._loop_status.start)
        self.jacobian.tolerancesChanged.connect(
            lambda eps, atol, rtol: s.update(eps=eps, atol=atol, rtol=rtol))
        self.jacobian.cancelRequested.connect(s.cancel_check)
        self.jacobian.pixelsChanged.connect(s.set_view_pixels)
        self.jacobian.checkRequested.connect(self.user_commands["check"])
        for button, name in ((self.controls.play, "play"), (self.controls.step, "step"),
                             (self.controls.check, "check")):
            button.clicked.connect(self.user_commands[name])
        self.errors.jump.connect(self._jump)
        # a notice's "nan.py:14" is a link where the file is the code's or the editor's: it
        # goes where the error banner's links go (the code pane at that line)
        self.notice.files = lambda: (self.code.file, self.byof.editor.path)
        self.notice.jump.connect(self.errors.jump)

    def _compose_features(self) -> None:
        """Own Functions, then the classroom (whose menu entries go around theirs)."""
        self.byof = Byof(
            self.session, window=self, commands=self.commands, menus=self.menus,
            tabs=self.side_tabs, status=self.status, errors=self.errors, code=self.code,
            editor=self.editor, inspector=self.inspector, restore_offer=self.restore_offer)
        self._open_tab_from_env()
        panels = {"picker": [self.left], "code": [self.side_tabs], "loss": [self.loss_plot],
                  "heatmaps": [self.jacobian.heatmaps.graphics, self.jacobian.hover_label],
                  "status": [self.status]}
        self.classroom = Classroom(
            self.session, self.preferences, commands=self.commands, menus=self.menus,
            panes=Panes(
                window=self, status=self.status, left=self.left, side_tabs=self.side_tabs,
                splitters=self.splitters, readout_holder=self.readout_holder,
                controls=self.controls, loss_plot=self.loss_plot, jacobian=self.jacobian,
                explainer=self.step_page, pending_bar=self.pending_bar, panels=panels))
        self.classroom.sessions.settingsLoading.connect(self._show_loaded_settings)
        self.commands.add("landscape", "Show the loss landscape", ["L"], self.show_landscape,
                          self.menus["view"])
        second = self.commands.add(
            "second_order", "Second-order heatmaps (double backward)", ["D"],
            lambda on: self.jacobian.set_order(2 if on else 1), self.menus["view"],
            checkable=True, tip="The heatmaps of your backward differentiated (double "
            "backward) against finite differences of backward; again for the first order")
        self.jacobian.orderChanged.connect(lambda order: second.setChecked(order == 2))
        self.jacobian.orderChanged.connect(
            lambda order: setattr(self.session, "second_order_asked", order == 2))

    def show_landscape(self) -> None:
        """The Landscape tab shown (L), with room beside the loss plot (in presentation
        mode the side panel starts hidden, at no width); the heatmaps keep their height."""
        self.classroom.layout.show_side_tab(self.landscape_page)  # (built as it is shown)
        QTimer.singleShot(0, self, self._room_for_landscape)  # once the layouts caught up

    def _room_for_landscape(self) -> None:
        upper = self.splitters["side"]
        sizes = upper.sizes()
        both = sizes[0] + sizes[1]
        if min(sizes[:2]) < both // 3:
            upper.setSizes([both // 2, both - both // 2, *sizes[2:]])

    def _open_tab_from_env(self) -> None:
        """``AUTOGRAD_PLAYGROUND_TAB=inspector`` (or ``editor``, ``code``, ``step``) opens the
        window on that tab, e.g. for ``--screenshot``."""
        tab = config.current().tab
        if tab:
            self.open_tab(tab)

    def open_tab(self, name: str) -> None:
        """The side tab whose title starts with ``name`` ("editor", "inspector", ...)."""
        for index in range(self.side_tabs.count()):
            if self.side_tabs.tabText(index).lower().startswith(name.lower()):
                self.side_tabs.setCurrentIndex(index)
                break

    def _show_loaded_settings(self, settings) -> None:
        """Settings from a session file are about to load: the views show them afresh."""
        self.inputs.forget_typed()
        self.jacobian.set_tolerances(settings.eps, settings.atol, settings.rtol)

    # ---- the session's news -----------------------------------------------------------------
    def _target_changed(self, target) -> None:
        from customgrad.function.shadow import source_lines

        self._start_failure = False
        self.setWindowTitle(f"Autograd playground — {target.label}")
        if self._spec_shown is not None and target.spec != self._spec_shown:
            # another Function opens on its first order: a teacher going on from a lesson
            # shown in second order (D) met the next one's double backward unasked (the
            # first Function keeps --order second; a reload of the same keeps the order)
            self.jacobian.set_order(1)
        self._spec_shown = target.spec
        listed = self._list_file_functions(target)
        self.picker.select(target.entry.name if target.entry else listed)
        file, first = target.file, 1
        try:
            first = source_lines(target.function)[1]  # a shadow's, as its worker read it
        except (OSError, TypeError):
            pass
        self.code.set_function(target.label, target.source, target.note, file,
                               first)
        self.jacobian.new_function(target.label)
        self.loss_plot.reset_current()
        self.loss_plot.clear_history()

    def preview_target(self, spec: str | None) -> None:
        """A Function not opened yet (torch is on its way): the Code tab shows its source
        meanwhile, as its file's text says it (read, not run:
        :mod:`customgrad.targets.preview`); the Function replaces it once it has opened."""
        from customgrad.targets.preview import preview

        shown = preview(spec) if spec and self.session.target is None else None
        if shown is None:
            return
        self.setWindowTitle(f"Autograd playground — {shown.title}")
        self.picker.select(spec.strip().lower())  # a gallery name (a file: none selected)
        self.code.set_function(shown.title, shown.source, shown.note, shown.file,
                               shown.first_line)

    def _list_file_functions(self, target) -> str | None:
        """The picker lists the Functions of the file (or module) that is open, from the
        shadows the window holds of them (nothing of the user's runs here); returns the
        open one's entry there."""
        from customgrad.targets.loader import functions_in, split_target

        where, _name = split_target(target.spec)
        own = getattr(target.function, "__name__", None)
        if target.entry is not None:
            return None  # a gallery Function: the last file's list stays beside the gallery
        if not where or not isinstance(own, str):
            self.picker.show_file(None, [])
            return None
        module = sys.modules.get(getattr(target.function, "__module__", ""))
        names = [f.__name__ for f in functions_in(module)] if module is not None else []
        if own not in names:
            names.append(own)
        self.picker.show_file(os.path.basename(target.file or where),
                              [(f"{where}:{name}", name) for name in names])
        return f"{where}:{own}"

    def _batch(self, batch) -> None:
        if len(batch):
            self.loss_plot.append(batch.steps, batch.losses)

    def _show_loop_status(self) -> None:
        """While a new run's process starts (seconds where it is spawned), the status bar
        says so; once it has loaded the Function, or ended, that goes."""
        ctrl = self.session.ctrl
        starting = not (ctrl.exited or ctrl.stop or ctrl.ready) and ctrl.thread_id is None
        if starting and ctrl.loading_for() > 0.3:
            if self.status.currentMessage() != LOOP_STARTING:
                self.status.showMessage(LOOP_STARTING)
        elif not starting:
            self._loop_status.stop()
            if self.status.currentMessage() == LOOP_STARTING:
                self.status.clearMessage()

    def show_torch_loading(self) -> None:
        """Say that torch is loading (:mod:`playground.workers.torch_import`), until it has:
        then the first Function opens, and the session's work says what it does."""
        if torch_import.arrived():
            return
        if not torch_import.imported():  # else it is here, and arrives with the first paint
            self.status.showMessage(LOADING_TORCH)
            self.jacobian.loading_torch()
        torch_import.when_arrived(self._torch_arrived)

    def _torch_arrived(self) -> None:
        self.picker.show_notes()
        self.inputs.show_devices()
        if self.status.currentMessage() == LOADING_TORCH:
            self.status.clearMessage()
        if self.session.target is None:
            self.jacobian.clear()

    def _busy(self, busy: bool) -> None:
        waiting = PREPARING if processes.children_ready() else WORKERS_STARTING
        self.status.showMessage(waiting if busy else READY, 0 if busy else 3000)
        if busy:
            self.jacobian.preparing()

    def _give_escape(self) -> None:
        """Esc cancels a check that runs on (an endless loop: Cancel was the mouse's only;
        :meth:`_update_cancel_key` says when).
        Esc is also presentation's way out (the classroom's action, which has it): each is
        enabled only while the other is not, so Qt never sees two (_update_cancel_key), and
        leaving presentation comes first. Set here, after the classroom has taken its keys
        (Commands gives no key twice)."""
        cancel = self.actions_by_name["cancel_check"]
        cancel.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        cancel.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self._update_cancel_key()

    def _update_cancel_key(self, running_on: bool | None = None) -> None:
        """Esc cancels a check that runs on (the banner has said "At loops.py:13 (backward)
        for 12 s — still checking: Esc or Cancel stops it"), in presentation too, where the
        next Esc leaves it (trial3: a teacher pressing Esc as the banner said left
        presentation in front of the room, and the check ran on). Not any check: Esc in a
        text field gives the keys back (TextFieldEscape), and a check is running most of
        the time a teacher presses it there."""
        if running_on is not None:
            self._running_on = running_on
        self.actions_by_name["cancel_check"].setEnabled(self._running_on)
        self.actions_by_name["leave_presentation"].setEnabled(
            self.preferences.presenting and not self._running_on)

    def _checking(self, message: str) -> None:
        """The check that follows a build: the status bar's "Ready" (the build's end) would
        stand beside its progress bar for three seconds; it says the check instead."""
        if self.status.currentMessage() == READY:
            self.status.showMessage(message)

    def _check_failed(self, message: str) -> None:
        """No verdict: the status bar's "Checking at …" (the check's start) gives way to
        what became of it; the banner above the heatmaps says why."""
        if self.status.currentMessage().startswith(CHECKING):
            self.status.showMessage(CHECK_CANCELLED if message.startswith("cancelled")
                                    else CHECK_NOT_COMPUTED, 5000)

    def _report(self, report) -> None:
        self.jacobian.show_report(report)
        verdict = "passed" if report.passed else "FAILED"
        self.status.showMessage(f"Jacobian check {verdict} in {report.seconds:.2f} s", 5000)

    def _second_order(self, report) -> None:
        """The second order's heatmaps (or the banner's line about it), and its verdict in
        the status bar, where the first order's said "passed" before it was computed."""
        self.jacobian.show_second_order(report)
        second = report.second_order
        if second is not None and self.jacobian.checked is report:
            first, then = ("passed" if r.passed else "FAILED" for r in (report, second))
            self.status.showMessage(f"Jacobian check {first}; second order (double backward) "
                                    f"{then} in {second.seconds:.2f} s", 5000)

    def _error(self, exc) -> None:
        """The banner; a Function that failed to load leaves the one open in place, and
        the banner says which (a window emptied of its Function looked like a crash)."""
        target = self.session.target
        kept = target.label if isinstance(exc, TargetError) and target is not None else None
        self._start_failure = False
        self.errors.show_error(exc, f"{kept} stays open." if kept else None)
        line = getattr(exc, "line", None)
        if line and self.code.shows(getattr(exc, "file", None)):
            self.code.highlight_line(line)

    def _error_cleared(self) -> None:
        """The error no longer holds: its banner goes, and the line it marked in the code.
        What failed to open at start stays said (the build that clears is the Function
        opened instead)."""
        if not self._start_failure:
            self.errors.hide()
        self.code.clear_highlight()

    def show_start_failure(self, exc: BaseException) -> None:
        """What the command line named failed to open, and the session's Function opened
        instead: the banner says both until dismissed or replaced, or another Function
        opens (an empty window looked like a crash)."""
        self.errors.show_error(exc, f"{self.session.target.label} opens instead.")
        self._start_failure = True

    def _jump(self, file: str, line: int) -> None:
        """An error's ``file:line`` in the code pane, where that is the file it shows (the
        editor's own file goes to the editor: :mod:`playground.features.byof`)."""
        if self.code.shows(file):
            self.code.highlight_line(line)
            if not self.code.isVisible():  # (the side panel hidden: presentation, F9)
                # the link shows where it points, as L shows the landscape (trial3 T13: in
                # presentation it did nothing one could see); F9 hides it again
                self.classroom.layout.show_side_tab(self.code)

    def closeEvent(self, event) -> None:
        """The features hear of it first (the classroom remembers the session, the editor
        writes its autosave), then the session stops its work."""
        self.classroom.window_closing()
        self.byof.window_closing()
        self.session.shutdown(wait=0.5)
        super().closeEvent(event)
