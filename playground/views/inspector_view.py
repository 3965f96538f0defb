"""The Inspector tab: one forward + backward of the current Function, laid open.

The call runs in :class:`playground.workers.inspector.InspectorRunner` (user code may hang);
:class:`InspectorView` draws the :class:`~customgrad.checking.inspector.Inspection`: what backward
received, what forward saved on ctx, what backward returned, and the surprises.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QImage, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from playground.views.fields import ElidedLabel
from playground.views.fonts import scaled

if TYPE_CHECKING:
    from customgrad.checking.inspector import Inspection, Value

# (negative, zero, positive, not finite) colours of the heatmaps
_LIGHT_MAP = ("#2166ac", "#f7f7f7", "#b2182b", "#9c27b0")
_DARK_MAP = ("#4393c3", "#2b2b2b", "#d6604d", "#e040fb")
_SEVERITY = {  # (light, dark) text colours, by customgrad.checking.inspector's severities
    "error": ("#a11a12", "#ff8a80"),
    "warning": ("#8a5a00", "#ffcc66"),
    "note": ("#1d4f91", "#9cc3ff"),
}
_SYMBOL = {"error": "✘", "warning": "⚠", "note": "ℹ"}


def as_slices(values) -> np.ndarray:
    """A tensor's values as slices x rows x columns (the last two dimensions are a slice)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 0:
        return array.reshape(1, 1, 1)
    if array.ndim == 1:
        return array.reshape(1, 1, -1)
    return array.reshape(-1, array.shape[-2], array.shape[-1])


def colours(values: np.ndarray, dark: bool = False, scale: float | None = None) -> np.ndarray:
    """RGB (uint8) of ``values``: blue below 0, red above, NaN/Inf in purple."""
    neg, zero, pos, bad = (np.array(QColor(c).getRgb()[:3], dtype=np.float64)
                           for c in (_DARK_MAP if dark else _LIGHT_MAP))
    finite = np.isfinite(values)
    if scale is None:
        scale = float(np.abs(values[finite]).max()) if finite.any() else 0.0
    t = np.zeros_like(values) if not scale else np.clip(np.where(finite, values, 0) / scale,
                                                         -1, 1)
    a = np.abs(t)[..., None]
    rgb = np.where(t[..., None] < 0, (1 - a) * zero + a * neg, (1 - a) * zero + a * pos)
    rgb[~finite] = bad
    return np.ascontiguousarray(rgb.round().astype(np.uint8))


class TensorHeatmap(QWidget):
    """A small heatmap of one tensor (diverging colours around 0, NaN/Inf in purple).

    A tensor of 3 or more dimensions is drawn as its [rows, columns] slices side by side (a
    [3, 5, 4] gradient: three 5x4 blocks), or stacked when they do not fit. Hover shows an
    element's index and value.
    """

    MAX_SIZE = QSize(300, 160)
    MAX_CELL = 18
    MIN_CELL = 3
    GAP = 6

    def __init__(self, value: Value | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self._dark = False
        self._value: Value | None = None
        self._slices: np.ndarray | None = None
        self._pieces: list[tuple[QImage, QRect]] = []
        self._stacked = False
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.set_value(value)

    @property
    def slices(self) -> np.ndarray | None:
        """The values drawn, as slices x rows x columns."""
        return self._slices

    @property
    def pieces(self) -> list[tuple[QImage, QRect]]:
        return self._pieces

    def set_value(self, value: Value | None) -> None:
        self._value = value
        self._slices = None
        if value is not None and value.values is not None and value.values.numel():
            self._slices = as_slices(value.values.numpy())
        self._render()

    def apply_theme(self, dark: bool) -> None:
        self._dark = bool(dark)
        self._render()

    def _layout(self) -> tuple[int, bool]:
        """Cell size, and whether the slices are stacked into one tall matrix."""
        count, rows, cols = self._slices.shape
        w, h = self.MAX_SIZE.width(), self.MAX_SIZE.height()
        across = (w - self.GAP * (count - 1)) // max(1, count * cols)
        cell = min(self.MAX_CELL, across, h // max(1, rows))
        if cell >= self.MIN_CELL or count == 1:
            return max(1, cell), False
        stacked = min(self.MAX_CELL, w // max(1, cols), h // max(1, count * rows))
        return max(1, stacked), True

    def _render(self) -> None:
        self._pieces = []
        m = self._slices
        if m is None:
            self.setFixedSize(0, 0)
            self.setVisible(False)
            return
        cell, self._stacked = self._layout()
        rgb = colours(m, self._dark)
        count, rows, cols = m.shape
        if self._stacked:
            rgb = rgb.reshape(1, count * rows, cols, 3)
        x = 1
        height = 0
        for piece in rgb:
            r, c = piece.shape[:2]
            data = np.ascontiguousarray(piece)
            image = QImage(data.data, c, r, 3 * c, QImage.Format.Format_RGB888).copy()
            rect = QRect(x, 1, c * cell, r * cell)
            self._pieces.append((image, rect))
            x += c * cell + self.GAP
            height = max(height, r * cell)
        self.setFixedSize(x - self.GAP + 1, height + 2)
        self.setVisible(True)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        if not self._pieces:
            return
        painter = QPainter(self)
        painter.setPen(QColor("#888888"))
        for image, rect in self._pieces:
            painter.drawImage(rect, image)
            painter.drawRect(rect.adjusted(-1, -1, 0, 0))
        painter.end()

    def index_at(self, pos: QPoint) -> tuple[int, ...] | None:
        """The tensor index under ``pos`` (widget coordinates), or None."""
        m, value = self._slices, self._value
        if m is None or value is None:
            return None
        _, rows, cols = m.shape
        for s, (image, rect) in enumerate(self._pieces):
            if rect.contains(pos):
                col = (pos.x() - rect.x()) * image.width() // max(1, rect.width())
                row = (pos.y() - rect.y()) * image.height() // max(1, rect.height())
                flat = (s * rows * cols + row * cols + col) if not self._stacked \
                    else row * cols + col
                shape = value.shape or ()
                return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
        return None

    def element_text(self, index: tuple[int, ...]) -> str:
        """``name[i, j, k] = value``."""
        flat = self._slices.reshape(-1)
        shape = self._value.shape or ()
        k = int(np.ravel_multi_index(index, shape)) if shape else 0
        where = ", ".join(str(i) for i in index)
        return f"{self._value.name}[{where}] = {_number(float(flat[k]))}"

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        where = self.index_at(event.position().toPoint())
        if where is not None:
            QToolTip.showText(event.globalPosition().toPoint(), self.element_text(where), self)
        super().mouseMoveEvent(event)


def _number(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    return f"{x:.4g}"


class _ValueRow(QFrame):
    """One value: name, shape and dtype (or None / the object), a note, and its heatmap."""

    def __init__(self, value: Value, name: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.value = value
        self.name = QLabel(name or value.name)
        self.name.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.describe = QLabel(_describe(value))
        self.describe.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.describe.setWordWrap(True)
        self.note = QLabel(value.note)
        self.note.setWordWrap(True)
        self.note.setVisible(bool(value.note))
        self.heatmap = TensorHeatmap(value)
        if value.is_tensor and value.values is None and value.shape:
            self.describe.setText(self.describe.text() + "  (too large to draw)")
        text = QVBoxLayout()
        text.setSpacing(1)
        text.addWidget(self.name)
        text.addWidget(self.describe)
        text.addWidget(self.note)
        text.addStretch(1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 3, 4, 3)
        layout.addLayout(text, 1)
        layout.addWidget(self.heatmap, 0, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignRight)

    def text(self) -> str:
        parts = [self.name.text(), self.describe.text()]
        if self.value.note:
            parts.append(f"({self.value.note})")
        return " ".join(parts)


def _describe(value: Value) -> str:
    if value.kind == "tensor":
        text = value.describe()
        if value.minimum is not None and value.shape and math.prod(value.shape) > 1:
            text += f"   min {_number(value.minimum)}, max {_number(value.maximum)}"
        elif value.minimum is not None:
            text += f"   = {_number(value.minimum)}"
        if not value.finite:
            text += "   contains NaN/Inf"
        return text
    if value.kind == "object":
        return f"= {value.text}   ({value.type_name})" if value.type_name else f"= {value.text}"
    return value.describe()


class InspectorView(QWidget):
    """Draws one Inspection; ``rerunRequested`` asks for a new one."""

    rerunRequested = Signal()

    SECTIONS = (("received", "① What backward received (grad_outputs, one per output of forward)"),
                ("saved", "② What forward left on ctx"),
                ("returned", "③ What backward returned (one gradient per input of forward)"))

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.inspection: Inspection | None = None
        #: an inspection that arrived while the view was hidden, drawn when it is shown
        self._pending: Inspection | None = None
        self._dark = False
        self._rows: dict[str, list[_ValueRow]] = {key: [] for key, _ in self.SECTIONS}
        # whole or not at all where the buttons leave too little room: the tab names it too
        self.title = ElidedLabel("Backward inspector", mode=None)
        self.window_button = QPushButton("Own window")
        self.window_button.setToolTip("Open the inspector in its own window (as large as you "
                                      "like); close that window to put it back")
        self.run_button = QPushButton("Run again")
        self.run_button.setToolTip("One more forward + backward at the current inputs")
        self.run_button.clicked.connect(self.rerunRequested)
        self.context = QLabel()
        self.context.setWordWrap(True)
        self.context.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.state = QLabel()
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.surprises = QLabel()
        self.surprises.setWordWrap(True)
        self.surprises.setTextFormat(Qt.TextFormat.RichText)
        self.surprises.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.headings: dict[str, QLabel] = {}
        self._boxes: dict[str, QVBoxLayout] = {}

        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 4, 0)
        body_layout.addWidget(self.context)
        body_layout.addWidget(self.state)
        body_layout.addWidget(self.surprises)
        for key, heading in self.SECTIONS:
            label = QLabel(heading)
            label.setWordWrap(True)
            self.headings[key] = label
            body_layout.addWidget(label)
            box = QVBoxLayout()
            box.setSpacing(0)
            self._boxes[key] = box
            body_layout.addLayout(box)
        body_layout.addStretch(1)
        self.scroll = QScrollArea(widgetResizable=True)
        self.scroll.setWidget(body)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.window_button)
        top.addWidget(self.run_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addLayout(top)
        layout.addWidget(self.scroll, 1)
        self.apply_font(self.font())
        self.show_waiting("Open a Function: the inspector runs one forward + backward at its "
                          "inputs.")

    # ------------------------------------------------------------------ content

    def show_waiting(self, text: str = "Running forward + backward…") -> None:
        self.state.setText(text)
        self.state.setStyleSheet("")
        self.state.show()

    def reset(self, text: str) -> None:
        """Forget the last inspection (another Function is coming) and say so."""
        self.inspection = self._pending = None
        self._clear()
        self.context.clear()
        self.show_waiting(text)

    def show_failure(self, exc: BaseException) -> None:
        """forward failed (or the call was stopped): nothing to inspect."""
        from customgrad.checking.inspector import ERROR

        self.inspection = self._pending = None
        self._clear()
        where = getattr(exc, "file", None)
        line = getattr(exc, "line", None)
        text = str(exc) or type(exc).__name__
        if where:
            text += f"\n{where}:{line}" if line else f"\n{where}"
        self._set_state(f"✘ {text}", ERROR)
        self.context.clear()

    def show_inspection(self, inspection: Inspection) -> None:
        """Show ``inspection``. Its value rows (the costly part: 10 to 15 ms of widgets) are
        built only once the view is shown: while another side tab is in front they would
        land in the middle of a run or a comparison, for a tab nobody is looking at."""
        from customgrad.checking.inspector import ERROR, WARNING, shape_text

        self.inspection = ins = inspection
        self._clear()
        args = ", ".join(f"{v.name} {shape_text(v.shape)}" if v.is_tensor else
                         f"{v.name} = {v.text}" if v.kind == "object" else f"{v.name} = None"
                         for v in ins.inputs)
        outs = ", ".join(shape_text(v.shape) for v in ins.outputs)
        self.context.setText(f"{ins.function_name}.apply({args}) → {outs}\n"
                             f"grad_outputs: random, drawn with seed {ins.seed}")
        if ins.error is not None:
            where = f"\n{ins.error.file}:{ins.error.line}" if ins.error.file else ""
            self._set_state(f"✘ backward failed: {ins.error}{where}", ERROR)
        elif not ins.received:
            self._set_state(" ".join(ins.notes) or "backward is not called here.", WARNING)
        else:
            self.state.hide()
        self._show_surprises()
        self._pending = ins
        if self.isVisible():
            self._draw_pending()

    @property
    def rows(self) -> dict[str, list[_ValueRow]]:
        """The value rows of each section (built first if they are still pending)."""
        self._draw_pending()
        return self._rows

    def showEvent(self, event) -> None:
        self._draw_pending()
        super().showEvent(event)

    def _draw_pending(self) -> None:
        from customgrad.checking.inspector import Value

        if self._pending is None:
            return
        ins, self._pending = self._pending, None
        for v in ins.received:
            self._add("received", v)
        for v in ins.saved:
            self._add("saved", v, f"ctx.{v.name}")
        for v in ins.ctx_attributes.values():
            self._add("saved", v)
        if ins.needs_input_grad:
            flags = ", ".join(f"{p}: {b}" for p, b in zip(ins.params, ins.needs_input_grad))
            self._add("saved", Value("ctx.needs_input_grad", "object",
                                     text=str(ins.needs_input_grad), note=flags))
        if not self._rows["saved"] and ins.received:
            self._add_text("saved", "nothing: no saved_tensors and no attributes on ctx")
        for v in ins.returned:
            self._add("returned", v)
        if ins.error is not None and not ins.returned:
            self._add_text("returned", "nothing: backward raised (see above)")

    def _set_state(self, text: str, severity: str) -> None:
        light, dark = _SEVERITY[severity]
        self.state.setText(text)
        self.state.setStyleSheet(f"color: {dark if self._dark else light};")
        self.state.show()

    def _show_surprises(self) -> None:
        ins = self.inspection
        if ins is None or not ins.received:
            self.surprises.hide()
            return
        items = []
        for s in ins.surprises:
            light, dark = _SEVERITY.get(s.severity, _SEVERITY["note"])
            colour = dark if self._dark else light
            items.append(f"<p style='color:{colour}; margin:2px 0'>{_SYMBOL.get(s.severity, '')} "
                         f"{html.escape(s.message)}</p>")
        if not items and ins.error is None:
            light, dark = ("#1b7a36", "#7bd88f")
            items.append(f"<p style='color:{dark if self._dark else light}'>✔ No surprises: every "
                         "gradient has its input's shape, dtype and device, and all values are "
                         "finite.</p>")
        self.surprises.setText("".join(items))
        self.surprises.setVisible(bool(items))

    def _add(self, key: str, value: Value, name: str | None = None) -> None:
        row = _ValueRow(value, name)
        row.heatmap.apply_theme(self._dark)
        self._style_row(row)
        self._rows[key].append(row)
        self._boxes[key].addWidget(row)
        if self.isVisible():  # drawn from showEvent: show it now, not a pass later
            row.show()

    def _add_text(self, key: str, text: str) -> None:
        label = QLabel(text)
        label.setContentsMargins(12, 2, 2, 2)
        label.setWordWrap(True)
        self._boxes[key].addWidget(label)
        if self.isVisible():
            label.show()

    def _clear(self) -> None:
        for key, box in self._boxes.items():
            while box.count():
                item = box.takeAt(0)
                if item.widget() is not None:
                    item.widget().deleteLater()
            self._rows[key] = []
        self.surprises.clear()
        self.surprises.hide()

    def text(self) -> str:
        """Everything shown, as plain text (for tests and copy-paste)."""
        self._draw_pending()
        lines = [self.title.text(), self.context.text()]
        if self.state.isVisibleTo(self):
            lines.append(self.state.text())
        if self.inspection is not None:
            lines.extend(f"{s.severity}: {s.message}" for s in self.inspection.surprises)
        for key, heading in self.SECTIONS:
            lines.append(heading)
            lines.extend("  " + row.text() for row in self._rows[key])
        return "\n".join(lines)

    # ------------------------------------------------------------------ look

    def apply_font(self, font: QFont) -> None:
        self.setFont(font)
        self.title.setFont(scaled(font, 1.25, bold=True))
        heading = scaled(font, 1.05, bold=True)
        for label in self.headings.values():
            label.setFont(heading)
        for rows in self._rows.values():
            for row in rows:
                self._style_row(row)

    def _style_row(self, row: _ValueRow) -> None:
        font = self.font()
        row.name.setFont(scaled(font, bold=True))
        row.describe.setFont(font)
        row.note.setFont(scaled(font, italic=True))
        light, dark = _SEVERITY["note"]
        row.note.setStyleSheet(f"color: {dark if self._dark else light};")

    def apply_theme(self, dark: bool) -> None:
        self._dark = bool(dark)
        for rows in self._rows.values():
            for row in rows:
                row.heatmap.apply_theme(self._dark)
                self._style_row(row)
        self._show_surprises()
