"""Resolving a TARGET: gallery name, file.py[:Class], package.module:Class."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from customgrad.errors import TargetError
from customgrad.function import shadow
from customgrad.targets import catalog, loader
from customgrad.targets.loader import (
    functions_in,
    is_file_target,
    is_function,
    load_file,
    resolve,
    split_target,
)

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]
USER = str((DATA / "user_functions.py").resolve())


@pytest.mark.parametrize("name", ["killhead", "KillHead", " KILLHEAD ", "Softmax_Bug"])
def test_gallery_name_case_insensitive(name):
    target = resolve(name)
    entry = catalog.get(name.strip().lower())
    assert target.function is entry.function
    assert target.entry is entry
    assert target.spec == entry.name
    assert target.label == entry.title
    assert target.file == entry.location[0] and target.file.endswith(".py")
    assert "class " in target.source
    assert target.note == entry.note


def test_unknown_gallery_name_lists_the_known_ones():
    with pytest.raises(TargetError, match="killhead, abs_uv"):
        resolve("nosuch")


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_target(blank):
    with pytest.raises(TargetError, match="No Function given"):
        resolve(blank)


def test_file_with_class():
    target = resolve(f"{USER}:Square")
    assert target.function.__name__ == "Square"
    assert target.file == USER
    assert target.entry is None
    assert target.label == "Square (user_functions.py)"
    assert "def backward" in target.source
    assert target.note == "x ** 2, correct, old (ctx) style."
    x = torch.tensor([3.0], requires_grad=True)
    target.function.apply(x).backward()
    assert x.grad.item() == 6.0


def test_relative_file_path(monkeypatch):
    monkeypatch.chdir(ROOT)
    target = resolve("tests/data/single_function.py")
    assert target.function.__name__ == "Cube"
    assert target.file == str(DATA.resolve() / "single_function.py")


def test_file_with_exactly_one_function():
    target = resolve(str(DATA / "single_function.py"))
    assert target.function.__name__ == "Cube"  # HELPER (an nn.Module class) is ignored


def test_file_with_several_functions_lists_them():
    with pytest.raises(TargetError) as info:
        resolve(USER)
    message = str(info.value)
    assert "several Functions" in message
    for name in ("Square", "ScaleNewStyle", "SqrtNaN", "Slow"):
        assert name in message
    assert "user_functions.py:Square" in message  # a suggestion, first in source order
    assert info.value.file == USER


def test_unknown_class_in_file_lists_the_found_ones():
    with pytest.raises(TargetError, match=r"no autograd Function called 'Nope' \(found: Cube\)"):
        resolve(f"{DATA / 'single_function.py'}:Nope")
    with pytest.raises(TargetError, match=r"HELPER in single_function\.py is an nn\.Module "
                                          r"subclass, not a torch\.autograd\.Function subclass"):
        resolve(f"{DATA / 'single_function.py'}:HELPER")  # exists, but is not a Function


def test_file_with_no_function():
    with pytest.raises(TargetError, match=r"defines no torch\.autograd\.Function") as info:
        resolve(str(DATA / "no_function.py"))
    assert info.value.file == str((DATA / "no_function.py").resolve())


def test_syntax_error_file_and_line():
    path = str((DATA / "broken_syntax.py.txt").resolve())
    with pytest.raises(TargetError) as info:
        resolve(path)
    err = info.value
    assert err.file == path
    assert err.line == 5  # def broken(x:   <- the unclosed parenthesis
    assert "Syntax error" in str(err) and "line 5" in str(err)
    assert "SyntaxError" in err.details


def test_syntax_error_in_a_py_file(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\nx = 1\ny = (2 +\n")
    with pytest.raises(TargetError) as info:
        resolve(f"{bad}:Anything")
    assert info.value.file == str(bad)
    assert info.value.line == 4


def test_import_error_file_and_line():
    path = str((DATA / "import_error.py").resolve())
    with pytest.raises(TargetError) as info:
        resolve(path)
    err = info.value
    assert err.file == path
    marker = [i + 1 for i, line in enumerate(Path(path).read_text().splitlines())
              if "# <- import_error" in line]
    assert err.line == marker[0]
    assert "RuntimeError" in str(err) and "refuses to load" in str(err)
    assert "Traceback" in err.details
    assert not [m for m in sys.modules if "import_error" in m]  # the failed module is dropped


def test_missing_file():
    with pytest.raises(TargetError, match="File not found") as info:
        resolve(str(DATA / "missing.py"))
    assert info.value.file.endswith("missing.py")
    with pytest.raises(TargetError, match="File not found"):
        resolve(f"{DATA / 'missing.py'}:Square")


def test_file_not_named_py(tmp_path):
    """A path that is not a .py file said 'internal error: AttributeError: NoneType ...'."""
    text = tmp_path / "layer.txt"
    text.write_text((DATA / "user_functions.py").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(TargetError, match=r"layer\.txt is not a \.py file.*rename it to layer\.py"):
        resolve(f"{text}:Square")
    with pytest.raises(TargetError, match=r"not a \.py file") as info:
        load_file(text)
    assert info.value.file == str(text)


def test_import_path(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    target = resolve("tests.data.user_functions:Square")
    assert target.function.__name__ == "Square"
    assert target.function.__module__ == "tests.data.user_functions"
    assert target.label == "Square (tests.data.user_functions)"
    assert target.file == USER


def test_import_path_errors(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    with pytest.raises(TargetError, match="has no attribute 'Nope'"):
        resolve("tests.data.user_functions:Nope")
    with pytest.raises(TargetError, match=r":math is a module, not a torch\.autograd\.Function"):
        resolve("tests.data.user_functions:math")
    with pytest.raises(TargetError, match=r"Cannot import 'tests\.data\.no_such_module'"):
        resolve("tests.data.no_such_module:X")
    with pytest.raises(TargetError, match=r"Cannot import .*RuntimeError"):
        resolve("tests.data.import_error:X")


def test_a_name_that_is_no_function_says_what_it_is(tmp_path):
    """Named as the Function, a class, function or value of the file says what it is, also
    where a worker process ran the file and this one holds only its Functions' shadows."""
    path = tmp_path / "mixed.py"
    path.write_text("import torch\nfrom torch.autograd import Function\n\n\n"
                    "class Layer(torch.nn.Module):\n    pass\n\n\nSCALE = 2.5\n\n\n"
                    "class Plain:\n    pass\n")
    expected = {"Layer": "an nn.Module subclass", "SCALE": "a value of type float",
                "Function": "torch's own Function base class", "torch": "a module",
                "Plain": "a class that does not subclass torch.autograd.Function"}
    for name, kind in expected.items():
        with pytest.raises(TargetError) as caught:
            resolve(f"{path}:{name}")
        assert str(caught.value) == (f"{name} in mixed.py is {kind}, not a "
                                     "torch.autograd.Function subclass; it defines no Function.")
    shadowed = shadow.describe_module(loader.load_file(path), loader.is_function)
    assert shadowed.kinds == {k: expected[k] for k in ("torch", "Function", "Layer", "SCALE",
                                                        "Plain")}


def test_a_colon_without_a_class_name_is_refused_as_such(tmp_path):
    with pytest.raises(TargetError, match=r"'mine\.py:' names no class after the colon; "
                                          r"write mine\.py:ClassName, or mine\.py alone"):
        resolve("mine.py:")
    with pytest.raises(TargetError, match=r"'pkg\.mod:3': '3' after the colon is not a class name; "
                                          r"write pkg\.mod:ClassName\.$"):
        resolve("pkg.mod:3")
    with pytest.raises(TargetError, match="Did you mean Square"):
        resolve(f"{USER}:Sqaure")


def test_reloads_give_distinct_classes_and_modules():
    first = resolve(f"{USER}:Square").function
    second = resolve(f"{USER}:Square").function
    assert first is not second
    assert first.__module__ != second.__module__
    assert sys.modules[first.__module__] is not sys.modules[second.__module__]
    assert first.__module__.startswith("customgrad_user_user_functions_")


def test_load_file_picks_up_edits(tmp_path):
    path = tmp_path / "edited.py"
    template = ("import torch\n\nclass F(torch.autograd.Function):\n"
                "    @staticmethod\n    def forward(ctx, x):\n        return x * {k}\n\n"
                "    @staticmethod\n    def backward(ctx, g):\n        return g * {k}\n")
    path.write_text(template.format(k=2))
    one = resolve(str(path)).function
    path.write_text(template.format(k=3))
    two = resolve(str(path)).function
    x = torch.ones(1)
    assert one.apply(x).item() == 2.0 and two.apply(x).item() == 3.0


def test_module_name_is_an_identifier(tmp_path):
    path = tmp_path / "my-file.v2.py"
    path.write_text((DATA / "single_function.py").read_text())
    module = load_file(path)
    assert module.__name__.isidentifier()
    assert [f.__name__ for f in functions_in(module)] == ["Cube"]


def test_functions_in_keeps_source_order_and_skips_imports():
    module = load_file(DATA / "user_functions.py")
    names = [f.__name__ for f in functions_in(module)]
    assert names[:3] == ["Square", "ScaleNewStyle", "Annotated"]
    assert names[-1] == "Slow"
    assert functions_in(load_file(DATA / "no_function.py")) == []  # imports Exp, defines none


def test_is_function():
    assert is_function(catalog.get("exp").function)
    assert not is_function(torch.autograd.Function)
    assert not is_function(torch.nn.Linear)


def test_an_alias_is_not_a_second_function(tmp_path):
    path = tmp_path / "alias.py"
    source = (DATA / "single_function.py").read_text()
    path.write_text(source + "\ncube = Cube.apply\nMyCube = Cube\n")
    target = resolve(str(path))
    assert target.function.__name__ == "Cube"
    assert [f.__name__ for f in functions_in(load_file(path))] == ["Cube"]


def test_user_file_can_import_a_module_next_to_it(tmp_path):
    (tmp_path / "sibling_helper_mod.py").write_text("def factor():\n    return 3.0\n")
    (tmp_path / "uses_sibling.py").write_text(
        "import torch\nfrom sibling_helper_mod import factor\n\n\n"
        "class Triple(torch.autograd.Function):\n"
        "    @staticmethod\n    def forward(ctx, x):\n        return x * factor()\n\n"
        "    @staticmethod\n    def backward(ctx, g):\n        return g * factor()\n")
    from customgrad.targets.loader import resolve

    target = resolve(str(tmp_path / "uses_sibling.py"))
    assert target.function.__name__ == "Triple"


@pytest.mark.parametrize("spec, where, name", [
    ("killhead", "killhead", None),  # a gallery name
    ("  KillHead \n", "KillHead", None),  # stripped
    ("file.py", "file.py", None),
    ("dir/file.py", "dir/file.py", None),
    ("file.py:MyFn", "file.py", "MyFn"),
    ("dir/file.py:MyFn", "dir/file.py", "MyFn"),
    (" ./dir/file.py:MyFn ", "./dir/file.py", "MyFn"),
    ("pkg.module:MyFn", "pkg.module", "MyFn"),
    ("pkg.module", "pkg.module", None),
    ("mylib::myop", "", "mylib::myop"),  # a torch.library op
    ("mylib::myop.default", "", "mylib::myop.default"),  # ... and an overload of it
    ("dir/file.py:mylib::myop", "dir/file.py", "mylib::myop"),
    ("pkg.module:mylib::myop", "pkg.module", "mylib::myop"),
    (r"C:\x\f.py:Cls", r"C:\x\f.py", "Cls"),  # a Windows path with a class
    (r"C:\x\f.py", r"C:\x\f.py", None),  # the drive's colon names no class
    (r"C:\x\f.py:mylib::myop", r"C:\x\f.py", "mylib::myop"),
    ("C:Cls", "C:Cls", None),  # a one-letter head is a drive, not a module
    ("file.py:not a class", "file.py:not a class", None),  # not an identifier
    ("file.py:", "file.py:", None),
    ("", "", None),
])
def test_split_target_forms(spec, where, name):
    assert split_target(spec) == (where, name)


@pytest.mark.parametrize("where, is_file", [
    ("file.py", True), ("dir/file", True), ("./f", True), ("pkg.module", False),
    ("killhead", False), ("", False),
])
def test_is_file_target(where, is_file):
    assert is_file_target(where) is is_file


def test_split_target_agrees_with_resolve(monkeypatch):
    """What split_target calls the class (or op) is what resolve loads, for each kind."""
    monkeypatch.syspath_prepend(str(ROOT))
    cases = [(f"{USER}:Square", True, "Square"), ("tests.data.user_functions:Square", False,
                                                  "Square"), ("killhead", False, None)]
    if hasattr(torch.library, "custom_op"):
        cases.append(("customgrad.targets.gallery.op_sin:customgrad::sin", False,
                      "customgrad::sin"))
    for spec, is_file, name in cases:
        where, class_name = split_target(spec)
        assert (is_file_target(where), class_name) == (is_file, name)
        target = resolve(spec)
        if name is None:
            assert target.entry is not None and target.entry.name == where
        elif "::" in name:
            assert target.label == f"{name} (torch.library op)"
        else:
            assert target.function.__name__ == name
