"""User code in a process of its own: what crashes there ends that process, not the caller's.

The Functions people bring are often C++/CUDA extensions or numpy/ctypes code. Such code can
segfault, call ``abort()``, end the process with ``os._exit``, trip a CUDA device-side assert
(after which the process's CUDA context is unusable), exhaust memory or block inside C where
no Python exception reaches it. :func:`call` runs a job there instead:

- the child comes from the fork server of :mod:`customgrad.workers.processes` (torch already
  imported,
  so it starts in milliseconds; ``spawn`` where there is no fork server: slower, same result);
- :mod:`faulthandler` writes the Python stack to a file when the child crashes, so the error
  names the signal *and* the user's ``file:line``;
- the parent watches the child's resident memory and ends it past a limit (half the
  machine's memory by default), before the operating system ends something else;
- ``should_stop`` ends the child at once (a job stuck inside C included);
- what the child prints is relayed to the caller's ``sys.stdout`` / ``sys.stderr``, and
  :class:`Channel` carries the job's own messages (progress) while it runs;
- tensors in the result travel through shared memory (torch's reductions for
  :mod:`multiprocessing`), so a big Jacobian is not copied through the pipe.

Every job gets a fresh child here; :mod:`customgrad.workers.warm` keeps one for the jobs of one
Function while nothing goes wrong there: a crashed, stopped or poisoned one is never reused.

Only the standard library and torch, which the child imports (the fork server has it) and
the caller only where it holds tensors: ``customgrad check`` imports torch once, there. No Qt.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from customgrad import config
from customgrad.errors import Cancelled, CustomGradError, FunctionError, serialise_ast_parse
from customgrad.workers import plain_data, processes, threads
from customgrad.workers.frames import FRAME as _FRAME
from customgrad.workers.frames import library_file as _library_file
from customgrad.workers.frames import user_frame
from customgrad.workers.memory import machine_memory, psutil_or_none, resident_bytes, stopped

#: the signal a child dumps its stack on before the parent stops it (no default on Windows)
STACK_SIGNAL = getattr(signal, "SIGUSR1", None)
#: a job stopped after running this long says where it was (its stack is asked for first)
STACK_AFTER_SECONDS = 0.5
#: how long the parent waits for that stack before it stops the child anyway
STACK_WAIT_SECONDS = 0.5
#: a job that has sent nothing for this long is asked where it is (``on_quiet``), and again
#: after each as long: an endless loop is named at its line while it runs, not only once
#: stopped
QUIET_SECONDS = 5.0

#: the share of the machine's memory a child may use by default before it is stopped
MEMORY_FRACTION = 0.5
#: how often the parent looks at the child (memory, stop requests)
POLL_SECONDS = 0.02


class ProcessCrashed(FunctionError):
    """The child process died without reporting: a signal (``signal_name``) or an exit code
    (``exit_code``). ``stack`` is faulthandler's text; ``file``/``line`` the innermost frame
    of the user's code in it, where there is one."""

    def __init__(self, message: str, *, signal_name: str | None = None,
                 exit_code: int | None = None, stack: str = "", file: str | None = None,
                 line: int | None = None):
        super().__init__(message, details=stack, file=file, line=line)
        self.signal_name = signal_name
        self.exit_code = exit_code
        self.stack = stack


class MemoryLimitExceeded(FunctionError):
    """The child used more memory than it was allowed, and was stopped."""

    def __init__(self, message: str, limit: int):
        super().__init__(message)
        self.limit = limit


#: the environment variable that sets the default limit, in GiB (0: no limit)
MEMORY_LIMIT_VARIABLE = config.MEMORY_LIMIT_GIB


def default_memory_limit() -> int:
    """``CUSTOMGRAD_MEMORY_LIMIT_GIB`` GiB when set (0: no limit), else half the machine's
    memory (0, no limit, where the system does not say how much)."""
    value = config.current().memory_limit()
    if value is not None:
        return int(value * 2**30)
    return int(machine_memory() * MEMORY_FRACTION)


def gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f} GiB"


class Channel:
    """The child's side of the pipe: :meth:`send` a message to the caller's ``on_message``,
    :meth:`context` names what runs now (a crash message says it). ``targets``: the
    Functions a kept child has loaded (:class:`customgrad.workers.processes.LoadedTargets`; None in
    a child for one job)."""

    def __init__(self, conn, lock: threading.Lock,
                 targets: processes.LoadedTargets | None = None):
        self._conn = conn
        self._lock = lock
        self.targets = targets

    def put(self, message) -> None:
        with self._lock:
            self._conn.send(message)

    def send(self, payload) -> None:
        self.put(("msg", payload))

    def context(self, text: str) -> None:
        self.put(("context", text))


class _Relay:
    """A text stream whose writes go to the parent (``kind`` "out" or "err")."""

    def __init__(self, channel: Channel, kind: str, original):
        self._channel, self._kind, self._original = channel, kind, original
        self.encoding = getattr(original, "encoding", "utf-8") or "utf-8"

    def write(self, text: str) -> int:
        if text:
            self._channel.put((self._kind, text))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._original.fileno()


def _lower_priority(nice: int) -> None:
    """This process's priority, ``nice`` below its parent's: POSIX ``nice``; on Windows,
    which has none, the class below normal (through psutil, a dependency there). 0: as the
    parent's."""
    if not nice:
        return
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(nice)
        return
    psutil = psutil_or_none()
    if psutil is not None:
        with contextlib.suppress(AttributeError, OSError, psutil.Error):
            psutil.Process().nice(psutil.BELOW_NORMAL_PRIORITY_CLASS)


def prepare_child(conn, fault_path: str, environment: dict | None, nice: int = 0):
    """What every worker process does first, a job's or the descent loop's: Ctrl+C left to
    the parent, ended with it (and with the fork server), a process group of its own, the
    parent's environment, faulthandler writing a crash's (or a SIGTERM's) stack to
    ``fault_path``; faulthandler's file, open for the process's life.

    ``nice`` (0 to 19): how far below its parent the child runs. A window's workers pass
    :attr:`customgrad.config.Config.child_nice`, so that the window's thread gets a core
    first when it wakes to paint; such a child stays in the window's session, where Linux
    weighs it against the window by its nice (:func:`processes.own_group`). 0 (a script's,
    the CLI's: their own process only waits): a session of its own, at the parent's
    priority."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the parent's to handle
    processes.end_with_parent(conn)
    processes.die_with_fork_server()
    if nice:
        processes.own_group()
    else:
        processes.own_session()
    if environment is not None:
        processes.adopt_environment(environment)
    serialise_ast_parse()  # the relay's threads format tracebacks while the job parses
    _lower_priority(nice)
    fault_file = open(fault_path, "w", encoding="utf-8")  # open for the child's life
    faulthandler.enable(file=fault_file, all_threads=True)  # a crash names the user's line
    if hasattr(faulthandler, "register"):  # a SIGTERM (the user's code's own) names its line
        faulthandler.register(signal.SIGTERM, file=fault_file, all_threads=True, chain=True)
        # the parent's stop asks for the stack first (:func:`stack_before_stop`): a stopped
        # endless loop is named where it loops, inside C too (the dump runs in the handler)
        if STACK_SIGNAL is not None:
            faulthandler.register(STACK_SIGNAL, file=fault_file, all_threads=True)
    return fault_file


def child_setup(conn, fault_path: str, environment: dict | None,
                targets: processes.LoadedTargets | None = None, nice: int = 0):
    """What a job's child does first (:func:`prepare_child`, memory files, its prints
    relayed, "started" to the parent); the channel (with ``targets``) and faulthandler's
    file."""
    fault_file = prepare_child(conn, fault_path, environment, nice)
    from customgrad.workers import sharing  # torch's reductions: the result's tensors are shared

    sharing.use_memory_files()  # the result's tensors need no room in /dev/shm
    channel = Channel(conn, threading.Lock(), targets)
    channel.put(("started", os.getpid()))
    sys.stdout = _Relay(channel, "out", sys.__stdout__)
    sys.stderr = _Relay(channel, "err", sys.__stderr__)
    return channel, fault_file


def run_job(conn, channel: Channel, job: Callable, args: tuple,
             before_reply: Callable[[], None] | None = None) -> None:
    """One job: its result or its error to the parent, then wait until the parent has it
    (shared tensors are handed over meanwhile)."""
    threads.use_free_cores()  # the cores other processes hold are theirs: this job's share
    try:
        reply = ("result", job(*args, channel))
    except BaseException as exc:  # the caller raises it
        reply = ("error", plain_data.portable_error(exc))
    if before_reply is not None:
        before_reply()
    channel.put(reply)
    conn.recv()


def _child_main(conn, fault_path: str, job: Callable, args: tuple,
                environment: dict | None = None, nice: int = 0) -> None:
    """A child for one job (see :func:`call`)."""
    try:
        channel, _fault_file = child_setup(conn, fault_path, environment, nice=nice)
        run_job(conn, channel, job, args)
    except (EOFError, OSError, BrokenPipeError):
        pass  # the parent is gone: nobody to tell
    finally:
        child_end(conn)


def child_end(conn) -> None:
    faulthandler.disable()
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # no longer through the pipe
    conn.close()


#: the Function's methods a crash message names (``Flaky.backward crashed ...``)
METHODS = ("forward", "backward", "setup_context", "jvp", "vmap")


def _method_in(stack: str) -> str | None:
    """The innermost of the Function's methods on the user's side of ``stack``."""
    for m in map(_FRAME.match, stack.splitlines()):
        if m and not _library_file(m["file"]) and m["func"] in METHODS:
            return m["func"]
    return None


#: the child's own frames below a job, which a crash's stack leaves out
_CHILD_FRAMES = ("run_job", "_child_main", "_kept_main")
#: the folder of this module and of the kept child's (their frames are the child's own)
_HERE = Path(__file__).parent.name


def first_thread(stack: str) -> str:
    """The crashing thread's part of faulthandler's text, without the
    frames of the process's own start-up (below the job) and the list of extensions."""
    blocks = re.split(r"\n\s*\n(?=(?:Current t|T)hread 0x)|\n(?=(?:Current t|T)hread 0x)",
                      stack.strip())
    # the crashing thread is "Current thread" (faulthandler lists the newest thread first),
    # after the "Fatal Python error" line
    block = next((b for b in blocks if b.lstrip().startswith("Current thread")), blocks[0])
    if block is not blocks[0] and blocks[0].startswith("Fatal Python error"):
        block = f"{blocks[0]}\n\n{block}"
    kept = []
    for text in block.splitlines():
        if text.startswith("Extension modules:"):
            break
        frame = _FRAME.match(text)
        if frame and Path(frame["file"]).parent.name == _HERE \
                and frame["func"] in _CHILD_FRAMES:
            break
        kept.append(text)
    return "\n".join(kept).rstrip()


def describe_death(exitcode: int | None, stack: str, context: str | None) -> ProcessCrashed:
    """The error for a child that ended without reporting."""
    who = context or "The Function's code"
    name = processes.crash_name(exitcode)
    if name is None and "Fatal Python error: Aborted" in stack:
        name = "SIGABRT"  # abort() on Windows: exit code 3, and faulthandler's word for it
    stack = first_thread(stack) if stack.strip() else ""
    frame = user_frame(stack) if stack else None
    where, file, line = "", None, None
    if frame is not None:
        file, line, func = frame
        where = f" at {Path(file).name}:{line} (in {func})"
        method = _method_in(stack)
        if context and "." not in context and method is not None:
            who = f"{context}.{method}"
    if name is not None:
        if name == "SIGKILL":
            text = (f"{who} was killed (SIGKILL){where}, from outside: by the system when "
                    "memory ran out, or by a person or a tool (kill -9).")
        else:
            text = f"{who} crashed the process with {name}{where}."
        return ProcessCrashed(text + " Only its own process ended; nothing else was lost.",
                              signal_name=name, stack=stack, file=file, line=line)
    return ProcessCrashed(f"{who} ended the process with exit code {exitcode}{where} "
                          "(os._exit, sys.exit in a thread, or a library that exits). Only its "
                          "own process ended; nothing else was lost.",
                          exit_code=exitcode, stack=stack, file=file, line=line)


def call(job: Callable, *args, on_message: Callable | None = None,
         should_stop: Callable[[], bool] | None = None, memory_limit: int | None = None,
         what: str = "", name: str = "customgrad job",
         on_started: Callable[[], None] | None = None, nice: int = 0,
         on_quiet: Callable[[tuple[str, int, str], float], None] | None = None):
    """``job(*args, channel)`` in a fresh child process; its return value.

    ``job`` and ``args`` must pickle (a module-level function; tensors and plain data).
    ``on_message`` receives what the job sends with ``channel.send`` (on this thread).
    Raises what the job raised; :class:`ProcessCrashed` when the child died without a word;
    :class:`MemoryLimitExceeded` past ``memory_limit`` bytes (None: the default, 0: none),
    ``what`` saying what was being computed (the shapes, say); :class:`Cancelled` once
    ``should_stop()`` is true. ``on_started()`` is called once the child runs (a timeout
    for the job starts then: a spawned child takes seconds to import torch first).
    ``on_quiet((file, line, function), seconds)``: after :data:`QUIET_SECONDS` without a
    message, and each as long again, where in the user's code the job is (it runs on).
    ``nice``: how far below this process the child runs (:func:`prepare_child`: a window's
    workers, not a script's). (:class:`customgrad.workers.warm.WarmWorker`: a child kept
    between jobs.)
    """

    limit = default_memory_limit() if memory_limit is None else memory_limit
    process, parent, child, fault_path = new_child(_child_main, name, job, args, nice=nice)
    try:
        start_child(process)
        child.close()
        return serve(process, parent, fault_path, on_message, should_stop, limit, what,
                     Watch(on_started=on_started), on_quiet)
    finally:
        if process.pid is not None:
            if process.is_alive():
                process.kill()
            process.join(5)
            processes.end_group(process)
        child.close()
        parent.close()
        read_fault(fault_path, remove=True)


def new_child(target: Callable, name: str, *args, nice: int = 0):
    """A child process not started yet, running ``target(conn, fault_path, *args,
    environment, nice)``: (process, this end of its pipe, its end, faulthandler's file)."""
    if "torch" in sys.modules:  # a caller holding tensors: they are shared, not copied
        import torch.multiprocessing  # noqa: F401 (registers torch's reductions)
    context = processes.context()
    fd, fault_path = tempfile.mkstemp(prefix="customgrad-fault-", suffix=".txt")
    os.close(fd)
    parent, child = context.Pipe(duplex=True)
    process = context.Process(target=target, daemon=True, name=name,
                              args=(child, fault_path, *args, processes.environment(), nice))
    return process, parent, child, fault_path


def start_child(process) -> None:
    try:
        with processes.child_start():
            process.start()
    except Exception as exc:  # the job cannot travel (pickle), or no process could start
        raise processes.start_failure(exc) from None


#: the exit code multiprocessing gives a child whose fork server went away (it never learns
#: the child's own)
LOST_STATUS = 255


class Stale(Exception):
    """A kept child (:mod:`customgrad.workers.warm`) refused the job (a file it imported
    changed)."""


class Watch:
    """What :func:`serve` learns of a child: whether it has started, has taken its job (a
    kept child takes the job's tensors from this process), and can be kept for another."""

    #: how long a stop waits for a child to finish taking its job's tensors
    TAKING_SECONDS = 0.5

    def __init__(self, started: bool = False, taken: bool = True,
                 on_started: Callable[[], None] | None = None):
        self.started, self.taken, self.on_started = started, taken, on_started
        self.reusable = False
        self.since = time.monotonic()  # when the job was handed over (serve sets it)
        #: where this job's part of the child's fault file starts (a kept child's file holds
        #: earlier jobs' text), and where the stacks asked for while it ran end
        self.fault_from = self.asked_to = 0
        self.stop_by: float | None = None
        self._next_look = 0.0
        self._stopped_since: float | None = None

    #: how long a child may stay stopped (SIGSTOP) before it is ended, and how often to look
    STOPPED_SECONDS = 1.0
    LOOK_SECONDS = 0.25

    def stopped_too_long(self, pid: int) -> bool:
        """Whether the child has been stopped by a signal for STOPPED_SECONDS (looked at every
        LOOK_SECONDS)."""
        now = time.monotonic()
        if now < self._next_look:
            return False
        self._next_look = now + self.LOOK_SECONDS
        if not stopped(pid):
            self._stopped_since = None
            return False
        if self._stopped_since is None:
            self._stopped_since = now
        return now - self._stopped_since >= self.STOPPED_SECONDS

    def may_stop(self) -> bool:
        """Whether the child can be ended now: not while it is connected to this process to
        take a tensor (this process's side of the hand-over would fail loudly), which takes
        milliseconds."""
        if self.stop_by is None:
            self.stop_by = time.monotonic() + self.TAKING_SECONDS
        return self.taken or time.monotonic() > self.stop_by


def stack_before_stop(process, fault_path: str) -> str:
    """The stack of a child about to be stopped, as faulthandler writes it on
    :data:`STACK_SIGNAL` (:func:`prepare_child`): '' where it cannot be had (Windows, a child
    that has ended, or none written within :data:`STACK_WAIT_SECONDS`)."""
    if STACK_SIGNAL is None or process.pid is None:
        return ""
    start = fault_size(fault_path)
    try:
        os.kill(process.pid, STACK_SIGNAL)
    except OSError:
        return ""
    size, deadline = start, time.monotonic() + STACK_WAIT_SECONDS
    while time.monotonic() < deadline:  # written by the handler at once, in one go or a few
        time.sleep(0.01)
        now = fault_size(fault_path)
        if now > start and now == size:
            break
        size = now
    with contextlib.suppress(OSError), open(fault_path, encoding="utf-8",
                                            errors="replace") as file:
        file.seek(start)
        return file.read()
    return ""


def _where_now(process, fault_path: str, watch: Watch, on_quiet) -> None:
    """Ask the running child where it is (its stack, dumped on :data:`STACK_SIGNAL`; it
    runs on) and tell ``on_quiet((file, line, function), seconds)`` the user's frame there
    and how long the job has run; nothing where no frame of the user's is on the stack."""
    stack = stack_before_stop(process, fault_path)
    watch.asked_to = fault_size(fault_path)
    frame = user_frame(first_thread(stack)) if stack.strip() else None
    if frame is not None:
        on_quiet(frame, time.monotonic() - watch.since)


def fault_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def stop(process, fault_path: str, watch: Watch) -> Cancelled:
    """Stop the child (``should_stop`` said so): the :class:`Cancelled` to raise, naming the
    user's frame it was in where the job had run for :data:`STACK_AFTER_SECONDS`."""
    stack = ""
    if watch.started and time.monotonic() - watch.since >= STACK_AFTER_SECONDS:
        stack = stack_before_stop(process, fault_path)
    process.kill()
    frame = user_frame(stack) if stack else None
    if frame is None:
        return Cancelled("Stopped.")
    file, line, function = frame
    return Cancelled("Stopped.", file=file, line=line, function=function,
                     stack=stack.split("Extension modules:")[0].rstrip())


def _over_memory(process, fault_path: str, context_text: str | None, limit: int,
                 what: str) -> MemoryLimitExceeded:
    """Stop a child past its memory limit: the error, naming the user's line it was at (its
    stack, asked for first: faulthandler writes it at once, from the signal handler) and
    advice that does not blame the shapes only (a 3x8 input is not what took 2 GiB)."""
    stack = stack_before_stop(process, fault_path)
    process.kill()
    frame = user_frame(first_thread(stack)) if stack.strip() else None
    where, look = "", ""
    if frame is not None:
        file, line, function = frame
        where = f" at {os.path.basename(file)}:{line} (in {function})"
        look = "Look there for what allocates (a loop, a large tensor); with large inputs, "
    advice = (f"{look}use smaller shapes, or raise the memory limit." if look
              else "Use smaller shapes, or raise the memory limit.")
    error = MemoryLimitExceeded(
        f"{context_text or 'The Function'} used more than {gib(limit)} of memory "
        f"{'for ' + what if what else ''} and was stopped before the system ran out{where}. "
        f"{advice}".replace("  ", " "), limit)
    if frame is not None:
        error.file, error.line = frame[0], frame[1]
    return error


def serve(process, conn, fault_path: str, on_message, should_stop, limit: int, what: str,
           watch: Watch, on_quiet: Callable[[tuple[str, int, str], float], None] | None = None):
    context_text: str | None = None
    watch.since = heard = time.monotonic()
    watch.fault_from = watch.asked_to = fault_size(fault_path)
    while True:
        if should_stop is not None and should_stop() and watch.may_stop():
            raise stop(process, fault_path, watch)
        if limit:
            used = resident_bytes(process.pid)
            if used is not None and used > limit:
                raise _over_memory(process, fault_path, context_text, limit, what)
        if watch.stopped_too_long(process.pid):
            process.kill()
            raise FunctionError(f"The process running {context_text or 'the Function'} was "
                                "stopped (SIGSTOP: by its own code, or from outside) and would "
                                "have waited forever; it was ended. Only its own process "
                                "ended; nothing else was lost.")
        try:
            ready = conn.poll(POLL_SECONDS)
            message = plain_data.plain_loads(conn.recv_bytes()) if ready else None
        except (EOFError, OSError):
            raise _died(process, watch, fault_path, context_text) from None
        if message is None:
            if not process.is_alive() and not conn.poll(0):
                raise _died(process, watch, fault_path, context_text)
            if on_quiet is not None and watch.started \
                    and time.monotonic() - heard >= QUIET_SECONDS:
                _where_now(process, fault_path, watch, on_quiet)
                heard = time.monotonic()  # asked again after as long
            continue
        heard = time.monotonic()
        kind, payload = message
        if kind == "msg":
            if on_message is not None:
                on_message(payload)
        elif kind == "out":
            sys.stdout.write(payload)
            sys.stdout.flush()
        elif kind == "err":
            sys.stderr.write(payload)
            sys.stderr.flush()
        elif kind == "started":
            watch.started = True
            processes.child_started()
            if watch.on_started is not None:
                watch.on_started()
        elif kind == "context":
            context_text = payload
        elif kind == "taken":
            watch.taken = True
        elif kind == "reusable":
            watch.reusable = payload
        elif kind == "stale":
            raise Stale()
        elif kind == "result":
            _acknowledge(conn)
            return payload
        elif kind == "error":
            _acknowledge(conn)
            raise payload


def _died(process, watch: Watch, fault_path: str, context_text: str | None) -> CustomGradError:
    started = watch.started
    process.join(5)
    if process.exitcode == LOST_STATUS and processes.fork_server_ended():
        return CustomGradError(
            "The worker process was lost: the fork server it came from ended (killed from "
            "outside?), so how the worker ended is not known; this is not the Function's "
            "fault. Run it again: a new fork server starts.")
    if not started:  # e.g. an argument that cannot be unpickled there: callers fall back
        return processes.SetupFailed(f"The worker process could not start (exit code "
                                     f"{process.exitcode}); its error is above.")
    return describe_death(process.exitcode, crash_text(fault_path, watch), context_text)


def crash_text(fault_path: str, watch: Watch) -> str:
    """The job's crash in the child's fault file: from its "Fatal Python error" on (the
    stacks asked for while it ran come before it: one still being written when the child
    crashed, too); else (no fatal error: SIGKILL, an exit) what follows those stacks."""
    text = read_fault(fault_path, start=watch.fault_from)
    at = text.rfind("Fatal Python error")
    if at >= 0:
        return text[at:]
    return read_fault(fault_path, start=watch.asked_to)


def _acknowledge(conn) -> None:
    try:
        conn.send(True)
    except OSError:
        pass


def read_fault(path: str, remove: bool = False, start: int = 0) -> str:
    """The fault file's text from byte ``start`` on ('' where there is none)."""
    try:
        text = Path(path).read_bytes()[start:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    if remove:
        try:
            os.unlink(path)
        except OSError:
            pass
    return text
