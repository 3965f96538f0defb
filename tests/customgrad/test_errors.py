"""Faults in user code become FunctionError naming the user's file and the offending line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import customgrad
from customgrad.checking import jacobian
from customgrad.errors import Cancelled, CustomGradError, FunctionError
from customgrad.function.contract import (
    Overtime,
    method_line,
    mutation_line,
    return_line,
    run_user,
    run_user_within,
)
from customgrad.function.inputs import ConstSpec, TensorSpec
from customgrad.problems import problem as problem_module
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets import catalog
from customgrad.targets.loader import load_file
from customgrad.training.descent import Descent

DATA = Path(__file__).resolve().parents[1] / "data"
FILE = str((DATA / "user_functions.py").resolve())
U = load_file(FILE)
SOURCE = Path(FILE).read_text().splitlines()


def marked(name: str) -> int:
    """The line of user_functions.py carrying the ``# <- name`` marker."""
    hits = [i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(f"# <- {name}")]
    assert len(hits) == 1, name
    return hits[0]


def x64(*shape):
    return torch.randn(*shape, dtype=torch.float64)


CASES = {
    # name: (arguments, phase, message pattern)
    "BackwardRaises": (lambda: [x64(3, 4)], "backward", r"raised ValueError: backward is broken"),
    "ForwardRaises": (lambda: [x64(3, 4)], "forward", r"raised RuntimeError: shape '\[7, 7\]'"),
    "TooManyGradients": (lambda: [x64(3, 4)], "backward", r"returned 2 gradients, but forward "
                         r"takes 1 argument \(x\)"),
    "TooFewGradients": (lambda: [x64(3, 4), x64(3, 4)], "backward",
                        r"returned 1 gradient, but forward takes 2 arguments \(x, y\)"),
    "WrongShapeGradient": (lambda: [x64(3, 4)], "backward",
                           r"gradient of shape \[5\] for x, whose shape is \[3x4\]"),
    "WrongDtypeGradient": (lambda: [x64(3, 4)], "backward",
                           r"gradient of x as complex128, but x is float64"),
    "GradientForConstant": (lambda: [x64(3, 4), 2], "backward",
                            r"gradient for n \(position 1\), which is not a tensor but a int"),
    "NonTensorOutput": (lambda: [x64(3, 4)], "forward", r"returned a float .*must be tensors"),
}


def test_a_backward_writing_into_grad_output_fails_its_sub_check_naming_the_line():
    """(an error with no verdict before session 38: now judged entry by entry, as gradcheck)"""
    report = jacobian.compare(U.ModifiesGradOutput, [x64(3, 4)])
    assert report.agrees and not report.passed
    detail = report.checks["grad_output"].detail
    assert detail.startswith("ModifiesGradOutput.backward modifies grad_output in place")
    assert f"{FILE}:{marked('ModifiesGradOutput')}" in detail


@pytest.mark.parametrize("name", sorted(CASES))
def test_compare_reports_file_and_offending_line(name):
    make_args, phase, pattern = CASES[name]
    fn = getattr(U, name)
    with pytest.raises(FunctionError) as info:
        jacobian.compare(fn, make_args())
    err = info.value
    assert re.search(pattern, str(err)), str(err)
    assert str(err).startswith(name)
    assert err.file == FILE
    assert err.line == marked(name)
    assert err.phase == phase
    assert err.where() == f"{FILE}:{marked(name)}"


@pytest.mark.parametrize("name", ["BackwardRaises", "ForwardRaises"])
def test_exceptions_keep_the_full_traceback_in_details(name):
    make_args, _, _ = CASES[name]
    with pytest.raises(FunctionError) as info:
        jacobian.compare(getattr(U, name), make_args())
    assert "Traceback" in info.value.details
    assert "user_functions.py" in info.value.details


def test_functional_linear_batch_gradient_is_no_error():
    p = build(Settings(target="functional_linear", dtype="float64"))
    report = p.compare()  # must not raise
    assert any(n.startswith("shape surprise") for n in report.notes)


def test_wrong_dtype_is_fine_when_the_dtypes_agree():
    """The same Function is correct in float32: the dtype check is about the argument's dtype."""
    x = torch.randn(2, 3, dtype=torch.complex128)
    assert jacobian.compare(U.WrongDtypeGradient, [x]).passed


def test_output_shape_depending_on_values_is_an_error():
    x = torch.tensor([[0.25, 1.0, -1.0]], dtype=torch.float64)  # 0.25 +- eps flips the mask
    with pytest.raises(FunctionError, match="must not depend on input values"):
        jacobian.compare(U.ShapeDependsOnValues, [x])


# ------------------------------------------------------------------ through the autograd engine


def descent_for(fn, args):
    """A descent on every tensor argument, towards a zero target."""
    specs = [TensorSpec(f"a{i}") if isinstance(a, torch.Tensor) else ConstSpec(f"a{i}", a)
             for i, a in enumerate(args)]
    out = fn.apply(*args)  # forward itself is fine for all the Functions used here
    return Descent(fn, specs, args, [torch.zeros_like(out)])


@pytest.mark.parametrize("name, message", [
    # the words check uses (the descent said torch's own: "an incorrect number of gradients")
    ("TooManyGradients", CASES["TooManyGradients"][2]),
    ("WrongShapeGradient", CASES["WrongShapeGradient"][2]),
    ("GradientForConstant", "returned a gradient for a non-tensor argument"),
    ("BackwardRaises", "raised ValueError: backward is broken"),
])
def test_descent_reports_file_and_offending_line(name, message):
    args = CASES[name][0]()
    descent = descent_for(getattr(U, name), args)
    with pytest.raises(FunctionError, match=message) as info:
        descent.step()
    assert info.value.file == FILE
    assert info.value.line == marked(name)
    assert info.value.phase == "backward"
    if name != "BackwardRaises":  # refused after backward returned: torch's frames alone
        assert info.value.details == ""
    else:
        assert "backward is broken" in info.value.details


def test_descent_forward_error():
    descent = descent_for(U.Square, [x64(3, 4)])
    descent.function = U.ForwardRaises
    with pytest.raises(FunctionError) as info:
        descent.step()
    assert (info.value.file, info.value.line, info.value.phase) == (
        FILE, marked("ForwardRaises"), "forward")


def test_build_reports_a_shape_the_function_rejects():
    with pytest.raises(FunctionError) as info:
        build(Settings(target="killhead", shapes={"input": "5"}))  # KillHead needs 2-D
    assert info.value.file.endswith("seeds.py")
    assert info.value.phase == "forward"
    fn = catalog.get("killhead").function
    assert "result[:, 0:ctx.n] = 0" in Path(info.value.file).read_text().splitlines()[
        info.value.line - 1]
    assert method_line(fn, "forward") < info.value.line


# ------------------------------------------------------------------ the helpers themselves


def test_line_helpers():
    square_def = SOURCE[method_line(U.Square, "backward") - 1]
    assert square_def.strip() == "def backward(ctx, grad_output):"
    assert return_line(U.TooManyGradients, "backward") == marked("TooManyGradients")
    assert mutation_line(U.ModifiesGradOutput) == marked("ModifiesGradOutput")
    # no in-place modification: the def line
    assert mutation_line(U.Square) == method_line(U.Square, "backward")
    assert return_line(U.ScaleNewStyle, "forward") == method_line(U.ScaleNewStyle, "forward") + 4
    # several returns: the def line
    nomat = catalog.get("mulconstant_nomat").function
    assert return_line(nomat, "backward") == method_line(nomat, "backward")
    # decorated with once_differentiable: the def line of the wrapped function
    fn = catalog.get("numpy_tanh").function
    path, _ = catalog.get("numpy_tanh").location
    line = Path(path).read_text().splitlines()[method_line(fn, "backward") - 1]
    assert line.strip().startswith("def backward(")


def test_a_right_backward_is_checked_without_reading_its_source(monkeypatch):
    """The probe's check of backward's result looks up the offending line only for an
    error: reading and parsing backward's source for every check cost more than the probe
    of a small Function (and of the second order's, every double_backward sub-check)."""
    from customgrad.function import contract

    real = contract.return_line
    looked_up = []

    def counted(function, name):
        looked_up.append(function.__name__)
        return real(function, name)

    monkeypatch.setattr(contract, "return_line", counted)
    assert jacobian.compare(U.Square, [x64(3, 4)]).passed
    assert looked_up == []
    with pytest.raises(FunctionError) as info:
        jacobian.compare(U.WrongShapeGradient, CASES["WrongShapeGradient"][0]())
    assert looked_up == ["WrongShapeGradient"]
    assert (info.value.file, info.value.line) == (FILE, marked("WrongShapeGradient"))


def test_run_user_passes_through_engine_errors():
    fn = U.Square
    with pytest.raises(Cancelled):
        run_user(fn, "forward", lambda: (_ for _ in ()).throw(Cancelled("stop")))
    original = FunctionError("inner", file="f.py", line=3)
    with pytest.raises(FunctionError) as info:
        run_user(fn, "forward", lambda: (_ for _ in ()).throw(original))
    assert info.value is original
    with pytest.raises(FunctionError, match=r"Square.forward raised KeyError"):
        run_user(fn, "forward", lambda: {}["missing"])


def test_run_user_within_stops_python_that_never_returns():
    def forever():
        n = 0
        while n >= 0:
            n += 1

    with pytest.raises(Overtime):
        run_user_within(U.Square, "backward", forever, 0.05)
    with pytest.raises(FunctionError, match=r"Square\.forward raised KeyError"):
        run_user_within(U.Square, "forward", lambda: {}["missing"], 10)


def test_run_user_within_leaves_nothing_behind_when_the_call_returns_at_the_limit():
    """A limit firing just as the call returns must not raise later, elsewhere."""
    answers = 0
    for _ in range(300):
        try:
            answers += run_user_within(U.Square, "forward", lambda: sum(range(200)) > 0, 1e-4)
        except Overtime:
            pass
        total = 0
        for k in range(2000):  # a stray exception would land somewhere in here
            total += k
        assert total == 1999000
    assert answers >= 0


def test_a_probe_of_a_backward_that_never_returns_does_not_hang_the_build(monkeypatch, tmp_path):
    monkeypatch.setattr(problem_module, "PROBE_SECONDS", 0.1)
    path = tmp_path / "stuck.py"
    path.write_text(
        "import torch\n\n\nclass Stuck(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x, y):\n        return x * y\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        n = 0\n"
        "        while n >= 0:\n            n += 1\n        return g, g\n")
    p = build(Settings(target=str(path), dtype="float64"))
    assert all(isinstance(s, TensorSpec) for s in p.specs) and not p.guesses


def test_error_hierarchy():
    assert issubclass(FunctionError, CustomGradError)
    assert FunctionError("x").where() == ""
    assert FunctionError("x", file="a.py").where() == "a.py"
    assert FunctionError("x", file="a.py", line=7).where() == "a.py:7"


CONCURRENT_PARSES = """
import ast, inspect, sys, threading, time
from customgrad.errors import serialise_ast_parse

serialise_ast_parse()  # the fix under test, as the app's and the workers' entry points call it

SOURCE = inspect.getsource(inspect)
errors = []


class Churn:
    def __del__(self):
        time.sleep(0)  # Python code run by the collector lets another thread take the GIL


def parse_with_garbage():
    try:
        for _ in range(20):
            junk = [Churn() for _ in range(50)]
            for item in junk:
                item.me = item  # cycles, so they are freed by a collection in mid-parse
            del junk
            ast.parse(SOURCE)
            inspect.getsource(threading.Thread)  # a class: inspect parses its module
    except SystemError as exc:
        errors.append(exc)


threads = [threading.Thread(target=parse_with_garbage) for _ in range(3)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(errors)
sys.exit(1 if errors else 0)
"""


@pytest.mark.slow
def test_threads_parsing_at_once_do_not_fail():
    """CPython 3.11's "AST constructor recursion depth mismatch" (issue 106905): the GUI
    thread's inspect.getsource of a class and a worker's traceback formatting parse at once.
    Without serialise_ast_parse this script fails on 3.11 every time it was run."""
    proc = subprocess.run([sys.executable, "-c", CONCURRENT_PARSES], capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_importing_customgrad_leaves_ast_parse_alone():
    """Importing a library changes nothing in the process: a notebook's ast.parse stays its
    own until an entry point (the app's, a worker's) asks for the lock."""
    code = ("import ast, sys; parse = ast.parse; import customgrad, customgrad.errors, "
            "customgrad.api, customgrad.cli; same = ast.parse is parse; "
            "customgrad.errors.serialise_ast_parse(); locked = ast.parse is not parse; "
            "customgrad.errors.serialise_ast_parse(); wrapped = ast.parse.__wrapped__ is parse; "
            "print(same, locked or sys.version_info >= (3, 13), "
            "wrapped or sys.version_info >= (3, 13))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout.split() == ["True", "True", "True"], proc.stdout + proc.stderr


class _ForgotSave(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x ** 3  # (ctx.save_for_backward(x) forgotten)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * grad_output


class _Hog(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: "
                           "can't allocate memory: you tried to allocate 25769803776 bytes.")


def test_an_empty_saved_tensors_unpacked_says_forward_never_saved_them():
    """trial3 S1: "not enough values to unpack (expected 1, got 0)" and no why."""
    with pytest.raises(FunctionError) as info:
        customgrad.check(_ForgotSave, x64(3, 4))
    assert str(info.value).startswith(
        "_ForgotSave.backward raised ValueError: not enough values to unpack (expected 1, got "
        "0) — ctx.saved_tensors is empty: forward never called ctx.save_for_backward(...)")
    assert "ctx.saved_tensors" in Path(info.value.file).read_text().splitlines()[
        info.value.line - 1]


def test_a_refused_allocation_is_said_in_gib():
    with pytest.raises(FunctionError) as info:
        customgrad.check(_Hog, x64(3, 4))
    assert "— 24 GiB for one tensor: is a shape at this line written wrong?" in str(info.value)


class _ReturnsNumpy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.detach().numpy() * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2


class _CtxTypo(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.K, None


def test_forward_returning_numpy_is_told_how_and_not_to_change_its_inputs():
    """trial3 S7: "returned a ndarray ... Change them with --shape ..." (the inputs were fine)."""
    with pytest.raises(FunctionError) as info:
        build(Settings(target=f"{FILE}:NonTensorOutput"))
    assert "forward was given" not in str(info.value)
    with pytest.raises(FunctionError) as info:
        customgrad.check(_ReturnsNumpy, x64(3, 4))
    assert str(info.value).startswith(
        "_ReturnsNumpy.forward returned a numpy ndarray — outputs must be tensors: return "
        "torch.from_numpy(...) of it")


def test_a_ctx_attribute_never_stored_names_what_forward_stored():
    """trial3 S7: "'_CtxTypoBackward' object has no attribute 'K'" (ctx's class name)."""
    with pytest.raises(FunctionError) as info:
        customgrad.check(_CtxTypo, x64(3, 4), 2.0)
    assert str(info.value).endswith(
        "— ctx, the object forward and backward share, has no K (forward stored on ctx: k).")
