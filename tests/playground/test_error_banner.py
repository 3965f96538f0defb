"""The error banner unfolded (Details), without a window: what it adds to the folded line."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pytestqt")

import customgrad
from customgrad.errors import FunctionError
from playground.views.error_banner import ErrorBanner

#: customgrad's own frames above the user's, as a backward's error carries them
LIBRARY = os.path.dirname(customgrad.__file__)
TRACEBACK = f"""Traceback (most recent call last):
  File "{LIBRARY}/function/contract.py", line 179, in run_user
    return call()
           ^^^^^^
  File "{LIBRARY}/function/contract.py", line 297, in call
    return function.backward(ctx, *grads)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/home/student/raises.py", line 14, in backward
    scale = helper(x)
            ^^^^^^^^^
  File "/home/student/raises.py", line 19, in helper
    return 3 * x ** 2 @ torch.ones(7, 7)
RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x8 and 7x7)
"""
MESSAGE = "Cube.backward raised RuntimeError: mat1 and mat2 shapes cannot be multiplied"


@pytest.fixture
def banner(qtbot):
    widget = ErrorBanner()
    qtbot.addWidget(widget)
    widget.resize(1200, 200)
    widget.show_error(FunctionError(MESSAGE, file="/home/student/raises.py", line=19,
                                    details=TRACEBACK))
    widget.details_button.setChecked(True)
    return widget


def test_details_show_the_users_frames_not_customgrads(banner):
    """A student's traceback began with customgrad/function/contract.py twice."""
    shown = banner.details.toPlainText()
    assert "contract.py" not in shown and LIBRARY not in shown
    assert shown.startswith("Traceback (most recent call last):\n"
                            '  File "/home/student/raises.py", line 14, in backward')
    assert "(3x8 and 7x7)\n" in shown
    assert shown.rstrip().endswith("(2 frames of customgrad's own left out)")


def test_a_traceback_of_customgrads_frames_only_is_shown_whole(qtbot):
    """customgrad's own fault: nothing of the user's to show instead."""
    widget = ErrorBanner()
    qtbot.addWidget(widget)
    own = TRACEBACK.split('  File "/home/student', 1)[0] + "RuntimeError: customgrad's\n"
    widget.show_error(FunctionError(MESSAGE, details=own))
    assert widget.details.toPlainText() == own.rstrip("\n")


def test_details_do_not_say_the_message_again_where_the_line_shows_it_whole(banner, qtbot):
    """Unfolded, "Error in your Function: <the same sentence>" came under the same sentence;
    the kind of error stays said, beside where it happened."""
    qtbot.waitUntil(lambda: banner.more.isVisible())
    assert not banner.message.isVisible()
    assert banner.location.text() == "Error in your Function: /home/student/raises.py:19"
    assert MESSAGE in banner.text()  # (the whole banner's words, as before)


def test_torchs_frames_before_the_users_first_are_left_out(qtbot):
    """trial3 R2: a forward's traceback began at torch/autograd/function.py (apply)."""
    import os

    import torch

    apply = os.path.join(os.path.dirname(torch.__file__), "autograd", "function.py")
    inner = os.path.join(os.path.dirname(torch.__file__), "functional.py")
    text = ("Traceback (most recent call last):\n"
            f'  File "{apply}", line 625, in apply\n'
            "    return super().apply(*args, **kwargs)\n"
            '  File "/home/r/tinylayers/ops.py", line 31, in forward\n'
            "    return torch.einsum(spec, table[index])\n"
            f'  File "{inner}", line 400, in einsum\n'
            "    return _VF.einsum(equation, operands)\n"
            "IndexError: tensors used as indices must be long\n")
    widget = ErrorBanner()
    qtbot.addWidget(widget)
    widget.show_error(FunctionError("GatherScale.forward raised IndexError: tensors used as "
                                    "indices must be long", file="/home/r/tinylayers/ops.py",
                                    line=31, details=text))
    shown = widget.details.toPlainText()
    assert shown.startswith("Traceback (most recent call last):\n"
                            '  File "/home/r/tinylayers/ops.py", line 31, in forward')
    assert inner in shown  # torch's frames under the user's stay: where their call failed
    assert shown.rstrip().endswith("(1 frame of torch's before your code left out)")


def test_the_kind_of_error_is_said_once_in_details(qtbot):
    """trial3 R2: "Error in your Function:" on the message and again on the path."""
    widget = ErrorBanner()
    qtbot.addWidget(widget)
    widget.resize(300, 200)  # the folded line cuts the message: Details shows it whole
    widget.show()
    widget.show_error(FunctionError(MESSAGE + " " + "and more words " * 12,
                                    file="/home/student/raises.py", line=19))
    widget.details_button.setChecked(True)
    qtbot.waitUntil(widget.message.isVisible)
    assert widget.message.text().startswith("Error in your Function: ")
    assert widget.location.text() == "/home/student/raises.py:19"
    widget.resize(4000, 200)  # the whole message on the line: the path says the kind
    qtbot.waitUntil(lambda: not widget.message.isVisible())
    assert widget.location.text() == "Error in your Function: /home/student/raises.py:19"
