"""How much memory the machine has, and how much a process uses now: what the memory limit
of a worker process (:mod:`customgrad.workers.isolation`) is measured with.

Linux answers from /proc; Windows through psutil (a dependency there); macOS and the BSDs
from ``ps`` where psutil is not installed. Only the standard library (psutil if present).
"""

from __future__ import annotations

import math
import os
import subprocess
import time


def machine_memory() -> int:
    """Bytes of physical memory, or 0 where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # Windows has no sysconf
        pass
    psutil = psutil_or_none()
    return int(psutil.virtual_memory().total) if psutil is not None else 0


def resident_bytes(pid: int) -> int | None:
    """Process ``pid``'s resident memory (on Windows its working set); None where the system
    does not say."""
    for way in (_proc_resident, _psutil_resident, _ps_resident):
        used = way(pid)
        if used is not None:
            return used
    return None


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (SIGSTOP, SIGTSTP: state T in
    ``/proc``; not a debugger's stop, t). False where the system does not say."""
    return _state(pid) == b"T"


def ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie: state Z in ``/proc``, not yet
    waited for). False where the system does not say."""
    if not os.path.isdir("/proc/self"):
        return False
    return _state(pid) in (None, b"Z", b"X")


def _state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return None


def psutil_or_none():
    """The psutil module where it is installed (a dependency on Windows), else None."""
    try:
        import psutil
    except ImportError:
        return None
    return psutil


def _proc_resident(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _psutil_resident(pid: int) -> int | None:
    psutil = psutil_or_none()
    if psutil is None:
        return None
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except (psutil.Error, OSError):
        return None


#: ``ps`` starts a process: asked at most this often per child (its last answer between)
PS_SECONDS = 0.25
_ps_answers: dict[int, tuple[float, int | None]] = {}


def _ps_resident(pid: int) -> int | None:
    now = time.monotonic()
    asked, used = _ps_answers.get(pid, (-math.inf, None))
    if now - asked < PS_SECONDS:
        return used
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True,
                             text=True, timeout=2).stdout
        used = int(out.split()[0]) * 1024  # kilobytes
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        used = None
    if len(_ps_answers) > 64:  # children come and go
        _ps_answers.clear()
    _ps_answers[pid] = (now, used)
    return used
