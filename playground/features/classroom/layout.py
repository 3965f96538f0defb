"""Where the panes are: splitters remembered where the user left them, View > Reset layout,
the side panel (F9) and the verdict's details."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

__all__ = ["PaneLayout"]

SAVE_AFTER_MS = 500  # a moved splitter is remembered once the drag has stopped this long


class PaneLayout(QObject):
    """``splitters`` (name -> QSplitter; "main" holds the ``left`` pane, "side" the
    ``loss_plot`` and ``side_tabs``, "area" is the MainArea), remembered in ``preferences``.
    ``actions``: the classroom's actions by name (side_panel and jacobian_details)."""

    def __init__(self, preferences, *, splitters, left, side_tabs, loss_plot, jacobian,
                 actions, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.preferences = preferences
        self.splitters = splitters
        self.main_area = splitters["area"]
        self.upper = splitters["side"]
        self.left = left
        self.side_tabs = side_tabs
        self.loss_plot = loss_plot
        self.jacobian = jacobian
        self.actions = actions
        self._save_timer = QTimer(self, singleShot=True, interval=SAVE_AFTER_MS)
        self._save_timer.timeout.connect(self.save)
        for splitter in splitters.values():
            splitter.splitterMoved.connect(self._splitter_moved)
        jacobian.detailsToggled.connect(self._details_toggled)

    # ---- remembered sizes -------------------------------------------------------------------
    def _splitter_moved(self, *_args) -> None:
        if not self.preferences.presenting:  # presentation's panes are laid out for a projector
            self._save_timer.start()  # once the drag has stopped

    def save(self) -> None:
        """Remember where the splitters are (what the drag's timer does once it stops)."""
        self.preferences.remember_layout(
            {name: splitter.saveState() for name, splitter in self.splitters.items()},
            self.main_area.user_set)

    def restore(self) -> None:
        """The splitters where the user left them last time, the verdict's details too."""
        for name, splitter in self.splitters.items():
            state = self.preferences.splitter_state(name)
            if state is not None:
                splitter.restoreState(state)
        self.main_area.user_set = self.preferences.area_user_set()
        self.jacobian.set_details_shown(self.preferences.details_shown())

    def reset(self) -> None:
        """Panes back to their first sizes, the heatmaps given their room; forgotten."""
        self.preferences.forget_layout()
        main = self.splitters["main"]
        total = sum(main.sizes())
        left = max(self.left.minimumWidth(), self.left.START_WIDTH)
        main.setSizes([left, max(0, total - left)])
        half = sum(self.upper.sizes()) // 2
        self.upper.setSizes([half, half])
        self.main_area.reset()

    def _details_toggled(self, shown: bool) -> None:
        self.actions["jacobian_details"].setChecked(shown)
        self.preferences.remember_details(shown)
        self.main_area.schedule_fit()

    # ---- the side panel ---------------------------------------------------------------------
    def toggle_side_panel(self) -> None:
        self.set_side_panel(self.side_tabs.isHidden())

    def set_side_panel(self, shown: bool) -> None:
        """Show or hide the side panel (code, editor, inspector and step tabs): F9."""
        self.side_tabs.setVisible(shown)
        self.upper.setVisible(shown or not self.loss_plot.isHidden())
        self.sync_side_action()
        self.main_area.schedule_fit()

    def show_side_tab(self, widget) -> None:
        """The side panel shown, on ``widget``'s tab."""
        self.side_tabs.setVisible(True)
        self.upper.setVisible(True)
        self.side_tabs.setCurrentWidget(widget)
        self.sync_side_action()

    def sync_side_action(self) -> None:
        self.actions["side_panel"].setChecked(not self.side_tabs.isHidden())
