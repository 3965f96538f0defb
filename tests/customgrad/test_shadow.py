"""Shadows: what the window holds of a user's Function, whose module ran in a worker process
only. A shadow must read exactly as the Function does to everything the window asks (specs,
guesses, new-style ctx, docstring, source, plain attributes), and refuse to run."""

from __future__ import annotations

import inspect
import pickle
import types

import pytest
import torch

from customgrad.errors import FunctionError
from customgrad.function.inputs import derive_specs, guessed_parameters, is_new_style
from customgrad.function.shadow import (
    Shadowed,
    describe,
    describe_module,
    description_of,
    shadow,
    source_lines,
)
from customgrad.targets import catalog, loader
from tests.data.notebook import forget_cells, run_cell

ODD = '''
import torch

class Marker:
    pass

class Odd(torch.autograd.Function):
    """Odd one out."""
    VERSION = 3

    @staticmethod
    def forward(x: torch.Tensor, n: int, scale, opt=Marker(), *, flag: bool = False):
        return x * n

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.n = inputs[1]

    @staticmethod
    def backward(ctx, g):
        return g * ctx.n, None, None, None
'''


def _round_trip(function: type) -> type:
    """``function`` described, pickled as to the window, and made a shadow there."""
    d = pickle.loads(pickle.dumps(describe(function, function.__module__)))
    return shadow(d)


@pytest.mark.parametrize("entry", catalog.entries(), ids=lambda e: e.name)
def test_every_gallery_function_reads_the_same_as_its_shadow(entry):
    real = entry.function
    stand_in = _round_trip(real)
    assert derive_specs(stand_in) == derive_specs(real)
    assert guessed_parameters(stand_in) == guessed_parameters(real)
    assert is_new_style(stand_in) == is_new_style(real)
    assert loader.is_function(stand_in) and stand_in.__name__ == real.__name__


def test_a_shadow_keeps_annotations_defaults_doc_and_plain_attributes():
    odd = run_cell(ODD, 31)["Odd"]
    stand_in = _round_trip(odd)
    forget_cells()  # the shadow's source comes from its description, not from linecache
    assert [(s.name, type(s).__name__) for s in derive_specs(stand_in)] == \
        [(s.name, type(s).__name__) for s in derive_specs(odd)]
    assert guessed_parameters(stand_in) == guessed_parameters(odd) == {
        "n": "annotated int, without a default", "scale": guessed_parameters(odd)["scale"]}
    assert is_new_style(stand_in)
    assert stand_in.__doc__ == "Odd one out." and stand_in.VERSION == 3
    assert "opt=<" in str(inspect.signature(stand_in.forward))  # an object's text only
    source, line = source_lines(stand_in)
    assert source.startswith("class Odd(") and line == 7


def test_a_shadow_never_runs():
    stand_in = _round_trip(catalog.get("killhead").function)
    with pytest.raises(FunctionError, match="runs in worker processes only"):
        stand_in.apply(torch.randn(3, requires_grad=True))
    with pytest.raises(FunctionError, match="runs in worker processes only"):
        stand_in.backward(None, torch.ones(3))
    assert description_of(stand_in) is not None
    assert description_of(catalog.get("killhead").function) is None


def test_the_loader_builds_modules_of_shadows_from_what_a_worker_described(tmp_path,
                                                                          monkeypatch):
    """What the app's hook does: the module runs elsewhere (here: described from a module run
    in this test), and the loader binds shadows where the module's Functions would be."""
    path = tmp_path / "two_fns.py"
    path.write_text(ODD + "\nclass Other(Odd):\n    pass\nAlias = Odd\nfrom torch.autograd "
                    "import Function\n", encoding="utf-8")
    ran = types.ModuleType("elsewhere")
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), vars(ran))
    described = describe_module(ran, loader.is_function)
    calls = []

    def hook(run, label, origin):
        calls.append(origin[0])
        return pickle.loads(pickle.dumps(described))
    monkeypatch.setattr(loader, "run_module_code", hook)
    module = loader.load_file(path)
    found = loader.functions_in(module)
    assert [f.__name__ for f in found] == ["Odd", "Other"] and module.Alias is module.Odd
    assert all(description_of(f) is not None for f in found)
    target = loader.resolve(f"{path}:Other")
    assert description_of(target.function).name == "Other" and target.file == str(path)
    assert isinstance(described, Shadowed) and calls == ["file", "file"]
