"""The memory-limit stop names the user's line it was at and does not blame small shapes only
(trial2 F-hog-noline: "Use smaller shapes" for a 3x8 input, no line)."""

from __future__ import annotations

import re

import pytest

from tests.customgrad.test_isolation import CRASH, _cli

#: a child process allocating to its memory limit through the CLI, as test_isolation's
pytestmark = pytest.mark.slow


def test_the_memory_stop_names_the_line_backward_was_allocating_at():
    proc = _cli("check", f"{CRASH}:MemoryHog", "--shape", "x=3x8", "--memory-limit", "0.25")
    assert proc.returncode == 2, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "MemoryHog used more than 0.2 GiB of memory for x=3x8 and was stopped" in text
    source = CRASH.read_text().splitlines()
    lines = {n for n, t in enumerate(source, 1)
             if "hoard.append(" in t or "time.sleep(0.001)" in t}  # (the loop's two lines)
    found = re.search(r"ran out at crash_functions\.py:(\d+) \(in backward\)\.", text)
    assert found and int(found.group(1)) in lines, text
    assert "Look there for what allocates" in text
    assert not text.count("crash_functions.py:" + found.group(1)) > 1  # named once
