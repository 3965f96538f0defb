"""The landscape's picture: the loss over the plane (an image with contour lines and a colour
bar), the run's path with its start and current point, and the two arrows."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPalette

from playground.views.arrows import ARROW_COLOURS
from playground.views.fonts import css_size
from playground.views.landscape.geometry import arrow_ends, axis_titles, head_angle
from playground.views.pyqtgraph_compat import lighter_plots

lighter_plots()  # its plots build what their first paint does not show when used

#: the colour map of the loss: perceptually uniform, readable in grey
COLOUR_MAP = "viridis"


class LandscapePlot(pg.GraphicsLayoutWidget):
    """Draws one :class:`customgrad.landscape.Landscape` at a time (:meth:`show_landscape`),
    and its path and arrows again as they move (:meth:`show_path`)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plot_item = self.addPlot(row=0, col=0)
        self.plot_item.setAspectLocked(True)  # the angle between the arrows is the true one
        self.plot_item.setMenuEnabled(False)
        self.plot_item.hideButtons()
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot_item.addItem(self.image)
        self.bar = pg.ColorBarItem(colorMap=pg.colormap.get(COLOUR_MAP), interactive=False,
                                   width=18)
        self.bar.setImageItem(self.image)
        self.addItem(self.bar, row=0, col=1)
        #: every contour line in one curve (NaN between lines), traced off this thread
        self.contours = pg.PlotDataItem([], [], connect="finite")
        self.contours.setZValue(5)
        self.plot_item.addItem(self.contours)
        self.path = pg.PlotDataItem([], [])
        self.path.setZValue(20)
        self.marks = pg.ScatterPlotItem()
        self.marks.setZValue(30)
        self.start_text = pg.TextItem("start", anchor=(0.5, 1.3))
        # above and left of the point: the path mostly comes from the right (descent goes
        # along -d1 in the gradients' plane), where the start is labelled
        self.now_text = pg.TextItem("", anchor=(1, 1.2))
        for item in (self.path, self.marks, self.start_text, self.now_text):
            self.plot_item.addItem(item)
        #: (halo, shaft, head) of each arrow: your backward's, the true gradient's (its dashes
        #: above, so that where they overlap both colours show)
        self.arrows = [self._arrow(k) for k in (0, 1)]
        self.landscape = None
        #: the shorter arrow is drawn longer than its true share (see geometry.arrow_ends)
        self.stretched = False
        #: the plane's mode and its directions' kinds the axes' titles were made for
        self.mode = ("gradients", ("backward", "true"))
        self.apply_colors()
        self.plot_item.vb.sigResized.connect(self._fit_titles)

    def _arrow(self, k: int):
        halo, shaft = pg.PlotDataItem([], []), pg.PlotDataItem([], [])
        head = pg.ArrowItem(headLen=22, tipAngle=32, tailLen=0)
        for item, z in ((halo, 40), (shaft, 41 + k), (head, 43 + k)):
            item.setZValue(z)
            self.plot_item.addItem(item)
            item.setVisible(False)
        return halo, shaft, head

    # ---- colours and fonts ------------------------------------------------------------------
    @property
    def dark(self) -> bool:
        return self.palette().color(QPalette.ColorRole.Base).lightnessF() < 0.5

    def apply_colors(self) -> None:
        pal = self.palette()
        bg, fg = pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)
        self.setBackground(bg)
        for name in ("bottom", "left"):
            axis = self.plot_item.getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)
        self.bar.axis.setPen(fg)
        self.bar.axis.setTextPen(fg)
        width = max(2.0, self.font().pointSizeF() / 4)
        self.path.setPen(pg.mkPen(fg, width=width))
        for text in (self.start_text, self.now_text):
            text.setColor(fg)
            text.setFont(self.font())
        line = QColor(bg)
        line.setAlpha(170)
        self.contours.setPen(pg.mkPen(line, width=1.2))
        colours = ARROW_COLOURS[self.dark]
        styles = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine)
        for (halo, shaft, head), colour, style in zip(self.arrows, colours, styles):
            halo.setPen(pg.mkPen(bg, width=3 * width + 4))
            shaft.setPen(pg.mkPen(colour, width=1.5 * width + 1, style=style))
            head.setStyle(brush=pg.mkBrush(colour), pen=pg.mkPen(bg, width=2),
                          headLen=4 * width + 10)
        self._set_titles()
        if self.landscape is not None:
            self.show_path(self.landscape)

    def _set_titles(self) -> None:
        # (pyqtgraph's labels take CSS: "font-size", not "size", which it ignored: the titles
        # stayed at its 9 pt at every zoom)
        style = {"color": self.palette().color(QPalette.ColorRole.Text).name(),
                 "font-size": css_size(self.font())}
        for name, title in zip(("bottom", "left"), axis_titles(*self.mode)):
            self.plot_item.setLabel(name, title, **style)
        for name in ("bottom", "left"):
            self.plot_item.getAxis(name).setStyle(tickFont=self.font())
        # the bar's axis as wide as its tick labels and title ask (ColorBarItem fixes it at
        # 45 px: at zoom 150 % the title overlapped the tick labels)
        axis = self.bar.axis
        axis.setLabel(axis.labelText or "loss", **style)
        axis.setStyle(tickFont=self.font())
        axis.textWidth = 0  # (pyqtgraph only widens it: a smaller font fits afresh)
        axis.setWidth(None)
        self._fit_titles()

    def _fit_titles(self, *_args) -> None:
        """The axes' titles fitted to the picture's sides: in short where they are longer
        ("d2 (true)"), elided where that is too (at zoom 150 % in presentation mode
        "d2 (true gradient)" is longer than the picture is high: it was cut at both ends)."""
        metrics, box = QFontMetrics(self.font()), self.plot_item.vb.size()
        for name, title, short, room in zip(("bottom", "left"), axis_titles(*self.mode),
                                            axis_titles(*self.mode, short=True),
                                            (box.width(), box.height())):
            if room >= 2 and metrics.horizontalAdvance(title) > room:
                title = metrics.elidedText(short, Qt.TextElideMode.ElideRight, int(room))
            axis = self.plot_item.getAxis(name)
            if axis.labelText != title:
                axis.setLabel(title)  # (its style kept)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (event.Type.PaletteChange, event.Type.FontChange) \
                and hasattr(self, "arrows"):  # (Qt sends one while the base class builds)
            self.apply_colors()

    # ---- drawing ---------------------------------------------------------------------------
    def clear_landscape(self) -> None:
        self.landscape = None
        self.image.clear()
        self.contours.setData([], [])
        self.path.setData([], [])
        self.marks.setData([])
        self.start_text.setText("")
        self.now_text.setText("")
        for item in (part for arrow in self.arrows for part in arrow):
            item.setVisible(False)

    def show_landscape(self, landscape, contours=None) -> None:
        """The grid (as far as computed; its ``contours``, a
        :class:`playground.support.contours.Contours`), the path and the arrows."""
        self.landscape = landscape
        plane = landscape.plane
        if (plane.mode, plane.kinds) != self.mode:
            self.mode = (plane.mode, plane.kinds)
            self._set_titles()
        self.setToolTip(plane.note[:1].upper() + plane.note[1:])
        if contours is not None:
            self._show_grid(landscape, contours)
        self.show_path(landscape)

    def _show_grid(self, landscape, contours) -> None:
        a, b = landscape.alphas, landscape.betas
        da, db = (a[1] - a[0]), (b[1] - b[0])
        levels = (contours.low, contours.high)
        self.image.setImage(contours.values, autoLevels=False, levels=levels)
        self.image.setRect(QRectF(a[0] - da / 2, b[0] - db / 2, da * len(a), db * len(b)))
        self.bar.setLevels(levels)
        self.bar.axis.setLabel("log10 loss" if contours.log else "loss")
        self.contours.setData(contours.xs, contours.ys)
        self.plot_item.setRange(xRange=(a[0], a[-1]), yRange=(b[0], b[-1]), padding=0)

    def show_path(self, landscape) -> None:
        """The path, its start and current point, and the arrows at the current point (on
        the plane drawn; a path update keeps the grid)."""
        path = landscape.path
        self.path.setData(path[:, 0], path[:, 1])
        fg = self.palette().color(QPalette.ColorRole.Text)
        bg = self.palette().color(QPalette.ColorRole.Base)
        size = max(10.0, self.font().pointSizeF() * 1.2)
        self.marks.setData([
            {"pos": tuple(path[0]), "symbol": "s", "size": size, "brush": pg.mkBrush(bg),
             "pen": pg.mkPen(fg, width=2)},
            {"pos": tuple(path[-1]), "symbol": "o", "size": size * 1.2,
             "brush": pg.mkBrush(fg), "pen": pg.mkPen(bg, width=2)}])
        self.start_text.setText("start" if len(path) > 1 else "")
        self.start_text.setPos(*path[0])
        self.now_text.setText(f"step {landscape.step} ")
        self.now_text.setPos(*path[-1])
        shown = self.landscape if self.landscape is not None else landscape
        *tips, self.stretched = arrow_ends(path[-1], landscape.analytic, landscape.true,
                                           shown.half)
        for (halo, shaft, head), tip in zip(self.arrows, tips):
            xs, ys = [path[-1][0], tip[0]], [path[-1][1], tip[1]]
            visible = bool(np.hypot(tip[0] - xs[0], tip[1] - ys[0]) > 0)
            halo.setData(xs, ys)
            shaft.setData(xs, ys)
            head.setPos(*tip)
            head.setStyle(angle=head_angle(path[-1], tip))
            for item in (halo, shaft, head):
                item.setVisible(visible)


__all__ = ["COLOUR_MAP", "LandscapePlot"]
