"""``autograd-playground [TARGET] [--session FILE] [--screenshot PATH]``: start the desktop app.

Without TARGET or --session the last session is reopened (a Function file in it waits for a
click); --screenshot renders offscreen, with the default look unless --theme/--zoom say else.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys

NO_DISPLAY = """autograd-playground: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set).
Run it from a desktop session, or on a virtual screen:  xvfb-run autograd-playground
or render the window to a file without a screen:      autograd-playground --screenshot out.png
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autograd-playground", description=__doc__.splitlines()[0])
    p.add_argument("target", nargs="?", default=None,
                   help="gallery name, path/to/file.py[:Class] or package.module:Class "
                        "(default: the last session, else killhead)")
    p.add_argument("--session", metavar="FILE",
                   help="open a saved session (a Function file in it waits for a click)")
    p.add_argument("--save-session", metavar="FILE",
                   help="write the session (settings, Function, zoom, theme) to FILE after "
                        "start-up")
    p.add_argument("--theme", choices=THEME_NAMES, help="light, dark or high-contrast")
    p.add_argument("--zoom", type=_percent, metavar="PERCENT",
                   help="zoom every pane, 50 to 300 (default: as last time, or 100)")
    p.add_argument("--present", action="store_true",
                   help="start in presentation mode (big readout, chosen panels hidden)")
    p.add_argument("--tab", choices=("code", "step"),
                   help="which side tab to show (the code, or the step explainer)")
    p.add_argument("--screenshot", metavar="PATH",
                   help="open the window offscreen, compute the Jacobians, run a short descent, "
                        "save the window as PNG and exit")
    p.add_argument("--steps", type=int, default=20,
                   help="descent steps to run before --screenshot (default 20)")
    p.add_argument("--size", default="1440x900", help="window size for --screenshot")
    return p


THEME_NAMES = ("light", "dark", "high-contrast")  # playground.theme.THEMES, without Qt


def _percent(text: str) -> int:
    try:
        value = int(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 50 <= value <= 300:
        raise argparse.ArgumentTypeError(f"{value} is not between 50 and 300")
    return value


def _has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not _has_display():
        if args.screenshot:
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
        else:
            sys.stderr.write(NO_DISPLAY)
            return 2
    with _imports_frozen():
        import pyqtgraph as pg
        from PySide6.QtWidgets import QApplication

        from playground.main_window import MainWindow
        from playground.session import Session

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("autograd-playground")
    app.setOrganizationName("autograd-playground")
    font = app.font()
    font.setPointSizeF(max(font.pointSizeF(), 11.0))
    app.setFont(font)
    pg.setConfigOptions(antialias=True, background="w", foreground="k")

    session = Session(held=True)  # no work starts before the window has painted
    shot = bool(args.screenshot)
    window = MainWindow(session, restore_prefs=False if shot else None,
                        restore_session=False if (shot or args.target or args.session) else None)
    room = window.classroom

    def start() -> bool:
        """Open what the command line names; False if --save-session could not write."""
        if args.session:
            room.open_session(args.session)
        if args.theme:
            room.set_theme(args.theme, remember=not shot)
        if args.zoom:
            room.set_zoom(args.zoom, remember=not shot)
        if args.target or not (args.session or room.restored):
            session.set_target(args.target or "killhead")
        if args.tab == "step":
            room.show_explainer()
        if args.save_session and room.save_session(args.save_session) is None:
            sys.stderr.write(f"autograd-playground: could not write {args.save_session}\n")
            return False
        return True

    if shot:
        return _screenshot(app, window, session, args, start)
    if not start():
        return 2
    window.resize(1440, 900)
    window.show()
    if args.present:
        room.set_presentation(True)
    _release_after_show(session, window)
    return app.exec()


def _release_after_show(session, window) -> None:
    """Let the session's work start once ``window`` has painted for the first time (or after
    FIRST_PAINT_WAIT_MS, if it does not paint): the build, and the Jacobian that follows it,
    then start on their worker threads while the window is already on screen. Just before,
    the heap settles (:func:`settle_heap`): the window is built, and no work has begun."""
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()

    class FirstPaint(QObject):
        def eventFilter(self, obj, event) -> bool:
            if event.type() == QEvent.Type.Paint and obj.isWidgetType() \
                    and obj.window() is window:
                release()
            return False

    def release() -> None:
        if not released:
            released.append(True)
            app.removeEventFilter(watcher)
            QTimer.singleShot(0, session, lambda: (settle_heap(), session.release()))

    released: list[bool] = []
    watcher = FirstPaint(session)
    app.installEventFilter(watcher)
    QTimer.singleShot(FIRST_PAINT_WAIT_MS, session, release)


#: the longest the session's work waits for the window's first paint
FIRST_PAINT_WAIT_MS = 500


@contextlib.contextmanager
def _imports_frozen():
    """Import the app with automatic garbage collection off, then freeze what is loaded.

    torch, PySide6 and pyqtgraph make about 200,000 objects that live as long as the app.
    A full collection walks every one of them (over 0.1 s here), and importing and building
    the window would set off several; later, one would stall the running window as long.
    Frozen objects are never walked again; garbage made from here on is still collected.
    The price: a reference cycle the imports left behind is frozen too, never freed (a few
    objects, once)."""
    if "playground.main_window" in sys.modules:  # imported already (a test, a second main)
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def settle_heap() -> None:
    """Once the window is built, before any work starts: the window's objects live as long
    as the app too. Collect the start-up's garbage, then freeze the rest (no job, worker or
    problem exists yet, so none is frozen and kept for good)."""
    gc.collect()
    gc.freeze()


def _screenshot(app, window, session, args, start) -> int:
    from PySide6.QtCore import QTimer

    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        sys.stderr.write(f"autograd-playground: --size {args.size!r} is not WIDTHxHEIGHT\n")
        return 2
    window.resize(max(width, 1280), max(height, 800))
    window.show()
    if args.present:
        window.classroom.set_presentation(True, fullscreen=False)
    _release_after_show(session, window)
    state = {"failed": None, "stepping": False, "saved": False}

    def save():
        if state["saved"]:
            return
        state["saved"] = True
        app.processEvents()
        from playground.pacing import release_all

        release_all()  # a repaint held for a moment would be drawn blank
        ok = window.grab().save(args.screenshot)
        if not ok:
            sys.stderr.write(f"autograd-playground: could not write {args.screenshot}\n")
            state["failed"] = state["failed"] or "save"
        session.shutdown(wait=0.5)
        app.exit(1 if state["failed"] else 0)

    def report(_report):
        if not state["stepping"]:
            state["stepping"] = True
            if args.steps > 0:
                session.run_steps(args.steps)
            else:
                QTimer.singleShot(300, save)

    def batch(_batch):
        if state["stepping"] and session.step >= args.steps:
            QTimer.singleShot(300, save)

    def error(exc):
        state["failed"] = str(exc)
        QTimer.singleShot(300, save)

    session.jacobianReady.connect(report)
    session.batchReady.connect(batch)
    session.errorRaised.connect(error)
    QTimer.singleShot(120_000, lambda: (error(TimeoutError("timed out")), save()))
    if not start():
        session.shutdown(wait=0.5)
        return 2
    code = app.exec()
    if state["failed"]:
        sys.stderr.write(f"autograd-playground: screenshot saved, but: {state['failed']}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
