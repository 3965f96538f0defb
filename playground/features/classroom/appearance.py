"""The window's look follows the preferences: one zoom for every pane, the theme, and the
larger readout and verdict of presentation mode; Ctrl + mouse wheel zooms."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from PySide6.QtCore import QObject, QSize, QTimer
from PySide6.QtWidgets import QApplication

from playground.views import app_filters, theme, zoom

__all__ = ["Appearance"]

NORMAL_READOUT = 1.8  # step/loss readout size (times the font)
PRESENT_READOUT = 2.8  # the same in presentation mode
PRESENT_JACOBIAN = 1.25  # the verdict line, relative to its size outside presentation
AFTER_ZOOM_PASSES = 3  # event loop passes a zoom's layouts take to settle (see _after_zoom)


class Appearance(QObject):
    """Applies ``preferences`` to ``panes.window``: fonts at its zoom (the readout of
    ``panes.controls`` and the verdict of ``panes.jacobian`` larger while presenting, the
    ``panes.left`` pane as wide as its forms need), its theme; says so in ``panes.status``."""

    def __init__(self, preferences, panes, *, session,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.preferences = preferences
        self.panes = panes
        self.session = session
        zoom.base_point_size()  # the font size at 100 %, before anything zooms
        self._wheel = zoom.WheelZoom(panes.window, preferences.zoom_by)
        app_filters.install(self._wheel)
        preferences.zoomChanged.connect(self._zoom_changed)
        preferences.themeChanged.connect(self._theme_changed)
        preferences.presentingChanged.connect(self.apply_fonts)
        #: inside :meth:`fonts_once`: whether fonts were asked for (None outside)
        self._fonts_asked: bool | None = None
        #: the window's size before a zoom made it grow, to give back (see _size_back)
        self._size_before_zoom: QSize | None = None
        #: whether the last word about the window's size was that it does not fit its screen
        self._said_too_big = False
        #: the style sheet a theme change left for the next font pass to set (see
        #: theme.apply_theme): None when there is none to set
        self._sheet: str | None = None
        panes.left.fit_width()  # the form whole at the start size too, not only after a zoom

    def apply_fonts(self) -> None:
        """Every pane at the zoom; in presentation mode the readout and verdict larger."""
        if self._fonts_asked is not None:
            self._fonts_asked = True
            return
        presenting, panes = self.preferences.presenting, self.panes
        panes.controls.readout_scale = PRESENT_READOUT if presenting else NORMAL_READOUT
        sheet, self._sheet = self._sheet, None
        with app_filters.paused():  # (see app_filters: the pass sends thousands of events)
            font = zoom.apply_zoom(self.panes.window, self.preferences.zoom, sheet=sheet)
            if presenting:
                # the verdict larger; the heatmaps' labels stay at the zoom: the cells need
                # the room
                panes.jacobian.apply_font(font, verdict_scale=PRESENT_JACOBIAN)
            panes.left.fit_width()
        QTimer.singleShot(0, panes.left.fit_width)  # again once the layouts have caught up

    @contextmanager
    def fonts_once(self) -> Iterator[None]:
        """Fonts asked for inside (by a theme and a zoom set together) applied once, at the
        end: each pass goes through every widget of the window."""
        self._fonts_asked = False
        with self.panes.jacobian.restyles_held():  # the theme's restyle and the zoom's: one
            try:
                yield
            finally:
                asked, self._fonts_asked = self._fonts_asked, None
                if asked:
                    self.apply_fonts()

    def _zoom_changed(self, percent: int) -> None:
        window = self.panes.window
        if self._size_before_zoom is None and window.isVisible():
            # (not before the window shows: Qt's 640x480 then, which no zoom fits in, was
            # kept as the size to give back, and a window grown by 175 % stayed that wide)
            self._size_before_zoom = window.size()
        self.apply_fonts()
        self.panes.status.showMessage(f"Zoom {percent} %", 2000)
        QTimer.singleShot(0, lambda: self._after_zoom(AFTER_ZOOM_PASSES))

    def _after_zoom(self, passes: int) -> None:
        """The window's size back where it can be, then whether it fits its screen, once the
        layouts have caught up: the left pane fits its forms a pass after the fonts (at 150 %
        after 175 % the window still needed 1286 px for a moment, 1265 px after)."""
        if not self._size_back() and passes > 0:
            QTimer.singleShot(0, lambda: self._after_zoom(passes - 1))
            return
        self._check_fits()

    def _size_back(self) -> bool:
        """A zoom that needed a larger window grew it (past a projector's 1280 px, at 175 %);
        zoomed back, the window is the size it had before, once that is enough again.
        False while the window is larger than it was and still needs to be."""
        window, wanted = self.panes.window, self._size_before_zoom
        if wanted is None or window.isFullScreen() or window.isMaximized():
            self._size_before_zoom = None
            return True
        need = window.minimumSizeHint()
        if need.width() <= wanted.width() and need.height() <= wanted.height():
            if window.size() != wanted:
                window.resize(wanted)
            self._size_before_zoom = None
            return True
        return False

    def _check_fits(self) -> None:
        """Say so when the window no longer fits its screen at this zoom."""
        w = self.panes.window
        screen = w.screen()
        if screen is None or QApplication.platformName() == "offscreen" or not w.isVisible():
            return
        room, need = screen.availableGeometry(), w.minimumSizeHint()
        fits = need.width() <= room.width() and need.height() <= room.height()
        if fits and self._said_too_big:
            # the notice that it did not fit (at another zoom) no longer holds
            self.session.notice.emit("The window fits its screen again.")
        self._said_too_big = not fits
        if not fits:
            self.session.notice.emit(
                f"At {self.preferences.zoom} % the window needs {need.width()}×{need.height()}"
                f" pixels and the screen has {room.width()}×{room.height()}: hide panels in "
                "presentation mode (F5, View > Presentation panels) or zoom out (Ctrl+-).")

    def _theme_changed(self, name: str) -> None:
        # the theme's style sheet (high contrast's) is set by the font pass, once: a widget
        # polished again by a new application style sheet gets back the font it had when a
        # sheet first polished it, not the one the zoom set since
        self._sheet = theme.wanted_sheet(name) or None
        with app_filters.paused(), self.panes.jacobian.restyles_held():  # (one restyle)
            theme.apply_theme(self.panes.window, name, set_sheet=False)
            self.apply_fonts()
        self.panes.status.showMessage(f"Theme: {theme.get(name).title}", 2000)
