"""User code runs in a child process: a segfault, abort, os._exit, a C-level hang or a memory
blow-up there ends that process only, and the caller says what happened and where."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from customgrad import cli, isolation, processes
from customgrad.errors import Cancelled, CustomGradError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CRASH = DATA / "crash_functions.py"


def _line(path: Path, marker: str) -> int:
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if marker in text:
            return number
    raise AssertionError(marker)


def _cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "customgrad.cli", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


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


def _tensor_job(n: int, channel) -> dict:
    channel.send(("half", n))
    print("from the child")
    return {"matrix": torch.arange(n * n, dtype=torch.float64).reshape(n, n)}


def test_results_come_back_shared_and_messages_and_prints_are_relayed(capsys):
    seen = []
    result = isolation.call(_tensor_job, 64, on_message=seen.append)
    assert seen == [("half", 64)]
    assert capsys.readouterr().out == "from the child\n"
    matrix = result["matrix"]
    assert matrix.is_shared()  # through shared memory, not the pipe
    assert torch.equal(matrix, torch.arange(64 * 64, dtype=torch.float64).reshape(64, 64))


def _niceness_job(channel) -> int:
    return os.nice(0)


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no POSIX nice here")
def test_a_child_yields_the_processor_to_the_window_that_waits_on_it():
    assert isolation.call(_niceness_job) == min(os.nice(0) + isolation.NICE, 19)


def _environment_job(name: str, channel) -> str | None:
    return os.environ.get(name)


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
    """macOS has no /proc: the resident size comes from ps (a few times a second)."""
    if shutil.which("ps") is None:
        pytest.skip("no ps here")
    asked = []
    ps_resident = isolation._ps_resident
    monkeypatch.setattr(isolation, "_proc_resident", lambda pid: None)
    monkeypatch.setattr(isolation, "_ps_resident",
                        lambda pid: asked.append(pid) or ps_resident(pid))
    with pytest.raises(isolation.MemoryLimitExceeded, match=r"more than 0\.2 GiB of memory"):
        isolation.call(_hoarding_job, memory_limit=2**28)
    assert asked


def _raising_job(channel):
    raise ValueError("plain error")


def test_an_ordinary_exception_is_raised_in_the_caller():
    with pytest.raises(ValueError, match="plain error"):
        isolation.call(_raising_job)


def test_user_frame_skips_library_frames():
    stack = (f'Current thread 0x1 (most recent call first):\n'
             f'  File "{os.path.dirname(threading.__file__)}/ctypes/__init__.py", line 519 in '
             f'string_at\n'
             f'  File "/home/me/ext.py", line 12 in backward\n'
             f'  File "{isolation.__file__}", line 3 in call\n')
    assert isolation.user_frame(stack) == ("/home/me/ext.py", 12, "backward")


def test_sigkill_is_explained_as_memory_running_out():
    error = isolation.describe_death(-9, "", "Big")
    assert error.signal_name == "SIGKILL"
    assert "memory runs out" in str(error)


def test_the_default_memory_limit_is_half_the_machine_or_the_variable(monkeypatch):
    monkeypatch.delenv(isolation.MEMORY_LIMIT_VARIABLE, raising=False)
    assert isolation.default_memory_limit() == isolation.machine_memory() // 2
    monkeypatch.setenv(isolation.MEMORY_LIMIT_VARIABLE, "1.5")
    assert isolation.default_memory_limit() == 3 * 2**29
    monkeypatch.setenv(isolation.MEMORY_LIMIT_VARIABLE, "0")
    assert isolation.default_memory_limit() == 0  # no limit
    for bad in ("lots", "-1", "inf", "nan"):
        monkeypatch.setenv(isolation.MEMORY_LIMIT_VARIABLE, bad)
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
