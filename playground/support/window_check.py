"""Can Qt open a window here? Asked before Qt is imported, so that a missing display or a missing
system library gets one clear paragraph instead of Qt's abort (and a core dump).

No Qt in this module: it runs before the QApplication exists.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
from collections.abc import Callable, Mapping

#: the shared libraries Qt's X11 (xcb) platform plugin loads, and the Debian/Ubuntu package of
#: each (read off ``ldd`` of PySide6's ``libqxcb.so`` and ``libQt6XcbQpa.so``)
XCB_LIBRARIES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}

X11_SOCKETS = "/tmp/.X11-unix"

ALTERNATIVES = """\
Without a window, the app still works:
  on a virtual screen:          xvfb-run autograd-playground
  render the window to a file:  autograd-playground --screenshot out.png
  (that is Qt's offscreen platform: QT_QPA_PLATFORM=offscreen does the same for any command)
  the engine alone, no Qt:      customgrad check killhead
"""


def _load(soname: str) -> None:
    ctypes.CDLL(soname)


def missing_libraries(load: Callable[[str], None] = _load) -> list[str]:
    """The libraries of :data:`XCB_LIBRARIES` the dynamic loader cannot find."""
    missing = []
    for soname in XCB_LIBRARIES:
        try:
            load(soname)
        except OSError:
            missing.append(soname)
    return missing


def _reachable_x11(display: str, sockets: str, timeout: float) -> str | None:
    """None if an X server answers at ``display`` (``[host]:N[.S]``), else why not."""
    host, sep, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not sep or not number.isdigit():
        return f"{display!r} is not a display name like ':0' or 'host:0'"
    if host in ("", "unix") or host.startswith("/"):
        path = host if host.startswith("/") else os.path.join(sockets, f"X{number}")
        for address in (path, "\0" + path):  # a file, or Linux's abstract socket namespace
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                try:
                    s.connect(address)
                    return None
                except OSError:
                    continue
        return f"no X server answers at {path}"
    port = 6000 + int(number)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return None
    except OSError as exc:
        return f"no X server answers at {host}:{port} ({exc.strerror or exc})"


def _wayland_socket(env: Mapping[str, str]) -> str | None:
    name = env.get("WAYLAND_DISPLAY")
    if not name:
        return None
    return name if os.path.isabs(name) else os.path.join(env.get("XDG_RUNTIME_DIR", ""), name)


def problem(env: Mapping[str, str] | None = None, *, platform: str | None = None,
            load: Callable[[str], None] = _load, sockets: str = X11_SOCKETS,
            timeout: float = 3.0) -> str | None:
    """Why Qt could not open a window here, as a paragraph for the user; None if it can (as
    far as can be told without Qt: a display that answers, the libraries its plugin loads).

    Only Linux desktops are looked at: elsewhere, or with QT_QPA_PLATFORM chosen by the user,
    Qt is left to decide.
    """
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    wayland = _wayland_socket(env)
    if wayland and os.path.exists(wayland):
        return None
    display = env.get("DISPLAY")
    if not display:
        return ("autograd-playground: no display found (neither DISPLAY nor WAYLAND_DISPLAY "
                "is set), so no window can open.\n" + ALTERNATIVES)
    why = _reachable_x11(display, sockets, timeout)
    if why is not None:
        return (f"autograd-playground: cannot open a window on the display {display!r} "
                f"(DISPLAY): {why}.\nIs the desktop session running, and is DISPLAY the "
                "one it set?\n" + ALTERNATIVES)
    missing = missing_libraries(load)
    if missing:
        packages = " ".join(dict.fromkeys(XCB_LIBRARIES.values()))
        names = ", ".join(f"{soname} ({XCB_LIBRARIES[soname]})" for soname in missing)
        return (f"autograd-playground: Qt cannot open a window on {display!r}: system "
                f"libraries its X11 platform needs are missing: {names}.\n"
                f"On Debian or Ubuntu, install what Qt needs with:\n"
                f"  sudo apt install {packages}\n"
                "(other distributions: the packages that provide these libraries).\n"
                + ALTERNATIVES)
    return None
