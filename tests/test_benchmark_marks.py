"""The regression gate's marks (tests/benchmarks/compare_commits.py): a measure against its
old value, with a ±10 % noise band, and against its goal."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "compare_commits", Path(__file__).resolve().parent / "benchmarks" / "compare_commits.py")
compare_commits = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(compare_commits)
against_goal, against_old = compare_commits.against_goal, compare_commits.against_old


@pytest.mark.parametrize(("key", "old", "new", "mark"), [
    ("ui_max_stall_ms_running", 20.0, 21.9, "≈"),  # within 10 %: noise
    ("ui_max_stall_ms_running", 20.0, 22.5, "✗"),  # a stall 12.5 % longer
    ("ui_max_stall_ms_running", 20.0, 17.5, "✓"),
    ("jacobian_speedup_vs_gradcheck", 30.0, 25.0, "✗"),  # a speed-up that fell
    ("jacobian_speedup_vs_gradcheck", 30.0, 34.0, "✓"),
    ("loop_throughput_vs_bare", 1.0, 0.95, "≈"),
])
def test_against_the_old_value(key, old, new, mark):
    assert against_old(key, old, new) == mark


@pytest.mark.parametrize(("goal", "value", "mark"), [
    ("<= 16 (ceiling 50)", 15.9, "✓"),
    ("<= 16 (ceiling 50)", 16.1, "✗"),
    (">= 50 (floor 20)", 25.0, "✗"),
    (">= 0.95 (floor 0.9): best window vs best window", 1.06, "✓"),
    ("<= 1.1: a dense 2048-row check, worker process / thread", 0.98, "✓"),
    ("flat", 3.0, " "),
    ("timed: torch's gradgradcheck", 3.0, " "),
    ("", 3.0, " "),
])
def test_against_the_goal(goal, value, mark):
    assert against_goal(goal, value) == mark
