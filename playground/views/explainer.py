"""The step explainer: the last gradient-descent step in words and numbers.

Loss, the gradient as a small heatmap, and the update ``x <- x - eta * grad`` worked out on a
few entries. The session copies each step's before/gradient/after values only while this tab
is visible (the copies cost time), and the tab redraws at most at screen rate.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from playground.views.arrows import arrow_words
from playground.views.fonts import code_font, point_size, scaled
from playground.views.pyqtgraph_compat import lighter_plots

__all__ = ["StepExplainer", "as_matrix", "example_entries", "explain"]

lighter_plots()  # its plots build what their first paint does not show when used

_LOSS_WORDS = {"mse": "mean squared error", "l1": "mean absolute error",
               "sse": "sum of squared errors"}
FRAME_MS = 16
EXAMPLES = 4


def _num(x: float | complex, digits: int = 5) -> str:
    if isinstance(x, complex):
        sign = "−" if x.imag < 0 else "+"
        return f"({_num(x.real, digits)}{sign}{_num(abs(x.imag), digits)}i)"
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 1e5:
        return f"{x:.{digits}g}"
    return f"{x:.{max(1, digits - 2)}e}"


def _array(value) -> np.ndarray | None:
    if value is None:
        return None
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    value = np.asarray(value)
    return value.astype(np.complex128 if np.iscomplexobj(value) else np.float64)


def _scalar(value) -> float | complex:
    return complex(value) if np.iscomplexobj(value) else float(value)


def as_matrix(values) -> np.ndarray:
    """A 2-D view for the heatmap: scalars 1x1, vectors one row, more dims rows x rest; a
    complex entry as its real and imaginary parts side by side."""
    a = np.asarray(values)
    if np.iscomplexobj(a):
        a = np.stack((a.real, a.imag), axis=-1)
        a = a.reshape((*a.shape[:-2], -1)) if a.ndim >= 2 else a
    a = a.astype(np.float64)
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(a.shape[0], -1)


def _index_text(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(str(i) for i in index)}]" if index else name


def example_entries(before, grad, after, count: int = EXAMPLES) -> list[tuple]:
    """(index, before, grad, after) of the ``count`` entries with the largest |gradient|."""
    g = _array(grad)
    b, a = _array(before), _array(after)
    if g is None or g.size == 0:
        return []
    flat = np.abs(np.nan_to_num(g, nan=np.inf)).ravel()
    order = np.argsort(-flat, kind="stable")[:count]
    rows = []
    for k in sorted(order.tolist()):
        index = tuple(int(i) for i in np.unravel_index(k, g.shape)) if g.ndim else ()
        rows.append((index,
                     _scalar(b.reshape(-1)[k]) if b is not None and b.size == g.size
                     else math.nan, _scalar(g.reshape(-1)[k]),
                     _scalar(a.reshape(-1)[k]) if a is not None and a.size == g.size
                     else math.nan))
    return rows


def _examples(step_detail, name: str, optimizer: str, eta: float) -> str:
    """The update worked through for the entries with the largest gradients (rich text)."""
    if step_detail is None:
        return ("<p><i>Take a step (S) with this tab open to see the gradient and the "
                "update entry by entry.</i></p>")
    lines = []
    for index, before, grad, after in example_entries(step_detail.before, step_detail.grad,
                                                      step_detail.after):
        label = html.escape(_index_text(name, index))
        if optimizer == "sgd":
            lines.append(f"{label}: {_num(before)} − {_num(eta)} × {_num(grad)} = "
                         f"<b>{_num(after)}</b>")
        else:
            lines.append(f"{label}: {_num(before)} → <b>{_num(after)}</b> (grad "
                         f"{_num(grad)}, moved {_num(after - before)})")
    if not lines:
        return ""
    return ("<p>The entries with the largest gradients:</p><p style="
            "'font-family: monospace'>" + "<br>".join(lines) + "</p>")


def explain(record, settings, function_name: str, name: str | None,
            dark: bool = False) -> dict[str, str]:
    """The texts of the explainer for ``record`` (rich text), for trained input ``name``;
    the Landscape tab's arrows named in their colours for a ``dark`` theme or a light one."""
    loss_words = _LOSS_WORDS.get(settings.loss, settings.loss)
    detail = getattr(record, "detail", None) or {}
    names = list(record.grad_norms) or list(detail)
    name = name if name in names else (names[0] if names else None)
    eta = record.lr
    head = f"Step {record.step + 1}"
    parts = [
        f"<p><b>1. Forward and loss.</b> {html.escape(function_name)} ran on the current "
        f"inputs and its output was compared with the target: loss ({loss_words}) = "
        f"<b>{_num(record.loss, 7)}</b>.</p>"]
    if name is None:
        parts.append("<p>No input is trained, so there is nothing to update.</p>")
        return {"head": head, "body": "".join(parts), "before": "".join(parts), "after": "",
                "examples": "", "name": ""}
    norm = record.grad_norms.get(name, math.nan)
    others = [n for n in names if n != name]
    also = (f" (also for {', '.join(html.escape(n) for n in others)}: choose above)"
            if others else "")
    step_detail = detail.get(name)
    shape = ""
    if step_detail is not None:
        g = _array(step_detail.grad)
        shape = f", {'×'.join(str(s) for s in g.shape) or 'a scalar'}"
    parts.append(
        f"<p><b>2. Backward.</b> Your backward gave the gradient of the loss with respect to "
        f"<b>{html.escape(name)}</b>: one number per entry{shape}{also}. Its length "
        f"‖grad‖ = <b>{_num(norm)}</b>."
        + (" In the heatmap, red entries (positive gradient) are pushed down and blue ones "
           "pushed up." if step_detail is not None else "") + "</p>")
    if settings.optimizer == "sgd":
        parts.append(
            f"<p><b>3. Update.</b> Every entry takes a step against its gradient: "
            f"<b>{html.escape(name)} ← {html.escape(name)} − η · grad</b> with learning rate "
            f"η = <b>{_num(eta)}</b>. Then the next step starts from the new values. In the "
            f"Landscape tab, − η · grad is the {arrow_words(0, dark)}; where the "
            f"{arrow_words(1, dark)} points elsewhere, your backward is wrong.</p>")
    else:
        parts.append(
            f"<p><b>3. Update.</b> The {html.escape(settings.optimizer)} optimizer moves each "
            f"entry against its gradient using running averages of earlier gradients, so the "
            f"move is not exactly η · grad (η = <b>{_num(eta)}</b>).</p>")
    examples = _examples(step_detail, name, settings.optimizer, eta)
    # before the heatmap: loss and gradient; after it: the update
    return {"head": head, "body": "".join(parts), "before": "".join(parts[:2]),
            "after": "".join(parts[2:]), "examples": examples, "name": name}


class StepExplainer(QWidget):
    """The "Step" tab: reads the session's last StepRecord; never changes the run."""

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        self._record = None
        self._dirty = False
        self._shown = False
        self.head = QLabel("No step yet")
        self.head.setTextFormat(Qt.TextFormat.PlainText)
        self.chooser = QComboBox()
        self.chooser.setToolTip("Which trained input to explain")
        self.chooser.hide()
        self.body = QLabel(
            "Press Step (S) to take one step of gradient descent; this tab then explains it: "
            "the loss, the gradient and the update x ← x − η · grad.")
        self.update_text = QLabel()
        self.examples = QLabel()
        for label in (self.body, self.update_text, self.examples):
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._graphics: pg.GraphicsLayoutWidget | None = None  # built at the first heatmap

        top = QHBoxLayout()
        top.addWidget(self.head, 1)
        top.addWidget(self.chooser)
        inner = QWidget()
        box = QVBoxLayout(inner)
        box.setContentsMargins(8, 8, 8, 8)
        box.addLayout(top)
        box.addWidget(self.body)
        self._box = box  # the heatmap goes after the body, when there is one
        box.addWidget(self.update_text)
        box.addWidget(self.examples)
        box.addStretch(0)
        scroll = QScrollArea(widgetResizable=True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(inner)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll)

        self._timer = QTimer(self, singleShot=True, interval=FRAME_MS)
        self._timer.timeout.connect(self.redraw)
        self.chooser.currentTextChanged.connect(lambda _t: self._schedule())
        session.batchReady.connect(self._batch)
        session.runReset.connect(self._reset)
        session.targetChanged.connect(self._target_changed)
        self.apply_font(self.font())
        self._apply_colors()
        if session.target is not None:  # built after the Function opened (the tab is built
            self._reset("")  # when first shown): where it would be, had it heard it all
            if session.last_record is not None:
                self._record = session.last_record
                self._schedule()

    # ---- the gradient heatmap (pyqtgraph), built when first needed -------------------------
    @property
    def graphics(self) -> pg.GraphicsLayoutWidget:
        """The gradient heatmap's canvas. The tab is hidden at start-up and shows no heatmap
        before a step, so it is built on first use, not with the window."""
        self._ensure_graphics()
        return self._graphics

    def _ensure_graphics(self) -> None:
        if self._graphics is None:
            self._build_graphics()

    @property
    def plot(self) -> pg.PlotItem:
        self._ensure_graphics()
        return self._plot

    @property
    def image(self) -> pg.ImageItem:
        self._ensure_graphics()
        return self._image

    @property
    def colorbar(self) -> pg.ColorBarItem:
        self._ensure_graphics()
        return self._colorbar

    def _build_graphics(self) -> None:
        graphics = pg.GraphicsLayoutWidget()
        graphics.setMinimumHeight(90)
        plot = graphics.addPlot()
        plot.hideAxis("left")
        plot.hideAxis("bottom")
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.invertY(True)
        plot.setAspectLocked(False)
        plot.setDefaultPadding(0.0)
        plot.vb.setMouseEnabled(False, False)
        image = pg.ImageItem(axisOrder="row-major")
        image.setTransform(pg.QtGui.QTransform().translate(-0.5, -0.5))
        plot.addItem(image)
        colorbar = pg.ColorBarItem(values=(-1.0, 1.0), colorMap=pg.colormap.get("CET-D1"),
                                   interactive=False, colorMapMenu=False, width=14)
        colorbar.setImageItem(image)
        graphics.addItem(colorbar)
        graphics.hide()
        self._graphics, self._plot, self._image, self._colorbar = graphics, plot, image, colorbar
        self._box.insertWidget(self._box.indexOf(self.body) + 1, graphics, 1)
        self._style_colorbar()
        self._apply_colors()

    def _hide_graphics(self) -> None:
        if self._graphics is not None:
            self._graphics.hide()

    # ---- session --------------------------------------------------------------------------
    def _batch(self, batch) -> None:
        if len(batch):
            self._record = batch.last
            self._schedule()

    def _target_changed(self, _target) -> None:
        self._reset("")

    def _reset(self, _label: str) -> None:
        self._record = None
        self._timer.stop()
        self.head.setText("Step 0: nothing has happened yet")
        self.body.setText("Press Step (S) to take one step of gradient descent; this tab then "
                          "explains it: the loss, the gradient and the update "
                          "x ← x − η · grad.")
        self.update_text.clear()
        self.examples.clear()
        self._hide_graphics()
        # the last Function's parameters went with it (trial3 T8: "weight, bias" offered for
        # RowSum), and the text starts at its left edge again
        self.chooser.blockSignals(True)
        self.chooser.clear()
        self.chooser.blockSignals(False)
        self.chooser.hide()
        for area in self.findChildren(QAbstractScrollArea):
            area.horizontalScrollBar().setValue(0)
            area.verticalScrollBar().setValue(0)

    def _schedule(self) -> None:
        self._dirty = True
        if self._shown and not self._timer.isActive():
            self._timer.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._shown = True
        self.session.set_explain(True)
        if self._dirty:
            self._timer.start()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._shown = False
        self.session.set_explain(False)

    # ---- drawing --------------------------------------------------------------------------
    def redraw(self) -> None:
        """Show the last record now (the timer calls this at most once a frame)."""
        self._dirty = False
        record = self._record
        if record is None:
            return
        target = self.session.target
        function_name = target.function.__name__ if target is not None else "The Function"
        names = list(record.grad_norms)
        if [self.chooser.itemText(i) for i in range(self.chooser.count())] != names:
            current = self.chooser.currentText()
            self.chooser.blockSignals(True)
            self.chooser.clear()
            self.chooser.addItems(names)
            if current in names:
                self.chooser.setCurrentText(current)
            self.chooser.blockSignals(False)
        self.chooser.setVisible(len(names) > 1)
        dark = self.palette().color(QPalette.ColorRole.Base).lightnessF() < 0.5
        texts = explain(record, self.session.settings, function_name,
                        self.chooser.currentText() or None, dark)
        self.head.setText(texts["head"])
        self.body.setText(texts["before"])
        self.update_text.setText(texts["after"])
        self.examples.setText(texts["examples"])
        detail = (getattr(record, "detail", None) or {}).get(texts["name"])
        if detail is None:
            self._hide_graphics()
            return
        grad = as_matrix(_array(detail.grad))
        finite = grad[np.isfinite(grad)]
        peak = float(np.abs(finite).max()) if finite.size else 1.0
        peak = peak if peak > 0 else 1.0
        self.image.setImage(grad, autoLevels=False, levels=(-peak, peak))
        self.colorbar.setLevels((-peak, peak))
        rows, cols = grad.shape
        self.plot.setRange(xRange=(-0.5, cols - 0.5), yRange=(-0.5, rows - 0.5), padding=0)
        self.graphics.setFixedHeight(max(90, min(260, 40 + 22 * rows)))
        self.graphics.show()

    # ---- look -----------------------------------------------------------------------------
    def apply_font(self, font: QFont) -> None:
        self.setFont(font)
        self.head.setFont(scaled(font, 1.35, bold=True))
        self.examples.setFont(code_font(point_size(font)))
        self._style_colorbar()

    def _style_colorbar(self) -> None:
        """Colour-bar ticks a little smaller than the tab's font."""
        if self._graphics is None:
            return
        self._colorbar.axis.setStyle(tickFont=scaled(self.font(), 0.9))
        self._colorbar.axis.setWidth(int(point_size(self.font()) * 0.9 * 6))

    def apply_theme(self, name: str) -> None:
        self._apply_colors()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_colors()
        super().changeEvent(event)

    def _apply_colors(self) -> None:
        if self._graphics is None:
            return
        pal = self.palette()
        bg, fg = pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)
        self.graphics.setBackground(bg)
        self.colorbar.axis.setTextPen(fg)
        self.colorbar.axis.setPen(QColor(fg))
