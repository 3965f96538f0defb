"""The customgrad CLI as a user meets it: help and version, names, constants guessed for
Functions loaded by import path, the projected check's options and JSON, a closed pipe."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from customgrad import cli
from customgrad.checking.jacobian import ATOL, EPS, RTOL
from customgrad.targets import catalog


def run_cli(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse: --help, --version, a refused option value
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# ---- help and version -------------------------------------------------------------------------
def option_help(out: str) -> dict[str, str]:
    """``--option: its help text`` from argparse's options section."""
    section = out.split("options:", 1)[1].split("\n\n", 1)[0]
    entries: dict[str, str] = {}
    current = None
    for line in section.splitlines():
        match = re.match(r"  (-[^\s,]+(?:, --\S+)?)(?: \S+)?(?:\s{2,}(.*))?$", line)
        if match:
            current = match.group(1).split(", ")[-1]
            entries[current] = match.group(2) or ""
        elif current:
            entries[current] = f"{entries[current]} {line.strip()}".strip()
    return entries


@pytest.mark.parametrize("command", ["check", "run"])
def test_every_option_has_help_and_its_default(capsys, command):
    code, out, _ = run_cli(capsys, command, "--help")
    assert code == 0
    assert "``" not in out
    helped = option_help(out)
    assert {"--help", "--shape", "--seed", "--json"} <= set(helped)
    for option, text in helped.items():
        assert text, f"{option} has no help"
    defaults = {"--device": "(default: cpu)", "--seed": "(default: 0)"}
    if command == "check":
        defaults |= {"--eps": f"(default: {EPS})", "--atol": f"(default: {ATOL})",
                     "--rtol": f"(default: {RTOL})", "--memory-cap": "(default: 1.0)",
                     "--projected": "default: 8)", "--dtype": "(default: float64)"}
    else:
        defaults |= {"--steps": "(default: 5)", "--lr": "(default: 1.0)",
                     "--loss": "(default: mse)", "--optimizer": "(default: sgd)",
                     "--dtype": "(default: float32)"}
    for option, default in defaults.items():
        assert default in helped[option], (option, helped[option])


def test_top_level_help_has_no_markup_and_lists_the_exit_codes(capsys):
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0
    assert "``" not in out
    assert "141" in out and "2 any error" in " ".join(out.split())


def test_version(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0
    assert out.startswith("customgrad (autograd-playground) ") and out.strip().split()[-1]

    def missing(name):
        raise cli.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(cli.importlib.metadata, "version", missing)
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and "not installed" in out


def test_memory_cap_is_refused_in_gib(capsys):
    code, out, err = run_cli(capsys, "check", "killhead", "--memory-cap", "-1")
    assert code == 2 and not out
    assert "GIB must be a positive number of GiB, not -1" in err
    assert "bytes" not in err and "1073741824" not in err


# ---- the projected check ----------------------------------------------------------------------
@pytest.mark.parametrize("probes", ["0", "-2"])
def test_projected_needs_at_least_one_probe(capsys, probes):
    code, out, err = run_cli(capsys, "check", "killhead", "--projected", probes)
    assert code == 2 and not out
    assert f"PROBES must be at least 1, not {probes}" in err
    assert "Traceback" not in err


def test_projected_json_has_the_keys_of_the_full_check(capsys):
    code, out, _ = run_cli(capsys, "check", "linear_bug", "--json")
    full = json.loads(out)
    assert code == 1
    code, out, _ = run_cli(capsys, "check", "linear_bug", "--json", "--projected", "4")
    projected = json.loads(out)
    assert code == 1
    promised = {"passed", "max_abs_error", "max_rel_error", "mismatches", "nan_entries",
                "entries", "worst", "blocks", "eps", "atol", "rtol", "notes", "target", "title",
                "function"}
    assert promised <= set(full) and promised <= set(projected)
    assert projected["kind"] == "projected"
    assert projected["entries"] == len(projected["probes"]) == len(projected["blocks"]) == 4
    assert projected["mismatches"] == sum(not b["passed"] for b in projected["blocks"]) >= 1
    assert set(full["worst"]) <= set(projected["worst"])
    assert set(full["blocks"][0]) <= set(projected["blocks"][0])
    worst = projected["blocks"][projected["worst"]["probe"]]
    assert not worst["passed"]
    assert projected["worst"]["abs_error"] == max(b["abs_error"] for b in projected["blocks"])
    code, out, _ = run_cli(capsys, "check", "killhead", "--json", "--projected", "2")
    passing = json.loads(out)
    assert code == 0 and passing["passed"] and passing["mismatches"] == 0


def test_projected_text_names_the_worst_probe(capsys):
    code, out, _ = run_cli(capsys, "check", "linear_bug", "--projected", "3")
    assert code == 1
    assert re.search(r"^worst probe: #\d: analytic ", out, re.MULTILINE)


# ---- constants of Functions loaded by import path --------------------------------------------
@pytest.mark.parametrize(("target", "name", "value", "reason"), [
    ("customgrad.targets.gallery.seeds:MulConstant", "constant", 2.0,
     "backward returns None for it"),
    ("customgrad.targets.gallery.seeds:KillHead", "n", 2, "forward does not take a tensor there"),
])
def test_plain_numbers_by_import_path_are_constants(capsys, target, name, value, reason):
    code, out, err = run_cli(capsys, "check", target)
    assert code == 0, (out, err)
    assert "PASSED" in out
    note = " ".join(out.split())
    assert f"note: {name} was taken as the constant {value!r} (no annotation, no default; " \
           f"{reason}); give its value with --const {name}=VALUE" in note
    code, out, _ = run_cli(capsys, "check", target, "--json")
    data = json.loads(out)
    assert code == 0 and data["passed"]
    assert data["guessed_constants"] == [
        {"name": name, "value": value, "reason": f"no annotation, no default; {reason}"}]


def test_a_given_constant_is_not_a_guess(capsys):
    code, out, _ = run_cli(capsys, "check", "customgrad.targets.gallery.seeds:KillHead", "--const",
                           "n=3", "--json")
    data = json.loads(out)
    assert code == 0 and data["guessed_constants"] == []
    code, out, _ = run_cli(capsys, "check", "customgrad.targets.gallery.seeds:MulConstant",
                           "--const",
                           "constant=2.5")
    assert code == 0 and "taken as the constant" not in out


def test_guessed_constants_still_catch_a_bug(capsys):
    """2, not 1: a backward that forgets to scale by the constant still disagrees."""
    code, out, _ = run_cli(capsys, "check", "customgrad.targets.gallery.bugs:MulConstantBuggy")
    assert code == 1 and "FAILED" in out and "taken as the constant 2.0" in out
    code, out, _ = run_cli(capsys, "check", "customgrad.targets.gallery.bugs:KillHeadBuggy")
    assert code == 1 and "FAILED" in out


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no POSIX priorities here")
def test_a_check_from_the_command_line_runs_at_the_callers_priority(capsys, tmp_path):
    """Only the app's workers run below their window: the CLI's own process only waits on
    its check's child, which runs as the user started the CLI (as high as its ``nice``)."""
    path = tmp_path / "standing.py"
    path.write_text(textwrap.dedent('''
        import os
        import sys

        import torch

        print(f"priority {os.getpriority(os.PRIO_PROCESS, 0)}", file=sys.stderr)


        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * 2
    '''))
    code, _, err = run_cli(capsys, "check", f"{path}:Double", "--shape", "x=3")
    assert code == 0
    assert f"priority {os.getpriority(os.PRIO_PROCESS, 0)}\n" in err


def test_a_users_copy_of_the_docs_mulconstant_passes(capsys, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(textwrap.dedent('''
        import torch


        class MulConstant(torch.autograd.Function):
            @staticmethod
            def forward(ctx, tensor, constant):
                ctx.constant = constant
                return tensor * constant

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.constant, None


        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, factor: float):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.factor, None
    '''))
    code, out, _ = run_cli(capsys, "check", f"{path}:MulConstant")
    assert code == 0 and "constant was taken as the constant 2.0" in out
    code, out, _ = run_cli(capsys, "check", f"{path}:Scale", "--json")
    data = json.loads(out)
    assert code == 0 and data["guessed_constants"] == [
        {"name": "factor", "value": 1.0, "reason": "annotated float, without a default"}]


def test_nondet_tol_lets_a_backward_vary_by_its_rounding_as_gradcheck(capsys, tmp_path):
    """A backward whose result varies by 1e-12 of itself from call to call (as atomic adds
    on a GPU sum in any order) fails gradcheck's reentrancy check at its default nondet_tol
    of 0; --nondet-tol above the gap passes it, as gradcheck(nondet_tol=...) does."""
    path = tmp_path / "jitter.py"
    path.write_text(textwrap.dedent('''
        import torch


        class Jittered(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = torch.tanh(x)
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * (1 - y * y) * (1 + 1e-12 * torch.randn_like(y))
    '''))
    code, out, _ = run_cli(capsys, "check", f"{path}:Jittered", "--json")
    data = json.loads(out)
    assert code == 1 and data["checks"]["reentrant"]["status"] == "failed"
    assert "--nondet-tol" in data["checks"]["reentrant"]["detail"]
    code, out, _ = run_cli(capsys, "check", f"{path}:Jittered", "--json", "--nondet-tol", "1e-9")
    assert code == 0 and "reentrant" not in json.loads(out)["checks"]
    code, _, err = run_cli(capsys, "check", f"{path}:Jittered", "--nondet-tol", "-1")
    assert code == 2 and "TOL must be a number >= 0, not -1" in err


def test_run_says_which_constants_it_guessed(capsys):
    code, out, err = run_cli(capsys, "run", "customgrad.targets.gallery.seeds:KillHead",
                             "--steps", "2")
    assert code == 0
    assert len(out.splitlines()) == 2  # stdout stays the losses only
    assert "customgrad: note: n was taken as the constant 2" in err
    code, out, _ = run_cli(capsys, "run", "customgrad.targets.gallery.seeds:KillHead",
                           "--steps", "1",
                           "--json")
    assert json.loads(out)["guessed_constants"][0]["name"] == "n"


# ---- one name per thing -----------------------------------------------------------------------
def test_list_shows_the_groups_as_the_app_does(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    headings = [line[:-1] for line in out.splitlines() if not line.startswith(" ")]
    assert headings == [catalog.CATEGORY_TITLES[c] for c in catalog.CATEGORIES]
    assert headings[0] == "From the lessons"
    code, out, _ = run_cli(capsys, "list", "--json")
    rows = json.loads(out)
    seed = next(r for r in rows if r["name"] == "killhead")
    assert seed["category"] == "seed" and seed["category_title"] == "From the lessons"


@pytest.mark.parametrize("command", [("check",), ("run", "--steps", "1")])
def test_json_names_the_function_as_the_text_does(capsys, command):
    _, text, _ = run_cli(capsys, command[0], "linear_bug", *command[1:])
    _, out, _ = run_cli(capsys, command[0], "linear_bug", *command[1:], "--json")
    data = json.loads(out)
    assert data["target"] == "linear_bug"
    assert data["title"] == catalog.get("linear_bug").title == "LinearFunction (find the bug)"
    assert data["function"] == "LinearFunctionBuggy"
    if command[0] == "check":
        assert text.startswith(f"{data['title']}: FAILED")


# ---- a closed pipe ----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="a pipe closed by its reader, as on Unix")
def test_a_reader_that_goes_away_ends_the_run_quietly():
    """``customgrad run killhead --steps 100000 | head -1``: no traceback, and not exit 1
    (which says the backward disagrees) but 141, as a Unix tool that SIGPIPE ends."""
    proc = subprocess.Popen([sys.executable, "-m", "customgrad", "run", "killhead", "--steps",
                             "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # what head does after its line
    err = proc.stderr.read()
    code = proc.wait()
    assert first.split()[0] == b"0"
    assert code == cli.BROKEN_PIPE == 141
    assert err == b"", err.decode()


def test_a_broken_pipe_inside_the_process_is_quiet(monkeypatch, capsys):
    class Closed:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["list"]) == 141
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


# ---- sub-checks and diagnoses -----------------------------------------------------------------
def test_a_failed_check_is_diagnosed_in_text_and_json(capsys):
    code, out, _ = run_cli(capsys, "check", "sigmoid_bug")
    assert code == 1
    assert re.search(r"^diagnosis: .*\[ignores_grad_output\]$", out, re.M), out
    code, out, _ = run_cli(capsys, "check", "sigmoid_bug", "--json")
    data = json.loads(out)
    assert code == 1 and [d["kind"] for d in data["diagnoses"]] == ["ignores_grad_output"]
    assert set(data["diagnoses"][0]) == {"block", "kind", "detail", "confidence"}
    code, out, _ = run_cli(capsys, "check", "killhead", "--json")
    assert code == 0 and json.loads(out)["diagnoses"] == []


def test_sub_checks_are_chosen_by_name_and_each_has_a_verdict(capsys):
    code, out, _ = run_cli(capsys, "check", "killhead", "--checks", "jacobian,forward_ad",
                           "--double")
    assert code == 0
    assert "checks: jacobian passed, double_backward passed, forward_ad skipped" in out
    assert "check forward_ad: skipped: KillHead defines no jvp" in out
    code, out, _ = run_cli(capsys, "check", "sigmoid_bug", "--json")
    checks = json.loads(out)["checks"]
    assert list(checks) == ["jacobian", "undefined_grad"]  # gradcheck's defaults
    assert checks["undefined_grad"]["status"] == "failed"
    code, _, err = run_cli(capsys, "check", "killhead", "--checks", "jacobian,gradients")
    assert code == 2 and "unknown check 'gradients'" in err


def test_projected_double_differentiates_the_chosen_inputs_as_gradgradcheck(capsys):
    """--double with --projected ran gradgradcheck on every float tensor, --no-grad or not:
    a filter bank whose double backward is wrong for its fixed taps only FAILED."""
    import torch

    from tests.data import parity_functions as pf

    gen = torch.Generator().manual_seed(0)
    x, taps = (torch.randn(*s, dtype=torch.float64, generator=gen) for s in ((2, 8), (3, 3)))
    expected = {
        grad: torch.autograd.gradgradcheck(pf.FilterBankTapsDetached.apply,
                                           (x.requires_grad_(), taps.requires_grad_(grad)),
                                           raise_exception=False)
        for grad in (False, True)}
    assert expected == {False: True, True: False}
    spec = "tests/data/parity_functions.py:FilterBankTapsDetached"
    for flags, passed in ((["--no-grad", "taps"], True), ([], False)):
        code, out, _ = run_cli(capsys, "check", spec, "--shape", "x=2x8", "--shape",
                               "taps=3x3", "--projected", "4", "--double", "--json", *flags)
        assert json.loads(out)["double_backward"]["passed"] is passed, flags
        assert code == (0 if passed else 1)


def test_the_json_marks_complex_axes_and_keeps_the_old_keys(capsys):
    """A complex tensor's block counts its real and imaginary parts as entries: the JSON
    said nothing of that; each block now says which of its axes are complex."""
    _code, out, _ = run_cli(capsys, "check", "complex_mul", "--json")
    blocks = json.loads(out)["blocks"]
    assert blocks and all(b["input_complex"] and b["output_complex"] for b in blocks)
    assert {"output_shape", "input_shape", "passed"} <= set(blocks[0])
    _code, out, _ = run_cli(capsys, "check", "killhead", "--json")
    assert not any(b["input_complex"] or b["output_complex"] for b in json.loads(out)["blocks"])


# ---- which method made the numerical Jacobian ---------------------------------------------------
def test_check_says_which_method_ran_in_text_and_json(capsys):
    """The verified reference with its colours and forward calls; finite differences with
    the reason (numpy in forward)."""
    code, out, _ = run_cli(capsys, "check", "killhead")
    assert code == 0
    assert out.splitlines()[-1] == (
        "method: numerical Jacobian by autograd through forward, verified by finite "
        "differences in 1 compressed direction (4 forward calls)")
    code, out, _ = run_cli(capsys, "check", "killhead", "--json")
    method = json.loads(out)["method"]
    assert method["name"] == "reference+compressed"
    assert (method["colours"], method["forwards"]) == (1, 4) and "reason" not in method
    code, out, _ = run_cli(capsys, "check", "numpy_tanh")
    assert code == 0 and out.splitlines()[-1].startswith(
        "method: numerical Jacobian by finite differences, two forward calls per column "
        "(autograd cannot see how output depends on the inputs (numpy")
    code, out, _ = run_cli(capsys, "check", "numpy_tanh", "--json")
    method = json.loads(out)["method"]
    assert method["name"] == "finite-differences" and "numpy" in method["reason"]
    assert "colours" not in method


# ---- what a student's file meets --------------------------------------------------------------
#: a backward returning NaN, beside a Function that is right (the file lists two)
NAN_BACKWARD = textwrap.dedent("""
    import torch

    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad

    class NanBackward(Double):
        @staticmethod
        def backward(ctx, grad):
            return grad * float("nan")
    """)


def test_list_names_the_functions_of_a_file_as_check_wants_them(capsys, tmp_path):
    """``check file.py`` with two Functions says "choose one": ``list file.py`` shows them
    (it was refused: unrecognized arguments)."""
    path = tmp_path / "two.py"
    path.write_text(NAN_BACKWARD)
    code, out, _ = run_cli(capsys, "list", str(path))
    assert code == 0
    assert out.splitlines() == [f"{path}:Double", f"{path}:NanBackward"]
    code, out, _ = run_cli(capsys, "list", str(path), "--json")
    assert [row["class"] for row in json.loads(out)] == ["Double", "NanBackward"]
    code, _, err = run_cli(capsys, "list", str(tmp_path / "missing.py"))
    assert code == 2 and "missing.py" in err


def test_run_stops_at_a_loss_that_is_not_finite_and_says_so(capsys, tmp_path):
    """A backward returning NaN: the losses went on as nan, exit 0."""
    path = tmp_path / "two.py"
    path.write_text(NAN_BACKWARD)
    code, out, err = run_cli(capsys, "run", f"{path}:NanBackward", "--steps", "4")
    assert code == 1
    assert [line.split()[1] for line in out.splitlines()] == [out.split()[1], "nan"]
    assert "the loss is nan at step 1: the run stops" in err
    code, out, _ = run_cli(capsys, "run", f"{path}:NanBackward", "--steps", "4", "--json")
    data = json.loads(out)
    assert code == 1 and data["losses"][1] is None and len(data["losses"]) == 2
    assert data["stopped"] == "the loss is nan at step 1"
    code, out, _ = run_cli(capsys, "run", f"{path}:Double", "--steps", "3")
    assert code == 0 and len(out.splitlines()) == 3


def test_init_help_names_randint_as_the_parser_takes_it(capsys):
    _, out, _ = run_cli(capsys, "check", "--help")
    assert "randint(a,b)" in option_help(out)["--init"]
