"""Export: the loss plot and heatmaps as PNG or SVG, the loss history and the Jacobians as
files, a screenshot of the window; and the right-click menus of the plots that offer them."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMenu

from playground.support.discard import held
from playground.views import export
from playground.views.pyqtgraph_compat import when_menu_built

__all__ = ["Exports"]

#: the export actions (made with the menus) each right-click menu offers
LOSS_MENU = ("export_loss_png", "export_loss_svg", "export_loss_csv")
HEATMAP_MENU = ("export_heatmaps_png", "export_heatmaps_svg", "export_jacobians_npy",
                "export_jacobians_csv")


class Exports(QObject):
    """Writes what ``panes.loss_plot`` and ``panes.jacobian`` show, and ``panes.window``;
    ``actions``: the classroom's actions by name, for the right-click menus."""

    last_report = held("last_report")  # for export; a replaced one is freed off the GUI thread

    def __init__(self, session, panes, *, dialogs, actions,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.panes = panes
        self.dialogs = dialogs
        self.actions = actions
        session.targetChanged.connect(self._target_changed)
        session.jacobianReady.connect(self._report)
        session.secondOrderReady.connect(self._report)

    def _target_changed(self, _target) -> None:
        self.last_report = None

    def _report(self, report) -> None:
        self.last_report = report

    # ---- right-click menus ------------------------------------------------------------------
    def add_context_menus(self) -> None:
        """The export actions in the loss plot's menu (as pyqtgraph builds it, at the first
        right click: not before the first paint) and the heatmaps' own menu."""
        def add(menu) -> None:
            menu.addSeparator()
            for name in LOSS_MENU:
                menu.addAction(self.actions[name])
        when_menu_built(self.panes.loss_plot.plot_item.vb, add)
        graphics = self.panes.jacobian.heatmaps.graphics
        graphics.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        graphics.customContextMenuRequested.connect(
            lambda pos: self.heatmap_menu(pos).popup(graphics.mapToGlobal(pos)))

    def heatmap_plots(self) -> dict[str, object]:
        """title -> PlotItem of each heatmap."""
        j = self.panes.jacobian
        plots = {}
        maps = j.heatmaps
        for key, image in (("analytic", maps.analytic_image),
                           ("numerical", maps.numerical_image),
                           ("difference", maps.difference_image)):
            item = image.getViewBox()
            while item is not None and not hasattr(item, "getAxis"):
                item = item.parentItem()
            if item is not None:
                plots[key] = item
        return plots

    def heatmap_menu(self, pos=None) -> QMenu:
        """The right-click menu of the heatmaps (the one under ``pos`` first)."""
        menu = QMenu(self.panes.window)
        graphics = self.panes.jacobian.heatmaps.graphics
        if pos is not None:
            scene_pos = graphics.mapToScene(pos)
            for key, plot in self.heatmap_plots().items():
                if plot.sceneBoundingRect().contains(scene_pos):
                    for fmt in ("png", "svg"):
                        action = menu.addAction(f"This heatmap ({key}) as {fmt.upper()}…")
                        action.triggered.connect(
                            lambda _c=False, k=key, f=fmt: self.export_heatmaps(f, k))
                    menu.addSeparator()
        for name in HEATMAP_MENU:
            menu.addAction(self.actions[name])
        return menu

    # ---- writing ----------------------------------------------------------------------------
    def export_loss(self, fmt: str, path=None):
        path = self.dialogs.ask_export_path(f"Save the loss plot as {fmt.upper()}", fmt,
                                            "loss", path)
        if path:
            return self._try(lambda: [export.export_item(self.panes.loss_plot.plot_item, path)])
        return None

    def export_loss_csv(self, path=None):
        path = self.dialogs.ask_export_path("Save the loss history as CSV", "csv", "loss",
                                            path)
        if path:
            return self._try(lambda: [export.save_loss_csv(self.panes.loss_plot, path)])
        return None

    def export_heatmaps(self, fmt: str, which: str | None = None, path=None):
        """All three heatmaps (with colour bars) or just ``which`` as PNG or SVG."""
        name = f"jacobian_{which}" if which else "jacobians"
        path = self.dialogs.ask_export_path(f"Save the heatmaps as {fmt.upper()}", fmt, name,
                                            path)
        if not path:
            return None
        item = self.heatmap_plots()[which] if which else self.panes.jacobian.heatmaps.graphics.ci
        return self._try(lambda: [export.export_item(item, path)])

    def export_jacobians(self, fmt: str, path=None):
        """The last comparison's analytic, numerical and difference matrices, one file each."""
        if self.last_report is None or self.last_report.analytic is None:
            self.session.notice.emit("No Jacobian comparison to export yet: open a Function "
                                     "and let the check finish.")
            return None
        path = self.dialogs.ask_export_path(
            f"Save the Jacobians as {fmt.upper()} (three files)", fmt, "jacobian", path)
        if path:
            return self._try(lambda: list(export.save_jacobians(self.last_report, path,
                                                                fmt).values()))
        return None

    def export_window(self, path=None):
        path = self.dialogs.ask_export_path("Save a screenshot of the window", "png",
                                            "playground", path)
        if path:
            return self._try(lambda: [export.save_window(self.panes.window, path)])
        return None

    def _try(self, write):
        try:
            written = write()
        except (OSError, ValueError) as exc:
            self.session.notice.emit(f"Export failed: {exc}")
            return None
        names = ", ".join(Path(p).name for p in written)
        self.panes.status.showMessage(f"Saved {names}", 5000)
        return written
