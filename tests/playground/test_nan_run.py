"""Play pauses at the first NaN or Inf loss, as `customgrad run` stops there (trial3 S9: it
ran on to the step limit, each step NaN, and said nothing)."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("pytestqt")

#: the whole window, a check and a run of the loop in its worker process
pytestmark = pytest.mark.slow

TIMEOUT = 60_000

BLOWS_UP = textwrap.dedent('''
    import torch
    from torch.autograd import Function


    class BlowsUp(Function):
        """exp(x): its loss overflows to inf after a few steps of a big learning rate."""

        @staticmethod
        def forward(ctx, x):
            y = torch.exp(x * 50)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * 50 * y
''')


def _open(qtbot, window, tmp_path):
    path = tmp_path / "blows_up.py"
    path.write_text(BLOWS_UP)
    s = window.session
    with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT):
        s.set_target(f"{path}:BlowsUp")
    said: list[str] = []
    s.runNotice.connect(said.append)
    losses: list[float] = []
    s.batchReady.connect(lambda batch: losses.extend(float(v) for v in batch.losses))
    return s, said, losses


def _first_nonfinite(losses: list[float]) -> int:
    return next(k for k, v in enumerate(losses) if v != v or abs(v) == float("inf"))


def test_play_pauses_at_the_first_nonfinite_loss_and_says_so(qtbot, window, tmp_path):
    s, said, losses = _open(qtbot, window, tmp_path)
    s.set_rate(10)  # (a step a batch: at full speed one batch can hold the whole run)
    s.play()
    qtbot.waitUntil(lambda: any(w.startswith("The loss is ") for w in said), timeout=TIMEOUT)
    qtbot.waitUntil(lambda: not s.running, timeout=TIMEOUT)
    words = next(w for w in said if w.startswith("The loss is "))
    first = _first_nonfinite(losses)
    assert words.startswith(f"The loss is {losses[first]} at step {first + 1}: Play paused "
                            "there (every step after it is"), (words, losses[:first + 1])
    assert s.step < s.settings.steps  # not run on to the limit
    assert sum(w.startswith("The loss is ") for w in said) == 1


def test_a_run_made_in_one_go_says_where_its_loss_first_went_nonfinite(qtbot, window,
                                                                       tmp_path):
    """(--screenshot --steps N, or a run at full speed whose one batch holds every step)"""
    s, said, losses = _open(qtbot, window, tmp_path)
    s.run_steps(30)
    qtbot.waitUntil(lambda: len(losses) >= 30, timeout=TIMEOUT)
    first = _first_nonfinite(losses)
    words = [w for w in said if w.startswith("The loss is ")]
    assert words == [w for w in words if w.startswith(
        f"The loss is {losses[first]} at step {first + 1} (every step after it is")]
    assert len(words) == 1
