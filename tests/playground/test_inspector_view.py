"""The backward inspector's view in the window and its worker (the engine:
tests/customgrad/test_inspector.py)."""

from __future__ import annotations

import pytest
import torch

from customgrad.checking.inspector import Inspection
from customgrad.errors import Cancelled
from tests.data import byof_errors as bad

pytest.importorskip("pytestqt")

TIMEOUT = 20_000


def inspect_target(qtbot, win, name):
    with qtbot.waitSignal(win.byof.runner.finished, timeout=TIMEOUT) as blocker:
        win.session.set_target(name)
    return blocker.args[0]


def test_view_shows_killhead(qtbot, window):
    inspect_target(qtbot, window, "killhead")
    view = window.byof.inspector
    window.byof.actions["show_inspector"].trigger()
    assert window.side_tabs.currentWidget() is view
    received = view.rows["received"]
    assert [r.name.text() for r in received] == ["grad_output"]
    assert received[0].describe.text().startswith("[3, 8] float32")
    assert received[0].heatmap.isVisibleTo(view)
    assert received[0].heatmap.slices.shape == (1, 3, 8)
    saved = {r.name.text(): r.describe.text() for r in view.rows["saved"]}
    assert saved["ctx.n"].startswith("= 2")
    assert saved["ctx.needs_input_grad"] == "= (True, False)"
    returned = view.rows["returned"]
    assert [r.describe.text().split("   ")[0] for r in returned] == ["[3, 8] float32", "None"]
    assert "No surprises" in view.surprises.text()
    tabs = window.side_tabs
    assert tabs.tabText(tabs.indexOf(view)) == "Inspector"


def test_view_builds_its_rows_only_once_shown(qtbot, window):
    # an inspection lands after every comparison, in the middle of a run: building its rows
    # (10 to 15 ms) waits until the Inspector tab is in front
    from playground.views.inspector_view import _ValueRow

    with qtbot.waitExposed(window):
        pass
    view = window.byof.inspector
    assert not view.isVisible()
    inspect_target(qtbot, window, "killhead")
    assert view.findChildren(_ValueRow) == []
    assert view.context.text().startswith("KillHead.apply(input [3, 8]")  # the cheap parts at once
    window.byof.actions["show_inspector"].trigger()
    rows = view.findChildren(_ValueRow)
    assert len(rows) == 5 and all(row.isVisible() for row in rows)  # shown, not a pass later
    # once shown, a new inspection is drawn at once
    inspect_target(qtbot, window, "mulconstant")
    assert [r.name.text() for r in view._rows["received"]] == ["grad_output"]


def test_view_shows_functional_linear_summing(qtbot, window):
    inspect_target(qtbot, window, "functional_linear")
    view = window.byof.inspector
    weight = view.rows["returned"][1]
    assert weight.name.text() == "grad for weight"
    assert weight.describe.text().startswith("[3, 5, 4] float32")
    assert weight.note.text() == "autograd sums it to [5, 4]"
    assert len(weight.heatmap.pieces) == 3  # three 5x4 blocks side by side
    assert weight.heatmap.element_text((2, 4, 3)).startswith("grad for weight[2, 4, 3] = ")
    assert "[3, 5, 4] gradient for weight; autograd sums it to weight's [5, 4]" in view.text()


def test_view_heatmap_hover_index(qtbot, window):
    from PySide6.QtCore import QPoint

    inspect_target(qtbot, window, "functional_linear")
    heatmap = window.byof.inspector.rows["returned"][1].heatmap
    _, rect = heatmap.pieces[1]
    index = heatmap.index_at(rect.topLeft())
    assert index == (1, 0, 0)
    assert heatmap.index_at(rect.bottomRight()) == (1, 4, 3)
    assert heatmap.index_at(QPoint(rect.right() + 3, rect.center().y())) is None  # the gap


def test_view_updates_with_new_inputs_and_rerun(qtbot, window):
    inspect_target(qtbot, window, "killhead")
    s = window.session
    with qtbot.waitSignal(window.byof.runner.finished, timeout=TIMEOUT) as blocker:
        s.update(shapes={"input": "4x6"})
    assert blocker.args[0].received[0].shape == (4, 6)
    with qtbot.waitSignal(window.byof.runner.finished, timeout=TIMEOUT):
        window.byof.inspector.run_button.click()


def test_view_shows_backward_failure(qtbot, window):
    from pathlib import Path

    path = Path(bad.__file__)
    with qtbot.waitSignal(window.byof.runner.finished, timeout=TIMEOUT):
        window.session.set_target(f"{path}:BackwardRaises")
    view = window.byof.inspector
    assert "backward failed" in view.state.text() and f"{path}:" in view.state.text()
    assert view.rows["received"] and not view.rows["returned"]
    tabs = window.side_tabs
    assert tabs.tabText(tabs.indexOf(view)) == "Inspector ⚠"


def test_view_shows_forward_failure(qtbot, window):
    from pathlib import Path

    path = Path(bad.__file__)
    runner = window.byof.runner
    inspect_target(qtbot, window, "killhead")
    with qtbot.waitSignal(runner.failed, timeout=TIMEOUT):
        runner.run(bad.ForwardRaises, [torch.randn(2, 2)])
    assert "forward is broken" in window.byof.inspector.state.text()
    assert str(path) in window.byof.inspector.state.text()


def test_runner_stops_a_hanging_backward(qtbot):
    from playground.workers.inspector import InspectorRunner

    class Hangs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            while True:
                pass

    runner = InspectorRunner(timeout=0.3)
    with qtbot.waitSignal(runner.failed, timeout=TIMEOUT) as blocker:
        runner.run(Hangs, [torch.randn(2)])
    exc = blocker.args[0]
    assert isinstance(exc, Cancelled) and "longer than 0.3 s" in str(exc)


@pytest.mark.parametrize("isolate", [True, False])
def test_the_inspector_runs_where_the_policy_it_is_given_says(qtbot, monkeypatch,
                                                               isolate):
    """Whether the inspection runs in a worker process is the answer of jobs.isolated, for
    the policy the call is given: the runner imported jobs.ISOLATE by value, so switching
    isolation (as the tests and the bench do) never reached it."""
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings
    from playground.workers import inspector, jobs
    from playground.workers.policy import JobPolicy

    made = []

    def recording(work, *args, **kwargs):
        made.append(work.__name__)
        return jobs.create_worker(work, *args, **kwargs)

    monkeypatch.setattr(inspector, "create_worker", recording)
    problem = build(Settings(target="killhead"))
    runner = inspector.InspectorRunner()
    with qtbot.waitSignal(runner.finished, timeout=TIMEOUT) as blocker:
        runner.run(problem.function, problem.args, problem=problem,
                   policy=JobPolicy(isolate=isolate))
    assert isinstance(blocker.args[0], Inspection)
    assert made == (["_work_isolated"] if isolate else ["_work"])


def test_fonts_and_themes(qtbot, window):
    inspect_target(qtbot, window, "functional_linear")
    view = window.byof.inspector
    font = view.font()
    font.setPointSizeF(font.pointSizeF() * 2)
    for widget in (view, window.byof.editor, window.byof.restore_offer):
        widget.apply_font(font)
        widget.apply_theme(True)
    assert view.title.font().pointSizeF() > font.pointSizeF()
    assert view.rows["returned"][0].name.font().pointSizeF() == font.pointSizeF()
    assert window.byof.editor.code.style_name == "monokai"
    assert window.byof.editor.code.font().pointSizeF() == font.pointSizeF()
    view.apply_theme(False)
    window.byof.editor.apply_theme(False)
    assert window.byof.editor.code.style_name == "default"
