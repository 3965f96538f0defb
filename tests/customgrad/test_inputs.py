"""Input specs: parsing shapes/constants/inits/devices, deriving specs, overrides, seeded draws."""

from __future__ import annotations

import re
import tempfile
import textwrap
from pathlib import Path
from typing import Optional

import pytest
import torch

from customgrad.checking.jacobian import compare
from customgrad.errors import Cancelled, FunctionError, SpecError
from customgrad.function.dtypes import parse_dtype
from customgrad.function.inputs import (
    DEFAULT_SHAPE,
    MAX_ELEMENTS,
    UNANNOTATED,
    ConstSpec,
    TensorSpec,
    apply_overrides,
    available_devices,
    derive_specs,
    draw,
    format_shape,
    forward_parameters,
    guessed_parameters,
    is_new_style,
    parse_const,
    parse_device,
    parse_init,
    parse_shape,
)
from customgrad.problems.problem import Problem, build, infer_constants
from customgrad.problems.settings import Settings
from customgrad.targets import catalog
from customgrad.targets.loader import load_file

U = load_file(Path(__file__).resolve().parents[1] / "data" / "user_functions.py")

# ------------------------------------------------------------------ shapes


@pytest.mark.parametrize("text, shape", [
    ("3x8", (3, 8)), (" 3 x 8 ", (3, 8)), ("3X8", (3, 8)), ("3 X 8", (3, 8)), ("5", (5,)),
    ("2x3x4", (2, 3, 4)), ("03x8", (3, 8)), ((2, 3), (2, 3)), ([4], (4,)), ((3.0, 2), (3, 2)),
    ("1x1x1x1x1x1x1x1", (1,) * 8),
])
def test_parse_shape_accepts(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text, message", [
    ("0", "at least 1"), ("-1", "at least 1"), ("3x0", "at least 1"), ("0x3", "at least 1"),
    ("-3", "at least 1"), ("2.5", "whole number"), ("abc", "not a number"),
    ("3xa", "not a number"), ("", "empty"), ("   ", "empty"), ("[]", "not a shape"),
    ("nan", "whole number"), ("100000x100000", "more than"),
    ("1x" * 8 + "1", "more than the 8"), ((), "empty"), ((2, -3), "at least 1"),
    # the one grammar, N(xN)*: nothing else is read as a shape
    ("3x", "missing after the last x"), ("x3", "missing before the first x"),
    ("x", "missing before the first x"), ("3xx8", "two x's in a row; did you mean 3x8"),
    ("3x x8", "two x's in a row; did you mean 3x8"), ("3,8", "separate the dimensions with x, "
    "as in 3x8"), ("[3, 8]", "as in 3x8"), ("(3, 8)", "as in 3x8"), ("3*8", "as in 3x8"),
    ("3×8", "as in 3x8"), ("3 8", "as in 3x8"), ("3.0x2", "digits only, as 3"),
    ("1e3", "digits only, as 1000"), ("+3", "digits only"), ("٣x8", "digits only, as 3"),
    (("3",), "not a number"), ((True, 2), "not a number"), ((2.5,), "whole number"),
])
def test_parse_shape_rejects(text, message):
    with pytest.raises(SpecError, match=re.escape(message)) as info:
        parse_shape(text, name="input")
    assert info.value.field == "input"
    assert str(info.value).startswith("input:")


def test_a_zero_sized_dimension_is_refused_with_the_reason():
    """The engine has nothing to compare or descend on a tensor without elements."""
    with pytest.raises(SpecError, match="without elements has nothing to check or train"):
        parse_shape("0x3", name="input")


def test_parse_shape_element_limit_is_inclusive():
    assert parse_shape(f"{MAX_ELEMENTS}") == (MAX_ELEMENTS,)
    with pytest.raises(SpecError):
        parse_shape(f"{MAX_ELEMENTS + 1}")


def test_format_shape():
    assert format_shape((3, 8)) == "3x8"
    assert format_shape(()) == "scalar"
    assert parse_shape(format_shape((2, 5, 1))) == (2, 5, 1)
    assert parse_shape(format_shape(())) == () == parse_shape(" Scalar ")


# ------------------------------------------------------------------ constants, init, dtype, device


@pytest.mark.parametrize("text, like, value", [
    ("3", 2, 3), ("3.0", 2, 3), ("-7", 0, -7), ("2.5", 1.0, 2.5), ("3", 1.0, 3.0),
    ("true", False, True), ("off", True, False), ("1", True, True), ("No", True, False),
    ("hello", "x", "hello"), ("none", 3, None), ("NULL", 2.0, None),
    ("4", None, 4), ("4.5", None, 4.5), ("word", None, "word"), ("True", None, True),
])
def test_parse_const(text, like, value):
    got = parse_const(text, like)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text, like", [("2.5", 2), ("abc", 2), ("maybe", True), ("x", 1.0)])
def test_parse_const_rejects(text, like):
    with pytest.raises(SpecError) as info:
        parse_const(text, like, name="n")
    assert info.value.field == "n"


@pytest.mark.parametrize("text, value", [
    ("normal", "normal"), (" Zeros ", "zeros"), ("ones", "ones"),
    ("uniform(-1,1)", "uniform(-1,1)"), ("uniform( -0.5 , 0.5 )", "uniform(-0.5,0.5)"),
    ("uniform(1e-3, 2E1)", "uniform(1e-3,2e1)"),
])
def test_parse_init(text, value):
    assert parse_init(text) == value


@pytest.mark.parametrize("text", ["gauss", "uniform(1,1)", "uniform(2,1)", "uniform(1)",
                                  "uniform(a,b)", ""])
def test_parse_init_rejects(text):
    with pytest.raises(SpecError):
        parse_init(text, name="x")


def test_parse_dtype():
    assert parse_dtype("float32") is torch.float32
    assert parse_dtype("torch.float64") is torch.float64
    for bad in ("float16", "int64", "double"):
        with pytest.raises(SpecError) as info:
            parse_dtype(bad)
        assert info.value.field == "dtype"


def test_parse_device():
    assert parse_device("cpu") == torch.device("cpu")
    assert parse_device(" CPU ") == torch.device("cpu")
    assert available_devices()[0] == "cpu"
    with pytest.raises(SpecError, match="unknown"):
        parse_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "CUDA"])
def test_parse_device_cuda_unavailable(name):
    with pytest.raises(SpecError, match="not available") as info:
        parse_device(name)
    assert info.value.field == "device"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_parse_device_cuda_index_out_of_range():
    with pytest.raises(SpecError, match="CUDA devices"):
        parse_device(f"cuda:{torch.cuda.device_count()}")


# ------------------------------------------------------------------ deriving specs


def test_derive_specs_ctx_style_without_annotations():
    specs = derive_specs(catalog.get("killhead").function)
    # n has no default and no annotation: guessed a tensor (the gallery overrides it)
    assert specs == [TensorSpec("input"), TensorSpec("n")]
    linear = derive_specs(catalog.get("linear").function)
    assert linear == [TensorSpec("input"), TensorSpec("weight"), ConstSpec("bias", None)]


def test_derive_specs_from_annotations_and_defaults():
    specs = {s.name: s for s in derive_specs(U.Annotated)}
    assert list(specs) == ["x", "y", "scale", "steps", "mask", "flag", "label"]
    assert specs["x"] == TensorSpec("x")
    assert specs["y"] == TensorSpec("y")  # no default, no annotation
    assert specs["scale"] == ConstSpec("scale", 1.0)  # float annotation, no default
    assert specs["steps"] == ConstSpec("steps", 3)  # int default
    assert isinstance(specs["mask"], TensorSpec)  # Tensor | None = None: the annotation wins
    assert specs["flag"] == ConstSpec("flag", True)
    assert specs["label"] == ConstSpec("label", "a")
    assert all(s.shape == DEFAULT_SHAPE for s in specs.values() if isinstance(s, TensorSpec))


def test_tensor_annotation_with_none_default_is_a_tensor_input():
    class OptionalBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor, bias: torch.Tensor = None, scale=None):
            return x if bias is None else x + bias

        @staticmethod
        def backward(ctx, grad):
            return grad, grad, None

    specs = {s.name: s for s in derive_specs(OptionalBias)}
    assert specs["bias"] == TensorSpec("bias")  # written `Tensor = None`: still a tensor
    assert specs["scale"] == ConstSpec("scale", None)  # no annotation: the default decides


def test_optional_number_annotations_are_constants_and_guesses_are_named():
    class Typed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, n: int, k, m: int | None, t: torch.Tensor | None, y, z=None):
            return x

        @staticmethod
        def backward(ctx, g):
            return g, None, None, None, None, None, None

    Typed.forward.__annotations__["k"] = Optional[float]  # noqa: UP045 (an object, not text)
    specs = {s.name: s for s in derive_specs(Typed)}
    assert specs["n"] == ConstSpec("n", 1) and specs["k"] == ConstSpec("k", 1.0)
    assert specs["m"] == ConstSpec("m", 1)
    assert isinstance(specs["t"], TensorSpec) and isinstance(specs["y"], TensorSpec)
    assert guessed_parameters(Typed) == {
        "x": UNANNOTATED, "n": "annotated int, without a default",
        "k": "annotated float, without a default", "m": "annotated int, without a default",
        "y": UNANNOTATED}


# ------------------------------------------------------------------ constants found by probing


def probe(source: str, **settings) -> Problem:
    """Build a Function defined in ``source`` (a file, as a user would give it)."""
    folder = Path(tempfile.mkdtemp())
    path = folder / "probed.py"
    path.write_text("import torch\nfrom torch.autograd import Function\n\n"
                    + textwrap.dedent(source))
    return build(Settings(target=str(path), dtype="float64", **settings))


def test_backward_returning_none_makes_a_number_parameter_a_constant():
    p = probe("""
        class Scale(Function):
            @staticmethod
            def forward(ctx, x, factor):
                ctx.factor = factor
                return x * factor

            @staticmethod
            def backward(ctx, g):
                return g * ctx.factor, None
    """)
    assert p.specs[1] == ConstSpec("factor", 2.0)  # it takes a float: a float it is
    assert [g.name for g in p.guesses] == ["factor"]
    assert "backward returns None for it" in p.guesses[0].reason
    assert p.compare().passed


def test_an_int_where_forward_takes_no_float():
    p = probe("""
        class Repeat(Function):
            @staticmethod
            def forward(ctx, x, times):
                ctx.times = times
                return x.repeat(times, 1)

            @staticmethod
            def backward(ctx, g):
                return g.reshape(ctx.times, -1, g.shape[-1]).sum(0), None
    """)
    assert p.specs[1] == ConstSpec("times", 2)
    assert "forward does not take a tensor there" in p.guesses[0].reason
    assert p.compare().passed


def test_a_probe_never_takes_every_tensor_away():
    """A backward returning None for its only input is wrong, not a sign of a constant."""
    p = probe("""
        class Lazy(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return None
    """)
    assert isinstance(p.specs[0], TensorSpec) and not p.guesses
    assert not p.compare().passed


def test_a_tensor_with_a_gradient_stays_a_tensor_and_settings_are_not_guessed():
    p = probe("""
        class Mul(Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * y

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * y, g * x
    """)
    assert all(isinstance(s, TensorSpec) for s in p.specs) and not p.guesses
    given = probe("""
        class KillHead(Function):
            @staticmethod
            def forward(ctx, x, n):
                ctx.n = n
                out = x.clone()
                out[:, :n] = 0
                return out

            @staticmethod
            def backward(ctx, g):
                g = g.clone()
                g[:, :ctx.n] = 0
                return g, None
    """, constants={"n": "3"})
    assert given.specs[1] == ConstSpec("n", 3) and not given.guesses


@pytest.mark.parametrize("body", [
    "raise SystemExit(3)",  # anything user code raises only fails that probe
    "raise RuntimeError('never')",
])
def test_a_probe_that_raises_leaves_the_error_to_the_check(body):
    with pytest.raises(FunctionError, match=r"Broken\.forward raised"):
        probe(f"""
            class Broken(Function):
                @staticmethod
                def forward(ctx, x, n):
                    {body}

                @staticmethod
                def backward(ctx, g):
                    return g, None
        """)


def test_infer_constants_passes_cancellation_through():
    class Stops(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, n):
            raise Cancelled("stop")

        @staticmethod
        def backward(ctx, g):
            return g, None

    specs = derive_specs(Stops)
    with pytest.raises(Cancelled):
        infer_constants(Stops, specs, ["x", "n"], torch.float64, torch.device("cpu"))


def test_derive_specs_setup_context_style():
    assert is_new_style(U.ScaleNewStyle)
    assert not is_new_style(U.Square)
    assert is_new_style(catalog.get("cube_newstyle").function)
    assert [p.name for p in forward_parameters(U.ScaleNewStyle)] == ["x", "factor", "bias"]
    assert [p.name for p in forward_parameters(U.Square)] == ["x"]  # ctx dropped
    specs = derive_specs(U.ScaleNewStyle)
    assert specs[0] == TensorSpec("x")
    assert specs[1] == ConstSpec("factor", 2.0)
    assert isinstance(specs[2], TensorSpec)


def test_subclass_of_new_style_function_is_new_style():
    class Child(U.ScaleNewStyle):
        pass

    assert is_new_style(Child)
    assert [p.name for p in forward_parameters(Child)] == ["x", "factor", "bias"]


def test_var_args_forward_is_refused():
    class VarArgs(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            return sum(tensors)

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(SpecError, match=r"\*tensors"):
        derive_specs(VarArgs)


# ------------------------------------------------------------------ overrides


def test_apply_overrides_shape_turns_a_constant_into_a_tensor_and_back():
    specs = derive_specs(catalog.get("linear").function)
    assert specs[2] == ConstSpec("bias", None)
    specs = apply_overrides(specs, shapes={"bias": "5", "weight": [5, 4]})
    assert specs[2] == TensorSpec("bias", (5,))
    assert specs[1] == TensorSpec("weight", (5, 4))
    back = apply_overrides(specs, constants={"bias": "none"})
    assert back[2] == ConstSpec("bias", None)
    assert back[:2] == specs[:2]


def test_apply_overrides_constants_are_parsed_like_their_default():
    specs = [TensorSpec("x"), ConstSpec("n", 2), ConstSpec("scale", 1.5), ConstSpec("flag", False)]
    out = apply_overrides(specs, constants={"n": "4", "scale": "3", "flag": "yes"})
    assert out[1:] == [ConstSpec("n", 4), ConstSpec("scale", 3.0), ConstSpec("flag", True)]
    assert type(out[2].value) is float
    assert apply_overrides(specs, constants={"n": 7})[1] == ConstSpec("n", 7)  # non-strings kept
    with pytest.raises(SpecError):
        apply_overrides(specs, constants={"n": "2.5"})


def test_apply_overrides_init_and_trained():
    specs = [TensorSpec("x"), ConstSpec("n", 2)]
    out = apply_overrides(specs, init={"x": "uniform(-1, 1)"}, trained={"x": False})
    assert out[0] == TensorSpec("x", init="uniform(-1,1)", trained=False)
    with pytest.raises(SpecError):
        apply_overrides(specs, init={"x": "gauss"})
    # init/trained on a constant are ignored unless a shape makes it a tensor
    assert apply_overrides(specs, init={"n": "ones"})[1] == ConstSpec("n", 2)
    assert apply_overrides(specs, shapes={"n": "2"}, init={"n": "ones"})[1] == TensorSpec(
        "n", (2,), init="ones")


@pytest.mark.parametrize("kind", ["shapes", "constants", "init", "trained"])
def test_apply_overrides_unknown_name(kind):
    specs = [TensorSpec("x"), ConstSpec("n", 2)]
    value = {"shapes": "3", "constants": "1", "init": "ones", "trained": True}[kind]
    with pytest.raises(SpecError, match="forward's parameters are x, n") as info:
        apply_overrides(specs, **{kind: {"nope": value}})
    assert info.value.field == "nope"


def test_apply_overrides_bad_shape_names_the_parameter():
    with pytest.raises(SpecError) as info:
        apply_overrides([TensorSpec("x")], shapes={"x": "0x3"})
    assert info.value.field == "x"


# ------------------------------------------------------------------ drawing


def test_draw_matches_the_global_seeded_stream():
    specs = [TensorSpec("a", (3, 8)), ConstSpec("n", 2), TensorSpec("b", (2,))]
    targets, args = draw(specs, 42, torch.float32, torch.device("cpu"), [(3, 8)])
    torch.manual_seed(42)
    y = torch.empty(3, 8).normal_()
    a = torch.empty(3, 8).normal_()
    b = torch.empty(2).normal_()
    assert torch.equal(targets[0], y)
    assert torch.equal(args[0], a) and args[1] == 2 and torch.equal(args[2], b)


def test_draw_does_not_touch_global_state():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    draw([TensorSpec("a", (100,))], 1, torch.float64, torch.device("cpu"))
    assert torch.equal(torch.rand(3), expected)


def test_draw_inits_and_dtypes():
    specs = [TensorSpec("z", (4,), init="zeros"), TensorSpec("o", (4,), init="ones"),
             TensorSpec("u", (1000,), init="uniform(2,3)"), TensorSpec("n", (2, 2))]
    _, args = draw(specs, 0, torch.float64, torch.device("cpu"))
    assert all(a.dtype == torch.float64 for a in args)
    assert torch.equal(args[0], torch.zeros(4, dtype=torch.float64))
    assert torch.equal(args[1], torch.ones(4, dtype=torch.float64))
    assert 2 <= float(args[2].min()) and float(args[2].max()) < 3
    assert args[3].shape == (2, 2)


def test_draw_is_deterministic_per_seed():
    specs = [TensorSpec("a", (5,))]
    first = draw(specs, 9, torch.float32, torch.device("cpu"))[1][0]
    again = draw(specs, 9, torch.float32, torch.device("cpu"))[1][0]
    other = draw(specs, 10, torch.float32, torch.device("cpu"))[1][0]
    assert torch.equal(first, again) and not torch.equal(first, other)


def test_keyword_only_parameters_keep_their_default():
    class KeywordOnly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, *, scale=3.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.scale

    assert derive_specs(KeywordOnly) == [TensorSpec("x")]
    report = compare(KeywordOnly, [torch.ones(2, dtype=torch.float64)])
    assert report.passed
    assert torch.equal(report.analytic, 3 * torch.eye(2, dtype=torch.float64))


def test_keyword_only_parameter_without_default_is_refused():
    class NeedsKeyword(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, *, scale):
            return x * scale

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(SpecError, match="keyword-only parameter scale"):
        derive_specs(NeedsKeyword)


@pytest.mark.parametrize("text, like, expected", [
    ("FALSE", None, False), ("true", True, True), ("false", "x", "false"), ("TRUE", "", "TRUE"),
])
def test_true_and_false_follow_the_constant_s_type(text, like, expected):
    value = parse_const(text, like)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize("like", [0.0, 1])
def test_true_or_false_for_a_number_is_an_error(like):
    with pytest.raises(SpecError, match="not a valid"):
        parse_const("false", like)
