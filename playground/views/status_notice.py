"""What a widget kept in the status bar needs: no height while it is hidden.

Qt's status bar sizes itself by every widget added to it, hidden or not (``QStatusBar``'s
``reformat`` takes each one's minimum height), so a hidden notice whose buttons a change of
theme or zoom had grown left the bar taller for good: the window's layout did not come back
after a round of themes (F2). A notice that says so here takes room only while it is shown;
its showing asks the bar to lay out again (Qt's layout request), which then counts it.
"""

from __future__ import annotations

from PySide6.QtCore import QSize


class NoRoomWhileHidden:
    """Mixed into a QWidget class kept in the status bar (before the Qt class)."""

    def minimumSizeHint(self) -> QSize:
        return QSize(0, 0) if self.isHidden() else super().minimumSizeHint()  # type: ignore[misc]

    def sizeHint(self) -> QSize:
        return QSize(0, 0) if self.isHidden() else super().sizeHint()  # type: ignore[misc]
