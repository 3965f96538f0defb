"""The environment variables customgrad and the playground read, read here once, typed.

:func:`current` reads them on first use and keeps the :class:`Config`; code that needs one
reads it from there, never from ``os.environ``. A test (or an embedding program) sets its own
with :func:`use` or, for a while, :func:`changed`, instead of changing the environment in the
middle of a run. A worker process reads its own from the environment it is started with (the
parent's), as any program does.

A value that cannot be read is ignored and the default holds, but a memory limit that is no
number of GiB, which is an error where a worker process is started with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from customgrad.errors import CustomGradError

MEMORY_LIMIT_GIB = "CUSTOMGRAD_MEMORY_LIMIT_GIB"
START_METHOD = "CUSTOMGRAD_START_METHOD"
CHILD_NICE = "CUSTOMGRAD_CHILD_NICE"
KEEP_SECONDS = "CUSTOMGRAD_KEEP_SECONDS"
HOME = "AUTOGRAD_PLAYGROUND_HOME"
LOOP = "AUTOGRAD_PLAYGROUND_LOOP"
TAB = "AUTOGRAD_PLAYGROUND_TAB"
NO_RESTORE = "AUTOGRAD_PLAYGROUND_NO_RESTORE"


@dataclass(frozen=True)
class Config:
    """Every setting the environment can change, with its default."""

    #: a worker process's memory limit in GiB (0: none); None: half the machine's memory
    memory_limit_gib: float | None = None
    #: the text of a memory limit that is no number of GiB: an error where a limit is used
    bad_memory_limit: str | None = None
    #: children start with ``spawn`` (a fresh interpreter each) even where a fork server could
    spawn: bool = False
    #: how much lower a child's scheduling priority is than its parent's (nice 0 to 19)
    child_nice: int = 5
    #: how long a kept worker process waits for its next job before it ends (0: never kept)
    keep_seconds: float = 300.0
    #: the playground's settings and data folder; None: the platform's own folders
    home: Path | None = None
    #: where the playground's descent loop runs: "process" or "thread"
    loop: str = "process"
    #: the playground's side tab at start, by the start of its title ("editor", "inspector",
    #: "step", "landscape"); None: the first, Code
    tab: str | None = None
    #: the playground starts with the gallery's defaults, not the last session's settings
    no_restore: bool = False

    def memory_limit(self) -> float | None:
        """:attr:`memory_limit_gib`; CustomGradError for one that is no number of GiB."""
        if self.bad_memory_limit is not None:
            raise CustomGradError(f"{MEMORY_LIMIT_GIB}={self.bad_memory_limit} is not a "
                                  "number of GiB (0: no limit).")
        return self.memory_limit_gib

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Config:
        """The configuration ``env`` (default ``os.environ``) sets."""
        env = os.environ if env is None else env

        def text(name: str) -> str:
            return env.get(name, "").strip()

        defaults = cls()
        nice, limit = text(CHILD_NICE), text(MEMORY_LIMIT_GIB)
        gib = _gib(limit)
        return cls(
            memory_limit_gib=None if gib is None or math.isnan(gib) else gib,
            bad_memory_limit=limit if gib is not None and math.isnan(gib) else None,
            spawn=text(START_METHOD).lower() == "spawn",
            child_nice=int(nice) if nice.isdigit() and int(nice) <= 19 else defaults.child_nice,
            keep_seconds=_seconds(text(KEEP_SECONDS), defaults.keep_seconds),
            home=Path(env[HOME]) if env.get(HOME) else None,
            loop="thread" if text(LOOP).lower() == "thread" else "process",
            tab=text(TAB).lower() or None,
            no_restore=bool(env.get(NO_RESTORE)))


def _gib(text: str) -> float | None:
    """None for no text, NaN for text that is no number of GiB."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if 0 <= value < math.inf else math.nan


def _seconds(text: str, default: float) -> float:
    with contextlib.suppress(ValueError):
        if 0 <= float(text) < math.inf:
            return float(text)
    return default


_current: Config | None = None
_lock = threading.Lock()


def current() -> Config:
    """The configuration: the environment's, read on first use, unless :func:`use` set
    another."""
    global _current
    with _lock:
        if _current is None:
            _current = Config.from_environment()
        return _current


def use(config: Config | None) -> None:
    """From now on, ``config`` (None: the environment's again, read on next use)."""
    global _current
    with _lock:
        _current = config


@contextlib.contextmanager
def changed(**changes: object) -> Iterator[Config]:
    """Within: the configuration with ``changes`` (field names of :class:`Config`)."""
    before = current()
    config = dataclasses.replace(before, **changes)  # type: ignore[arg-type]
    use(config)
    try:
        yield config
    finally:
        use(before)
