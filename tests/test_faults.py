"""One fault suite, run against both front ends: the CLI (``customgrad.cli.main`` in-process)
and the app (a MainWindow driven through its Session).

Every case names a fault a user can make (bad shapes, constants, dtype, device, broken files,
broken Functions, huge Jacobians, damaged session files, watched files going away, a stuck
backward). The CLI must exit 2 (1 where the backward merely disagrees) with a clear one-paragraph
message and no traceback; the app must show the reason, keep what the user typed, and stay
usable afterwards (loading 'killhead' gives a Jacobian report).
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

pytest.importorskip("pytestqt")

from customgrad import cli
from customgrad.problems.settings import Settings
from playground.state import session_files

#: every fault against the CLI and the window: worker processes crash by the dozen
pytestmark = pytest.mark.slow

TIMEOUT = 20_000
DATA = Path(__file__).resolve().parent / "data"
FAULTS = DATA / "faults_functions.py"
SOURCE = FAULTS.read_text().splitlines()


def marked(name: str) -> int:
    """The line of faults_functions.py carrying the ``# <- name`` marker."""
    hits = [i for i, text in enumerate(SOURCE, 1) if text.rstrip().endswith(f"# <- {name}")]
    assert len(hits) == 1, name
    return hits[0]


def flat(text: str) -> str:
    """Whitespace collapsed (the CLI wraps its paragraph) and rich-text tags dropped."""
    return " ".join(re.sub(r"<[^>]+>", "", text).split())


def fn(name: str) -> str:
    return f"{FAULTS}:{name}"


# ---- files the cases need (written once per test into tmp_path) -------------------------------
SYNTAX_ERROR = "import torch\n\n\nclass Broken(torch.autograd.Function):\n" \
               "    def forward(ctx, x:\n        return x\n"  # line 5 never closes '('
IMPORT_ERROR = "import torch  # noqa: F401\n\nraise RuntimeError('this module refuses to load')\n"
NO_FUNCTION = "def helper(x):\n    return x + 1\n"
NOT_A_FUNCTION = "import torch\n\n\nclass Layer(torch.nn.Module):\n    pass\n\n\n" \
                 "def helper(x):\n    return x + 1\n"
WATCHED = '''import torch


class Watched(torch.autograd.Function):
    VERSION = {version}

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
'''


def npy_claiming(shape: str) -> str:
    """A .npy file's base64 whose header claims ``shape`` of float32 and holds 16 bytes."""
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (117 - len(header)) + b"\n"
    data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(16)
    return base64.b64encode(data).decode()


NPY_HUGE = npy_claiming("(1000000000000,)")


def write_files(folder: Path) -> dict[str, str]:
    (folder / "syntax_error.py").write_text(SYNTAX_ERROR)
    (folder / "import_fails.py").write_text(IMPORT_ERROR)
    (folder / "no_function_here.py").write_text(NO_FUNCTION)
    (folder / "not_a_function.py").write_text(NOT_A_FUNCTION)
    (folder / "watched.py").write_text(WATCHED.format(version=1))
    (folder / "a_folder").mkdir(exist_ok=True)
    return {"tmp": str(folder)}


# ---- the cases --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    #: what the CLI runs (``{tmp}`` is the test's folder); None: no CLI equivalent
    argv: tuple[str, ...] | None
    #: regular expression the CLI message and the app's banner / notice must both match
    message: str
    #: the app: ``start`` loads fine first, then ``kind`` says how the fault arrives
    kind: str  # update | target | session | reload | stuck
    start: str | None = None
    changes: dict = field(default_factory=dict)
    target: str | None = None  # for kind == target (``{tmp}`` expanded)
    session: object = None  # for kind == session: the file's text (str) or JSON data
    #: ``file:line`` (or just the file) both front ends must name, ``{tmp}`` expanded
    where: str | None = None
    code: int = 2  # CLI exit code
    cli_stream: str = "err"  # where the CLI says it: err, or out (a note of a passing check)
    app_expect: str = "error"  # error | notice | mismatch
    app_message: str | None = None  # when the app words it differently
    #: (table, key, value) the app must still hold after the fault
    kept: tuple | None = None
    cli_xfail: str | None = None
    app_xfail: str | None = None


def shape_case(id, text, message, target="FaultPlain", name="x"):
    return Case(id, ("check", fn(target), "--shape", f"{name}={text}"), message, "update",
                start=fn(target), changes={"shapes": {name: text}},
                kept=("shapes", name, text))


def const_case(id, name, value, message, kept=True):
    return Case(id, ("check", fn("FaultConst"), "--const", f"{name}={value}"), message,
                "update", start=fn("FaultConst"), changes={"constants": {name: value}},
                kept=("constants", name, value) if kept else None)


def device_case(device, message):
    return Case(f"device_{device}", ("check", fn("FaultPlain"), "--device", device), message,
                "update", start=fn("FaultPlain"), changes={"device": device},
                kept=("device", None, device))


def function_case(name, message, code=2, app_expect="error", where=True, cli_stream="err",
                  app_message=None):
    return Case(f"function_{name}", ("check", fn(name)), message, "target", target=fn(name),
                where=(f"{FAULTS}:{marked(name)}" if where else None), code=code,
                cli_stream=cli_stream, app_expect=app_expect, app_message=app_message)


def load_case(id, target, message, where, argv_target=None):
    return Case(id, ("check", argv_target or target), message, "target", target=target,
                where=where)


def session_case(id, content, message):
    return Case(id, None, message, "session", session=content, app_expect="notice")


CASES = [
    # -- malformed shapes
    shape_case("shape_zero", "0x5", r"x: dimension 0 must be at least 1"),
    shape_case("shape_negative", "-3x5", r"x: dimension -3 must be at least 1"),
    shape_case("shape_non_integer", "2.5x5", r"x: dimension 2.5 is not a whole number"),
    shape_case("shape_letters", "abc", r"x: 'abc' is not a number; write a shape like 3x8"),
    shape_case("shape_empty", "", r"x: empty shape"),
    # one grammar, N(xN)*: a malformed shape is the field's fault, never the Function's
    shape_case("shape_trailing_x", "3x", r"x: '3x': a dimension is missing after the last x"),
    shape_case("shape_leading_x", "x3", r"x: 'x3': a dimension is missing before the first x"),
    shape_case("shape_double_x", "3xx8", r"x: '3xx8' has two x's in a row; did you mean 3x8\?"),
    shape_case("shape_commas", "3,8", r"x: '3,8': separate the dimensions with x, as in 3x8"),
    shape_case("shape_huge", "100000x100000",
               r"100000x100000 has 10,000,000,000 elements, more than the .* allowed"),
    shape_case("shape_too_many_dims", "1x1x1x1x1x1x1x1x1",
               r"x: 9 dimensions is more than the 8 supported"),
    shape_case("shape_infinite", "inf", r"x: dimension inf is not a whole number"),
    Case("shape_dims_rejected", ("check", fn("FaultNeedsMatrix"), "--shape", "x=2x3x4"),
         r"FaultNeedsMatrix\.forward raised ValueError: needs a matrix, got 3 dims", "update",
         start=fn("FaultNeedsMatrix"), changes={"shapes": {"x": "2x3x4"}},
         where=f"{FAULTS}:{marked('FaultNeedsMatrix')}", kept=("shapes", "x", "2x3x4")),
    Case("shape_dims_rejected_1d", ("check", fn("FaultNeedsMatrix"), "--shape", "x=7"),
         r"FaultNeedsMatrix\.forward raised ValueError: needs a matrix, got 1 dims", "update",
         start=fn("FaultNeedsMatrix"), changes={"shapes": {"x": "7"}},
         where=f"{FAULTS}:{marked('FaultNeedsMatrix')}", kept=("shapes", "x", "7")),
    Case("shape_unknown_name", ("check", fn("FaultPlain"), "--shape", "bogus=3x4"),
         r"bogus", "update", start=fn("FaultPlain"), changes={"shapes": {"bogus": "3x4"}},
         kept=("shapes", "bogus", "3x4")),
    # -- constants
    const_case("const_float_not_a_number", "k", "abc", r"k: 'abc' is not a valid float"),
    const_case("const_int_not_whole", "n", "2.5", r"n: 2.5 is not a whole number"),
    const_case("const_int_letters", "n", "many", r"n: .*many"),
    const_case("const_unknown_name", "bogus", "1", r"bogus"),
    # -- devices
    device_case("cuda", r"device 'cuda' is not available on this machine"),
    device_case("mps", r"device 'mps' is not available on this machine"),
    device_case("tpu", r"device 'tpu' is unknown; use cpu, cuda or mps"),
    # -- dtypes
    Case("dtype_float32_only_given_float64",
         ("check", fn("FaultFloat32Only"), "--dtype", "float64"),
         r"FaultFloat32Only\.forward raised AssertionError: FaultFloat32Only needs float32",
         "update", start=fn("FaultFloat32Only"), changes={"dtype": "float64"},
         where=f"{FAULTS}:{marked('FaultFloat32Only')}", kept=("dtype", None, "float64")),
    Case("dtype_unsupported", ("check", fn("FaultPlain"), "--dtype", "float16"),
         r"float16", "update", start=fn("FaultPlain"), changes={"dtype": "float16"},
         app_message=r"dtype 'float16' is not supported; use float32, float64, complex64, "
                     r"complex128",
         kept=("dtype", None, "float16")),
    # -- other settings
    Case("seed_negative", ("check", fn("FaultPlain"), "--seed", "-1"),
         r"seed must be a whole number >= 0, not -1", "update", start=fn("FaultPlain"),
         changes={"seed": -1}),
    Case("init_unknown", ("check", fn("FaultPlain"), "--init", "x=bogus"),
         r"x: unknown init 'bogus'", "update", start=fn("FaultPlain"),
         changes={"init": {"x": "bogus"}}, kept=("init", "x", "bogus")),
    Case("eps_negative", ("check", fn("FaultPlain"), "--eps", "-1"),
         r"eps must be a (positive|finite) number", "update", start=fn("FaultPlain"),
         changes={"eps": -1.0}),
    Case("memory_cap_exceeded", ("check", fn("FaultPlain"), "--memory-cap", "0.000001"),
         r"The Jacobian is 24 x 24.*cap", "update", start=fn("FaultPlain"),
         changes={"memory_cap": 1000}),
    # -- files and targets
    load_case("file_syntax_error", "{tmp}/syntax_error.py",
              r"Syntax error in syntax_error\.py, line 5", "{tmp}/syntax_error.py:5"),
    load_case("file_import_error", "{tmp}/import_fails.py",
              r"Importing import_fails\.py failed with RuntimeError: this module refuses to load",
              "{tmp}/import_fails.py:3"),
    load_case("file_missing", "{tmp}/missing.py", r"File not found: missing\.py",
              "{tmp}/missing.py"),
    load_case("file_is_a_folder", "{tmp}/a_folder", r"a_folder", "{tmp}/a_folder"),
    load_case("file_no_function", "{tmp}/no_function_here.py",
              r"no_function_here\.py defines no torch\.autograd\.Function",
              "{tmp}/no_function_here.py"),
    load_case("file_several_none_chosen", str(FAULTS),
              r"faults_functions\.py defines several Functions \(FaultPlain, FaultConst",
              str(FAULTS)),
    load_case("file_unknown_class", fn("Nope"),
              r"faults_functions\.py has no autograd Function called 'Nope'", str(FAULTS)),
    load_case("file_class_is_a_module", "{tmp}/not_a_function.py:Layer",
              r"Layer in not_a_function\.py is an nn\.Module subclass, not a "
              r"torch\.autograd\.Function subclass; it defines no Function",
              "{tmp}/not_a_function.py"),
    load_case("file_class_is_a_function", "{tmp}/not_a_function.py:helper",
              r"helper in not_a_function\.py is a function, not a torch\.autograd\.Function",
              "{tmp}/not_a_function.py"),
    load_case("file_colon_without_class", "{tmp}/not_a_function.py:",
              r"not_a_function\.py:' names no class after the colon; write "
              r".*not_a_function\.py:ClassName", None),
    load_case("gallery_unknown_name", "nosuchgallery",
              r"No gallery Function is called 'nosuchgallery'", None),
    load_case("gallery_misspelled_name", "killhed",
              r"No gallery Function is called 'killhed'\. Did you mean killhead\?", None),
    load_case("import_path_missing_module", "nosuch_faults_module.sub:Cls",
              r"Cannot import 'nosuch_faults_module\.sub': ModuleNotFoundError", None),
    # -- broken Functions
    function_case("FaultForwardRaises",
                  r"FaultForwardRaises\.forward raised RuntimeError: fault in forward"),
    function_case("FaultBackwardRaises",
                  r"FaultBackwardRaises\.backward raised KeyError: 'fault in backward'"),
    function_case("FaultTooManyGradients", r"FaultTooManyGradients\.backward returned 2 "
                  r"gradients, but forward takes 1 argument \(x\)"),
    function_case("FaultTooFewGradients", r"FaultTooFewGradients\.backward returned 1 gradient,"
                  r" but forward takes 2 arguments \(x, y\)"),
    function_case("FaultWrongShape",
                  r"FaultWrongShape\.backward returned a gradient of shape \[7\] for x"),
    function_case("FaultWrongDtype", r"FaultWrongDtype\.backward returned the gradient of x as "
                  r"complex64, but x is float(32|64)"),
    function_case("FaultGradForConstant", r"FaultGradForConstant\.backward returned a gradient "
                  r"for n \(position 1\), which is not a tensor"),
    function_case("FaultNonTensorOutput",
                  r"FaultNonTensorOutput\.forward returned a str .*outputs must be tensors"),
    # judged as gradcheck judges it, failed by its sub-check grad_output (exit 1)
    function_case("FaultMutatesGradOutput",
                  r"FaultMutatesGradOutput\.backward modifies grad_output in place", code=1,
                  app_expect="mismatch", cli_stream="out"),
    # BaseExceptions the user's code raises itself are its errors, with their line
    function_case("FaultInterruptInForward", r"FaultInterruptInForward\.forward raised "
                  r"KeyboardInterrupt: stop right there"),
    function_case("FaultInterruptInBackward", r"FaultInterruptInBackward\.backward raised "
                  r"KeyboardInterrupt: not now"),
    function_case("FaultExitInBackward",
                  r"FaultExitInBackward\.backward raised SystemExit: 3"),
    # the check runs; it merely disagrees (exit 1, a failed report in the app)
    function_case("FaultWrongBackward", r"FAILED", code=1, app_expect="mismatch", where=False,
                  cli_stream="out"),
    function_case("FaultInfGradient", r"FAILED", code=1, app_expect="mismatch", where=False,
                  cli_stream="out"),
    # gradients that require grad (the forgotten chain rule) once crashed the checker (exit 1,
    # a raw RuntimeError from cumsum with out=): a disagreement with its diagnosis now
    function_case("FaultForgotChainRule", r"FAILED.*diagnosis: FaultForgotChainRule\.backward "
                  r"returns the same gradients whatever grad_output is", code=1,
                  app_expect="mismatch", where=False, cli_stream="out"),
    function_case("FaultSparseGradient", r"FaultSparseGradient\.backward returned a sparse "
                  r"gradient \(sparse_coo\) for x; the check compares dense Jacobians"),
    # NaN everywhere: said in a note (CLI) / notice (app), and FAILED as gradcheck says it is
    # (its backward gives NaN for zero grad_outputs: "backward not multiplied by grad_output")
    Case("function_FaultNaNOutput", ("check", fn("FaultNaNOutput")), r"NaN or Inf", "target",
         target=fn("FaultNaNOutput"), code=1, cli_stream="out", app_expect="notice"),
    # -- session files (no CLI equivalent)
    session_case("session_not_json", "{ this is not json",
                 r"faulty\.json is not valid JSON \(line 1"),
    session_case("session_not_an_object", [1, 2, 3], r"a JSON object was expected"),
    session_case("session_bad_settings",
                 {"format": session_files.FORMAT, "version": 1,
                  "settings": {"seed": "seven", "dtype": "float16", "bogus": 1}},
                 r"setting 'seed' has the wrong type.*dtype 'float16' is not supported.*"
                 r"unknown setting 'bogus'"),
    session_case("session_unknown_function",
                 {"format": session_files.FORMAT, "version": 1, "settings": {"target": "nosuch"}},
                 r"no gallery Function is called 'nosuch'"),
    session_case("session_missing_file", None, r"faulty\.json does not exist"),
    # damaged beyond JSON's own errors: each once ended in a traceback (or a frozen form)
    session_case("session_nested_deep", "[" * 100_000 + "]" * 100_000,
                 r"faulty\.json is nested too deeply to be a session"),
    session_case("session_number_too_long", '{"settings": {"seed": ' + "9" * 5000 + "}}",
                 r"faulty\.json cannot be read: a number in it is too long"),
    session_case("session_npy_huge_shape",
                 {"settings": {"target": "killhead", "given": {"input": {"npy": NPY_HUGE}}}},
                 r"the tensor given for 'input' cannot be read \(its header says shape "
                 r"\(1000000000000,\)"),
    session_case("session_seed_beyond_the_form", {"settings": {"seed": 2**63 - 1}},
                 r"seed 9223372036854775807 is outside 0-2147483647; 0 used"),
    session_case("session_lone_surrogate",
                 {"function": {"kind": "catalog", "name": "\ud800"},
                  "settings": {"target": "killhead"}},
                 r"lone surrogates in its text .* were replaced by \ufffd"),
    Case("session_bad_shape", None, r"input: dimension 0 must be at least 1", "session",
         session={"format": session_files.FORMAT, "version": 1,
                  "settings": {"target": "killhead", "shapes": {"input": "0x5"}}},
         kept=("shapes", "input", "0x5")),
    # -- the watched file (hot reload; no CLI equivalent)
    Case("watched_file_deleted", None, r"deleted.*Watched stays loaded", "reload",
         app_expect="notice"),
    Case("watched_file_broken", None, r"Syntax error in watched\.py", "reload",
         where="{tmp}/watched.py:"),
    # -- a backward that never returns (app only: the CLI would hang)
    Case("backward_infinite_loop", None, r"cancelled", "stuck"),
]


def params():
    out = []
    for case in CASES:
        for front in ("cli", "app"):
            marks = []
            reason = case.cli_xfail if front == "cli" else case.app_xfail
            if reason:
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            if front == "cli" and case.argv is None:
                marks.append(pytest.mark.skip(reason="no CLI equivalent"))
            out.append(pytest.param(case, front, id=f"{case.id}-{front}", marks=marks))
    return out


# ---- fixtures ---------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    return write_files(folder)


@pytest.fixture
def window(window):
    """The shared window at 1200x800, where "several Functions" gets no choice."""
    window.resize(1200, 800)
    window.byof.chooser = lambda parent, where, names: None
    return window


def expand(text, files):
    return text.format(**files) if text else text


# ---- the suite --------------------------------------------------------------------------------
@pytest.mark.parametrize(("case", "front"), params())
def test_fault(case, front, request, files):
    if case.id.startswith("device_cuda") and torch.cuda.is_available():
        pytest.skip("cuda is available here")
    if case.id.startswith("device_mps") and torch.backends.mps.is_available():
        pytest.skip("mps is available here")
    if front == "cli":
        check_cli(case, files, request.getfixturevalue("capsys"))
    else:
        check_app(case, files, request.getfixturevalue("qtbot"),
                  request.getfixturevalue("window"))


def check_cli(case, files, capsys):
    argv = [expand(a, files) for a in case.argv]
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse refuses an option value: usage plus one error line
        code = exc.code
    out, err = capsys.readouterr()
    assert code == case.code, (code, out, err)
    assert "Traceback" not in out + err
    text = flat(err if case.cli_stream == "err" else out)
    assert re.search(case.message, text), text
    if case.cli_stream == "err":
        assert text.startswith(("customgrad: ", "usage: customgrad")), text
        assert err.strip().count("\n\n") == 0  # one paragraph
        assert not out.strip()
    else:
        assert not err.strip()
    if case.where:
        assert text.count(expand(case.where, files)) == 1, text  # said once


def open_target(qtbot, win, spec):
    with qtbot.waitSignal(win.session.jacobianReady, timeout=TIMEOUT) as blocker:
        win.session.set_target(spec)
    return blocker.args[0]


def check_app(case, files, qtbot, win):
    s = win.session
    notices: list[str] = []
    errors: list[Exception] = []
    reports = []
    s.notice.connect(notices.append)
    s.runNotice.connect(notices.append)  # (a NaN's: about the Function's run)
    s.errorRaised.connect(errors.append)
    s.jacobianReady.connect(reports.append)
    message = case.app_message or case.message

    if case.start:
        open_target(qtbot, win, case.start)
        errors.clear()
        reports.clear()

    if case.kind == "update":
        s.update(**case.changes)
    elif case.kind == "target":
        s.set_target(expand(case.target, files))
    elif case.kind == "session":
        path = Path(files["tmp"]) / "faulty.json"
        if isinstance(case.session, str):
            path.write_text(case.session)
        elif case.session is not None:
            path.write_text(json.dumps(case.session))
        win.classroom.open_session(path)
    elif case.kind == "reload":
        watched = Path(files["tmp"]) / "watched.py"
        open_target(qtbot, win, str(watched))
        assert win.byof.watched == str(watched)
        errors.clear()
        if case.id == "watched_file_deleted":
            watched.unlink()
        else:
            watched.write_text(WATCHED.format(version=2).replace("x * 2", "x * (2"))
    elif case.kind == "stuck":
        failed = []
        s.jacobianFailed.connect(failed.append)
        with qtbot.waitSignal(s.jacobianStarted, timeout=TIMEOUT):
            s.set_target(fn("FaultInfiniteLoop"))
        time.sleep(0.3)  # let the job enter the loop
        assert not reports and s.job is not None and not s.job.done
        s.cancel_check()
        # Cancel takes effect at the loop's next bytecode; the limit only bounds a test that
        # would otherwise wait forever, with room for a loaded machine
        qtbot.waitUntil(lambda: bool(failed), timeout=10_000)
        assert re.search(message, failed[-1]), failed
        qtbot.waitUntil(lambda: s.job is None or s.job.done, timeout=3000)
    else:  # pragma: no cover
        raise AssertionError(case.kind)

    # -- the reason is shown
    if case.app_expect == "error":
        if case.kind != "stuck":
            qtbot.waitUntil(lambda: bool(errors), timeout=TIMEOUT)
            assert win.errors.isVisible()
            text = flat(win.errors.text())
            assert re.search(message, text), text
            assert "Traceback" not in text
            if case.where:
                assert text.count(expand(case.where, files)) == 1, text  # said once
    elif case.app_expect == "notice":
        qtbot.waitUntil(lambda: any(re.search(message, flat(n)) for n in notices),
                        timeout=TIMEOUT)
        assert win.notice.isVisibleTo(win)
        assert re.search(message, flat(win.notice.text())), win.notice.text()
    elif case.app_expect == "mismatch":
        qtbot.waitUntil(lambda: bool(reports), timeout=TIMEOUT)
        assert not reports[-1].passed
        assert not errors
    if case.kind == "session" and case.kept is not None:
        qtbot.waitUntil(lambda: bool(errors), timeout=TIMEOUT)
        assert re.search(message, flat(win.errors.text()))

    # -- nothing typed is lost
    if case.kept is not None:
        table, key, value = case.kept
        held = getattr(s.settings, table)
        assert (held if key is None else held.get(key)) == value, held

    # -- and the window is still usable: the user puts a bad scalar setting back (those stay
    # for every Function, by design) and loads killhead
    defaults = Settings()
    scalars = {k: getattr(defaults, k) for k in case.changes
               if k not in ("shapes", "constants", "init")}
    if scalars:
        s.update(**scalars)
    if s.target is None or s.target.spec != "killhead":
        report = open_target(qtbot, win, "killhead")
    else:  # the fault was in killhead's own inputs: the user clears them
        with qtbot.waitSignal(s.jacobianReady, timeout=TIMEOUT) as blocker:
            s.update(shapes={})
        report = blocker.args[0]
    assert report.passed
    assert not win.errors.isVisible()
