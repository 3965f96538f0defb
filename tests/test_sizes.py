"""Rooms a reader can take in: no module over 500 lines, no class over 400, no function over
60, in ``customgrad/`` and ``playground/``. A unit that must be bigger is listed in
``EXCEPTIONS`` with its reason (its module docstring says the same), and the list holds only
units that still need it.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMITS = {"module": 500, "class": 400, "function": 60}

#: "path" or "path:Qualified.name" -> why it must be bigger than its limit
EXCEPTIONS: dict[str, str] = {
}


def oversized(root: Path) -> dict[str, tuple[str, int]]:
    """Every unit over its limit under ``root``'s two packages: name -> (kind, lines)."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted([*root.glob("customgrad/**/*.py"), *root.glob("playground/**/*.py")]):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root).as_posix()
        lines = len(text.splitlines())
        if lines > LIMITS["module"]:
            found[where] = ("module", lines)
        _visit(ast.parse(text), where, "", found)
    return found


def _visit(node: ast.AST, where: str, prefix: str, found: dict) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = "class" if isinstance(child, ast.ClassDef) else "function"
            name = f"{prefix}{child.name}"
            lines = child.end_lineno - child.lineno + 1
            if lines > LIMITS[kind]:
                found[f"{where}:{name}"] = (kind, lines)
            _visit(child, where, f"{name}.", found)
        else:
            _visit(child, where, prefix, found)


def test_no_unit_is_over_its_size_limit_unless_listed_with_a_reason():
    found = oversized(ROOT)
    unlisted = {name: size for name, size in found.items() if name not in EXCEPTIONS}
    assert not unlisted, f"over the size limits {LIMITS}: {unlisted}"
    stale = sorted(set(EXCEPTIONS) - set(found))
    assert not stale, f"listed as exceptions but within the limits now: {stale}"
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def test_the_size_check_finds_big_modules_classes_and_nested_functions(tmp_path):
    package = tmp_path / "playground"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    method = "\n".join(f"        y{i} = {i}" for i in range(61))
    (package / "big.py").write_text(
        f"def long_one():\n{body}\n\n\nclass Holder:\n    def method(self):\n{method}\n"
        + "\n" * 420, encoding="utf-8")
    (package / "small.py").write_text("def short():\n    return 1\n", encoding="utf-8")
    lines = len((package / "big.py").read_text(encoding="utf-8").splitlines())
    assert lines > 500
    assert oversized(tmp_path) == {
        "playground/big.py": ("module", lines),
        "playground/big.py:long_one": ("function", 62),
        "playground/big.py:Holder.method": ("function", 62),
    }
