"""The two gradients' arrows as the landscape draws them and the step explainer names them:
their colours (Okabe and Ito's colour-blind safe pair, one for light and one for dark
themes), their line styles (solid, dashed: told apart without colour too) and their words."""

from __future__ import annotations

#: (your backward, true gradient) on light and on dark backgrounds
ARROW_COLOURS = {False: ("#d55e00", "#0072b2"), True: ("#ffb000", "#56b4e9")}
YOUR_BACKWARD, TRUE_GRADIENT = "your backward", "true gradient"
#: how the legend draws each line style in text
SOLID, DASHED = "━━", "╍╍"


def arrow_words(which: int, dark: bool) -> str:
    """Rich text naming arrow ``which`` (0: your backward's, 1: the true gradient's) in its
    colour and line style."""
    colour = ARROW_COLOURS[dark][which]
    style, words = ((SOLID, "solid"), (DASHED, "dashed"))[which]
    name = (YOUR_BACKWARD, TRUE_GRADIENT)[which]
    return f"<b style='color:{colour}'>{style} {words} arrow ({name})</b>"


__all__ = ["ARROW_COLOURS", "DASHED", "SOLID", "TRUE_GRADIENT", "YOUR_BACKWARD",
           "arrow_words"]
