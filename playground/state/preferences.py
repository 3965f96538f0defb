"""Preferences: the zoom, the theme and presentation mode's choices, remembered between runs.

The zoom steps and their limits are plain values (the views apply a zoom to fonts; session
files check a stored zoom against these). :class:`Preferences` holds the current zoom, theme,
presentation flag and the panels presentation mode hides: the classroom's menus edit it, and
what shows them follows its signals. It also keeps where the user left the splitters and
whether the verdict's details are shown. Everything remembered goes to ``preferences.json`` in
the config folder as plain values (:mod:`playground.state.stored`: never Qt's settings file,
which can hold a pickle that reading would run); the plain values of ``classroom.ini``, the
file of earlier versions, still apply. Each value read back is checked; a damaged one gives
the default and a line in :attr:`Preferences.problems`.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QByteArray, QObject, Signal

from playground.state import paths
from playground.state.stored import PreferenceStore

#: zoom levels the menu and Ctrl+wheel step through (percent of the base font)
STEPS = (50, 67, 75, 80, 90, 100, 110, 125, 150, 175, 200, 250, 300)
MIN, MAX = STEPS[0], STEPS[-1]

#: panels presentation mode can hide: key -> menu text
PANELS = {
    "picker": "Function picker and inputs",
    "code": "Code and Step tabs",
    "loss": "Loss plot",
    "heatmaps": "Jacobian heatmaps",
    "status": "Status bar",
}
DEFAULT_HIDDEN = ("picker", "code", "status")


def clamp(percent: float) -> int:
    """``percent`` rounded and held between MIN and MAX."""
    return round(min(MAX, max(MIN, float(percent))))


def step_zoom(percent: int, direction: int) -> int:
    """The next zoom step above (direction > 0) or below ``percent``."""
    if direction > 0:
        return next((s for s in STEPS if s > percent), MAX)
    return next((s for s in reversed(STEPS) if s < percent), MIN)


def default_store() -> PreferenceStore:
    """The preferences' file in the config folder (or an earlier version's, to start from)."""
    folder = paths.config_dir()
    return PreferenceStore(folder / "preferences.json", legacy=folder / "classroom.ini")


class Preferences(QObject):
    """Zoom, theme and presentation mode, with a signal for each change.

    ``zoomChanged`` and ``themeChanged`` come on every set, also to the value there was (the
    window applies it again, and says so in the status bar); ``viewChosen`` follows when the
    user chose it (``remember=True``): it is kept for the next start, and a session that
    records the view wants saving.
    """

    zoomChanged = Signal(int)
    themeChanged = Signal(str)
    viewChosen = Signal()
    presentingChanged = Signal(bool)
    hiddenPanelsChanged = Signal()
    #: why a change could not be saved (a full disk, a read-only folder)
    saveFailed = Signal(str)

    def __init__(self, store: PreferenceStore | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        #: where the preferences are remembered
        self.store = store if store is not None else default_store()
        #: what was wrong with the values read back (each replaced by its default)
        self.problems: list[str] = list(self.store.problems)
        self.zoom = 100
        self.theme = "light"
        self.presenting = False
        self.hidden_panels: set[str] = set(self._stored_panels())

    # ---- zoom and theme ---------------------------------------------------------------------
    def set_zoom(self, percent: float, remember: bool = True) -> int:
        """Every pane at ``percent`` % of the start font size (50-300); the zoom set."""
        self.zoom = clamp(percent)
        if remember and not self.presenting:  # presentation's zoom is its layout's
            self._keep("view/zoom", self.zoom)
        self.zoomChanged.emit(self.zoom)
        if remember:
            self.viewChosen.emit()
        return self.zoom

    def zoom_by(self, direction: int) -> int:
        """One zoom step up (direction > 0) or down."""
        return self.set_zoom(step_zoom(self.zoom, direction))

    def set_theme(self, name: str, remember: bool = True) -> str:
        """Theme ``name`` (light, dark, high-contrast)."""
        self.theme = name
        if remember:
            self._keep("view/theme", name)
        self.themeChanged.emit(name)
        if remember:
            self.viewChosen.emit()
        return name

    def remembered_zoom(self) -> float:
        """The zoom of the last run (100 when there is none, or it is not a number)."""
        value = self.store.value("view/zoom", 100)
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value) and MIN <= value <= MAX:
            return float(value)
        self._damaged("view/zoom", value, f"a zoom from {MIN} to {MAX} %")
        return 100

    def remembered_theme(self, known=()) -> str:
        """The theme of the last run, if it is one of ``known``; else light."""
        name = self.store.value("view/theme", "light")
        if isinstance(name, str) and name in known:
            return name
        self._damaged("view/theme", name, "one of " + ", ".join(known))
        return "light"

    def _damaged(self, key: str, value: object, expected: str) -> None:
        text = repr(value)
        text = text if len(text) <= 40 else text[:37] + "…"
        self.problems.append(f"{key} {text} is not {expected}")

    # ---- presentation -----------------------------------------------------------------------
    def set_presenting(self, on: bool) -> None:
        self.presenting = bool(on)
        self.presentingChanged.emit(self.presenting)

    def set_panel_hidden(self, key: str, hidden: bool) -> None:
        """Whether presentation mode hides panel ``key`` (one of PANELS); remembered."""
        if hidden:
            self.hidden_panels.add(key)
        else:
            self.hidden_panels.discard(key)
        self._keep("presentation/hidden", ",".join(sorted(self.hidden_panels)))
        self.hiddenPanelsChanged.emit()

    def _stored_panels(self) -> list[str]:
        value = self.store.value("presentation/hidden", None)
        if value is None:
            return list(DEFAULT_HIDDEN)
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self._damaged("presentation/hidden", value, "a list of panels")
            return list(DEFAULT_HIDDEN)
        return [v for v in value if v in PANELS]

    # ---- layout -----------------------------------------------------------------------------
    def splitter_state(self, name: str) -> QByteArray | None:
        """Where the user left splitter ``name`` (None: nowhere remembered)."""
        text = self.store.value(f"layout/{name}")
        if text is None:
            return None
        read = None
        if isinstance(text, str) and text.isascii():
            read = QByteArray.fromBase64Encoding(
                text.encode("ascii"), QByteArray.Base64Option.AbortOnBase64DecodingErrors)
        if read is None or read.decodingStatus != QByteArray.Base64DecodingStatus.Ok:
            self._damaged(f"layout/{name}", text, "a splitter's state (base64 text)")
            return None
        state = QByteArray(read.decoded)  # (a copy: the result owns its array)
        return state if not state.isEmpty() else None

    def area_user_set(self) -> bool:
        """Whether the user had moved the main area's splitter."""
        return self._flag("layout/area_set")

    def remember_layout(self, states: dict[str, QByteArray], area_user_set: bool) -> None:
        for name, state in states.items():
            self.store.setValue(f"layout/{name}", state.toBase64().toStdString())
        self._keep("layout/area_set", area_user_set)

    def forget_layout(self) -> None:
        self.store.remove("layout")
        self._sync()

    def details_shown(self) -> bool:
        """Whether the verdict's details were shown last time."""
        return self._flag("view/jacobian_details")

    def remember_details(self, shown: bool) -> None:
        self._keep("view/jacobian_details", shown)

    def _flag(self, key: str) -> bool:
        """A true/false preference (an earlier version's INI file gives "true"/"false")."""
        value = self.store.value(key, False)
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        self._damaged(key, value, "true or false")
        return False

    def _keep(self, key: str, value) -> None:
        self.store.setValue(key, value)
        self._sync()

    def _sync(self) -> None:
        self.store.sync()
        if self.store.write_error:
            self.saveFailed.emit(self.store.write_error)
