"""Function picker: the gallery grouped by category, with a search field."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from customgrad import catalog
from playground.views.fonts import scaled


class FunctionPicker(QWidget):
    """Emits ``picked(name)`` when the user chooses a gallery Function."""

    picked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.search = QLineEdit(placeholderText="Search Functions…", clearButtonEnabled=True)
        self.tree = QTreeWidget(headerHidden=True, rootIsDecorated=False, indentation=12)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search)
        layout.addWidget(self.tree)
        self._items: dict[str, QTreeWidgetItem] = {}
        for category in catalog.CATEGORIES:
            group = QTreeWidgetItem(self.tree, [catalog.CATEGORY_TITLES[category]])
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            group.setFont(0, scaled(group.font(0), bold=True))
            for entry in catalog.entries():
                if entry.category == category:
                    item = QTreeWidgetItem(group, [entry.title])
                    item.setData(0, Qt.ItemDataRole.UserRole, entry.name)
                    item.setToolTip(0, f"{entry.name}: {entry.note}")
                    self._items[entry.name] = item
            group.setExpanded(True)
        self.search.textChanged.connect(self._filter)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemClicked.connect(self._activated)

    def apply_font(self, font: QFont) -> None:
        """The tree and search in ``font``; category headings stay bold at the new size."""
        self.setFont(font)
        bold = scaled(font, bold=True)
        for i in range(self.tree.topLevelItemCount()):
            self.tree.topLevelItem(i).setFont(0, bold)

    def _activated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        name = item.data(0, Qt.ItemDataRole.UserRole)
        if name:
            self.picked.emit(name)

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            visible = 0
            for j in range(group.childCount()):
                item = group.child(j)
                name = item.data(0, Qt.ItemDataRole.UserRole)
                hay = f"{name} {item.text(0)} {item.toolTip(0)}".lower()
                item.setHidden(bool(needle) and needle not in hay)
                visible += not item.isHidden()
            group.setHidden(visible == 0)

    def select(self, name: str | None) -> None:
        """Show ``name`` as selected (None clears), without emitting ``picked``."""
        self.tree.blockSignals(True)
        self.tree.clearSelection()
        item = self._items.get(name or "")
        if item is not None:
            item.setSelected(True)
            self.tree.setCurrentItem(item)
        self.tree.blockSignals(False)

    def visible_names(self) -> list[str]:
        return [n for n, item in self._items.items() if not item.isHidden()
                and not item.parent().isHidden()]
