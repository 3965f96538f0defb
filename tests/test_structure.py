"""customgrad's shape a newcomer can read: every module sits in a layer that the import-linter
contract in pyproject.toml names (front ends over workers over problems over the numerics over
the Function), and every subpackage says in its docstring what it holds.

This replaced a line-count limit, which code was trimmed to fit rather than organised: what
that limit was for is a module per concept, found where its layer says, and that is what is
checked here (the import direction itself is lint-imports' job, tests/test_architecture.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
#: a subpackage's docstring says what it holds in at least this many words
MIN_WORDS = 12


def layers_contract(root: Path) -> dict:
    """The import-linter layers contract whose container is customgrad."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    found = [c for c in contracts if c["type"] == "layers" and c.get("containers") ==
             ["customgrad"]]
    assert len(found) == 1, "one layers contract over customgrad's subpackages"
    return found[0]


def layer_names(contract: dict) -> set[str]:
    """The names the contract's layers list (``a : b``, ``a | b``, ``(optional)``)."""
    names = set()
    for layer in contract["layers"]:
        for part in layer.replace("|", ":").split(":"):
            names.add(part.strip().strip("()"))
    return names


def structure_problems(root: Path) -> list[str]:
    """What does not fit: modules directly under customgrad that no layer names, and
    subpackages without a docstring saying what they hold."""
    contract = layers_contract(root)
    names = layer_names(contract)
    problems = []
    package = root / "customgrad"
    for path in sorted(package.iterdir()):
        if path.name in ("__init__.py", "__pycache__", "py.typed"):
            continue
        is_package = path.is_dir() and (path / "__init__.py").exists()
        if not (path.suffix == ".py" or is_package):
            continue
        name = path.stem if path.suffix == ".py" else path.name
        if name not in names:
            problems.append(f"customgrad.{name} is in no layer of {contract['name']!r}")
        if is_package:
            for init in sorted(path.rglob("__init__.py")):
                doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
                if len(doc.split()) < MIN_WORDS:
                    where = init.parent.relative_to(root).as_posix().replace("/", ".")
                    problems.append(f"{where} does not say what it holds (its docstring)")
    return problems


def test_every_customgrad_module_is_in_a_layer_and_every_subpackage_says_what_it_holds():
    assert structure_problems(ROOT) == []


def test_the_layers_contract_is_exhaustive():
    """lint-imports also fails for a subpackage the contract leaves out."""
    assert layers_contract(ROOT).get("exhaustive") is True


def test_a_module_outside_the_layers_or_a_silent_subpackage_is_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(
        encoding="utf-8"), encoding="utf-8")
    package = tmp_path / "customgrad"
    package.mkdir()
    (package / "api.py").write_text("")
    (package / "helpers.py").write_text("")
    (package / "workers").mkdir()
    (package / "workers" / "__init__.py").write_text('"""Workers."""\n')
    problems = structure_problems(tmp_path)
    assert problems == [
        "customgrad.helpers is in no layer of " + repr(layers_contract(ROOT)["name"]),
        "customgrad.workers does not say what it holds (its docstring)"]
