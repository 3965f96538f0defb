"""The session façade and its parts (target and build, loop, checks), without a window."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("pytestqt")

from customgrad import loader
from playground.state.session import Session

TIMEOUT = 20_000


def test_a_session_changes_no_global_and_loads_with_the_runner_it_was_given(qtbot, tmp_path):
    """How a user module's top level runs is the session's ``run_code``; making a session
    no longer replaces customgrad.loader.run_module_code for the whole process."""
    before = loader.run_module_code
    ran = []

    def run_code(run, label, origin):
        ran.append((label, origin[0]))
        return run()

    path = tmp_path / "tripled.py"
    path.write_text(textwrap.dedent("""
        import torch

        class Tripled(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x: "3"):
                return 3 * x

            @staticmethod
            def backward(ctx, grad):
                return 3 * grad
        """))
    session = Session(run_code=run_code)
    try:
        assert loader.run_module_code is before
        with qtbot.waitSignal(session.jacobianReady, timeout=TIMEOUT) as ready:
            session.set_target(f"{path}:Tripled")
        assert ready.args[0].passed
        assert ran == [("tripled.py", "file")]
    finally:
        session.shutdown(wait=0.5)
    assert loader.run_module_code is before
