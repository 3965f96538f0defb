"""Worker processes trust nothing of the folder they were launched from, and the caller's
process keeps its own path: the standard library is the standard library there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from customgrad.errors import TargetError
from customgrad.workers import processes

#: worker processes and the CLI as programs: launch folders, signals, forks
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

#: what a module of the launch folder does when it is imported: leaves a mark, says so
SHADOW = """import os
open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                  __name__ + "-imported-" + str(os.getpid())), "w").close()
raise ImportError("the launch folder's " + __name__ + ".py was imported")
"""


def launcher(folder: Path) -> Path:
    """A script elsewhere that starts the CLI of this checkout, as the installed
    ``customgrad`` command does (its own folder, not the current one, first on the path)."""
    folder.mkdir()
    script = folder / "customgrad_command.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                      "from customgrad.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    return script


def test_a_module_in_the_launch_folder_is_never_imported_by_a_worker(tmp_path):
    """Python 3.11's fork server keeps '' first on its path: a string.py in the folder the
    CLI ran from was imported there (a raw traceback, "could not start: EOFError")."""
    launch = tmp_path / "launch"
    launch.mkdir()
    for name in ("string", "difflib", "csv"):  # imported by torch, not at the interpreter's start
        (launch / f"{name}.py").write_text(SHADOW)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUSTOMGRAD_START_METHOD", "PYTHONSAFEPATH", "PYTHONPATH")}
    proc = subprocess.run([sys.executable, str(launcher(tmp_path / "bin")), "check", "killhead"],
                          cwd=launch, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "PASSED" in proc.stdout
    assert sorted(p.name for p in launch.iterdir()) == ["csv.py", "difflib.py", "string.py"]


def test_the_child_path_leaves_out_the_current_folder_but_keeps_the_checkout(tmp_path,
                                                                               monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), ".", *sys.path])
    path = processes.child_path()
    assert "" not in path and str(tmp_path.resolve()) not in path
    assert all(os.path.isabs(p) for p in path)
    import customgrad

    home = os.path.dirname(os.path.dirname(os.path.realpath(customgrad.__file__)))
    monkeypatch.chdir(home)  # a checkout run from its root: its packages stay importable
    assert home in processes.child_path()
    # where only '' names it (python -c there), its children imported another copy installed
    monkeypatch.setattr(sys, "path", ["", *(p for p in sys.path if os.path.realpath(p) != home)])
    assert home in processes.child_path()



def test_a_file_run_in_a_worker_leaves_the_callers_path_as_it_was(tmp_path, monkeypatch):
    """The window's sys.path once got the user's folder: torch later imported triton.py or
    tabulate.py from there (and a crashing one ended the window)."""
    from customgrad.function import shadow
    from customgrad.targets import loader

    monkeypatch.setattr(loader, "run_module_code",
                        lambda run, label, origin: shadow.Shadowed([], {}))
    path = tmp_path / "mine.py"
    path.write_text("import torch\n")
    before = list(sys.path)
    loader.load_file(path)
    assert sys.path == before
    path.write_text("raise ValueError('no')\n")
    monkeypatch.setattr(loader, "run_module_code", lambda run, label, origin: run())
    with pytest.raises(TargetError, match="ValueError: no"):
        loader.load_file(path)
    assert sys.path == before


KILLS_GROUP = """import os
import signal

import torch


class KillsGroup(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        os.kill(0, signal.SIGTERM)
        return grad_output * 2
"""


def test_a_signal_to_the_process_group_reaches_the_worker_only(tmp_path):
    """Workers shared the caller's process group: os.kill(0, SIGTERM) in a backward ended
    the window (or the CLI, without a word)."""
    path = tmp_path / "kills_group.py"
    path.write_text(KILLS_GROUP)
    # a session of its own: were the worker in the CLI's group, the test's stays unharmed
    proc = subprocess.run([sys.executable, "-m", "customgrad", "check", f"{path}:KillsGroup"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180,
                          start_new_session=True)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    line = KILLS_GROUP.splitlines().index("        os.kill(0, signal.SIGTERM)") + 1
    assert f"KillsGroup.backward crashed the process with SIGTERM at kills_group.py:{line}" \
        in " ".join(proc.stderr.split()), proc.stderr


STOPS_ITSELF = KILLS_GROUP.replace("KillsGroup", "StopsItself").replace(
    "os.kill(0, signal.SIGTERM)", "os.kill(os.getpid(), signal.SIGSTOP)")
SLEEPS = KILLS_GROUP.replace("KillsGroup", "Sleeps").replace(
    "os.kill(0, signal.SIGTERM)", "import time; time.sleep(600)")


def test_a_worker_that_stops_itself_is_ended_with_a_message(tmp_path, capsys):
    """It hung the CLI with no message and no time limit."""
    from customgrad import cli

    path = tmp_path / "stops.py"
    path.write_text(STOPS_ITSELF)
    assert cli.main(["check", f"{path}:StopsItself"]) == 2
    out, err = capsys.readouterr()
    assert "The process running StopsItself was stopped (SIGSTOP: by its own code, or from " \
        "outside)" in " ".join(err.split())
    assert "Traceback" not in out + err


def test_the_cli_stops_a_worker_past_its_timeout(tmp_path, capsys):
    from customgrad import cli

    path = tmp_path / "sleeps.py"
    path.write_text(SLEEPS)
    assert cli.main(["check", f"{path}:Sleeps", "--timeout", "1"]) == 2
    out, err = capsys.readouterr()
    line = SLEEPS.splitlines().index(next(t for t in SLEEPS.splitlines() if "sleep(" in t)) + 1
    assert f"{path}:Sleeps was still running after --timeout 1 s at sleeps.py:{line} (in " \
        "backward) and was stopped" in " ".join(err.split())
    assert not out and "Traceback" not in err
    # --json names the method it was stopped in (trial3 C2: "phase": "")
    import json

    assert cli.main(["check", f"{path}:Sleeps", "--timeout", "1", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["phase"], error["line"]) == ("backward", line)


def test_a_check_that_runs_on_says_where_it_is_on_stderr(tmp_path, capsys, monkeypatch):
    """Without --timeout an endless loop in CI was a silent hang (trial2): a check that
    runs on without a word says now and then where it is, and how to stop it."""
    from customgrad import cli
    from customgrad.workers import isolation

    monkeypatch.setattr(isolation, "QUIET_SECONDS", 0.3)
    monkeypatch.setattr(cli, "STILL_RUNNING_SECONDS", 0.5)
    path = tmp_path / "sleeps.py"
    path.write_text(SLEEPS)
    assert cli.main(["check", f"{path}:Sleeps", "--timeout", "4"]) == 2
    _out, err = capsys.readouterr()
    line = SLEEPS.splitlines().index(next(t for t in SLEEPS.splitlines() if "sleep(" in t)) + 1
    said = [t for t in err.splitlines() if "has been running" in t]
    assert len(said) == 1, err  # then once a minute: the timeout came first
    assert said[0].startswith(f"customgrad: {path}:Sleeps has been running ")
    assert said[0].endswith(f"s, now at sleeps.py:{line} (in backward).")  # --timeout given


SPINS_THEN_ABORTS = KILLS_GROUP.replace("KillsGroup", "SpinsThenAborts").replace(
    "        os.kill(0, signal.SIGTERM)\n",
    "        import time\n"
    "        until = time.monotonic() + 2\n"
    "        while time.monotonic() < until:\n"
    "            pass\n"
    "        os.abort()\n")


def test_a_crash_after_the_worker_was_asked_where_it_was_is_named_at_its_own_line(
        tmp_path, capsys, monkeypatch):
    """The stacks asked for while a job runs go to the child's fault file before its
    crash's: the crash is named from its own stack, not from the first one asked for."""
    from customgrad import cli
    from customgrad.workers import isolation

    asked: list = []
    serve = isolation.serve
    monkeypatch.setattr(isolation, "QUIET_SECONDS", 0.3)
    monkeypatch.setattr(isolation, "serve", lambda *a, **k: serve(
        *a[:-1], lambda frame, s: (asked.append(frame), a[-1](frame, s))))
    path = tmp_path / "spins.py"
    path.write_text(SPINS_THEN_ABORTS)
    assert cli.main(["check", f"{path}:SpinsThenAborts"]) == 2
    _out, err = capsys.readouterr()
    lines = SPINS_THEN_ABORTS.splitlines()
    spin = lines.index("            pass") + 1
    abort = lines.index("        os.abort()") + 1
    # (an ask can land as the spin ends: at the abort's own line then, a loaded CI saw it)
    assert asked and {line for _file, line, _f in asked} <= {spin - 1, spin, abort}, asked
    assert f"crashed the process with SIGABRT at spins.py:{abort} (in backward)" \
        in " ".join(err.split()), err


@pytest.mark.parametrize(("data", "text"), [
    (b"\xef\xbb\xbfNAME = 'bom'\n", "bom"),
    (b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n", "caf\u00e9"),
], ids=["utf-8-bom", "pep-263-latin-1"])
def test_a_file_is_read_as_python_reads_it(tmp_path, data, text):
    """A UTF-8 file with a BOM and a PEP 263 latin-1 file were refused, though Python runs
    them."""
    from customgrad.targets import loader

    path = tmp_path / "encoded.py"
    path.write_bytes(data)
    assert loader.load_file(path).NAME == text


def _sleeping_job(channel):
    import ctypes

    ctypes.CDLL(None).sleep(60)
    return "woke"


@pytest.mark.skipif(not processes.fork_server() or not os.path.isdir("/proc/self"),
                    reason="a fork server, and /proc to see it end")
def test_a_killed_fork_server_is_not_blamed_on_the_function():
    """It was 'The Function's code ended the process with exit code 255 (os._exit, ...)'."""
    import signal
    import threading
    from multiprocessing import forkserver

    from customgrad.errors import CustomGradError, FunctionError
    from customgrad.workers import isolation

    def kill_the_server():
        os.kill(forkserver._forkserver._forkserver_pid, signal.SIGKILL)

    with pytest.raises(CustomGradError) as caught:
        isolation.call(_sleeping_job,
                       on_started=lambda: threading.Timer(0.3, kill_the_server).start())
    assert not isinstance(caught.value, FunctionError)
    assert "the fork server it came from ended" in str(caught.value)
    assert isolation.call(_pid_job) != os.getpid()  # a new fork server serves


def _pid_job(channel):
    return os.getpid()


IGNORES_TERM = """import signal
import sys
import threading

sys.path.insert(0, {root!r})
sys.path.insert(0, {here!r})
from customgrad.workers import isolation
from term_job import job

started = threading.Event()
threading.Thread(target=lambda: isolation.call(job, on_started=started.set),
                 daemon=True).start()
if not started.wait(100):
    sys.exit("the job never started")
import time
time.sleep(1)  # the job runs, ignoring SIGTERM; then this program ends
"""
TERM_JOB = """import signal
import time


def job(channel):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(600)
"""


def test_a_program_ends_though_its_worker_ignores_sigterm(tmp_path):
    """multiprocessing's exit handler sends SIGTERM and waits for each child: forever for
    one whose code ignores SIGTERM (closing the window left the app hung)."""
    jobs = tmp_path / "jobs"  # (not the launch folder, which workers never import from)
    jobs.mkdir()
    (jobs / "term_job.py").write_text(TERM_JOB)
    script = tmp_path / "main.py"
    script.write_text(IGNORES_TERM.format(root=str(ROOT), here=str(jobs)))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def _path_job(channel) -> list[str]:
    return list(sys.path)


def test_a_spawned_worker_starts_without_the_current_folder_on_its_path(tmp_path,
                                                                        monkeypatch, configure):
    """spawn hands its children the parent's sys.path ('' made the current folder): a
    random.py in the launch folder shadowed the standard library in each spawned worker."""
    from customgrad.workers import isolation

    configure(spawn=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", ["", str(tmp_path), *sys.path])
    path = isolation.call(_path_job, name="path")
    here = str(tmp_path.resolve())
    assert "" not in path and here not in [os.path.realpath(p) for p in path if p], path


FORKS = """import os
import subprocess
import sys

import torch

PIDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids")


class Forks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        # a helper process left running, holding the worker's stdout and stderr
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(PIDS, "a") as f:
            f.write(str(helper.pid) + "\\n")
        return x * 2

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 2
"""


def test_a_process_the_function_forks_does_not_hold_the_clis_output_open(tmp_path):
    """A grandchild of the CLI held its output pipe: 'customgrad check f.py | tail' waited
    until the Function's helper process ended, long after the CLI had."""
    import signal

    path = tmp_path / "forks.py"
    path.write_text(FORKS)
    proc = subprocess.Popen([sys.executable, "-m", "customgrad", "check", f"{path}:Forks"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=150)  # to the pipes' end: every writer gone
    finally:
        proc.kill()
        pids = tmp_path / "pids"
        for pid in pids.read_text().split() if pids.exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    assert proc.returncode == 0, err
    assert "PASSED" in out
    assert (tmp_path / "pids").read_text().split()  # the helpers were started


def test_a_module_in_the_launch_folder_is_named_by_its_file(tmp_path, monkeypatch):
    """``customgrad check mylayer:Double`` from mylayer.py's folder: the workers never import
    from the launch folder, so the message says to give the file (or install it), not only
    "No module named 'mylayer'"."""
    (tmp_path / "mylayer_here.py").write_text(TERM_JOB)
    proc = subprocess.run([sys.executable, "-m", "customgrad", "check", "mylayer_here:Double"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2, proc.stderr
    assert "mylayer_here.py:Class" in proc.stderr and "Traceback" not in proc.stderr
