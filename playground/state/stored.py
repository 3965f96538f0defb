"""The preferences' file: plain JSON values (numbers, text, true/false, lists of text).

Nothing read back is ever executed or unpickled. Qt's own settings files can hold a pickled
Python object (``@Variant(PySide::PyObjectWrapper …)``), which ``QSettings.value()`` unpickles:
a file someone left in the config folder would run its code when the app starts. So the window
never lets QSettings read a file; this store reads JSON, and an INI file of earlier versions
only as text, taking its plain values. A damaged file gives no values (the callers' defaults)
and a note in :attr:`PreferenceStore.problems`; the app always starts.
"""

from __future__ import annotations

import configparser
import json
import os
from pathlib import Path

__all__ = ["PreferenceStore", "read_legacy_ini", "write_atomically"]

#: what an INI file of earlier versions may give, read as text: key -> kind
LEGACY_KEYS = {"view/zoom": "number", "view/theme": "text", "presentation/hidden": "text",
               "view/jacobian_details": "text", "layout/area_set": "text"}
PLAIN = (str, int, float, bool)


def _plain(value: object) -> bool:
    """A value this store keeps: a JSON scalar, or a list of them."""
    if isinstance(value, list):
        return all(isinstance(v, PLAIN) for v in value)
    return isinstance(value, PLAIN)


def read_legacy_ini(path: Path) -> dict[str, object]:
    """The plain values of an INI file that QSettings wrote (never parsed by Qt): numbers and
    text only; a value Qt would decode (``@Variant``, ``@ByteArray``, ``@Rect`` …) or escape
    (a backslash) is left out."""
    parser = configparser.RawConfigParser(interpolation=None, strict=False)
    # keys as written: configparser's documented way, which typeshed types as a method
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text(encoding="utf-8"))
    values: dict[str, object] = {}
    for key, kind in LEGACY_KEYS.items():
        section, name = key.split("/")
        text = parser.get(section, name, fallback=None)
        if text is None:
            continue
        text = text.strip()
        if len(text) >= 2 and text[0] == text[-1] == '"':
            text = text[1:-1]
        if text.startswith("@") or "\\" in text:
            continue
        if kind == "number":
            try:
                values[key] = float(text)
            except ValueError:
                continue
        else:
            values[key] = text
    return values


class PreferenceStore:
    """Key -> plain value, kept in the JSON file ``path``; QSettings' ``value``, ``setValue``,
    ``remove`` and ``sync`` (what :class:`~playground.state.preferences.Preferences` uses).

    Without ``path``'s file, the plain values of ``legacy`` (an INI file of earlier versions)
    are the start. :attr:`problems` says what could not be read; a failed write is said there
    too (and in :attr:`write_error`), the temporary file removed.
    """

    def __init__(self, path: Path, legacy: Path | None = None) -> None:
        self.path = Path(path)
        self.problems: list[str] = []
        self.write_error: str | None = None
        self._values: dict[str, object] = self._read(legacy)

    def _read(self, legacy: Path | None) -> dict[str, object]:
        source = self.path if self.path.exists() or legacy is None or not legacy.exists() \
            else legacy
        try:
            if source == legacy:
                return read_legacy_ini(legacy)
            data = json.loads(source.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeError, ValueError, RecursionError,
                configparser.Error) as exc:
            self.problems.append(f"{source.name} cannot be read ({_short(exc)})")
            return {}
        if not isinstance(data, dict):
            self.problems.append(f"{source.name} is not a table of preferences")
            return {}
        kept = {}
        for key, value in data.items():
            if _plain(value):
                kept[key] = value
            else:
                self.problems.append(f"{key!r} in {source.name} is not a plain value")
        return kept

    # ---- QSettings' methods, as the preferences use them ------------------------------------
    def value(self, key: str, default: object = None) -> object:
        return self._values.get(key, default)

    def setValue(self, key: str, value: object) -> None:
        if not _plain(value):
            raise TypeError(f"preference {key!r}: {type(value).__name__} is not a plain value")
        self._values[key] = value

    def remove(self, key: str) -> None:
        """Forget ``key`` and every key under ``key/``."""
        for name in [k for k in self._values if k == key or k.startswith(f"{key}/")]:
            del self._values[name]

    def sync(self) -> None:
        """Write the file (atomically); a failure is kept in :attr:`write_error`, not raised."""
        try:
            write_atomically(self.path, json.dumps(self._values, indent=1, sort_keys=True))
        except OSError as exc:
            self.write_error = f"the preferences could not be saved to {self.path} ({exc})"
        else:
            self.write_error = None


def write_atomically(path: Path, text: str) -> Path:
    """``text`` (and a newline) as ``path``'s content, through a temporary file beside it: a
    crash never leaves half a file, and a failed write (a full disk) raises OSError with the
    temporary file removed."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise
    return path


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "…"
