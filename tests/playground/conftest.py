"""Every test here starts from the same application-wide state, whatever a test before it left.

The tests of a worker process share one QApplication, and what is set on it outlives the
window a test made: a test that zoomed to 150 % left the next one its font (CI once read a
code view's lines at 150 %), one in high contrast its style sheet. :func:`restore` puts back,
before and after each test (:func:`app_wide_state`, autouse):

- the application font, the platform's (:data:`START.font`: 100 % for a test that zooms),
  and with it the tool tips' (an application font set clears Qt's per-class fonts);
- the palette: none set (the style's own, as at a start);
- no style sheet, and the app's style, :class:`~playground.views.theme.PlaygroundStyle`
  (``playground.app.application()`` sets it before any widget exists);
- the application's dynamic properties (the zoom's remembered 100 % size) as they were when
  the first test began, none of ours (``playground_*``) among them;
- pyqtgraph's config options (a theme sets the plots' colours) as pyqtgraph has them before
  any test, read when this file is imported;
- no event filter of :func:`playground.views.app_filters.install` (a window's Ctrl + wheel and
  Escape filters, left on the application until Qt deletes the closed window).

These are read from Qt (the platform's font, "no palette set"), not from the first test's
application: a test outside this folder (tests/test_faults.py opens windows) may have run in
the process first. Each part is set only where it differs: a style sheet or a style set
polishes every widget there is, closed windows included until Qt deletes them. A test that
wants the app's 11 pt start font sets it itself (test_layout.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import QApplication, QToolTip

from playground.views import app_filters
from playground.views.theme import PlaygroundStyle

#: pyqtgraph's options before any test (its own defaults: the app sets none on import)
PG_START = dict(pg.CONFIG_OPTIONS)
#: the application's dynamic properties that are ours: none at the start
OURS = "playground_"


@dataclass(frozen=True)
class AppState:
    """The application-wide state each test starts from (see the module's docstring)."""

    font: QFont
    properties: dict[str, Any]
    names: tuple[str, str]


def start_state(app: QApplication) -> AppState:
    """The platform's font, and ``app``'s own properties and names as they are now."""
    return AppState(
        font=QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont),
        properties={name: value for name, value in _properties(app).items()
                    if not name.startswith(OURS)},
        names=(app.applicationName(), app.organizationName()))


def _properties(app: QApplication) -> dict[str, Any]:
    names = (bytes(name.data()).decode() for name in app.dynamicPropertyNames())
    return {name: app.property(name) for name in names}


def restore(app: QApplication, state: AppState) -> None:
    """Put the application-wide state back to ``state`` (each part only where it differs)."""
    for event_filter in app_filters.installed():
        app_filters.uninstall(event_filter)
    if app.styleSheet():
        app.setStyleSheet("")
    if not isinstance(app.style(), PlaygroundStyle):
        app.setStyle(PlaygroundStyle())
    if app.palette().resolveMask():  # one was set: back to none, the style's
        app.setPalette(QPalette())
    if app.font() != state.font or QToolTip.font() != state.font:
        app.setFont(state.font)  # the tool tips' too
    for name in set(_properties(app)) | set(state.properties):
        value = state.properties.get(name)
        if app.property(name) != value:
            app.setProperty(name, value)  # None takes a dynamic property off
    if (app.applicationName(), app.organizationName()) != state.names:
        app.setApplicationName(state.names[0])
        app.setOrganizationName(state.names[1])
    changed = {key: value for key, value in PG_START.items()
               if not _same(pg.CONFIG_OPTIONS.get(key), value)}
    if changed:
        pg.setConfigOptions(**changed)


def _same(a: Any, b: Any) -> bool:
    """``a == b`` of one type (a theme sets QColors where pyqtgraph had letters)."""
    return type(a) is type(b) and bool(a == b)


@pytest.fixture(scope="session")
def app_start(qapp) -> AppState:
    """The state every test of this folder starts from, in this process."""
    return start_state(qapp)


@pytest.fixture(autouse=True)
def app_wide_state(qapp, app_start):
    """The application-wide state put back before and after each test: before, for the first
    test after one from outside this folder; after, so that a window the test leaves to Qt to
    delete is not restyled by the next test's first theme."""
    restore(qapp, app_start)
    yield app_start
    restore(qapp, app_start)
