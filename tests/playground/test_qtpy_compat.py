"""qtpy's Qt modules (superqt's) without their star imports of PySide6
(:mod:`playground.views.qtpy_compat`): the same names and the same patches of PySide6's classes,
each name taken from PySide6 as it is asked for; only where it was checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from playground.views import qtpy_compat as compat

ROOT = Path(__file__).resolve().parents[2]

#: imports superqt as the app does (argv[1] "app": playground.views first), or without the
#: patch ("plain"), or with qtpy.QtCore imported before the patch ("late"), or with qtpy's
#: version given as argv[1]; then uses it as the app does
#: (a worker, a highlighter) and prints what it found
SCRIPT = """
import json, sys
import PySide6.QtCore, PySide6.QtGui, PySide6.QtWidgets
how = sys.argv[1]
if how == "late":
    import qtpy.QtCore  # before the views' patch
if how != "plain":
    import qtpy
    if how not in ("app", "late"):
        qtpy.__version__ = how
    import playground.views  # noqa: F401 (installs the patch)
import qtpy.QtCore, qtpy.QtGui, qtpy.QtWidgets
mirrors = {"QtCore": qtpy.QtCore, "QtGui": qtpy.QtGui, "QtWidgets": qtpy.QtWidgets}
held = {name: len(vars(module)) for name, module in mirrors.items()}  # after the import
kinds = {name: type(module.__spec__.loader).__name__ for name, module in mirrors.items()}
import superqt.utils
from superqt.utils import CodeSyntaxHighlight, create_worker
held_superqt = {name: len(vars(module)) for name, module in mirrors.items()}
sources = {"QtCore": [PySide6.QtCore], "QtGui": [PySide6.QtGui], "QtWidgets": [PySide6.QtWidgets]}
try:
    import PySide6.QtOpenGL
    sources["QtGui"].append(PySide6.QtOpenGL)
except ImportError:
    pass
same, listed = True, True
for name, module in mirrors.items():
    for source in sources[name]:
        for attr in dir(source):
            if attr.startswith("_") or (name == "QtGui" and source is PySide6.QtGui
                                         and hasattr(PySide6.QtOpenGL, attr)):
                continue
            if name == "QtGui" and attr == "QFileSystemModel":  # qtpy's own, from QtWidgets
                continue
            same = same and getattr(module, attr) is getattr(source, attr)
            listed = listed and attr in dir(module)
star = {}
for name in mirrors:
    space = {}
    exec(f"from qtpy.{name} import *", space)
    star[name] = sorted(k for k in space if k != "__builtins__")
W, G, C = PySide6.QtWidgets, PySide6.QtGui, PySide6.QtCore
patches = {
    "mid_button": C.Qt.MidButton == C.Qt.MiddleButton,
    "exec_": callable(getattr(W.QApplication, "exec_", None)),
    "file_dialog": hasattr(W.QFileDialog.getOpenFileName, "__wrapped__"),
    "move_position": G.QTextCursor.movePosition.__name__,
    "tab_stop": callable(getattr(W.QPlainTextEdit, "setTabStopWidth", None)),
    "pos": callable(getattr(G.QSinglePointEvent, "pos", None)),
    "font_width": callable(getattr(G.QFontMetrics, "width", None)),
    "version": qtpy.QtCore.__version__ == C.__version__,
}
app = W.QApplication([])
edit = W.QTextEdit()
edit.setPlainText("def f(x):\\n    return x + 1\\n")
highlighter = CodeSyntaxHighlight(edit.document(), "python", "monokai")
highlighter.rehighlight()
formats = len(edit.document().firstBlock().layout().formats())
results = []
worker = create_worker(lambda: 41 + 1, _start_thread=False)
worker.returned.connect(results.append)
worker.finished.connect(app.quit)
worker.start()
PySide6.QtCore.QTimer.singleShot(10000, app.quit)
app.exec()
try:
    qtpy.QtCore.NoSuchName
    missing = "found"
except AttributeError:
    missing = "AttributeError"
print(json.dumps({"kinds": kinds, "held": held, "held_superqt": held_superqt,
                  "public": {name: sum(len([a for a in dir(s) if not a.startswith("_")])
                                       for s in sources[name]) for name in mirrors},
                  "same": same, "listed": listed, "star": star, "patches": patches,
                  "formats": formats, "results": results, "missing": missing}))
"""


def _run(how: str) -> dict:
    out = subprocess.run([sys.executable, "-c", SCRIPT, how], capture_output=True, text=True,
                         cwd=ROOT, timeout=120,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def plain() -> dict:
    return _run("plain")


def test_superqt_imported_as_the_app_does_takes_pyside6s_names_as_asked_for(plain):
    lighter = _run("app")
    assert set(lighter["kinds"].values()) == {"_LighterModule"}
    assert set(plain["kinds"].values()) == {"SourceFileLoader"}
    for name, public in lighter["public"].items():
        # a star import held every name (what made PySide6 create every class and enum);
        # the lighter module holds the names qtpy's own code uses, and superqt's
        assert plain["held"][name] > public, name
        assert lighter["held_superqt"][name] < public / 2, (name, lighter["held_superqt"])
    # every name resolves to PySide6's own object, and is listed
    assert lighter["same"] and lighter["listed"]
    # `from qtpy.QtCore import *` binds the names it bound before
    assert lighter["star"] == plain["star"]
    # qtpy's patches of PySide6's classes are made as before
    assert lighter["patches"] == plain["patches"]
    assert lighter["patches"]["move_position"] == "movePositionPatched"
    assert all(v for k, v in lighter["patches"].items() if k != "move_position")
    # superqt works on it: a highlighter colours code, a worker returns its value
    assert lighter["formats"] == plain["formats"] > 0
    assert lighter["results"] == plain["results"] == [42]
    assert lighter["missing"] == plain["missing"] == "AttributeError"


def test_on_a_qtpy_version_not_checked_its_modules_are_imported_as_they_are():
    other = _run("2.5.0")
    assert set(other["kinds"].values()) == {"SourceFileLoader"}
    assert other["same"] and other["results"] == [42]


@pytest.mark.parametrize(("version", "expected"), [
    ("2.4.0", True), ("2.4.3", True), ("2.4.10.dev0", True),
    ("2.3.1", False), ("2.5.0", False), ("3.0", False), ("", False),
])
def test_the_checked_versions(version, expected):
    assert compat.checked(version) is expected


def test_the_installed_qtpy_is_one_the_patch_was_checked_on():
    import qtpy

    assert compat.checked(qtpy.__version__), qtpy.__version__


SOURCE = """\
from . import PYSIDE6
import contextlib
if PYSIDE6:
    from PySide6.QtCore import *
    Qt.MidButton = Qt.MiddleButton
    def helper():
        return QTimer
"""


def test_a_star_line_becomes_an_import_of_the_names_the_module_uses():
    public = ["Qt", "QTimer", "QObject", "QPoint"]
    text, deleted = compat.without_stars(SOURCE, {"PySide6.QtCore": public})
    assert deleted == set()
    assert ("    __import__('PySide6.QtCore'); from PySide6.QtCore import QTimer, Qt  # the rest"
            in text)
    assert "import *" not in text
    compile(text, "QtCore.py", "exec")  # still Python, same lines
    assert len(text.splitlines()) == len(SOURCE.splitlines())


def test_no_star_line_or_two_leave_the_module_as_it_is():
    stars = {"PySide6.QtCore": ["Qt"]}
    assert compat.without_stars(SOURCE.replace("import *", "import Qt"), stars) is None
    twice = SOURCE + "    from PySide6.QtCore import *\n"
    assert compat.without_stars(twice, stars) is None
    assert compat.without_stars(SOURCE, {**stars, "PySide6.QtGui": ["QColor"]}) is None


def test_where_qtpy_was_imported_first_its_modules_are_left_as_they_are():
    late = _run("late")
    assert set(late["kinds"].values()) == {"SourceFileLoader"}
    assert late["same"] and late["results"] == [42]
