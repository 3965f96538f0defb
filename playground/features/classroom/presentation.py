"""Presentation mode (F5): full screen, the menu bar hidden (every command keeps its key), the
panels the user chose hidden, the step and loss large beside the loss plot; Esc or F5 leaves
and puts everything back as it was. The larger fonts follow ``presentingChanged`` (see
:mod:`.appearance`)."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from playground.features.classroom.layout import LayoutState
from playground.state.preferences import PANELS

__all__ = ["Presentation"]


class Presentation(QObject):
    """Presentation mode of ``panes.window``.

    ``panes.panels``: PANELS key -> the widgets that panel is; ``panes.readout_holder``: where
    the readout goes beside the loss plot; ``layout``: the PaneLayout (the side panel's
    action); ``actions``: the classroom's actions by name.
    """

    def __init__(self, preferences, panes, *, layout, actions,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.preferences = preferences
        self.panes = panes
        self.layout = layout
        self.actions = actions
        self._before: dict = {}  # the normal layout and window, to put back on leaving
        #: presentation's layout when it was last left (None: not yet presented)
        self._presenting_layout = None
        preferences.hiddenPanelsChanged.connect(self._hidden_changed)

    def set_presentation(self, on: bool, fullscreen: bool = True) -> None:
        """Presentation mode: full screen, big readout and verdict, chosen panels hidden."""
        on = bool(on)
        w = self.panes.window
        if on == self.preferences.presenting:
            self.actions["presentation"].setChecked(on)
            return
        layout = self._enter(fullscreen) if on else self._leave()
        self.preferences.set_presenting(on)
        if layout is not None:  # at the mode's own fonts: the sizes are those they had
            self.layout.apply(layout)
        self.actions["presentation"].setChecked(on)
        self.actions["leave_presentation"].setEnabled(on)
        self.actions["fullscreen"].setChecked(w.isFullScreen())

    def toggle_presentation(self) -> None:
        self.set_presentation(not self.preferences.presenting)

    def reset_layout(self) -> None:
        """Presentation's layout afresh: the panels it shows, the heatmaps given their room
        (what View > Reset layout does while presenting)."""
        self._presenting_layout = None
        self._place_readout(presenting=False)
        self._show_panels()
        self.panes.main_area.reset()

    def toggle_fullscreen(self) -> None:
        w = self.panes.window
        if w.isFullScreen():
            w.showNormal()
        else:
            w.showFullScreen()
        self.actions["fullscreen"].setChecked(w.isFullScreen())

    def _widgets(self):
        return [widget for key in PANELS for widget in self.panes.panels[key]]

    def _enter(self, fullscreen: bool) -> LayoutState | None:
        """The normal layout kept as a value (put back exactly on leaving), the window's
        too. Returns presentation's own layout to put back, as it was left last time, if it
        shows the same panels."""
        w, layout = self.panes.window, self.layout
        self._before = {
            "layout": layout.capture(), "geometry": w.geometry(),
            "fullscreen": w.isFullScreen(), "maximized": w.isMaximized(),
            "menu": not w.menuBar().isHidden()}
        self.panes.main_area.user_set = False  # the heatmaps get their room on the projector
        w.menuBar().hide()  # every command keeps its key (F5 or Esc leaves)
        self._show_panels()
        saved = self._presenting_layout
        if saved is not None and not saved.same_panes(layout.capture()):
            if saved.zoom != self.preferences.zoom:
                self.preferences.set_zoom(saved.zoom, remember=False)
            saved = None
        if fullscreen and not w.isFullScreen():
            w.showFullScreen()
        if fullscreen and w.screen() is not None:
            # the whole screen, also where no window manager applies full screen (a
            # bare X server), and once the panels presentation hides no longer need room
            QTimer.singleShot(0, self, self._fill_screen)
        return saved

    def _leave(self) -> LayoutState | None:
        """Presentation's layout kept for the next time; the normal window put back as it
        was when presentation mode began. Returns the normal layout, to put back whole
        (panes, splitters, zoom) at the normal fonts."""
        w = self.panes.window
        self._presenting_layout = self.layout.capture()
        before, self._before = self._before, {}
        self._place_readout(presenting=False)
        if not before.get("fullscreen"):
            if w.isFullScreen() or before.get("maximized") != w.isMaximized():
                w.showMaximized() if before.get("maximized") else w.showNormal()
            if not before.get("maximized") and before.get("geometry") is not None:
                w.setGeometry(before["geometry"])  # where a window manager does not
        w.menuBar().setVisible(before.get("menu", True))
        return before.get("layout")  # its panes shown or hidden once, as it is put back

    def _fill_screen(self) -> None:
        w = self.panes.window
        if self.preferences.presenting and w.isFullScreen() and w.screen() is not None \
                and w.geometry() != w.screen().geometry():
            w.setGeometry(w.screen().geometry())

    def _hidden_changed(self) -> None:
        hidden = self.preferences.hidden_panels
        for key in PANELS:
            action = self.actions[f"hide_{key}"]
            if action.isChecked() != (key in hidden):
                action.setChecked(key in hidden)
        if self.preferences.presenting:
            self._show_panels()  # the menu of panels applies at once

    def _show_panels(self) -> None:
        hidden, panes = self.preferences.hidden_panels, self.panes
        before = self._before.get("layout")
        visible = {id(w): shown for w, shown in before.shown} if before else {}
        for key in PANELS:
            for widget in panes.panels[key]:
                widget.setVisible(key not in hidden and visible.get(id(widget), True))
        panes.upper.setVisible(not {"loss", "code"} <= hidden)
        self._place_readout(presenting=True)
        self.layout.sync_side_action()
        panes.main_area.schedule_fit()

    def _place_readout(self, presenting: bool) -> None:
        """Presenting with the loss plot shown: the step and loss beside it, one above the
        other (the heatmaps get the row they took); else beside the buttons. Presenting,
        the open Function's name at the end of the buttons' row."""
        panes = self.panes
        panes.loss_plot.set_compact(presenting)
        panes.controls.show_function(presenting)  # the room reads which Function is shown
        holder = panes.readout_holder
        beside = presenting and not panes.loss_plot.isHidden()
        if beside == panes.controls.readout_lent():
            return
        panes.controls.lend_readout(holder.layout() if beside else None)
        if beside:
            holder.layout().addStretch(1)
        else:
            while holder.layout().count():
                holder.layout().takeAt(0)
            holder.layout().addStretch(1)
        holder.setVisible(beside)
        if beside:
            split = panes.upper
            split.setCollapsible(2, False)
            total = sum(split.sizes())
            need = holder.sizeHint().width()
            sizes = split.sizes()
            split.setSizes([max(0, total - need - sizes[1]), sizes[1], need])
