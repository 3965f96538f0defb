"""Small Qt pieces of the Jacobian pane: pyqtgraph items that hide while empty, a plot title
that asks for no width (:mod:`playground.views.pyqtgraph_compat`), and the line under the
heatmaps giving way where it has no room."""

from __future__ import annotations

import pyqtgraph as pg

from playground.views.pyqtgraph_compat import ignore_text_width  # (its pyqtgraph patch)

__all__ = ["Curve", "Image", "Scatter", "fit_hint", "ignore_text_width"]


# Items hidden while they hold nothing: Qt still calls an empty item's (Python) paint at every
# repaint, and each such call is a turn at the interpreter lock a busy worker thread holds.
class Scatter(pg.ScatterPlotItem):
    def setData(self, *args, **kwargs) -> None:
        super().setData(*args, **kwargs)
        self.setVisible(len(self.data) > 0)

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


class Curve(pg.PlotCurveItem):
    def setData(self, *args, **kwargs) -> None:
        super().setData(*args, **kwargs)
        self.setVisible(self.xData is not None and len(self.xData) > 0)

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


class Image(pg.ImageItem):
    def setImage(self, image=None, autoLevels=None, **kwargs) -> None:
        super().setImage(image, autoLevels, **kwargs)
        self.setVisible(self.image is not None and self.image.size > 0)

    def clear(self) -> None:
        super().clear()
        self.setVisible(False)


def fit_hint(view) -> None:
    """The line under the heatmaps of ``view`` (a JacobianView) gives way where the pane is
    too short for it below the heatmaps' least height (a verdict wrapped to three lines, at
    a large zoom on a small screen): Qt would lay it over the heatmaps' axis labels."""
    layout = view.layout()
    margins, spacing = layout.contentsMargins(), layout.spacing()
    drawer = view.drawer.minimumSizeHint().height() + spacing if view.drawer.isVisibleTo(view) \
        else 0
    used = margins.top() + margins.bottom() + view.banner.height() + spacing + drawer \
        + view.heatmaps.graphics.minimumHeight() + spacing + view.hover_label.sizeHint().height()
    view.hover_label.setVisible(used <= view.height())
