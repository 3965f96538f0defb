"""Everything gradcheck and gradgradcheck check, as named sub-checks with a verdict each.

``run(function, args, checks=...)`` gives ``{name: SubCheck}``, each passed, failed or skipped
with the reason. The defaults follow gradcheck's (``check_undefined_grad=True``; forward AD,
batched gradients, gradient dtypes and double backward off, ``nondet_tol=0``); any can be
switched on or off by name. Calls go through ``apply`` and the autograd engine, as gradcheck's.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import torch
from torch.autograd import Function, forward_ad

from customgrad.checking.backward_function import seed_apart
from customgrad.checking.beyond_jacobian import double_backward_check, verified_double_backward
from customgrad.checking.findings import SubCheck
from customgrad.checking.jacobian.comparison import compare
from customgrad.checking.jacobian.limits import ATOL, EPS, FLOAT32_FLOOR, RTOL
from customgrad.defaults import CHECK_NAMES, DEFAULT_CHECKS, parse_checks
from customgrad.errors import FunctionError, SpecError
from customgrad.function.contract import normalize_outputs, raised, run_user
from customgrad.function.customop import op_of
from customgrad.function.dtypes import DOUBLE, differentiable, real_view, same_kind

#: every sub-check, in the order they run; gradcheck's defaults (check_undefined_grad=True)
NAMES, DEFAULT = CHECK_NAMES, DEFAULT_CHECKS
parse = parse_checks


def defaults_for(function: type[Function]) -> tuple[str, ...]:
    """:data:`DEFAULT`, and for a torch.library custom op also ``opcheck``'s own tests."""
    return (*DEFAULT, "opcheck") if op_of(function) is not None else DEFAULT


def run(function: type[Function], args: list, checks: Iterable[str] = DEFAULT, *, eps: float = EPS,
        atol: float = ATOL, rtol: float = RTOL, nondet_tol: float = 0.0,
        report=None) -> dict[str, SubCheck]:
    """The sub-checks named in ``checks``, in :data:`NAMES` order. ``report``: a Jacobian
    report already computed at ``args`` (the ``jacobian`` sub-check then reuses it)."""
    wanted = set(checks)
    unknown = wanted - set(NAMES)
    if unknown:
        raise SpecError(f"unknown check {', '.join(sorted(unknown))}: choose from "
                        f"{', '.join(NAMES)}.", field="checks")
    ctx = _Context(function, list(args), eps, atol, rtol, nondet_tol)
    if report is not None:  # the inputs the Jacobian differentiated, as gradcheck's
        ctx.pos = [a.position for a in report.inputs]
    out: dict[str, SubCheck] = {}
    for name in NAMES:
        if name not in wanted:
            continue
        if name == "opcheck":
            out.update((c.name, c) for c in ctx.opcheck())
        elif name == "jacobian":
            jac = report if report is not None else compare(
                function, ctx.args, eps=eps, atol=atol, rtol=rtol, keep_matrices=False)
            out[name] = SubCheck(name, "passed" if jac.agrees else "failed",
                                 jac.summary(jacobian_only=True))
        else:
            out[name] = getattr(ctx, name)()
    return out


def _copy(value: object) -> object:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _close(x: torch.Tensor, y: torch.Tensor, atol: float, rtol: float) -> bool:
    """Within gradcheck's rule, entry by entry; a complex entry by its real and imaginary
    parts."""
    x, y = real_view(x.detach()).double().cpu(), real_view(y.detach()).double().cpu()
    return bool(((x - y).abs() <= atol + rtol * y.abs()).all())


class _Context:
    def __init__(self, function: type[Function], args, eps, atol, rtol, nondet_tol):
        self.function, self.args = function, args
        self.eps, self.atol, self.rtol, self.nondet_tol = eps, atol, rtol, nondet_tol
        self.name = function.__name__
        self.pos = [i for i, a in enumerate(args)
                    if isinstance(a, torch.Tensor) and differentiable(a) and a.numel()]
        # not seed 0, the inputs' default: the direction of input x was x itself, along
        # which a norm's jvp forgetting its 1/||x|| agrees (a false PASS); nor the inputs'
        # seed where it is SEED itself
        self.generator = torch.Generator().manual_seed(seed_apart(args))

    # ---- helpers
    def _leaves(self, dtype=None):
        leaves = {i: self.args[i].detach().to(same_kind(dtype or self.args[i].dtype,
                                                        self.args[i])).clone()
                  .requires_grad_() for i in self.pos}
        # forward gets copies: one that works in place on its input must not touch a leaf
        call = [leaves[i].clone() if i in leaves else _copy(a) for i, a in enumerate(self.args)]
        return leaves, call

    def _forward(self, call):
        raw = run_user(self.function, "forward", lambda: self.function.apply(*call))
        outs = normalize_outputs(self.function, raw)
        return outs, [k for k, o in enumerate(outs)
                      if differentiable(o) and o.requires_grad and o.numel()]

    def _randn_like(self, t: torch.Tensor) -> torch.Tensor:
        return torch.randn(t.shape, generator=self.generator, dtype=DOUBLE[t.is_complex()]) \
            .to(dtype=t.dtype, device=t.device)

    def _backward(self, grad_outputs, dtype=None):
        leaves, call = self._leaves(dtype)
        outs, diff = self._forward(call)
        grads = run_user(self.function, "backward", lambda: torch.autograd.grad(
            [outs[k] for k in diff], [leaves[i] for i in self.pos],
            [g.to(outs[k].dtype) for k, g in zip(diff, grad_outputs(outs, diff))],
            allow_unused=True))
        return grads, leaves

    def _has(self, method: str) -> bool:
        own = getattr(self.function, method, None)
        base = getattr(torch.autograd.Function, method, None)
        return own is not None and getattr(own, "__func__", own) is not getattr(
            base, "__func__", base)

    # ---- the sub-checks
    def double_backward(self) -> SubCheck:
        fast = verified_double_backward(self.function, self.args, self.eps, self.atol,
                                        self.rtol, self.pos)
        if fast is not None:
            return SubCheck("double_backward", "passed" if fast.passed else "failed",
                            fast.message)
        db = double_backward_check(self.function, self.args, self.eps, self.atol, self.rtol,
                                   self.pos)
        if not db.supported:
            return SubCheck("double_backward", "skipped", db.message)
        return SubCheck("double_backward", "passed" if db.passed else "failed", db.message)

    def forward_ad(self) -> SubCheck:
        """jvp against a central directional difference, per input, in float64 (a complex
        input along a random complex direction u: the tangent of f(x + t u), t real, as
        gradcheck's check_forward_ad compares it)."""
        if not self._has("jvp"):
            return SubCheck("forward_ad", "skipped", f"{self.name} defines no jvp staticmethod: "
                            "it does not support forward-mode AD.")
        try:
            return self._forward_ad(torch.float64, self.eps, self.atol, self.rtol)
        except FunctionError:  # a Function that refuses float64: the float32 rule
            floor = FLOAT32_FLOOR
            return self._forward_ad(None, max(self.eps, floor["eps"]),
                                    max(self.atol, floor["atol"]),
                                    max(self.rtol, floor["rtol"]))

    def _forward_ad(self, dtype, eps, atol, rtol) -> SubCheck:
        base = [a.detach().to(same_kind(dtype, a) if dtype else a.dtype).clone()
                if i in self.pos else a for i, a in enumerate(self.args)]
        for i in self.pos:
            u = self._randn_like(base[i])
            with forward_ad.dual_level():  # copies: forward may work in place on its input
                call = [forward_ad.make_dual(a.clone(), u) if k == i else _copy(a)
                        for k, a in enumerate(base)]
                outs = normalize_outputs(self.function, run_user(
                    self.function, "forward", lambda c=call: self.function.apply(*c)))
                tangents = [forward_ad.unpack_dual(o).tangent for o in outs]
            shifted = [[a + s * eps * u if k == i else _copy(a) for k, a in enumerate(base)]
                       for s in (1, -1)]
            with torch.no_grad():
                plus, minus = (normalize_outputs(self.function, run_user(
                    self.function, "forward", lambda c=c: self.function.apply(*c)))
                    for c in shifted)
            for k, (t, p, m) in enumerate(zip(tangents, plus, minus)):
                if not differentiable(p):
                    continue
                double = DOUBLE[p.is_complex()]
                numerical = (p.to(double) - m.to(double)) / (2 * eps)
                analytic = torch.zeros_like(numerical) if t is None else t
                if not _close(analytic, numerical, atol, rtol):
                    worst = float((analytic.to(double) - numerical).abs().max())
                    return SubCheck("forward_ad", "failed", (
                        f"jvp disagrees with finite differences for output {k} along a random "
                        f"direction of input {i} (max abs error {worst:.3g})"))
        return SubCheck("forward_ad", "passed", "jvp agrees with finite differences along a "
                        "random direction of each input.")

    def batched_grad(self) -> SubCheck:
        """gradcheck's check_batched_grad: for each output, backward through autograd.grad
        under torch.vmap (a batch of two grad_outputs) against one call per grad_output, by
        torch.allclose. It batches the backward pass, so it needs no vmap staticmethod."""
        leaves, call = self._leaves()
        outs, diff = self._forward(call)
        wanted = [leaves[i] for i in self.pos]
        for k in diff:
            def vjp(v, out=outs[k]):
                grads = torch.autograd.grad(out, wanted, v, retain_graph=True,
                                            allow_unused=True)
                return tuple(torch.zeros([], dtype=w.dtype, device=w.device).expand(w.shape)
                             if g is None else g for g, w in zip(grads, wanted))
            batch = [self._randn_like(outs[k]) for _ in range(2)]
            one = [run_user(self.function, "backward", lambda v=v: vjp(v)) for v in batch]
            expected = [torch.stack(shards) for shards in zip(*one)]
            try:
                got = _batched(vjp, torch.stack(batch))
            except Exception as exc:
                return SubCheck("batched_grad", "failed", (
                    f"backward cannot run under torch.vmap (for output {k}): "
                    f"{raised(self.function, exc)}"))
            for i, x, y in zip(self.pos, got, expected):
                if not torch.allclose(x, y):
                    return SubCheck("batched_grad", "failed", (
                        f"backward under vmap differs from one call at a time for input {i} "
                        f"(output {k}, a batch of 2 grad_outputs)"))
        return SubCheck("batched_grad", "passed", "backward under vmap equals one call at a "
                        "time.")

    def undefined_grad(self) -> SubCheck:
        """As gradcheck's check_undefined_grad: undefined (or zero) grad_outputs in, undefined
        or zero gradients out, for all outputs at once and each alone. A NaN or Inf entry
        fails it, as gradcheck's "backward not multiplied by grad_output" does (a backward
        dividing by grad_output passed here while gradcheck failed it)."""
        undefined = torch._C._functions.UndefinedGrad()

        def attempt(which) -> str | None:
            leaves, call = self._leaves()
            outs, diff = self._forward(call)
            # (torch's stub says UndefinedGrad gives a list; called on one tensor it gives one)
            chosen: list[torch.Tensor] = [
                undefined(outs[k]) if which is None or j == which  # type: ignore[misc]
                else outs[k] for j, k in enumerate(diff)]
            try:
                grads = torch.autograd.grad(chosen, [leaves[i] for i in self.pos],
                                            [torch.zeros_like(o) for o in chosen],
                                            allow_unused=True)
            except Exception as exc:
                return (f"backward fails when a grad_output is undefined (None): "
                        f"{raised(self.function, exc)}")
            for i, g in zip(self.pos, grads):
                if g is None or bool((g == 0).all()):
                    continue
                if bool(g.isfinite().all()):
                    return (f"backward returns a nonzero gradient for input {i} when the "
                            "grad_outputs are undefined or zero")
                return (f"backward returns NaN or Inf for input {i} when the grad_outputs "
                        "are undefined or zero (a division by grad_output, or a NaN or Inf "
                        "that forward saved: zero times it is still NaN)")
            return None

        _, diff = self._forward(self._leaves()[1])
        for which in [None, *range(len(diff))] if len(diff) > 1 else [None]:
            problem = attempt(which)
            if problem:
                return SubCheck("undefined_grad", "failed", problem)
        return SubCheck("undefined_grad", "passed", "undefined or zero grad_outputs give "
                        "undefined or zero gradients.")

    def grad_dtypes(self) -> SubCheck:
        """Each gradient backward returns has its input's dtype and device."""
        outs, diff = self._forward(self._leaves()[1])
        node = outs[diff[0]].grad_fn if diff else None
        if node is None or getattr(node, "_forward_cls", None) is not self.function:
            return SubCheck("grad_dtypes", "skipped", "the output's graph node is not the "
                            "Function's own.")
        # what the engine hands backward: zeros for an output nobody differentiates
        grads = [torch.ones_like(o) if k in diff else
                 torch.zeros_like(o) if differentiable(o) else None
                 for k, o in enumerate(outs)]
        raw = run_user(self.function, "backward",
                       lambda: self.function.backward(node, *grads))
        raw = raw if isinstance(raw, tuple) else (raw,)
        for i in self.pos:
            g = raw[i] if i < len(raw) else None
            if isinstance(g, torch.Tensor) and (g.dtype, g.device) != (
                    self.args[i].dtype, self.args[i].device):
                return SubCheck("grad_dtypes", "failed", (
                    f"backward returns a {str(g.dtype)[6:]} gradient on {g.device} for input "
                    f"{i}, which is {str(self.args[i].dtype)[6:]} on {self.args[i].device}"))
        return SubCheck("grad_dtypes", "passed", "every gradient has its input's dtype and "
                        "device.")

    def nondeterminism(self) -> SubCheck:
        """Two backward calls with the same grad_output agree within nondet_tol."""
        state = torch.Generator().manual_seed(1)
        fixed: list[torch.Tensor] = []

        def grads(outs, diff):
            if not fixed:
                fixed.extend(torch.randn(outs[k].shape, generator=state,
                                         dtype=DOUBLE[outs[k].is_complex()])
                             .to(device=outs[k].device) for k in diff)
            return fixed

        first, _ = self._backward(grads)
        second, _ = self._backward(grads)
        for i, x, y in zip(self.pos, first, second):
            if x is None and y is None:
                continue
            x = torch.zeros(()) if x is None else x
            y = torch.zeros(()) if y is None else y
            gap = float((real_view(x).double().cpu() - real_view(y).double().cpu()).abs().max())
            if gap > self.nondet_tol:
                return SubCheck("nondeterminism", "failed", (
                    f"two backward calls with the same grad_output differ by {gap:.3g} for "
                    f"input {i} (nondet_tol {self.nondet_tol:g})"))
        return SubCheck("nondeterminism", "passed", f"two backward calls agree within "
                        f"nondet_tol {self.nondet_tol:g}.")

    def opcheck(self) -> list[SubCheck]:
        """torch.library.opcheck's own tests of a custom op's registration, one sub-check
        each (they do not compare the registered backward with the true derivative)."""
        op = op_of(self.function)
        if op is None:
            return [SubCheck("opcheck", "skipped", f"{self.name} is not a torch.library "
                             "custom op.")]
        results = torch.library.opcheck(op, tuple(self.args), raise_exception=False)
        found = []
        for test, result in results.items():
            name = "opcheck_" + test.removeprefix("test_")
            if result == "SUCCESS":
                found.append(SubCheck(name, "passed", f"torch.library.opcheck's {test}."))
            elif isinstance(result, str):
                found.append(SubCheck(name, "skipped", f"torch.library.opcheck's {test}: "
                                      f"{result}."))
            else:
                first = str(result).strip().splitlines()[0] if str(result).strip() else ""
                found.append(SubCheck(name, "failed", f"torch.library.opcheck's {test}: "
                                      f"{type(result).__name__}: {first}"))
        return found


def _batched(vjp, stacked: torch.Tensor):
    """``vjp`` under torch.vmap over ``stacked``'s first dimension; where torch.vmap cannot
    run it, under gradcheck's own vmap (``torch._vmap_internals``, the batching
    ``check_batched_grad`` uses) before the first error is raised. torch.vmap runs a
    Function's ``vmap`` staticmethod (a numpy backward batched by its rule), which gradcheck's
    does not; gradcheck's runs a backward calling a Function without ``setup_context`` (as
    StyleGAN's blur calls its BlurFunctionBackward), which torch.vmap refuses."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="There is a performance drop")
        try:
            return torch.vmap(vjp)(stacked)
        except Exception as first:
            legacy = getattr(getattr(torch, "_vmap_internals", None), "vmap", None)
            if legacy is None:
                raise
            warnings.filterwarnings("ignore", message="Please use `torch.vmap`")
            try:
                return legacy(vjp)(stacked)
            except Exception:
                raise first from None
