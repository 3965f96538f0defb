"""Frames of a stack as text (faulthandler's, or a traceback's): which are the user's code.

Only the standard library.
"""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

#: one frame of faulthandler's text (``File "...", line N in func``)
FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in (?P<func>\S+)')
#: customgrad's folder (this module is ``__name__.count(".")`` folders down in it)
PACKAGE = str(Path(__file__).resolve().parents[__name__.count(".") - 1])


def library_file(path: str) -> bool:
    """True for frames that are not the user's: the standard library, installed packages
    (torch, numpy) and customgrad itself."""
    resolved = str(Path(path).resolve()) if not path.startswith("<") else path
    if resolved.startswith(PACKAGE):
        return True
    prefixes = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib",
                                                      "platlib")}
    return any(resolved.startswith(str(Path(p).resolve())) for p in prefixes if p) \
        or path.startswith("<")


def user_frame(stack: str) -> tuple[str, int, str] | None:
    """The innermost frame of faulthandler's ``stack`` that is the user's code:
    (file, line, function), or None."""
    frames = [m for m in map(FRAME.match, stack.splitlines()) if m]
    for m in frames:  # faulthandler lists the most recent call first
        if not library_file(m["file"]):
            return m["file"], int(m["line"]), m["func"]
    return None
