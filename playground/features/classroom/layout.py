"""Where the panes are: splitters remembered where the user left them, View > Reset layout,
the side panel (F9) and the verdict's details."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

__all__ = ["PaneLayout"]

SAVE_AFTER_MS = 500  # a moved splitter is remembered once the drag has stopped this long


class PaneLayout(QObject):
    """The splitters of ``panes`` ("main" holds the left pane, "side" the loss plot and the
    side tabs, "area" is the MainArea), remembered in ``preferences``. ``actions``: the
    classroom's actions by name (side_panel and jacobian_details)."""

    def __init__(self, preferences, panes, *, actions, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.preferences = preferences
        self.panes = panes
        self.actions = actions
        self._save_timer = QTimer(self, singleShot=True, interval=SAVE_AFTER_MS)
        self._save_timer.timeout.connect(self.save)
        for splitter in panes.splitters.values():
            splitter.splitterMoved.connect(self._splitter_moved)
        panes.jacobian.detailsToggled.connect(self._details_toggled)

    # ---- remembered sizes -------------------------------------------------------------------
    def _splitter_moved(self, *_args) -> None:
        if not self.preferences.presenting:  # presentation's panes are laid out for a projector
            self._save_timer.start()  # once the drag has stopped

    def save(self) -> None:
        """Remember where the splitters are (what the drag's timer does once it stops)."""
        panes = self.panes
        self.preferences.remember_layout(
            {name: splitter.saveState() for name, splitter in panes.splitters.items()},
            panes.main_area.user_set)

    def restore(self) -> None:
        """The splitters where the user left them last time, the verdict's details too."""
        panes, prefs = self.panes, self.preferences
        for name, splitter in panes.splitters.items():
            state = prefs.splitter_state(name)
            if state is not None:
                splitter.restoreState(state)
        panes.main_area.user_set = prefs.area_user_set()
        panes.jacobian.set_details_shown(prefs.details_shown())

    def reset(self) -> None:
        """Panes back to their first sizes, the heatmaps given their room; forgotten."""
        panes = self.panes
        self.preferences.forget_layout()
        main = panes.splitters["main"]
        total = sum(main.sizes())
        left = max(panes.left.minimumWidth(), panes.left.START_WIDTH)
        main.setSizes([left, max(0, total - left)])
        half = sum(panes.upper.sizes()) // 2
        panes.upper.setSizes([half, half])
        panes.main_area.reset()

    def set_details_shown(self, shown: bool) -> None:
        """The verdict's numbers, worst entry, notes and tolerances shown or not."""
        self.panes.jacobian.set_details_shown(shown)

    def _details_toggled(self, shown: bool) -> None:
        self.actions["jacobian_details"].setChecked(shown)
        self.preferences.remember_details(shown)
        self.panes.main_area.schedule_fit()

    # ---- the side panel ---------------------------------------------------------------------
    def toggle_side_panel(self) -> None:
        self.set_side_panel(self.panes.side_tabs.isHidden())

    def set_side_panel(self, shown: bool) -> None:
        """Show or hide the side panel (code, editor, inspector and step tabs): F9."""
        panes = self.panes
        panes.side_tabs.setVisible(shown)
        panes.upper.setVisible(shown or not panes.loss_plot.isHidden())
        self.sync_side_action()
        panes.main_area.schedule_fit()

    def show_side_tab(self, widget) -> None:
        """The side panel shown, on ``widget``'s tab."""
        self.panes.side_tabs.setVisible(True)
        self.panes.upper.setVisible(True)
        self.panes.side_tabs.setCurrentWidget(widget)
        self.sync_side_action()

    def sync_side_action(self) -> None:
        self.actions["side_panel"].setChecked(not self.panes.side_tabs.isHidden())
