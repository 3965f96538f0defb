"""Benchmarks, measured side by side in one run and reported as ratios.

    python tests/benchmarks/bench.py [--quick] [--json] [--only NAME ...] [--against REV]

Not part of the test suite: these machines are noisy, so targets live here as ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# never restore or overwrite the user's own session and preferences
os.environ.setdefault("AUTOGRAD_PLAYGROUND_NO_RESTORE", "1")
os.environ.setdefault("AUTOGRAD_PLAYGROUND_HOME", tempfile.mkdtemp(prefix="playground-bench-"))

import torch  # noqa: E402

from customgrad.checking.jacobian import compare  # noqa: E402
from customgrad.targets.gallery.seeds import KillHead  # noqa: E402


def _time(fn, repeat: int = 1) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed by the machine's noise)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_jacobian(quick: bool) -> dict:
    """Full comparison vs torch gradcheck on KillHead 64x128 float64 (8192 x 8192 Jacobian)."""
    x = torch.randn(64, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    small = torch.randn(4, 8, dtype=torch.float64)
    compare(KillHead, [small, 2])  # warm up (vmap import, allocator)
    torch.autograd.gradcheck(KillHead.apply, (small.clone().requires_grad_(), 2))
    leaf = x.clone().requires_grad_()
    gradcheck_s = _time(lambda: torch.autograd.gradcheck(KillHead.apply, (leaf, 2)))
    repeat = 2 if quick else 3
    ours_s = _time(lambda: compare(KillHead, [x, 2]), repeat)
    ours_nokeep_s = _time(lambda: compare(KillHead, [x, 2], keep_matrices=False), repeat)

    def bare():
        with torch.no_grad():
            for _ in range(2 * x.numel()):
                KillHead.apply(x, 2)
    bare_s = _time(bare, repeat)
    return {
        "gradcheck_s": gradcheck_s,
        "jacobian_s": ours_s,
        "jacobian_nokeep_s": ours_nokeep_s,
        "bare_2n_forward_s": bare_s,
        "jacobian_speedup_vs_gradcheck": gradcheck_s / ours_s,
        "jacobian_speedup_vs_gradcheck_nokeep": gradcheck_s / ours_nokeep_s,
        "jacobian_vs_lower_bound": ours_s / bare_s,
    }


_WORKER_JACOBIAN = """
import json, sys, time
import torch
from customgrad.workers import threads
from customgrad.targets.gallery.seeds import KillHead
from customgrad.checking.jacobian import compare

worker, repeat, with_gradcheck = sys.argv[1] == "worker", int(sys.argv[2]), sys.argv[3] == "1"
x = torch.randn(64, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
small = torch.randn(4, 8, dtype=torch.float64)
compare(KillHead, [small, 2])
out = {"threads": []}
best = float("inf")
for _ in range(repeat):
    if worker:  # what each job in a worker process does first (isolation.run_job)
        out["threads"].append(threads.use_free_cores())
    start = time.perf_counter()
    compare(KillHead, [x, 2])
    best = min(best, time.perf_counter() - start)
out["jacobian_s"] = best
if with_gradcheck:
    torch.autograd.gradcheck(KillHead.apply, (small.clone().requires_grad_(), 2))
    leaf = x.clone().requires_grad_()
    start = time.perf_counter()
    torch.autograd.gradcheck(KillHead.apply, (leaf, 2))
    out["gradcheck_s"] = time.perf_counter() - start
print(json.dumps(out))
"""


class _BusyCore:
    """A process holding one core (a plain busy loop, as a browser tab or a grep would)
    while the ``with`` block runs."""

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.5)  # it is running, and counted in the run queue
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait(5)


def _worker_jacobian(worker: bool, repeat: int, with_gradcheck: bool) -> dict:
    """KillHead 64x128's comparison in a fresh interpreter: as a worker process runs it now
    (``worker``: OpenMP waiting passively, threads chosen per job from the cores free), or
    as before (torch's default threads, OpenMP's default waiting)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if worker:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    done = subprocess.run(
        [sys.executable, "-c", _WORKER_JACOBIAN, "worker" if worker else "before",
         str(repeat), "1" if with_gradcheck else "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def bench_busy(quick: bool) -> dict:
    """KillHead 64x128 vs gradcheck as a worker process computes it, on the machine as it is
    and with one core held by a busy process started here; beside the same comparison with
    torch's default threads and OpenMP waiting (as workers ran it before)."""
    repeat = 2 if quick else 3
    out = {}
    for condition in ("idle", "busy"):
        with _BusyCore() if condition == "busy" else contextlib.nullcontext():
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            worker = _worker_jacobian(True, repeat, True)
            before = _worker_jacobian(False, repeat, False)
        gradcheck_s = worker["gradcheck_s"]
        out[f"{condition}_load_1min"] = load
        out[f"{condition}_worker_threads"] = min(worker["threads"])
        out[f"{condition}_gradcheck_s"] = gradcheck_s
        out[f"{condition}_jacobian_worker_s"] = worker["jacobian_s"]
        out[f"{condition}_jacobian_before_s"] = before["jacobian_s"]
        out[f"{condition}_speedup_vs_gradcheck_worker"] = gradcheck_s / worker["jacobian_s"]
        out[f"{condition}_speedup_vs_gradcheck_before"] = gradcheck_s / before["jacobian_s"]
    out["busy_worker_slowdown"] = out["busy_jacobian_worker_s"] / out["idle_jacobian_worker_s"]
    return out


def bench_checks(quick: bool) -> dict:
    """Each sub-check, and the diagnosis of a failed check, as a multiple of the full Jacobian
    comparison's time at the same point (KillHead 16x32 float64, a 512 x 512 Jacobian;
    double backward is torch's gradgradcheck, so it is timed, not held to the goal)."""
    from customgrad.checking import subchecks
    from customgrad.checking.diagnosis import diagnose
    from customgrad.targets.gallery.bugs import KillHeadBuggy

    x = torch.randn(16, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    repeat = 2 if quick else 5
    subchecks.run(KillHead, [x, 2], subchecks.NAMES)  # warm up
    jacobian_s = _time(lambda: compare(KillHead, [x, 2]), repeat)
    out = {"checks_jacobian_s": jacobian_s}
    for name in subchecks.NAMES[1:]:
        seconds = _time(lambda name=name: subchecks.run(KillHead, [x, 2], [name]), repeat)
        out[f"check_{name}_vs_jacobian"] = seconds / jacobian_s
    failed = compare(KillHeadBuggy, [x, 2])
    buggy_s = _time(lambda: compare(KillHeadBuggy, [x, 2]), repeat)
    out["diagnosis_vs_jacobian"] = _time(
        lambda: diagnose(failed, KillHeadBuggy, [x, 2]), repeat) / buggy_s
    return out


_BARE_LOOP = """
import sys, time
import torch
from customgrad.targets.gallery.seeds import KillHead

torch.manual_seed(0)
y = torch.empty(3, 8).normal_()
x = torch.empty(y.size()).normal_().requires_grad_()
criterion, eta = torch.nn.MSELoss(), 1.0
steps = 0
for line in sys.stdin:
    seconds, count, start = float(line), 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        loss = criterion(KillHead.apply(x, 2), y)
        if steps > 0:
            x.grad.zero_()
        loss.backward()
        loss.item()
        with torch.no_grad():
            x.sub_(eta * x.grad)
        steps += 1
        count += 1
    print(count / (time.perf_counter() - start), flush=True)
"""


class _BareLoop:
    """The seed's own KillHead loop in a plain torch process (no Qt, no app), run on request
    between the app's windows, so both are measured under the same machine conditions."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-c", _BARE_LOOP], cwd=ROOT,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.rate(0.2)  # warm up

    def rate(self, seconds: float) -> float:
        """Steps/s over the next ``seconds``."""
        self.process.stdin.write(f"{seconds}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait(5)


def _waited_for_a_core() -> float:
    """Seconds this thread has been ready to run but waited for a core (Linux's schedstat);
    0 where the system does not say."""
    try:
        with open("/proc/thread-self/schedstat") as stat:
            return int(stat.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class _StallMeter:
    """Longest gap between ticks of a 5 ms GUI timer: how long the event loop was blocked;
    and how many times it was blocked longer than a 60 Hz frame (a frame the screen missed).
    ``queued``: how much of the longest gap the GUI thread spent ready to run but waiting
    for a core; ``ran``: how much of it the GUI thread ran on a core (the rest of the gap it
    waited for the interpreter lock, or for I/O). ``locked``: the longest such rest of any
    gap (not only the longest gap's): another thread of this process held the lock."""

    FRAME = 1 / 60

    def __init__(self):
        from PySide6.QtCore import QTimer

        self.timer = QTimer(interval=5)
        self.timer.timeout.connect(self._tick)
        self.last = None
        self.worst = 0.0
        self.late = 0

    def _tick(self):
        now, queued, ran = time.perf_counter(), _waited_for_a_core(), time.thread_time()
        if self.last is not None:
            blocked = now - self.last[0] - 0.005
            if blocked > self.worst:
                self.worst, self.queued = blocked, queued - self.last[1]
                self.ran = ran - self.last[2]
            self.locked = max(self.locked, blocked - (queued - self.last[1])
                              - (ran - self.last[2]))
            self.late += blocked > self.FRAME
        self.last = now, queued, ran

    def __enter__(self):
        self.last, self.worst, self.late, self.before, self.queued = None, 0.0, 0, None, 0.0
        self.ran = self.locked = 0.0
        self.timer.start()
        return self

    def split(self, *_):
        """Keep the longest freeze so far as ``before`` (say, of a check until its report
        arrived); ``worst`` stays the longest of all."""
        if self.before is None:
            self.before = self.worst

    def __exit__(self, *exc):
        self.timer.stop()


def _window():
    from playground.app import application, settle_heap

    app = application()  # the app's font (11 pt at least) and plot defaults (anti-aliased)
    from playground.main_window import MainWindow
    from playground.state.session import Session

    window = MainWindow(Session())
    window.resize(1440, 900)
    window.show()
    settle_heap()  # as the app does once its window has painted, before any work
    return app, window


def _wait(app, condition, timeout: float = 60.0):
    """Run the real event loop (which waits without holding the GIL) until ``condition``."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    poll = QTimer(interval=10)
    poll.timeout.connect(lambda: condition() and loop.quit())
    poll.start()
    QTimer.singleShot(int(timeout * 1000), loop.quit)
    if not condition():
        loop.exec()
    poll.stop()
    if not condition():
        raise TimeoutError("benchmark condition not reached")


def _verdict_drawn(app, reports, timeout: float = 120.0):
    """Wait for a report, then as long again as the window takes to draw it: a stall meter
    stopped at the report would miss the paint that follows (the heatmaps, the table)."""
    _wait(app, lambda: reports, timeout)
    _run_for(0.25)


def _run_for(seconds: float):
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def bench_app(quick: bool) -> dict:
    """Loop throughput with the live plot vs the seed's bare loop in a plain torch process;
    GUI stalls while working.

    The machine's speed drifts by tens of percent from second to second here, and noise only
    ever slows a window down. So the app and the bare loop take turns in many short windows,
    and the headline ratio compares the best window of each (as timeit takes the best of
    its repeats); the median of each app window against the bare windows either side of it
    is reported too.
    """
    app, window = _window()
    session = window.session
    reports = []
    session.jacobianReady.connect(reports.append)
    session.update(steps=0)  # no step limit: play until paused
    session.set_target("killhead")
    _wait(app, lambda: reports)
    session.reset()
    _wait(app, lambda: session.step == 0 and session.descent_worker is None)
    window_s = 0.4
    app_rates, bare_rates, paired = [], [], []
    stall_run, queued_run, ran_run, locked_run = 0.0, 0.0, 0.0, 0.0
    bare_loop = _BareLoop()
    bare = bare_loop.rate(window_s)
    bare_rates.append(bare)
    for _ in range(8 if quick else 24):
        with _StallMeter() as meter:
            session.play()
            _run_for(0.2)  # the loop has started and the plot is live
            start_step, start = session.step, time.perf_counter()
            _run_for(window_s)
            rate = (session.step - start_step) / (time.perf_counter() - start)
            session.pause()
        _run_for(0.05)
        if meter.worst > stall_run:
            stall_run, queued_run, ran_run = meter.worst, meter.queued, meter.ran
        locked_run = max(locked_run, meter.locked)
        after = bare_loop.rate(window_s)
        app_rates.append(rate)
        bare_rates.append(after)
        paired.append(rate / ((bare + after) / 2))
        bare = after
    bare_loop.close()
    # a 2048 x 2048 Jacobian (KillHead 32x64) computed while the window stays live
    reports.clear()
    with _StallMeter() as meter:
        session.update(shapes={"input": "32x64"}, dtype="float64")
        _verdict_drawn(app, reports)
    stall_jacobian, queued_jacobian, ran_jacobian = meter.worst, meter.queued, meter.ran
    locked_jacobian = meter.locked
    session.shutdown(wait=1.0)
    window.close()
    return {
        "loop_throughput_vs_bare": max(app_rates) / max(bare_rates),
        "loop_throughput_vs_bare_median": statistics.median(paired),
        "loop_steps_per_s_app": max(app_rates),
        "loop_steps_per_s_bare": max(bare_rates),
        "ui_max_stall_ms_running": stall_run * 1000,
        "ui_max_stall_ms_jacobian_2048": stall_jacobian * 1000,
        "ui_max_stall_queued_ms_running": queued_run * 1000,
        "ui_max_stall_queued_ms_jacobian_2048": queued_jacobian * 1000,
        "ui_max_stall_ran_ms_running": ran_run * 1000,
        "ui_max_stall_ran_ms_jacobian_2048": ran_jacobian * 1000,
        "ui_max_lock_wait_ms_running": locked_run * 1000,
        "ui_max_lock_wait_ms_jacobian_2048": locked_jacobian * 1000,
    }


def _plot_stall(app, plot, points: int, seconds: float) -> tuple[float, float]:
    """Longest stall (s) while the loss plot holds ``points`` and grows by 60 a frame, and
    how much of it the GUI thread waited for a core. (Until
    the 10 M points came, the benchmark slept between batches with the event loop stopped,
    so no reading could fall below a frame's 16.7 ms.)"""
    import numpy as np

    plot.start_run("benchmark")
    plot.clear_history()  # the earlier measurement's run is no overlay here
    steps = np.arange(points, dtype=np.float64)
    plot.append(steps, 1.0 / (1.0 + steps))
    plot.flush()
    _run_for(0.25)  # the new run's first paint (its axes, its legend) before the meter
    with _StallMeter() as meter:
        start, n = time.perf_counter(), points
        while time.perf_counter() - start < seconds:
            batch = np.arange(n, n + 60, dtype=np.float64)
            plot.append(batch, 1.0 / (1.0 + batch))
            n += 60
            _run_for(1 / 60)  # the event loop runs while the next batch is computed
    return meter.worst, meter.queued


def bench_plot(quick: bool) -> dict:
    """Event-loop stall while the loss plot holds 1,000,000 or 10,000,000 points and keeps
    growing, idle and with one core held busy; beside each, the way before bbd2662 (every
    point handed to pyqtgraph, which peak-downsamples them at each redraw, drawn as one path,
    the axes replayed at each redraw), the two ways taking turns: the least of each way's
    turns (3, --quick 2; each its longest stall in 4 s, --quick 1.5 s), as noise only ever
    lengthens a stall."""
    from PySide6.QtWidgets import QGraphicsItem

    from playground.views.loss_plot import runs as loss_plot

    app, window = _window()
    axes = [window.loss_plot.plot_item.getAxis(name) for name in ("bottom", "left")]
    cached, uncached = (QGraphicsItem.CacheMode.DeviceCoordinateCache,
                        QGraphicsItem.CacheMode.NoCache)
    ways = {"": (loss_plot.DIRECT_POINTS, loss_plot.PATH_POINTS, cached),
            "_all_points_one_path": (sys.maxsize, sys.maxsize, uncached)}
    out = {}
    try:
        for points, name in ((1_000_000, "1m"), (10_000_000, "10m")):
            for busy in (False, True):
                for _turn, (way, (direct, path, cache)) in itertools.product(
                        range(2 if quick else 3), ways.items()):
                    loss_plot.DIRECT_POINTS, loss_plot.PATH_POINTS = direct, path
                    for axis in axes:
                        axis.setCacheMode(cache)
                    with _BusyCore() if busy else contextlib.nullcontext():
                        stall, queued = _plot_stall(app, window.loss_plot, points,
                                                    1.5 if quick else 4.0)
                    key = f"plot_{name}_points_stall_ms{'_busy' if busy else ''}{way}"
                    if stall * 1000 < out.get(key, math.inf):
                        out[key] = stall * 1000
                        if not way:  # of it, waiting for a core: the machine's, not ours
                            out[key.replace("stall", "queued")] = queued * 1000
    finally:
        loss_plot.DIRECT_POINTS, loss_plot.PATH_POINTS = ways[""][:2]
    window.close()
    return out


def _keys_freeze(keys, pause: float = 0.15) -> tuple[float, float]:
    """The GUI thread's longest freeze (s) while ``keys`` (each a key's action) are pressed
    one after another, the event loop running ``pause`` s after each (as between a
    teacher's keys), and how much of it the GUI thread ran on a core."""
    _run_for(0.25)
    with _StallMeter() as meter:
        for key in keys:
            key()  # on the GUI thread, as a key's shortcut runs: the meter's tick waits
            _run_for(pause)
    return meter.worst, meter.ran


def bench_appearance(quick: bool) -> dict:
    """The GUI thread's longest freeze while F2 goes round the themes (light -> dark -> high
    contrast -> light: ``ui_theme_switch_ms``) and while Ctrl+= / Ctrl+- step the zoom
    100 -> 150 -> 100 % in high contrast, where each step polishes every widget again
    (``ui_zoom_step_ms``); idle and with one core held busy (``_busy``): the least of the
    turns' (3, --quick 2), as noise only ever lengthens a freeze; beside each, the CPU time
    the GUI thread had in that freeze (``_ran_``), less shaken by a loaded machine."""
    _app, window = _window()
    prefs = window.preferences
    themes = [lambda n=n: prefs.set_theme(n) for n in ("dark", "high-contrast", "light")]
    zooms = [lambda: prefs.zoom_by(1)] * 3 + [lambda: prefs.zoom_by(-1)] * 3
    out: dict[str, float] = {}
    for busy in (False, True):
        suffix = "_busy" if busy else ""
        with _BusyCore() if busy else contextlib.nullcontext():
            for _turn in range(2 if quick else 3):
                prefs.set_theme("light")
                prefs.set_zoom(100)
                for key, keys in (("ui_theme_switch_ms", themes), ("ui_zoom_step_ms", zooms)):
                    if key == "ui_zoom_step_ms":
                        prefs.set_theme("high-contrast")
                    freeze, ran = _keys_freeze(keys)
                    if freeze * 1000 < out.get(key + suffix, math.inf):
                        out[key + suffix] = freeze * 1000
                        out[key.replace("_ms", "_ran_ms") + suffix] = ran * 1000
    prefs.set_theme("light")
    window.close()
    return out


_STARTUP = """
import os, sys, time
t0 = time.perf_counter()
import torch, PySide6.QtWidgets  # noqa
t_import = time.perf_counter() - t0
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication

class FirstPaint(QObject):
    at = None

    def eventFilter(self, obj, event):
        if (self.at is None and event.type() == QEvent.Type.Paint and obj.isWidgetType()
                and obj.window().inherits("QMainWindow")):
            self.at = time.perf_counter()
            QTimer.singleShot(0, app.quit)
        return False

app = QApplication(sys.argv[:1])
first = FirstPaint()
app.installEventFilter(first)
from playground.app import main
code = main([])  # what `autograd-playground` does: restore, open KillHead, show
if first.at is None:
    sys.exit(f"autograd-playground exited ({code}) before painting its window")
print(t_import, first.at - t0, flush=True)
os._exit(0)  # workers may still be computing the first Jacobian
"""


_FIRST_VERDICT = """
import os, sys, time
launched = float(sys.argv[1])  # the parent's perf_counter (CLOCK_MONOTONIC: one clock for all)
import playground.app as app_module

release = app_module.release_after_show
seen = {}


def watched(session, window, settle=True):
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    from playground.workers import torch_import

    banner = window.jacobian.banner
    ticks = []  # a 5 ms timer on the GUI thread from the first paint until torch arrived
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))

    class Paints(QObject):
        def eventFilter(self, obj, event):
            if event.type() == QEvent.Type.Paint and obj.isWidgetType():
                now = time.perf_counter()
                if obj.window() is window and "paint" not in seen:
                    seen["paint"] = now
                    ticks.append(now)
                    timer.start()
                if "report" in seen and (obj is banner or banner.isAncestorOf(obj)):
                    print(seen["paint"] - launched, now - launched, seen.get("freeze", 0.0),
                          flush=True)
                    os._exit(0)  # workers may still be running
            return False

    def arrived():  # after the Function has opened (asked first): the ticks before count
        timer.stop()
        seen["freeze"] = max((b - a for a, b in zip(ticks, ticks[1:])), default=0.0)

    app = QApplication.instance()
    app.installEventFilter(Paints(app))
    session.jacobianReady.connect(lambda _report: seen.setdefault("report", True))
    release(session, window, settle)
    torch_import.when_arrived(arrived)


app_module.release_after_show = watched
#: the server's start
code = app_module.main(["killhead"])  # stops at the verdict's first paint
sys.exit(f"autograd-playground exited ({code}) before painting a verdict")
"""


def bench_startup(quick: bool) -> dict:
    """Start-up to the first painted window, minus importing torch and PySide6: the real
    command (``autograd-playground``, with this run's empty home folder), stopped at its
    first paint. Then what the user waits for, from launch (the parent's clock, before it
    starts the process): the window's first paint and the first verdict painted
    (``autograd-playground killhead``), taking turns with ``python -c "import torch"``, the
    floor for anything that needs torch. The workers' fork server starts before the window's
    imports where a core is free (``app.a_core_is_free``), else once the window is built: the
    plain readings are the app's choice on this machine now, ``_server_first`` always first.

    Like an installed copy (pip compiles it) or any start after the first, it runs from
    compiled bytecode: this machine sets PYTHONDONTWRITEBYTECODE, so our sources are compiled
    first (into their ``__pycache__``, where Python would write them itself)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "playground", "customgrad"],
                   cwd=ROOT, check=True, env=env)
    overheads = []
    for _ in range(2 if quick else 4):
        out = subprocess.run([sys.executable, "-c", _STARTUP], capture_output=True, text=True,
                             cwd=ROOT, check=True, env=env)
        t_import, t_paint = (float(v) for v in out.stdout.split()[-2:])
        overheads.append(t_paint - t_import)
    readings: dict[str, list[float]] = {}
    for _ in range(2 if quick else 3):  # in turns: the machine's drift falls on all alike
        for way, choice in (("", ""), ("_server_first", "True")):
            script = _FIRST_VERDICT.replace("#: the server's start", "app_module.a_core_is_free"
                                            f" = lambda: {choice}" if choice else "")
            launched = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", script, str(launched)],
                                 capture_output=True, text=True, cwd=ROOT, check=True, env=env)
            first_paint, verdict, freeze = (float(v) for v in out.stdout.split()[-3:])
            readings.setdefault(f"time_to_first_paint_s{way}", []).append(first_paint)
            readings.setdefault(f"time_to_first_verdict_s{way}", []).append(verdict)
            readings.setdefault(f"ui_longest_freeze_ms_torch_loading{way}", []).append(
                freeze * 1000)
        launched = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], cwd=ROOT, check=True, env=env)
        readings.setdefault("import_torch_s", []).append(time.perf_counter() - launched)
    return {"startup_overhead_s": min(overheads), **{k: min(v) for k, v in readings.items()}}


def _rss_mib(pid: int) -> float:
    """Resident memory of a process now (Linux; NaN elsewhere)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def bench_soak(quick: bool) -> dict:
    """1,000,000 descent steps of KillHead 3x8 in the app: memory growth and stalls, of the
    window's process and of the loop's own process (where it has one)."""
    app, window = _window()
    session = window.session
    reports = []
    session.jacobianReady.connect(reports.append)
    session.update(steps=0)
    session.set_target("killhead")
    _wait(app, lambda: reports)
    target = 100_000 if quick else 1_000_000
    session.play()
    _wait(app, lambda: session.step >= 1000)  # the loop (and its process) is up
    remote = session.ctrl.remote
    loop_pid = remote.process.pid if remote is not None else None
    rss0 = _rss_mib(os.getpid())
    loop0 = _rss_mib(loop_pid) if loop_pid else float("nan")
    start = time.perf_counter()
    with _StallMeter() as meter:
        _wait(app, lambda: session.step >= target, timeout=3600)
        session.pause()
    seconds = time.perf_counter() - start
    rss1 = _rss_mib(os.getpid())
    loop1 = _rss_mib(loop_pid) if loop_pid else float("nan")
    session.shutdown(wait=1.0)
    window.close()
    return {"soak_steps": float(session.step), "soak_steps_per_s": (session.step - 1000) / seconds,
            "soak_rss_growth_mib": rss1 - rss0, "soak_loop_process_rss_growth_mib": loop1 - loop0,
            "soak_max_stall_ms": meter.worst * 1000}


def bench_display(quick: bool) -> dict:
    """What a worker prepares for the view after a 2048-row comparison (difference, mask,
    peaks, the two pooled overviews: Report.prepare_drawing), as a multiple of the
    comparison's own time; for a passing KillHead 32x64 and a dense LinearFunction."""
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings
    from playground.support.preview import drawing_steps

    cases = {"killhead": ("killhead", {"input": "32x64"}),
             "dense": ("linear", {"input": "32x21", "weight": "64x21", "bias": "64"})}
    results = {}
    for label, (target, shapes) in cases.items():
        problem = build(Settings(target=target, shapes=shapes, dtype="float64"))
        compared, prepared = [], []
        for _ in range(2 if quick else 5):
            start = time.perf_counter()
            report = problem.compare(None)
            compared.append(time.perf_counter() - start)
            start = time.perf_counter()
            for step in drawing_steps(report.shape, 160):  # heatmaps 160 pixels a side
                report.prepare_drawing(step)
            prepared.append(time.perf_counter() - start)
            del report
        results[f"display_prep_s_{label}"] = min(prepared)
        results[f"display_prep_vs_comparison_{label}"] = min(prepared) / min(compared)
    return results


TURNS = 0  # --turns: how many times the two ways take turns in bench_isolation


def bench_isolation(quick: bool) -> dict:
    """The Jacobian check in a worker process (the default: a child kept between the checks
    of one Function) vs in a fresh child for each check vs on the window's worker thread (as
    before), side by side: time to verdict and the window's longest freeze, for two
    2048-row comparisons: KillHead 32x64 (element-wise: most tiles are zero and skipped, so a
    process's fixed cost shows) and LinearFunction 32x21 -> 64 (2048 x 2080, dense). The
    ways take turns: the best time of each, the median of the freezes. A fourth way, "unheld",
    is the kept child not held while the window paints (as before 2026-11-25, night)."""
    from customgrad.workers.warm import WarmWorker
    from playground.workers.policy import JobPolicy

    app, window = _window()
    session = window.session
    reports = []
    session.jacobianReady.connect(reports.append)
    results = {}
    cases = {"killhead": ("killhead", {"input": "32x64"}),
             "dense": ("linear", {"input": "32x21", "weight": "64x21", "bias": "64"})}
    saved = session.policy
    # the app's warm worker (kept for 300 s where the environment keeps none), and one that
    # starts a fresh child for every job
    kept = saved.worker if saved.worker.keep_seconds > 0 else WarmWorker(keep_seconds=300.0)
    fresh = WarmWorker(keep_seconds=0)
    # each way is the session's policy; "unheld": the kept child not held while the window
    # paints (JobPolicy.hold_child off, as before 2026-11-25): what holding it buys
    ways = {"thread": JobPolicy(isolate=False), "fresh": JobPolicy(worker=fresh),
            "isolated": JobPolicy(worker=kept),
            "unheld": JobPolicy(hold_child=False, worker=kept)}
    try:
        for label, (target, shapes) in cases.items():
            reports.clear()
            session.policy = saved
            session.set_target(target)
            session.update(shapes=shapes, dtype="float64")
            _wait(app, lambda: reports and reports[-1].shape[0] == 2048, 120)
            seconds: dict[str, list[float]] = {way: [] for way in ways}
            stalls: dict[str, list[float]] = {way: [] for way in ways}
            # the longest freeze while the comparison ran, before its report: where the ways
            # differ (the verdict's paint after it is the same work in the window every way)
            comparing: dict[str, list[float]] = {way: [] for way in ways}
            queued: dict[str, list[float]] = {way: [] for way in ways}  # of the longest
            late: dict[str, int] = dict.fromkeys(ways, 0)
            for _ in range(TURNS or (2 if quick else 4)):
                for way, policy in ways.items():
                    session.policy = policy
                    reports.clear()
                    _run_for(0.3)  # the last report's previews are painted
                    with _StallMeter() as meter:
                        session.jacobianReady.connect(meter.split)  # after the window's slots
                        start = time.perf_counter()
                        session.check_now()
                        _wait(app, lambda: reports, 120)
                        seconds[way].append(time.perf_counter() - start)
                        _verdict_drawn(app, reports)
                        session.jacobianReady.disconnect(meter.split)
                    stalls[way].append(meter.worst)
                    comparing[way].append(meter.worst if meter.before is None else meter.before)
                    queued[way].append(meter.queued)
                    late[way] += meter.late
            for way in ("isolated", "fresh", "unheld"):
                results.update({
                    f"{way}_verdict_vs_thread_{label}": min(seconds[way]) / min(seconds["thread"]),
                    f"verdict_s_{way}_{label}": min(seconds[way]),
                    f"ui_max_stall_ms_{way}_{label}": statistics.median(stalls[way]) * 1000,
                    f"ui_stall_{way}_vs_thread_{label}":
                        statistics.median(stalls[way]) / statistics.median(stalls["thread"]),
                    # turn by turn (the two ran a second apart): steadier than the above
                    f"ui_stall_{way}_vs_thread_paired_{label}": statistics.median(
                        a / b for a, b in zip(stalls[way], stalls["thread"])),
                    f"ui_late_frames_{way}_{label}": float(late[way]),
                    f"ui_stall_{way}_vs_thread_comparing_paired_{label}": statistics.median(
                        a / b for a, b in zip(comparing[way], comparing["thread"])),
                    f"ui_max_stall_ms_{way}_comparing_{label}":
                        statistics.median(comparing[way]) * 1000,
                    f"ui_stall_queued_ms_{way}_{label}": statistics.median(queued[way]) * 1000,
                })
            results.update({
                f"verdict_s_thread_{label}": min(seconds["thread"]),
                f"ui_max_stall_ms_thread_{label}": statistics.median(stalls["thread"]) * 1000,
                f"ui_late_frames_thread_{label}": float(late["thread"]),
                f"ui_max_stall_ms_thread_comparing_{label}":
                    statistics.median(comparing["thread"]) * 1000,
                f"ui_stall_queued_ms_thread_{label}": statistics.median(queued["thread"]) * 1000,
            })
    finally:
        session.policy = saved
        fresh.end()
        if kept is not saved.worker:
            kept.end()
    session.shutdown(wait=1.0)
    window.close()
    return results


def bench_landscape(quick: bool) -> dict:
    """Event-loop stall during Play on the Sigmoid twin (60 steps a second, the rate a class
    follows) with the Landscape tab shown (its grids and paths computed in worker processes
    and drawn) and with the Code tab shown instead, turn about; and the landscape's updates
    a second."""
    app, window = _window()
    session, model = window.session, window.landscape.model
    reports, updates = [], []
    session.jacobianReady.connect(reports.append)
    model.ready.connect(lambda landscape, _contours: updates.append(landscape))
    model.pathMoved.connect(updates.append)
    session.update(steps=0, lr=0.2)
    session.set_rate(60)
    session.set_target("sigmoid_bug")
    _wait(app, lambda: reports)
    stalls: dict[str, list[float]] = {"landscape": [], "code": []}
    queued: dict[str, list[float]] = {"landscape": [], "code": []}
    rates = []
    for _ in range(2 if quick else 4):
        for way in stalls:
            if way == "landscape":
                window.show_landscape()
            else:
                window.side_tabs.setCurrentWidget(window.code)
            _run_for(0.5)  # the tab's first grid
            updates.clear()
            with _StallMeter() as meter:
                session.play()
                _run_for(3.0)
                session.pause()
            stalls[way].append(meter.worst)
            queued[way].append(meter.queued)  # of the longest stall, waiting for a core
            if way == "landscape":
                rates.append(len(updates) / 3.0)
            _run_for(0.3)
    path_ms = {steps: _path_update_ms(app, session, model, steps)
               for steps in (60, model.step)}
    session.shutdown(wait=1.0)
    window.close()
    return {"ui_max_stall_ms_playing_landscape": statistics.median(stalls["landscape"]) * 1000,
            "ui_max_stall_ms_playing_code_tab": statistics.median(stalls["code"]) * 1000,
            **{f"ui_stall_queued_ms_playing_{way}": statistics.median(queued[way]) * 1000
               for way in queued},
            "landscape_updates_per_s": statistics.median(rates),
            "landscape_path_update_ms_at_60_steps": path_ms[60],
            "landscape_path_update_ms_at_the_runs_end": path_ms[model.step],
            "landscape_steps_at_the_runs_end": model.step}


def _path_update_ms(app, session, model, steps: int, count: int = 12) -> float:
    """The median round trip of ``count`` path updates in a row (the path and arrows after
    ``steps`` of the run's steps, replayed, on the plane kept: what each update during Play
    computes), through a landscape worker of their own (the model's would act on them)."""
    from playground.workers.landscape import LandscapeRunner

    shown = model.shown
    if shown is None:
        return float("nan")
    runner, done, trips = LandscapeRunner(), [], []
    runner.finished.connect(lambda *_args: done.append(1))
    options = {"size": 0, "plane": shown.plane, "box": (shown.center, shown.half)}
    for _ in range(count):
        start = time.perf_counter()
        runner.run(session.problem, steps, model.lrs[:steps], options)
        _wait(app, lambda: len(done) == len(trips) + 1)
        trips.append(time.perf_counter() - start)
    return statistics.median(trips) * 1000


def bench_landscape_grid(quick: bool) -> dict:
    """The landscape's 41 x 41 grid (forward + loss at each point) around a run's start, one
    forward call per point (the batching probe refused) and in batches where the probe
    allows them, turn about, as the machine is and with one core held busy: the median of
    the turns, for a Function whose forward takes a stack (Sigmoid's twin) and one whose
    matrix product does not (KillHead: the probe's one call, then point by point)."""
    from unittest import mock

    from customgrad.function import batching
    from customgrad.landscape import SIZE
    from customgrad.landscape.plane import random_plane
    from customgrad.landscape.surface import LossSurface, axes, grid
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings

    def timed(target: str, batched: bool) -> float:
        surface = LossSurface(build(Settings(target=target)).descent())
        plane = random_plane(surface.point(), surface.shapes, seed=0)
        alphas, betas = axes((0.0, 0.0), 1.0, SIZE)
        refuse = mock.patch.object(batching, "probe", lambda *args: False)
        with contextlib.nullcontext() if batched else refuse:
            start = time.perf_counter()
            for _values, _complete in grid(surface, plane, alphas, betas):
                pass
            return time.perf_counter() - start

    out = {}
    turns = 2 if quick else 5
    for condition in ("idle", "busy"):
        with _BusyCore() if condition == "busy" else contextlib.nullcontext():
            for target in ("sigmoid_bug", "killhead"):
                times: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(turns):
                    for batched in (False, True):
                        times[batched].append(timed(target, batched))
                for batched, label in ((False, "per_point"), (True, "batched")):
                    out[f"landscape_grid_ms_{target}_{label}_{condition}"] = (
                        statistics.median(times[batched]) * 1000)
    return out


_ENGINE = """
import json, sys, time
from unittest import mock
import torch
from customgrad.api import check
from customgrad.targets.gallery.classic import Cube, Exp, NumpyTanh
from customgrad.targets.gallery.seeds import KillHead, LinearFunction
from customgrad.checking.jacobian import compare, numerical
from customgrad.checking.jacobian.report import Method

from customgrad.workers import threads

repeat = int(sys.argv[1])
g = torch.Generator().manual_seed(0)
x = torch.randn(64, 128, dtype=torch.float64, generator=g)
w = torch.randn(64, 128, dtype=torch.float64, generator=g)
e = torch.randn(16, 32, dtype=torch.float64, generator=g)
full = mock.patch.object(numerical, "reference_pass", lambda *a: Method(reason="benchmark"))


def best(fn):
    out = float("inf")
    for _ in range(repeat):
        threads.use_free_cores()  # what each job in a worker process does first
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out


def gradcheck(fn, *args):
    leaves = [a.clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]
    threads.use_free_cores()
    start = time.perf_counter()
    torch.autograd.gradcheck(fn.apply, tuple(leaves))
    return time.perf_counter() - start


compare(KillHead, [x[:4, :8].clone(), 2])  # warm up (vmap, allocator)
with full:
    compare(KillHead, [x[:4, :8].clone(), 2])
out = {}
for name, fn, args in (("killhead", KillHead, [x, 2]), ("linear", LinearFunction, [x, w]),
                       ("numpy_tanh", NumpyTanh, [x])):
    out[f"{name}_s"] = best(lambda: compare(fn, args))
    with full:
        out[f"{name}_full_s"] = best(lambda: compare(fn, args))
    if name != "numpy_tanh":
        out[f"{name}_gradcheck_s"] = gradcheck(fn, *args)
for name, fn in (("exp", Exp), ("cube", Cube)):
    out[f"{name}_double_s"] = best(lambda: check(fn, e, checks=["jacobian", "double_backward"]))
    ee = e.clone().requires_grad_()
    out[f"{name}_gradgradcheck_s"] = best(lambda: torch.autograd.gradgradcheck(fn.apply, (ee,)))
out["threads"] = torch.get_num_threads()
print(json.dumps(out))
"""


def _worker_runs(script: str, *argv: str):
    """``script`` run in a fresh interpreter set up as a worker process (OpenMP waiting
    passively), on the machine as it is and then with one core held busy: (condition, load
    average before it, the JSON its last line printed) for each."""
    for condition in ("idle", "busy"):
        with _BusyCore() if condition == "busy" else contextlib.nullcontext():
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # as in a worker process
            done = subprocess.run([sys.executable, "-c", script, *argv], cwd=ROOT, env=env,
                                  capture_output=True, text=True, check=True)
        yield condition, load, json.loads(done.stdout.splitlines()[-1])


def bench_engine(quick: bool) -> dict:
    """Issue 32's four ratios, idle and with one core held by a busy process, each in a fresh
    interpreter set up as a worker process (passive OpenMP waiting, threads from the cores
    free before each run), everything of one condition in that one process: KillHead 64x128 and
    LinearFunction (input 64x128, weight 64x128) against gradcheck, as now (the verified
    reference where it holds) and with the full finite-difference method forced (as before);
    the NumPy Tanh 64x128 (untraceable) now against the full method; the check with double
    backward (``checks=["jacobian", "double_backward"]``) of Exp 16x32 and of the gallery's
    Cube 16x32 (new style, setup_context: its backward, 3 x^2 g from the saved input, is plain
    torch, so double backward works; the graph of Exp's goes back through Exp's own backward)
    against gradgradcheck. Best of the repeats, gradcheck once."""
    repeat = 2 if quick else 3
    out = {}
    for c, load, t in _worker_runs(_ENGINE, str(repeat)):
        out[f"engine_{c}_load_1min"] = load
        out[f"engine_{c}_threads"] = t["threads"]
        for name in ("killhead", "linear"):
            out[f"engine_{c}_{name}_s"] = t[f"{name}_s"]
            out[f"engine_{c}_{name}_full_s"] = t[f"{name}_full_s"]
            out[f"engine_{c}_{name}_gradcheck_s"] = t[f"{name}_gradcheck_s"]
            out[f"engine_{c}_{name}_vs_gradcheck"] = t[f"{name}_gradcheck_s"] / t[f"{name}_s"]
            out[f"engine_{c}_{name}_full_vs_gradcheck"] = (t[f"{name}_gradcheck_s"]
                                                           / t[f"{name}_full_s"])
        out[f"engine_{c}_numpy_tanh_vs_full"] = t["numpy_tanh_s"] / t["numpy_tanh_full_s"]
        for name in ("exp", "cube"):
            out[f"engine_{c}_{name}_double_s"] = t[f"{name}_double_s"]
            out[f"engine_{c}_{name}_gradgradcheck_s"] = t[f"{name}_gradgradcheck_s"]
            out[f"engine_{c}_{name}_double_vs_gradgradcheck"] = (t[f"{name}_gradgradcheck_s"]
                                                                 / t[f"{name}_double_s"])
    return out


_UNTRACEABLE = """
import contextlib, json, sys, time
from unittest import mock
import torch
from customgrad.checking.jacobian import compare, numerical
from customgrad.targets.gallery.classic import NumpyTanh
from customgrad.workers import threads

turns = int(sys.argv[1])
one_a_call = mock.patch.object(numerical.FiniteDifferences, "_stack_probe", lambda *a: False)
compare(NumpyTanh, [torch.randn(8, 16, dtype=torch.float64)])  # warm up
passes = []
real_pass = numerical.numerical_pass


def timed_pass(*args):
    start = time.perf_counter()
    try:
        return real_pass(*args)
    finally:
        passes.append(time.perf_counter() - start)


out = {"threads": torch.get_num_threads()}
with mock.patch("customgrad.checking.jacobian.comparison.numerical_pass", timed_pass):
    for rows, cols in ((64, 128), (16, 32)):
        x = torch.randn(rows, cols, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        times = {}
        for _ in range(turns):
            for label in ("one_a_call", "stacked"):
                threads.use_free_cores()  # what each job in a worker process does first
                with one_a_call if label == "one_a_call" else contextlib.nullcontext():
                    start = time.perf_counter()
                    report = compare(NumpyTanh, [x])
                    took = time.perf_counter() - start
                assert report.passed and report.method.name == "finite-differences"
                times.setdefault(label, []).append(took)
                times.setdefault("numerical_" + label, []).append(passes[-1])
        out.update({f"{rows}x{cols}_{k}": min(v) for k, v in times.items()})
print(json.dumps(out))
"""


def bench_untraceable(quick: bool) -> dict:
    """The NumPy Tanh (a forward autograd cannot trace: finite differences) at 64x128 (the
    issue's) and 16x32 (calls cheap against their overhead), its full check with the
    perturbed points in stacks (where the stacking probe allows them) and one point a call
    (the probe refused: as before), turn about in a fresh interpreter set up as a worker
    process, as the machine is and with one core held busy: best of the turns, of the whole
    check and of its numerical pass."""
    turns = 3 if quick else 7
    out = {}
    for c, load, t in _worker_runs(_UNTRACEABLE, str(turns)):
        out[f"untraceable_{c}_load_1min"] = load
        out[f"untraceable_{c}_threads"] = t["threads"]
        for shape in ("64x128", "16x32"):
            for key in ("stacked", "one_a_call", "numerical_stacked", "numerical_one_a_call"):
                out[f"untraceable_{c}_numpy_tanh_{shape}_{key}_s"] = t[f"{shape}_{key}"]
            out[f"untraceable_{c}_numpy_tanh_{shape}_stacked_vs_one_a_call"] = (
                t[f"{shape}_stacked"] / t[f"{shape}_one_a_call"])
            out[f"untraceable_{c}_numpy_tanh_{shape}_numerical_stacked_vs_one_a_call"] = (
                t[f"{shape}_numerical_stacked"] / t[f"{shape}_numerical_one_a_call"])
    return out


BENCHES = {"jacobian": bench_jacobian, "checks": bench_checks, "app": bench_app,
           "plot": bench_plot, "startup": bench_startup, "soak": bench_soak,
           "isolation": bench_isolation, "display": bench_display, "busy": bench_busy,
           "landscape": bench_landscape, "landscape_grid": bench_landscape_grid,
           "engine": bench_engine, "untraceable": bench_untraceable,
           "appearance": bench_appearance}
DEFAULT = ("jacobian", "busy", "checks", "app", "isolation", "display", "plot", "startup",
           "appearance")
GOALS = {
    **{f"engine_{c}_killhead_vs_gradcheck": ">= 100" if c == "idle" else ">= 50"
       for c in ("idle", "busy")},
    **{f"engine_{c}_linear_vs_gradcheck": ">= 50" for c in ("idle", "busy")},
    **{f"engine_{c}_numpy_tanh_vs_full": "<= 1.1: untraceable, now / the full method"
       for c in ("idle", "busy")},
    **{f"engine_{c}_{name}_double_vs_gradgradcheck": ">= 10" for c in ("idle", "busy")
       for name in ("exp", "cube")},
    **{f"untraceable_{c}_numpy_tanh_64x128_stacked_vs_one_a_call":
       "<= 1.1: the full check, stacks / one point a call (as before)"
       for c in ("idle", "busy")},
    "jacobian_speedup_vs_gradcheck": ">= 50 (floor 20)",
    "jacobian_vs_lower_bound": "ours / 2n bare apply() calls",
    "busy_speedup_vs_gradcheck_worker": ">= 50: one core held by a busy process",
    "busy_worker_slowdown": "<= 2: one core held / as the machine was",
    "loop_throughput_vs_bare": ">= 0.95 (floor 0.9): best window vs best window",
    "loop_throughput_vs_bare_median": "median of windows vs the bare ones either side",
    "ui_max_stall_ms_running": "<= 16 (ceiling 50)",
    "ui_max_stall_ms_jacobian_2048": "<= 16 (ceiling 50)",
    **{f"ui_max_stall_queued_ms_{when}": "of the stall above, waiting for a core"
       for when in ("running", "jacobian_2048")},
    **{f"ui_max_stall_ran_ms_{when}": "of it, the GUI thread on a core (its own work; the rest "
       "it waited for the interpreter lock or I/O)" for when in ("running", "jacobian_2048")},
    **{f"ui_max_lock_wait_ms_{when}": "of any stall, the longest the GUI thread neither ran nor "
       "waited for a core: another thread held the interpreter lock (or I/O)"
       for when in ("running", "jacobian_2048")},
    "isolated_verdict_vs_thread_dense": "<= 1.1: a dense 2048-row check, worker process / thread",
    "isolated_verdict_vs_thread_killhead": "<= 1.1: a quick sparse check, kept worker "
                                           "process / thread",
    **{key: "a fresh process per check: what keeping one saves" for label in ("killhead", "dense")
       for key in (f"fresh_verdict_vs_thread_{label}", f"ui_stall_fresh_vs_thread_{label}")},
    **{key: "the kept child computing on while the window paints: what holding it buys"
       for label in ("killhead", "dense")
       for key in (f"unheld_verdict_vs_thread_{label}", f"ui_stall_unheld_vs_thread_{label}")},
    "ui_max_stall_ms_isolated_killhead": "<= 16 (ceiling 50), median of the runs",
    "ui_max_stall_ms_isolated_dense": "<= 16 (ceiling 50), median of the runs",
    **{f"ui_stall_isolated_vs_thread_{label}": "<= 1.1: median stall, process / thread"
       for label in ("killhead", "dense")},
    **{f"display_prep_vs_comparison_{label}": "worker's time after the comparison, for the "
       "view" for label in ("killhead", "dense")},
    "startup_overhead_s": "<= 0.5 (from compiled bytecode, as installed)",
    "ui_max_stall_ms_playing_landscape": "<= 50, as the Code tab's: median of the turns",
    "time_to_first_paint_s": "<= 1.5: launch -> the window's first paint",
    "time_to_first_verdict_s": "<= 4: launch -> the first verdict painted (killhead)",
    "time_to_first_paint_s_server_first": "the fork server started before the window's imports",
    "time_to_first_verdict_s_server_first": "the same",
    "import_torch_s": "the floor: `python -c 'import torch'` in the same turns",
    **{f"ui_longest_freeze_ms_torch_loading{way}": "the longest gap of a 5 ms timer on the GUI "
       "thread from the first paint until torch has arrived" for way in ("", "_server_first")},
    **{f"plot_{n}_points_stall_ms{busy}": "<= 16" for n in ("1m", "10m")
       for busy in ("", "_busy")},
    **{f"plot_{n}_points_stall_ms{busy}_all_points_one_path": "the way before: every point "
       "to pyqtgraph, one path" for n in ("1m", "10m") for busy in ("", "_busy")},
    **{f"plot_{n}_points_queued_ms{busy}": "of the stall above, waiting for a core"
       for n in ("1m", "10m") for busy in ("", "_busy")},
    **{f"ui_theme_switch_ms{busy}": "<= 250: F2's round, the longest freeze (high contrast's "
       "sheet polishes every widget)" for busy in ("", "_busy")},
    **{f"ui_zoom_step_ms{busy}": "<= 250: a zoom step in high contrast, the longest freeze"
       for busy in ("", "_busy")},
    **{f"ui_{what}_ran_ms{busy}": "of the freeze above, the GUI thread on a core (the rest "
       "it waited for one)" for what in ("theme_switch", "zoom_step") for busy in ("", "_busy")},
    "soak_rss_growth_mib": "flat",
    "diagnosis_vs_jacobian": "timed: runs only when a check fails",
    "check_double_backward_vs_jacobian": "timed: torch's gradgradcheck",
    **{f"check_{name}_vs_jacobian": "<= 1" for name in (
        "forward_ad", "batched_grad", "undefined_grad", "grad_dtypes", "nondeterminism",
        "opcheck")},
}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, Python " \
           f"{platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (under 2 minutes)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHES),
                        help="run only these (default: all but soak)")
    parser.add_argument("--turns", type=int, default=0,
                        help="isolation: turns of process and thread (default 4, --quick 2)")
    parser.add_argument("--against", metavar="REV",
                        help="run compare_commits.py REV: this tree against commit REV, each "
                             "measure marked against the old value and its goal")
    args = parser.parse_args(argv)
    if args.against:
        from compare_commits import main as compare

        return compare([args.against, *(["--only", *args.only] if args.only else [])])
    global TURNS
    TURNS = args.turns
    results: dict[str, float] = {}
    for name in args.only or DEFAULT:
        results.update(BENCHES[name](args.quick))
    if args.json:
        print(json.dumps({"machine": machine(), **results}, indent=2))
        return 0
    print(f"machine: {machine()}")
    width = max(len(k) for k in results)
    from compare_commits import against_goal

    for key, value in results.items():
        goal = GOALS.get(key, "")
        print(f"  {key:<{width}}  {value:10.3f}  {against_goal(goal, value)} {goal}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())


