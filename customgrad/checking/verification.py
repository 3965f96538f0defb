"""One path from a Function and its arguments to a verdict: :func:`verify`.

Every front end calls it (``customgrad.check``, ``customgrad check``, the app's worker, the
fork server's warm-up, the double-backward report) and differs only in how it shows the
result. In order: the Jacobian comparison; where it fails, the diagnosis (with the matrices
computed again and kept, where the comparison did not keep them and they fit the memory
cap); the sub-checks; then one :class:`~customgrad.checking.jacobian.report.Report`, built once,
whose ``passed`` says that every Jacobian entry agrees and no sub-check failed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import torch

from customgrad.checking import subchecks
from customgrad.checking.diagnosis import diagnose
from customgrad.checking.jacobian.comparison import compare
from customgrad.checking.jacobian.limits import ATOL, EPS, MEMORY_CAP, RTOL
from customgrad.checking.jacobian.matrices import Allocator, lazy_zeros
from customgrad.checking.jacobian.report import Progress, Report
from customgrad.errors import Cancelled, CustomGradError
from customgrad.function.closures import closure_read, lent
from customgrad.function.dtypes import differentiable

#: a check whose tensor inputs hold at most this many floating-point entries runs on one
#: thread: its tensor operations gain nothing from more, and each one big enough for torch to
#: split (32,768 entries: a 32 x 1,024 mask of the reference's colouring) wakes the others,
#: waiting passively in a worker, for tens of microseconds to milliseconds on a busy machine
#: (Exp 16x32 with its double backward took a third longer on two threads than on one;
#: docs/performance-log.md, "Double backward")
ONE_THREAD_ENTRIES = 1024


@dataclass(frozen=True)
class CheckOptions:
    """What to check and how strictly: the tolerances (gradcheck's by default), the memory
    cap of the matrices, which inputs to differentiate (by parameter name, as
    :func:`~customgrad.checking.jacobian.compare` takes it), the sub-checks beside the Jacobian
    (:data:`customgrad.checking.subchecks.NAMES`; None:
    :func:`customgrad.checking.subchecks.defaults_for` the Function; empty: none), whether to keep
    the matrices and to diagnose a failure, and the report's title (``label``: what its verdict line
    starts with)."""

    eps: float = EPS
    atol: float = ATOL
    rtol: float = RTOL
    memory_cap: int = MEMORY_CAP
    differentiate: Mapping[str, bool] | None = None
    #: how far two backward calls on the same graph may differ (gradcheck's nondet_tol)
    nondet_tol: float = 0.0
    checks: frozenset[str] | None = None
    keep_matrices: bool = True
    diagnose: bool = True
    label: str | None = None

    def with_checks(self, names: Iterable[str] | None) -> CheckOptions:
        """These options running the sub-checks ``names`` (None: the Function's defaults)."""
        return dataclasses.replace(self, checks=None if names is None else frozenset(names))


def verify(function: type, args: list, options: CheckOptions = CheckOptions(), *,
           progress: Callable[[Progress], None] | None = None,
           should_stop: Callable[[], bool] | None = None,
           allocate: Allocator = lazy_zeros,
           waited: Callable[[], float] | None = None) -> Report:
    """``function`` checked at ``args`` (forward's arguments): the whole report (see the
    module). Each step gets its own copy of the tensors in ``args``, so a Function that
    writes into an input changes nothing for the next step, nor for the caller; but a tensor
    that forward also reads through a callable argument (a checkpoint's parameters, read by
    its function's closure or module): each step gets it as it is, and it is put back as it
    was, bit for bit (customgrad.function.closures).

    ``progress``, ``should_stop`` and ``allocate`` go to the comparison; ``waited()``, read
    after it, is how many of its seconds the caller spent waiting in ``progress`` (not the
    comparison's own time, which :attr:`Report.seconds` is). Raises what
    :func:`~customgrad.checking.jacobian.compare` and :func:`customgrad.checking.subchecks.run`
    raise.
    """
    # the caller's tensors forward also reads through a closure stay themselves in each
    # step's arguments (a copy is not what the closure reads), and are put back as they were
    read = closure_read(args)
    with _threads_for(args), lent([args[i] for i in read]):
        return _verify(function, args, options, progress, should_stop, allocate, waited,
                       set(read))


@contextlib.contextmanager
def _threads_for(args: list) -> Iterator[None]:
    """One torch thread while a small check runs (:data:`ONE_THREAD_ENTRIES`), the caller's
    count again after; a bigger check keeps the caller's (a worker's: its free cores)."""
    entries = sum(a.numel() for a in args if isinstance(a, torch.Tensor) and differentiable(a))
    before = torch.get_num_threads()
    if entries > ONE_THREAD_ENTRIES or before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _verify(function: type, args: list, options: CheckOptions,
            progress: Callable[[Progress], None] | None, should_stop: Callable[[], bool] | None,
            allocate: Allocator, waited: Callable[[], float] | None, read: set[int]) -> Report:
    o = options
    report = compare(function, _fresh(args, read), eps=o.eps, atol=o.atol, rtol=o.rtol,
                     memory_cap=o.memory_cap, keep_matrices=o.keep_matrices,
                     differentiate=o.differentiate, nondet_tol=o.nondet_tol,
                     progress=progress, should_stop=should_stop, allocate=allocate)
    seconds = max(0.0, report.seconds - (waited() if waited is not None else 0.0))
    diagnoses = []
    if o.diagnose and not report.agrees:  # (not where only a finding of the probe fails it)
        diagnoses = diagnose(_kept(report, function, args, o, should_stop, read), function,
                             _fresh(args, read))
    nonfinite = _nonfinite_sites(report, function, _fresh(args, read)) if o.diagnose else []
    wanted = subchecks.defaults_for(function) if o.checks is None else o.checks
    checks = subchecks.run(function, _fresh(args, read), wanted, eps=o.eps, atol=o.atol,
                           rtol=o.rtol, nondet_tol=o.nondet_tol, report=report) \
        if wanted else {}
    checks.update(report.checks)  # what the comparison's probe found (saved_tensors)
    return report.replace(label=o.label, function=function.__name__, diagnoses=diagnoses,
                          checks=checks, seconds=seconds, notes=report.notes + nonfinite)


def _nonfinite_sites(report: Report, function: type, args: list) -> list[str]:
    """Where backward's NaN or Inf first appears, as the app's inspector says it ("backward's
    gradient for x contains NaN or Inf ..., first appears at f.py:75 (in backward)"), where
    the worst entry is backward's NaN or Inf against a finite finite difference; [] else."""
    worst = report.worst
    if report.agrees or worst is None or math.isfinite(worst.analytic) \
            or not math.isfinite(worst.numerical):
        return []
    from customgrad.checking.inspector import inspect_call
    try:
        seen = inspect_call(function, args)
    except Cancelled:
        raise
    except Exception:  # (the check's own calls report what fails)
        return []
    names = [f"gradient for {a.name} " for a in report.inputs]
    return [s.message for s in seen.surprises if s.kind == "nan_gradient"
            and "first appears at" in s.message and any(n in s.message for n in names)]


def _kept(report: Report, function: type, args: list, options: CheckOptions,
          should_stop: Callable[[], bool] | None, read: set[int]) -> Report:
    """``report``, or where it did not keep its matrices, the comparison again keeping them
    (the block hypotheses read them); ``report`` where they do not fit the memory cap (the
    probes of backward still run)."""
    if report.analytic is not None:
        return report
    o = options
    try:
        return compare(function, _fresh(args, read), eps=o.eps, atol=o.atol, rtol=o.rtol,
                       memory_cap=o.memory_cap, keep_matrices=True, differentiate=o.differentiate,
                       nondet_tol=o.nondet_tol, should_stop=should_stop)
    except Cancelled:
        raise
    except CustomGradError:  # too large to keep, say
        return report


def _fresh(args: list, read: set[int]) -> list:
    """``args`` with each tensor a detached copy (other values as they are), but those at
    ``read`` (forward also reads them through a closure: the caller's, as they are)."""
    return [a.detach().clone() if isinstance(a, torch.Tensor) and i not in read else a
            for i, a in enumerate(args)]
