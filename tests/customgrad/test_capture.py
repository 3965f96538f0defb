"""A Function and its arguments taken from a running program (what playground.show builds
on): given tensors as inputs, settings from forward's arguments, a Function's source
captured where no module can import it again, and given tensors in session data."""

from __future__ import annotations

import json

import pytest
import torch

from customgrad.checking.jacobian import compare
from customgrad.errors import FunctionError, SpecError, TargetError
from customgrad.function.inputs import GIVEN, TensorSpec, apply_overrides, draw, parse_init
from customgrad.problems import capture
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.loader import PROCESS_LOCAL, Target, resolve
from customgrad.workers.processes import ProblemRef, portable
from tests.data.notebook import PREFIX, SCALE, as_in_jupyter, forget_cells, run_cell

#: a "notebook": the class in one cell, its helper and constant in an earlier one
CELL_1 = '''
import math as m
import torch
OFFSET = 0.5
def shifted(x):
    return x + OFFSET * m.cos(0.0)
'''
CELL_2 = '''
class Shift(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return shifted(x) * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None
'''


@pytest.fixture
def notebook():
    namespace = {"__name__": "__main__"}
    run_cell(CELL_1, 1, namespace)
    run_cell(CELL_2, 2, namespace)
    yield namespace
    forget_cells()


@pytest.fixture(autouse=True)
def jupyter_main(monkeypatch):
    """The cells here run as in a kernel, whose ``__main__`` has no file."""
    as_in_jupyter(monkeypatch)


def _scale():
    return run_cell(SCALE, 7)["Scale"]


# ------------------------------------------------------------------ settings from arguments


def test_settings_take_the_tensors_as_given_inputs_and_the_rest_as_constants():
    scale = _scale()
    x, w = torch.randn(3, 4), torch.randn(3, 4)
    settings = capture.settings_for(scale, (x, w, 2.0))
    assert settings.init == {"x": GIVEN, "w": GIVEN}
    assert settings.constants == {"factor": 2.0}
    assert (settings.dtype, settings.device) == ("float32", "cpu")
    assert torch.equal(settings.given["x"], x) and settings.given["x"] is not x
    settings = capture.settings_for(scale, (x.double(), w.double(), 3))
    assert settings.dtype == "float64" and settings.constants == {"factor": 3}
    assert capture.settings_for(scale, (x, w, (2.0, 3))).constants == {"factor": (2.0, 3)}


@pytest.mark.parametrize(("args", "words"), [
    ((torch.randn(2),), "needs w, factor too"),
    ((torch.randn(2), torch.randn(2), 2.0, 1), "takes 3 arguments (x, w, factor), but 4"),
    ((torch.randn(2).half(), torch.randn(2), 2.0), "x is float16"),
    ((torch.randn(2), torch.randn(2), [[2.0]]), "factor is [[2.0]] (list)"),
    ((torch.randn(2), torch.randn(2), {"a": 1}), "factor is {'a': 1} (dict)"),
    ((torch.randn(2), torch.empty(0), 2.0), "w: an empty tensor"),
    ((1.0, 2.0, 2.0), "no argument is a tensor"),
])
def test_arguments_the_playground_cannot_use_are_named(args, words):
    with pytest.raises(SpecError) as info:
        capture.settings_for(_scale(), args)
    assert words in str(info.value)


# ------------------------------------------------------------------ given inputs


def test_a_given_input_is_that_tensor_whatever_the_seed():
    given = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    specs = apply_overrides([TensorSpec("x"), TensorSpec("k")], init={"x": GIVEN},
                            given={"x": given})
    assert specs[0].shape == (2, 3) and specs[0].init == GIVEN
    for seed in (0, 1):
        _, args = draw(specs, seed, torch.float64, torch.device("cpu"))
        assert torch.equal(args[0], given) and args[0] is not given  # a copy, bit for bit
    _, args = draw(specs, 0, torch.float32, torch.device("cpu"))
    assert args[0].dtype == torch.float32 and torch.equal(args[0], given.float())


def test_an_integer_given_tensor_keeps_its_dtype_and_is_not_trained():
    index = torch.tensor([2, 0, 1])
    specs = apply_overrides([TensorSpec("i")], init={"i": GIVEN}, given={"i": index},
                            trained={"i": True})
    assert not specs[0].trained
    _, args = draw(specs, 0, torch.float32, torch.device("cpu"))
    assert args[0].dtype == torch.int64 and torch.equal(args[0], index)


def test_given_init_errors_say_what_to_do():
    assert parse_init(" Given ") == GIVEN
    with pytest.raises(SpecError, match="no tensor was given for it"):
        apply_overrides([TensorSpec("x")], init={"x": GIVEN})
    with pytest.raises(SpecError) as info:
        apply_overrides([TensorSpec("x")], shapes={"x": "5x4"}, init={"x": GIVEN},
                        given={"x": torch.zeros(3, 4)})
    assert "x is the tensor you gave (3x4); to draw a 5x4 one instead, set its init to " \
           "normal." in str(info.value)


def test_a_problem_built_on_given_tensors_starts_from_them():
    scale = _scale()
    x, w = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    settings = capture.settings_for(scale, (x, w, 2.0))
    settings.target = "Scale.py:Scale"
    problem = build(settings, Target(settings.target, scale, "Scale"))
    assert torch.equal(problem.args[0], x) and torch.equal(problem.args[1], w)
    assert problem.args[2] == 2.0 and problem.guesses == []
    again = build(settings, Target(settings.target, scale, "Scale"))
    assert torch.equal(again.targets[0], problem.targets[0])  # the seed draws the targets
    assert problem.compare().passed


@pytest.mark.parametrize("old, new, words", [
    ("ctx.factor * grad_output * x, None", "ctx.factor * grad_output * x",
     "returned 2 gradients, but forward takes 3"),
    ("x, w = ctx.saved_tensors", "x, w = ctx.saved_tensors; 1 / 0", "ZeroDivisionError"),
])
def test_a_notebook_class_with_a_wrong_backward_is_named_by_its_cell_and_line(old, new, words):
    # in a kernel, inspect.getsourcefile raises OSError for a class of __main__: the error
    # names the cell (as IPython's tracebacks do) rather than failing to find a file, whether
    # backward returns the wrong gradients or raises
    text = SCALE.replace(old, new)
    scale = run_cell(text, 8)["Scale"]
    x, w = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    with pytest.raises(FunctionError) as caught:
        compare(scale, [x, w, 2.0])
    assert words in str(caught.value)
    assert caught.value.file.startswith(f"{PREFIX}8-")
    line = next(n for n, t in enumerate(text.splitlines(), 1) if new in t)
    assert caught.value.line == line


# ------------------------------------------------------------------ given tensors in sessions


def test_given_tensors_travel_as_npy_data_and_come_back_bit_for_bit():
    given = {"x": torch.randn(3, 4, dtype=torch.float64), "i": torch.tensor([3, 1])}
    settings = Settings(given=given, init={"x": GIVEN, "i": GIVEN})
    text = json.dumps(settings.to_dict())
    assert "npy" in text and settings.given is given  # to_dict leaves the settings as they are
    back, problems = Settings.from_dict(json.loads(text))
    assert problems == []
    for name, tensor in given.items():
        assert back.given[name].dtype == tensor.dtype and torch.equal(back.given[name], tensor)


@pytest.mark.parametrize("bad", [{"x": {"npy": "not base64!"}}, {"x": 3}, "text"])
def test_unreadable_given_tensors_are_reported_not_raised(bad):
    settings, problems = Settings.from_dict({"given": bad, "seed": 4})
    assert settings.given == {} and settings.seed == 4
    assert len(problems) == 1 and "given" in problems[0]


# ------------------------------------------------------------------ capturing the source


def test_a_notebook_class_is_captured_with_its_imports_helpers_and_constants(notebook):
    shift = notebook["Shift"]
    assert capture.importable(shift) is None
    captured = capture.capture(shift)
    assert captured.complete, captured.why
    assert "import math as m" in captured.text and "import torch" in captured.text
    assert "OFFSET = 0.5" in captured.text and "def shifted(x):" in captured.text
    again: dict = {}
    exec(compile(captured.text, "captured.py", "exec"), again)
    x = torch.randn(4, dtype=torch.float64)
    assert torch.equal(again["Shift"].apply(x, 3.0), shift.apply(x, 3.0))
    assert compare(again["Shift"], [x, 3.0]).passed


def test_a_captured_class_loads_again_in_another_process_by_its_text(notebook, tmp_path):
    """What a worker process does with a captured Function: resolve its file spec with the
    captured text (the file itself need not exist)."""
    shift = notebook["Shift"]
    captured = capture.capture(shift)
    spec = f"{tmp_path / 'Shift.py'}:Shift"
    target = Target(spec, shift, "Shift", code=captured.text)
    assert portable(target)
    settings = capture.settings_for(shift, (torch.randn(5, dtype=torch.float64), 2.0))
    settings.target = spec
    problem = build(settings, target)
    loaded = ProblemRef.of(problem).load()
    assert loaded.function is not shift and loaded.function.__name__ == "Shift"
    assert torch.equal(loaded.args[0], problem.args[0])
    assert loaded.compare().passed


def test_a_class_using_what_cannot_be_written_out_is_not_complete(notebook):
    run_cell("TABLE = {'k': 2}\nclass UsesTable(torch.autograd.Function):\n"
          "    @staticmethod\n    def forward(ctx, x):\n        return x * TABLE['k']\n"
          "    @staticmethod\n    def backward(ctx, g):\n        return g * TABLE['k']\n",
          3, notebook)
    captured = capture.capture(notebook["UsesTable"])
    assert not captured.complete and captured.missing == ["TABLE"]
    assert "uses TABLE from its module" in captured.why


def test_a_class_in_an_importable_module_is_named_not_captured():
    from customgrad.targets.gallery import MulConstant

    spec = capture.importable(MulConstant)
    assert spec == f"{MulConstant.__module__}:MulConstant"
    assert resolve(spec).function is MulConstant


def test_a_process_local_target_is_never_sent_to_a_child_and_says_why_it_cannot_load():
    target = Target(f"{PROCESS_LOCAL}:Scale", _scale(), "Scale (your program)")
    assert not portable(target)
    with pytest.raises(TargetError, match="defined in a script or notebook"):
        resolve(target.spec)


def test_the_free_names_of_a_source_are_its_globals_only():
    names = capture._free_names("import os\nclass A(torch.autograd.Function):\n"
                                "    def f(self, y):\n        z = helper(y) + math.pi\n"
                                "        return [q for q in z] + os.sep + A.x\n")
    assert names == {"torch", "helper", "math"}


# ------------------------------------------------------------------ what a review found

GATHER = '''
import torch

class Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.size = x.shape[0]
        return x[index]

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        out = torch.zeros(ctx.size, *g.shape[1:], dtype=g.dtype)
        return out.index_add(0, index, g), None
'''


def test_an_index_tensor_is_an_input_that_is_neither_drawn_nor_trained():
    gather = run_cell(GATHER, 21)["Gather"]
    x, index = torch.randn(4, 3, dtype=torch.float64), torch.tensor([0, 2, 2])
    settings = capture.settings_for(gather, (x, index))
    settings.target = "Gather.py:Gather"
    problem = build(settings, Target(settings.target, gather, "Gather"))
    assert problem.args[1].dtype == torch.int64 and torch.equal(problem.args[1], index)
    assert [s.trained for s in problem.specs] == [True, False]
    report = problem.compare()
    assert report.passed and report.shape == (9, 12)


def test_a_tensor_given_where_forward_defaults_to_a_number_is_a_tensor():
    scaled = run_cell("import torch\nclass Scaled(torch.autograd.Function):\n"
                      "    @staticmethod\n    def forward(ctx, x, k: float = 2.0):\n"
                      "        ctx.save_for_backward(k)\n        return x * k\n"
                      "    @staticmethod\n    def backward(ctx, g):\n"
                      "        (k,) = ctx.saved_tensors\n        return g * k, None\n",
                      22)["Scaled"]
    k = torch.tensor(5.0, dtype=torch.float64)
    settings = capture.settings_for(scaled, (torch.ones(3, dtype=torch.float64), k))
    assert settings.shapes == {"x": "3", "k": "scalar"}
    problem = build(settings, Target("Scaled.py:Scaled", scaled, "Scaled"))
    assert isinstance(problem.specs[1], TensorSpec) and torch.equal(problem.args[1], k)


def test_switching_a_given_input_to_normal_draws_one_of_the_same_shape():
    scale = _scale()
    settings = capture.settings_for(scale, (torch.randn(2, 5), torch.randn(2, 5), 1.0))
    settings.init["w"] = "normal"
    settings.target = "Scale.py:Scale"
    problem = build(settings, Target(settings.target, scale, "Scale"))
    assert problem.args[1].shape == (2, 5) and problem.specs[1].value is None


def test_mixed_precision_is_kept_exactly():
    x32, w64 = torch.randn(3), torch.randn(3, dtype=torch.float64)
    settings = capture.settings_for(_scale(), (x32, w64, 1.0))
    assert settings.dtype == "float64"
    problem = build(settings, Target("Scale.py:Scale", _scale(), "Scale"))
    assert torch.equal(problem.args[0], x32.double()) and torch.equal(problem.args[1], w64)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: torch.randn(3).to(torch.bfloat16), "w is bfloat16; the playground works in"),
    (lambda: torch.randn(3).to_sparse(), "w is a sparse_coo tensor"),
    (lambda: torch.empty(3, device="meta"), "w is on the meta device"),
])
def test_tensors_that_cannot_be_saved_or_checked_are_refused_by_name(make, words):
    with pytest.raises(SpecError) as info:
        capture.settings_for(_scale(), (torch.randn(3), make(), 1.0))
    assert words in str(info.value)


def test_the_class_captured_is_the_one_given_when_a_script_defines_two():
    namespace = run_cell("import torch\n"
                         "class Dup(torch.autograd.Function):\n"
                         "    @staticmethod\n    def forward(ctx, x):\n        return x * 1\n"
                         "    @staticmethod\n    def backward(ctx, g):\n        return g * 1\n"
                         "first = Dup\n"
                         "class Dup(torch.autograd.Function):\n"
                         "    @staticmethod\n    def forward(ctx, x):\n        return x * 2\n"
                         "    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n",
                         23)
    assert "x * 2" in capture.capture(namespace["Dup"]).text
    assert "x * 1" in capture.capture(namespace["first"]).text


def test_what_the_module_binds_wins_over_builtins_and_what_cannot_be_spelled_is_missing():
    namespace = run_cell("import torch\nfrom torch import sum, sin\nINF = float('inf')\n"
                         "class Odd(torch.autograd.Function):\n"
                         "    @staticmethod\n    def forward(ctx, x):\n"
                         "        return sin(x) + sum(x) + (INF if x.dim() > 9 else 0)\n"
                         "    @staticmethod\n    def backward(ctx, g):\n        return g\n", 24)
    captured = capture.capture(namespace["Odd"])
    assert "from torch import sum" in captured.text and "from torch import sin" in captured.text
    assert captured.missing == ["INF"]


def test_a_class_made_inside_a_function_keeps_its_closure_to_this_process():
    namespace = run_cell("import torch\nSC = 1.0\ndef make(SC):\n"
                         "    class Closed(torch.autograd.Function):\n"
                         "        @staticmethod\n        def forward(ctx, x):\n"
                         "            return x * SC\n"
                         "        @staticmethod\n        def backward(ctx, g):\n"
                         "            return g * SC\n"
                         "    return Closed\nClosed = make(5.0)\n", 25)
    captured = capture.capture(namespace["Closed"])
    assert not captured.complete and captured.missing == ["SC"]


def test_names_in_lazy_annotations_only_need_not_come_along():
    namespace = run_cell("from __future__ import annotations\nimport torch\n"
                         "class Thing:\n    pass\n"
                         "class Typed(torch.autograd.Function):\n"
                         "    @staticmethod\n"
                         "    def forward(ctx, x: torch.Tensor, t: Thing | None = None) -> Thing:\n"
                         "        return x * 2\n"
                         "    @staticmethod\n    def backward(ctx, g):\n"
                         "        return g * 2, None\n", 26)
    captured = capture.capture(namespace["Typed"])
    assert captured.complete, captured.why
    assert "from __future__ import annotations" in captured.text
    assert "class Thing" not in captured.text
    again: dict = {}
    exec(compile(captured.text, "Typed.py", "exec"), again)
    x = torch.randn(3)
    assert torch.equal(again["Typed"].apply(x), x * 2)
