"""The Landscape tab: the plane's choice, the grid's size and the export above the picture; the
legend in words (which arrow is whose, how far apart, how long) and the plane's note."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from customgrad.defaults import LANDSCAPE_MODE_WORDS, LANDSCAPE_MODES
from playground.views.export import export_item
from playground.views.fonts import css_size
from playground.views.landscape.geometry import legend_html, note_line
from playground.views.landscape.plot import LandscapePlot

WAITING = "The loss around the current point appears here (open a Function)."


class LandscapeView(QWidget):
    """The pane: built with a :class:`playground.state.landscape.LandscapeModel`, it draws
    what the model sends and tells it the user's choices (and whether the tab is shown)."""

    exported = Signal(str)  # the path written

    def __init__(self, model, parent=None) -> None:
        super().__init__(parent)
        self.model = model
        self._plot: LandscapePlot | None = None  # built when first shown or asked for
        self.mode = QComboBox()
        for mode in LANDSCAPE_MODES:
            words = LANDSCAPE_MODE_WORDS[mode]
            self.mode.addItem(words[:1].upper() + words[1:], mode)
        self.mode.setToolTip("The plane the loss is drawn on, through the current point")
        # (narrow: the pane shares its row with the loss plot)
        self.mode.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(6)
        self.size_box = QSpinBox(minimum=5, maximum=201, singleStep=10, value=model.size)
        self.size_box.setToolTip("Grid points per side (each point a forward and a loss, "
                                 "in a worker process)")
        self.export_button = QToolButton(text="Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        for text, slot in (("Picture as PNG…", lambda: self._ask("png")),
                           ("Picture as SVG…", lambda: self._ask("svg")),
                           ("Grid as .npy…", lambda: self._ask("npy")),
                           ("Grid as CSV…", lambda: self._ask("csv"))):
            menu.addAction(text).triggered.connect(slot)
        self.export_button.setMenu(menu)
        self.status = QLabel(WAITING)
        self.status.setWordWrap(True)
        self.legend = QLabel(" ")  # (a line from the start: the picture keeps its shape)
        self.legend.setWordWrap(True)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.hide()
        top = QHBoxLayout()
        top.addWidget(self.mode, 1)  # (its choices name the plane: no label, less width)
        top.addWidget(QLabel("Grid:"))
        top.addWidget(self.size_box)
        top.addWidget(self.export_button)
        layout = self._scrolling_layout()
        layout.addLayout(top)
        layout.addWidget(self.legend)
        self._parts = layout  # the picture goes below the legend (index 2) when built
        layout.addWidget(self.note)
        layout.addWidget(self.status)
        self.mode.currentIndexChanged.connect(
            lambda _i: model.set_mode(self.mode.currentData()))
        self.size_box.editingFinished.connect(lambda: model.set_size(self.size_box.value()))
        model.started.connect(self._started)
        model.progress.connect(self._progress)
        model.ready.connect(self._ready)
        model.pathMoved.connect(self._path_moved)
        model.failed.connect(self._failed)
        model.cleared.connect(self._cleared)

    def _scrolling_layout(self) -> QVBoxLayout:
        """The layout of the pane's parts, which scroll where the side panel is shorter than
        they need (it gives way to the heatmaps): the legend and the status are never cut."""
        content = QWidget()
        scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)
        layout = QVBoxLayout(content)
        layout.setContentsMargins(4, 4, 4, 4)
        return layout

    @property
    def plot(self) -> LandscapePlot:
        """The picture. The tab is hidden at the start and draws nothing before it is shown
        (the model computes only then), so it is built when first shown or used, not with
        the window, before its first paint."""
        if self._plot is None:
            self._plot = plot = LandscapePlot()
            self._parts.insertWidget(2, plot, 1)
            plot.plot_item.vb.sigResized.connect(self._resized)
            if self.isVisible():  # (else Qt shows it a turn of the event loop later)
                plot.show()
        return self._plot

    @property
    def landscape(self):
        """The last whole landscape drawn (the model's: None before one, or after a new
        run)."""
        return self.model.shown

    # ---- the model's news ------------------------------------------------------------------
    def _started(self, text: str) -> None:
        self.status.setText(text)

    def _progress(self, landscape, contours) -> None:
        self.plot.show_landscape(landscape, contours)
        self._describe(landscape)
        self.status.setText(f"Drawing the loss around step {landscape.step}… (a coarse "
                            "grid first)")

    def _ready(self, landscape, contours) -> None:
        self.plot.show_landscape(landscape, contours)
        self._describe(landscape)
        grid = len(landscape.alphas)
        self.status.setText(f"Step {landscape.step}: loss {landscape.loss:.4g}")
        self.status.setToolTip(f"{grid}x{grid} grid; {self._arrow_scale()}")

    def _arrow_scale(self) -> str:
        if self.plot.stretched:
            return "arrows scaled to fit; the shorter drawn longer, to be seen"
        return "arrows scaled to fit, their ratio true"

    def _path_moved(self, landscape) -> None:
        self.plot.show_path(landscape)
        self._describe(landscape)
        self.status.setText(f"Step {landscape.step}: loss {landscape.loss:.4g}")

    def _failed(self, message: str) -> None:
        self.status.setText(f"The landscape could not be drawn: {message}")

    def _cleared(self) -> None:
        if self._plot is not None:  # (one never built has nothing drawn)
            self._plot.clear_landscape()
        self.legend.setText(" ")
        self.note.hide()
        self.note.clear()

    def _describe(self, landscape) -> None:
        dark = self.plot.dark
        self.legend.setText(legend_html(landscape.words, dark, css_size(self.font())))
        note = note_line(landscape.plane.note)
        self.note.setText(note)
        self.note.setVisible(bool(note))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (event.Type.PaletteChange, event.Type.FontChange) \
                and self.landscape is not None:
            self._describe(self.landscape)

    # ---- shown or not ----------------------------------------------------------------------
    def _resized(self, *_args) -> None:
        box = self.plot.plot_item.vb.size()
        if box.width() > 0 and box.height() > 0:
            self.model.set_aspect(box.width() / box.height())

    def showEvent(self, event) -> None:
        if self._plot is None:
            # built before the tab's first paint and laid out at once (the scroll area sizes
            # its content on the layout's request): the first grid has the picture's shape
            self.plot  # noqa: B018
            self._parts.activate()
            QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        super().showEvent(event)
        self.model.set_active(True)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.model.set_active(False)

    # ---- export ----------------------------------------------------------------------------
    def _ask(self, fmt: str) -> None:
        name = f"landscape.{fmt}"
        path, _ = QFileDialog.getSaveFileName(self, "Export the landscape", name,
                                              f"{fmt.upper()} (*.{fmt})")
        if path:
            self.export(path)

    def export(self, path: str | os.PathLike) -> Path:
        """The picture (``.png``, ``.svg``) or the grid (``.npy``: [beta, alpha] losses;
        ``.csv``: alpha, beta, loss rows), by the suffix."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix in (".npy", ".csv"):
            if self.landscape is None:
                raise ValueError("no landscape to export yet: open a Function")
            if suffix == ".npy":
                np.save(path, self.landscape.losses)
            else:
                path.write_text(self.landscape.csv(), encoding="utf-8")
        else:
            export_item(self.plot.scene(), path)
        self.exported.emit(str(path))
        return path


__all__ = ["LandscapeView"]
