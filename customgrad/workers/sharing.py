"""Tensors shared between a worker process and its caller, without /dev/shm.

torch shares a CPU tensor between processes by moving its storage into a file of /dev/shm
that it reserves whole first (``posix_fallocate``). A container's /dev/shm is often 64 MiB,
less than two 2048 x 2048 float64 matrices, and the reservation fails ("No space left on
device"); it also costs time (9 ms for 32 MiB here) and makes a sparse matrix's pages real.
On Linux, :func:`shared_storage` makes an anonymous memory file instead (``memfd_create``),
sized without taking memory, which torch sends as a file descriptor like its own; and a
worker process calls :func:`use_memory_files` so that whatever it sends goes that way.
Elsewhere torch's own sharing is used unchanged.
"""

from __future__ import annotations

import os

import torch
import torch.multiprocessing  # registers torch's reductions (one is replaced below)
from torch.multiprocessing import reductions

__all__ = ["available", "release_sent", "shared_storage", "use_memory_files"]


def available() -> bool:
    """True where memory files can carry tensors (Linux, torch sharing by file descriptor)."""
    return hasattr(os, "memfd_create") and \
        torch.multiprocessing.get_sharing_strategy() == "file_descriptor"


def shared_storage(nbytes: int) -> torch.UntypedStorage:
    """``nbytes`` of zeros another process can map; pages take memory when first written.
    torch's own shared storage where there are no memory files (or making one fails)."""
    if not available() or nbytes == 0:
        return torch.UntypedStorage._new_shared(nbytes)
    try:
        fd = os.memfd_create("customgrad-tensor", os.MFD_CLOEXEC)
    except OSError:  # a kernel or sandbox without it
        return torch.UntypedStorage._new_shared(nbytes)
    try:
        os.ftruncate(fd, nbytes)
        # maps a copy of fd; a private torch method its stubs leave out
        storage = torch.UntypedStorage._new_shared_fd_cpu(fd, nbytes)  # type: ignore[attr-defined]
    finally:
        os.close(fd)
    kept, _size = storage._share_fd_cpu_()  # that copy: not for programs this one runs
    os.set_inheritable(kept, False)
    return storage


def shared_zeros(shape: tuple[int, int]) -> torch.Tensor:
    """A zero matrix for the comparison (``compare(allocate=shared_zeros)``), a big one in
    shared memory: for a worker process whose caller reads the matrices as they are
    computed, and gets them back without a copy."""
    from customgrad.checking.jacobian.matrices import lazy_zeros

    return lazy_zeros(shape, shared_storage)


#: the memory-file copies this process has sent, kept until :func:`release_sent`: a file
#: descriptor is only read when the message goes out (and when a process starts, only then
#: duplicated)
_SENT: list[torch.UntypedStorage] = []


def release_sent() -> None:
    """Free the copies sent so far, once their receiver has them (a worker kept between jobs
    calls this after each: the receiver maps the same memory, which lives on)."""
    _SENT.clear()


def _reduce_storage(storage):
    """torch's reduction of a storage, after copying a CPU one that is not shared yet into a
    memory file (torch would move it into /dev/shm). The sender keeps its own, so a storage
    sent twice arrives as two: a worker sends its result once, then ends."""
    if storage.device.type == "cpu" and not storage.is_shared() and storage.nbytes():
        copy = shared_storage(storage.nbytes())
        copy.copy_(storage)
        _SENT.append(copy)
        storage = copy
    return reductions.reduce_storage(storage)


def use_memory_files() -> None:
    """From now on this process sends CPU tensors through memory files (see the module).
    For a worker process: each tensor sent is a copy, kept until the process ends or calls
    :func:`release_sent`."""
    if available():
        from multiprocessing.reduction import ForkingPickler

        ForkingPickler.register(torch.UntypedStorage, _reduce_storage)
