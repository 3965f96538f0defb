"""``autograd-playground [TARGET] [--session FILE] [--screenshot PATH]``: start the desktop app.

Without TARGET or --session the last session is reopened (a Function file in it waits for a
click); --screenshot renders offscreen, with the default look unless --theme/--zoom say else.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import sys

#: exit codes, as customgrad's: 0 all is well, 1 the Jacobian check failed, 2 any error
OK, CHECK_FAILED, ERROR = 0, 1, 2


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
    p.add_argument("--tab", choices=("code", "editor", "inspector", "step", "landscape"),
                   help="which side tab to show (the code, the editor, the inspector, the step "
                        "explainer, or the loss landscape: --screenshot then waits for it); "
                        "as AUTOGRAD_PLAYGROUND_TAB")
    p.add_argument("--order", choices=("first", "second"), default="first",
                   help="the heatmaps of the first order (your backward) or the second (your "
                        "double backward; D in the window)")
    p.add_argument("--screenshot", metavar="PATH",
                   help="open the window offscreen, compute the Jacobians, run a short descent, "
                        "save the window as PNG and exit: 0 if the check passed, 1 if it "
                        "failed, 2 on any error")
    p.add_argument("--steps", type=_count, default=20, metavar="N",
                   help="descent steps run before --screenshot saves (default: %(default)s; "
                        "a run in the window stops after the form's 'steps', 100 by default)")
    p.add_argument("--size", type=_size, default=(1440, 900), metavar="WIDTHxHEIGHT",
                   help="window size for --screenshot (default: 1440x900)")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    return p


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("autograd-playground")
    except PackageNotFoundError:
        return "(not installed)"


def _count(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of steps (0 or more)")
    return int(text)


def _size(text: str) -> tuple[int, int]:
    width, sep, height = text.strip().lower().partition("x")
    if not (sep and width.strip().isdigit() and height.strip().isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT in pixels, like 1280x720")
    return int(width), int(height)


THEME_NAMES = ("light", "dark", "high-contrast")  # playground.views.theme.THEMES, without Qt


def _percent(text: str) -> int:
    try:
        value = int(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 50 <= value <= 300:
        raise argparse.ArgumentTypeError(f"{value} is not between 50 and 300")
    return value


def _refusal(args) -> str | None:
    """Why the app cannot start as asked, before anything is built; None if it can."""
    if args.session and not os.path.isfile(args.session):
        return f"autograd-playground: session file not found: {args.session}\n"
    if args.screenshot:
        folder = os.path.dirname(os.path.abspath(args.screenshot))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            return (f"autograd-playground: cannot write the screenshot {args.screenshot}: "
                    f"the folder {folder} does not exist or is not writable\n")
        return None
    from playground.support import window_check

    return window_check.problem()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    refusal = _refusal(args)
    if refusal:
        sys.stderr.write(refusal)
        return ERROR
    if args.screenshot and not os.environ.get("QT_QPA_PLATFORM"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # a screenshot needs no screen
    if a_core_is_free():
        start_fork_server()  # else it starts once the window is built, as the Session asks
        give_head_start(args)
    with imports_frozen():
        no_source_scans()
        import playground.main_window  # noqa: F401 (its imports frozen with the rest)
        from playground.state.session import Session

    from playground.views import code_editor
    from playground.workers import torch_import

    torch_import.expect()  # imported after the first paint: what needs it waits till then
    # (where torch is here already, it waits for the first paint all the same)
    code_editor.hold_highlighting()  # superqt and the lexer imported after it too, off the GUI
    app = application()
    session = Session(held=True)  # no work starts before the window has painted
    shot = bool(args.screenshot)
    window, start = window_for(session, args)
    if shot:
        return _screenshot(app, window, session, args, start)
    unopened: list[bool] = []

    def open_first() -> None:  # once torch has arrived, after the first paint
        if not start():
            unopened.append(True)
            app.exit(ERROR)
    torch_import.when_arrived(open_first)
    fit_to_screen(app, window)
    window.show()
    if args.present:
        window.classroom.presentation.set_presentation(True)
    release_after_show(session, window)
    close_on_signals(window)
    code = app.exec()
    end_workers()
    return ERROR if unopened else code


def end_workers(seconds: float = 3.0) -> None:
    """Wait, once and for all of them, for the workers' threads (their work was stopped as
    the window closed or the application quit) before the objects their signals come from
    go: else each said "Signal source has been deleted"."""
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(int(seconds * 1000))


def window_for(session, args):
    """The window for ``args`` and its start (a function that opens what they name: False
    if --save-session could not write). The last session reopens in the window unless a
    screenshot, a target or a session file is asked for. The window opens nothing before
    its start: the app calls it once torch has arrived (:mod:`playground.workers.torch_import`),
    after the window's first paint."""
    from customgrad import config
    from playground.main_window import MainWindow

    shot = bool(args.screenshot)
    failures: list[BaseException] = []

    def failed(exc: BaseException) -> None:
        failures.append(exc)
    session.errorRaised.connect(failed)
    no_restore = config.current().no_restore
    restore_prefs = not (shot or no_restore)
    window = MainWindow(session, restore_prefs=restore_prefs, restore_session=False)
    # the look the command line asks for is the first paint's (it needs no torch): --zoom 100
    # showed the remembered 150 % until torch had arrived, then jumped
    if args.theme:
        window.preferences.set_theme(args.theme, remember=not shot)
    elif not restore_prefs:
        # the theme is applied as at any other start (its palette, not Fusion's), unremembered
        window.preferences.set_theme(window.preferences.theme, remember=False)
    if args.zoom:
        window.preferences.set_zoom(args.zoom, remember=not shot)
    restore = not (shot or args.target or args.session or no_restore)
    # the Code tab shows the first Function's source at once (its file's text), torch or not
    window.preview_target(first_target(args.target, args.session, restoring=restore))

    def start() -> bool:
        try:
            if restore:
                window.classroom.restore_last_session()
            return open_start(window, args, failures)
        finally:
            session.errorRaised.disconnect(failed)
    return window, start


def open_start(window, args, failures: list[BaseException]) -> bool:
    """Open what the command line names in ``window`` (``failures``: the errors its session
    raised so far). Where that fails (a wrong path, a syntax error, a misspelled gallery
    name), the last session opens instead (unless its Function is a file's, which would
    wait for a click: a second banner offering what was not asked for), else KillHead, and
    the banner names the problem and what opened: the window is never left empty. False if
    --save-session could not write."""
    room, session = window.classroom, window.session
    shot = bool(args.screenshot)
    if args.session:
        room.open_session(args.session)
    if args.target or not (args.session or room.restored):
        session.set_target(args.target or "killhead")
    if failures and session.target is None:
        if not shot:  # a gallery Function's; no offer to load another file than the one named
            room.restore_last_session(offer=False)
        if session.target is None:
            session.set_target("killhead")
        if session.target is not None:
            window.show_start_failure(failures[0])
    if args.order == "second":
        window.jacobian.set_order(2)
    if args.tab == "step":
        room.show_explainer()
    elif args.tab == "landscape":
        window.show_landscape()
    elif args.tab:  # the code, the editor, the inspector: as AUTOGRAD_PLAYGROUND_TAB
        window.open_tab(args.tab)
    if args.save_session and room.save_session(args.save_session) is None:
        sys.stderr.write(f"autograd-playground: could not write {args.save_session}\n")
        return False
    return True


def close_on_signals(window) -> None:
    """Ctrl+C in the terminal (SIGINT) and SIGTERM close the window as its close button does:
    the session is kept for the next start and the workers end. (Python's own handling
    raised KeyboardInterrupt in whatever Qt callback ran next, and SIGTERM ended the app
    with nothing saved.) The signal wakes Qt's loop through a socket (``set_wakeup_fd``)."""
    import socket

    from PySide6.QtCore import QSocketNotifier

    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    try:
        signal.set_wakeup_fd(writer.fileno())
    except ValueError:  # not the main thread (a notebook's kernel, say): Python's handling
        reader.close()
        writer.close()
        return
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: None)  # the wake-up byte does the work
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, window)

    def woken() -> None:
        with contextlib.suppress(OSError):
            reader.recv(64)
        window.close()
    notifier.activated.connect(woken)
    window.signal_wakeup = (reader, writer, notifier)  # kept as long as the window


def start_fork_server() -> None:
    """Start the worker processes' fork server first thing, before the window's own imports:
    it imports torch (2 to 3 s) in a process of its own while this one imports and builds
    the window, so the first build and check find it ready (it started once the window was
    built, and the first verdict waited for both imports, one after the other). Only the
    standard library here; nothing where children are spawned (a spawned child imports
    torch itself). A failure is left to the first job, which starts it again and says why."""
    import threading

    from customgrad.workers import processes
    from playground.workers import WORKER_MODULES

    if not processes.fork_server():
        return
    processes.preload(*WORKER_MODULES)

    def warm() -> None:
        with contextlib.suppress(Exception):
            processes.warm()

    threading.Thread(target=warm, name="start fork server", daemon=True).start()


def give_head_start(args) -> None:
    """Have the first Function built and checked in its worker process as soon as the fork
    server has torch, beside the window's imports (:mod:`playground.workers.head_start`).
    qtpy (superqt's, which the window imports later) is imported first: it and PySide6 set
    variables of the environment (``QT_API``), which is part of the worker process's key:
    set later, the window's own jobs would not find the head start's process. None where
    children are spawned (untried there: each imports torch itself)."""
    from customgrad.workers import processes

    if not processes.fork_server():
        return
    import qtpy  # noqa: F401

    from playground.workers import head_start

    first = first_target(args.target, args.session,
                         restoring=not (args.screenshot or args.target or args.session))
    if first is not None:
        head_start.start(first)


def first_target(target: str | None, session: str | None, restoring: bool) -> str | None:
    """Which Function the window opens first, as far as the command line and the last
    session's file say it without importing the engine: ``target``, else the last session's
    where the window restores one (its ``settings.target``), else killhead; None where a
    session file is given or the last session cannot be read."""
    if target:
        return target
    if session:
        return None
    from playground.state.paths import last_session_path

    path = last_session_path()
    if not restoring or not path.exists():
        return "killhead"
    with contextlib.suppress(OSError, ValueError, LookupError, TypeError):
        return str(json.loads(path.read_text(encoding="utf-8"))["settings"]["target"])
    return None


def a_core_is_free() -> bool:
    """Whether this machine has a core to spare (the last minute's load average at least one
    below the cores this process may use): there the fork server's import of torch runs
    beside the window's and the first verdict comes seconds sooner. On a machine whose cores
    are all busy the two imports would share them, and the window would paint seconds later
    for a verdict no sooner (docs/performance-log.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] <= cores - 1
    except OSError:
        return False


#: what the window's worker processes run, for the fork server to import once (as
#: playground.workers.jobs asks, which imports torch)


def application():
    """The running QApplication (a notebook's, under ``%gui qt``), or a new one; named and
    with the app's font and plot defaults either way."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from customgrad.errors import serialise_ast_parse
    from playground.views.qt_messages import filter_noise

    serialise_ast_parse()  # the GUI thread and workers' threads parse sources at once
    filter_noise()
    app = QApplication.instance() or QApplication(sys.argv[:1] or ["autograd-playground"])
    app.setApplicationName("autograd-playground")
    app.setOrganizationName("autograd-playground")
    from playground.views.theme import use_style

    use_style(app)  # before any widget: a style set later polishes every widget again
    font = app.font()
    font.setPointSizeF(max(font.pointSizeF(), 11.0))
    app.setFont(font)
    pg.setConfigOptions(antialias=True, background="w", foreground="k")
    return app


def fit_to_screen(app, window) -> None:
    """The window at its default size, or the screen's where that is smaller."""
    room_on_screen = app.primaryScreen().availableGeometry()
    window.resize(min(1440, room_on_screen.width()), min(900, room_on_screen.height()))


def release_after_show(session, window, settle: bool = True) -> None:
    """Let the session's work start once ``window`` has painted for the first time (or after
    FIRST_PAINT_WAIT_MS, if it does not paint) and torch has arrived: torch is imported then,
    on a helper thread (:mod:`playground.workers.torch_import`; the window says so), and the
    build, and the Jacobian that follows it, start on their worker threads while the window
    is already on screen. Just before, the heap settles (:func:`settle_heap`, unless
    ``settle`` is false: a program of the user's that opened the window keeps its own): the
    window is built, no work has begun."""
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    from playground.views import code_editor
    from playground.workers import torch_import

    app = QApplication.instance()
    window.show_torch_loading()

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
            QTimer.singleShot(0, session, after_paint)

    def after_paint() -> None:
        if code_editor.highlighting_held():  # the code's colours, beside torch's import
            torch_import.in_background(code_editor.prepare_highlighting,
                                       code_editor.release_highlighting, "highlighting")
        torch_import.when_arrived(lambda: (settle and settle_heap(), session.release()))
        torch_import.start()

    released: list[bool] = []
    watcher = FirstPaint(session)
    app.installEventFilter(watcher)
    QTimer.singleShot(FIRST_PAINT_WAIT_MS, session, release)


#: the longest the session's work waits for the window's first paint
FIRST_PAINT_WAIT_MS = 500


@contextlib.contextmanager
def imports_frozen():
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


#: the packages whose modules the window imports by the hundred: PySide6 is told that they
#: select none of its features before they are imported (:func:`no_source_scans`)
SCANNED_PACKAGES = ("playground", "customgrad", "pyqtgraph")


def no_source_scans() -> None:
    """Spare PySide6 reading the source of every module imported after it.

    PySide6 wraps ``import`` to learn, for each module imported after it, whether it may select one
    of its ``__feature__`` options (``snake_case``, ``true_property``): once per module name, it
    reads the module's whole source (``inspect.getsource``) and looks for "PySide6". The window
    imports hundreds of modules after PySide6 (its own, the engine's, pyqtgraph's, and the
    standard library's as they are named), all before the first paint (docs/startup.md has the
    measurements). This app selects no feature anywhere, so every module sees Qt's own names:
    PySide6's table (``PySide6.support.feature.pyside_feature_dict``, name -> selection) is
    given 0 ("no feature") beforehand for the modules loaded now and every module of
    :data:`SCANNED_PACKAGES` (found on disk, none imported), and PySide6 skips the names it
    has. A name the table has already keeps its entry; where PySide6 keeps no such table
    (another version), nothing changes."""
    import importlib.util

    import PySide6.QtCore  # noqa: F401 (the first import of it installs the hook)

    feature = sys.modules.get("PySide6.support.feature")
    table = getattr(feature, "pyside_feature_dict", None)
    if not isinstance(table, dict):
        return
    names = set(sys.modules)
    for package in SCANNED_PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            names.update(_module_names(package, folder))
    for name in names:
        table.setdefault(name, 0)


def _module_names(package: str, folder: str):
    """The dotted names of the modules under ``folder``, the package ``package``'s."""
    for here, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d.isidentifier()]
        prefix = ".".join([package, *os.path.relpath(here, folder).split(os.sep)]) \
            if here != folder else package
        for file in files:
            if file.endswith(".py"):
                stem = file[:-3]
                yield prefix if stem == "__init__" else f"{prefix}.{stem}"


def settle_heap() -> None:
    """Once the window is built, before any work starts: the window's objects live as long
    as the app too. Collect the start-up's garbage, then freeze the rest (no job, worker or
    problem exists yet, so none is frozen and kept for good)."""
    gc.collect()
    gc.freeze()


def _shown_at_size(window, args) -> None:
    """The window shown at --size (in presentation mode with --present); a note where its
    minimum is larger."""
    width, height = args.size
    window.resize(width, height)
    window.show()
    if args.present:
        window.classroom.presentation.set_presentation(True, fullscreen=False)
    if (window.width(), window.height()) != (width, height):
        sys.stderr.write(f"autograd-playground: note: --size {width}x{height} is below the "
                         f"window's minimum; the screenshot is {window.width()}x"
                         f"{window.height()}\n")


def _screenshot(app, window, session, args, start) -> int:
    from PySide6.QtCore import QTimer

    _shown_at_size(window, args)
    release_after_show(session, window)
    state = {"error": None, "passed": True, "stepping": False, "saved": False,
             "unopened": False}

    def save():
        if state["saved"]:
            return
        state["saved"] = True
        app.processEvents()
        from playground.views.pacing import release_all

        release_all()  # a repaint held for a moment would be drawn blank
        if not window.grab().save(args.screenshot):
            state["error"] = f"could not write {args.screenshot}"
        session.shutdown(wait=0.5)
        app.exit(0)

    def report(report):
        from customgrad.checking.jacobian.report import COMPUTING

        if args.order == "second" and report.second_order_reason == COMPUTING:
            return  # the first order's verdict: the second's follows (secondOrderReady)
        shown = report.second_order if args.order == "second" else report
        state["passed"] = report.passed and (shown is None or shown.passed)
        if not state["stepping"]:
            state["stepping"] = True
            if args.steps > 0:
                session.run_steps(args.steps)
            elif args.tab == "landscape":
                window.landscape.model.recompute()
            else:
                QTimer.singleShot(300, save)

    def done(news, *_contours):  # a batch, or with --tab landscape the landscape drawn
        if state["stepping"] and getattr(news, "step", session.step) >= args.steps:
            QTimer.singleShot(300, save)

    def noted(exc):
        state["error"] = state["error"] or str(exc)

    def error(exc):
        noted(exc)
        QTimer.singleShot(300, save)

    session.jacobianReady.connect(report)
    session.secondOrderReady.connect(report)
    (window.landscape.model.ready if args.tab == "landscape" else session.batchReady).connect(
        done)
    QTimer.singleShot(120_000, lambda: (error(TimeoutError("timed out after 120 s")), save()))

    def open_first() -> None:  # once torch has arrived, after the first paint
        session.errorRaised.connect(noted)  # what fails to open: the Function opened instead
        if not start():                     # is shot
            state["unopened"] = True
            session.shutdown(wait=0.5)
            app.exit(ERROR)
            return
        session.errorRaised.disconnect(noted)
        session.errorRaised.connect(error)
        if session.target is None:
            QTimer.singleShot(300, save)

    from playground.workers import torch_import

    torch_import.when_arrived(open_first)
    app.exec()
    end_workers()
    return ERROR if state["unopened"] else _screenshot_said(state)


def _screenshot_said(state: dict) -> int:
    """--screenshot's exit code, and its error on stderr."""
    if state["error"]:
        saved = "" if "could not write" in state["error"] else "the screenshot was saved, but "
        sys.stderr.write(f"autograd-playground: {saved}{state['error']}\n")
        return ERROR
    return OK if state["passed"] else CHECK_FAILED


if __name__ == "__main__":
    sys.exit(main())
