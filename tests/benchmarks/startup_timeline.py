"""Where the time to the first verdict goes: one launch's timeline, both processes (issue 33).

    python tests/benchmarks/startup_timeline.py [--rounds N] [--way plain|first|both] [--all]

Runs ``autograd-playground killhead`` (offscreen, this tree's code) until its first verdict is
painted, ``--rounds`` times per way, the ways taking turns: ``plain`` (the fork server starts as
the session is made, after the window's imports: the app's choice where no core is free) and
``first`` (the fork server and the head start first thing: its choice where one is). Every
process it starts, the workers' fork server and its children included, logs events with one
clock (``time.perf_counter``, CLOCK_MONOTONIC) and its own CPU seconds so far, through a
``sitecustomize`` put on ``PYTHONPATH`` for these runs only: imports of the modules that
matter, the head start's and the window's jobs in the children, and, in the window's process,
the first paint, the arrival of torch and what follows it, up to the verdict's paint.

For each launch it prints the two chains the verdict waits for, from launch: the window's (its
first paint, then torch imported on its helper thread, then the Function opened and the session
released) and the workers' (the fork server's torch, its warm-up, then the first child), and
which one ended last; ``--all`` prints the whole timeline as well. Not part of the test suite:
a measurement; absolute times are this machine's at its load (printed), so compare ways only
within one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: every process of a launch runs this first (PYTHONPATH): it logs to PROBE_LOG
SITECUSTOMIZE = r'''
import os, sys, time, threading
_LOG = os.environ.get("PROBE_LOG")
if _LOG:
    import builtins, importlib.abc, resource

    def log(event):
        use = resource.getrusage(resource.RUSAGE_SELF)
        line = (f"{time.perf_counter():.4f}\t{os.getpid()}\t{threading.current_thread().name}"
                f"\t{use.ru_utime + use.ru_stime:.2f}\t{event}\n")
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, line.encode())
        os.close(fd)

    builtins.__startup_log__ = log
    log("process started")
    WATCH = {"torch", "superqt", "sympy", "scipy.optimize", "customgrad.workers.warmup",
             "playground.workers.child_jobs", "playground.main_window",
             "customgrad.targets.loader"}
    JOBS = {"playground.workers.head_start": ("built_here", "checked_here"),
            "playground.workers.child_jobs": ("build", "compare")}

    def logged(fn, label):
        def wrapper(*args, **kwargs):
            log(f"{label} begins")
            try:
                return fn(*args, **kwargs)
            finally:
                log(f"{label} ends")
        for name in ("__name__", "__qualname__", "__module__", "__doc__"):
            setattr(wrapper, name, getattr(fn, name))
        return wrapper

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in WATCH and name not in JOBS:
                return None
            for finder in sys.meta_path:
                found = finder is not self and getattr(finder, "find_spec", None)
                spec = found and found(name, path, target)
                if spec:
                    break
            else:
                return None
            run = spec.loader.exec_module

            def exec_module(module):
                log(f"import {name} begins")
                try:
                    run(module)
                finally:
                    log(f"import {name} ends")
                for fn in JOBS.get(name, ()):
                    setattr(module, fn, logged(getattr(module, fn), f"{name.rsplit('.')[-1]}.{fn}"))
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Watch())
'''

#: the window's process: app.main on killhead, the way given, events logged up to the
#: verdict's paint (then it ends: workers may still be running)
LAUNCH = r'''
import builtins, os, sys
log = builtins.__startup_log__
import playground.app as app

def logged(owner, name, label):
    fn = getattr(owner, name)
    def wrapper(*args, **kwargs):
        log(f"{label} begins")
        try:
            return fn(*args, **kwargs)
        finally:
            log(f"{label} ends")
    setattr(owner, name, wrapper)

for name in ("window_for", "settle_heap"):
    logged(app, name, name)
release = app.release_after_show

def watched(session, window, settle=True):
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication
    from playground.workers import torch_import

    logged(torch_import, "_arrive", "torch arrived: what waited for it")
    logged(session, "set_target", "session.set_target")
    logged(session, "release", "session.release")
    banner, seen = window.jacobian.banner, {}

    class Paints(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and obj.isWidgetType():
                if obj.window() is window and "paint" not in seen:
                    seen["paint"] = True
                    log("FIRST PAINT")
                if "report" in seen and (obj is banner or banner.isAncestorOf(obj)):
                    log("VERDICT PAINTED")
                    os._exit(0)
            return False

    app_ = QApplication.instance()
    app_.installEventFilter(Paints(app_))
    session.jacobianReady.connect(lambda _r: (seen.setdefault("report", True),
                                              log("report arrived")))
    release(session, window, settle)

app.release_after_show = watched
app.a_core_is_free = lambda: sys.argv[1] == "first"
code = app.main(["killhead"])
sys.exit(f"autograd-playground exited ({code}) before painting a verdict")
'''


def launch(way: str, folder: Path) -> tuple[float, list[tuple[float, int, str, float, str]]]:
    """One launch, the way given: the load average before it, and its events (seconds from
    launch, process, thread, the process's CPU seconds, event)."""
    log = folder / f"{way}-{time.monotonic_ns()}.log"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PROBE_LOG": str(log),
           "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    load = os.getloadavg()[0]
    launched = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", LAUNCH, way], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    events = []
    for line in log.read_text().splitlines():
        at, pid, thread, cpu, event = line.split("\t")
        events.append((float(at) - launched, int(pid), thread, float(cpu), event))
    return load, events


def chains(events) -> dict[str, float]:
    """The moments the verdict waits for, from launch (NaN where absent)."""
    window = events[0][1]

    def first(test) -> float:
        return next((at for at, pid, thread, cpu, event in events if test(pid, thread, event)),
                    float("nan"))

    def cpu_at(test) -> float:
        return next((cpu for at, pid, thread, cpu, event in events if test(pid, thread, event)),
                    float("nan"))

    server = next((pid for at, pid, thread, cpu, event in events
                   if pid != window and event == "import customgrad.workers.warmup begins"), 0)
    return {
        "paint": first(lambda p, t, e: e == "FIRST PAINT"),
        "window torch": first(lambda p, t, e: p == window and e == "import torch ends"),
        "released": first(lambda p, t, e: e == "session.release begins"),
        "server torch": first(lambda p, t, e: p == server and e == "import torch ends"),
        "server ready": first(lambda p, t, e: p == server
                              and e == "import playground.workers.child_jobs ends"),
        "verdict": first(lambda p, t, e: e == "VERDICT PAINTED"),
        "window cpu": cpu_at(lambda p, t, e: e == "VERDICT PAINTED"),
        "server cpu": cpu_at(lambda p, t, e: p == server
                             and e == "import playground.workers.child_jobs ends"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--way", choices=("plain", "first", "both"), default="both")
    parser.add_argument("--all", action="store_true", help="print every event too")
    args = parser.parse_args()
    ways = ("plain", "first") if args.way == "both" else (args.way,)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "playground", "customgrad"],
                   cwd=ROOT, check=True)  # from bytecode, as an installed copy runs
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        for _ in range(args.rounds):
            for way in ways:
                load, events = launch(way, Path(folder))
                moments = chains(events)
                last = "workers" if moments["server ready"] > moments["released"] else "window"
                print(f"{way:5}  load {load:4.1f}  " + "  ".join(
                    f"{name} {value:5.2f}" for name, value in moments.items())
                    + f"  last: {last}'s chain", flush=True)
                if args.all:
                    pids = {pid: n for n, pid in enumerate(dict.fromkeys(e[1] for e in events))}
                    for at, pid, thread, cpu, event in events:
                        print(f"  {at:7.3f}  P{pids[pid]} {thread[:16]:16} cpu {cpu:5.2f}  {event}")


if __name__ == "__main__":
    main()
