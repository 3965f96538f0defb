"""User code runs in a child process: a segfault, abort, os._exit, a C-level hang or a memory
blow-up there ends that process only, and the caller says what happened and where."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from customgrad import cli
from customgrad.errors import Cancelled, CustomGradError, FunctionError
from customgrad.workers import isolation, memory, processes, sharing
from customgrad.workers.warm import WarmWorker

#: worker processes started, crashed and killed, spawned ones included
pytestmark = pytest.mark.slow


ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CRASH = DATA / "crash_functions.py"


def _line(path: Path, marker: str) -> int:
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if marker in text:
            return number
    raise AssertionError(marker)


def _cli(*argv: str, timeout: float = 120, env: dict | None = None
         ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "customgrad.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})

#: Windows has no fork server: there every child is spawned (a fresh interpreter). The same
#: path runs here when this variable chooses it.
SPAWN = {"CUSTOMGRAD_START_METHOD": "spawn"}


@pytest.mark.parametrize("name, signal_name, marker", [
    ("SegInForward", "SIGSEGV", "SEGFAULT_FORWARD"),
    ("SegInBackward", "SIGSEGV", "SEGFAULT_BACKWARD"),
    ("AbortInBackward", "SIGABRT", "ABORT_BACKWARD"),
])
def test_a_crash_in_the_function_is_exit_2_with_the_signal_and_the_line(name, signal_name,
                                                                          marker):
    proc = _cli("check", f"{CRASH}:{name}", "--shape", "x=3")
    assert proc.returncode == 2, proc.stderr
    phase = "forward" if "Forward" in name else "backward"
    line = _line(CRASH, marker)
    assert (f"customgrad: {name}.{phase} crashed the process with {signal_name} at "
            f"crash_functions.py:{line}") in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert "faulthandler" in proc.stderr  # the stack follows the paragraph
    assert f'crash_functions.py", line {line} in {phase}' in proc.stderr


@pytest.mark.parametrize(("how", "name"), [(signal.SIGTERM, "SleepInC"),
                                           (signal.SIGKILL, "SleepInC"),
                                           (signal.SIGKILL, "HoldsGil")],
                         ids=["TERM", "KILL", "KILL-holding-the-GIL"])
def test_a_killed_cli_leaves_no_process_behind(how, name, tmp_path):
    """The CLI killed by a signal it does not handle (a CI job's time limit) while the
    Function waits inside C: its worker process ends with it, and so the fork server; a
    caller that reads the CLI's output to the end gets the end (the worker held the pipes
    open, and that caller waited forever). A worker holding the GIL (whose watch thread never
    runs) too: it outlived the CLI at 100 % CPU, with the fork server (which it kept alive)."""
    psutil = pytest.importorskip("psutil")
    flag = tmp_path / "flag"
    proc = subprocess.Popen(
        [sys.executable, "-m", "customgrad.cli", "check", f"{CRASH}:{name}", "--shape",
         "x=3"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "CUSTOMGRAD_TEST_FLAG": str(flag)})
    left: list = []
    try:
        deadline = time.monotonic() + 120
        while not flag.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert flag.exists(), proc.communicate(timeout=60)
        left = psutil.Process(proc.pid).children(recursive=True)
        assert left  # the worker, and the fork server it came from where there is one
        os.kill(proc.pid, how)
        proc.communicate(timeout=60)  # every end of the pipes closed
        _gone, left = psutil.wait_procs(left, timeout=60)
        assert left == []
    finally:
        for process in [*left, psutil.Process(proc.pid) if proc.poll() is None else None]:
            if process is not None:
                with contextlib.suppress(psutil.Error):
                    process.kill()


def test_ctrl_c_while_the_fork_server_imports_torch_is_the_clis_alone():
    """Ctrl+C reaches every process of the terminal's group: the fork server, still importing
    torch, printed a KeyboardInterrupt traceback of twenty lines after "interrupted"."""
    psutil = pytest.importorskip("psutil")
    proc = subprocess.Popen([sys.executable, "-m", "customgrad.cli", "check", "killhead"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # a group of its own, as a terminal's job
    try:
        server = None
        deadline = time.monotonic() + 60
        while server is None and time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                server = next((c for c in psutil.Process(proc.pid).children()
                               if "forkserver" in " ".join(c.cmdline())), None)
            time.sleep(0.02)
        assert server is not None, proc.communicate(timeout=60)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl+C
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "customgrad: interrupted" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    psutil.wait_procs([server], timeout=60)
    assert not server.is_running()


def test_without_a_fork_server_a_spawned_child_reports_a_crash_the_same_way():
    proc = _cli("check", f"{CRASH}:SegInBackward", "--shape", "x=3", env=SPAWN)
    assert proc.returncode == 2, proc.stderr
    line = _line(CRASH, "SEGFAULT_BACKWARD")
    assert (f"customgrad: SegInBackward.backward crashed the process with SIGSEGV at "
            f"crash_functions.py:{line}") in " ".join(proc.stderr.split())
    assert f'crash_functions.py", line {line} in backward' in proc.stderr

#: KillHead from a file that writes down which process started the one loading it
_WHO_STARTED_ME = """
import os
from customgrad.targets.gallery.seeds import KillHead

with open({log!r}, "a") as log:
    log.write(open(f"/proc/{{os.getppid()}}/cmdline").read().replace("\\0", " ") + "\\n")


class Mine(KillHead):
    pass
"""


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_without_a_fork_server_run_steps_in_a_spawned_child(capsys, tmp_path):
    log = tmp_path / "started-by.txt"
    source = tmp_path / "who.py"
    source.write_text(_WHO_STARTED_ME.format(log=str(log)))
    argv = ["run", f"{source}:Mine", "--steps", "3", "--json", "--shape", "input=3x8"]
    assert cli.main([*argv, "--in-process"]) == 0
    here = json.loads(capsys.readouterr().out)
    log.unlink()
    spawned = _cli(*argv, env=SPAWN)
    assert spawned.returncode == 0, spawned.stderr
    assert json.loads(spawned.stdout) == here  # the seed loop's losses: bit for bit
    # loaded in a child the CLI started itself (spawned), not one of a fork server
    parent = log.read_text()
    assert "customgrad.cli" in parent and "forkserver" not in parent


def test_os_exit_in_backward_is_exit_2_naming_the_exit_code():
    proc = _cli("check", f"{CRASH}:ExitInBackward", "--shape", "x=3")
    assert proc.returncode == 2, proc.stderr
    assert "ExitInBackward ended the process with exit code 3" in " ".join(proc.stderr.split())


def test_a_segfault_at_import_is_exit_2_naming_the_module_line():
    target = DATA / "crash_at_import.py"
    proc = _cli("check", f"{target}:NeverDefined")
    assert proc.returncode == 2, proc.stderr
    line = _line(target, "SEGFAULT_IMPORT")
    assert f"SIGSEGV at crash_at_import.py:{line}" in " ".join(proc.stderr.split())


def test_run_isolates_too():
    proc = _cli("run", f"{CRASH}:SegInBackward", "--shape", "x=3", "--steps", "2")
    assert proc.returncode == 2, proc.stderr
    assert "SegInBackward.backward crashed the process with SIGSEGV" in " ".join(
        proc.stderr.split())


def test_in_process_keeps_the_old_behaviour_for_debuggers():
    proc = _cli("check", f"{CRASH}:SegInBackward", "--shape", "x=3", "--in-process")
    assert proc.returncode == -11  # the CLI itself died of the segfault, as before


def test_a_memory_blow_up_is_stopped_with_a_message():
    proc = _cli("check", f"{CRASH}:MemoryHog", "--shape", "x=3", "--memory-limit", "0.25")
    assert proc.returncode == 2, proc.stderr
    text = " ".join(proc.stderr.split())
    assert "MemoryHog used more than 0.2 GiB of memory for x=3 and was stopped" in text


def test_the_caller_goes_on_after_a_crash(capsys):
    """In one process: a crash, then a normal check and a normal run (output relayed)."""
    assert cli.main(["check", f"{CRASH}:SegInBackward", "--shape", "x=3"]) == 2
    err = capsys.readouterr().err
    assert "SegInBackward.backward crashed the process with SIGSEGV" in " ".join(err.split())
    assert cli.main(["check", "killhead"]) == 0
    assert "killhead" in capsys.readouterr().out.lower()
    assert cli.main(["run", "killhead", "--steps", "2"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def _untimed(data):
    """The report without its timings (the one thing that differs between two runs)."""
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if "seconds" not in k}
    if isinstance(data, list):
        return [_untimed(v) for v in data]
    return data


def test_the_isolated_and_in_process_reports_are_identical(capsys):
    assert cli.main(["check", "killhead_bug", "--json"]) == 1
    isolated = json.loads(capsys.readouterr().out)
    assert cli.main(["check", "killhead_bug", "--json", "--in-process"]) == 1
    assert _untimed(json.loads(capsys.readouterr().out)) == _untimed(isolated)


def _sleeping_job(flag: str, channel) -> None:
    import ctypes

    channel.context("SleepInC")
    Path(flag).write_text("asleep")
    ctypes.CDLL(None).sleep(1000)


def test_a_job_stuck_inside_c_is_stopped(tmp_path):
    flag = tmp_path / "flag"
    with pytest.raises(Cancelled):
        isolation.call(_sleeping_job, str(flag), should_stop=flag.exists)


def test_a_job_stopped_at_once_is_not_asked_for_its_stack(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(isolation, "stack_before_stop", lambda *a: asked.append(a) or "")
    monkeypatch.setattr(isolation, "STACK_AFTER_SECONDS", 3600.0)
    flag = tmp_path / "flag"
    with pytest.raises(Cancelled) as stopped:
        isolation.call(_sleeping_job, str(flag), should_stop=flag.exists)
    assert asked == [] and stopped.value.file is None and stopped.value.where() == ""


def test_a_job_stopped_after_a_while_names_the_users_line_it_was_on(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "STACK_AFTER_SECONDS", 0.0)
    flag = tmp_path / "flag"
    with pytest.raises(Cancelled) as stopped:
        isolation.call(_sleeping_job, str(flag), should_stop=flag.exists)
    here = Path(__file__)
    assert Path(stopped.value.file).resolve() == here.resolve()
    assert stopped.value.line == _line(here, "ctypes.CDLL(None).sleep(1000)")
    assert stopped.value.function == "_sleeping_job"
    assert stopped.value.where() == f" at {here.name}:{stopped.value.line} (in _sleeping_job)"


@pytest.mark.parametrize(("target", "marker", "method"), [
    (f"{DATA / 'faults_functions.py'}:FaultInfiniteLoop", "n += 1", "backward"),
    (f"{CRASH}:SleepInC", "ctypes.CDLL(None).sleep(1000)", "backward"),
    (f"{CRASH}:HoldsGil", 're.match(r"(a+)+$"', "backward"),  # inside C, holding the GIL
])
def test_the_cli_timeout_names_the_line_an_endless_function_was_on(target, marker, method):
    result = _cli("check", target, "--timeout", "1")
    assert result.returncode == 2, result.stderr
    file = Path(target.rsplit(":", 1)[0])
    lines = {_line(file, marker)}
    if marker == "n += 1":  # the loop is on one of its two lines when it is stopped
        lines.add(_line(file, "while n >= 0"))
    said = [f"at {file.name}:{n} (in {method})" for n in lines]
    words = " ".join(result.stderr.split())  # the message is wrapped to the terminal's width
    assert any(s in words for s in said), result.stderr
    assert "still running after --timeout 1 s" in words


def _tensor_job(n: int, channel) -> dict:
    channel.send(("half", n))
    print("from the child")
    return {"matrix": torch.arange(n * n, dtype=torch.float64).reshape(n, n)}


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_results_come_back_shared_and_messages_and_prints_are_relayed(capsys, configure,
                                                                      method):
    configure(spawn=method == "spawn")
    assert processes.context().get_start_method() == method
    seen = []
    result = isolation.call(_tensor_job, 64, on_message=seen.append)
    assert seen == [("half", 64)]
    assert capsys.readouterr().out == "from the child\n"
    matrix = result["matrix"]
    assert matrix.is_shared()  # through shared memory, not the pipe
    assert torch.equal(matrix, torch.arange(64 * 64, dtype=torch.float64).reshape(64, 64))


def _standing_job(channel) -> tuple[int, int, int, int]:
    """The child's priority, session, process group and id."""
    return os.getpriority(os.PRIO_PROCESS, 0), os.getsid(0), os.getpgid(0), os.getpid()


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no POSIX priorities here")
def test_a_windows_child_yields_the_processor_to_the_window_and_a_scripts_does_not():
    """The app asks for its workers to run ``nice`` below it, in its own session (Linux
    weighs a child in a session of its own against the whole window as an equal, whatever
    its nice: the window's thread waited for a core behind it); a script's or the CLI's
    child runs at their priority, in a session of its own."""
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    priority, session, group, pid = isolation.call(_standing_job, nice=5)
    assert priority == min(mine + 5, 19)
    assert session == os.getsid(0) and group == pid  # the window's session, a group of its own
    priority, session, group, pid = isolation.call(_standing_job)
    assert priority == mine
    assert session == group == pid  # a session (and group) of its own


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="no POSIX priorities here")
def test_a_warm_workers_children_run_as_low_as_it_was_made_to():
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    low, plain = WarmWorker(nice=5), WarmWorker()
    try:
        assert low.call(_standing_job, warm_key="x")[0] == min(mine + 5, 19)
        assert plain.call(_standing_job, warm_key="x")[0] == mine
    finally:
        low.end()
        plain.end()


def test_on_windows_a_child_lowers_its_priority_class_through_psutil(monkeypatch):
    """Windows has no nice: the priority class below normal, set through psutil."""
    import types

    calls = []

    class Process:
        def nice(self, value):
            calls.append(value)

    fake = types.SimpleNamespace(Process=Process, BELOW_NORMAL_PRIORITY_CLASS=16384,
                                 Error=OSError)
    monkeypatch.setitem(sys.modules, "psutil", fake)
    monkeypatch.delattr(os, "nice")
    isolation._lower_priority(5)
    assert calls == [16384]
    isolation._lower_priority(0)  # a script's child (or CUSTOMGRAD_CHILD_NICE=0): as it is
    assert calls == [16384]


def _environment_job(name: str, channel) -> str | None:
    return os.environ.get(name)


def test_a_child_made_while_another_starts_takes_the_parents_own_environment(monkeypatch):
    """While a new interpreter starts, PYTHONSAFEPATH and PYTHONPATH are set for it; a child
    made on another thread meanwhile took them for the parent's own environment (a kept
    child's key changed with them too). Its snapshot now waits for the start to finish."""
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    monkeypatch.setattr(processes, "_new_interpreter", lambda: True)
    inside, leave = threading.Event(), threading.Event()

    def starting():
        with processes.child_start():
            inside.set()
            leave.wait(60)

    starter = threading.Thread(target=starting, daemon=True)
    starter.start()
    assert inside.wait(60)
    seen = []
    maker = threading.Thread(target=lambda: seen.append(
        isolation.call(_environment_job, "PYTHONSAFEPATH")), daemon=True)
    maker.start()
    maker.join(2)  # time to take its snapshot, as it did before waiting for the start
    leave.set()
    starter.join(60)
    maker.join(120)
    assert seen == [None]


def _parent_job(channel) -> int:
    return os.getppid()


@pytest.mark.skipif(not processes.fork_server(), reason="no fork server here")
def test_the_fork_server_is_known_by_its_process_id():
    parent = isolation.call(_parent_job)  # a child of the fork server, started if need be
    assert processes.fork_server_pid() == parent
    assert not processes.fork_server_ended()


def test_a_child_sees_the_environment_as_it_is_now_not_as_the_fork_server_started(
        monkeypatch):
    isolation.call(_environment_job, "PATH")  # the fork server runs from here on
    monkeypatch.setenv("CUSTOMGRAD_TEST_SET_LATER", "yes")
    assert isolation.call(_environment_job, "CUSTOMGRAD_TEST_SET_LATER") == "yes"
    monkeypatch.delenv("CUSTOMGRAD_TEST_SET_LATER")
    assert isolation.call(_environment_job, "CUSTOMGRAD_TEST_SET_LATER") is None


def _hoarding_job(channel):
    hoard = []
    while True:  # 64 MiB each 50 ms: the limit is met within a few polls
        hoard.append(torch.ones(8 * 2**20, dtype=torch.float64))
        time.sleep(0.05)


def test_without_proc_the_memory_limit_asks_ps(monkeypatch):
    """macOS has no /proc (nor psutil, unless installed): the resident size comes from ps (a
    few times a second)."""
    if shutil.which("ps") is None:
        pytest.skip("no ps here")
    asked = []
    ps_resident = memory._ps_resident
    monkeypatch.setattr(memory, "_proc_resident", lambda pid: None)
    monkeypatch.setattr(memory, "psutil_or_none", lambda: None)
    monkeypatch.setattr(memory, "_ps_resident", lambda pid: asked.append(pid) or ps_resident(pid))
    with pytest.raises(isolation.MemoryLimitExceeded, match=r"more than 0\.2 GiB of memory"):
        isolation.call(_hoarding_job, memory_limit=2**28)
    assert asked


def test_on_windows_the_memory_limit_asks_psutil(monkeypatch):
    """Windows has neither /proc nor ps nor sysconf: psutil (a dependency there) says."""
    psutil = pytest.importorskip("psutil")
    machine = memory.machine_memory()
    asked = []
    psutil_resident = memory._psutil_resident
    monkeypatch.setattr(memory, "_proc_resident", lambda pid: None)
    monkeypatch.setattr(memory, "_ps_resident", lambda pid: None)
    monkeypatch.setattr(memory, "_psutil_resident",
                        lambda pid: asked.append(pid) or psutil_resident(pid))
    monkeypatch.delattr(os, "sysconf")
    # one count of the same pages, read two ways (sysconf's and /proc/meminfo's): 1 % apart
    assert memory.machine_memory() == pytest.approx(machine, rel=0.01)
    assert memory.machine_memory() == psutil.virtual_memory().total
    with pytest.raises(isolation.MemoryLimitExceeded, match=r"more than 0\.2 GiB of memory"):
        isolation.call(_hoarding_job, memory_limit=2**28)
    assert asked


@pytest.mark.parametrize("code, words", [
    (0xC0000005, "an access violation (0xC0000005, what Linux and macOS call SIGSEGV)"),
    # the same, read as a signed number
    (-0x3FFFFFFB, "an access violation (0xC0000005, what Linux and macOS call SIGSEGV)"),
    (0xC0000409, "a fail-fast abort (0xC0000409, what Linux and macOS call SIGABRT)"),
    (-11, "SIGSEGV"), (-6, "SIGABRT"), (3, None), (0, None), (None, None)])
def test_a_crash_is_named_by_its_signal_or_its_windows_exit_code(code, words):
    assert processes.crash_name(code) == words


def test_a_crash_on_windows_names_the_access_violation_and_the_users_line():
    """Windows ends a crashed process with an exit code, and faulthandler's text opens with
    "Windows fatal exception"; the message reads as a segfault's does elsewhere."""
    stack = ("Windows fatal exception: access violation\n\n"
             "Current thread 0x00001a2c (most recent call first):\n"
             '  File "/home/me/ext.py", line 12 in backward\n')
    error = isolation.describe_death(0xC0000005, stack, "SegInBackward")
    assert str(error).startswith(
        "SegInBackward.backward crashed the process with an access violation (0xC0000005, "
        "what Linux and macOS call SIGSEGV) at ext.py:12 (in backward).")
    assert "line 12" in error.stack and error.line == 12


def test_abort_on_windows_is_named_as_abort_not_as_an_exit():
    """abort() ends a Windows process with exit code 3, and faulthandler has said why."""
    stack = ("Fatal Python error: Aborted\n\n"
             "Current thread 0x00001a2c (most recent call first):\n"
             '  File "/home/me/ext.py", line 7 in backward\n')
    error = isolation.describe_death(3, stack, "AbortInBackward")
    assert str(error).startswith("AbortInBackward.backward crashed the process with SIGABRT "
                                 "at ext.py:7 (in backward).")
    assert "exit code" not in str(error)
    plain_exit = isolation.describe_death(3, "", "ExitInBackward")
    assert "ended the process with exit code 3" in str(plain_exit)


def _raising_job(channel):
    raise ValueError("plain error")


_RAISING_LINE = _raising_job.__code__.co_firstlineno + 1


def test_an_ordinary_exception_is_raised_in_the_caller_as_plain_data():
    """Its type's name, its message and its traceback's text: no class of the child's is
    unpickled here (a user's would import the user's module in the window)."""
    with pytest.raises(FunctionError, match=r"^ValueError: plain error$") as caught:
        isolation.call(_raising_job)
    assert 'raise ValueError("plain error")' in caught.value.details
    assert caught.value.file == __file__ and caught.value.line == _RAISING_LINE


def test_user_frame_skips_library_frames():
    stack = (f'Current thread 0x1 (most recent call first):\n'
             f'  File "{os.path.dirname(threading.__file__)}/ctypes/__init__.py", line 519 in '
             f'string_at\n'
             f'  File "/home/me/ext.py", line 12 in backward\n'
             f'  File "{isolation.__file__}", line 3 in call\n')
    assert isolation.user_frame(stack) == ("/home/me/ext.py", 12, "backward")


def test_sigkill_is_explained_as_from_outside_not_surely_memory():
    """An outside kill -9 was described as memory running out."""
    error = isolation.describe_death(-9, "", "Big")
    assert error.signal_name == "SIGKILL"
    assert "from outside: by the system when memory ran out, or by a person or a tool " \
        "(kill -9)" in str(error)


def test_the_default_memory_limit_is_half_the_machine_or_the_variable(configure):
    from customgrad.config import Config

    configure(memory_limit_gib=None, bad_memory_limit=None)
    assert isolation.default_memory_limit() == isolation.machine_memory() // 2
    configure(memory_limit_gib=1.5)
    assert isolation.default_memory_limit() == 3 * 2**29
    configure(memory_limit_gib=0.0)
    assert isolation.default_memory_limit() == 0  # no limit
    for bad in ("lots", "-1", "inf", "nan"):
        configure(**dataclasses.asdict(
            Config.from_environment({isolation.MEMORY_LIMIT_VARIABLE: bad})))
        with pytest.raises(CustomGradError, match=f"CUSTOMGRAD_MEMORY_LIMIT_GIB={bad} is not"):
            isolation.default_memory_limit()


def test_the_crashing_thread_is_found_among_others():
    """faulthandler lists the newest thread first; the crash is in "Current thread"."""
    stack = ('Fatal Python error: Segmentation fault\n\n'
             'Thread 0x00007f01 (most recent call first):\n'
             '  File "/usr/lib/python3.11/threading.py", line 324 in wait\n\n'
             'Current thread 0x00007f02 (most recent call first):\n'
             '  File "/home/me/flaky.py", line 16 in fault\n'
             '  File "/home/me/flaky.py", line 31 in backward\n')
    error = isolation.describe_death(-11, stack, "Flaky")
    assert str(error).startswith("Flaky.backward crashed the process with SIGSEGV at "
                                 "flaky.py:16 (in fault).")
    assert error.stack.startswith("Fatal Python error: Segmentation fault\n\nCurrent thread")
    assert "threading.py" not in error.stack


def test_a_job_that_cannot_travel_to_the_child_is_setup_failed():
    """Callers fall back to their own thread on SetupFailed (a constant of a user module, say),
    so a job that cannot be pickled must say so, not fail somewhere in multiprocessing."""
    with pytest.raises(processes.SetupFailed, match=r"could not be started: .*pickle"):
        isolation.call(_raising_job, lambda: None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_device_side_assert_poisons_only_its_worker(capsys):
    """After a device-side assert a process's CUDA context is unusable: the check that
    tripped it fails with a message, and the next check on CUDA gets a fresh worker."""
    code = cli.main(["check", f"{CRASH}:DeviceAssertInBackward", "--shape", "x=3",
                     "--device", "cuda"])
    assert code == 2
    assert "DeviceAssertInBackward" in " ".join(capsys.readouterr().err.split())
    assert cli.main(["check", "killhead", "--device", "cuda"]) == 0
    assert cli.main(["check", "killhead", "--device", "cuda"]) == 0


# -- a child kept between the jobs of one Function ---------------------------------------

@pytest.fixture
def keeping():
    """A warm worker of the test's own, ended after it (one that fails halfway leaves no
    kept child to the next)."""
    worker = WarmWorker()
    yield worker
    worker.end()


def _pid_job(channel) -> int:
    return os.getpid()


def _kept_pid(worker: WarmWorker) -> int:
    assert worker.process is not None
    return worker.process.pid


def test_jobs_with_one_keep_share_a_child_and_another_keep_gets_a_fresh_one(keeping):
    """(A kept child that was spawned: tests/playground/test_crashes.py, without a fork
    server.)"""
    first = keeping.call(_pid_job, warm_key="test one")
    process = keeping.process
    assert keeping.call(_pid_job, warm_key="test one") == first == _kept_pid(keeping)
    other = keeping.call(_pid_job, warm_key="test two")
    assert other != first and other == _kept_pid(keeping)
    assert not process.is_alive()  # one kept child at a time
    assert isolation.call(_pid_job) not in (first, other)  # no keep: a child of its own
    keeping.end()
    assert keeping.process is None


def test_two_warm_workers_keep_children_of_their_own():
    """A warm worker is an object its owner makes and ends: two keep a child each, and
    ending one leaves the other's."""
    one, two = WarmWorker(), WarmWorker()
    try:
        first, second = one.call(_pid_job, warm_key="same"), two.call(_pid_job, warm_key="same")
        assert first != second and (_kept_pid(one), _kept_pid(two)) == (first, second)
        two.end()
        assert two.process is None and one.call(_pid_job, warm_key="same") == first
    finally:
        one.end()
        two.end()


def _targets_job(channel) -> str:
    return type(channel.targets).__name__


def test_only_a_kept_childs_jobs_find_loaded_targets_on_their_channel(keeping):
    """A kept child loads a Function once for its jobs (they find it on the channel); a
    child for one job has nothing to remember it for."""
    assert keeping.call(_targets_job, warm_key="test targets") == "LoadedTargets"
    assert isolation.call(_targets_job) == "NoneType"


def _random_job(channel) -> tuple:
    import random

    return os.getpid(), torch.rand(3).tolist(), torch.randn(2).tolist(), random.random()


def test_a_kept_childs_jobs_draw_the_same_random_numbers_as_a_fresh_childs(keeping):
    """A Function that draws from torch's global generator (dropout, say) draws the same in
    a check repeated in the kept child as in a fresh child: the check is reproducible."""
    fresh = isolation.call(_random_job)
    kept = keeping.call(_random_job, warm_key="test random")
    assert kept[1:3] == fresh[1:3] and kept[0] != fresh[0]
    # Python's own generator is seeded afresh in each new process (os.register_at_fork), so
    # a fresh child draws anew each time; a kept child draws the same in each job
    assert keeping.call(_random_job, warm_key="test random") == kept
    keeping.end()


def _sent_job(channel) -> tuple:
    from customgrad.workers import sharing

    return len(sharing._SENT), torch.ones(64)  # a tensor the child copies to send


@pytest.mark.skipif(not sharing.available(), reason="no memory files here")
def test_a_kept_child_frees_what_it_sent_once_the_caller_has_it(keeping):
    assert keeping.call(_sent_job, warm_key="test sent")[0] == 0
    count, tensor = keeping.call(_sent_job, warm_key="test sent")
    assert count == 0  # the first job's copy was freed
    assert tensor.is_shared() and torch.equal(tensor, torch.ones(64))
    keeping.end()


def test_a_kept_child_is_ended_by_an_error_and_the_next_job_gets_a_fresh_one(keeping):
    first = keeping.call(_pid_job, warm_key="test error")
    with pytest.raises(FunctionError, match="ValueError: plain error"):
        keeping.call(_raising_job, warm_key="test error")
    assert keeping.process is None
    assert keeping.call(_pid_job, warm_key="test error") != first
    keeping.end()


def _segfault_job(channel):
    import ctypes

    ctypes.string_at(0)


def test_a_kept_child_that_crashes_is_replaced(keeping):
    first = keeping.call(_pid_job, warm_key="test crash")
    with pytest.raises(isolation.ProcessCrashed, match="SIGSEGV") as crash:
        keeping.call(_segfault_job, warm_key="test crash")
    # the stack ends at the job: not the kept child's own loop, nor multiprocessing's start
    assert "_segfault_job" in crash.value.stack
    for frame in ("_run_job", "_kept_main", "forkserver", "multiprocessing"):
        assert frame not in crash.value.stack
    assert keeping.call(_pid_job, warm_key="test crash") != first
    keeping.end()


def test_a_kept_child_that_died_while_idle_is_replaced(monkeypatch, keeping):
    """Killed from outside between jobs (and not yet seen dead): the next job goes to a fresh
    child, never to the caller's own thread (SetupFailed would send it there)."""
    first = keeping.call(_pid_job, warm_key="test vanished")
    process = keeping.process
    os.kill(first, signal.SIGKILL)
    process.join(30)
    monkeypatch.setattr(process, "is_alive", lambda: True)  # as if it had not been noticed
    assert keeping.call(_pid_job, warm_key="test vanished") not in (first, os.getpid())
    keeping.end()


def test_a_child_started_as_the_window_closes_is_not_kept(monkeypatch, keeping):
    """end() while a kept child is being started: that child runs its job, then ends."""
    start = isolation.start_child

    def closing_meanwhile(process):
        keeping.end()
        start(process)

    monkeypatch.setattr(isolation, "start_child", closing_meanwhile)
    pid = keeping.call(_pid_job, warm_key="test closing")
    assert keeping.process is None and pid != os.getpid()


def test_end_during_a_job_ends_the_child_after_it(tmp_path, keeping):
    flag = tmp_path / "flag"
    results = []
    thread = threading.Thread(target=lambda: results.append(
        keeping.call(_waiting_job, str(flag), warm_key="test end")), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while keeping.process is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process = keeping.process
        keeping.end()
    finally:
        flag.touch()
    thread.join(30)
    process.join(30)
    assert results == [process.pid] and not process.is_alive()


SEEDS_AT_TOP = """
import torch

torch.manual_seed(0)
DRAWN = torch.rand(3)


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return 2 * grad
"""


def _loading_job(path: str, channel) -> list:
    processes.load_target(path, None, channel.targets)
    return torch.rand(2).tolist()


def test_a_kept_child_draws_after_loading_as_a_fresh_child_does(tmp_path, keeping):
    """A module that seeds or draws at its top level runs it once in a kept child; the jobs
    after still draw what a fresh child draws after loading it."""
    path = tmp_path / "seeds.py"
    path.write_text(SEEDS_AT_TOP)
    then = time.time() - 60
    os.utime(path, (then, then))
    fresh = isolation.call(_loading_job, str(path))
    seeded = torch.Generator().manual_seed(0)  # what the top level left: seed 0, 3 drawn
    torch.rand(3, generator=seeded)
    assert fresh == torch.rand(2, generator=seeded).tolist()
    assert keeping.call(_loading_job, str(path), warm_key="test seeds") == fresh
    assert keeping.call(_loading_job, str(path), warm_key="test seeds") == fresh
    assert keeping.process is not None
    keeping.end()


def test_a_kept_child_is_ended_when_its_job_is_stopped(tmp_path, keeping):
    flag = tmp_path / "flag"
    first = keeping.call(_pid_job, warm_key="test stop")
    with pytest.raises(Cancelled):
        keeping.call(_sleeping_job, str(flag), warm_key="test stop", should_stop=flag.exists)
    assert keeping.call(_pid_job, warm_key="test stop") != first
    keeping.end()


def _tensors_job(tensors: list, channel) -> int:
    return len(tensors)


def _slow_handshakes() -> None:
    """In the child: each tensor it takes from the caller waits 0.1 s inside the hand-over
    (as a child descheduled on a busy machine might)."""
    from multiprocessing import connection

    answer = connection.answer_challenge

    def slowly(*args, **kwargs):
        time.sleep(0.1)
        return answer(*args, **kwargs)

    connection.answer_challenge = slowly


class _SlowHandshakes:
    def __reduce__(self):
        return _slow_handshakes, ()


def _slow_start() -> str:
    time.sleep(3.0)  # a child that takes seconds to start (spawned: it imports torch first)
    return "loaded"


class _SlowStart:
    def __reduce__(self):
        return _slow_start, ()


def _echo_job(value, channel):
    return value


def test_a_jobs_time_limit_starts_once_its_child_runs():
    """A time limit for the job (an import's, an inspection's) counts from ``on_started``,
    once the child runs: seconds of a spawned child's start-up are not the user's code's."""
    clock = {}

    def started():
        clock["deadline"] = time.monotonic() + 2.0  # far longer than the job itself

    def overdue():
        return time.monotonic() > clock.get("deadline", math.inf)

    assert isolation.call(_echo_job, _SlowStart(), on_started=started,
                          should_stop=overdue) == "loaded"
    assert "deadline" in clock


def test_a_stop_waits_for_the_kept_child_to_take_its_jobs_tensors(monkeypatch, keeping):
    """A kept child takes the job's tensors from this process over a connection each; ended
    in the middle of that, it would break this process's side of the hand-over (a traceback
    from multiprocessing's resource sharer, in the window's process). A stop waits the few
    milliseconds until it has them."""
    caught = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc: caught.append(exc))
    assert keeping.call(_pid_job, warm_key="test taking")  # the kept child, started
    start = time.monotonic()
    with pytest.raises(Cancelled):  # stopped once the child is inside the hand-over
        keeping.call(_tensors_job, [_SlowHandshakes(), torch.ones(4)], warm_key="test taking",
                     should_stop=lambda: time.monotonic() > start + 0.05)
    time.sleep(0.5)  # the resource sharer's thread would have reported by now
    assert caught == []


def test_a_kept_child_is_not_reused_in_another_environment(monkeypatch, keeping):
    first = keeping.call(_pid_job, warm_key="test environment")
    monkeypatch.setenv("CUSTOMGRAD_TEST_SET_LATER", "yes")
    assert keeping.call(_environment_job, "CUSTOMGRAD_TEST_SET_LATER",
                          warm_key="test environment") == "yes"
    assert _kept_pid(keeping) != first
    keeping.end()


def _module_job(folder: str, channel) -> tuple:
    sys.path.insert(0, folder)
    try:
        import kept_helper
    finally:
        sys.path.remove(folder)
    return os.getpid(), kept_helper.VALUE


def _write_module(folder: Path, value: int, age: float) -> None:
    path = folder / "kept_helper.py"
    path.write_text(f"VALUE = {value}\n")
    then = time.time() - age  # as if written long before the job
    os.utime(path, (then, then))


def test_a_kept_child_whose_imported_file_changed_is_replaced(tmp_path, keeping):
    """A Function's file is part of its keep, but not the modules it imports: the child
    notices that one has changed on disk and a fresh child imports it again."""
    _write_module(tmp_path, 1, age=60)
    first, value = keeping.call(_module_job, str(tmp_path), warm_key="test stale")
    assert value == 1
    assert keeping.call(_module_job, str(tmp_path), warm_key="test stale") == (first, 1)
    _write_module(tmp_path, 22, age=30)
    pid, value = keeping.call(_module_job, str(tmp_path), warm_key="test stale")
    assert (pid != first, value) == (True, 22)
    keeping.end()


def _writing_module_job(folder: str, channel) -> tuple:
    Path(folder, "kept_helper.py").write_text("VALUE = 1\n")  # saved as the job runs
    return _module_job(folder, channel)


def test_a_module_written_while_its_job_ran_is_not_trusted(tmp_path, keeping):
    """A file changed about when the job imported it may not be what ran: not kept."""
    first, _value = keeping.call(_writing_module_job, str(tmp_path), warm_key="test new file")
    assert keeping.process is None
    assert keeping.call(_module_job, str(tmp_path), warm_key="test new file")[0] != first
    keeping.end()


def _waiting_job(flag: str, channel) -> int:
    while not os.path.exists(flag):
        time.sleep(0.01)
    return os.getpid()


def test_a_job_that_finds_the_kept_child_busy_gets_a_child_of_its_own(tmp_path, keeping):
    flag = tmp_path / "flag"
    kept = keeping.call(_pid_job, warm_key="test busy")
    results = []
    thread = threading.Thread(target=lambda: results.append(
        keeping.call(_waiting_job, str(flag), warm_key="test busy")))
    thread.daemon = True
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not keeping.busy and time.monotonic() < deadline:
            time.sleep(0.01)
        assert keeping.busy
        assert keeping.call(_pid_job, warm_key="test busy") != kept  # not waiting for it
    finally:
        flag.touch()
    thread.join(30)
    assert results == [kept]
    assert keeping.call(_pid_job, warm_key="test busy") == kept  # kept still
    keeping.end()


def test_an_idle_kept_child_ends_after_a_while(monkeypatch, keeping):
    monkeypatch.setattr(keeping, "keep_seconds", 0.2)
    keeping.call(_pid_job, warm_key="test idle")
    process = keeping.process
    process.join(30)
    assert not process.is_alive() and keeping.process is None


def test_a_job_a_kept_child_cannot_take_is_setup_failed(monkeypatch, keeping):
    """A job the child cannot unpickle (a function of a module it does not have) fails as
    SetupFailed, on which callers work on their own thread, and ends the child."""
    import __main__

    def job(channel):
        return 1

    # pickled by reference to the caller's __main__, which a child does not import
    job.__module__, job.__qualname__ = "__main__", "customgrad_test_not_there"
    monkeypatch.setattr(__main__, "customgrad_test_not_there", job, raising=False)
    keeping.call(_pid_job, warm_key="test unpickle")
    with pytest.raises(processes.SetupFailed, match="could not start"):
        keeping.call(job, warm_key="test unpickle")
    assert keeping.process is None


def test_what_a_kept_child_could_not_take_goes_to_a_fresh_child(monkeypatch, keeping):
    """Never straight to the caller's thread (SetupFailed): there a Function that crashes
    would take the caller (the window) with it. A fresh child decides."""
    def refused(kept, *args):
        keeping._release(kept, False)
        raise processes.SetupFailed("the worker process could not take the job")

    keeping.call(_pid_job, warm_key="test refused")
    monkeypatch.setattr(keeping, "_call", refused)
    assert keeping.call(_pid_job, warm_key="test refused") not in (os.getpid(), None)


def _cuda_job(channel) -> int:
    torch.zeros(1, device="cuda")
    return os.getpid()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_child_that_used_cuda_is_not_kept(keeping):
    """A device-side error can leave a CUDA context unusable without raising: a child that
    used CUDA is never given another job."""
    first = keeping.call(_cuda_job, warm_key="test cuda")
    assert keeping.process is None
    assert keeping.call(_pid_job, warm_key="test cuda") != first
    keeping.end()
