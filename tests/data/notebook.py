"""Functions defined as a notebook defines them, for the tests of playground.show and of
capturing a Function's source: compiled from a pseudo-file only linecache knows (as IPython
does for a cell), in a ``__main__`` namespace, so no module can import them again."""

from __future__ import annotations

import linecache
import sys
import types

#: the README's Scale; SCALE_BUGGY forgets ``factor`` for w
SCALE = '''
import torch

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, factor):
        ctx.save_for_backward(x, w)
        ctx.factor = factor
        return factor * x * w

    @staticmethod
    def backward(ctx, grad_output):
        x, w = ctx.saved_tensors
        return ctx.factor * grad_output * w, ctx.factor * grad_output * x, None
'''
SCALE_BUGGY = SCALE.replace("ctx.factor * grad_output * x, None", "grad_output * x, None")

PREFIX = "<ipython-input-"


def run_cell(text: str, number: int, namespace: dict | None = None) -> dict:
    """Run ``text`` as IPython runs cell ``number``, in ``namespace`` (a new ``__main__`` one
    by default); the namespace."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    filename = f"{PREFIX}{number}-0123456789ab>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    return namespace


def forget_cells() -> None:
    for key in [k for k in linecache.cache if str(k).startswith(PREFIX)]:
        linecache.cache.pop(key, None)


def as_in_jupyter(monkeypatch) -> None:
    """``__main__`` as IPython makes it for a kernel: a module with no ``__file__``, where
    ``inspect`` raises OSError for its classes (pytest's own ``__main__`` has a file)."""
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
