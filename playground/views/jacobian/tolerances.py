"""The Jacobian pane's tolerance bar: "Check at current point" and the eps / atol / rtol /
nondet_tol editors. Each editor checks what is typed with the settings' own rule for that field
(:func:`~playground.views.fields.setting_number`), marks itself and says why when it is not
valid; valid values are committed on Enter or leaving the field."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QSizePolicy, QWidget

from customgrad.checking.jacobian.limits import ATOL, EPS, RTOL
from customgrad.errors import SpecError
from customgrad.problems.settings import Settings
from playground.views.fields import is_narrow, setting_number
from playground.views.fonts import scaled

__all__ = ["ToleranceBar"]

_TIPS = {
    "eps": "The check's eps, its finite-difference step (not a constant of your forward): "
           "(f(x + eps) − f(x − eps)) / 2·eps. Must be > 0.",
    "atol": "Absolute tolerance: entries agree when |a − n| ≤ atol + rtol·|n|.",
    "rtol": "Relative tolerance: entries agree when |a − n| ≤ atol + rtol·|n|.",
    "nondet_tol": "How far two backward calls on the same graph may differ (gradcheck's "
                  "nondet_tol): 0 asks for the same result; a backward summing by atomic adds "
                  "(a GPU) needs a little more, e.g. 1e-10. Must be ≥ 0.",
}
#: the editors, in their order on the bar: the rule's three, then the reentrant check's
_NAMES = ("eps", "atol", "rtol", "nondet_tol")
#: the button's words, and its word where the bar is narrow (1280x720 at 150 %: four editors
#: and "Check at current point" cut each other's words); nondet_tol's label the same
CHECK_TEXT, CHECK_SHORT = "Check at current point", "Check"
NONDET_TEXT, NONDET_SHORT = "nondet_tol", "nondet"
#: the labels on the bar, by editor: the check's eps is "fd eps", told apart from a
#: forward's own eps (a LayerNorm's 1e-5 in the Inputs form read "eps" as it did)
LABELS = {"eps": "fd eps", "atol": "atol", "rtol": "rtol", "nondet_tol": NONDET_TEXT}
#: a pane narrower than this many letters: the short words (the long ones need about 95)
NARROW = 105
_INVALID = "QLineEdit { border: 2px solid #c0261c; background: #fde8e6; color: #5f0b0b; }"


class ToleranceBar(QWidget):
    """Signals: ``tolerancesChanged(eps, atol, rtol)`` when the user commits valid values,
    ``nondetTolChanged(nondet_tol)`` the same for the reentrant check's tolerance,
    ``checkRequested()`` from the button."""

    tolerancesChanged = Signal(float, float, float)
    nondetTolChanged = Signal(float)
    checkRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.check_button = QPushButton(CHECK_TEXT)
        self.check_button.setToolTip("Compare your backward with finite differences at the "
                                     "current inputs")
        self.check_button.clicked.connect(self.checkRequested)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        row.addWidget(self.check_button)
        row.addSpacing(12)
        self.edits: dict[str, QLineEdit] = {}
        self.labels: dict[str, QLabel] = {}
        for name in _NAMES:
            label = QLabel(LABELS[name])
            self.labels[name] = label
            label.setToolTip(_TIPS[name])
            edit = QLineEdit()
            edit.setObjectName(f"tolerance_{name}")
            edit.setToolTip(_TIPS[name])
            edit.setProperty("invalid", False)
            edit.setProperty("tip", _TIPS[name])
            edit.textEdited.connect(self._validate)
            edit.editingFinished.connect(self._commit)
            label.setBuddy(edit)
            row.addWidget(label)
            row.addWidget(edit)
            row.addSpacing(6)
            self.edits[name] = edit
        self.eps_edit, self.atol_edit, self.rtol_edit, self.nondet_tol_edit = self.edits.values()
        self.message = QLabel()
        self.message.setStyleSheet("color: #b3261e;")
        self.message.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        row.addWidget(self.message, 1)
        self._nondet_tol = float(Settings.nondet_tol)
        self.set_tolerances(EPS, ATOL, RTOL)

    def set_tolerances(self, eps: float, atol: float, rtol: float) -> None:
        """Show these tolerances in the editors (emits nothing)."""
        self._tolerances = (float(eps), float(atol), float(rtol))
        self._show_committed()

    def set_nondet_tol(self, nondet_tol: float) -> None:
        """Show this nondet_tol in its editor (emits nothing)."""
        self._nondet_tol = float(nondet_tol)
        self._show_committed()

    def nondet_tol(self) -> float:
        """The last committed (valid) nondet_tol."""
        return self._nondet_tol

    def _show_committed(self) -> None:
        for edit, value in zip(self.edits.values(), (*self._tolerances, self._nondet_tol)):
            edit.setText(repr(value))  # shortest text that reads back as the same float
            self._mark(edit, None)
        self.message.clear()

    def tolerances(self) -> tuple[float, float, float]:
        """The last committed (valid) tolerances."""
        return self._tolerances

    def unfinished(self) -> tuple[QLineEdit, str] | None:
        """The first editor whose typed text is not a valid tolerance, and why; or None."""
        for name, edit in self.edits.items():
            problem = self._parse(name)[1]
            if problem:
                return edit, problem
        return None

    def restyle(self, base: QFont) -> None:
        font = scaled(base, 1.0)
        for widget in (self.message, *self.edits.values()):
            widget.setFont(font)
        self._fit_words()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_words()

    def _fit_words(self) -> None:
        # by the room its pane gives, not by the bar's own width: the drawer it sits in is as
        # wide as its contents ask (the short words would keep it short at any zoom)
        drawer = self.parentWidget()
        pane = drawer.parentWidget() if drawer is not None else None
        short = is_narrow(pane or self, self.font(), NARROW)
        self.check_button.setText(CHECK_SHORT if short else CHECK_TEXT)
        # the button never narrower than its words ("ck at current p"); where the bar is
        # short, the editors give the room ("1e-06" still reads whole in them)
        self.check_button.setMinimumWidth(self.check_button.sizeHint().width())
        self.labels["nondet_tol"].setText(NONDET_SHORT if short else NONDET_TEXT)
        metrics = QFontMetrics(self.eps_edit.font())
        width = metrics.horizontalAdvance("1e-06" if short else "0.0001") + 18
        for edit in self.edits.values():
            edit.setMinimumWidth(width)
            edit.setMaximumWidth(metrics.horizontalAdvance("0.0001") * 2 + 36)

    def _parse(self, name: str) -> tuple[float | None, str]:
        try:
            return setting_number(name)(self.edits[name].text()), ""
        except SpecError as exc:
            return None, str(exc)

    def _validate(self) -> tuple[float, ...] | None:
        values, problems = [], []
        for name, edit in self.edits.items():
            value, problem = self._parse(name)
            self._mark(edit, problem or None)
            values.append(value)
            if problem:
                problems.append(problem)
        self.message.setText(("✘ " + ";  ".join(problems)) if problems else "")
        self.message.setToolTip("\n".join(problems))
        return None if problems else tuple(v for v in values if v is not None)

    def _commit(self) -> None:
        values = self._validate()
        if values is None:
            return
        tolerances, nondet_tol = (values[0], values[1], values[2]), values[3]
        if tolerances != self._tolerances:
            self._tolerances = tolerances
            self.tolerancesChanged.emit(*tolerances)
        if nondet_tol != self._nondet_tol:
            self._nondet_tol = nondet_tol
            self.nondetTolChanged.emit(nondet_tol)

    @staticmethod
    def _mark(edit: QLineEdit, problem: str | None) -> None:
        edit.setProperty("invalid", bool(problem))
        edit.setToolTip(problem or edit.property("tip"))
        edit.setStyleSheet(_INVALID if problem else "")
