"""The installed package is complete: a wheel carries every module and every file the app loads
at run time, and works from a directory outside the checkout."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

#: builds and installs the wheel
pytestmark = pytest.mark.slow


ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"
#: resources/ files only the README shows; everything else there is read at run time
README_ONLY = ("screenshot*.png",)


def _setuptools_at_least(major: int) -> bool:
    if importlib.util.find_spec("setuptools") is None:
        return False
    import setuptools

    return int(setuptools.__version__.split(".")[0]) >= major


def _source_copy(into: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) copied to ``into``:
    the build writes its build/ and egg-info there, never into the checkout."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an unpacked sdist): all of it
        shutil.copytree(ROOT, into, ignore=shutil.ignore_patterns("build", "*.egg-info"))
        return into
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = _source_copy(tmp_path_factory.mktemp("source"))
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
               str(source)]
    if _setuptools_at_least(68):  # what pyproject.toml's build-system asks for: no download
        command.insert(4, "--no-build-isolation")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = out.glob("autograd_playground-*.whl")
    return built


def test_the_wheel_holds_every_module_and_every_run_time_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = [p for package in ("customgrad", "playground") for p in (ROOT / package).rglob("*.py")
               if "__pycache__" not in p.parts]
    missing = [str(p.relative_to(ROOT)) for p in sources
               if str(p.relative_to(ROOT)) not in names]
    assert not missing, f"modules missing from the wheel (name their packages in pyproject): " \
        f"{missing}"
    data = [p for p in RESOURCES.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and p.name != "__init__.py" and not any(p.match(g) for g in README_ONLY)]
    assert any(p.parent.name == "examples" for p in data)
    assert any(p.parent.name == "templates" for p in data)
    missing = [str(p.relative_to(RESOURCES)) for p in data
               if "playground/resources/" + str(p.relative_to(RESOURCES)) not in names]
    assert not missing, f"run-time files missing from the wheel: {missing}"
    assert "customgrad/py.typed" in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "customgrad = customgrad.cli:main" in text
    assert "autograd-playground = playground.app:main" in text


INSTALLED = textwrap.dedent("""
    import sys
    import customgrad, playground
    from playground.state import paths
    from playground.views import editor

    site = sys.argv[1]
    for module in (customgrad, playground, paths):
        assert module.__file__.startswith(site), (module.__name__, module.__file__)
    examples = sorted(p.name for p in (paths.resources_dir() / "examples").glob("*.py"))
    assert examples, paths.resources_dir()
    assert str(paths.resources_dir()).startswith(site), paths.resources_dir()
    assert editor.template_path().read_text().strip()
    print("examples:", *examples)
""")


def test_the_installed_wheel_runs_from_another_directory(wheel, tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                           "--target", str(site), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "QT_QPA_PLATFORM": "offscreen",
           "AUTOGRAD_PLAYGROUND_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=away, env=env, capture_output=True,
                              text=True, timeout=300)

    proc = run("-c", INSTALLED, str(site))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "swish.py" in proc.stdout
    proc = run("-m", "customgrad", "check", "killhead")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KillHead: PASSED" in proc.stdout
    shot = away / "window.png"
    proc = run("-c", "import sys; from playground.app import main; sys.exit(main(sys.argv[1:]))",
               "killhead", "--steps", "3", "--screenshot", str(shot))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert shot.stat().st_size > 10_000
