"""Tensors a worker process shares with its caller go through memory files, not /dev/shm
(customgrad.workers.sharing); where there are none, torch's own sharing is used."""

from __future__ import annotations

import operator
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest
import torch

from customgrad.checking.jacobian import matrices
from customgrad.workers import processes, sharing

linux_memfd = pytest.mark.skipif(not sharing.available(), reason="needs Linux memory files")


def _file_of(storage: torch.UntypedStorage) -> tuple[str, int]:
    fd, _size = storage._share_fd_cpu_()
    return os.readlink(f"/proc/self/fd/{fd}"), fd


@linux_memfd
def test_shared_matrices_are_memory_files_no_program_inherits():
    m = matrices.lazy_zeros((1024, 1024), sharing.shared_storage)  # 8 MiB: the lazily mapped kind
    assert m.is_shared() and not m.any()
    name, fd = _file_of(m.untyped_storage())
    assert name.startswith("/memfd:customgrad-tensor")
    assert not os.get_inheritable(fd)


@pytest.fixture
def memory_files(monkeypatch):
    """use_memory_files() in this process, undone afterwards."""
    monkeypatch.setitem(ForkingPickler._extra_reducers, torch.UntypedStorage,
                        ForkingPickler._extra_reducers[torch.UntypedStorage])
    sharing.use_memory_files()


@linux_memfd
def test_a_sent_tensor_travels_in_a_memory_file_and_the_senders_stays_its_own(memory_files):
    base = torch.arange(24, dtype=torch.float64)
    view = base.view(4, 6)[1:, 2:]  # an offset and strides survive the trip
    data = ForkingPickler.dumps(view)
    assert not base.untyped_storage().is_shared()  # torch would have moved it into /dev/shm
    back = pickle.loads(data)
    torch.testing.assert_close(back, view, rtol=0, atol=0)
    assert _file_of(back.untyped_storage())[0].startswith("/memfd:customgrad-tensor")


@linux_memfd
def test_a_process_started_with_a_tensor_gets_it(memory_files):
    """Starting a process duplicates the file descriptors only then: the copy sent must
    still be open by that time."""
    child = processes.context().Process(target=operator.neg, args=(torch.ones(1000, 100),))
    child.start()
    child.join(60)
    assert child.exitcode == 0


def test_without_memory_files_torch_shares_as_before(monkeypatch):
    monkeypatch.delattr(os, "memfd_create", raising=False)
    assert not sharing.available()
    storage = sharing.shared_storage(4096)
    assert storage.is_shared() and storage.nbytes() == 4096


@linux_memfd
def test_a_kernel_refusing_memory_files_falls_back(monkeypatch):
    def refuse(*_args):
        raise OSError(38, "Function not implemented")
    monkeypatch.setattr(os, "memfd_create", refuse)
    storage = sharing.shared_storage(4096)
    assert storage.is_shared() and storage.nbytes() == 4096
    assert not _file_of(storage)[0].startswith("/memfd:")
