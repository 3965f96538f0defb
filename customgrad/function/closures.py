"""Tensor arguments that forward also reads through a closure, and lending them to a check.

A gradient checkpoint is applied as ``CheckpointFunction.apply(run_function, length, *args,
*params)``, where ``run_function`` (a module's bound method, a lambda, a functools.partial)
reads the very parameters it is handed as arguments through ``self`` or its closure. The
check works on copies of the arguments, which the closure never sees: the numerical block of
such an argument was zero, and a backward computing its gradient by hand FAILED where
gradcheck, which perturbs the caller's tensors in place, judges the real block.

:func:`closure_read` finds those arguments (by identity, a few levels deep, bounded);
:func:`lent` lends them to the check: where they are differentiated, they are made to
require grad (as a caller hands them to gradcheck), and whatever the check (or forward)
does to them, their values, ``.grad`` and ``requires_grad`` are put back on the way out,
exceptions included. A leaf: torch only.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Iterator, Sequence

import torch

#: how deep the search goes from a callable argument: a bound method (1) -> its module (2) ->
#: the module's parameters and buffers; a lambda (1) -> a function in its closure (2) ->
#: that function's closure (3)
DEPTH = 3
#: the most objects the search looks at (a big model's parameters, say), so it stays cheap
VISITS = 20_000


def closure_read(args: Sequence[object]) -> dict[int, int]:
    """``{position of a tensor argument: position of the callable argument reaching it}``:
    the tensor arguments that a callable argument holds, by identity, in its closure cells,
    defaults, the globals its code names, a ``functools.partial``'s arguments, a bound
    method's ``__self__``, an ``nn.Module``'s parameters and buffers, or one of those
    holding the next (up to :data:`DEPTH` levels; at most :data:`VISITS` objects). Strided
    contiguous tensors only: the check writes their entries in place through a flat view.
    Empty (in microseconds) where no argument is callable."""
    tensors = {id(a): i for i, a in enumerate(args)
               if isinstance(a, torch.Tensor) and a.layout == torch.strided
               and a.is_contiguous() and a.numel()}
    if not tensors:
        return {}
    found: dict[int, int] = {}
    budget = [VISITS]
    for k, a in enumerate(args):
        if callable(a) and not isinstance(a, (torch.Tensor, type)):
            for t in _reachable(a, DEPTH, set(), budget):
                i = tensors.get(id(t))
                if i is not None:
                    found.setdefault(i, k)
    return found


def _reachable(obj: object, depth: int, seen: set[int], budget: list[int]) -> Iterator[object]:
    """The tensors ``obj`` holds, ``depth`` levels down."""
    if depth <= 0 or id(obj) in seen or budget[0] <= 0:
        return
    seen.add(id(obj))
    for child in _children(obj):
        budget[0] -= 1
        if budget[0] <= 0:
            return
        if isinstance(child, torch.Tensor):
            yield child
        elif child is not None and not isinstance(child, (str, bytes, int, float, bool,
                                                          type, types.ModuleType)):
            yield from _reachable(child, depth - 1, seen, budget)


def _children(obj: object) -> Iterator[object]:
    """What ``obj`` refers to that forward could read through it."""
    if isinstance(obj, torch.nn.Module):
        yield from obj.parameters()
        yield from obj.buffers()
        return
    if isinstance(obj, functools.partial):
        yield obj.func
        yield from obj.args
        yield from obj.keywords.values()
        return
    if isinstance(obj, types.MethodType):
        yield obj.__self__
        yield obj.__func__
        return
    if isinstance(obj, types.FunctionType):
        for cell in obj.__closure__ or ():
            try:
                yield cell.cell_contents
            except ValueError:  # (an empty cell)
                continue
        yield from obj.__defaults__ or ()
        yield from (obj.__kwdefaults__ or {}).values()
        names, globals_ = obj.__code__.co_names, obj.__globals__
        yield from (globals_[n] for n in names if n in globals_)
        return
    if isinstance(obj, (list, tuple)):
        yield from obj
        return
    if isinstance(obj, dict):
        yield from obj.values()
        return
    fields = getattr(obj, "__dict__", None)  # a callable object holding its tensors
    if isinstance(fields, dict) and callable(obj):
        yield from fields.values()


@contextlib.contextmanager
def lent(tensors: Sequence[torch.Tensor], differentiated: Sequence[torch.Tensor] = ()
         ) -> Iterator[None]:
    """The caller's ``tensors`` lent to the check: those in ``differentiated`` made to require
    grad (where they do not: leaves), and on the way out (exceptions included) each one's
    values, ``.grad`` (the same tensor, its values) and ``requires_grad`` as they were,
    bit for bit. Values are written through ``.data``: no version bump, as gradcheck's."""
    kept: list[tuple[torch.Tensor, torch.Tensor, bool, torch.Tensor | None,
                     torch.Tensor | None]] = []
    for t in tensors:
        if any(t is k[0] for k in kept):
            continue
        grad = t.grad
        kept.append((t, t.detach().clone(), t.requires_grad, grad,
                     None if grad is None else grad.detach().clone()))
    try:
        for t in differentiated:
            if not t.requires_grad:
                t.requires_grad_()
        yield
    finally:
        for t, values, requires_grad, grad, grad_values in kept:
            t.data.copy_(values)
            if t.requires_grad != requires_grad and t.is_leaf:
                t.requires_grad_(requires_grad)
            if grad is not None and grad_values is not None:
                grad.data.copy_(grad_values)
            if t.grad is not grad:
                t.grad = grad
