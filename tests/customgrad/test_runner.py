"""The descent loop in a child process (customgrad.workers.runner), without Qt: same numbers as on a
thread, steered by messages, and a Function stuck or crashing there never takes the caller."""

from __future__ import annotations

import gc
import os
import pickle
import textwrap
import threading
import time

import numpy as np
import pytest
import torch

from customgrad.errors import Cancelled, FunctionError
from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.loader import resolve
from customgrad.training.descent import StepRecord, pack_records, unpack_records
from customgrad.workers import isolation, processes, runner


def problem(target="killhead", **changes):
    settings = Settings(target=target, steps=0, **changes)
    return build(settings, resolve(target))


class Remote:
    """A RemoteLoop with its reader, driven the way the app drives it."""

    def __init__(self, prob, nice: int = 0):
        self.ctrl = runner.LoopControl(lr=prob.settings.lr)
        self.remote = runner.RemoteLoop(prob, nice=nice)
        self.ctrl.remote = self.remote
        self.reader = runner.remote_loop(self.remote, self.ctrl)
        self.records: list[StepRecord] = []
        self.snapshots: list = []
        self.ctrl.poke()

    def pump_until(self, condition, timeout=20.0):
        deadline = time.perf_counter() + timeout
        for batch in self.reader:
            self.records += batch.records
            if batch.snapshot is not None:
                self.snapshots.append(batch.snapshot)
            if condition():
                return
            if time.perf_counter() > deadline:
                raise TimeoutError
        raise AssertionError("the loop ended")

    def steps(self, n):
        self.ctrl.pending += n
        self.ctrl.poke()
        want = len(self.records) + n
        self.pump_until(lambda: len(self.records) >= want)

    def stop(self):
        self.ctrl.stop = True
        self.ctrl.poke()
        list(self.reader)
        assert not self.remote.process.is_alive()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_remote_steps_equal_the_thread_loop_bit_for_bit(configure, method):
    """Spawned where there is no fork server (Windows; chosen here by the variable)."""
    configure(spawn=method == "spawn")
    prob = problem(seed=3)
    remote = Remote(prob)
    assert remote.remote.process.__class__.__name__ == {
        "forkserver": "ForkServerProcess", "spawn": "SpawnProcess"}[method]
    remote.steps(7)
    descent = prob.descent()
    local = [descent.step() for _ in range(7)]
    assert [r.loss for r in remote.records] == [r.loss for r in local]
    assert [r.step for r in remote.records] == list(range(7))
    for mine, theirs in zip(remote.records, local):
        # norms travel computed for a whole batch at once: equal up to rounding
        assert mine.grad_norms["input"] == pytest.approx(theirs.grad_norms["input"], rel=1e-6)
    remote.stop()


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no POSIX priorities here")
def test_the_loop_process_starts_as_every_worker_process_does():
    """The descent loop's child is set up as a job's (isolation.prepare_child): as low as
    its owner asks (the window's, below the window), among others (it had its own copy,
    without it)."""
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    for nice, wanted in ((5, min(mine + 5, 19)), (0, mine)):
        r = Remote(problem(), nice=nice)
        try:
            r.steps(1)
            assert os.getpriority(os.PRIO_PROCESS, r.remote.process.pid) == wanted
        finally:
            r.stop()


def test_pending_steps_then_idle_and_a_snapshot_of_the_current_point():
    prob = problem(seed=1)
    remote = Remote(prob)
    remote.steps(3)  # returns once the 3 records are in: asked for 3, does 3, then idles
    remote.ctrl.want_snapshot = True
    remote.ctrl.poke()
    remote.pump_until(lambda: remote.snapshots)
    assert len(remote.records) == 3
    descent = prob.descent()
    for _ in range(3):
        descent.step()
    expected = descent.current_args()
    got = remote.snapshots[0]
    # bit for bit: the child runs the same steps with the same torch on the same CPU
    assert torch.equal(got[0], expected[0]) and got[1] == expected[1]
    remote.stop()


def test_lr_change_and_step_limit_reach_the_child():
    prob = problem(seed=2)
    remote = Remote(prob)
    remote.steps(2)
    remote.ctrl.lr = 0.25
    remote.ctrl.max_steps = 5
    remote.ctrl.running = True
    remote.ctrl.poke()
    remote.pump_until(lambda: len(remote.records) >= 5 and not remote.ctrl.running)
    assert [r.lr for r in remote.records] == [1.0, 1.0, 0.25, 0.25, 0.25]
    assert len(remote.records) == 5
    descent = prob.descent()
    local = [descent.step().loss for _ in range(2)]
    descent.lr = 0.25
    local += [descent.step().loss for _ in range(3)]
    assert [r.loss for r in remote.records] == local
    remote.stop()


def _file_target(tmp_path, body: str, name="fn.py", cls=None):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path) + (f":{cls}" if cls else "")


DOUBLE = '''
import torch


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        {backward}
'''


def test_the_child_runs_the_code_that_was_loaded_not_the_file_edited_since(tmp_path):
    spec = _file_target(tmp_path, DOUBLE.format(backward="return grad * 2"))
    prob = problem(spec)
    (tmp_path / "fn.py").write_text(DOUBLE.format(backward="raise ValueError('edited')"))
    remote = Remote(prob)
    remote.steps(2)
    assert all(r.grad_norms["x"] > 0 for r in remote.records)
    remote.stop()


def test_an_error_in_the_child_names_the_users_file_and_line(tmp_path):
    spec = _file_target(tmp_path, DOUBLE.format(backward="raise ValueError('broken')"))
    prob = problem(spec)
    remote = Remote(prob)
    remote.ctrl.running = True
    remote.ctrl.poke()
    with pytest.raises(FunctionError, match="broken") as info:
        remote.pump_until(lambda: False)
    assert info.value.file == spec and info.value.line == 12
    assert not remote.remote.process.is_alive()


def test_a_step_stuck_in_c_is_ended_with_the_process(tmp_path):
    inside = tmp_path / "inside-backward"
    spec = _file_target(tmp_path, DOUBLE.format(
        backward=f"import pathlib, time; pathlib.Path({str(inside)!r}).touch(); time.sleep(3600)"))
    remote = Remote(problem(spec))
    remote.ctrl.running = True
    remote.ctrl.poke()
    ended = []

    def read():  # as the app's worker thread does: the reader learns the child is ready
        try:
            remote.pump_until(lambda: False)
        except BaseException as exc:
            ended.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 60  # only bounds a broken test; the file says when
    while not (inside.exists() and remote.ctrl.ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert inside.exists() and remote.ctrl.ready
    remote.ctrl.running = False
    remote.ctrl.poke()  # never taken: the child is inside backward
    time.sleep(0.3)
    assert remote.ctrl.stuck_for() > 0.2
    remote.ctrl.interrupt()
    # the child is ended, not waited for: the reader ends although backward sleeps an hour
    reader.join(60)
    assert [type(e) for e in ended] == [Cancelled]
    assert not remote.remote.process.is_alive()


def test_a_loop_process_still_starting_is_not_stuck():
    """Until the child has loaded the Function (seconds for a spawned one), an instruction
    it has not taken is no sign of a stuck step."""
    ctrl = runner.LoopControl()
    ctrl.remote = object()
    ctrl.unacked_since = time.perf_counter() - 5
    assert ctrl.stuck_for() == 0.0
    ctrl.loaded()
    ctrl.unacked_since -= 5  # five seconds later, still not taken: stuck
    assert ctrl.stuck_for() >= 5


class _Sent:
    """A child process's end of the pipe: what it was sent."""

    def __init__(self):
        self.messages = []

    def send(self, message):
        self.messages.append(message)


def test_each_command_sends_what_it_changed_in_one_message():
    ctrl = runner.LoopControl()
    ctrl.remote = sent = _Sent()
    ctrl.play()
    ctrl.step(3)
    ctrl.snapshot()
    ctrl.set_lr(0.25)
    ctrl.set_rate(-2)  # no negative rate: as fast as possible
    ctrl.configure(check_every=5, max_steps=40, explain=1)
    ctrl.pause()
    running, stepped, snapshot, lr, rate, knobs, paused = sent.messages
    assert running["running"] and running["steps"] == 0
    assert stepped["steps"] == 3 and ctrl.pending == 0  # steps travel once
    assert snapshot["snapshot"] and not ctrl.want_snapshot and snapshot["steps"] == 0
    assert (lr["lr"], rate["rate"]) == (0.25, 0.0)
    assert (knobs["check_every"], knobs["max_steps"], knobs["explain"]) == (5, 40, True)
    assert not paused["running"] and paused["lr"] == 0.25
    assert [m["seq"] for m in sent.messages] == list(range(1, 8))
    with pytest.raises(AttributeError, match="no knob 'speed'"):
        ctrl.configure(speed=3)
    ctrl.end()
    assert sent.messages[-1]["stop"] and not sent.messages[-1]["running"]


def test_a_loop_on_a_thread_wakes_at_each_command():
    ctrl = runner.LoopControl()
    ctrl.step(2)
    assert ctrl.wake.is_set() and ctrl.pending == 2  # a thread shares the fields
    ctrl.wake.clear()
    ctrl.set_lr(0.5)
    assert ctrl.wake.is_set() and ctrl.lr == 0.5


def test_a_loop_resumed_on_a_new_control_is_asked_what_the_old_one_was():
    old = runner.LoopControl()
    old.remote = _Sent()
    old.play()
    old.step(2)
    old.snapshot()
    new = runner.LoopControl()
    new.resume(old)
    assert new.running and new.pending == 2 and new.want_snapshot


def test_a_crash_in_the_child_is_reported_not_shared(tmp_path):
    spec = _file_target(tmp_path, DOUBLE.format(
        backward="import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"))
    remote = Remote(problem(spec))
    remote.ctrl.running = True
    remote.ctrl.poke()
    with pytest.raises(FunctionError, match=r"crashed.*SIGSEGV") as caught:
        remote.pump_until(lambda: False)
    # faulthandler's stack gives the line, as a check's crash does (line 12 of DOUBLE)
    assert "Double.backward crashed the process with SIGSEGV at fn.py:12" in str(caught.value)
    assert caught.value.line == 12


def test_the_loop_process_is_stopped_past_the_memory_limit(tmp_path, configure):
    """It had none: it reached 3.2 GiB with CUSTOMGRAD_MEMORY_LIMIT_GIB=1."""
    configure(memory_limit_gib=1.0)
    spec = _file_target(tmp_path, DOUBLE.format(
        backward="HOARD.append(torch.ones(1 << 27)); return grad * 2") + "HOARD = []\n")
    remote = Remote(problem(spec))
    remote.ctrl.running = True
    remote.ctrl.poke()
    with pytest.raises(isolation.MemoryLimitExceeded, match=r"used more than 1\.0 GiB"):
        remote.pump_until(lambda: False, timeout=60)
    remote.remote.process.join(5)
    assert not remote.remote.process.is_alive()


CYCLIC = '''
import torch


class Leaky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        junk = [torch.ones(1 << 20)]  # 4 MiB that only the cycle collector can free
        junk.append(junk)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2
'''


def _rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_the_child_still_frees_cyclic_garbage_between_frames(tmp_path):
    """The child turns automatic collection off for speed and collects after each batch:
    a Function leaving 4 MiB in a reference cycle at each of 150 steps (600 MiB if never
    collected) keeps the child's memory flat, and the caller's collector stays on."""
    remote = Remote(problem(_file_target(tmp_path, CYCLIC)))
    remote.steps(5)
    before = _rss_mib(remote.remote.process.pid)
    remote.ctrl.rate = 100.0  # about one step a frame
    remote.steps(150)
    grown = _rss_mib(remote.remote.process.pid) - before
    remote.stop()
    assert grown < 150, f"the child grew {grown:.0f} MiB"
    assert gc.isenabled()


def test_without_a_fork_server_children_are_spawned(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert not processes.fork_server()
    assert processes.context().get_start_method() == "spawn"
    processes.warm()  # nothing to start


def test_portable_targets():
    assert processes.portable(resolve("killhead"))
    assert processes.portable(resolve("customgrad.targets.gallery.seeds:KillHead"))
    target = resolve("killhead")
    from customgrad.targets.loader import Target

    assert not processes.portable(Target("made up", target.function, "made up"))


def test_step_record_norms_lazy_batched_and_pickled():
    descent = problem(seed=4).descent()
    records = [descent.step() for _ in range(5)]
    eager = problem(seed=4).descent()
    expected = [eager.step().grad_norms["input"] for _ in range(5)]
    assert records[0].grad_norms["input"] == expected[0]  # read lazily: exactly the same
    copy = pickle.loads(pickle.dumps(records[3]))
    assert copy == records[3] and copy.grad_norms == records[3].grad_norms
    batch = pickle.loads(pickle.dumps(runner.Batch(records, paused=True)))
    assert batch.paused and batch.snapshot is None
    # the window reads the columns as arrays and the last record alone: no records made
    assert len(batch) == 5
    assert batch.steps.dtype == np.float64 and batch.steps.tolist() == list(range(5))
    assert batch.losses.tolist() == [r.loss for r in records]
    last = batch.last
    assert (last.step, last.loss, last.lr) == (4, records[4].loss, records[4].lr)
    assert last.grad_norms["input"] == pytest.approx(expected[4], rel=1e-6)
    assert batch._records is None
    assert [r.step for r in batch.records] == list(range(5))
    assert [r.loss for r in batch.records] == [r.loss for r in records]
    assert [r.lr for r in batch.records] == [r.lr for r in records]
    # the batch's norms are one reduction for all five: equal up to rounding
    assert [r.grad_norms["input"] for r in batch.records] == pytest.approx(expected, rel=1e-6)


def test_records_travel_as_columns_unless_they_cannot():
    prob = problem("linear", seed=1)
    descent = prob.descent()
    records = [descent.step() for _ in range(4)]
    packed = pack_records(records)
    assert isinstance(packed, tuple) and packed[3] == ["weight", "bias"]
    back = unpack_records(packed)
    assert [r.step for r in back] == [r.step for r in records]
    for mine, theirs in zip(back, records):
        assert mine.grad_norms == pytest.approx(theirs.grad_norms, rel=1e-6)
    descent.keep_detail = True
    detailed = [descent.step()]
    assert pack_records(detailed) is detailed  # step details travel as objects
    # a gradient that vanishes in one record: that record's norm is 0, the others' exact
    mixed = [descent.step() for _ in range(3)]
    assert mixed[1]._names == ("weight", "bias")
    mixed[1]._grads = (mixed[1]._grads[0], None)
    norms = [r.grad_norms["bias"] for r in unpack_records(pack_records(mixed))]
    assert norms[1] == 0.0 and norms[0] > 0 and norms[2] > 0
    assert pack_records([]) == []


def test_a_child_that_cannot_load_the_problem_says_so_before_any_step(tmp_path):
    spec = _file_target(tmp_path, DOUBLE.format(backward="return grad * 2"))
    prob = problem(spec)
    # as if the Function came from a module the child cannot import by its name
    prob.target = type(prob.target)("nowhere_module_xyz:Double", prob.function, "Double")
    remote = Remote(prob)
    remote.ctrl.pending = 2
    remote.ctrl.poke()
    with pytest.raises(processes.SetupFailed, match="nowhere_module_xyz"):
        remote.pump_until(lambda: False)
    assert remote.ctrl.sent_steps == 2 and not remote.records


def test_objects_of_a_user_module_are_not_sent_to_the_child(tmp_path):
    spec = _file_target(tmp_path, DOUBLE.format(backward="return grad * 2") +
                        "\n\nclass Marker:\n    pass\n")
    prob = problem(spec)
    module = __import__("sys").modules[prob.function.__module__]
    prob.args = [*prob.args, module.Marker()]
    with pytest.raises(pickle.PicklingError):
        runner.RemoteLoop(prob)


class _SlowDescent:
    """Steps that each take longer than a frame."""

    lr, keep_detail, step_count = 1.0, False, 0

    def step(self):
        time.sleep(1.5 * runner.FRAME_SECONDS)
        self.step_count += 1
        return StepRecord(self.step_count - 1, 1.0, {}, self.lr)

    def current_args(self):
        return []


def test_a_step_longer_than_a_frame_is_sent_on_its_own():
    """Each batch is sent as soon as its frame is over: slow steps reach the window one by
    one, not in pairs (a step started just before the frame's end is not followed by
    another before the batch goes)."""
    ctrl = runner.LoopControl(running=True, max_steps=4)
    sizes = []
    for batch in runner.run_loop(_SlowDescent(), ctrl):
        sizes.append(len(batch.records))
        if batch.paused:
            break
    assert sizes == [1, 1, 1, 1]
