"""compare(): the phases in order, and the report they add up to.

probe (one real call) -> allocate (lazy matrices, tile grid) -> numerical pass (finite
differences, column tiles) -> analytic pass (backward rows, row tiles, each compared as it
comes) -> report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from customgrad.checking.jacobian.agreement import Tally
from customgrad.checking.jacobian.analytic import Backward, analytic_pass
from customgrad.checking.jacobian.limits import ATOL, EPS, MEMORY_CAP, RTOL, Tolerances
from customgrad.checking.jacobian.matrices import Allocator, lazy_zeros
from customgrad.checking.jacobian.numerical import numerical_pass
from customgrad.checking.jacobian.probe import run_probe
from customgrad.checking.jacobian.report import Fill, Progress, Report
from customgrad.checking.jacobian.workspace import Pacer
from customgrad.checking.jacobian.workspace import allocate as make_workspace
from customgrad.errors import SpecError
from customgrad.function.closures import closure_read, lent
from customgrad.function.inputs import forward_parameters, with_defaults


def compare(function: type, args: list, *, eps: float = EPS, atol: float = ATOL,
            rtol: float = RTOL, memory_cap: int = MEMORY_CAP, keep_matrices: bool = True,
            differentiate: Mapping[str, bool] | None = None, nondet_tol: float = 0.0,
            progress: Callable[[Progress], None] | None = None,
            should_stop: Callable[[], bool] | None = None,
            allocate: Allocator = lazy_zeros) -> Report:
    """Compare ``function``'s backward with finite differences at ``args`` (forward's arguments,
    as ``apply`` takes them: forward's defaults fill those left out).

    ``differentiate`` (by parameter name) chooses the differentiated inputs as gradcheck's
    ``requires_grad`` does: where any is True, exactly those; else every floating-point tensor
    but those set False, and one that backward returns None for is taken as a constant.
    ``nondet_tol``: how far two backward calls on the same graph may differ (gradcheck's,
    0 by default), else the report fails with the finding ``reentrant``.
    ``allocate(shape)`` makes each zero matrix (``matrices.lazy_zeros``; ``shared_zeros`` for
    a caller in another process that reads them as they fill).
    Raises FunctionError (the Function raised or broke the autograd contract), SpecError /
    TooLargeError (bad tolerances, matrices beyond ``memory_cap``) or Cancelled.
    """
    args = with_defaults(function, args)
    tol = Tolerances.checked(eps, atol, rtol)
    if not (isinstance(nondet_tol, (int, float)) and nondet_tol >= 0):  # (inf: any gap)
        raise SpecError(f"nondet_tol must be a number >= 0, not {nondet_tol!r}.",
                        field="nondet_tol")
    params = [p.name for p in forward_parameters(function)]
    started = time.perf_counter()
    # the caller's tensors forward also reads through a closure are checked in place, and
    # put back as they were, whatever happens (customgrad.function.closures)
    read = closure_read(args)
    with lent([args[i] for i in read]):
        notes: list[str] = []
        probe = run_probe(function, args, params, notes, differentiate, nondet_tol, read)
        space = make_workspace(probe.outputs, probe.inputs, memory_cap, keep_matrices, allocate)
        # no one watches the matrices fill: the compressed method's entries are written when the
        # report's matrices are first read (never, where they are not kept)
        space.defer = progress is None and allocate is lazy_zeros
        pacer = Pacer(space, progress, should_stop)
        # the outputs and inputs, before any entry: a display can lay the matrix out first
        pacer.emit(0.0, "numerical", force=True, columns_done=0, rows_done=0)
        numerical_dtype, tol, method = numerical_pass(probe, space, pacer, tol, notes)
        backward = Backward(probe, space.rows, space.cols, notes)
        tally = Tally(space, tol.atol, tol.rtol)
        analytic_pass(space, pacer, backward, tally)
        return Report(
            outputs=space.outputs, inputs=space.inputs, blocks=tally.blocks,
            worst=tally.worst(backward.entry), eps=tol.eps, atol=tol.atol, rtol=tol.rtol,
            numerical_dtype=numerical_dtype, analytic_path=backward.path,
            notes=notes, analytic=space.ana, numerical=space.num_t.T if keep_matrices else None,
            seconds=time.perf_counter() - started, method=method, checks=dict(probe.findings),
            returns_none=list(probe.returns_none),
            _cache={"fill": Fill(space.flush)} if space.deferred and keep_matrices else {})
