"""The fast inner loop (``pytest -m "not slow"``): the mark is registered, and each file left
out of it says why, where the mark is set."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_slow_mark_is_registered():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^\s*"slow: ', text, re.MULTILINE)


def test_every_file_marked_slow_says_why():
    marked = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if re.match(r"pytestmark\s*=.*\bslow\b", line):
                marked[path.relative_to(ROOT).as_posix()] = lines[number - 1]
    assert marked  # (the suite has files that only CI runs)
    unsaid = [path for path, above in marked.items() if not above.startswith("#: ")]
    assert not unsaid, f"say why above pytestmark (a '#: ' line): {unsaid}"
