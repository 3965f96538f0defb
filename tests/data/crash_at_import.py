"""A module whose top level segfaults: importing it must end only a worker process."""

import ctypes

import torch

ctypes.string_at(0)  # SEGFAULT_IMPORT


class NeverDefined(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad
