"""The Python API: customgrad.check, customgrad.testing.assert_backward, the report's text,
JSON and notebook display, the public names and signatures, and the documented examples. (The
pictures, drawn with the playground's Qt: tests/playground/test_notebook_pictures.py.)"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import customgrad
from customgrad import cli
from customgrad.checking import notebook, subchecks
from customgrad.checking.jacobian import Report, compare
from customgrad.errors import SpecError
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.gallery import LinearFunctionBuggy, MulConstant, ReluInplace
from customgrad.testing import assert_backward

ROOT = Path(__file__).resolve().parents[2]


def _problem(target: str):
    settings = Settings(target=target)
    settings.dtype = "float64"  # as the CLI's check
    return build(settings)


def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


# ------------------------------------------------------------------ check


@pytest.mark.parametrize("target", ["functional_linear", "linear_bug", "sort"])
def test_str_is_the_cli_text(capsys, target):
    """Same Function, same tensors: the CLI's lines, the diagnosis of a failure included."""
    code, out = _cli(capsys, "check", target)
    p = _problem(target)
    report = customgrad.check(p.function, *p.args)
    assert code == (0 if report.passed else 1)
    assert str(report).splitlines() == out.splitlines()
    assert bool(report.diagnoses) == (not report.passed)


def test_to_dict_is_the_cli_json(capsys):
    code, out = _cli(capsys, "check", "linear_bug", "--json")
    theirs = json.loads(out)
    p = _problem("linear_bug")
    mine = customgrad.check(p.function, *p.args).to_dict()
    json.dumps(mine, allow_nan=False)
    assert code == 1 and mine["function"] == "LinearFunctionBuggy"
    for key, value in mine.items():
        if key != "seconds":  # the time differs
            assert theirs[key] == value, key
    assert mine["diagnoses"][0]["kind"] == "transposed"


def test_report_exposes_the_matrices_and_the_verdict():
    p = _problem("linear_bug")
    report = customgrad.check(p.function, *p.args)
    assert isinstance(report, Report) and not report.passed
    assert report.analytic.shape == report.numerical.shape == (12, 12 + 16 + 4)
    torch.testing.assert_close(report.difference(), report.analytic - report.numerical,
                               rtol=0, atol=0)  # the same subtraction
    assert [b.passed for b in report.blocks] == [True, False, True]
    assert report.worst.input_name == "weight"
    reference = compare(p.function, p.args)
    assert report.mismatches == reference.mismatches
    # both are float64 central differences of the same forward at the same point
    torch.testing.assert_close(report.numerical, reference.numerical, rtol=0, atol=0)


def test_the_callers_tensors_and_grads_are_never_modified():
    """Even by a Function whose forward clamps its input in place (ReluInplace)."""
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    x.grad = torch.full_like(x, 7.0)
    before, grad_before, version = x.detach().clone(), x.grad.clone(), x._version
    customgrad.check(ReluInplace, x)
    customgrad.check(MulConstant, x, 3.0, checks=subchecks.NAMES, dtype=torch.float32)
    with pytest.raises(AssertionError):  # diagnosed too: more calls with the arguments
        assert_backward(LinearFunctionBuggy, x,
                        torch.randn(5, 5, dtype=torch.float64, requires_grad=True),
                        torch.randn(5, dtype=torch.float64, requires_grad=True))
    assert torch.equal(x.detach(), before) and x._version == version
    assert torch.equal(x.grad, grad_before) and x.requires_grad and x.is_leaf


def test_constants_are_passed_as_apply_takes_them():
    x = torch.randn(2, 3, dtype=torch.float64)
    report = customgrad.check(MulConstant, x, 2.5)
    assert report.passed and [a.name for a in report.inputs] == ["tensor"]
    assert report.worst is not None
    # the block is 2.5 times the identity
    torch.testing.assert_close(report.analytic, 2.5 * torch.eye(6, dtype=torch.float64))


class _Product(torch.autograd.Function):
    """scale * x0 * x1 * ...: forward takes its tensors as *inputs, as real wrappers do."""

    @staticmethod
    def forward(ctx, scale, *inputs):
        ctx.save_for_backward(*inputs)
        ctx.scale = scale
        out = inputs[0] * scale
        for t in inputs[1:]:
            out = out * t
        return out

    @staticmethod
    def backward(ctx, g):
        xs = ctx.saved_tensors
        grads = []
        for i in range(len(xs)):
            p = g * ctx.scale
            for j, t in enumerate(xs):
                if j != i:
                    p = p * t
            grads.append(2 * p if _Product.wrong_last and i == len(xs) - 1 else p)
        return (None, *grads)

    wrong_last = False  # the buggy twin: the last tensor's gradient doubled


def test_a_forward_taking_star_args_is_checked_with_the_arguments_given(monkeypatch):
    """forward(ctx, scale, *inputs): the check names each tensor passed (inputs0, inputs1,
    ...), and its verdict is gradcheck's, right and wrong (it once refused the class)."""
    xs = [torch.randn(2, 3, dtype=torch.float64) for _ in range(3)]
    for wrong in (True, False):
        monkeypatch.setattr(_Product, "wrong_last", wrong)
        report = customgrad.check(_Product, 1.5, *xs)
        leaves = [x.clone().requires_grad_() for x in xs]
        expected = torch.autograd.gradcheck(lambda *t: _Product.apply(1.5, *t), leaves,
                                            raise_exception=False)
        assert report.passed == expected == (not wrong)
        assert [a.name for a in report.inputs] == ["inputs0", "inputs1", "inputs2"]
        failing = [b.input.name for b in report.blocks if not b.passed]
        assert failing == (["inputs2"] if wrong else [])
    assert customgrad.check(_Product, 2.0, xs[0]).passed  # one tensor: inputs0 alone
    assert _Product.forward.__code__.co_varnames[1] == "scale"  # the class is left alone


def test_dtype_converts_and_the_float32_rule_applies():
    x = torch.randn(3, 3)  # float32
    assert "float32 rule" in " ".join(customgrad.check(MulConstant, x, 2.0).notes)
    report = customgrad.check(MulConstant, x, 2.0, dtype=torch.float64)
    assert report.passed and not any("float32 rule" in n for n in report.notes)
    assert x.dtype == torch.float32
    assert customgrad.check(MulConstant, x.double(), 2.0, dtype="float32").notes


def test_tolerances_reach_the_comparison():
    p = _problem("linear_bug")
    report = customgrad.check(p.function, *p.args, eps=1e-5, atol=10.0, rtol=0.0)
    assert report.passed and (report.eps, report.atol, report.rtol) == (1e-5, 10.0, 0.0)


def test_sub_checks_are_asked_for_by_name():
    x = torch.randn(3, dtype=torch.float64)
    report = customgrad.check(MulConstant, x, 2.0, checks=["double_backward"])
    assert list(report.checks) == ["jacobian", "double_backward"]
    assert report.passed and report.checks["double_backward"].status == "passed"
    assert "checks: jacobian passed, double_backward passed" in str(report).splitlines()
    assert report.to_dict()["checks"]["double_backward"]["status"] == "passed"
    assert report.to_dict()["double_backward"]["passed"] is True
    assert list(customgrad.check(MulConstant, x, 2.0).checks) == list(subchecks.DEFAULT)
    with pytest.raises(SpecError, match="unknown check 'triple'"):
        customgrad.check(MulConstant, x, 2.0, checks=["triple"])


def test_a_target_name_works_like_the_class():
    p = _problem("linear_bug")
    by_name = customgrad.check("linear_bug", *p.args)
    assert by_name.label == "LinearFunction (find the bug)"
    assert by_name.mismatches == customgrad.check(LinearFunctionBuggy, *p.args).mismatches
    with pytest.raises(SpecError, match=r"torch\.autograd\.Function subclass"):
        customgrad.check(len, torch.ones(2))


# ------------------------------------------------------------------ assert_backward


def test_assert_backward_message_for_a_find_the_bug_twin():
    p = _problem("linear_bug")
    with pytest.raises(AssertionError) as failure:
        assert_backward(LinearFunctionBuggy, *p.args)
    message = str(failure.value)
    lines = message.splitlines()
    assert lines[0] == "LinearFunction (find the bug): backward disagrees with finite differences."
    assert lines[1] == ("  d output [3x4] / d weight [4x4]: 72 of 192 entries outside "
                        "|a - n| <= 1e-05 + 0.001*|n|")
    assert len([line for line in lines if "entries outside" in line and "d output" in line]) == 1
    worst = next(line for line in lines if line.startswith("worst entry: "))
    match = re.fullmatch(r"worst entry: d output\[(\d+), (\d+)\] / d weight\[(\d+), (\d+)\]: "
                         r"analytic (\S+), numerical (\S+), difference (\S+)", worst)
    assert match, worst
    report = customgrad.check(LinearFunctionBuggy, *p.args)
    w = report.worst
    assert tuple(map(int, match.groups()[:2])) == w.output_index
    assert tuple(map(int, match.groups()[2:4])) == w.input_index
    # printed to 6 significant digits
    assert float(match[5]) == pytest.approx(w.analytic, rel=1e-5, abs=1e-9)
    assert float(match[6]) == pytest.approx(w.numerical, rel=1e-5, abs=1e-6)
    assert any(line.startswith("diagnosis: d output [3x4] / d weight [4x4]: the gradient for "
                               "weight is transposed") for line in lines)
    assert "MISMATCH" in message and "heatmaps" not in message


def test_assert_backward_passes_quietly_and_returns_the_report():
    x = torch.randn(2, 2, dtype=torch.float64)
    assert assert_backward(MulConstant, x, 3.0).passed


def test_without_qt_the_message_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(notebook, "RENDERER", "playground.no_such_renderer")
    p = _problem("linear_bug")
    path = tmp_path / "never.png"
    with pytest.raises(AssertionError) as failure:
        assert_backward(LinearFunctionBuggy, *p.args, save=path)
    last = str(failure.value).splitlines()[-1]
    assert last.startswith(f"heatmaps not saved to {path}: drawing the heatmaps needs the "
                           "playground's Qt, which cannot be imported here (")
    assert not path.exists()


# ------------------------------------------------------------------ notebook display


def test_without_qt_html_is_the_escaped_text(monkeypatch):
    monkeypatch.setattr(notebook, "RENDERER", "playground.no_such_renderer")
    x = torch.randn(2, 2, dtype=torch.float64)
    report = customgrad.check(MulConstant, x, 2.0)
    page = report._repr_html_()
    assert page.startswith("<div class='customgrad-report'><pre>MulConstant: PASSED")
    assert "&lt;=" in page and "<img" not in page and "cannot be imported here" in page
    assert report._repr_png_() is None


@pytest.mark.slow
def test_the_engine_displays_a_report_without_qt():
    """PySide6 blocked: customgrad imports, checks and shows text; nothing of Qt loads."""
    code = (
        "import sys\n"
        "for name in ('PySide6', 'shiboken6', 'pyqtgraph'): sys.modules[name] = None\n"
        "import torch, customgrad\n"
        "from customgrad.targets.gallery import MulConstant\n"
        "r = customgrad.check(MulConstant, torch.ones(2, dtype=torch.float64), 2.0)\n"
        "page = r._repr_html_(); assert '<pre>MulConstant: PASSED' in page, page\n"
        "assert r._repr_png_() is None\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', "
        "'superqt', 'shiboken6') and sys.modules[m] is not None]\n"
        "print(bad); sys.exit(1 if bad else 0)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------ the public API


def test_public_names():
    assert sorted(customgrad.__all__) == [
        "Block", "Cancelled", "CustomGradError", "Diagnosis", "Entry", "FunctionError",
        "Report", "SpecError", "TargetError", "TooLargeError", "__version__", "check",
        "testing"]
    for name in customgrad.__all__:
        assert getattr(customgrad, name) is not None
    assert customgrad.Report is Report and customgrad.testing.assert_backward is assert_backward
    assert (ROOT / "customgrad" / "py.typed").is_file()
    with pytest.raises(AttributeError):
        customgrad.no_such_name  # noqa: B018


def test_import_customgrad_stays_light():
    code = ("import sys, customgrad; heavy = [m for m in ('torch', 'PySide6', 'playground') "
            "if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _signature(fn) -> str:
    return str(inspect.signature(fn))


def test_signatures_are_pinned():
    """Changing one of these breaks users' code: change it on purpose, and the docs too."""
    assert _signature(customgrad.check) == (
        "(fn: 'type | str', *args: 'object', eps: 'float | None' = None, "
        "atol: 'float | None' = None, rtol: 'float | None' = None, "
        "checks: 'Iterable[str] | None' = None, "
        "dtype: 'torch.dtype | str | None' = None, nondet_tol: 'float' = 0.0) -> 'Report'")
    assert _signature(customgrad.testing.assert_backward) == (
        "(fn: 'type | str', *args: 'object', save: 'str | os.PathLike | None' = None, "
        "eps: 'float | None' = None, atol: 'float | None' = None, "
        "rtol: 'float | None' = None, checks: 'Iterable[str] | None' = None, "
        "dtype: 'torch.dtype | str | None' = None, nondet_tol: 'float' = 0.0) -> 'Report'")
    assert _signature(Report.text) == "(self, label: 'str | None' = None) -> 'str'"
    assert _signature(Report.to_dict) == "(self) -> 'dict'"
    assert _signature(Report.difference) == "(self) -> 'torch.Tensor'"
    for name in ("passed", "worst", "blocks", "analytic", "numerical", "notes", "diagnoses",
                 "eps", "atol", "rtol", "label", "checks"):
        assert name in Report.__dataclass_fields__


# ------------------------------------------------------------------ the documented examples


def _python_blocks() -> tuple[str, list[str]]:
    """The ```python blocks of README.md's section "From Python"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## From Python\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert section is not None, "no section 'From Python' in README.md"
    return "README.md", re.findall(r"^```python\n(.*?)^```", section[1], re.S | re.M)


def _pytest_block(blocks: list[str]) -> str:
    """The block of "In your tests": a test file that imports Scale from scale.py."""
    found = [b for b in blocks if "def test_" in b]
    assert len(found) == 1 and "from scale import Scale" in found[0]
    return found[0]


def test_the_documented_examples_run(capsys, tmp_path, monkeypatch):
    source, blocks = _python_blocks()
    assert len(blocks) >= 3
    (tmp_path / "scale.py").write_text(blocks[0])  # the file the test block imports Scale from
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {"__name__": "python_api_docs"}
    for k, block in enumerate(blocks):
        if "playground.show(" in block:  # opens a window: tests/playground/test_show.py
            continue
        exec(compile(block, f"{source} (python block {k + 1})", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests
    for test in tests:
        test()
    out = capsys.readouterr().out
    assert "Scale: PASSED" in out
    assert "ScaleBuggy: backward disagrees with finite differences." in out
    assert "[factor]" in out  # the diagnosis the example shows


@pytest.mark.slow
def test_the_documented_test_file_runs_under_pytest_as_it_is(tmp_path):
    """Copied as the README says (test_scale.py beside scale.py), pytest passes it: the
    block imports all it uses."""
    _, blocks = _python_blocks()
    (tmp_path / "scale.py").write_text(blocks[0])
    (tmp_path / "test_scale.py").write_text(_pytest_block(blocks))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "test_scale.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
