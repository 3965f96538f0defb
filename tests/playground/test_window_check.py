"""When Qt cannot open a window, the app says why and what to do (exit 2), before Qt aborts."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from playground.support import window_check

LINUX_X11 = {"DISPLAY": ":7"}


def _loads_all(soname: str) -> None:
    return None


def _lacks(*absent: str):
    def load(soname: str) -> None:
        if soname in absent:
            raise OSError(f"{soname}: cannot open shared object file")
    return load


@pytest.fixture
def x_server(tmp_path):
    """A socket where an X server for display :7 would listen."""
    folder = tmp_path / "x11"
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(folder / "X7"))
    server.listen(4)
    yield str(folder)
    server.close()


def test_a_reachable_display_with_every_library_is_fine(x_server):
    assert window_check.problem(LINUX_X11, platform="linux", load=_loads_all,
                           sockets=x_server) is None


def test_no_display_at_all():
    message = window_check.problem({}, platform="linux", load=_loads_all)
    assert "neither DISPLAY nor WAYLAND_DISPLAY" in message
    for alternative in ("xvfb-run", "--screenshot", "QT_QPA_PLATFORM=offscreen"):
        assert alternative in message


def test_a_display_nobody_answers_is_named(tmp_path):
    message = window_check.problem({"DISPLAY": ":7"}, platform="linux", load=_loads_all,
                              sockets=str(tmp_path))
    assert "':7'" in message and str(tmp_path / "X7") in message
    assert "xvfb-run" in message and "--screenshot" in message


def test_a_display_name_that_is_no_display_name():
    message = window_check.problem({"DISPLAY": "nonsense"}, platform="linux", load=_loads_all)
    assert "'nonsense' is not a display name" in message


def test_missing_xcb_libraries_are_named_with_their_packages(x_server):
    load = _lacks("libxcb-cursor.so.0", "libxcb-icccm.so.4")
    message = window_check.problem(LINUX_X11, platform="linux", load=load, sockets=x_server)
    assert "libxcb-cursor.so.0 (libxcb-cursor0)" in message
    assert "libxcb-icccm.so.4 (libxcb-icccm4)" in message
    install = next(line for line in message.splitlines() if "sudo apt install" in line)
    assert set(window_check.XCB_LIBRARIES.values()) <= set(install.split())  # the full list
    assert "--screenshot" in message


def test_missing_libraries_lists_only_what_the_loader_cannot_find():
    assert window_check.missing_libraries(_loads_all) == []
    assert window_check.missing_libraries(_lacks("libGL.so.1")) == ["libGL.so.1"]


@pytest.mark.parametrize("env", [{"QT_QPA_PLATFORM": "offscreen"}, {"DISPLAY": ":7"}])
def test_other_platforms_or_a_chosen_qt_platform_are_left_to_qt(env):
    platform = "linux" if "QT_QPA_PLATFORM" in env else "darwin"
    assert window_check.problem(env, platform=platform,
                                load=_lacks(*window_check.XCB_LIBRARIES)) is None


def test_a_wayland_session_needs_no_x_server(tmp_path):
    (tmp_path / "wayland-0").touch()
    env = {"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": str(tmp_path)}
    assert window_check.problem(env, platform="linux", load=_lacks("libxcb.so.1")) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 displays are Linux's")
def test_the_app_on_a_display_that_does_not_exist_exits_2_with_the_reason(tmp_path):
    number = next(n for n in range(99, 200) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=f":{number}", AUTOGRAD_PLAYGROUND_HOME=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "playground"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"':{number}'" in proc.stderr and "xvfb-run" in proc.stderr
    assert "Traceback" not in proc.stderr and "Aborted" not in proc.stderr
