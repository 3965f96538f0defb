"""customgrad check, as a new user met it (trial2): the NaN's first line named as the app's
inspector names it (F-nan-cli), --json giving a record on stdout when the check errs
(F-json-error), and shape errors offering `scalar` (F-scalar-msg)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
import torch

from customgrad.errors import SpecError
from customgrad.function.inputs import parse_shape
from tests.customgrad.test_cli import run_cli

NAN_BACK = textwrap.dedent('''\
    import torch
    from torch.autograd import Function


    class NaNBack(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * (x - x) / (x - x)
    ''')

TOO_FEW = textwrap.dedent('''\
    import torch
    from torch.autograd import Function


    class TooFew(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g
    ''')


def test_the_cli_names_the_line_where_backwards_nan_first_appears(capsys, tmp_path):
    path = tmp_path / "nan_back.py"
    path.write_text(NAN_BACK)
    code, out, _ = run_cli(capsys, "check", f"{path}:NaNBack")
    assert code == 1
    assert ("backward's gradient for x contains NaN or Inf at these inputs, first appears at "
            "nan_back.py:14 (in backward)") in out


def test_json_prints_the_error_as_a_record_and_keeps_exit_code_2(capsys, tmp_path):
    path = tmp_path / "too_few.py"
    path.write_text(TOO_FEW)
    code, out, err = run_cli(capsys, "check", f"{path}:TooFew", "--json")
    assert code == 2
    assert "returned 1 gradient" in err  # (the message stays on stderr too)
    record = json.loads(out)
    assert record["passed"] is None and record["target"] == f"{path}:TooFew"
    error = record["error"]
    assert error["kind"] == "FunctionError" and "returned 1 gradient" in error["message"]
    assert error["file"] == str(path) and error["line"] == 12 and error["phase"] == "backward"


def test_json_prints_a_loading_error_as_a_record(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "check", f"{tmp_path / 'missing.py'}:X", "--json")
    assert code == 2
    assert json.loads(out)["error"]["kind"] == "TargetError"


@pytest.mark.parametrize("text", ["", "()", "  "])
def test_an_empty_shape_offers_scalar_the_0_d_spelling(text):
    """(trial2 F-scalar-msg: '' and '()' were refused without a word of `scalar`)"""
    with pytest.raises(SpecError, match=r"scalar for a 0-d tensor") as info:
        parse_shape(text, "t")
    assert str(info.value).startswith("t: ")
    assert parse_shape("scalar", "t") == ()



def _spoiled(value: float, where: tuple) -> type:
    """A right backward of 2x with ``value`` written at ``where`` of its gradient."""

    class Spoiled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            grad = g * 2
            grad[where] = value
            return grad

    return Spoiled


_HalfNaN = _spoiled(float("nan"), (0,))  # the input's first row NaN
_OneInf = _spoiled(float("inf"), (1, 0))

def test_a_nan_difference_is_written_nan_with_its_count_not_inf():
    """trial2's F-nan-cli: a NaN difference was written "max abs error inf"."""
    import customgrad

    report = customgrad.check(_HalfNaN, torch.rand(3, 4, dtype=torch.float64))
    assert not report.passed
    assert report.nan_entries == 4 * 12  # row 0's four entries, against each output's
    assert [b.nan_entries for b in report.blocks] == [48]
    assert "max abs error nan, max rel error nan (NaN in 48 entries; eps" in report.summary()
    assert report.block_table()[1].split()[-3:] == ["nan", "nan", "MISMATCH"]
    data = report.to_dict()
    assert data["nan_entries"] == 48 and data["blocks"][0]["nan_entries"] == 48
    assert data["max_abs_error"] is None


def test_an_infinite_difference_is_still_written_inf():
    import customgrad

    report = customgrad.check(_OneInf, torch.rand(3, 4, dtype=torch.float64))
    assert not report.passed and report.nan_entries == 0
    assert "max abs error inf, max rel error inf (eps" in report.summary()



_LAYERS = '''\
import torch


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''


def _package(tmp_path, monkeypatch, name: str, source: str):
    root = tmp_path / "site" / name
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "ops.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def test_a_module_without_class_checks_its_one_function(capsys, tmp_path, monkeypatch):
    """trial3 C1: `customgrad check package.module` said "No gallery Function is called"."""
    _package(tmp_path, monkeypatch, "onelayer", _LAYERS)
    code, out, err = run_cli(capsys, "check", "onelayer.ops")
    assert code == 0, err
    assert "Twice" in out.splitlines()[0] and "PASSED" in out.splitlines()[0]


def test_a_module_with_several_functions_is_told_to_choose(capsys, tmp_path, monkeypatch):
    _package(tmp_path, monkeypatch, "twolayers",
             _LAYERS + _LAYERS.split("\n\n\n", 1)[1].replace("Twice", "Again"))
    code, _, err = run_cli(capsys, "check", "twolayers.ops")
    assert code == 2
    assert "twolayers.ops defines several Functions (Twice, Again); choose one, e.g. " \
           "twolayers.ops:Twice." in " ".join(err.split())


def test_a_misspelled_gallery_name_with_a_dot_is_still_a_gallery_typo(capsys):
    code, _, err = run_cli(capsys, "check", "no_such.thing")
    assert code == 2 and "No gallery Function is called 'no_such.thing'" in err


def test_a_misspelled_no_grad_name_offers_the_parameter(capsys):
    code, _, err = run_cli(capsys, "check", "linear", "--no-grad", "wieght")
    assert code == 2
    assert "Did you mean weight?" in " ".join(err.split())


def test_a_file_of_a_package_with_a_relative_import_is_told_its_import_path(
        capsys, tmp_path, monkeypatch):
    """trial3 R5: Python's "attempted relative import with no known parent package" alone."""
    _package(tmp_path, monkeypatch, "relpkg", "from .helpers import TWO\n" + _LAYERS)
    (tmp_path / "site" / "relpkg" / "helpers.py").write_text("TWO = 2\n")
    layer = tmp_path / "site" / "relpkg" / "ops.py"
    code, _, err = run_cli(capsys, "check", str(layer))
    assert code == 2
    said = " ".join(err.split())
    assert "ops.py is part of the package relpkg: open it by its import path, relpkg.ops, " \
           f"with {tmp_path / 'site'} on PYTHONPATH" in said
    code, out, _ = run_cli(capsys, "check", "relpkg.ops")  # as told (the path is on sys.path)
    assert code == 0 and "PASSED" in out


def test_a_module_whose_package_raises_is_said_as_an_import_error(capsys, tmp_path,
                                                                   monkeypatch):
    """(finding the module runs its package's top level: no "internal error" for it)"""
    _package(tmp_path, monkeypatch, "raisingpkg", _LAYERS)
    (tmp_path / "site" / "raisingpkg" / "__init__.py").write_text("1 / 0\n")
    code, _, err = run_cli(capsys, "check", "raisingpkg.ops")
    assert code == 2 and "internal error" not in err
    assert "ZeroDivisionError" in err and "__init__.py:1" in err


def test_looking_for_a_module_runs_no_package_code(capsys, tmp_path, monkeypatch):
    """Finding ``raisingpkg.nothere`` imports nothing (the window's process runs no user code
    to look): a name that is no module is a gallery name's typo, whatever its package does."""
    _package(tmp_path, monkeypatch, "raisingpkg2", _LAYERS)
    (tmp_path / "site" / "raisingpkg2" / "__init__.py").write_text("1 / 0\n")
    code, _, err = run_cli(capsys, "check", "raisingpkg2.nothere")
    assert code == 2 and "No gallery Function is called 'raisingpkg2.nothere'" in err
    assert "raisingpkg2" not in sys.modules
