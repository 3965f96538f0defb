"""How many threads a worker's torch uses: as many as there are cores free right now.

torch's big tensor operations split across OpenMP threads that meet at a barrier after each
operation. When another process holds one of the cores (the window painting, the descent
loop, a browser), one thread waits for a core at every barrier and the others wait for it:
a comparison that takes 0.6 s on an idle 2-core machine took 8-16 s with one core held,
where one thread takes about 1 s (docs/performance-log.md). Losing a core's worth of speed
(at most 2x on two cores) is the cheaper mistake, so a worker counts the processes ready
to run before each job and leaves their cores to them (:func:`choose`, :func:`use_free_cores`).

The workers also wait passively between operations (``OMP_WAIT_POLICY=PASSIVE``, unless
the user set it): a waiting thread sleeps instead of spinning on a core another process
needs. OpenMP reads it once, when torch loads it, so it is in the environment of the fork
server and of spawned children as they start (:func:`passive_waiting`).

Only the standard library and torch: no Qt here.
"""

from __future__ import annotations

import contextlib
import os
import time

#: torch's own choice in this process before any job changed it (``OMP_NUM_THREADS`` if
#: the user set it, else the cores); read at the first job, so that importing this module
#: imports no torch (the CLI's own process never needs it)
DEFAULT: int | None = None

#: samples of the run queue, ``SAMPLE_GAP`` seconds apart, before a job (their median)
SAMPLES = 3
SAMPLE_GAP = 0.001


def choose(cores: int, others_running: float, most: int) -> int:
    """Threads for a job: the ``cores`` this process may use, less one for each other
    process or thread ready to run (``others_running``, rounded), at least one and at most
    ``most`` (torch's default)."""
    free = cores - round(max(others_running, 0.0))
    return max(1, min(most, free))


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system says; else all)."""
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def others_running() -> float:
    """How many processes or threads besides this one are ready to run now: Linux's run
    queue (``/proc/loadavg``'s fourth field, which counts the reader), the median of a few
    samples; elsewhere the last minute's load average; 0 where neither is known."""
    samples = []
    for index in range(SAMPLES):
        if index:
            time.sleep(SAMPLE_GAP)
        try:
            with open("/proc/loadavg") as loadavg:
                samples.append(int(loadavg.read().split()[3].split("/")[0]) - 1)
        except (OSError, IndexError, ValueError):
            break
    if samples:
        return float(sorted(samples)[len(samples) // 2])
    with contextlib.suppress(AttributeError, OSError):
        return os.getloadavg()[0]
    return 0.0


def use_free_cores() -> int:
    """Set this process's torch threads to the cores free now (:func:`choose`); the count."""
    global DEFAULT
    import torch

    if DEFAULT is None:
        DEFAULT = torch.get_num_threads()
    threads = choose(usable_cores(), others_running(), DEFAULT)
    if threads != torch.get_num_threads():
        torch.set_num_threads(threads)
    return threads


WAIT_POLICY = "OMP_WAIT_POLICY"


@contextlib.contextmanager
def passive_waiting():
    """While a child process starts (the fork server, a spawned child): OpenMP waits
    passively in it, unless the user chose a policy. This process's own OpenMP, already
    loaded, and its environment afterwards are left as they were."""
    if WAIT_POLICY in os.environ:
        yield
        return
    os.environ[WAIT_POLICY] = "PASSIVE"
    try:
        yield
    finally:
        os.environ.pop(WAIT_POLICY, None)
