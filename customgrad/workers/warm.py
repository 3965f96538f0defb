"""A worker process kept between the jobs of one Function (:meth:`WarmWorker.call`), where
:func:`customgrad.workers.isolation.call` starts a fresh one for each job.

A fresh child per job costs a fork and a new load of the Function, and its first comparison
runs slower than later ones (copy-on-write faults on the fork server's memory, cold caches).
A child kept for the jobs of one ``warm_key`` (say, a Function's spec and text: its build and
its checks) loads the Function once and finds its memory warm. Each job there starts as it
would in a fresh child as far as this module can tell: torch's, Python's and numpy's global
random generators are put back where they were when the child started (and, once the
Function is loaded, where its loading left them: :func:`customgrad.workers.processes.load_target`).
What the user's module keeps at module level stays between jobs, as in a Python session.

The child is ended, and the next job gets a fresh one:

- after anything but a result: an error, a crash, a stop, the memory limit;
- after a job that used CUDA (a device-side error may leave a context unusable without
  raising), or that imported a module whose file was written while it ran;
- when a module file it imported has changed on disk (it refuses the next job: "stale");
- when a job with another ``warm_key`` comes, or the environment has changed;
- after ``keep_seconds`` idle (``CUSTOMGRAD_KEEP_SECONDS``, :mod:`customgrad.config`), and at
  :meth:`WarmWorker.end` (a window closing).

A :class:`WarmWorker` keeps one child at a time; a job that finds it busy gets a child of its
own. Its owner (the app, a test) makes it and ends it: this module keeps no state.

Only the standard library here, and torch in the child: a caller that holds no tensors yet
(the app's first second, :mod:`playground.workers.head_start`) starts a job without importing
torch. No Qt.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time
from multiprocessing.reduction import ForkingPickler

from customgrad import config
from customgrad.workers import isolation, processes


def _kept_main(conn, fault_path: str, environment: dict, nice: int = 0) -> None:
    """The child: jobs as they come (see the module), until the parent ends it."""
    from customgrad.workers import sharing  # torch: the child's, never the caller's at import

    try:
        # a Function is loaded once here, not once per job: the jobs find them on the channel
        channel, fault_file = isolation.child_setup(conn, fault_path, environment,
                                                    processes.LoadedTargets(), nice)
        fresh = _FreshState()
        while True:
            data = conn.recv_bytes()
            try:
                job, args = pickle.loads(data)
            except Exception as exc:  # e.g. a job's function this process cannot import
                channel.put(("error", processes.SetupFailed(
                    f"the worker process could not take the job: {type(exc).__name__}: "
                    f"{exc}")))
                break
            channel.put(("taken", None))  # the job's tensors are here: it may be stopped
            if fresh.stale():
                channel.put(("stale", None))
                break
            fault_file.seek(0)  # a crash's stack is this job's
            fault_file.truncate()
            fresh.restore()
            started = time.time_ns()

            def settle(started=started) -> None:  # whether this child can be kept
                fresh.note_imports(started)
                channel.put(("reusable", fresh.reusable()))

            isolation.run_job(conn, channel, job, args, settle)
            sharing.release_sent()  # the parent has what was sent: it acknowledged
    except (EOFError, OSError, BrokenPipeError):
        pass  # the parent is gone, or ended this child
    finally:
        isolation.child_end(conn)


class _FreshState:
    """What makes a kept child's next job start as a fresh child's: the global random
    generators as they were when the child started, and the files of the modules imported
    since, watched for changes."""

    #: files' times come from a clock that runs up to a few milliseconds behind
    MARGIN_NS = 100_000_000

    def __init__(self):
        self._random = processes.random_state()
        self._known = set(sys.modules)
        self._files: dict[str, tuple[int, ...]] = {}
        self._changed = False

    def restore(self) -> None:
        processes.set_random_state(self._random)

    def note_imports(self, since_ns: int) -> None:
        """Remember the files of modules imported since the last look; a file written about
        when the job started (``since_ns``) or later may not be what ran: the child is not
        kept."""
        for name in set(sys.modules) - self._known:
            self._known.add(name)
            file = getattr(sys.modules.get(name), "__file__", None)
            stat = _stat(file)
            if stat is not None and isinstance(file, str):  # (_stat's None for a non-str)
                self._files[file] = stat
                self._changed |= stat[0] >= since_ns - self.MARGIN_NS  # written then

    def stale(self) -> bool:
        return self._changed or any(_stat(f) != s for f, s in self._files.items())

    def reusable(self) -> bool:
        cuda = sys.modules.get("torch.cuda")
        return not self._changed and not (cuda is not None and cuda.is_initialized())


def _stat(file) -> tuple[int, ...] | None:
    """What says a file has changed: its times (written, and its entry changed), size and
    inode (an editor that saves by renaming makes a new one)."""
    if not isinstance(file, str):
        return None
    try:
        found = os.stat(file)
    except OSError:
        return (-1, -1, -1, -1) if os.path.isabs(file) else None  # gone since: changed
    return found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino


class _Kept:
    """The parent's side of a kept child."""

    def __init__(self, key, process, conn, fault_path: str, lock: threading.RLock):
        self.key, self.process, self.conn, self.fault_path = key, process, conn, fault_path
        self.started = False  # it said so (a child that dies before it did: SetupFailed)
        self.busy = True
        self.timer: threading.Timer | None = None
        self._ended = False
        self._lock = lock

    def end(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            if self.timer is not None:
                self.timer.cancel()
        if self.process.pid is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(5)
            processes.end_group(self.process)
        self.conn.close()
        isolation.read_fault(self.fault_path, remove=True)


class WarmWorker:
    """One worker process kept warm for the jobs of one ``warm_key`` at a time (see the module).
    ``keep_seconds``: how long it waits idle for its next job (0: a fresh child for every
    job; default: the configuration's, ``CUSTOMGRAD_KEEP_SECONDS``, 300). ``nice``: how far
    below this process its children run (:func:`customgrad.workers.isolation.prepare_child`:
    a window's workers, not a script's)."""

    def __init__(self, keep_seconds: float | None = None, nice: int = 0):
        self.keep_seconds = config.current().keep_seconds if keep_seconds is None \
            else keep_seconds
        self.nice = nice
        self._current: _Kept | None = None
        self._lock = threading.RLock()
        #: how many times :meth:`end` has run: a child started before the last one is not kept
        self._generation = 0

    @property
    def process(self):
        """The child kept for the next job (its ``pid``, ``is_alive()``), or None."""
        current = self._current
        return None if current is None else current.process

    @property
    def busy(self) -> bool:
        """Whether the kept child is running a job now (the next job gets a child of its
        own)."""
        current = self._current
        return current is not None and current.busy

    def call(self, job, *args, warm_key, on_message=None, should_stop=None,
             memory_limit: int | None = None, what: str = "", name: str = "customgrad job",
             on_quiet=None):
        """:func:`customgrad.workers.isolation.call` in the child kept for ``warm_key``
        (hashable: what the job works on, say a Function's spec and text) in this environment,
        if it is idle; else, or with keeping off, in a fresh child."""
        limit = isolation.default_memory_limit() if memory_limit is None else memory_limit
        key = (warm_key, tuple(sorted(processes.environment().items())))
        for _attempt in range(3 if self.keep_seconds > 0 else 0):  # a stale one replaced
            kept = self._take(key, name)
            if kept is None:
                break  # busy with another job: this one gets a child of its own
            try:
                return self._call(kept, job, args, on_message, should_stop, limit, what,
                                  on_quiet)
            except isolation.Stale:
                continue
            except processes.SetupFailed:
                # the kept child could not take it: a fresh child says whether one can (the
                # caller runs the job on its own thread only where a fresh child cannot)
                break
        return isolation.call(job, *args, on_message=on_message, should_stop=should_stop,
                              memory_limit=limit, what=what, name=name, nice=self.nice,
                              on_quiet=on_quiet)

    def _take(self, key, name: str) -> _Kept | None:
        """The kept child for ``key``, now busy: the idle one, or a new one in place of any
        other; None while the kept child is busy."""
        with self._lock:
            old = self._current
            if old is not None and old.busy:
                return None
            if old is not None and old.key == key and old.process.is_alive():
                if old.timer is not None:
                    old.timer.cancel()
                old.busy = True
                return old
            self._current = None
            generation = self._generation
        if old is not None:
            old.end()
        process, parent, child, fault_path = isolation.new_child(_kept_main, name,
                                                                 nice=self.nice)
        kept = _Kept(key, process, parent, fault_path, self._lock)
        try:
            isolation.start_child(process)
        except BaseException:
            kept.end()
            raise
        finally:
            child.close()
        with self._lock:
            if self._current is None and generation == self._generation:
                self._current = kept  # else it runs this job, and ends after it (_release)
        return kept

    def _call(self, kept: _Kept, job, args, on_message, should_stop, limit: int, what: str,
              on_quiet=None):
        watch = isolation.Watch(kept.started, taken=False)
        try:
            try:
                data = ForkingPickler.dumps((job, args))
            except Exception as exc:  # the job or its arguments cannot travel (pickle)
                raise processes.SetupFailed(f"the worker process could not be started: "
                                            f"{type(exc).__name__}: {exc}") from None
            try:
                kept.conn.send_bytes(data)
            except OSError:  # the child ended while it waited (killed from outside, say)
                raise isolation.Stale() from None
            result = isolation.serve(kept.process, kept.conn, kept.fault_path, on_message,
                                     should_stop, limit, what, watch, on_quiet)
        except BaseException:
            self._release(kept, False)
            raise
        kept.started = True
        self._release(kept, watch.reusable)
        return result

    def _release(self, kept: _Kept, reusable: bool) -> None:
        """After a job: ``kept`` waits for the next, or ends."""
        with self._lock:
            kept.busy = False
            reusable = reusable and self._current is kept
            if reusable:
                kept.timer = threading.Timer(self.keep_seconds, self._expire, (kept,))
                kept.timer.daemon = True
                kept.timer.start()
            elif self._current is kept:
                self._current = None
        if not reusable:
            kept.end()

    def _expire(self, kept: _Kept) -> None:
        with self._lock:
            if self._current is not kept or kept.busy:
                return
            self._current = None
        kept.end()

    def end(self) -> None:
        """End the kept child now (after its job, if it has one), and any child being
        started for one: a window closing, say."""
        with self._lock:
            kept, self._current = self._current, None
            self._generation += 1
            idle = kept is not None and not kept.busy
        if idle and kept is not None:
            kept.end()
