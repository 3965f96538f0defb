"""Light, dark and high-contrast themes: one palette for the widgets, the plots and the code.

Widgets get a Fusion palette; the loss plot and the heatmaps re-colour themselves from it on
the palette change; the code view gets a matching pygments style. Any widget with an
``apply_theme`` method is told the new theme too (its name, or ``dark`` as a bool when that is
what the method's parameter is called). Pass and fail never rely on colour alone: the views
spell them out with ✔/✘ and words in every theme.
"""

from __future__ import annotations

import atexit
import inspect
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QByteArray, QEvent, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QIcon,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QPixmap,
)
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QApplication,
    QProxyStyle,
    QStyle,
    QStyleFactory,
    QStyleOptionMenuItem,
    QWidget,
)

from playground.state import paths
from playground.views import app_filters

__all__ = ["THEMES", "PlaygroundStyle", "Theme", "apply_theme", "contrast", "get", "icon",
           "indicator_size", "next_theme", "palette", "use_style", "wanted_sheet"]


@dataclass(frozen=True)
class Theme:
    name: str
    title: str
    dark: bool
    code_style: str  # pygments style of the code view and the editor


THEMES: dict[str, Theme] = {
    "light": Theme("light", "Light", False, "default"),
    "dark": Theme("dark", "Dark", True, "monokai"),
    "high-contrast": Theme("high-contrast", "High contrast", True, "github-dark"),
}

# Fusion draws frames a shade darker than the window: invisible on black, so the
# high-contrast theme outlines every control itself, and draws scroll bars white on black
# (Fusion's black handle in a dark grey outline could not be seen; no step buttons).
_HIGH_CONTRAST_SHEET = """
QLineEdit, QComboBox, QSpinBox, QDoubleSpinBox, QPushButton, QTreeView, QTabWidget::pane,
QGroupBox { border: 2px solid #ffffff; }
QPushButton { padding: 3px 10px; }
QPushButton:hover, QComboBox:hover, QLineEdit:focus, QSpinBox:focus { border-color: #ffff00; }
QPushButton:focus, QComboBox:focus, QDoubleSpinBox:focus { border-color: #ffff00; }
QGroupBox { margin-top: 1.2em; padding-top: 4px; }
QGroupBox::title { subcontrol-origin: margin; left: 8px; }
QTabBar::tab:selected { background: #ffff00; color: #000000; }
QTabBar::tab { border: 2px solid #ffffff; padding: 4px 10px; }
QToolTip { border: 2px solid #ffff00; }
QScrollBar { background: #000000; border: 1px solid #ffffff; }
QScrollBar:vertical { width: 14px; }
QScrollBar:horizontal { height: 14px; }
QScrollBar::handle { background: #ffffff; border: 2px solid #000000; }
QScrollBar::handle:hover { background: #ffff00; }
QScrollBar::handle:vertical { min-height: 28px; }
QScrollBar::handle:horizontal { min-width: 28px; }
QScrollBar::add-line, QScrollBar::sub-line { width: 0px; height: 0px; border: none; }
QScrollBar::add-page, QScrollBar::sub-page { background: none; }
"""


_ARROWS = """
QSpinBox::up-arrow, QDoubleSpinBox::up-arrow { image: url(%(up)s); width: 10px; height: 6px; }
QSpinBox::down-arrow, QDoubleSpinBox::down-arrow { image: url(%(down)s); width: 10px;
                                                    height: 6px; }
QComboBox::down-arrow { image: url(%(down)s); width: 10px; height: 6px; }
QComboBox::drop-down { border-left: 2px solid #ffffff; width: 1.1em; }
QSpinBox::up-button, QDoubleSpinBox::up-button,
QSpinBox::down-button, QDoubleSpinBox::down-button { border-left: 2px solid #ffffff;
                                                      width: 1.1em; }
"""


def _svg(name: str, color: QColor) -> str:
    """The text of ``resources/icons/<name>.svg`` painted in ``color`` (the files paint in
    ``currentColor``)."""
    text = (paths.resources_dir() / "icons" / f"{name}.svg").read_text(encoding="utf-8")
    return text.replace("currentColor", color.name())


@lru_cache(maxsize=64)
def _icon(name: str, rgb: str) -> QIcon:
    renderer = QSvgRenderer(QByteArray(_svg(name, QColor(rgb)).encode()))
    result = QIcon()
    for size in (16, 20, 24, 32, 48, 64):
        pixmap = QPixmap(size, size)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        renderer.render(painter, QRectF(0, 0, size, size))
        painter.end()
        result.addPixmap(pixmap)
    return result


def icon(name: str, color: QColor | str) -> QIcon:
    """Icon ``name`` (play, pause, step, reset, ...) from ``resources/icons``, in ``color``:
    buttons draw theirs in the palette's ButtonText, so icons follow every theme."""
    return _icon(name, QColor(color).name())


def _luminance(color: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return (0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF())
            + 0.0722 * channel(color.blueF()))


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """t * a + (1 - t) * b, opaque."""
    return QColor.fromRgbF(
        t * a.redF() + (1 - t) * b.redF(),
        t * a.greenF() + (1 - t) * b.greenF(),
        t * a.blueF() + (1 - t) * b.blueF(),
    )


def contrast(a: QColor, b: QColor) -> float:
    """The WCAG contrast ratio of two colours (1 to 21; 3 is the least for icons)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


_arrow_dir: list[Path] = []


def _arrow_sheet(color: QColor) -> str:
    """Style-sheet rules that draw spin-box and combo-box arrows in ``color`` (a sheet that
    gives such a box a border makes Qt drop the style's arrows): SVG files written once per
    colour."""
    if not _arrow_dir:
        folder = Path(tempfile.mkdtemp(prefix="autograd-playground-icons-"))
        atexit.register(shutil.rmtree, folder, True)
        _arrow_dir.append(folder)
    found = {}
    for name in ("arrow-up", "arrow-down"):
        path = _arrow_dir[0] / f"{name}-{color.name()[1:]}.svg"
        if not path.exists():
            path.write_text(_svg(name, color), encoding="utf-8")
        found[name.split("-")[1]] = path.as_posix()
    return _ARROWS % found


def get(name: str) -> Theme:
    """The theme called ``name``; KeyError naming the choices otherwise."""
    try:
        return THEMES[name]
    except KeyError:
        raise KeyError(f"unknown theme {name!r}; use one of {', '.join(THEMES)}") from None


def next_theme(name: str) -> str:
    """The theme after ``name`` (F2 cycles light -> dark -> high-contrast -> light)."""
    names = list(THEMES)
    return names[(names.index(name) + 1) % len(names)] if name in THEMES else names[0]


def _set(pal: QPalette, colors: dict[str, str], group=None) -> None:
    for role, value in colors.items():
        r = getattr(QPalette.ColorRole, role)
        if group is None:
            pal.setColor(r, QColor(value))
        else:
            pal.setColor(group, r, QColor(value))


def palette(name: str) -> QPalette:
    """The widget palette of theme ``name``."""
    get(name)
    pal = QStyleFactory.create("Fusion").standardPalette()
    if name == "light":
        _set(pal, {"Link": "#0b4f9c", "Highlight": "#2a6fdb", "HighlightedText": "#ffffff",
                   "PlaceholderText": "#6b6b6b"})
        return pal
    if name == "dark":
        _set(pal, {
            "Window": "#2b2b2b", "WindowText": "#e8e8e8", "Base": "#1e1e1e",
            "AlternateBase": "#333333", "ToolTipBase": "#3a3a3a", "ToolTipText": "#f2f2f2",
            "PlaceholderText": "#a0a0a0", "Text": "#e8e8e8", "Button": "#3a3a3a",
            "ButtonText": "#ececec", "BrightText": "#ff8a80", "Light": "#555555",
            "Midlight": "#444444", "Mid": "#5c5c5c", "Dark": "#1a1a1a", "Shadow": "#000000",
            "Highlight": "#2d76c8", "HighlightedText": "#ffffff", "Link": "#8cc4ff",
            "LinkVisited": "#c9a6ff"})
        disabled = QPalette.ColorGroup.Disabled
        _set(pal, {"WindowText": "#808080", "Text": "#808080", "ButtonText": "#808080",
                   "Base": "#262626", "Button": "#303030"}, disabled)
        return pal
    _set(pal, {
        "Window": "#000000", "WindowText": "#ffffff", "Base": "#000000",
        "AlternateBase": "#1c1c1c", "ToolTipBase": "#000000", "ToolTipText": "#ffffff",
        "PlaceholderText": "#c8c8c8", "Text": "#ffffff", "Button": "#000000",
        "ButtonText": "#ffffff", "BrightText": "#ffff00", "Light": "#ffffff",
        "Midlight": "#e0e0e0", "Mid": "#ffffff", "Dark": "#ffffff", "Shadow": "#ffffff",
        "Highlight": "#ffff00", "HighlightedText": "#000000", "Link": "#00ffff",
        "LinkVisited": "#ff80ff"})
    disabled = QPalette.ColorGroup.Disabled
    _set(pal, {"WindowText": "#a8a8a8", "Text": "#a8a8a8", "ButtonText": "#a8a8a8"}, disabled)
    return pal


def indicator_size(font: QFont) -> int:
    """A check box's side in pixels for text in ``font``: 68 % of a line, so that it grows
    with the zoom (Fusion's is 13 px at any zoom: a speck on a projector at 150 %); never
    less than Fusion's. No larger: the form's input row (two check boxes) sets the left
    pane's width, and at 150 % on a 1280 px projector the window had 9 px to spare."""
    return max(13, round(QFontMetrics(font).height() * 0.68))


class PlaygroundStyle(QProxyStyle):
    """Fusion, with check boxes and radio buttons that grow with their text and read in
    every theme: a box (a circle) outlined in the text colour on the base colour, filled with
    the selection colour when checked, ticked (dotted) in its text colour (blue and white in
    light and dark, yellow and black in high contrast). Menus' check marks are the same boxes,
    their radio items (the Theme menu, pyqtgraph's) the same circles: Fusion drew a dot there,
    none when unchecked, at one size.

    Written in Python, each of Qt's calls for a pixel metric, a primitive or a control is a
    call into the interpreter: a repaint of the whole window makes about 280 and 95 of the
    first two, which cost 7 ms more on 2 cores (docs/performance-log.md, 2026-11-29), and
    about 70 of the third (docs/performance-log.md, polish2); the loss plot's repaint, the one
    a run repeats, makes none. A style sheet indicator costs nothing to paint but would put a
    sheet on every theme, and every zoom step would then polish each widget again."""

    _SIZES = (QStyle.PixelMetric.PM_IndicatorWidth, QStyle.PixelMetric.PM_IndicatorHeight,
              QStyle.PixelMetric.PM_ExclusiveIndicatorWidth,
              QStyle.PixelMetric.PM_ExclusiveIndicatorHeight)
    _SPACINGS = (QStyle.PixelMetric.PM_CheckBoxLabelSpacing,
                 QStyle.PixelMetric.PM_RadioButtonLabelSpacing)
    _BOX = QStyle.PrimitiveElement.PE_IndicatorCheckBox
    _RADIO = QStyle.PrimitiveElement.PE_IndicatorRadioButton
    _ITEMS = (QStyle.PrimitiveElement.PE_PanelItemViewItem,
              QStyle.PrimitiveElement.PE_PanelItemViewRow)
    _FOCUS = QStyle.PrimitiveElement.PE_FrameFocusRect
    _MENU_ITEM = QStyle.ControlElement.CE_MenuItem
    _EXCLUSIVE = QStyleOptionMenuItem.CheckType.Exclusive

    def __init__(self) -> None:
        super().__init__(QStyleFactory.create("Fusion"))
        #: a menu's radio item is being drawn: the box Fusion asks for is a circle
        self._menu_radio = False

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        if metric in self._SIZES:
            return indicator_size(widget.font() if widget is not None else QApplication.font())
        if metric in self._SPACINGS:
            return 4  # Fusion's 6: the box's growth taken back from the gap to its label
        return super().pixelMetric(metric, option, widget)

    def drawControl(self, element, option, painter, widget=None) -> None:
        if element == self._MENU_ITEM and option.checkType == self._EXCLUSIVE:
            # Fusion asks for its box (sized with the menu's font, checked or not) where the
            # item is not exclusive: that box, drawn as a circle
            item = QStyleOptionMenuItem(option)
            item.checkType = QStyleOptionMenuItem.CheckType.NonExclusive
            self._menu_radio = True
            try:
                super().drawControl(element, item, painter, widget)
            finally:
                self._menu_radio = False
        else:
            super().drawControl(element, option, painter, widget)

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        if element == self._BOX:
            (_draw_radio if self._menu_radio else _draw_check_box)(option, painter)
        elif element == self._RADIO:
            _draw_radio(option, painter)
        elif element == self._FOCUS and isinstance(widget, QAbstractItemView):
            # Fusion washed a focused list's current row with a lighter gradient, over its
            # text (white on it 2.9:1 in the dark theme), and only once the keyboard had moved
            # the focus: the picker's selection looked different after F5 and Esc. The
            # selection marks the current row
            return
        elif element in self._ITEMS and option.state & QStyle.StateFlag.State_Selected:
            # one flat selection colour, the window active or not
            group = QPalette.ColorGroup.Active if option.state & QStyle.StateFlag.State_Enabled \
                else QPalette.ColorGroup.Disabled
            painter.fillRect(option.rect, option.palette.color(group, QPalette.ColorRole.Highlight))
        else:
            super().drawPrimitive(element, option, painter, widget)


def _indicator_colours(option) -> tuple[bool, bool, bool, QColor, QColor, QColor, QColor]:
    """(enabled, on, hovered, text, base, fill, mark) of a check box's or radio button's
    state, from its palette."""
    state, pal = option.state, option.palette
    enabled = bool(state & QStyle.StateFlag.State_Enabled)
    group = QPalette.ColorGroup.Active if enabled else QPalette.ColorGroup.Disabled
    text = pal.color(group, QPalette.ColorRole.Text)
    base = pal.color(group, QPalette.ColorRole.Base)
    fill = pal.color(group, QPalette.ColorRole.Highlight) if enabled else text
    mark = pal.color(group, QPalette.ColorRole.HighlightedText) if enabled else base
    hover = enabled and bool(state & QStyle.StateFlag.State_MouseOver)
    return enabled, bool(state & QStyle.StateFlag.State_On), hover, text, base, fill, mark


def _draw_radio(option, painter: QPainter) -> None:
    """A radio button's circle: as :func:`_draw_check_box`'s box, a dot for the tick."""
    _enabled, on, hover, text, base, fill, mark = _indicator_colours(option)
    side = min(option.rect.width(), option.rect.height())
    line = max(1.5, side / 9)
    circle = QRectF(option.rect.x(), option.rect.y() + (option.rect.height() - side) / 2,
                    side, side).adjusted(line / 2, line / 2, -line / 2, -line / 2)
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    edge = fill if hover else text
    painter.setPen(QPen(fill if on and not hover else edge, line))
    painter.setBrush(fill if on else base)
    painter.drawEllipse(circle)
    if on:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(mark)
        inset = circle.width() * 0.3
        painter.drawEllipse(circle.adjusted(inset, inset, -inset, -inset))
    painter.restore()


def _draw_check_box(option, painter: QPainter) -> None:
    _enabled, on, hover, text, base, fill, mark = _indicator_colours(option)
    partly = bool(option.state & QStyle.StateFlag.State_NoChange)
    side = min(option.rect.width(), option.rect.height())
    line = max(1.5, side / 9)
    box = QRectF(option.rect.x(), option.rect.y(), side, side).adjusted(
        line / 2, line / 2, -line / 2, -line / 2)
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    edge = fill if hover else text  # (hovered: enabled, whose fill is the selection colour)
    painter.setPen(QPen(fill if (on or partly) and not hover else edge, line))
    painter.setBrush(fill if on or partly else base)
    painter.drawRoundedRect(box, line, line)
    if on or partly:
        pen = QPen(mark, max(2.0, side / 7))
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        x, y, w = box.x(), box.y(), box.width()
        path = QPainterPath()
        if on:
            path.moveTo(QPointF(x + 0.2 * w, y + 0.52 * w))
            path.lineTo(QPointF(x + 0.42 * w, y + 0.74 * w))
            path.lineTo(QPointF(x + 0.8 * w, y + 0.28 * w))
        else:  # partly: a bar
            path.moveTo(QPointF(x + 0.25 * w, y + 0.5 * w))
            path.lineTo(QPointF(x + 0.75 * w, y + 0.5 * w))
        painter.drawPath(path)
    painter.restore()


def use_style(app: QApplication) -> None:
    """The application in :class:`PlaygroundStyle` (best before any widget exists: a new style
    polishes every widget there is again)."""
    if not isinstance(app.style(), PlaygroundStyle):
        app.setStyle(PlaygroundStyle())


def _high_contrast_sheet() -> str:
    return _HIGH_CONTRAST_SHEET + _arrow_sheet(QColor("#ffffff"))


def _theme_argument(method, theme: Theme):
    """``theme.dark`` for ``apply_theme(dark)``, the theme's name otherwise."""
    try:
        params = list(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        params = []
    if params and params[0] in ("dark", "is_dark"):
        return theme.dark
    return theme.name


def _inherit_again(window: QWidget) -> None:
    """Each widget of ``window`` that has no palette of its own takes its parent's again.
    A pane hidden through a round of themes (the picker, while presenting at another zoom)
    missed a change and kept the high-contrast palette (white text on white, a black scroll
    bar) once shown: an empty palette clears nothing of a widget's own, and is a no-op where
    the palette is already right."""
    for widget in window.findChildren(QWidget):
        if not widget.testAttribute(Qt.WidgetAttribute.WA_SetPalette):
            widget.setPalette(QPalette())


def wanted_sheet(name: str) -> str | None:
    """The application style sheet theme ``name`` wants (high contrast's, or none); None where
    the application has a style sheet that is not ours, which a theme leaves alone."""
    app = QApplication.instance()
    if app.styleSheet() not in ("", _high_contrast_sheet()):
        return None
    return _high_contrast_sheet() if get(name).name == "high-contrast" else ""


@app_filters.paused()
def _inherit_fonts_again() -> None:
    """Every widget whose font no one set inherits it again. Under a style sheet a widget
    takes its parent's font when polished and keeps it, marked as its own (not as set:
    WA_SetFont stays off); once the sheet is gone it kept it through every zoom after: high
    contrast at 150 % then light at 100 % left the forms and the side tabs at 150 % (trial3
    T12). An empty QFont resolves nothing itself: the parent's font, as before the sheet."""
    sheeted = set()  # (widgets with a sheet of their own, and theirs: the sheet's to size)
    for widget in QApplication.allWidgets():
        if widget.styleSheet():
            sheeted.add(widget)
            sheeted.update(widget.findChildren(QWidget))
    for widget in QApplication.allWidgets():
        if widget in sheeted:
            continue
        # (Qt leaves the flag on some, the window and its splitter: their fonts then
        # followed the sheets' way, the size they had, not their parents')
        widget.setAttribute(Qt.WidgetAttribute.WA_StyleSheet, False)
        if not widget.testAttribute(Qt.WidgetAttribute.WA_SetFont):
            widget.setFont(QFont())


def apply_theme(window: QWidget, name: str, *, set_sheet: bool = True) -> Theme:
    """Switch the application, and everything in ``window``, to theme ``name``.

    ``set_sheet=False`` leaves setting high contrast's style sheet to the caller (see
    :func:`wanted_sheet`): the zoom's font pass that follows a theme change sets it, once. A
    style sheet polishes every widget of the application again (0.35 s of the GUI thread for
    the ~660 widgets there are), and widgets under one keep the font they were polished with,
    so the font pass has to set it after the fonts anyway."""
    theme = get(name)
    app = QApplication.instance()
    use_style(app)
    pal = palette(name)
    sheet = wanted_sheet(name)
    left_sheet = sheet == "" and bool(app.styleSheet())
    if left_sheet:
        app.setStyleSheet("")
        _inherit_fonts_again()
    app.setPalette(pal)
    # Qt posts the change to each widget: deliver it now, so views read the new colours
    QApplication.sendPostedEvents(None, QEvent.Type.ApplicationPaletteChange)
    _inherit_again(window)
    bg, fg = pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)
    pg.setConfigOptions(background=bg, foreground=fg)
    for widget in [window, *window.findChildren(QWidget)]:
        method = getattr(widget, "apply_theme", None)
        if callable(method):
            method(_theme_argument(method, theme))
        elif callable(getattr(widget, "apply_code_style", None)):  # a code editor
            widget.apply_code_style(theme.code_style)
    # last: a style sheet fixes each widget's palette as it is at that moment
    if sheet and set_sheet and app.styleSheet() != sheet:
        app.setStyleSheet(sheet)
    elif left_sheet:
        # scroll areas' viewports keep the palette the sheet gave them: inherit again
        for area in window.findChildren(QAbstractScrollArea):
            area.viewport().setPalette(QPalette())
    # the views re-colour themselves on the palette change; say it again for any that did not
    # get one (a palette set explicitly on a parent)
    for graphics in (getattr(getattr(window, "loss_plot", None), "plot_widget", None),
                     getattr(getattr(window, "jacobian", None), "graphics", None)):
        if graphics is not None:
            graphics.setBackground(bg)
    return theme
