"""Where the panes are: splitters remembered where the user left them, View > Reset layout,
the side panel (F9) and the verdict's details; a layout taken as a value
(:class:`LayoutState`) and put back exactly, as presentation mode does when it is left."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QTimer

__all__ = ["LayoutState", "PaneLayout"]

SAVE_AFTER_MS = 500  # a moved splitter is remembered once the drag has stopped this long
#: how long a layout put back is put back again as the window's size changes (a window
#: manager leaves full screen on its own time)
SETTLE_MS = 1500


@dataclass(frozen=True)
class LayoutState:
    """A layout as a value: each splitter's sizes, which of the panes' widgets were shown, the
    zoom, and whether the user had placed the main area's splitter."""

    sizes: dict  # splitter name -> [pixels]
    shown: tuple  # (widget, shown) of each pane widget
    zoom: int
    area_user_set: bool

    def same_panes(self, other: LayoutState) -> bool:
        """Whether both show the same widgets (sizes of one then fit the other)."""
        return [s for _w, s in self.shown] == [s for _w, s in other.shown]


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
        self._pending: LayoutState | None = None  # put back again while the window resizes
        self._settle_timer = QTimer(self, singleShot=True, interval=SETTLE_MS)
        self._settle_timer.timeout.connect(self._settled)
        panes.window.installEventFilter(self)
        panes.upper.installEventFilter(self)
        panes.side_tabs.installEventFilter(self)

    # ---- a layout as a value ----------------------------------------------------------------
    def pane_widgets(self) -> list:
        """The widgets whose being shown is part of a layout."""
        panes = self.panes
        return [*(w for ws in panes.panels.values() for w in ws), panes.upper,
                panes.readout_holder]

    def capture(self) -> LayoutState:
        """The layout now."""
        panes = self.panes
        return LayoutState(
            sizes={name: splitter.sizes() for name, splitter in panes.splitters.items()},
            shown=tuple((w, not w.isHidden()) for w in self.pane_widgets()),
            zoom=self.preferences.zoom, area_user_set=panes.main_area.user_set)

    def apply(self, state: LayoutState) -> None:
        """Put ``state`` back: the widgets it showed, its zoom, its splitters' sizes; again
        each time the window's size changes in the next moments (sizes set before the
        window has its size would be scaled to the wrong one)."""
        for widget, shown in state.shown:
            widget.setVisible(shown)
        self.sync_side_action()
        if self.preferences.zoom != state.zoom:
            self.preferences.set_zoom(state.zoom, remember=False)
        self._pending = state
        self._put_sizes()
        self._settle_timer.start()
        QTimer.singleShot(0, self, self._put_sizes)

    def _put_sizes(self) -> None:
        state, panes = self._pending, self.panes
        if state is None:
            return
        for name, splitter in panes.splitters.items():
            sizes = state.sizes.get(name)
            if sizes is not None and splitter.sizes() != sizes:
                splitter.setSizes(sizes)
        panes.main_area.user_set = state.area_user_set

    def _settled(self) -> None:
        self._put_sizes()
        self._pending = None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched in (self.panes.upper, self.panes.side_tabs) \
                and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            QTimer.singleShot(0, self, self._give_side_room)
        if self._pending is not None and watched is self.panes.window \
                and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            QTimer.singleShot(0, self, self._put_sizes)  # once the splitters have their size
        return False

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

    def _give_side_room(self) -> None:
        """A side panel shown with no width (its splitter had given it none: it was hidden
        while presentation mode laid the row out) takes a third of the row from the others,
        once the splitter has laid it out: F9 never shows a panel nobody can see."""
        upper, tabs = self.panes.upper, self.panes.side_tabs
        if tabs.isHidden():
            return
        sizes = upper.sizes()
        index = upper.indexOf(tabs)
        upper.setCollapsible(index, False)  # a drag to its edge must not hide it unseen
        need = tabs.minimumSizeHint().width()
        if sizes[index] >= need:
            return
        room = max(need, sum(sizes) // 3)
        others = sum(sizes) - sizes[index]
        if others > 0:  # from the others, each in proportion to its width
            sizes = [size - (room - sizes[index]) * size // others for size in sizes]
        sizes[index] = room
        upper.setSizes(sizes)

    def sync_side_action(self) -> None:
        self.actions["side_panel"].setChecked(not self.panes.side_tabs.isHidden())
