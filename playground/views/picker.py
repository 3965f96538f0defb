"""Function picker: the gallery grouped by category, with a search field. Keys alone pick:
type in the search, Return opens the first Function it shows (Down goes to the list, where
Return opens the one chosen); the list then has the keys, so Space and S act at once."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFrame,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from customgrad.targets import catalog
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
            for entry in catalog.listing():  # data: no torch before the first paint
                if entry.category == category:
                    item = QTreeWidgetItem(group, [entry.title])
                    item.setData(0, Qt.ItemDataRole.UserRole, entry.name)
                    item.setToolTip(0, entry.name)
                    self._items[entry.name] = item
            group.setExpanded(True)
        #: the Functions of the file last opened, at the top
        self.file_group = QTreeWidgetItem(["File"])
        self.file_group.setFlags(Qt.ItemFlag.ItemIsEnabled)
        self.file_group.setFont(0, scaled(self.file_group.font(0), bold=True))
        self.tree.insertTopLevelItem(0, self.file_group)
        self.file_group.setHidden(True)
        self._file_items: dict[str, QTreeWidgetItem] = {}
        self._file_title: str | None = None
        #: shown in place of the list when the search matches nothing
        self.no_match = QTreeWidgetItem(self.tree, [""])
        self.no_match.setFlags(Qt.ItemFlag.NoItemFlags)
        self.no_match.setHidden(True)
        self.search.textChanged.connect(self._filter)
        self.search.installEventFilter(self)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemClicked.connect(self._activated)

    def show_notes(self) -> None:
        """Each gallery Function's note as its tooltip (searched too): the gallery's entries
        are built with their Functions, so this waits for torch (the main window asks once
        it has arrived, after the first paint: it imports the gallery)."""
        for entry in catalog.entries():
            item = self._items.get(entry.name)
            if item is not None:
                item.setToolTip(0, f"{entry.name}: {entry.note}")

    def apply_font(self, font: QFont) -> None:
        """The tree and search in ``font``; category headings stay bold at the new size."""
        self.setFont(font)
        bold = scaled(font, bold=True)
        for i in range(self.tree.topLevelItemCount()):
            self.tree.topLevelItem(i).setFont(0, bold)
        # the rows grew or shrank: the Function open back in view once they are laid out
        QTimer.singleShot(0, self._current_in_view)

    def _current_in_view(self) -> None:
        item = self.tree.currentItem()
        if item is not None and not item.isHidden():
            self.tree.scrollToItem(item)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """In the search field: Return (Enter) opens the first Function shown, Down goes to
        the list on it. Either way the list has the keys after: a text field takes Space and
        S as letters, and a keys-only user found Return and Down doing nothing there."""
        if watched is self.search and event.type() == QEvent.Type.KeyPress \
                and event.modifiers() in (Qt.KeyboardModifier.NoModifier,
                                          Qt.KeyboardModifier.KeypadModifier):
            key = event.key()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Down):
                item = self._first_shown()
                if item is not None:
                    self.tree.setCurrentItem(item)
                    self.tree.setFocus(Qt.FocusReason.OtherFocusReason)
                    if key != Qt.Key.Key_Down:
                        self._activated(item)
                return True
        return super().eventFilter(watched, event)

    def focus_search(self) -> None:
        """The search has the keys, its text selected (typing replaces it)."""
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _first_shown(self) -> QTreeWidgetItem | None:
        """The first Function the list shows (the search's top match), None if none."""
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            if group.isHidden():
                continue
            for j in range(group.childCount()):
                if not group.child(j).isHidden():
                    return group.child(j)
        return None

    def _activated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        name = item.data(0, Qt.ItemDataRole.UserRole)
        if name:
            self.picked.emit(name)

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        shown = 0
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            if group is self.no_match or (group is self.file_group and not self._file_items):
                continue
            visible = 0
            for j in range(group.childCount()):
                item = group.child(j)
                name = item.data(0, Qt.ItemDataRole.UserRole)
                hay = f"{name} {item.text(0)} {item.toolTip(0)}".lower()
                item.setHidden(bool(needle) and needle not in hay)
                visible += not item.isHidden()
            group.setHidden(visible == 0)
            shown += visible
        self.no_match.setText(0, f"No Function matches “{text.strip()}”")
        self.no_match.setHidden(shown > 0)

    def show_file(self, title: str | None, functions: list[tuple[str, str]]) -> None:
        """List a file's Functions, ``(spec, class name)`` each, under ``title`` (its name)
        at the top; no title: the group goes. The main window keeps the last file's group
        while a gallery Function is open (a student compares theirs with the gallery's).

        Another file's list clears the search: a filter typed before opening it would hide
        the new group (a student saw an empty list after Ctrl+O)."""
        if title and title != self._file_title and self.search.text():
            self.search.blockSignals(True)
            self.search.clear()
            self.search.blockSignals(False)
        self._file_title = title
        self.file_group.takeChildren()
        self._file_items = {}
        for spec, name in functions if title else []:
            item = QTreeWidgetItem(self.file_group, [name])
            item.setData(0, Qt.ItemDataRole.UserRole, spec)
            item.setToolTip(0, spec)
            self._file_items[spec] = item
        self.file_group.setText(0, f"File: {title}" if title else "File")
        self.file_group.setHidden(not self._file_items)
        self.file_group.setExpanded(True)
        self._filter(self.search.text())

    def file_functions(self) -> list[str]:
        """The specs listed under the file's group."""
        return list(self._file_items)

    def select(self, name: str | None) -> None:
        """Show ``name`` (a gallery name, or a spec listed under the file's group) as selected
        (None clears), without emitting ``picked``."""
        self.tree.blockSignals(True)
        self.tree.clearSelection()
        item = self._items.get(name or "") or self._file_items.get(name or "")
        if item is not None:
            item.setSelected(True)
            self.tree.setCurrentItem(item)
            self.tree.scrollToItem(item)
        self.tree.blockSignals(False)

    def selected_name(self) -> str | None:
        """The name (or file spec) of the row selected, None if none."""
        items = self.tree.selectedItems()
        return items[0].data(0, Qt.ItemDataRole.UserRole) if items else None

    def show_notes_from(self, other: FunctionPicker) -> None:
        """The tooltips ``other`` shows (the gallery's notes, once torch has come)."""
        for name, item in self._items.items():
            twin = other._items.get(name)
            if twin is not None:
                item.setToolTip(0, twin.toolTip(0))

    def visible_names(self) -> list[str]:
        return [n for n, item in self._items.items() if not item.isHidden()
                and not item.parent().isHidden()]


class PickerPopup(QFrame):
    """The picker over the window, for a window that hides its own (presentation mode):
    Ctrl+F there typed into a search no one could see. Lists what ``listed`` lists (the
    gallery and its file's Functions), emits ``picked(name)`` and closes on a choice; Esc
    or a click outside closes it (a popup's own)."""

    picked = Signal(str)

    def __init__(self, window: QWidget, listed: FunctionPicker) -> None:
        super().__init__(window, Qt.WindowType.Popup)
        self.setFrameShape(QFrame.Shape.Box)
        self.picker = FunctionPicker(self)
        self.picker.show_notes_from(listed)
        self.picker.show_file(listed._file_title, [(spec, item.text(0)) for spec, item
                                                   in listed._file_items.items()])
        self.picker.select(listed.selected_name())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.picker)
        self.picker.picked.connect(self._picked)

    def open_over(self, window: QWidget) -> None:
        """Shown at the top middle of ``window``, a third of its width, most of its
        height, the search with the keys."""
        width = max(window.width() // 3, self.fontMetrics().horizontalAdvance("M") * 24)
        height = window.height() * 2 // 3
        top_left = window.mapToGlobal(window.rect().topLeft())
        self.setGeometry(top_left.x() + (window.width() - width) // 2,
                         top_left.y() + window.height() // 10, width, height)
        self.show()
        self.activateWindow()
        self.picker.focus_search()

    def _picked(self, name: str) -> None:
        self.close()
        self.picked.emit(name)
