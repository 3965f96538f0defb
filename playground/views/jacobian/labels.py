"""The heatmaps' words: the block labels along the axes and the panels' titles, fitted to the
room there is (see :func:`~playground.views.jacobian.geometry.fit_labels`).

Block labels shorten to the bare name (or hide, with a legend in the hint line) when the
blocks are too narrow on screen for them; titles shorten to their first word when they do
not all fit over their views.
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF, QPalette
from PySide6.QtWidgets import QWidget

from playground.views.fonts import css_size, point_size, scaled
from playground.views.jacobian.geometry import abbreviations, block_label, block_ticks, fit_labels
from playground.views.jacobian.heatmaps import Heatmaps

__all__ = ["BlockLabels"]


class BlockLabels:
    """Labels of ``heatmaps``' blocks and panels, in the font of ``owner`` (the pane)."""

    def __init__(self, heatmaps: Heatmaps, owner: QWidget):
        self._heatmaps = heatmaps
        self._owner = owner
        #: the (column, row) block labels the axes show: [(position, text), ...]. A label
        #: reads "name [shape]" where the block is wide (or tall) enough on screen, else just
        #: "name"; a block too small even for that gets no label (the hint line below the
        #: views then lists every block)
        self.tick_labels: tuple[list, list] = ([], [])
        self.full = True  # every block label shows "name [shape]"
        self._row_text_width = 0
        self.title_font = QFont()
        self.title_height = 30
        self._title_style: dict = {}

    def restyle(self, base: QFont, palette: QPalette) -> None:
        """Titles a little larger than ``base``, bold, in the palette's text colour."""
        self.title_font = scaled(base, 1.15, bold=True)
        self.title_height = QFontMetrics(self.title_font).height() + 2
        self._title_style = {"size": css_size(base, 1.15), "bold": True,
                             "color": palette.color(QPalette.ColorRole.Text).name()}

    def fit_row_axis(self) -> None:
        """The row-label column. One output (most Functions): its "name [shape]" written
        upwards along the rows, one line wide, so the heatmaps keep the width. Several: the
        longest "name [shape]" label, unless that takes more than a fifth of the width; then
        the longest bare name (up to the same)."""
        font = self._owner.font()
        metrics = QFontMetrics(scaled(font, 1.0))
        points = point_size(font)
        heatmaps = self._heatmaps
        outputs, axis = heatmaps.outputs, heatmaps.row_axis
        if len(outputs) <= 1:
            self._row_text_width = 0
            text = ""
            if outputs:
                room = heatmaps.view_box.height()
                text = block_label(outputs[0])
                if room >= 2 and metrics.horizontalAdvance(text) > room:
                    text = metrics.elidedText(outputs[0].name, Qt.TextElideMode.ElideRight,
                                              max(int(room), 1))
            before = axis.label.toPlainText()
            axis.setLabel(html.escape(text), **{"font-size": css_size(font, 1.0),
                                                "color": heatmaps.text_color})
            axis.showLabel(bool(text))
            if axis.label.toPlainText() != before:
                # pyqtgraph centres the label along the axis when the axis resizes only: a
                # new text at the same size stayed placed for the old one (past the views)
                axis.resizeEvent(None)
            width = metrics.height() + max(4, round(points * 0.5)) + 4
        else:
            axis.showLabel(False)
            full = [text for _, text in block_ticks(outputs)]
            names = [a.name for a in outputs]
            cap = max(4 * metrics.height(), 0.2 * heatmaps.graphics.width())
            need = max(metrics.horizontalAdvance(t) for t in full)
            if need > cap:
                need = min(cap, max(metrics.horizontalAdvance(t) for t in names))
            self._row_text_width = math.ceil(need)
            width = (self._row_text_width + max(3, round(points * 0.4))
                     + max(4, round(points * 0.5)) + 6)
        if getattr(axis, "fixedWidth", None) != width:
            axis.setWidth(width)

    def fit_titles(self) -> None:
        """The longest titles that all fit over their views: full, else the words before
        " (" ("Double backward", "Numerical", "Difference" for the second order), else the
        panel's short name ("Analytic", "Numerical", "Difference")."""
        metrics = QFontMetrics(self.title_font)
        panels = self._heatmaps.panels
        width = self._heatmaps.view_box.width()  # the same for all three
        levels = [[p.title for p in panels],
                  [p.title.split(" (")[0] for p in panels],
                  [p.short for p in panels]]
        titles = next((level for level in levels if width < 2 or all(
            metrics.horizontalAdvance(t) <= width for t in level)), levels[-1])
        for panel, title in zip(panels, titles):
            if title != panel.shown_title:
                panel.shown_title = title
                panel.plot.setTitle(title, **self._title_style)
                # setTitle resets the title row to 30 px: back to the height of this font
                panel.plot.titleLabel.setMaximumHeight(self.title_height)
                panel.plot.layout.setRowFixedHeight(0, self.title_height)

    def update_ticks(self) -> bool:
        """Lay the block labels out for the current zoom and size (see
        :attr:`tick_labels`); True where whether they are all in full changed."""
        heatmaps = self._heatmaps
        inputs, outputs = heatmaps.inputs, heatmaps.outputs
        vb = heatmaps.view_box
        (x0, x1), (y0, y1) = vb.viewRange()
        font = scaled(self._owner.font(), 1.0)
        metrics = QFontMetrics(font)
        laid_out = heatmaps.graphics.isVisible() and vb.width() >= 2 and vb.height() >= 2
        if not laid_out:
            # not on screen yet: every block in full, at its centre
            x_ticks, x_full = block_ticks(inputs), True
            y_ticks, y_full = block_ticks(outputs), True
        else:
            # a pixel to spare at each end (see _drawn_width)
            pixel = (x1 - x0) / vb.width()
            x_ticks, x_full = fit_labels(inputs, x0 + pixel, x1 - pixel, vb.width() - 2,
                                         _drawn_width(font),
                                         None, gap=1.5 * metrics.horizontalAdvance(" "),
                                         shorten=abbreviations)
            y_ticks, y_full = [], True
        if len(outputs) <= 1:
            y_ticks, y_full = [], True  # one output: the column's upright label names it
        elif laid_out:
            width = self._row_text_width
            y_ticks, y_full = fit_labels(
                outputs, y0, y1, vb.height(), lambda _text: metrics.height(),
                lambda text: metrics.horizontalAdvance(text) <= width, gap=2,
                elide=lambda name: metrics.elidedText(name, Qt.TextElideMode.ElideRight, width))
        if (x_ticks, y_ticks) != self.tick_labels:
            self.tick_labels = (x_ticks, y_ticks)
            for panel in heatmaps.panels:
                panel.plot.getAxis("bottom").setTicks([x_ticks, []])
            heatmaps.row_axis.setTicks([y_ticks, []])
        full = x_full and y_full
        changed, self.full = full != self.full, full
        return changed


def _drawn_width(font: QFont):
    """A label's width as the axis draws it: pyqtgraph measures its text rectangle in
    fractions of a pixel and drops a label that it finds reaching past the axis' end by any
    of them ("bias [4]" fitted flush against the end by whole-pixel advances was not
    drawn): the width in whole pixels rounded up, and the axis' ends kept a pixel clear."""
    exact = QFontMetricsF(font)
    return lambda text: math.ceil(exact.horizontalAdvance(text))
