"""Functions that take their process down, for tests/customgrad/test_isolation.py and the app's
fault tests: each must end only the worker process running it, never the caller."""

import ctypes
import os
import re
import time

import torch


class SegInForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctypes.string_at(0)  # SEGFAULT_FORWARD
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class SegInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        ctypes.string_at(0)  # SEGFAULT_BACKWARD
        return grad * 2


class ExitInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        os._exit(3)


class AbortInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        os.abort()  # ABORT_BACKWARD


class SleepInC(torch.autograd.Function):
    """backward blocks inside C (libc's sleep): no Python exception can reach it."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        flag = os.environ.get("CUSTOMGRAD_TEST_FLAG")
        if flag:
            with open(flag, "w") as f:
                f.write("in backward")
        ctypes.CDLL(None).sleep(1000)
        return grad * 2


class HoldsGil(SleepInC):
    """backward runs for hours inside C holding the GIL (a catastrophic regex): no thread of
    the process runs Python meanwhile."""

    @staticmethod
    def backward(ctx, grad):
        flag = os.environ.get("CUSTOMGRAD_TEST_FLAG")
        if flag:
            with open(flag, "w") as f:
                f.write("in backward")
        re.match(r"(a+)+$", "a" * 64 + "b")
        return grad * 2


class MemoryHog(torch.autograd.Function):
    """backward allocates without end (about 64 MiB a step)."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        hoard = []
        while True:
            hoard.append(torch.ones(8 * 2**20, dtype=torch.float64))
            time.sleep(0.001)


class DeviceAssertInBackward(torch.autograd.Function):
    """On CUDA, backward trips a device-side assert (an index out of range): the process's
    CUDA context is unusable afterwards, so only a fresh process can go on."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        index = torch.full((1,), grad.numel() + 7, device=grad.device)
        return grad * 2 + grad.reshape(-1)[index].sum()  # DEVICE_ASSERT
