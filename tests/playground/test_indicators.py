"""Radio buttons and menus' check marks as the check boxes are (PlaygroundStyle): they grow
with their text (the zoom) and read in every theme. Fusion drew a radio button's circle at
one size, and a menu's radio item as a small dot, nothing when unchecked. Rendered offscreen:
sizes exact, colours compared by contrast (3:1, WCAG's for graphics)."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QActionGroup, QColor, QFont, QImage, QPalette
from PySide6.QtWidgets import QApplication, QMenu, QRadioButton, QStyle, QStyleOptionButton

from playground.views import theme

THEMES = ["light", "dark", "high-contrast"]
POINTS = (11.0, 16.5)  # 100 % and 150 %


def _font(points: float) -> QFont:
    font = QFont(QApplication.font())
    font.setPointSizeF(points)
    return font


def _box(image: QImage, x0: int, x1: int, y0: int, y1: int, colour: QColor,
         background: QColor):
    """The bounding box (left, top, right, bottom) of the pixels drawn in ``colour`` (nearer
    it than ``background``, within 1.5:1 of it: antialiased edges count) in the first run of
    columns from ``x0`` that has any, up to two columns without (the indicator, not the text
    after it); None where there are none."""
    hits, empty = [], 0
    for x in range(x0, x1):
        column = [(x, y) for y in range(y0, y1)
                  if theme.contrast(image.pixelColor(x, y), colour) < min(
                      1.5, theme.contrast(image.pixelColor(x, y), background))]
        empty = 0 if column else empty + 1
        if hits and empty >= 2:
            break
        hits += column
    if not hits:
        return None
    xs, ys = [x for x, _ in hits], [y for _, y in hits]
    return min(xs), min(ys), max(xs), max(ys)


@pytest.mark.parametrize("theme_name", THEMES)
def test_radio_buttons_grow_with_the_zoom_and_read_in_every_theme(qtbot, theme_name):
    palette = theme.palette(theme_name)
    sides = []
    for points in POINTS:
        button = QRadioButton("seed")
        qtbot.addWidget(button)
        button.setPalette(palette)
        button.setFont(_font(points))
        button.adjustSize()
        side = button.style().pixelMetric(QStyle.PixelMetric.PM_ExclusiveIndicatorWidth, None,
                                          button)
        assert side == theme.indicator_size(button.font())
        sides.append(side)
        for checked in (False, True):
            button.setChecked(checked)
            option = QStyleOptionButton()
            button.initStyleOption(option)
            rect = button.style().subElementRect(QStyle.SubElement.SE_RadioButtonIndicator,
                                                 option, button)
            assert rect.width() >= side - 1
            image = button.grab().toImage()
            pane = palette.color(QPalette.ColorRole.Window)
            ring = palette.color(QPalette.ColorRole.Highlight if checked else
                                 QPalette.ColorRole.Text)
            drawn = _box(image, rect.left(), rect.right() + 1, rect.top(), rect.bottom() + 1,
                         ring, pane)
            assert drawn is not None, (theme_name, checked)
            assert drawn[2] - drawn[0] >= side - 3, (drawn, side)  # the whole circle
            assert theme.contrast(ring, pane) >= 3.0
            centre = image.pixelColor(rect.center())
            if checked:  # the dot, in the selection's text colour, 3:1 off the fill
                assert centre == palette.color(QPalette.ColorRole.HighlightedText)
                assert theme.contrast(centre, ring) >= 3.0
            else:
                assert centre == palette.color(QPalette.ColorRole.Base)
    assert sides[1] >= 1.2 * sides[0], sides


def _menu(qtbot, palette: QPalette, points: float) -> tuple[QMenu, list]:
    menu = QMenu()
    qtbot.addWidget(menu)
    menu.setPalette(palette)
    menu.setFont(_font(points))
    checked = menu.addAction("Check on")
    checked.setCheckable(True)
    checked.setChecked(True)
    group = QActionGroup(menu)
    actions = [checked]
    for k, on in enumerate((True, False)):
        action = menu.addAction(f"Theme {k}")
        action.setCheckable(True)
        group.addAction(action)
        action.setChecked(on)
        actions.append(action)
    menu.adjustSize()
    return menu, actions


@pytest.mark.parametrize("theme_name", THEMES)
def test_menu_check_marks_and_radio_items_grow_with_the_zoom(qtbot, theme_name):
    """A menu's check box and its radio items (the Theme menu's) are the check box's and the
    radio button's look, as large: a circle ringed in the selection colour with a dot when
    checked, ringed in the text colour when not (Fusion: a dot, or nothing)."""
    palette = theme.palette(theme_name)
    fill = palette.color(QPalette.ColorRole.Highlight)
    text = palette.color(QPalette.ColorRole.Text)
    extents = []
    for points in POINTS:
        menu, (box, radio_on, radio_off) = _menu(qtbot, palette, points)
        image = menu.grab().toImage()
        side = theme.indicator_size(menu.font())
        sizes = []
        for action, colour in ((box, fill), (radio_on, fill), (radio_off, text)):
            row = menu.actionGeometry(action)
            left = row.left() + menu.fontMetrics().height() * 3  # the text starts before
            drawn = _box(image, row.left(), left, row.top(), row.bottom() + 1, colour,
                         palette.color(QPalette.ColorRole.Base))
            assert drawn is not None, (theme_name, action.text())
            width, height = drawn[2] - drawn[0] + 1, drawn[3] - drawn[1] + 1
            assert width >= side - 4 and height >= side - 4, (action.text(), width, side)
            assert abs(width - height) <= 2  # a box, a circle: not a bar or a dot
            sizes.append(width)
            if action is radio_on:  # its dot, in the selection's text colour
                centre = image.pixelColor((drawn[0] + drawn[2]) // 2,
                                          (drawn[1] + drawn[3]) // 2)
                assert centre == palette.color(QPalette.ColorRole.HighlightedText)
        extents.append(sizes)
    assert all(large >= 1.2 * small for small, large in zip(*extents)), extents
