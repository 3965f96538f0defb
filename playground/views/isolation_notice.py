"""The status bar's lasting word that isolation is off: the Function's code runs in the
window's own process (a Function made at run time that no worker process can load, the
loop on a thread by choice), and why. It stays while that holds, for the Function shown."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QSizePolicy

from playground.views.status_notice import NoRoomWhileHidden


class IsolationNotice(NoRoomWhileHidden, QLabel):
    """Empty and hidden while the user's code runs in worker processes only."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("IsolationNotice")
        # its own background: readable in either theme
        self.setStyleSheet("#IsolationNotice { background: #fff4ce; color: #5c1a00; "
                           "border: 1px solid #c9a227; border-radius: 4px; padding: 1px 6px; }")
        # it takes the status bar's width and never widens the window (a narrow or zoomed
        # one cuts the line short: the tooltip holds it whole)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.hide()

    def show_reason(self, text: str) -> None:
        """Say ``text`` (why isolation is off); an empty one: isolation is on again."""
        self.setText(f"⚠ {text}" if text else "")
        self.setToolTip(text)
        self.setVisible(bool(text))

    def target_changed(self, _target) -> None:
        """Another Function: said again if it runs here too."""
        self.show_reason("")
