"""Session files: a run's settings, which Function, and the view (zoom, theme), as JSON.

Reading never imports anything: the Function is only *named* here. A session naming a file,
an editor Function or an import path needs the user's go-ahead before its code runs (the
window asks); gallery Functions load directly. A damaged or outdated file gives the valid
parts, defaults for the rest, and a list of what was wrong.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from customgrad.errors import SpecError, TargetError
from customgrad.problems.settings import Settings
from customgrad.targets import catalog
from playground.state import paths, preferences
from playground.state.paths import last_session_path
from playground.state.stored import write_atomically

__all__ = ["FORMAT", "VERSION", "FunctionRef", "Loaded", "classify", "is_file_spec",
           "last_session_path", "make", "read", "write", "write_editor_source"]

FORMAT = "autograd-playground-session"
VERSION = 1
KINDS = ("catalog", "file", "editor", "import")
#: the whole numbers the window's spin boxes hold (a Qt spin box holds 32 bits): a session's
#: value outside its range is refused here, before a widget sees it
_SURROGATE = re.compile("[\ud800-\udfff]")
FORM_RANGES = {"seed": (0, 2**31 - 1), "steps": (0, 10_000_000), "check_every": (0, 1_000_000)}


def is_file_spec(spec: str) -> bool:
    """True for ``path/to/file.py[:Class]`` (as :func:`customgrad.targets.loader.resolve`
    decides)."""
    from customgrad.targets.loader import is_file_target, split_target

    return is_file_target(split_target(spec)[0])


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def classify(spec: str) -> str:
    """catalog, file, editor (a file in the editor's folder), import, or unknown."""
    from customgrad.targets.loader import PROCESS_LOCAL, split_target

    where, class_name = split_target(spec)
    if where == PROCESS_LOCAL:  # playground.show's Function whose source was not captured
        return "unknown"
    if is_file_spec(spec):
        return "editor" if _inside(Path(where), paths.editor_dir()) else "file"
    if class_name is not None:
        return "import"
    try:
        catalog.get(where)
    except TargetError:
        return "unknown"
    return "catalog"


@dataclass
class FunctionRef:
    """Which Function a session uses; ``source`` only for editor Functions."""

    kind: str
    spec: str
    name: str = ""
    file: str | None = None
    source: str | None = None

    @property
    def needs_confirmation(self) -> bool:
        """Loading it would run code that is not part of the gallery."""
        return self.kind != "catalog"

    @property
    def display_name(self) -> str:
        from customgrad.targets.loader import split_target

        where, class_name = split_target(self.spec)
        if self.kind in ("file", "editor"):
            base = os.path.basename(where)
            return f"{class_name} ({base})" if class_name else base
        if self.kind == "import":  # a class in a module, or a torch.library op
            return f"{class_name} ({where})" if where else (class_name or self.spec)
        return self.name or self.spec

    @property
    def button_target(self) -> str:
        """What the confirmation button names: the file, or the module."""
        from customgrad.targets.loader import split_target

        where, _ = split_target(self.spec)
        return os.path.basename(where) if self.kind in ("file", "editor") else where

    def to_dict(self) -> dict:
        data = {"kind": self.kind, "spec": self.spec, "name": self.name}
        if self.file:
            data["file"] = self.file
        if self.source is not None:
            data["source"] = self.source
        return data


def describe(spec: str, label: str = "") -> FunctionRef:
    """A FunctionRef for the target ``spec``; file paths made absolute, editor source kept."""
    from customgrad.targets.loader import split_target

    kind = classify(spec)
    if kind in ("file", "editor"):
        where, class_name = split_target(spec)
        file = os.path.abspath(where)
        spec = f"{file}:{class_name}" if class_name else file
        source = None
        if kind == "editor":
            try:
                source = Path(file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                source = None
        return FunctionRef(kind, spec, label, file, source)
    return FunctionRef(kind, spec, label)


def make(settings: Settings, label: str = "", zoom: int | None = None,
         theme: str | None = None) -> dict:
    """The JSON-ready session for ``settings`` (and the view, when given)."""
    ref = describe(settings.target, label)
    data = settings.to_dict()
    data["target"] = ref.spec
    session = {"format": FORMAT, "version": VERSION, "function": ref.to_dict(),
               "settings": data}
    view: dict[str, object] = {}
    if zoom is not None:
        view["zoom"] = int(zoom)
    if theme is not None:
        view["theme"] = theme
    if view:
        session["view"] = view
    return session


def write(path: str | os.PathLike, session: dict) -> Path:
    """Write ``session`` as JSON (atomically: a crash never leaves half a file; a failed
    write raises OSError and leaves no temporary file)."""
    return write_atomically(Path(path), json.dumps(session, indent=2, default=str))


@dataclass
class Loaded:
    """What a session file gave: settings (defaults where it had nothing valid) and more."""

    settings: Settings
    function: FunctionRef
    zoom: int | None = None
    theme: str | None = None
    problems: list[str] = field(default_factory=list)
    raw: dict | None = None


def _read_json(path: Path, problems: list[str]) -> dict | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        problems.append(f"{path.name} does not exist")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path.name} cannot be read ({exc})")
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(f"{path.name} is not valid JSON (line {exc.lineno}: {exc.msg})")
        return None
    except RecursionError:
        problems.append(f"{path.name} is nested too deeply to be a session")
        return None
    except ValueError:  # Python reads no whole number of more than 4300 digits
        problems.append(f"{path.name} cannot be read: a number in it is too long")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path.name} is not a session (a JSON object was expected)")
        return None
    return _valid_text(data, problems)


def _valid_text(value, problems: list[str]):
    """``value`` with each lone surrogate (JSON's ``\\ud800``, which no file can hold) in
    its text replaced by U+FFFD, and a line in ``problems`` if there was one."""
    if isinstance(value, dict):
        return {_valid_text(k, problems): _valid_text(v, problems) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_text(v, problems) for v in value]
    if not isinstance(value, str):
        return value
    if not _SURROGATE.search(value):
        return value
    note = "lone surrogates in its text (characters no file can hold) were replaced by \ufffd"
    if note not in problems:
        problems.append(note)
    return _SURROGATE.sub("\ufffd", value)


def upgrade_shape(value: str) -> str:
    """A shape as sessions write it now: text in the one grammar (``3x8``, see
    :func:`customgrad.function.inputs.parse_shape`). Older versions also took ``3,8``, ``[3, 8]``,
    ``3*8`` or ``3×8``: such a shape is rewritten as ``3x8``. Anything else is kept as it is,
    for the form to show with its reason."""
    from customgrad.function.inputs import format_shape, parse_shape

    try:
        parse_shape(value)
        return value
    except SpecError:
        pass
    legacy = re.sub(r"\s*[,*×]\s*|(?<=[0-9])\s+(?=[0-9])", "x", value.strip().strip("()[]"))
    try:
        return format_shape(parse_shape(legacy))
    except SpecError:
        return value


def _check_ranges(settings: Settings, problems: list[str]) -> None:
    """Whole numbers outside what the form holds: the default, and a line in ``problems``."""
    for name, (low, high) in FORM_RANGES.items():
        value = getattr(settings, name)
        if not low <= value <= high:
            default = getattr(Settings(), name)
            problems.append(f"{name} {value} is outside {low}-{high}; {default} used")
            setattr(settings, name, default)


def read(path: str | os.PathLike, known_themes=()) -> Loaded:
    """Read a session file; never raises for bad content, never imports the Function."""
    from customgrad.function.inputs import GIVEN
    from customgrad.targets.loader import PROCESS_LOCAL, split_target

    path = Path(path)
    problems: list[str] = []
    data = _read_json(path, problems) or {}
    if data:
        if data.get("format") not in (FORMAT, None):
            problems.append(f"{path.name} says it is {data.get('format')!r}, not a session")
        version = data.get("version")
        if isinstance(version, int) and version > VERSION:
            problems.append(f"made by a newer version (format {version}); what this version "
                            "knows was used")
    if data and "settings" not in data:
        problems.append("it has no settings; defaults used")
    settings, setting_problems = Settings.from_dict(data.get("settings", {}))
    problems.extend(setting_problems)
    settings.shapes = {name: upgrade_shape(value) for name, value in settings.shapes.items()}
    _check_ranges(settings, problems)

    function = data.get("function")
    function = function if isinstance(function, dict) else {}
    kind = classify(settings.target)
    where, class_name = split_target(settings.target)
    if kind == "unknown" and where == PROCESS_LOCAL:
        problems.append(f"{class_name} was defined in a script or notebook and its source "
                        "could not be saved: open it from there again with playground.show(); "
                        f"{Settings().target} used")
    elif kind == "unknown":
        problems.append(f"no gallery Function is called {settings.target!r}; "
                        f"{Settings().target} used")
    if kind == "unknown":
        settings.target, kind = Settings().target, "catalog"
        settings.given = {}
        settings.init = {k: v for k, v in settings.init.items() if v != GIVEN}
    source = function.get("source") if kind == "editor" else None
    if source is not None and not isinstance(source, str):
        problems.append("the editor source is not text; ignored")
        source = None
    name = function.get("name")
    name = name if isinstance(name, str) else ""
    ref = FunctionRef(kind, settings.target, name,
                      os.path.abspath(split_target(settings.target)[0])
                      if kind in ("file", "editor") else None, source)

    view = data.get("view", {})
    view = view if isinstance(view, dict) else {}
    zoom = view.get("zoom")
    if zoom is not None and not (isinstance(zoom, (int, float)) and not isinstance(zoom, bool)
                                 and preferences.MIN <= zoom <= preferences.MAX):
        problems.append(f"zoom {zoom!r} is not between {preferences.MIN} and {preferences.MAX} %; "
                        "ignored")
        zoom = None
    theme = view.get("theme")
    if theme is not None and known_themes and theme not in known_themes:
        problems.append(f"theme {theme!r} is unknown; ignored")
        theme = None
    return Loaded(settings, ref, int(zoom) if zoom is not None else None, theme, problems,
                  data or None)


def write_editor_source(ref: FunctionRef) -> FunctionRef:
    """Put an editor Function's saved source back into the editor folder; the new reference.

    The same file name is used when it is free or already holds this source; otherwise a new
    name, so nothing the user has there is overwritten.
    """
    from customgrad.targets.loader import split_target

    if ref.kind != "editor" or ref.source is None:
        return ref
    where, class_name = split_target(ref.spec)
    folder = paths.editor_dir()
    stem, suffix = Path(where).stem, Path(where).suffix or ".py"
    candidate = folder / f"{stem}{suffix}"
    n = 1
    while candidate.exists():
        try:
            if candidate.read_text(encoding="utf-8") == ref.source:
                break
        except (OSError, UnicodeDecodeError):
            pass
        n += 1
        candidate = folder / f"{stem}_{n}{suffix}"
    if not candidate.exists():
        candidate.write_text(ref.source, encoding="utf-8")
    file = str(candidate.resolve())
    spec = f"{file}:{class_name}" if class_name else file
    return FunctionRef("editor", spec, ref.name, file, ref.source)
