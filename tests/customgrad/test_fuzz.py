"""Property tests: whatever the shapes, dtype, tolerances or text, the engine either answers or
raises a CustomGradError, never another exception type."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from customgrad.checking import jacobian
from customgrad.errors import CustomGradError
from customgrad.function.inputs import TensorSpec, parse_const, parse_init, parse_shape
from customgrad.problems.problem import build, specs_for
from customgrad.problems.settings import Settings
from customgrad.targets import catalog
from customgrad.targets.loader import functions_in, load_file, resolve

#: hypothesis: many examples per test
pytestmark = pytest.mark.slow


U = load_file(Path(__file__).resolve().parents[1] / "data" / "user_functions.py")
NAMES = [e.name for e in catalog.entries()]
FUZZ = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(lambda d: "x".join(map(str, d)))
tolerance = st.one_of(st.just(0.0), st.floats(1e-9, 1.0), st.just(jacobian.ATOL))


def check_report(report: jacobian.Report):
    assert isinstance(report, jacobian.Report)
    assert 0 <= report.mismatches <= report.total
    assert report.passed == (report.mismatches == 0)
    rows, cols = report.shape
    assert report.total == rows * cols
    if report.analytic is not None:
        assert report.analytic.shape == report.numerical.shape == (rows, cols)
    w = report.worst
    assert 0 <= w.row < rows and 0 <= w.col < cols
    json.dumps(report.to_dict(), allow_nan=False)
    assert report.summary().startswith("PASSED" if report.passed else "FAILED")


@FUZZ
@given(data=st.data(), name=st.sampled_from(NAMES), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**31), eps=st.floats(1e-8, 0.5), atol=tolerance, rtol=tolerance,
       keep_matrices=st.booleans())
def test_build_and_compare_answer_or_raise_custom_errors(data, name, dtype, seed, eps, atol,
                                                         rtol, keep_matrices):
    specs = specs_for(resolve(name), Settings(target=name))
    chosen = {}
    for spec in specs:
        if isinstance(spec, TensorSpec) and data.draw(st.booleans(), label=f"reshape {spec.name}"):
            chosen[spec.name] = data.draw(shapes, label=spec.name)
    s = Settings(target=name, shapes=chosen, dtype=dtype, seed=seed, eps=eps, atol=atol,
                 rtol=rtol)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = build(s).compare(keep_matrices=keep_matrices)
    except CustomGradError:
        return
    check_report(report)


@FUZZ
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 1000),
       loss=st.sampled_from(["mse", "l1", "sse"]),
       optimizer=st.sampled_from(["sgd", "momentum", "adam"]), lr=st.floats(1e-4, 10.0),
       cap=st.sampled_from([64, 4096, jacobian.MEMORY_CAP]))
def test_descent_and_capped_compare_answer_or_raise_custom_errors(name, seed, loss, optimizer,
                                                                  lr, cap):
    s = Settings(target=name, seed=seed, loss=loss, optimizer=optimizer, lr=lr, memory_cap=cap,
                 dtype="float64")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = build(s)
            records = list(problem.descent().run(2))
    except CustomGradError:
        records = None
    if records is not None:
        assert [r.step for r in records] == [0, 1]
        assert all(isinstance(r.loss, float) for r in records)
    try:
        report = build(s).compare()
    except CustomGradError:
        return
    assert jacobian.estimate_bytes(*report.shape) <= cap
    check_report(report)


@FUZZ
@given(text=st.text(max_size=20))
def test_parse_shape_never_crashes(text):
    try:
        shape = parse_shape(text)
    except CustomGradError:
        return
    assert 1 <= len(shape) <= 8 and all(isinstance(d, int) and d >= 1 for d in shape)
    assert math.prod(shape) <= 50_000_000


@FUZZ
@given(text=st.text(alphabet="0123456789xX ,*-.[]()e", max_size=12))
def test_a_shape_is_accepted_exactly_when_it_follows_the_grammar(text):
    """N(xN)*, digits only, spaces around x: accepted only then, and as the numbers written."""
    grammar = re.fullmatch(r"\s*[0-9]+(\s*[xX]\s*[0-9]+)*\s*", text)
    try:
        shape = parse_shape(text)
    except CustomGradError:
        assert not grammar or any(int(d) == 0 for d in re.findall(r"[0-9]+", text)) \
            or len(re.findall(r"[0-9]+", text)) > 8 or math.prod(
                int(d) for d in re.findall(r"[0-9]+", text)) > 50_000_000
        return
    assert grammar
    assert shape == tuple(int(d) for d in re.findall(r"[0-9]+", text))


@FUZZ
@given(dims=st.lists(st.integers(1, 9), min_size=1, max_size=8),
       spaces=st.lists(st.sampled_from(["", " ", "  "]), min_size=16, max_size=16),
       upper=st.booleans())
def test_a_shape_written_any_allowed_way_reads_back(dims, spaces, upper):
    x = "X" if upper else "x"
    text = f"{x}".join(f"{spaces[2 * i]}{d}{spaces[2 * i + 1]}" for i, d in enumerate(dims))
    assert parse_shape(text) == tuple(dims)


@FUZZ
@given(text=st.text(max_size=12),
       like=st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)))
def test_parse_const_and_init_never_crash(text, like):
    try:
        value = parse_const(text, like)
    except CustomGradError:
        value = None
    if like is not None and value is not None and not isinstance(like, bool):
        assert isinstance(value, type(like)) or (isinstance(like, float) and
                                                 isinstance(value, float))
    try:
        parse_init(text)
    except CustomGradError:
        pass


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10**20), st.floats(allow_nan=True),
              st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)
setting_keys = st.sampled_from([*Settings().to_dict(), "bogus"])


@FUZZ
@given(data=st.one_of(json_values, st.dictionaries(setting_keys, json_values, max_size=6)))
def test_settings_from_anything_are_valid(data):
    s, problems = Settings.from_dict(data)
    s.validate()  # whatever came in, what comes out is valid
    assert all(isinstance(p, str) for p in problems)


@FUZZ
@given(x=st.lists(st.floats(-3, 3), min_size=1, max_size=6), eps=st.floats(1e-7, 1e-2))
def test_square_always_agrees_with_its_exact_jacobian(x, eps):
    """For x**2 the central difference is exact up to rounding: the analytic matrix is diag(2x)."""
    t = torch.tensor(x, dtype=torch.float64)
    report = jacobian.compare(U.Square, [t], eps=eps)
    torch.testing.assert_close(report.analytic, torch.diag(2 * t), rtol=0, atol=0)
    assert report.passed


USER_FILE = Path(__file__).resolve().parents[1] / "data" / "user_functions.py"
USER_TARGETS = [f"{USER_FILE}:{f.__name__}" for f in functions_in(U)]


@FUZZ
@given(data=st.data(), target=st.sampled_from(USER_TARGETS),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 1000))
def test_user_functions_answer_or_raise_custom_errors(data, target, dtype, seed):
    """The broken, odd and correct Functions of tests/data: a Report, a finished descent, or a
    CustomGradError; never a raw exception."""
    chosen = {}
    resolved = resolve(target)
    try:
        specs = specs_for(resolved, Settings(target=target))
    except CustomGradError:
        return
    for spec in specs:
        if isinstance(spec, TensorSpec) and data.draw(st.booleans(), label=f"reshape {spec.name}"):
            chosen[spec.name] = data.draw(shapes, label=spec.name)
    s = Settings(target=target, shapes=chosen, dtype=dtype, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            problem = build(s, resolved)
        except CustomGradError:
            return
        try:
            check_report(problem.compare())
        except CustomGradError:
            pass
        try:
            list(problem.descent().run(2))
        except CustomGradError:
            pass
