"""Preferences that are plain values: the zoom steps and their limits (the view applies the
zoom to fonts; session files check a stored zoom against these)."""

from __future__ import annotations

#: zoom levels the menu and Ctrl+wheel step through (percent of the base font)
STEPS = (50, 67, 75, 80, 90, 100, 110, 125, 150, 175, 200, 250, 300)
MIN, MAX = STEPS[0], STEPS[-1]


def clamp(percent: float) -> int:
    """``percent`` rounded and held between MIN and MAX."""
    return round(min(MAX, max(MIN, float(percent))))


def step_zoom(percent: int, direction: int) -> int:
    """The next zoom step above (direction > 0) or below ``percent``."""
    if direction > 0:
        return next((s for s in STEPS if s > percent), MAX)
    return next((s for s in reversed(STEPS) if s < percent), MIN)
