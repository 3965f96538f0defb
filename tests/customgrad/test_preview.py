"""customgrad.targets.preview: what the code view shows of a Function before torch is
imported, read from its file's text, is what it shows once the Function has loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from customgrad.function.shadow import source_lines
from customgrad.targets import catalog
from customgrad.targets.loader import resolve
from customgrad.targets.preview import Preview, preview


@pytest.mark.parametrize("name", [e.name for e in catalog.listing()])
def test_a_gallery_entry_s_preview_is_what_its_loaded_function_shows(name):
    target = resolve(name)
    try:
        first = source_lines(target.function)[1]
    except (OSError, TypeError):
        first = 1
    assert preview(name.upper()) == Preview(target.label, target.source, target.note,
                                            target.file, first)


def test_a_user_file_s_class_without_running_it(tmp_path):
    user = tmp_path / "mine.py"
    user.write_text("raise SystemExit('ran')\n\n\n@decorated\nclass Twice(Function):\n"
                    "    pass\n\n\nclass Other:\n    pass\n", encoding="utf-8")
    assert preview(str(user)) == Preview("Twice (mine.py)",
                                         "@decorated\nclass Twice(Function):\n    pass\n",
                                         "", str(user), 4)
    assert preview(f"{user}:Other").source == "class Other:\n    pass\n"


def test_where_the_class_cannot_be_told_the_whole_file(tmp_path):
    """Two Functions and no name, a name the file does not define at its top level, or text
    that does not parse: the file's text from line 1."""
    user = tmp_path / "two.py"
    text = ("import torch\nclass A(torch.autograd.Function): pass\n"
            "class B(torch.autograd.Function): pass\n")
    user.write_text(text, encoding="utf-8")
    assert preview(str(user)) == Preview("two.py", text, "", str(user), 1)
    assert preview(f"{user}:Made") == Preview("Made (two.py)", text, "", str(user), 1)
    user.write_text("class A(:\n", encoding="utf-8")
    assert preview(str(user)).source == "class A(:\n"


def test_nothing_for_what_only_loading_tells(tmp_path):
    assert preview(str(tmp_path / "missing.py")) is None
    assert preview("no_such_gallery_name") is None
    assert preview("package.module:Fn") is None
    assert preview("mylib::myop") is None


def test_it_imports_no_torch():
    code = ("import sys; from customgrad.targets.preview import preview; "
            "assert preview('linear').source.startswith('class LinearFunction'); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split() == ["False"]
