"""A worker's torch threads: the cores free now (customgrad.workers.threads), and passive OpenMP
waiting in the children started."""

from __future__ import annotations

import os

import pytest
import torch

from customgrad.workers import isolation, processes, threads


@pytest.mark.parametrize(("cores", "others", "most", "expected"), [
    (2, 0, 2, 2),    # idle two cores: both
    (2, 1, 2, 1),    # one core held (the loop, the window, a grep): the other one
    (2, 5.6, 2, 1),  # a crowded machine: still one
    (2, 0.4, 2, 2),  # a process now and then is not a core held
    (2, 0.6, 2, 1),
    (16, 1, 16, 15),
    (16, 0, 4, 4),   # never more than torch's own choice (OMP_NUM_THREADS)
    (1, 0, 1, 1),
    (4, -1, 4, 4),   # a count below zero (a racing sample) is none
])
def test_threads_are_the_cores_no_other_process_is_ready_to_use(cores, others, most,
                                                                  expected):
    assert threads.choose(cores, others, most) == expected


def test_the_inputs_are_read_from_the_system():
    assert threads.usable_cores() >= 1
    assert threads.others_running() >= 0


@pytest.fixture
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_use_free_cores_sets_torch_threads(monkeypatch, torch_threads):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "DEFAULT", 2)
    monkeypatch.setattr(threads, "others_running", lambda: 1.0)
    assert threads.use_free_cores() == 1
    assert torch.get_num_threads() == 1
    monkeypatch.setattr(threads, "others_running", lambda: 0.0)
    assert threads.use_free_cores() == 2
    assert torch.get_num_threads() == 2


class _Conn:
    def recv(self):
        return None


class _Channel:
    def __init__(self):
        self.sent = []

    def put(self, message):
        self.sent.append(message)


def _threads_now(channel):
    return torch.get_num_threads()


def test_every_job_in_a_worker_runs_on_the_cores_free_when_it_starts(monkeypatch,
                                                                     torch_threads):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "DEFAULT", 2)
    monkeypatch.setattr(threads, "others_running", lambda: 1.0)
    channel = _Channel()
    isolation.run_job(_Conn(), channel, _threads_now, ())
    assert channel.sent == [("result", 1)]


def test_children_start_with_passive_openmp_waiting_and_the_parent_keeps_its_environment(
        monkeypatch):
    monkeypatch.delenv(threads.WAIT_POLICY, raising=False)
    with processes.main_stays_home():  # where every child is started
        assert threads.os.environ[threads.WAIT_POLICY] == "PASSIVE"
    assert threads.WAIT_POLICY not in threads.os.environ


def test_a_policy_the_user_chose_is_left_alone(monkeypatch):
    monkeypatch.setenv(threads.WAIT_POLICY, "ACTIVE")
    with threads.passive_waiting():
        assert threads.os.environ[threads.WAIT_POLICY] == "ACTIVE"
    assert threads.os.environ[threads.WAIT_POLICY] == "ACTIVE"


def _job_threads(channel):
    return torch.get_num_threads(), threads.DEFAULT


def test_a_real_worker_uses_between_one_and_torchs_default_threads():
    used, default = isolation.call(_job_threads, what="threads")
    assert 1 <= used <= default


def _openmp_environment(channel) -> list[bytes]:
    """The OMP_ variables this process was started with (what OpenMP read as torch loaded)."""
    with open("/proc/self/environ", "rb") as environ:
        return [v for v in environ.read().split(b"\0") if v.startswith(b"OMP_")]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs Linux's /proc")
def test_a_spawned_worker_starts_with_passive_openmp_waiting(monkeypatch, configure):
    configure(spawn=True)  # a fresh interpreter: its start
    monkeypatch.delenv(threads.WAIT_POLICY, raising=False)
    assert isolation.call(_openmp_environment, what="environment") == [
        b"OMP_WAIT_POLICY=PASSIVE"]
    assert threads.WAIT_POLICY not in os.environ
