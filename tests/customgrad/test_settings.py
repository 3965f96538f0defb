"""Settings: defaults, validation, and loading partial or corrupt saved data."""

from __future__ import annotations

import json
import math

import pytest

from customgrad.checking import jacobian
from customgrad.errors import SpecError
from customgrad.problems.settings import Settings


def test_defaults_are_the_seed_setup():
    s = Settings()
    assert (s.target, s.dtype, s.device, s.seed, s.lr, s.loss, s.optimizer) == (
        "killhead", "float32", "cpu", 0, 1.0, "mse", "sgd")
    assert (s.eps, s.atol, s.rtol, s.memory_cap) == (
        jacobian.EPS, jacobian.ATOL, jacobian.RTOL, jacobian.MEMORY_CAP)
    s.validate()


def test_round_trip_through_json():
    s = Settings(target="linear", shapes={"weight": "5x4"}, constants={"n": 3},
                 init={"weight": "ones"}, trained={"bias": False}, dtype="float64", seed=9,
                 lr=0.5, steps=7, loss="l1", optimizer="adam", eps=1e-5, atol=1e-4, rtol=1e-2,
                 check_every=3, memory_cap=1 << 20)
    back, problems = Settings.from_dict(json.loads(json.dumps(s.to_dict())))
    assert problems == []
    assert back == s


@pytest.mark.parametrize("data", [None, [], "settings", 3, [("seed", 1)]])
def test_not_a_dict_gives_defaults(data):
    s, problems = Settings.from_dict(data)
    assert s == Settings()
    assert len(problems) == 1 and "not a JSON object" in problems[0]


def test_partial_data_keeps_the_rest_default():
    s, problems = Settings.from_dict({"target": "sigmoid", "seed": 5})
    assert problems == []
    assert s.target == "sigmoid" and s.seed == 5
    assert s.lr == Settings().lr and s.shapes == {}


@pytest.mark.parametrize("key, value, fragment", [
    ("bogus", 1, "unknown setting 'bogus'"),
    ("seed", "3", "wrong type (str)"),
    ("seed", True, "wrong type (bool)"),
    ("seed", 2.0, "wrong type (float)"),
    ("seed", -1, "seed must be"),
    ("seed", 2**63, "seed must be"),
    ("steps", -5, "steps must be"),
    ("lr", 0, "lr must be a positive number"),
    ("lr", "fast", "wrong type (str)"),
    ("lr", math.nan, "lr must be"),
    ("lr", True, "wrong type (bool)"),
    ("eps", -1e-6, "eps must be"),
    ("atol", -1.0, "atol must be"),
    ("rtol", math.inf, "rtol must be"),
    ("dtype", "float16", "dtype 'float16'"),
    ("loss", "huber", "loss 'huber'"),
    ("optimizer", "lbfgs", "optimizer 'lbfgs'"),
    ("shapes", [1, 2], "wrong type (list)"),
    ("target", None, "wrong type (NoneType)"),
    ("device", 0, "wrong type (int)"),
    ("check_every", -1, "check_every must be"),
    ("memory_cap", 0, "memory_cap must be"),
    ("memory_cap", 1.5, "wrong type (float)"),
])
def test_bad_value_gives_default_and_a_problem(key, value, fragment):
    s, problems = Settings.from_dict({key: value, "seed": 4} if key != "seed" else {key: value})
    default = Settings()
    if key != "bogus":
        assert getattr(s, key) == getattr(default, key)
    assert len(problems) == 1
    assert fragment in problems[0]
    if key != "seed":
        assert s.seed == 4  # the good values around a bad one are kept


@pytest.mark.parametrize("key, value, fragment", [
    ("shapes", 5.5, "shapes for 'x' is not text (5.5)"),
    ("shapes", [3, "8"], "shapes for 'x' is not text ([3, '8'])"),
    ("shapes", [3, True], "shapes for 'x' is not text ([3, True])"),
    ("shapes", None, "shapes for 'x' is not text (None)"),
    ("init", {"a": 1}, "init for 'x' is not text"),
    ("trained", "yes", "trained for 'x' is not true or false ('yes')"),
    ("differentiate", 0, "differentiate for 'x' is not true or false (0)"),
    ("constants", {"a": 1}, "constants for 'x' is not a number, text"),
    ("constants", 10 ** 300, "constants for 'x' is not a number"),
    ("constants", [[[[[1]]]]], "constants for 'x' is not a number"),
])
def test_a_tables_entry_of_the_wrong_type_is_dropped_with_a_problem(key, value, fragment):
    """A session's table entries reached the form as they were: 'differentiate': {"x": "no"}
    raised a TypeError in the form's checkbox (a traceback, the form left half built)."""
    s, problems = Settings.from_dict({key: {"x": value, "y": GOOD[key]}})
    assert len(problems) == 1 and fragment in problems[0], problems
    assert "default used" in problems[0]
    assert "x" not in getattr(s, key) and "y" in getattr(s, key)  # the rest kept


@pytest.mark.parametrize("item", [{"shape": [3]}, {"npy": 5}, "AAAA"])
def test_a_given_tensor_without_npy_text_says_so(item):
    """It said "cannot be read (argument should be a bytes-like object or ASCII string, not
    'NoneType')"."""
    s, problems = Settings.from_dict({"given": {"x": item}})
    assert problems == ["the tensor given for 'x' has no npy text; ignored"]
    assert s.given == {}


GOOD = {"shapes": "3x8", "init": "normal", "trained": True, "differentiate": False,
        "constants": 4}


def test_an_older_sessions_numeric_shape_is_read_as_text():
    s, problems = Settings.from_dict({"shapes": {"x": [3, 8], "y": 5, "z": []}})
    assert problems == [] and s.shapes == {"x": "3x8", "y": "5", "z": ""}


def test_plain_constants_of_every_kind_are_kept():
    constants = {"a": 2, "b": 0.5, "c": "text", "d": True, "e": None, "f": [1, 2.5, [3]]}
    s, problems = Settings.from_dict({"constants": constants})
    assert problems == [] and s.constants == constants


def test_int_is_accepted_for_a_float_setting():
    s, problems = Settings.from_dict({"lr": 2, "atol": 0})
    assert problems == []
    assert s.lr == 2.0 and isinstance(s.lr, float)
    assert s.atol == 0.0


def test_many_problems_at_once():
    s, problems = Settings.from_dict({"seed": "x", "lr": -1, "extra": 1, "dtype": "float64"})
    assert len(problems) == 3
    assert s.dtype == "float64" and s.seed == 0 and s.lr == 1.0


@pytest.mark.parametrize("field, value", [
    ("dtype", "half"), ("loss", "x"), ("optimizer", "x"), ("seed", -3), ("seed", True),
    ("steps", 1.5), ("lr", 0.0), ("eps", 0.0), ("atol", -1), ("rtol", math.nan),
    ("check_every", -1), ("memory_cap", -1),
])
def test_validate_names_the_field(field, value):
    s = Settings(**{field: value})
    with pytest.raises(SpecError) as info:
        s.validate()
    assert info.value.field == field


@pytest.mark.parametrize("field, value, fragment", [
    ("lr", 0.0, "lr must be a positive number (greater than 0), not 0.0."),
    ("eps", -1e-6, "eps must be a positive number (greater than 0)"),
    ("eps", math.inf, "eps must be a finite number, not inf."),
    ("atol", -1.0, "atol must be a number >= 0, not -1.0."),
    ("rtol", math.nan, "rtol must be a finite number"),
    ("lr", "fast", "lr must be a number, not 'fast'."),
    ("steps", -5, "steps must be a whole number >= 0"),
    ("dtype", "half",
     "dtype 'half' is not supported; use float32, float64, complex64, complex128."),
    ("loss", "huber", "loss 'huber' is unknown; use mse, l1, sse."),
])
def test_check_field_is_the_rule_validate_raises(field, value, fragment):
    """One rule per field: what check_field says is what validate raises (the app's fields
    show it as the user types)."""
    problem = Settings.check_field(field, value)
    assert problem is not None and fragment in problem
    with pytest.raises(SpecError) as info:
        Settings(**{field: value}).validate()
    assert str(info.value) == problem and info.value.field == field


def test_check_field_accepts_good_values_and_knows_its_fields():
    for field, value in (("lr", 0.5), ("eps", 1e-6), ("atol", 0), ("rtol", 0.0),
                         ("seed", 3), ("dtype", "float64"), ("target", "anything")):
        assert Settings.check_field(field, value) is None  # target: no rule of its own
    with pytest.raises(ValueError, match="no field 'learning_rate'"):
        Settings.check_field("learning_rate", 0.1)
