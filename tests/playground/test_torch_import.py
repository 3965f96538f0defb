"""torch in the window's process arrives after the first paint
(:mod:`playground.workers.torch_import`): what waits for it runs once it has, in order, and
a Function chosen meanwhile opens then (its loader needs torch), the window painting on.
torch is imported in this test process already: the waiting is made by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from playground.main_window import LOADING_TORCH
from playground.workers import torch_import


@pytest.fixture
def loading(monkeypatch):
    """torch_import as it is while the helper thread imports torch."""
    monkeypatch.setitem(torch_import._state, "pending", True)
    monkeypatch.setitem(torch_import._state, "started", True)
    monkeypatch.setattr(torch_import, "_waiting", [])


def test_what_waits_for_torch_runs_once_it_arrives_in_order(loading):
    order = []
    torch_import.when_arrived(lambda: order.append("open"))
    torch_import.when_arrived(lambda: order.append("release"))
    assert not torch_import.arrived() and order == []
    torch_import._arrive()
    assert torch_import.arrived() and order == ["open", "release"]
    torch_import.when_arrived(lambda: order.append("later"))  # arrived: at once
    assert order == ["open", "release", "later"]


def test_a_function_picked_while_torch_loads_opens_once_it_arrives(window, loading):
    """The window says what it waits for; a click in the picker opens nothing yet (it would
    wait for torch on the GUI thread), then opens the Function, and the form its inputs."""
    window.show_torch_loading()
    assert window.status.currentMessage() == LOADING_TORCH
    assert window.jacobian.banner.verdict_label.text() == "Loading torch…"
    window.picker.picked.emit("sigmoid")
    assert window.session.target is None
    torch_import._arrive()
    assert window.session.target is not None and window.session.target.spec == "sigmoid"
    assert window.status.currentMessage() != LOADING_TORCH


def test_without_the_app_nothing_waits_for_torch():
    """A window made without app.main (a test, playground.show from a notebook) opens its
    Function at once, torch imported by the engine where it needs it: nothing said that
    torch comes later."""
    assert torch_import.arrived()
    ran = []
    torch_import.when_arrived(lambda: ran.append(True))
    assert ran == [True]

