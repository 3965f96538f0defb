"""The pictures customgrad's API draws with the playground's Qt where it can be imported:
assert_backward(save=...), a report's notebook HTML and PNG (the text-only side, without Qt:
tests/customgrad/test_api.py)."""

from __future__ import annotations

import pytest
import torch

import customgrad
from customgrad.checking.jacobian import compare
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.gallery import LinearFunctionBuggy, MulConstant
from customgrad.testing import assert_backward

pytest.importorskip("pytestqt")


def _problem(target: str):
    settings = Settings(target=target)
    settings.dtype = "float64"  # as the CLI's check
    return build(settings)


def test_assert_backward_saves_the_heatmaps(qapp, tmp_path):
    from playground.views.jacobian import JacobianView

    def views():  # other tests' views may live on in this process: only this call's count
        return {id(w) for w in qapp.topLevelWidgets() if isinstance(w, JacobianView)}

    before = views()
    p = _problem("linear_bug")
    path = tmp_path / "linear_bug.png"
    with pytest.raises(AssertionError) as failure:
        assert_backward(LinearFunctionBuggy, *p.args, save=path)
    assert str(failure.value).splitlines()[-1] == \
        f"heatmaps (analytic, numerical, difference): {path}"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from PySide6.QtGui import QImage

    image = QImage(str(path))
    assert image.width() > 2 * image.height() > 0  # three heatmaps side by side
    assert views() <= before  # the view that drew them is gone


def test_html_and_png_with_qt(qapp):
    p = _problem("linear_bug")
    report = customgrad.check(p.function, *p.args)
    page = report._repr_html_()
    assert page.startswith("<div class='customgrad-report'>")
    assert "LinearFunction (find the bug): FAILED" in page
    assert "|a - n| &lt;= 1e-05" in page  # escaped
    assert page.count("<tr>") == 1 + len(report.blocks) and "MISMATCH" in page
    assert "<img src='data:image/png;base64," in page
    assert f"<li>method: {report.method.line()}</li>" in page
    assert "by autograd through forward, verified by finite differences" in page
    png = report._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert report._repr_png_() is png  # drawn once per report


def test_html_says_when_finite_differences_made_the_matrix(qapp):
    p = _problem("numpy_tanh")
    page = customgrad.check(p.function, *p.args)._repr_html_()
    assert "<img src='data:image/png;base64," in page
    assert ("<li>method: numerical Jacobian by finite differences, two forward calls per "
            "column (autograd cannot see how output depends on the inputs (numpy") in page


def test_big_matrices_are_pooled_to_the_picture(qapp):
    """A 900 x 900 Jacobian draws as a picture of the same size as a 12 x 32 one."""
    from PySide6.QtGui import QImage

    from playground import render

    big = customgrad.check(MulConstant, torch.randn(30, 30, dtype=torch.float64), 2.0)
    small = customgrad.check(LinearFunctionBuggy, *_problem("linear_bug").args)
    sizes = {(i.width(), i.height()) for i in (QImage.fromData(render.heatmaps_png(r))
                                               for r in (big, small))}
    assert len(sizes) == 1


def test_a_report_without_its_matrices_shows_as_text(qapp):
    report = compare(MulConstant, [torch.ones(2, dtype=torch.float64), 2.0], keep_matrices=False)
    page = report._repr_html_()
    assert "<pre>PASSED: 0 of 4 Jacobian entries" in page and "<img" not in page
    assert "did not keep its matrices" in page and report._repr_png_() is None
