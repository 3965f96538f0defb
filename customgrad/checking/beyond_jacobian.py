"""Checks beyond the full Jacobian: projected (v^T J u) for big inputs, and double backward.

The projected check compares one number per probe instead of whole matrices: for random unit
directions u (inputs) and v (outputs), ``v^T J u`` from backward (one call) against the
directional finite difference ``v . (f(x + eps u) - f(x - eps u)) / (2 eps)`` (two calls).
It costs three calls per probe whatever the size, so it works where full matrices cannot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch.autograd import Function
from torch.autograd.gradcheck import GradcheckError

from customgrad.checking.backward_function import backward_as_function, once_differentiable
from customgrad.checking.jacobian.limits import ATOL, EPS, RTOL
from customgrad.checking.jacobian.probe import differentiated_inputs
from customgrad.errors import FunctionError, SpecError, format_traceback
from customgrad.function.closures import closure_read, lent
from customgrad.function.contract import normalize_outputs, raised, run_user, user_location
from customgrad.function.dtypes import converted, differentiable
from customgrad.function.inputs import forward_parameters


@dataclass
class Direction:
    """One random direction of the projected check: v^T J u from backward (``analytic``)
    and from finite differences (``numerical``)."""

    analytic: float
    numerical: float

    @property
    def abs_error(self) -> float:
        return abs(self.analytic - self.numerical)

    def rel_error(self, atol: float) -> float:
        """``|a - n| / max(|n|, atol)``, as the full check reports it."""
        return self.abs_error / max(abs(self.numerical), atol, 1e-300)


@dataclass
class ProjectedReport:
    """Verdict of the projected check, by gradcheck's rule applied to each probe.

    Its JSON has the keys of the full check's: a probe stands where an entry stands there
    (``entries`` counts the probes, ``mismatches`` those outside tolerance), ``blocks`` has one
    row per probe, and ``worst`` is the probe with the largest error. A probe mixes every
    output and input, so the positions and names there are null.
    """

    passed: bool
    probes: list[Direction]
    eps: float
    atol: float
    rtol: float
    notes: list[str] = field(default_factory=list)

    @property
    def max_abs_error(self) -> float:
        return max((p.abs_error for p in self.probes), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((_nan_last(p.rel_error(self.atol)) for p in self.probes), default=0.0)

    @property
    def mismatches(self) -> int:
        return sum(not _ok(p, self.atol, self.rtol) for p in self.probes)

    @property
    def worst(self) -> int | None:
        """The index of the probe farthest outside tolerance (the largest error if none is)."""
        if not self.probes:
            return None
        return max(range(len(self.probes)), key=lambda k: (
            not _ok(self.probes[k], self.atol, self.rtol),
            _nan_last(self.probes[k].abs_error - self.atol - self.rtol
                      * abs(self.probes[k].numerical))))

    def summary(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        return (f"{verdict} (projected v^T J u): {self.mismatches} of {len(self.probes)} random "
                f"probes outside |a - n| <= {self.atol:g} + {self.rtol:g}*|n|; max abs error "
                f"{self.max_abs_error:.3g} (eps {self.eps:g}, numerical in float64)")

    def _row(self, k: int) -> dict:
        p = self.probes[k]
        return {"probe": k, "output": None, "input": None, "output_name": None,
                "input_name": None, "analytic": _finite(p.analytic),
                "numerical": _finite(p.numerical), "abs_error": _finite(p.abs_error)}

    def to_dict(self) -> dict:
        worst = None
        if self.worst is not None:
            worst = {**self._row(self.worst), "output_index": None, "input_index": None}
        blocks = []
        for k, p in enumerate(self.probes):
            ok = _ok(p, self.atol, self.rtol)
            blocks.append({**self._row(k), "output_shape": None, "input_shape": None,
                           "output_complex": False, "input_complex": False,  # real only
                           "passed": ok, "mismatches": int(not ok),
                           "nan_entries": int(math.isnan(p.abs_error)),
                           "max_abs_error": _finite(p.abs_error),
                           "max_rel_error": _finite(p.rel_error(self.atol))})
        return {"passed": self.passed, "kind": "projected",
                "max_abs_error": _finite(self.max_abs_error),
                "max_rel_error": _finite(self.max_rel_error),
                "mismatches": self.mismatches, "entries": len(self.probes), "worst": worst,
                "nan_entries": sum(math.isnan(p.abs_error) for p in self.probes),
                "blocks": blocks,
                "probes": [{"analytic": _finite(p.analytic), "numerical": _finite(p.numerical)}
                           for p in self.probes],
                "eps": self.eps, "atol": self.atol, "rtol": self.rtol,
                "numerical_dtype": "float64", "notes": self.notes}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _nan_last(x: float) -> float:
    return math.inf if math.isnan(x) else x


def _ok(p: Direction, atol: float, rtol: float) -> bool:
    if math.isnan(p.analytic) and math.isnan(p.numerical):
        return True
    return p.analytic == p.numerical or p.abs_error <= atol + rtol * abs(p.numerical)


def _real_inputs(function: type[Function], args: list, names: list[str], notes: list[str],
                 differentiate: Mapping[str, bool] | None) -> tuple[list[int], bool]:
    """The full check's differentiated inputs; SpecError naming the first complex one (the
    probes are real directions)."""
    pos, chosen = differentiated_inputs(function, args, names, notes, differentiate)
    for i in pos:
        if args[i].is_complex():
            raise SpecError("the projected check takes real inputs; check a complex Function "
                            "in full.", field=names[i])
    return pos, chosen


def projected_check(function: type[Function], args: list, probes: int = 8, seed: int = 0,
                    eps: float = EPS, atol: float = ATOL, rtol: float = RTOL,
                    differentiate: Mapping[str, bool] | None = None) -> ProjectedReport:
    """Compare ``v^T J u`` from backward with a directional finite difference, ``probes``
    times with random unit u, v. Finite differences run in float64 (the float32 rule). The
    inputs are chosen as the full check chooses them (``differentiate``)."""
    if probes < 1:
        raise SpecError("probes must be at least 1.", field="probes")
    names = [p.name for p in forward_parameters(function)]
    if len(names) != len(args):
        raise SpecError(f"{function.__name__}.forward takes {len(names)} arguments, "
                        f"{len(args)} were given.")
    notes: list[str] = []
    pos, chosen = _real_inputs(function, args, names, notes, differentiate)
    gen = torch.Generator().manual_seed(seed)
    leaves = {i: args[i].detach().clone().requires_grad_() for i in pos}
    # copies: forward may work in place on any of its tensors
    call = [leaves[i].clone() if i in leaves else _copy(a) for i, a in enumerate(args)]
    outs = normalize_outputs(function, run_user(function, "forward",
                                                lambda: function.apply(*call)))
    diff = [k for k, o in enumerate(outs) if o.is_floating_point() and o.requires_grad]
    if not diff:
        raise FunctionError(f"{function.__name__} has no differentiable output to check.",
                            phase="forward")
    if not chosen:  # as the full check: an input backward returns None for is a constant
        first = run_user(function, "backward", lambda: torch.autograd.grad(
            [outs[k] for k in diff], [leaves[i] for i in pos],
            [torch.ones_like(outs[k]) for k in diff], retain_graph=True, allow_unused=True))
        unused = [i for i, g in zip(pos, first) if g is None]
        if unused and len(unused) < len(pos):
            notes.extend(f"{names[i]}: backward returns None; treated as not differentiated."
                         for i in unused)
            pos = [i for i in pos if i not in unused]
    base = [a.detach().double() if i in pos else a for i, a in enumerate(args)]
    results = []
    for _ in range(probes):
        u = {i: _unit(args[i].shape, gen) for i in pos}
        v = {k: _unit(outs[k].shape, gen) for k in diff}
        grads = run_user(function, "backward", lambda v=v: torch.autograd.grad(
            [outs[k] for k in diff], [leaves[i] for i in pos],
            [v[k].to(outs[k].dtype).to(outs[k].device) for k in diff],
            retain_graph=True, allow_unused=True))
        analytic = sum(float((g.double().cpu() * u[i]).sum())
                       for i, g in zip(pos, grads) if g is not None)
        values = []
        for sign in (1.0, -1.0):
            shifted = [a + sign * eps * u[i].to(a.device) if i in pos else _copy(a)
                       for i, a in enumerate(base)]
            with torch.no_grad():
                res = normalize_outputs(function, run_user(
                    function, "forward", lambda s=shifted: function.apply(*s)))
            values.append(res)
        numerical = sum(float(((values[0][k].double() - values[1][k].double()).cpu()
                               * v[k]).sum()) for k in diff) / (2 * eps)
        results.append(Direction(analytic, numerical))
    if any(values[0][k].dtype != torch.float64 for k in diff):
        notes.append("forward did not return float64 for float64 inputs: the finite "
                     "differences carry its rounding.")
    passed = all(_ok(p, atol, rtol) for p in results)
    return ProjectedReport(passed, results, eps, atol, rtol, notes)


def _copy(value: object) -> object:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _unit(shape, gen: torch.Generator) -> torch.Tensor:
    t = torch.randn(shape, dtype=torch.float64, generator=gen)
    norm = float(t.norm())
    return t / norm if norm > 0 else t


@dataclass
class DoubleBackwardReport:
    supported: bool
    passed: bool
    message: str


def _in_our_names(line: str, function: type[Function], inputs: tuple, pos: list[int]) -> str:
    """gradgradcheck's first line in the Function's own names: its "output i" is backward's
    gradient for the i-th differentiated input, its "input j" the j-th of those inputs, then
    the grad_outputs ("Jacobian mismatch for output 0 with respect to input 1," read as if
    the Function had two inputs)."""
    import re

    found = re.match(r"Jacobian (?:\w+ )?mismatch for output (\d+) with respect to input (\d+)",
                     line)
    if found is None:
        return line
    names = [p.name for p in forward_parameters(function)]
    names = [names[i] if i < len(names) else f"input {i}" for i in pos]
    try:
        with torch.no_grad():
            outs = normalize_outputs(function, function.apply(*[_copy(a) for a in inputs]))
        given = sum(1 for o in outs if isinstance(o, torch.Tensor) and differentiable(o))
    except Exception:  # the count only names grad_outputs: gradgradcheck ran the Function
        given = 1
    wrt = names + (["grad_output"] if given == 1 else
                   [f"grad_output {k + 1} (for output {k})" for k in range(given)])
    i, j = int(found.group(1)), int(found.group(2))
    if i >= len(names) or j >= len(wrt):
        return line
    return (f"the gradient backward gives for {names[i]}, differentiated with respect to "
            f"{wrt[j]}, disagrees with finite differences of backward (gradgradcheck)")


def double_backward_check(function: type[Function], args: list, eps: float = EPS,
                          atol: float = ATOL, rtol: float = RTOL, positions: list[int] | None = None
                          ) -> DoubleBackwardReport:
    """torch's gradgradcheck on float64 copies of the inputs, with a verdict in words;
    ``positions``: the arguments to differentiate (default: every floating-point tensor)."""
    if once_differentiable(function):
        return DoubleBackwardReport(False, False, f"{function.__name__}.backward is marked "
                                    "@once_differentiable: double backward is not supported.")
    pos = positions if positions is not None else [
        i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and differentiable(a)]
    # a float64 tensor forward also reads through a closure is handed to gradgradcheck
    # itself (a copy is not what the closure reads), and put back as it was
    read = {i for i in closure_read(args) if args[i].dtype == torch.float64}
    inputs = tuple(a if i in read else
                   converted(a.detach(), torch.float64).requires_grad_() if i in pos else a
                   for i, a in enumerate(args))
    with lent([args[i] for i in read], [args[i] for i in read if i in pos]):
        return _gradgradcheck(function, inputs, pos, read, eps, atol, rtol)


def _gradgradcheck(function: type[Function], inputs: tuple, pos: list[int], read: set[int],
                   eps: float, atol: float, rtol: float) -> DoubleBackwardReport:
    """gradgradcheck's verdict in words (:func:`double_backward_check`); ``read``: the
    positions handed on as they are."""
    try:
        def apply(*call):  # copies: a forward that works in place must not touch a leaf
            return function.apply(*[a.clone() if isinstance(a, torch.Tensor) and k not in read
                                    else a for k, a in enumerate(call)])
        ok = torch.autograd.gradgradcheck(apply, inputs, eps=eps, atol=atol, rtol=rtol,
                                          raise_exception=True)
    except RuntimeError as exc:
        text = str(exc)
        if "once_differentiable" in text or "does not require grad" in text:
            return DoubleBackwardReport(False, False, f"{function.__name__} does not support "
                                        "double backward (its backward is once_differentiable "
                                        "or not differentiable).")
        if not isinstance(exc, GradcheckError):  # raised by backward itself, not a mismatch
            return DoubleBackwardReport(True, False, f"{function.__name__}.backward raises "
                                        f"during double backward: {raised(function, exc)}")
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        return DoubleBackwardReport(True, False, "double backward disagrees: "
                                    + _in_our_names(first, function, inputs, pos))
    except Exception as exc:
        file, line = user_location(exc, function)
        raise FunctionError(f"{function.__name__} raised {type(exc).__name__} during double "
                            f"backward: {exc}", file=file, line=line,
                            details=format_traceback(exc), phase="backward") from None
    return DoubleBackwardReport(True, bool(ok), "double backward agrees with finite "
                                "differences of backward (gradgradcheck).")


def verified_double_backward(function: type, args: list, eps: float = EPS, atol: float = ATOL,
                             rtol: float = RTOL, positions: list[int] | None = None
                             ) -> DoubleBackwardReport | None:
    """gradgradcheck's verdict without its 2n calls of backward, where that is sure; None
    where it is not, and :func:`double_backward_check` (gradgradcheck) decides.

    gradgradcheck compares two Jacobians of backward (customgrad.checking.second_order's
    Function of inputs and grad_outputs): its analytic one, vector-Jacobian products through
    the graph of backward's gradients (autograd through the user's backward), and finite
    differences of backward. The first is the verified reference of that Function
    (customgrad.checking.jacobian.exact: autograd through its forward, which is the user's
    backward run with ``create_graph``), computed in batches, and its verification is the
    comparison with finite differences of backward (compressed, within a tenth of atol, no
    rtol: stricter than gradgradcheck's rule). So where the reference holds, the double
    backward agrees with finite differences: passed. The second-order comparison's analytic
    pass would compare that same autograd matrix with itself, taken a second time through
    the Function's backward, and is not run here (the drawn second-order report,
    :func:`customgrad.checking.second_order.double_backward_report`, still runs it). Where
    the reference does not hold (a backward autograd cannot follow, or whose own derivative
    is wrong: the verification fails; complex numbers, float32 only, a dense Jacobian) or
    cannot run, None, with no finite differences taken here: gradgradcheck takes them."""
    from customgrad.checking.jacobian.exact import reference_pass
    from customgrad.checking.jacobian.limits import MEMORY_CAP, Tolerances
    from customgrad.checking.jacobian.probe import chooses_direct, run_probe
    from customgrad.checking.jacobian.report import REFERENCE
    from customgrad.checking.jacobian.workspace import Pacer, allocate
    from customgrad.function.inputs import with_defaults

    if once_differentiable(function):
        return None
    pos = positions if positions is not None else [
        i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and differentiable(a)]
    if not pos or any(args[i].is_complex() for i in pos):
        return None
    if any(i in pos for i in closure_read(args)):  # (its copies are not what forward reads)
        return None
    call = [converted(a.detach(), torch.float64) if i in pos else a for i, a in enumerate(args)]
    try:  # the second order's numerical pass (customgrad.checking.second_order), no further
        tol = Tolerances.checked(eps, atol, rtol)
        wrapper, wrapper_args, which = backward_as_function(
            function, with_defaults(function, call), pos)
        params = [p.name for p in forward_parameters(wrapper)]
        notes: list[str] = []
        probe = run_probe(wrapper, wrapper_args, params, notes, which)
        space = allocate(probe.outputs, probe.inputs, MEMORY_CAP, keep_matrices=False,
                         zeros=_unread)
        base = [a.detach().clone(memory_format=torch.contiguous_format)
                if i in probe.leaves else a for i, a in enumerate(probe.args)]
        direct = chooses_direct(probe, base)
        method = reference_pass(probe, space, Pacer(space, None, None), tol.eps, tol.atol, base,
                                probe.forward_direct if direct else probe.forward_plain,
                                direct)
    except Exception:
        return None
    if method.name != REFERENCE:
        return None
    return DoubleBackwardReport(True, True, "double backward agrees with finite differences "
                                "of backward (autograd through backward, verified).")


def _unread(shape: tuple[int, int]) -> torch.Tensor:
    """The second order's numerical matrix, which the sub-check never reads (its verdict is
    the reference's method, not its entries): a tensor with no memory (torch's meta device)
    takes the reference's writes for nothing. In memory, Exp 16x32's (1,024 x 512, a page a
    column) faulted its 1,024 pages in one by one as the reference's entries were written:
    1.5 to 5 ms of a 20 ms check on a shared machine."""
    return torch.empty(shape, dtype=torch.float64, device="meta")
