"""Worker processes: where every child comes from, and how it loads a problem again.

Children start from one fork server (:func:`context`) that has imported torch once, so a
fresh child starts in milliseconds; where there is no fork server (Windows) they are started
with ``spawn`` (seconds each: a fresh interpreter imports torch). Used by the descent loop's
process (:mod:`customgrad.workers.runner`) and by one-job children
(:mod:`customgrad.workers.isolation`). A child loads the Function again from its spec
(:class:`ProblemRef`; :func:`portable` says whether it can), and reports a failure to do so as
:class:`SetupFailed`, on which callers run the work on a thread instead.

Only the standard library and torch, imported where a function needs it: a caller that
holds no tensors (the CLI) starts children without importing torch itself.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.machinery
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing import spawn
from typing import TYPE_CHECKING

from customgrad import config
from customgrad.errors import CustomGradError
from customgrad.workers import threads
from customgrad.workers.memory import ended

if TYPE_CHECKING:
    import torch

    from customgrad.problems.settings import Settings
    from customgrad.training.descent import Descent

#: modules the fork server imports once, so that each run's process starts in milliseconds
PRELOAD = ["torch", "customgrad.workers.sharing", "customgrad.workers.warmup",
           "customgrad.workers.runner", "customgrad.workers.isolation", "customgrad.workers.warm",
           "customgrad.targets.catalog"]

_context = None
_context_lock = threading.Lock()


def fork_server() -> bool:
    """True where children start from a fork server that has imported torch once (Linux,
    macOS): milliseconds per child. Else (Windows, which has none, or
    ``CUSTOMGRAD_START_METHOD=spawn`` anywhere) each child is a fresh interpreter started
    with ``spawn`` that imports torch itself: seconds, the same results."""
    return not config.current().spawn and "forkserver" in multiprocessing.get_all_start_methods()


#: set once a child of this process has started: the fork server has imported torch
_a_child_started = threading.Event()


def child_started() -> None:
    """A child of this process said it started (:mod:`customgrad.workers.isolation`)."""
    _a_child_started.set()


def children_ready() -> bool:
    """Whether a new child starts in milliseconds now: False until the fork server has
    started one (until then it imports torch, seconds, and a job waits for it); True where
    children are spawned (each imports torch itself: nothing to wait for once)."""
    return _a_child_started.is_set() or not fork_server()


def preload(*modules: str) -> None:
    """Have the fork server import ``modules`` too (by name, when it starts): what an
    application's jobs run, so that no child imports it again (about 0.1 s each)."""
    with _context_lock:
        PRELOAD.extend(m for m in modules if m not in PRELOAD)
        if _context is not None:  # takes effect if the server has not started yet
            _context.set_forkserver_preload(PRELOAD)


class _PeerGoneIsQuiet:
    """``sys`` as :mod:`multiprocessing.resource_sharer` sees it, but for one thing.

    A tensor sent to a worker process travels as a file descriptor, which the receiver
    fetches from this process's resource sharer (a thread). A worker ended before it
    fetched one (a cancelled check, a Function switched, a worker killed for its memory)
    resets that connection, and the sharer's thread hands the error to ``sys.excepthook``:
    a traceback in the terminal for nothing wrong (the descriptor is closed as the process
    exits), and an error of the Qt event loop for pytest-qt. Those are dropped here; any
    other error goes to ``sys.excepthook`` as before."""

    def __getattr__(self, name):
        return getattr(sys, name)

    @staticmethod
    def excepthook(kind, value, traceback) -> None:
        if not issubclass(kind, (ConnectionResetError, BrokenPipeError, EOFError)):
            sys.excepthook(kind, value, traceback)


def _quiet_resource_sharer() -> None:
    """:class:`_PeerGoneIsQuiet` for the resource sharer (where it reads ``sys``)."""
    from multiprocessing import resource_sharer

    if getattr(resource_sharer, "sys", None) is sys:
        resource_sharer.sys = _PeerGoneIsQuiet()  # type: ignore[attr-defined,assignment]


def context():
    """Where children come from: the fork server's context (the server starts on first
    use), or ``spawn``'s where there is no fork server (:func:`fork_server`)."""
    global _context, _ending
    with _context_lock:
        if not _ending:  # registered after multiprocessing's own exit handler: runs before it
            atexit.register(end_children)
            _quiet_resource_sharer()
            _ending = True
        if not fork_server():
            return multiprocessing.get_context("spawn")
        if _context is None:
            made = multiprocessing.get_context("forkserver")
            made.set_forkserver_preload(PRELOAD)
            _context = made
        return _context


_ending = False


def end_children() -> None:
    """Kill every child of this process still running: at exit, before multiprocessing's own
    handler, which sends SIGTERM and waits for each, forever for one whose code ignores
    SIGTERM (the window closed, and the app hung)."""
    for child in multiprocessing.active_children():
        with contextlib.suppress(Exception):
            child.kill()
            end_group(child)


def end_group(process) -> None:
    """End what ``process`` (a worker, the leader of a group of its own: :func:`own_session`,
    :func:`own_group`)
    left running in its process group: a grandchild its Function forked (``subprocess``,
    ``os.fork``) would otherwise hold the caller's output open (``customgrad check f.py |
    tail`` waited for it). Nothing where the worker made no group (it died first)."""
    if process.pid is not None and hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)


def warm() -> None:
    """Start the fork server now (it imports torch once, in the background of the caller);
    nothing where children are spawned."""
    if not fork_server():
        return
    context()
    from multiprocessing import forkserver

    with child_start():
        forkserver.ensure_running()


def adopt_environment(environment: dict[str, str]) -> None:
    """In a child: take the parent's environment as it is now. The fork server's children
    inherit the server's, which is the parent's at the time the server started; a variable
    set since (by a notebook, say) would be missing."""
    if environment != os.environ:
        os.environ.clear()
        os.environ.update(environment)
        config.use(None)  # read again from the parent's, at next use


#: a child's exit status when its parent is gone
PARENT_GONE_STATUS = 3


def own_session() -> None:
    """In a child: a session (and process group) of its own, so that a signal the user's
    code sends to its group (``os.kill(0, SIGTERM)``) reaches this child only, never the
    window or the CLI. Where there is none (Windows), nothing."""
    if hasattr(os, "setsid"):
        with contextlib.suppress(OSError):  # already a group's leader
            os.setsid()


def own_group() -> None:
    """In a child: a process group of its own in its parent's session (a signal to its group
    reaches this child only, as with :func:`own_session`). Linux schedules each session as
    one group (autogroups): a child in a session of its own competes with its whole parent
    as an equal, whatever its nice value, and one in its parent's session yields to the
    parent as its nice says. Where there are no groups (Windows), nothing."""
    if hasattr(os, "setpgid"):
        with contextlib.suppress(OSError):  # already a group's leader
            os.setpgid(0, 0)


def die_with_fork_server() -> None:
    """In a fork server's child: ended (SIGKILL) when the server ends, even while it holds
    the GIL inside C (a catastrophic regex), where :func:`end_with_parent`'s thread never
    runs; Linux's ``prctl(PR_SET_PDEATHSIG)``. The child lets go of the server's "alive"
    pipe, which the server waits on to end: it ends then with the window or CLI that started
    it (not with its last child, which kept it alive), and its children with it. Elsewhere,
    and in a spawned child (whose parent is a thread of the window's, which may end first),
    nothing."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is None or not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError):
        os.close(alive)  # (a child starting children of its own starts a server of its own)
    server._forkserver_alive_fd = None  # type: ignore[attr-defined]  # private: no stub has it
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the server ended before that: nothing would signal this child
        os._exit(PARENT_GONE_STATUS)


#: Linux's prctl option: the signal this process gets when its parent ends
PR_SET_PDEATHSIG = 1


def end_with_parent(conn) -> None:
    """In a child: end it (at once, from a thread of its own) when the parent's end of
    ``conn`` closes, that is when the parent is gone, even killed by a signal it could not
    handle. A child stuck in user code (a wait inside C) would outlive it otherwise, holding
    the parent's output pipes open (a caller reading them to the end waits forever) and the
    fork server alive (it serves while any of its children lives). Where there is no
    ``poll`` (Windows) the child is left to its parent, as before."""
    import select

    if not hasattr(select, "poll"):
        return
    hangup = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)
    poller = select.poll()
    poller.register(conn.fileno(), hangup)  # not POLLIN: messages do not wake it

    def watch() -> None:
        while True:
            for _fd, events in poller.poll():
                if events & select.POLLNVAL:  # this child closed it: ending anyway
                    return
                if events & hangup:
                    os._exit(PARENT_GONE_STATUS)

    threading.Thread(target=watch, name="customgrad: ends with its parent",
                     daemon=True).start()


def child_path() -> list[str]:
    """The folders a child imports from: this process's ``sys.path``, made absolute, without
    ``''`` and the current folder (the folder the app or CLI was started from: a ``random.py``
    or ``string.py`` there would shadow the standard library in every worker), unless a
    package the fork server preloads comes from there (a checkout run from its root, even
    where only ``''`` names it, as ``python -c`` does)."""
    here = os.path.realpath(os.getcwd())
    homes = set()
    for name in {m.partition(".")[0] for m in PRELOAD}:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            homes.add(os.path.dirname(os.path.dirname(os.path.realpath(file))))
    out: list[str] = []
    for entry in sys.path:
        path = os.path.realpath(entry) if entry else here
        if (path != here or path in homes) and path not in out:
            out.append(path)
    return out


@contextlib.contextmanager
def child_start():
    """Around starting a child (or the fork server): the parent's main script is not run
    there (:func:`main_stays_home`), and a new interpreter (the fork server, a spawned child)
    starts with :func:`child_path` as its path, never the current folder: Python 3.11's fork
    server puts ``''`` first on its path and ignores the ``sys_path`` it is given."""
    with main_stays_home():  # its lock: one start, and one swap of the variables, at a time
        if not _new_interpreter():
            yield  # a fork of the running server: the variables stay as they are
            return
        saved = {name: os.environ.get(name) for name in ("PYTHONSAFEPATH", "PYTHONPATH")}
        os.environ["PYTHONSAFEPATH"] = "1"  # no '' (python -c) first on the path
        os.environ["PYTHONPATH"] = os.pathsep.join(child_path())
        try:
            with _ctrl_c_stays_home():
                yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@contextlib.contextmanager
def _ctrl_c_stays_home():
    """SIGINT blocked in this thread while a new interpreter starts: it is born with it
    blocked (a mask survives fork and exec), so Ctrl+C in the terminal, which every process
    of the terminal's group receives, is this process's alone. The fork server took it while
    it imported torch (before multiprocessing ignores it there): a KeyboardInterrupt
    traceback of twenty lines after "customgrad: interrupted". A Ctrl+C that comes meanwhile
    waits here until the start is done."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no terminal group to share
        yield
        return
    from multiprocessing import resource_tracker

    # first: its start unblocks SIGINT in this thread (multiprocessing's own guard for it)
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _clean_preparation(get_preparation_data):
    """multiprocessing's ``spawn.get_preparation_data``, with :func:`child_path` as the
    ``sys_path`` a new interpreter takes (spawn hands it this process's own path, ``''`` made
    the folder launched from, after the environment's clean path was used to start it)."""
    def prepared(name):
        data = get_preparation_data(name)
        if "sys_path" in data:
            data["sys_path"] = child_path()
        return data

    prepared.clean = True  # type: ignore[attr-defined]  # a mark on the function, read below
    return prepared


if not getattr(spawn.get_preparation_data, "clean", False):
    spawn.get_preparation_data = _clean_preparation(spawn.get_preparation_data)


def _new_interpreter() -> bool:
    """Whether starting a child now starts a new interpreter: a spawned child, or the fork
    server (not running yet, or ended)."""
    if not fork_server():
        return True
    pid = fork_server_pid()
    return pid is None or ended(pid)


def fork_server_pid() -> int | None:
    """The process id of the fork server this process started (None: none yet)."""
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None)


def fork_server_ended() -> bool:
    """Whether the fork server this process started has ended (a child then exits with
    multiprocessing's lost status, never learning its own)."""
    pid = fork_server_pid()
    return pid is not None and ended(pid)


def environment() -> dict[str, str]:
    """This process's environment, for a child to adopt: read under the lock that
    :func:`child_start` holds while it sets the variables a new interpreter starts with (and
    OpenMP's wait policy), so that a child started meanwhile never takes those for the
    parent's own."""
    with _main_lock:
        return dict(os.environ)


@contextlib.contextmanager
def main_stays_home():
    """multiprocessing runs the parent's main script again in each child it starts (to find
    functions defined there); ours needs nothing from it, and an application's main script
    imports its whole GUI. A main module named ``__main__`` is the one it skips. OpenMP
    waits passively in the child started meanwhile
    (:func:`customgrad.workers.threads.passive_waiting`)."""
    with _main_lock, threads.passive_waiting():  # one start at a time
        main = sys.modules.get("__main__")
        if main is None:
            yield
            return
        saved = getattr(main, "__spec__", None)
        main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)
        try:
            yield
        finally:
            main.__spec__ = saved


_main_lock = threading.RLock()


@dataclass
class ProblemRef:
    """A problem as a child process receives it: how to load the Function again (its spec,
    and a file's or the editor's text), and the very tensors the parent drew."""

    spec: str
    code: str | None
    specs: list
    settings: Settings
    args: list
    targets: list
    dtype: torch.dtype
    device: torch.device

    @classmethod
    def of(cls, problem) -> ProblemRef:
        return cls(problem.target.spec, problem.target.code, problem.specs, problem.settings,
                   problem.args, problem.targets, problem.dtype, problem.device)

    def load(self, loaded: LoadedTargets | None = None):
        """The :class:`~customgrad.problems.problem.Problem`, with the Function loaded here (through
        ``loaded``, a kept child's, where given)."""
        from customgrad.problems.problem import Problem

        return Problem(load_target(self.spec, self.code, loaded), self.specs, self.dtype,
                       self.device, self.args, self.targets, self.settings)

    def descent(self, target=None) -> Descent:
        """The descent of the Function ``target`` (loaded here by its spec if not given):
        making it calls ``forward`` once."""
        target = load_target(self.spec, self.code) if target is None else target
        from customgrad.training.descent import Descent

        s = self.settings
        return Descent(target.function, self.specs, self.args, self.targets, lr=s.lr,
                       loss=s.loss, optimizer=s.optimizer)


class LoadedTargets:
    """The Functions a child kept between jobs (:mod:`customgrad.workers.warm`) has loaded, by spec
    and text: there a Function is loaded once, not once per job (its module's top level runs
    once, as in a Python session). Its jobs find it as ``channel.targets``."""

    def __init__(self) -> None:
        self._found: dict = {}

    def load(self, spec: str, code: str | None):
        """The target, loaded the first time; the global random generators are then put
        where loading it left them the first time (a module that seeds or draws at its top
        level), as loading it again would."""
        from customgrad.targets.loader import resolve

        found = self._found.get((spec, code))
        if found is None:
            target = resolve(spec, code)
            self._found[(spec, code)] = (target, random_state())
            return target
        target, state = found
        set_random_state(state)
        return target


def load_target(spec: str, code: str | None, loaded: LoadedTargets | None = None):
    """:func:`customgrad.targets.loader.resolve`; through ``loaded`` (a kept child's
    ``channel.targets``) where given."""
    from customgrad.targets.loader import resolve

    return resolve(spec, code) if loaded is None else loaded.load(spec, code)


def random_state() -> tuple:
    """The global random generators' states: torch's (CPU), Python's, and numpy's where it
    has made it (numpy seeds it afresh where it is first used)."""
    import random

    import torch

    generator = sys.modules.get("numpy.random")
    return (torch.random.get_rng_state(), random.getstate(),
            generator.get_state() if generator is not None else None)


def set_random_state(state: tuple) -> None:
    import random

    import torch

    torch_state, python_state, numpy_state = state
    torch.random.set_rng_state(torch_state)
    random.setstate(python_state)
    if numpy_state is not None:
        sys.modules["numpy.random"].set_state(numpy_state)


def portable(target) -> bool:
    """True when a child process can load ``target``'s Function again by its spec: a gallery
    entry, a file (its text travels along) or ``module:Class``."""
    from customgrad.targets.loader import PROCESS_LOCAL

    if target.entry is not None or target.code is not None:
        return True
    head, sep, tail = str(target.spec).rpartition(":")
    return bool(sep and head and tail.isidentifier() and not head.endswith(".py")
                and head != PROCESS_LOCAL)


#: how Windows ends a process that crashed: an exit code (an NTSTATUS), not a signal; the
#: POSIX signal each stands for
WINDOWS_CRASHES = {
    0xC0000005: ("an access violation", "SIGSEGV"),
    0xC00000FD: ("a stack overflow", "SIGSEGV"),
    0xC0000409: ("a fail-fast abort", "SIGABRT"),  # abort() in the MSVC runtime, __fastfail
    0xC000001D: ("an illegal instruction", "SIGILL"),
    0xC0000094: ("an integer division by zero", "SIGFPE"),
}


def crash_name(exitcode: int | None) -> str | None:
    """How a child that ended with ``exitcode`` crashed: a signal's name (negative codes,
    POSIX), or Windows' words for it and the signal it stands for; None for an exit."""
    if exitcode is None:
        return None
    code = exitcode & 0xFFFFFFFF  # (read as signed, too)
    if code in WINDOWS_CRASHES:
        words, stands_for = WINDOWS_CRASHES[code]
        return f"{words} (0x{code:08X}, what Linux and macOS call {stands_for})"
    if exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return None


class SetupFailed(CustomGradError):
    """The child process could not load the Function or the problem (before any step): the
    caller may run the loop on a thread instead. ``cause`` is what the child raised."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.cause = cause


class StartFailed(CustomGradError):
    """No worker process could start (its fork server could not, say: a ``string.py`` in the
    folder launched from): nothing to do with the Function, and never a reason to run its
    code in the caller's process instead (:class:`SetupFailed` is)."""


#: what a child's start raises where the job or its arguments cannot travel (pickle): the
#: Function cannot be loaded there, which callers may take as :class:`SetupFailed`
NOT_PORTABLE = (pickle.PicklingError, TypeError, AttributeError)


def start_failure(exc: BaseException) -> CustomGradError:
    """What starting a child that raised ``exc`` means: :class:`SetupFailed` where the job
    cannot travel, else :class:`StartFailed`."""
    if isinstance(exc, NOT_PORTABLE):
        return SetupFailed(f"the worker process could not be started: "
                           f"{type(exc).__name__}: {exc}")
    return StartFailed(f"No worker process could start ({type(exc).__name__}: {exc}), so the "
                       "Function's code was not run: it never runs in this process instead. "
                       "A module in the folder launched from that has a standard library "
                       "module's name (string.py, say) is a common cause.")
