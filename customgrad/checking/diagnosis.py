"""Why a backward disagrees: hypotheses tested on a failed comparison's matrices (plus a few
cheap extra calls), each reported with its evidence.

A correct Function gets no diagnosis: nothing here runs unless the report failed. The kinds
(scripts read them): ``factor`` (incl. a sign flip), ``transposed``, ``swapped``,
``ignores_grad_output``, ``missing_reduction``, ``accumulation``, ``region`` (a slice, or a
range of the input's values: "wrong where x < 0"), ``kink``, ``rounding``,
``undefined`` (forward is NaN a step away: the point is on the edge of its domain),
``nondeterministic``, ``mutates`` (backward changes what it saved, or forward its input),
``conjugate`` (a missing or extra ``conj()`` in a complex backward), ``random_forward``
(forward draws random numbers: dropout, noise), ``straight_through`` (forward is flat, as
round or sign, and backward is not zero: a surrogate gradient, or a missing mask).
The extra calls go through ``apply`` and the autograd engine; an error in one of them only
drops that hypothesis.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch.autograd import Function

from customgrad.checking.findings import Diagnosis
from customgrad.checking.fits import FIT_SLACK, BlockFit
from customgrad.checking.jacobian.comparison import compare
from customgrad.checking.jacobian.matrices import agree
from customgrad.checking.jacobian.probe import same_values
from customgrad.checking.jacobian.report import Axis, Block, Report
from customgrad.errors import Cancelled
from customgrad.function import dtypes
from customgrad.function.contract import normalize_outputs
from customgrad.function.dtypes import DOUBLE, flat_real, real_view

KINDS = ("factor", "transposed", "swapped", "ignores_grad_output", "missing_reduction",
         "accumulation", "region", "kink", "rounding", "undefined", "nondeterministic", "mutates",
         "conjugate", "no_gradient", "random_forward", "straight_through", "unchanged")

#: each kind in a few words, for a one-line verdict
PHRASES = {
    "factor": "off by a constant factor",
    "transposed": "a transposed gradient",
    "swapped": "gradients in the wrong order",
    "ignores_grad_output": "backward ignores grad_output (the chain rule)",
    "missing_reduction": "a missing sum over a broadcast dimension",
    "accumulation": "a gradient assigned where it should accumulate",
    "region": "wrong in one region only",
    "kink": "a kink in forward here, not backward's fault",
    "rounding": "rounding (in forward, or a half-precision backward), not the formula",
    "undefined": "no derivative at this point, not backward's fault",
    "nondeterministic": "backward is not deterministic",
    "mutates": "backward changes what it saved, or forward its input",
    "conjugate": "a missing or extra conj() in a complex backward",
    "no_gradient": "backward returns None (or zeros) for an input that is differentiated",
    "random_forward": "forward is random, so finite differences cannot follow it",
    "straight_through": "forward is flat here, backward is not (a straight-through estimator?)",
    "unchanged": "grad_output handed on unchanged (forward's derivative missing)",
}

#: entries of a block examined for a kink or rounding (the worst ones)
_POINT_ENTRIES = 4
#: finite-difference steps tried for rounding, in multiples of eps
_STEPS = (1, 10, 100, 1000, 10000)
#: the moves far beyond eps that tell a flat forward from one ignoring its input
_COARSE = ("up", "down", "negated")


def diagnose(report: Report, function: type[Function], args: list, *,
             seed: int = 0) -> list[Diagnosis]:
    """Explanations of a failed report (an empty list for one that passed).

    ``args`` are forward's arguments at which ``report`` was computed; ``report`` must have
    kept its matrices for the block hypotheses (the probes of backward need only ``args``).
    """
    if report.passed:
        return []
    calls = _Calls(function, list(args), report, seed)
    found = calls.forward_mutates()
    random = calls.random_forward()
    if random:  # every finite difference measures the randomness: no other hypothesis holds
        return found + random
    half = calls.half_precision()
    if half:  # the same backward in float64 passes: its rounding explains every entry
        return found + half
    if calls.again64 is not None:  # float32, wrong in float64 too: diagnosed there
        rounded = [Diagnosis(b, "rounding", (
            "rounding, not backward: this block passes at the same point in float64; its "
            "float32 mismatches are rounding"), 0.5) for b in sorted(calls.rounded)]
        # (forward_mutates and random_forward are asked again there, in float64)
        return diagnose(calls.again64, function, calls._copies(torch.float64),
                        seed=seed) + rounded
    whole = calls.whole_function()
    if whole or calls.forward_random or report.analytic is None or report.numerical is None:
        return found + whole  # a backward not a function of grad_output explains any matrix
    none = calls.returns_none()  # such an input's blocks need no other explanation
    found += none
    unexplained = {d.block for d in none}
    left_out = {b.input.position for b in report.blocks if b.name in unexplained}
    for block in report.blocks:
        if block.passed or block.input.position in left_out:
            continue
        point = undefined(report, block) or calls.flat(block) or calls.point(block)
        if point is not None:
            found.append(point)
            continue
        fit = BlockFit(report, block, args[block.input.position])
        if block.input.parts == 2 or block.output.parts == 2:
            # the real hypotheses read real and imaginary parts as elements: right or silent
            diagnosis = fit.conjugate() or fit.factor()
        else:
            diagnosis = (fit.swapped() or fit.transposed() or fit.unchanged() or fit.factor()
                         or fit.missing_reduction() or fit.accumulation() or fit.region())
        if diagnosis is not None:
            found.append(Diagnosis(block.name, *diagnosis))
    return found


def undefined(report: Report, block: Block) -> Diagnosis | None:
    """An ``undefined`` diagnosis where every entry of ``block`` that fails lies in a column
    with a NaN finite difference: forward gives NaN a step away from the point (sqrt, log or
    acos on the edge of its domain), so no derivative can be checked there, whatever backward
    says; gradcheck fails such a point too."""
    o, i = block.output, block.input
    if report.analytic is None or report.numerical is None or 2 in (o.parts, i.parts):
        return None
    a = report.analytic[o.offset:o.offset + o.size, i.offset:i.offset + i.size]
    n = report.numerical[o.offset:o.offset + o.size, i.offset:i.offset + i.size]
    failing = ~agree(a, n, report.atol, report.rtol)
    # a column whose finite differences hold a NaN has no derivative to check, and its other
    # entries fail too where backward divides by the point (0 / 0: NaN where grad_output is 0)
    undefined_column = n.isnan().any(0)
    if not bool(failing.any()) or not bool(undefined_column[failing.nonzero()[:, 1]].all()):
        return None
    r, c = (int(k) for k in (failing & n.isnan()).nonzero()[0])
    count = int(failing.sum())
    more = f" (and {count - 1} more {'entry' if count == 2 else 'entries'})" if count > 1 else ""
    return Diagnosis(block.name, "undefined", (
        f"no derivative here, not backward's fault: {o.label(r)} is NaN a step of eps from "
        f"{i.label(c)}{more}: the edge of forward's domain (sqrt or log at 0, acos at 1), "
        "where finite differences measure nothing and gradcheck fails too. Move the point "
        "(Regenerate) and check again"), 0.85)


# ------------------------------------------------------------------ extra calls


class _Calls:
    """Probes that call the Function again: backward's linearity and determinism, in-place
    changes, and finite differences at other steps for the worst entries."""

    def __init__(self, function: type[Function], args: list, report: Report, seed: int):
        self.function, self.args, self.report = function, args, report
        self.generator = torch.Generator().manual_seed(seed)
        self.inputs = [a.position for a in report.inputs]
        self.outputs = [a.position for a in report.outputs]
        self.forward_random = False  # found by whole_function: no hypothesis then holds
        self.outputs64 = True  # every output float64 (found by _random_grads)
        #: failing float32 blocks that pass at the same point in float64 (by half_precision)
        self.rounded: set[str] = set()
        #: the float64 report at the same point where it fails too: its blocks are diagnosed
        #: (float32's rounding, amplified at large inputs, hides a bug's pattern)
        self.again64: Report | None = None

    # ---- backward, through apply and the engine
    def _copies(self, dtype: torch.dtype | None = None) -> list:
        """Forward's arguments with every tensor copied (``dtype``: floating ones converted),
        so that no probe touches the caller's tensors, even a forward that works in place."""
        return [a.detach().to(dtypes.same_kind(dtype, a) if dtype else a.dtype).clone()
                if isinstance(a, torch.Tensor) else a for a in self.args]

    def _grads(self, grad_outputs, twice: bool = False, shift: float = 0.0):
        """(``shift``: every differentiated input moved by it, to another point)"""
        call = self._copies()
        for i in self.inputs if shift else ():
            call[i] = call[i] + shift
        leaves = {i: call[i].requires_grad_() for i in self.inputs}
        call = [leaves[i].clone() if i in leaves else a for i, a in enumerate(call)]
        outs = normalize_outputs(self.function, self.function.apply(*call))
        given = {i: call[i].detach().clone() for i in self.inputs}  # after forward's own edits
        chosen = [outs[k] for k in self.outputs]
        wanted = [leaves[i] for i in self.inputs]
        def fresh():  # (a backward may write into its grad_output; g1 is used again)
            return [g.clone() if isinstance(g, torch.Tensor) else g for g in grad_outputs]
        first = torch.autograd.grad(chosen, wanted, fresh(), allow_unused=True,
                                    retain_graph=twice)
        second: tuple[torch.Tensor, ...] | RuntimeError | None = None
        if twice:
            try:
                second = torch.autograd.grad(chosen, wanted, fresh(), allow_unused=True)
            except RuntimeError as exc:  # autograd saw a saved tensor modified in place
                if "inplace" not in str(exc):
                    raise
                second = exc
        changed = [self.report.inputs[k].name for k, i in enumerate(self.inputs)
                   if not torch.equal(call[i].detach(), given[i])]
        return first, second, changed

    def _random_grads(self):
        outs = normalize_outputs(self.function, self.function.apply(*self._copies()))
        # float32 grad_outputs are rounded when added: a tolerance of float64 would take that
        # rounding for a backward not linear in them
        self.outputs64 = all(outs[k].dtype in DOUBLE.values()
                             for k in self.outputs)
        return [torch.randn(outs[k].shape, generator=self.generator,
                            dtype=torch.complex128 if outs[k].is_complex() else torch.float64)
                .to(dtype=outs[k].dtype, device=outs[k].device) for k in self.outputs]

    def _same(self, x, y, finite_only: bool = False) -> bool:
        """``x`` and ``y`` (gradients) equal within rounding; NaN and Inf must sit in both at
        the same entries, or with ``finite_only`` are left out (linearity means nothing
        there: -inf + inf is NaN where backward(g1 + g2) may be inf)."""
        double = tuple(DOUBLE.values())
        tol = 1e-9 if self.report.numerical_dtype in double and self.outputs64 and all(
            a.dtype in double for a in x if a is not None) else max(
            [1e-4, *(16 * torch.finfo(a.dtype).eps for a in (*x, *y)
                     if a is not None and a.is_floating_point())])  # float16's is ~1e-3
        for p, q in zip(x, y):
            p = torch.zeros(()) if p is None else real_view(p.detach()).double().cpu()
            q = torch.zeros(()) if q is None else real_view(q.detach()).double().cpu()
            p, q = torch.broadcast_tensors(p, q)
            # NaN and Inf where both have them, the same, are the same (not nondeterminism)
            finite = p.isfinite() & q.isfinite()
            if not finite_only and not bool(((p == q) | (p.isnan() & q.isnan()))[~finite].all()):
                return False
            p, q = p[finite], q[finite]
            scale = max(float(p.abs().max()) if p.numel() else 0.0,
                        float(q.abs().max()) if q.numel() else 0.0, 1.0)
            if not bool(((p - q).abs() <= tol * scale).all()):
                return False
        return True

    def forward_mutates(self) -> list[Diagnosis]:
        """A ``mutates`` diagnosis where forward changes an input in place without marking
        it dirty: the caller's tensor changes, and a backward written for the value it had
        gets another one."""
        try:
            call = self._copies()
            before = [call[i].clone() for i in self.inputs]
            with torch.no_grad():
                outs = normalize_outputs(self.function, self.function.apply(*call))
        except Cancelled:
            raise
        except Exception:
            return []
        shared = {o.untyped_storage().data_ptr() for o in outs}
        changed = [self.report.inputs[k].name for k, (i, b) in
                   enumerate(zip(self.inputs, before))
                   if not same_values(call[i], b)
                   and call[i].untyped_storage().data_ptr() not in shared]
        if not changed:
            return []
        return [Diagnosis(None, "mutates", (
            f"{self.function.__name__}.forward changes {', '.join(changed)} in place and "
            "returns something else: the caller's tensor changes under it. Compute on a copy "
            "(x = x.clone()), or return the changed tensor marked with ctx.mark_dirty"), 0.85)]

    def returns_none(self) -> list[Diagnosis]:
        """An input that is differentiated (chosen: requires_grad, --grad, the grad box) whose
        gradient backward returns None: autograd counts it as zero. One diagnosis on its
        first failing block."""
        try:
            with torch.enable_grad():
                grads, _, _ = self._grads(self._random_grads())
        except Cancelled:
            raise
        except Exception:
            return []
        found = []
        failing_any = [b for b in self.report.blocks if not b.passed]
        if failing_any and all(g is None for g in grads):
            from customgrad.function.contract import returns_nothing

            if returns_nothing(self.function, "backward"):  # no gradient is named wrong
                return [Diagnosis(failing_any[0].name, "no_gradient", (
                    f"{self.function.__name__}.backward returns nothing: it has no return "
                    "statement with a value, so every gradient counts as zero. Return one "
                    "gradient per input of forward (None for a non-tensor)"), 0.95)]
        for axis, grad in zip(self.report.inputs, grads):
            failing = [b for b in self.report.blocks
                       if b.input.position == axis.position and not b.passed]
            if grad is None and failing:
                found.append(Diagnosis(failing[0].name, "no_gradient", (
                    f"{self.function.__name__}.backward returns None for {axis.name}, which "
                    "is differentiated, so its gradient counts as zero: return it, or leave "
                    f"{axis.name} out (requires_grad=False, --no-grad {axis.name}, or its grad "
                    "box unticked)"), 0.95))
            elif failing and _all_zero(grad) and self._zeros_elsewhere(axis.position):
                found.append(Diagnosis(failing[0].name, "no_gradient", (
                    f"{self.function.__name__}.backward returns zeros for {axis.name}, but the "
                    f"outputs depend on it (finite differences of up to "
                    f"{failing[0].max_abs_error:.3g} where backward gives 0): if {axis.name} is a "
                    "buffer (a running statistic, a constant, not trained), leave it out of "
                    f"the check (requires_grad=False, --no-grad {axis.name}, or its grad box "
                    "unticked) and return None for it; otherwise return its gradient"), 0.9))
        return found

    def _zeros_elsewhere(self, position: int) -> bool:
        """backward's gradient for input ``position`` is zero at another point too (every
        differentiated input moved by 1.5): zeros whatever the point (a buffer's), not a
        relu's at 0."""
        try:
            with torch.enable_grad():
                grads, _, _ = self._grads(self._random_grads(), shift=1.5)
        except Cancelled:
            raise
        except Exception:
            return False
        k = self.inputs.index(position)
        return k < len(grads) and _all_zero(grads[k])

    def random_forward(self) -> list[Diagnosis]:
        """A ``random_forward`` diagnosis where two forward calls at the same point (on fresh
        copies of its arguments) give other outputs: random numbers drawn in forward
        (dropout, noise) or state kept between calls. Each finite difference then measures
        the change of those, not the derivative: gradcheck fails such a Function too."""
        try:
            first = self._flat_outputs(self._copies())
            second = self._flat_outputs(self._copies())
        except Cancelled:
            raise
        except Exception:
            return []
        if same_values(first, second) or self._within_noise(first, second):
            return []
        self.forward_random = True
        return [Diagnosis(None, "random_forward", (
            f"{self.function.__name__}.forward gives other outputs at the same point on "
            "every call (random numbers drawn in forward, as dropout's mask or added noise, "
            "or state kept between calls), so finite differences measure the randomness, "
            "not the derivative, and gradcheck fails it too: draw the random tensor outside "
            "and pass it in (or draw it from a seeded torch.Generator) to check backward"),
            0.95)]

    def _within_noise(self, first: torch.Tensor, second: torch.Tensor) -> bool:
        """The two calls' outputs differ by less than moves a finite difference by atol
        (eps * atol), NaN where the other has NaN: the last bits of an atomic or threaded
        sum, not randomness that finite differences cannot follow."""
        if not torch.equal(first.isnan(), second.isnan()):
            return False
        gap = (first - second).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).abs().max()
        return float(gap) <= self.report.eps * self.report.atol

    def flat(self, block: Block) -> Diagnosis | None:
        """A ``straight_through`` diagnosis where every finite difference of ``block`` is
        exactly 0 while backward's entries that fail are not, and forward still moves when
        the input moves by more than eps: forward is piecewise constant (round, sign, floor,
        a threshold), its slope 0 wherever it has one."""
        report = self.report
        o, i = block.output, block.input
        if report.analytic is None or report.numerical is None or 2 in (o.parts, i.parts):
            return None
        a = report.analytic[o.offset:o.offset + o.size, i.offset:i.offset + i.size]
        n = report.numerical[o.offset:o.offset + o.size, i.offset:i.offset + i.size]
        if bool((n != 0).any()) or not bool(a.isfinite().all()):
            return None
        try:
            base = self._flat_outputs(self._copies(report.numerical_dtype))
            moves = any(not same_values(base, self._moved(i, how)) for how in _COARSE)
        except Cancelled:
            raise
        except Exception:
            return None
        if not moves:  # forward does not use this input at all: not a surrogate
            return None
        count = int((a != 0).sum())
        return Diagnosis(block.name, "straight_through", (
            f"forward is flat here: every finite difference of {o.name} with respect to "
            f"{i.name} is 0 (round, sign, floor or a threshold: piecewise constant), yet "
            f"backward gives {count:,} nonzero entries. A surrogate gradient on purpose (a "
            "straight-through estimator) is not forward's derivative, and gradcheck fails it "
            "too: check the surrogate against its own formula instead. Otherwise backward "
            "misses forward's zero slope (a mask, a clamp)"), 0.85)

    def _moved(self, axis: Axis, how: str) -> torch.Tensor:
        """Forward's outputs with input ``axis`` moved far beyond eps (``how``: ``"up"`` by
        half its scale, ``"down"``, or ``"negated"``)."""
        args = self._copies(self.report.numerical_dtype)
        x = real_view(args[axis.position])
        scale = 0.5 * (float(x.abs().max()) if x.numel() else 1.0) or 0.5
        if how == "negated":
            x.neg_()
        else:
            x.add_(scale if how == "up" else -scale)
        return self._flat_outputs(args)

    def half_precision(self) -> list[Diagnosis]:
        """A float16 or bfloat16 backward that passes at the same point in float64: its
        rounding (about 1e-3 and 8e-3 of each value, the size of rtol), not its formula,
        fails it. gradcheck fails it too. A float32 one likewise, where rtol asks for less
        than a thousand of float32's units (1e-7 of each value) of it: a tolerance set finer
        than float32 holds (a kink and an off-by-one were said of a right LayerNorm)."""
        low = [self.args[i].dtype for i in self.inputs
               if self.args[i].dtype in (torch.float16, torch.bfloat16, torch.float32)]
        if not low:
            return []
        report = self.report
        tight = report.rtol < 1e3 * torch.finfo(torch.float32).eps
        try:
            again = compare(self.function, self._copies(torch.float64), eps=report.eps,
                            atol=report.atol, rtol=report.rtol,
                            keep_matrices=report.analytic is not None and not tight,
                            differentiate={a.name: True for a in report.inputs})
        except Cancelled:
            raise
        except Exception:
            return []
        if not again.passed:
            if low[0] == torch.float32:  # blocks right in float64: float32's rounding only
                right = {b.name for b in again.blocks if b.passed}
                self.rounded = {b.name for b in report.blocks if not b.passed} & right
                if again.analytic is not None:
                    self.again64 = again
            return []
        name, dtype = self.function.__name__, str(low[0])[6:]
        if low[0] == torch.float32 and not tight:
            return [Diagnosis(None, "rounding", self._amplified(name), 0.9)]
        if low[0] == torch.float32:
            return [Diagnosis(None, "rounding", (
                f"rounding, not backward: {name}.backward computes in float32, whose values "
                f"are rounded to about {torch.finfo(torch.float32).eps:.1e} of their size; atol "
                f"{report.atol:g} and rtol {report.rtol:g} ask for closer than that, and the "
                "same Function at the same point in float64 passes. Check it in float64 "
                "(dtype=float64), or loosen rtol to 1e-5 or more for float32"), 0.9)]
        return [Diagnosis(None, "rounding", (
            f"rounding, not backward: {name}.backward computes in {dtype}, whose values are "
            f"rounded to about {torch.finfo(low[0]).eps:.0e} of their size, as large as rtol "
            f"{report.rtol:g}; the same Function at the same point in float64 passes. Check "
            "it in float64 (dtype=float64), or loosen rtol and atol for "
            f"{dtype}"), 0.9)]

    def _amplified(self, name: str) -> str:
        """Why float32 fails a Function that passes in float64 at a tolerance far above
        float32's units: forward's rounding grown by cancellation (x - mean at |x| ~ 1000
        keeps a few digits of the spread), the size of the inputs named."""
        sizes = [float(self.args[i].detach().abs().max()) for i in self.inputs
                 if self.args[i].numel() and self.args[i].is_floating_point()]
        big = f" (inputs as large as {max(sizes):.3g})" if sizes else ""
        return (f"rounding, not backward: {name} computes in float32 and at this point its "
                f"rounding is amplified{big}: a difference of nearly equal values, such as "
                "x - mean at large x, keeps only a few of float32's digits, and the Jacobian "
                "inherits the error; the same Function at the same point in float64 passes. "
                "Check it in float64 (dtype=float64, --dtype float64), or at inputs nearer 0")

    def whole_function(self) -> list[Diagnosis]:
        try:
            return self._whole_function()
        except Cancelled:
            raise
        except Exception:
            return []

    def _whole_function(self) -> list[Diagnosis]:
        name = self.function.__name__
        g1, g2 = self._random_grads(), self._random_grads()
        with torch.enable_grad():
            r1, again, changed = self._grads(g1, twice=True)
            fresh, _, _ = self._grads(g1)
        if changed:
            return [Diagnosis(None, "mutates", (
                f"{name}.backward changes the tensor it saved for {', '.join(changed)} in "
                "place, so every later call sees another value: work on a copy"), 0.95)]
        graph_differs = isinstance(again, RuntimeError) or not self._same(r1, again)
        fresh_differs = not self._same(r1, fresh)
        if graph_differs and fresh_differs and not isinstance(again, RuntimeError):
            return [Diagnosis(None, "nondeterministic", (
                f"{name}.backward gives different gradients for the same grad_output at the "
                "same point (random numbers, atomics, or state kept between calls)"), 0.9)]
        if graph_differs:
            return [Diagnosis(None, "mutates", (
                f"{name}.backward changes what forward saved on ctx in place: a second "
                "backward through the same graph gives another result"), 0.9)]
        if fresh_differs:  # forward is random (dropout): finite differences cannot follow it
            self.forward_random = True
            return []
        with torch.enable_grad():
            doubled, _, _ = self._grads([2 * g for g in g1])
            r2, _, _ = self._grads(g2)
            summed, _, _ = self._grads([a + b for a, b in zip(g1, g2)])
        twice = [None if r is None else 2 * r for r in r1]
        added = [None if a is None and b is None else
                 (a if b is None else b if a is None else a + b) for a, b in zip(r1, r2)]
        if self._same(doubled, twice, finite_only=True) \
                and self._same(summed, added, finite_only=True):
            return []
        how = ("returns the same gradients whatever grad_output is"
               if self._same(r1, r2) else "is not linear in grad_output: backward(2 g) is not "
               "2 backward(g)")
        return [Diagnosis(None, "ignores_grad_output", (
            f"{name}.backward {how}: multiply by grad_output (the chain rule) — the gradient "
            "of the loss is grad_output times d output / d input"), 0.95)]

    # ---- forward, at other steps
    def _flat_outputs(self, args) -> torch.Tensor:
        with torch.no_grad():
            outs = normalize_outputs(self.function, self.function.apply(*args))
        return torch.cat([flat_real(outs[k].detach()).double().cpu() for k in self.outputs])

    def _at(self, axis: Axis, flat: int, step: float) -> torch.Tensor:
        args = self._copies(self.report.numerical_dtype)
        real_view(args[axis.position]).view(-1)[flat] += step
        return self._flat_outputs(args)

    @staticmethod
    def _rounding(central: dict, exact: float, tol) -> bool:
        """Rounding noise shrinks as the step grows (truncation error grows with it): the
        differences at eps stand far off two longer steps that settle on each other, and
        backward agrees with where they settle."""
        for k1, k2 in itertools.pairwise(_STEPS[1:]):
            settled = abs(central[k1] - central[k2])
            off = abs(central[1] - central[k2])
            if off > tol(central[k2]) and off > 3 * settled \
                    and abs(exact - central[k2]) <= FIT_SLACK * tol(central[k2]):
                return True
        return False

    def point(self, block: Block) -> Diagnosis | None:
        try:
            return self._point(block)
        except Cancelled:
            raise
        except Exception:
            return None

    def _point(self, block: Block) -> Diagnosis | None:
        report, eps = self.report, self.report.eps
        o, i = block.output, block.input
        # (diagnose asks for points only where the report kept both matrices)
        assert report.analytic is not None and report.numerical is not None
        a = report.analytic[o.offset:o.offset + o.size, i.offset:i.offset + i.size].double()
        n = report.numerical[o.offset:o.offset + o.size, i.offset:i.offset + i.size].double()
        score = (a - n).abs() / (report.atol + report.rtol * n.abs())
        score[agree(a, n, report.atol, report.rtol)] = 0
        score = score.nan_to_num(nan=math.inf)
        picked = score.reshape(-1).topk(min(_POINT_ENTRIES, block.mismatches)).indices
        base_outputs = self._flat_outputs(self._copies(report.numerical_dtype))

        def tol(x: float) -> float:
            return report.atol + report.rtol * abs(x)

        verdicts, evidence = [], None
        for flat in picked.tolist():
            r, c = divmod(flat, i.size)
            row = o.offset + r
            base = base_outputs[row]
            central, jump = {}, {}
            for k in _STEPS:
                plus, minus = self._at(i, c, k * eps)[row], self._at(i, c, -k * eps)[row]
                central[k] = float(plus - minus) / (2 * k * eps)
                if k in (1, 10):
                    right, left = float(plus - base) / (k * eps), float(base - minus) / (k * eps)
                    jump[k] = abs(right - left)
                    if k == 1:
                        evidence_slopes = (right, left)
            exact = float(a[r, c])
            if self._rounding(central, exact, tol):
                verdicts.append("rounding")
            elif jump[1] > tol(central[1]) and jump[10] < 3 * jump[1]:
                # a kink's slopes differ by as much at ten times the step; a smooth forward's
                # one-sided slopes differ by its curvature times the step (ten times as much)
                verdicts.append("kink")
            else:
                return None  # a smooth forward that backward gets wrong: not the point's fault
            if evidence is None:
                evidence = (o.label(r), i.label(c), exact, central, *evidence_slopes)
        if not verdicts:
            return None
        assert evidence is not None  # (taken with the first verdict)
        kind = max(set(verdicts), key=verdicts.count)
        out_label, in_label, exact, central, right, left = evidence
        if kind == "rounding":
            big = min(_STEPS[1:], key=lambda k: abs(exact - central[k]))
            detail = (f"rounding, not backward: d {out_label}/d {in_label} by finite "
                      f"differences is {central[1]:.6g} at eps {eps:g} but "
                      f"{central[big]:.6g} at eps {big * eps:g}, closer to backward's "
                      f"{exact:.6g}: forward loses precision (float32 inside?). "
                      "Use float64, or a larger eps")
        else:
            detail = (f"a kink, not backward: forward is not differentiable at {in_label} "
                      f"(slope {right:.4g} to the right, {left:.4g} to the left, for "
                      f"{out_label}): abs, relu, max, sort or floor meet there. Move the point "
                      "(Regenerate) and check again")
        return Diagnosis(block.name, kind, detail, 0.8)


def _all_zero(grad: object) -> bool:
    """A gradient tensor backward returned that is zero everywhere (at random grad_outputs:
    backward gives zeros whatever the outputs' gradients)."""
    return (isinstance(grad, torch.Tensor) and grad.numel() > 0
            and not bool(grad.ne(0).any()))
