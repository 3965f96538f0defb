"""Where the app keeps the user's things: editor autosaves, the last session, settings.

``AUTOGRAD_PLAYGROUND_HOME`` overrides the platform folders (tests point it at a temp dir).
"""

from __future__ import annotations

import contextlib
from importlib.resources import files
from pathlib import Path

from platformdirs import user_config_dir, user_data_dir

from customgrad import config

APP = "autograd-playground"


def _home() -> Path | None:
    return config.current().home


def _made(path: Path) -> Path:
    """``path``, made if it can be; where it cannot (a read-only home), what writes there
    later says so (an OSError its caller reports): the app still starts."""
    with contextlib.suppress(OSError):
        path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    home = _home()
    return _made(home / "data" if home else Path(user_data_dir(APP, appauthor=False)))


def config_dir() -> Path:
    home = _home()
    return _made(home / "config" if home else Path(user_config_dir(APP, appauthor=False)))


def last_session_path() -> Path:
    """Where the window keeps the session it restores on the next start."""
    return config_dir() / "last-session.json"


def editor_dir() -> Path:
    """Functions written in the built-in editor live here, one file each."""
    return _made(data_dir() / "editor")


def resources_dir() -> Path:
    """The files the app ships (icons, example Functions, the New Function template): the
    package data of ``playground.resources``, which is the repository's ``resources/`` folder
    in a checkout or an editable install, and a folder in site-packages when installed.

    Run from a source tree that was never installed (``python -m playground`` in a clone, or
    with ``PYTHONPATH`` at one), there is no ``playground.resources`` package: the tree's own
    ``resources/`` is the same folder."""
    try:
        return Path(str(files("playground.resources")))
    except ModuleNotFoundError:
        tree = Path(__file__).resolve().parents[2]
        if (tree / "pyproject.toml").is_file() and (tree / "resources").is_dir():
            return tree / "resources"
        raise
