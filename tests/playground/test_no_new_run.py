"""A tolerance typed in the tolerance bar re-checks; it starts no run (trial #16: "run 2"
became "run 3" in the loss legend after atol and rtol were changed, no step taken). The run
came from the field left on the way: an input's init, its default ("normal") committed as
it was, was stored as a change, and a change of the inputs starts a new run."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

TIMEOUT = 60_000


def test_leaving_an_unchanged_init_for_a_tolerance_starts_no_run(qtbot, window):
    runs: list[str] = []
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.session.set_target("killhead")
    window.session.runReset.connect(runs.append)
    problem = window.session.problem
    init = next(w for name, w in window.inputs.fields.items() if name.endswith(".init"))
    default = init.currentText()
    assert window.session.settings.init == {}  # the default: no setting of its own
    window.jacobian.set_details_shown(True)
    init.lineEdit().setFocus()
    init.lineEdit().editingFinished.emit()  # as leaving it does (offscreen: no focus-out)
    atol = window.jacobian.tolerance_row.atol_edit
    QTest.mouseClick(atol, Qt.MouseButton.LeftButton)
    atol.selectAll()
    QTest.keyClicks(atol, "1e-7")
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as checked:
        QTest.keyClick(atol, Qt.Key.Key_Return)
    assert checked.args[0].atol == 1e-7  # re-checked at the new tolerance
    assert runs == [] and window.session.problem is problem  # the run goes on
    assert init.currentText() == default
    # a real change of that input still starts a new run
    init.setCurrentText("zeros")
    with qtbot.waitSignal(window.session.runReset, timeout=TIMEOUT):
        init.lineEdit().editingFinished.emit()
