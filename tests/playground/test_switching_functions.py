"""Going from one Function to another shows the new one's inputs, in its own kind (trial2):
the form kept the last Function's rows where the parameter names were the same ("z 3x8"
beside a verdict on the lesson's 3x4 inputs), and a complex dtype chosen for one Function
carried into every real lesson after it."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("pytestqt")

TIMEOUT = 30_000

MINE = textwrap.dedent('''
    from torch.autograd import Function


    class MyMul(Function):
        @staticmethod
        def forward(ctx, z, w):
            ctx.save_for_backward(z, w)
            return z * w

        @staticmethod
        def backward(ctx, grad_output):
            z, w = ctx.saved_tensors
            return grad_output * w.conj(), grad_output * z.conj()
''')


def _open(qtbot, win, spec):
    with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT) as blocker:
        win.session.set_target(spec)
    return blocker.args[0]


def _shown_shapes(win) -> dict[str, str]:
    return {name: field.edit.text() for name, field in win.inputs.fields.items()
            if "." not in name}


def test_another_function_with_the_same_inputs_shows_its_own_shapes(qtbot, window, tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    _open(qtbot, window, f"{mine}:MyMul")
    own = {spec.name: "x".join(map(str, spec.shape)) for spec in window.session.problem.specs}
    assert _shown_shapes(window) == own
    _open(qtbot, window, "complex_mul")
    lesson = {spec.name: "x".join(map(str, spec.shape))
              for spec in window.session.problem.specs}
    assert lesson != own, "the test needs two Functions whose default shapes differ"
    assert _shown_shapes(window) == lesson


def test_a_real_lesson_opens_real_after_a_complex_dtype_and_a_users_function_keeps_it(
        qtbot, window, tmp_path):
    import torch

    notices: list[str] = []
    window.session.notice.connect(notices.append)
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    _open(qtbot, window, f"{mine}:MyMul")
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.inputs.dtype.setCurrentText("complex128")
    assert window.session.problem.dtype == torch.complex128
    _open(qtbot, window, "linear")  # a real lesson: its own kind, the precision kept
    assert window.session.settings.dtype == "float64"
    assert window.session.problem.dtype == torch.float64
    assert window.inputs.dtype.currentText() == "float64"
    assert any("float64" in n and "real lesson" in n for n in notices), notices
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT):
        window.inputs.dtype.setCurrentText("complex64")
    _open(qtbot, window, "complex_mul")  # a complex lesson keeps it
    assert window.session.settings.dtype == "complex64"
    _open(qtbot, window, f"{mine}:MyMul")  # the user's own: the dtype as chosen
    assert window.session.problem.dtype == torch.complex64


def test_the_same_function_checked_in_complex_after_float_draws_its_matrices(
        qtbot, window, tmp_path):
    """MyMul checked in float32, then complex64: the verdict PASSED, the heatmaps stayed
    empty ("The matrices were not kept for this check"), the axes without "re, im": the
    view kept the real layout (same names and shapes), twice too narrow for the report."""
    mine = tmp_path / "mine.py"
    mine.write_text(MINE)
    real = _open(qtbot, window, f"{mine}:MyMul")
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as blocker:
        window.inputs.dtype.setCurrentText("complex64")
    report = blocker.args[0]
    rows, cols = report.analytic.shape
    assert (rows, cols) == (2 * real.analytic.shape[0], 2 * real.analytic.shape[1])
    view = window.jacobian
    assert view.heatmaps.shape == (rows, cols)
    assert view.drawing.show(report)
    assert "not kept" not in view.hover_label.text()


NAN_THEN_RAISES = textwrap.dedent('''
    from torch.autograd import Function


    class NaNBack(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * float("nan")


    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("not today")

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output
''')


def test_a_functions_nan_notice_goes_when_another_function_opens(qtbot, window, tmp_path):
    """NaNBack's "NaN or Inf … first appears at bugs.py:11" stayed up under the error of the
    next Function, which failed before any check (trial2)."""
    path = tmp_path / "bugs.py"
    path.write_text(NAN_THEN_RAISES)
    notice = window.notice
    window.session.set_target(f"{path}:NaNBack")
    qtbot.waitUntil(lambda: notice.isVisible() and "NaN or Inf" in notice.text(),
                    timeout=TIMEOUT)
    assert "bugs.py:" in notice.text()
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT):
        window.session.set_target(f"{path}:Raises")
    assert not notice.isVisible() or "NaN or Inf" not in notice.text()


def test_another_function_opens_on_its_first_order(qtbot, window):
    """After D on one lesson, the next opened on its double backward's verdict, unasked
    (trial2); the same Function checked again keeps the order chosen."""
    _open(qtbot, window, "sigmoid_bug")
    window.jacobian.toggle_order()
    assert window.jacobian.order == 2 and window.session.second_order_asked
    _open(qtbot, window, "sigmoid_bug")  # the same again (a reload): kept
    assert window.jacobian.order == 2
    _open(qtbot, window, "linear_bug")
    assert window.jacobian.order == 1 and not window.session.second_order_asked


GATHER = textwrap.dedent('''
    from torch.autograd import Function


    class GatherRows(Function):
        @staticmethod
        def forward(ctx, x, idx):
            ctx.save_for_backward(idx)
            ctx.shape = x.shape
            return x[idx]

        @staticmethod
        def backward(ctx, grad_output):
            (idx,) = ctx.saved_tensors
            grad = grad_output.new_zeros(ctx.shape)
            grad.index_add_(0, idx.reshape(-1), grad_output.reshape(-1, *ctx.shape[1:]))
            return grad, None
''')


def test_an_index_argument_is_offered_randint_and_its_boxes_are_greyed(qtbot, window,
                                                                       tmp_path):
    """forward's idx drawn as float32: the app's error said nothing of how to draw an int
    tensor (the CLI's names --init NAME=randint(0,8)), and the init list had no integer
    choice; a randint input kept "trained" and "grad" ticked (trial2)."""
    path = tmp_path / "gather.py"
    path.write_text(GATHER)
    with qtbot.waitSignal(window.session.errorRaised, timeout=TIMEOUT) as raised:
        window.session.set_target(f"{path}:GatherRows")
    assert "randint(a,b)" in str(raised.args[0]) and "Inputs form" in str(raised.args[0])
    init = window.inputs.fields["idx.init"]
    choice = init.findText("randint(0,3)")
    assert choice >= 0
    with qtbot.waitSignal(window.session.jacobianReady, timeout=TIMEOUT) as ready:
        init.setCurrentIndex(choice)
        init.activated.emit(choice)
    assert ready.args[0].passed
    assert not window.inputs.fields["idx.trained"].isEnabled()
    assert not window.inputs.fields["idx.grad"].isEnabled()
    assert window.inputs.fields["x.grad"].isEnabled()
