"""The Python API: :func:`check` a Function at your own tensors.

``check`` takes forward's actual arguments, exactly as ``apply`` takes them, and returns the
:class:`~customgrad.checking.jacobian.Report` the CLI prints (its notebook display is
:mod:`customgrad.checking.notebook`'s).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from customgrad.checking import subchecks
from customgrad.checking.jacobian.limits import ATOL, EPS, RTOL
from customgrad.checking.jacobian.report import Report
from customgrad.checking.notebook import heatmaps_png, renderer, report_html, report_png
from customgrad.checking.verification import CheckOptions, verify
from customgrad.errors import SpecError, TooLargeError
from customgrad.function.closures import closure_read
from customgrad.function.dtypes import converted, parse_dtype
from customgrad.function.inputs import (
    as_applied,
    forward_parameters,
    spelled_out,
    with_defaults,
)
from customgrad.targets import catalog
from customgrad.targets.loader import is_function, resolve

#: the checks :func:`check` can run (customgrad.checking.subchecks: the full Jacobian, always,
#: double backward, forward AD, batched gradients, undefined gradients, gradient dtypes and
#: nondeterminism); by default gradcheck's: the Jacobian and undefined gradients
CHECKS = subchecks.NAMES

__all__ = ["CHECKS", "check", "heatmaps_png", "renderer", "report_html", "report_png"]


def check(fn: type | str, *args: object, eps: float | None = None, atol: float | None = None,
          rtol: float | None = None, checks: Iterable[str] | None = None,
          dtype: torch.dtype | str | None = None, nondet_tol: float = 0.0) -> Report:
    """Compare ``fn``'s backward with finite differences at ``args`` (forward's arguments,
    tensors and constants, as ``fn.apply`` takes them: forward's defaults fill the rest).

    ``fn`` is a ``torch.autograd.Function`` subclass (or a CLI target: a gallery name,
    ``path/to/file.py:Class``, ``package.module:Class``). Tolerances default to gradcheck's
    (eps 1e-6, atol 1e-5, rtol 1e-3); ``dtype`` (``torch.float64``, ``"float32"``,
    ``"complex128"``) converts the floating-point tensors first; ``checks`` names the
    sub-checks to run beside the Jacobian (:data:`CHECKS`, gradcheck's by default; each
    lands in :attr:`Report.checks`). ``nondet_tol``, as gradcheck's: how far two backward
    calls on the same graph may differ (0: not at all; else the check fails, ``reentrant``).
    As gradcheck, only the tensors that require grad are differentiated where any does; where
    none does, every floating-point one is, but one that backward returns None for. Complex
    tensors are checked by gradcheck's convention: real and imaginary parts perturbed one at
    a time, a complex output split into its real and imaginary parts. The caller's tensors
    and their ``.grad`` are never touched: the check works on copies; but a tensor that
    forward also reads through a callable argument (a checkpoint's parameters, read by its
    function's closure, module or partial: a copy is not what it reads), which the check
    perturbs in place, as gradcheck does, and puts back bit for bit (a note in the report
    names it). A failed check is diagnosed (:attr:`Report.diagnoses`). Raises the engine's
    errors (``FunctionError`` when the Function raises or breaks autograd's contract,
    ``SpecError`` for bad arguments or tolerances, ``TooLargeError`` beyond 1 GiB of
    matrices).
    """
    function, label = _function(fn)
    function = as_applied(spelled_out(function, len(args)), len(args))
    target_dtype = None if dtype is None else parse_dtype(dtype)
    args = tuple(with_defaults(function, args))
    options = CheckOptions(eps=EPS if eps is None else eps, atol=ATOL if atol is None else atol,
                           rtol=RTOL if rtol is None else rtol,
                           differentiate=_requiring_grad(function, args),
                           nondet_tol=nondet_tol, label=label)
    read = closure_read(args)  # (the caller's own: a copy is not what the closure reads)
    try:
        return verify(function, [a if i in read and _kept_as_is(a, target_dtype)
                                 else _copy(a, target_dtype) for i, a in enumerate(args)],
                      options.with_checks(_checks(checks, function)))
    except TooLargeError as exc:
        raise exc.advised(
            "Here, only the tensors that require grad are differentiated (where any does); "
            "customgrad.checking.jacobian.compare(fn, args, memory_cap=BYTES) takes another cap.") \
            from None


def _function(fn: type | str) -> tuple[type, str]:
    """The Function class and the title its verdict line starts with (the gallery's title
    for a gallery Function, as the CLI prints it; else the class name)."""
    if isinstance(fn, str):
        target = resolve(fn)
        return target.function, target.label
    if not is_function(fn) and not _torch_own(fn):
        raise SpecError(f"check() takes a torch.autograd.Function subclass (or a target name), "
                        f"not {fn!r}.")
    for entry in catalog.entries():
        if entry.function is fn:
            return fn, entry.title
    return fn, fn.__name__


def _torch_own(fn: object) -> bool:
    """A Function torch itself defines (``torch.utils.checkpoint.CheckpointFunction``), not
    one of its bases: checked as any other when handed to :func:`check`."""
    return (isinstance(fn, type) and issubclass(fn, torch.autograd.Function)
            and fn.forward is not torch.autograd.Function.forward
            and "forward" in {name for k in fn.__mro__ if k.__module__ not in _BASES
                              for name in vars(k)})


#: where torch's base classes of Functions live
_BASES = ("torch.autograd.function", "torch._C", "torch._functorch.autograd_function")


def _requiring_grad(function: type, args: tuple) -> dict[str, bool] | None:
    """``{name: True}`` for the tensor arguments that require grad, None where none does."""
    params = [p.name for p in forward_parameters(function)]
    chosen = {name: True for name, a in zip(params, args)
              if isinstance(a, torch.Tensor) and a.requires_grad}
    return chosen or None


def _checks(checks: Iterable[str] | None, function: type) -> set[str]:
    if checks is None:
        return set(subchecks.defaults_for(function))
    names = subchecks.parse(checks if isinstance(checks, str) else ",".join(checks))
    return set(names) | {"jacobian"}


def _kept_as_is(value: object, dtype: torch.dtype | None) -> bool:
    """A tensor read through a closure is handed on itself, unless ``dtype`` converts it (a
    converted copy, as before: the closure reads the caller's)."""
    return dtype is None or (isinstance(value, torch.Tensor)
                             and converted(value, dtype) is value)


def _copy(value: object, dtype: torch.dtype | None) -> object:
    """A detached copy of a tensor (floating point ones converted to ``dtype`` if given), so
    that nothing the check does reaches the caller's tensor or its ``.grad``; other values
    as they are."""
    if not isinstance(value, torch.Tensor):
        return value
    copy = value.detach().clone()
    return copy if dtype is None else converted(copy, dtype)
