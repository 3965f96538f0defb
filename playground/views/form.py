"""Inputs form generated from the Function's specs, plus the loop settings.

Every field validates as typed and shows the reason at the field; committed values go into the
session's one Settings object.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from customgrad.defaults import DTYPE_NAMES, LOSSES, OPTIMIZERS
from customgrad.errors import SpecError
from playground.state.session_files import FORM_RANGES
from playground.views.fields import CheckedField, setting_number

if TYPE_CHECKING:
    from customgrad.function.inputs import ConstSpec, TensorSpec

INITS = ("normal", "uniform(-1,1)", "zeros", "ones", "randint(0,3)")
#: the trained and grad boxes' tooltips (an int64 input's say why they are greyed)
TIPS = {"trained": "Updated by the gradient-descent loop",
        "grad": "Differentiated by the Jacobian check, as an input that requires grad is by "
                "gradcheck (off: a constant tensor, such as fixed filter taps)"}


class SeedBox(QSpinBox):
    """The seed: as narrow as six digits need (Regenerate draws them below 100,000), not the
    ten of the largest seed, which still fits when typed (it scrolls in the field)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        policy = self.sizePolicy()  # a spin box never shrinks below its size hint: this may
        policy.setHorizontalPolicy(QSizePolicy.Policy.Preferred)
        self.setSizePolicy(policy)

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(hint.width() - self.fontMetrics().horizontalAdvance("0000"), hint.height())


class InputsForm(QWidget):
    """Shape/init/trained/grad per tensor input, an editor per constant, dtype and device."""

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        self.fields: dict[str, object] = {}
        self._structure = None
        self.box = QGroupBox("Inputs")
        self.rows = QFormLayout(self.box)
        self.rows.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.dtype = QComboBox()
        self.dtype.addItems(list(DTYPE_NAMES))
        self.device = QComboBox()
        self.device.addItem("cpu")
        if "torch" in sys.modules:  # else once torch has arrived (the main window asks)
            self.show_devices()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.box)
        self.dtype.currentTextChanged.connect(lambda t: self.session.update(dtype=t))
        self.device.currentTextChanged.connect(lambda t: self.session.update(device=t))
        session.specsChanged.connect(self.show_specs)
        session.settingsChanged.connect(self._sync_settings)
        self._sync_settings(session.settings)

    def show_devices(self) -> None:
        """Every device torch has here (cpu only until torch has arrived: it says which)."""
        from customgrad.function.inputs import available_devices

        for device in available_devices():
            if self.device.findText(device) < 0:
                self.device.addItem(device)
        self._sync_settings(self.session.settings)

    def _sync_settings(self, settings) -> None:
        dtype = settings.dtype  # one not supported (a session's float16) stays as it is
        target = getattr(self.session, "target", None)
        if dtype in DTYPE_NAMES and target is not None:
            # the dtype the inputs are drawn in: a complex gallery entry's complex one
            from customgrad.problems.problem import drawn_dtype

            dtype = str(drawn_dtype(dtype, target)).replace("torch.", "")
        for combo, value in ((self.dtype, dtype), (self.device, settings.device)):
            if combo.currentText() != value and combo.findText(value) >= 0:
                combo.blockSignals(True)
                combo.setCurrentText(value)
                combo.blockSignals(False)
        for key, box in self.fields.items():
            name, _, part = key.rpartition(".")
            on = settings.differentiate.get(name, True)
            if part == "grad" and box.isChecked() != on:  # a session opened
                box.blockSignals(True)
                box.setChecked(on)
                box.blockSignals(False)

    def forget_typed(self) -> None:
        """Rebuild the rows from the next specs (a session replaces every setting)."""
        self._structure = None

    def show_specs(self, specs) -> None:
        """Rebuild the rows when the parameters or the Function change; otherwise keep what
        the user typed. (Another Function with the same parameter names kept the last one's
        rows: "z 3x8" beside a verdict on the new one's 3x4 inputs.)"""
        from customgrad.function.inputs import TensorSpec

        structure = (self.session.settings.target,
                     tuple((s.name, type(s).__name__) for s in specs))
        if structure == self._structure:
            return
        self._structure = structure
        for combo in (self.dtype, self.device):  # kept: removeRow would delete them
            row, _role = self.rows.getWidgetPosition(combo)
            if row >= 0:
                label = self.rows.takeRow(row).labelItem
                if label is not None and label.widget() is not None:
                    label.widget().hide()
                    label.widget().deleteLater()
        while self.rows.rowCount():
            self.rows.removeRow(0)
        self.fields.clear()
        for spec in specs:
            if isinstance(spec, TensorSpec):
                self._tensor_row(spec)
            else:
                self._const_row(spec)
        self.rows.addRow("dtype", self.dtype)
        self.rows.addRow("device", self.device)

    def _tensor_row(self, spec: TensorSpec) -> None:
        from customgrad.function.inputs import GIVEN, format_shape, parse_shape

        name = spec.name
        shape = CheckedField(format_shape(spec.shape), lambda t, n=name: parse_shape(t, n),
                             "Shape: whole numbers joined by x, e.g. 3x8 or 5")
        shape.committed.connect(lambda _v, n=name, f=shape: self._set("shapes", n, f.edit.text()))
        init = QComboBox(editable=True)
        init.addItems(INITS)
        tip = ("How the seed draws it: normal, uniform(a,b), zeros, ones, or randint(a,b) "
               "(whole numbers a to b-1, as an int64 tensor: indices)")
        if name in self.session.settings.given:  # playground.show's tensor: back to it
            init.addItem(GIVEN)
            tip += "; given: the tensor you passed to playground.show"
        init.setCurrentText(spec.init)
        init.lineEdit().setCursorPosition(0)  # a longer choice reads from its start
        init.setToolTip(tip)
        init.lineEdit().editingFinished.connect(lambda n=name, c=init: self._set_init(n, c))
        init.activated.connect(lambda _i, n=name, c=init: self._set_init(n, c))
        trained = QCheckBox("trained")
        trained.setChecked(spec.trained)
        trained.setToolTip(TIPS["trained"])
        trained.toggled.connect(lambda on, n=name: self._set("trained", n, bool(on)))
        grad = QCheckBox("grad")
        grad.setChecked(self.session.settings.differentiate.get(name, True))
        grad.setToolTip(TIPS["grad"])
        grad.toggled.connect(lambda on, n=name: self._set_differentiate(n, bool(on)))
        row = QWidget()
        column = QVBoxLayout(row)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(1)
        line = QHBoxLayout()
        column.addLayout(line)
        init.setMinimumContentsLength(7)  # "normal" whole; a longer choice scrolls
        init.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        line.addWidget(shape, 1)
        line.addWidget(init, 2)
        line.addWidget(trained)
        line.addWidget(grad)
        # why the shape is wrong, under the whole row: the shape's own column is a few
        # letters wide, and a message wrapped there pushed "trained" out of the pane
        shape.layout().removeWidget(shape.reason)
        column.addWidget(shape.reason)
        self.rows.addRow(QLabel(f"<b>{name}</b>"), row)
        self.fields[name] = shape
        self.fields[f"{name}.init"] = init
        self.fields[f"{name}.trained"] = trained
        self.fields[f"{name}.grad"] = grad
        self._integer_row(name, spec.init)

    def _const_row(self, spec: ConstSpec) -> None:
        from customgrad.function.inputs import parse_const

        name, value = spec.name, spec.value
        if isinstance(value, bool):
            box = QCheckBox()
            box.setChecked(value)
            box.toggled.connect(lambda on, n=name: self._set("constants", n, bool(on)))
            self.rows.addRow(name, box)
            self.fields[name] = box
            return
        kind = "any" if value is None else type(value).__name__  # None takes any constant
        tip = f"Constant ({kind})" + (f"; forward's default: {spec.defaults[0]!r}"
                                      if spec.defaults else "")
        field = CheckedField(str(value), lambda t, v=value, n=name: parse_const(t, v, n), tip)
        field.committed.connect(lambda v, n=name: self._set("constants", n, v))
        self.rows.addRow(f"{name} ({kind})", field)
        self.fields[name] = field

    def unfinished(self) -> tuple[QWidget, str] | None:
        """The first field whose typed text is not a valid value, and why; None if none (no
        fields: no Function open yet, torch perhaps still loading)."""
        for name, field in self.fields.items():
            if isinstance(field, CheckedField) and not field.valid:
                return field.unfinished()
            if isinstance(field, QComboBox) and field.isEditable():
                from customgrad.function.inputs import parse_init

                try:
                    parse_init(field.currentText(), name.removesuffix(".init"))
                except SpecError as exc:
                    return field, str(exc)
        return None

    def _set_init(self, name: str, combo: QComboBox) -> None:
        from customgrad.function.inputs import parse_init

        try:
            value = parse_init(combo.currentText(), name)
        except SpecError as exc:
            combo.setStyleSheet("QComboBox { border: 2px solid #d62728; }")
            combo.setToolTip(str(exc))
            return
        combo.setStyleSheet("")
        if not combo.lineEdit().hasFocus():
            combo.lineEdit().setCursorPosition(0)  # "uniform(…", not "niform(-0.5,0.5)"
        self._integer_row(name, value)
        if self.session.settings.init.get(name) != value:
            self._set("init", name, value)

    def _integer_row(self, name: str, init: str) -> None:
        """An int64 tensor (randint) is neither trained nor differentiated: its boxes are
        greyed (ticked, they said otherwise)."""
        from customgrad.function.inputs import is_integer_init

        integer = is_integer_init(init)
        for part in ("trained", "grad"):
            box = self.fields.get(f"{name}.{part}")
            if box is not None:
                box.setEnabled(not integer)
                box.setToolTip(f"{name} is drawn as an int64 tensor (randint): it is neither "
                               "trained nor differentiated" if integer else TIPS[part])

    def _set_differentiate(self, name: str, on: bool) -> None:
        """Off: ``name`` is not differentiated; on: as by default (differentiated where
        backward returns its gradient)."""
        current = dict(self.session.settings.differentiate)
        if on:
            current.pop(name, None)
        else:
            current[name] = False
        self.session.update(differentiate=current)

    def _set(self, table: str, name: str, value) -> None:
        current = dict(getattr(self.session.settings, table))
        current[name] = value
        self.session.update(**{table: current})


class LoopForm(QGroupBox):
    """Learning rate, steps, loss, optimizer, seed, and the periodic Jacobian check."""

    def __init__(self, session, parent=None):
        super().__init__("Gradient descent", parent)
        self.session = session
        s = session.settings
        self.lr = CheckedField(f"{s.lr:g}", setting_number("lr"),
                               "Learning rate eta (x <- x - eta*grad); "
                               "changing it mid-run keeps the run going")
        self.lr.committed.connect(lambda v: self.session.update(lr=v))
        self.steps = QSpinBox(minimum=0, maximum=FORM_RANGES["steps"][1], value=s.steps)
        self.steps.setSpecialValueText("no limit")
        self.steps.setToolTip("Play pauses after this many steps (0: no limit)")
        self.steps.editingFinished.connect(
            lambda: self.session.update(steps=self.steps.value()))
        self.loss = QComboBox()
        self.loss.addItems(LOSSES)
        self.loss.setCurrentText(s.loss)
        self.loss.currentTextChanged.connect(lambda t: self.session.update(loss=t))
        self.optimizer = QComboBox()
        self.optimizer.addItems(OPTIMIZERS)
        self.optimizer.setCurrentText(s.optimizer)
        self.optimizer.currentTextChanged.connect(lambda t: self.session.update(optimizer=t))
        self.seed = SeedBox(minimum=0, maximum=FORM_RANGES["seed"][1], value=s.seed)
        self.seed.setToolTip("One seed draws the target and every input: same seed, same run")
        self.seed.editingFinished.connect(self._seed_edited)
        self.regenerate = QPushButton("Regenerate")
        self.regenerate.setToolTip("Draw a new seed")
        self.regenerate.clicked.connect(self._regenerate)
        seed_row = QWidget()
        line = QHBoxLayout(seed_row)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(self.seed, 1)
        line.addWidget(self.regenerate)
        self.check_every = QSpinBox(minimum=0, maximum=FORM_RANGES["check_every"][1],
                                    value=s.check_every)
        self.check_every.setSpecialValueText("off")
        self.check_every.setToolTip("Recompute the Jacobian comparison every K steps of a run")
        self.check_every.editingFinished.connect(
            lambda: self.session.update(check_every=self.check_every.value()))
        form = QFormLayout(self)
        form.addRow("learning rate", self.lr)
        form.addRow("steps", self.steps)
        form.addRow("loss", self.loss)
        form.addRow("optimizer", self.optimizer)
        form.addRow("seed", seed_row)
        form.addRow("check every", self.check_every)
        for i in range(form.rowCount()):
            label = form.itemAt(i, QFormLayout.ItemRole.LabelRole)
            if label is not None and label.widget() is not None:
                label.widget().setAlignment(Qt.AlignmentFlag.AlignRight
                                            | Qt.AlignmentFlag.AlignVCenter)
        session.settingsChanged.connect(self._sync)

    def unfinished(self) -> tuple[QWidget, str] | None:
        """The learning rate's field and why, while its typed text is not valid."""
        return self.lr.unfinished()

    def _seed_edited(self) -> None:
        if self.seed.value() != self.session.settings.seed:
            self.session.update(seed=self.seed.value())

    def _regenerate(self) -> None:
        import random

        seed = self.seed.value()
        while seed == self.seed.value():  # always a visibly new seed
            seed = random.randrange(0, 100_000)
        self.seed.setValue(seed)
        self._seed_edited()

    def _sync(self, s) -> None:
        for widget, value in ((self.seed, s.seed), (self.steps, s.steps),
                              (self.check_every, s.check_every)):
            if widget.value() != value:
                widget.blockSignals(True)
                widget.setValue(value)
                widget.blockSignals(False)
        for combo, text in ((self.loss, s.loss), (self.optimizer, s.optimizer)):
            if combo.currentText() != text:
                combo.blockSignals(True)
                combo.setCurrentText(text)
                combo.blockSignals(False)
        if self.lr.valid and self.lr.parse(self.lr.edit.text()) != s.lr:
            short = f"{s.lr:g}"  # a session was opened
            self.lr.set_text(short if float(short) == s.lr else repr(s.lr))
