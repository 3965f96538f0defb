"""Complex Functions are checked by gradcheck's convention and get its verdicts: a complex
input's real and imaginary parts are perturbed one at a time, a complex output is split into
its real part (grad_output 1) and imaginary part (grad_output 1j), so the Jacobian is real,
with two columns (rows) per complex element. A missing or extra conj() is diagnosed
``conjugate``."""

from __future__ import annotations

import json

import pytest
import torch

import customgrad
from customgrad import cli
from customgrad.checking import subchecks
from customgrad.checking.beyond_jacobian import projected_check
from customgrad.checking.jacobian import analytic, limits
from customgrad.errors import SpecError
from customgrad.function.dtypes import in_kind
from customgrad.problems import capture
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.loader import Target
from tests.data import complex_functions as cf


def _c(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.complex128)


def _r(*shape, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


#: (Function, arguments, the diagnosis kind of its bug: None for a correct one, "" for a bug
#: that no hypothesis explains)
CASES = [
    (cf.AbsSquared, lambda: (_c(3, 4),), None),
    (cf.AbsSquaredConj, lambda: (_c(3, 4),), "conjugate"),
    (cf.Square, lambda: (_c(3, 4),), None),
    (cf.SquareNoConj, lambda: (_c(3, 4),), "conjugate"),
    (cf.Cis, lambda: (_r(5),), None),
    (cf.CisGradNoConj, lambda: (_r(5),), "conjugate"),
    (cf.Multiply, lambda: (_c(2, 3), _c(2, 3, seed=2)), None),
    (cf.MultiplyConjGrad, lambda: (_c(2, 3), _c(2, 3, seed=2)), "conjugate"),
    (cf.MultiplyTwice, lambda: (_c(2, 3), _c(2, 3, seed=2)), "factor"),
    (cf.ExpPlusNoise, lambda: (_c(4),), ""),
    (cf.Scale, lambda: (_r(2, 3), _c(2, 3)), None),
    (cf.ScaleNoConj, lambda: (_r(2, 3), _c(2, 3)), "conjugate"),
]
IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize("function,make,kind", CASES, ids=IDS)
def test_the_verdict_is_gradchecks(function, make, kind):
    args = make()
    expected = torch.autograd.gradcheck(
        function.apply, tuple(a.clone().requires_grad_() for a in args), raise_exception=False)
    report = customgrad.check(function, *args)
    assert report.passed == expected == (kind is None)
    kinds = [d.kind for d in report.diagnoses]
    assert kinds == ([] if not kind else [kind])


def _realified_jacobian(function, args):
    """The Jacobian of the Function seen as real: complex inputs and outputs as their real
    and imaginary parts side by side (torch.func.jacrev through the autograd engine)."""
    def real(*parts):
        call = [torch.view_as_complex(p) if a.is_complex() else p for p, a in zip(parts, args)]
        out = function.apply(*call)
        return torch.view_as_real(out).reshape(-1) if out.is_complex() else out.reshape(-1)
    parts = tuple(torch.view_as_real(a) if a.is_complex() else a for a in args)
    jac = torch.autograd.functional.jacobian(real, parts)
    return torch.cat([j.reshape(j.shape[0], -1) for j in jac], dim=1)


@pytest.mark.parametrize("function,make", [(cf.AbsSquared, lambda: (_c(3, 4),)),
                                           (cf.Square, lambda: (_c(2, 3),)),
                                           (cf.Cis, lambda: (_r(4),)),
                                           (cf.Scale, lambda: (_r(2, 3), _c(2, 3)))],
                         ids=["C->R", "C->C", "R->C", "RxC->C"])
def test_matrices_are_the_real_jacobian_parts_side_by_side(function, make):
    args = make()
    report = customgrad.check(function, *args)
    want = _realified_jacobian(function, args)
    # analytic: the same backward, another route (1e-12: a few roundings)
    assert torch.allclose(report.analytic, want, rtol=1e-12, atol=1e-12)
    # numerical: central differences at eps 1e-6 on smooth polynomials/exp: error ~1e-10
    assert torch.allclose(report.numerical, want, rtol=1e-6, atol=1e-7)
    parts = [a.parts for a in report.inputs]
    assert parts == [2 if a.is_complex() else 1 for a in args]


def test_the_engine_route_gives_the_direct_rows(monkeypatch):
    """Rows through apply and the autograd engine (a real loss Re(sum(o * conj(g))))."""
    args = (_c(2, 3), _c(2, 3, seed=2))
    direct = customgrad.check(cf.MultiplyConjGrad, *args)
    monkeypatch.setattr(analytic.Backward, "direct_matches", lambda self: False)
    engine = customgrad.check(cf.MultiplyConjGrad, *args)
    assert engine.analytic_path == "engine" and direct.analytic_path == "direct"
    assert torch.allclose(engine.analytic, direct.analytic, rtol=1e-12, atol=1e-14)
    assert [d.kind for d in engine.diagnoses] == ["conjugate"]


def test_entries_are_named_with_their_part():
    report = customgrad.check(cf.AbsSquaredConj, _c(3, 4))
    w = report.worst
    assert (w.output_name, w.input_name) == ("output", "z.imag")  # the imaginary parts flip
    assert report.inputs[0].size == 24 and report.inputs[0].label(5) == "z.imag[0, 2]"
    text = report.text()
    assert "z.imag" in text


def test_complex64_is_differenced_in_complex128():
    z = _c(3).to(torch.complex64)
    report = customgrad.check(cf.Square, z)
    assert report.passed
    assert report.numerical_dtype == torch.complex128
    assert any("complex128 at the complex64 point" in n for n in report.notes)
    bug = customgrad.check(cf.SquareNoConj, z)
    assert not bug.passed and [d.kind for d in bug.diagnoses] == ["conjugate"]


def test_a_complex_dtype_converts_real_tensors():
    report = customgrad.check(cf.Square, _r(3), dtype="complex128")
    assert report.passed and report.inputs[0].parts == 2


# ---- the CLI -------------------------------------------------------------------------------

FILE = cf.__file__


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_cli_checks_complex_inputs(capsys, dtype):
    code = cli.main(["check", f"{FILE}:AbsSquaredConj", "--dtype", dtype, "--shape", "z=2x3",
                     "--in-process", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["passed"] is False
    assert [d["kind"] for d in out["diagnoses"]] == ["conjugate"]
    assert out["worst"]["input_name"] == "z.imag"
    code = cli.main(["check", f"{FILE}:Square", "--dtype", dtype, "--shape", "z=4",
                     "--in-process"])
    text = capsys.readouterr().out
    assert code == 0 and "PASSED" in text and "numerical in complex128" in text


def test_settings_take_complex_dtypes():
    Settings(target="x", dtype="complex64").validate()
    with pytest.raises(SpecError, match="complex128"):
        Settings(target="x", dtype="complex32").validate()


@pytest.mark.parametrize("function,make", [(cf.AbsSquared, lambda: (_c(3),)),
                                           (cf.Square, lambda: (_c(3),)),
                                           (cf.Cis, lambda: (_r(3),)),
                                           (cf.Multiply, lambda: (_c(3), _c(3, seed=2)))],
                         ids=["C->R", "C->C", "R->C", "CxC->C"])
def test_every_sub_check_takes_complex_tensors(function, make):
    """None casts a complex tensor to real (a warning, an error here) or fails a correct
    Function; double backward gets gradgradcheck's verdict."""
    args = make()
    report = customgrad.check(function, *args, checks=subchecks.NAMES)
    assert report.passed
    assert report.checks["double_backward"].status == "passed" and torch.autograd.gradgradcheck(
        function.apply, tuple(a.clone().requires_grad_() for a in args))
    assert report.checks["grad_dtypes"].status == "passed"
    assert report.checks["nondeterminism"].status == "passed"


def test_the_projected_check_sends_complex_inputs_to_the_full_one():
    with pytest.raises(SpecError, match="check a complex Function in full"):
        projected_check(cf.Square, [_c(3)])


# ---- the gallery pair ----------------------------------------------------------------------


@pytest.mark.parametrize("chosen,drawn", [("float64", torch.complex128),
                                          ("float32", torch.complex64),
                                          ("complex64", torch.complex64)])
def test_a_complex_gallery_entry_draws_complex_inputs(chosen, drawn):
    problem = build(Settings(target="complex_mul", dtype=chosen))
    assert [a.dtype for a in problem.args] == [drawn, drawn]


def test_the_complex_twin_is_a_conjugate_bug(capsys):
    assert cli.main(["check", "complex_mul", "--in-process"]) == 0
    capsys.readouterr()
    assert cli.main(["check", "complex_mul_bug", "--in-process", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [d["kind"] for d in out["diagnoses"]] == ["conjugate", "conjugate"]


# ---- the loop: a real loss of complex outputs ----------------------------------------------


def test_the_loop_descends_on_complex_inputs():
    problem = build(Settings(target="complex_mul", dtype="float64", lr=0.5))
    assert [t.dtype for t in problem.targets] == [torch.complex128]
    descent = problem.descent()
    z, w = (problem.args[0], problem.args[1])
    first = descent.step()
    # mse of the parts side by side: the mean of squared real and imaginary differences
    want = torch.view_as_real(z * w - problem.targets[0]).square().mean()
    assert first.loss == pytest.approx(float(want), rel=1e-12)
    losses = [descent.step().loss for _ in range(5)]
    assert losses[-1] < first.loss
    assert all(leaf.is_complex() for leaf in descent.trained.values())


def test_a_real_output_of_complex_inputs_gets_a_real_target():
    problem = build(Settings(target=f"{FILE}:AbsSquared", dtype="complex128",
                             shapes={"z": "2x3"}))
    assert [t.dtype for t in problem.targets] == [torch.float64]
    assert problem.descent().step().loss >= 0


# ---- given tensors (playground.show) -------------------------------------------------------


@pytest.mark.parametrize("precision,dtype", [(torch.float64, "complex128"),
                                             (torch.float32, "complex64")])
def test_given_complex_tensors_keep_their_kind(precision, dtype):
    a, z = _r(2, 3).to(precision), _c(2, 3).to(in_kind(precision, True))
    settings = capture.settings_for(cf.Scale, (a, z))
    assert settings.dtype == dtype
    settings.target = "complex_functions.py:Scale"
    problem = build(settings, Target(settings.target, cf.Scale, "Scale"))
    assert torch.equal(problem.args[0], a) and torch.equal(problem.args[1], z)
    assert problem.compare().passed


@pytest.mark.parametrize("offset,atol,rtol", [
    # each part 0.8e-3 off, within atol; the entry sqrt(2) * 0.8e-3 = 1.13e-3 off: FAILED
    (0.8e-3 * (1 + 1j), 1e-3, 0.0),
    # the entry 0.85e-3 off: passed
    (0.6e-3 * (1 + 1j), 1e-3, 0.0),
    # the real part 3e-3 off where n's real part is 0: beyond atol alone; within
    # atol + rtol * |n| = 1e-3 + 1e-3 * |2 z| >= 7e-3 by the moduli: passed
    (3e-3 + 0j, 1e-3, 1e-3),
], ids=["parts-pass-entry-fails", "both-pass", "part-fails-entry-passes"])
@pytest.mark.parametrize("chunk", [7, 1 << 19])  # odd tiles: an entry's parts in two
def test_a_complex_entry_is_compared_whole_as_gradcheck_does(monkeypatch, offset, atol,
                                                             rtol, chunk):
    """gradcheck compares a complex Jacobian entry by its moduli (torch.allclose on complex
    tensors), not each part on its own: so do the verdict, the mismatch count and mask."""
    monkeypatch.setattr(cf.AbsSquaredOffset, "OFFSET", offset)
    monkeypatch.setattr(limits, "CHUNK_ELEMENTS", chunk)
    monkeypatch.setattr(limits, "TILE_ELEMENTS", max(1, chunk // 3))
    z = 3j * (1 + _c(3, 4).abs())  # purely imaginary, |2 z| >= 6
    expected = torch.autograd.gradcheck(cf.AbsSquaredOffset.apply, (z.clone().requires_grad_(),),
                                        atol=atol, rtol=rtol, raise_exception=False)
    assert expected == (offset != 0.8e-3 * (1 + 1j))  # the case is the one named
    report = customgrad.check(cf.AbsSquaredOffset, z, atol=atol, rtol=rtol)
    assert report.passed == expected
    mask = report.mismatch_mask()
    assert int(mask.sum()) == report.mismatches
    # elementwise: row k holds z[k]'s entry, columns 2k and 2k+1 its two parts, which get
    # its one verdict
    diagonal = torch.kron(torch.eye(12, dtype=torch.bool), torch.ones(1, 2, dtype=torch.bool))
    assert torch.equal(mask, diagonal & (not expected))
    if offset.imag == 0:  # the worst entry is named by its worse part
        assert report.worst.input_name == "z.real"


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("function, right", [
    (cf.SquareJvp, True), (cf.SquareJvpConj, False),
    (cf.AbsSquaredJvp, True), (cf.AbsSquaredJvpNoConj, False)],
    ids=lambda x: getattr(x, "__name__", ""))
def test_forward_ad_checks_a_complex_jvp_as_gradcheck(function, right):
    """forward_ad was skipped for complex inputs and outputs; it now compares the jvp along
    a random complex direction, with gradcheck's check_forward_ad verdict (C -> C, C -> R)."""
    z = _c(3, 4)
    found = subchecks.run(function, [z], ["forward_ad"])["forward_ad"]
    assert found.status == ("passed" if right else "failed"), found.detail
    assert torch.autograd.gradcheck(function.apply, (z.clone().requires_grad_(),),
                                    check_forward_ad=True, raise_exception=False) == right
