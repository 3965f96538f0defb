"""The editor, the inspector and the code move out of their side tab into a window of their
own (a projector needs more room than the tab has), and back when that window closes."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QTabWidget, QVBoxLayout, QWidget

__all__ = ["TabWindows"]


class _OwnWindow(QWidget):
    """A top-level window (still a child of the main window, so zoom and themes reach it)
    holding the editor, the inspector or the code; ``closed`` puts it back into its tab."""

    closed = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, Qt.WindowType.Window)

    def closeEvent(self, event) -> None:
        self.closed.emit()
        super().closeEvent(event)


class TabWindows(QObject):
    """The widgets of ``tabs`` that can have their own window (a child of ``window``); such a
    widget has a ``window_button``, disabled while it is away. Its tab keeps a placeholder
    with a button that brings it back."""

    def __init__(self, tabs: QTabWidget, window: QWidget, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tabs = tabs
        self.window = window
        self._floating: dict[QWidget, QWidget] = {}
        self._placeholders: dict[QWidget, QWidget] = {}

    def show(self, widget: QWidget) -> None:
        """``widget``'s tab, or its own window (raised)."""
        holder = self._floating.get(widget)
        if holder is not None:
            holder.show()
            holder.raise_()
            holder.activateWindow()
        else:
            self.tabs.setCurrentWidget(widget)

    def set_title(self, widget: QWidget, title: str) -> None:
        """The title of ``widget``'s tab (and of its own window, while it has one)."""
        tabs = self.tabs
        tabs.setTabText(tabs.indexOf(self._placeholders.get(widget, widget)), title)
        holder = self._floating.get(widget)
        if holder is not None:
            holder.setWindowTitle(f"{title} — Autograd playground")

    def detach(self, widget: QWidget) -> QWidget:
        """Move ``widget`` from its tab into its own window; closing that window puts it back."""
        if widget in self._floating:
            return self._floating[widget]
        tabs = self.tabs
        index = tabs.indexOf(widget)
        title = tabs.tabText(index).rstrip(" ⚠")
        placeholder, back = self._placeholder(title)
        tabs.removeTab(index)
        tabs.insertTab(index, placeholder, title)
        tabs.setCurrentIndex(index)
        holder = _OwnWindow(self.window)
        holder.setWindowTitle(f"{title} — Autograd playground")
        layout = QVBoxLayout(holder)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(widget)
        widget.show()
        holder.resize(max(700, self.window.width() // 2), max(600, self.window.height() - 80))
        holder.closed.connect(lambda w=widget: self.attach(w))
        back.clicked.connect(holder.close)
        self._floating[widget] = holder
        self._placeholders[widget] = placeholder
        widget.window_button.setEnabled(False)
        holder.show()
        return holder

    @staticmethod
    def _placeholder(title: str) -> tuple[QWidget, QPushButton]:
        placeholder = QWidget()
        label = QLabel(f"The {title.lower()} is in its own window.")
        back = QPushButton(f"Put the {title.lower()} back here")
        box = QVBoxLayout(placeholder)
        box.addWidget(label)
        box.addWidget(back, 0, Qt.AlignmentFlag.AlignLeft)
        box.addStretch(1)
        return placeholder, back

    def attach(self, widget: QWidget) -> None:
        """Back into its tab."""
        holder = self._floating.pop(widget, None)
        placeholder = self._placeholders.pop(widget, None)
        if holder is None or placeholder is None:
            return
        tabs = self.tabs
        index = tabs.indexOf(placeholder)
        title = tabs.tabText(index)
        tabs.removeTab(index)
        placeholder.deleteLater()
        tabs.insertTab(index, widget, title)
        tabs.setCurrentIndex(index)
        widget.window_button.setEnabled(True)
        holder.hide()
        holder.deleteLater()

    def attach_all(self) -> None:
        for widget in list(self._floating):
            self.attach(widget)
