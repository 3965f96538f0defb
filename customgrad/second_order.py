"""Second order drawn like the first: the Jacobian of backward's outputs with respect to its
inputs and grad_output, analytic (autograd through the user's backward) against finite
differences of backward, compared, reported and diagnosed by the first-order machinery.

This is gradgradcheck's check: it runs gradcheck on the function (inputs, grad_outputs) ->
gradients, with grad_outputs drawn at random. Here that function becomes a Function of its
own (:func:`backward_as_function`) whose forward is the user's backward, run with
``create_graph``, and whose backward differentiates that graph; the first-order
:func:`customgrad.jacobian.compare` then checks it as it checks any Function.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch
from torch.autograd import Function

from customgrad.errors import FunctionError, SpecError
from customgrad.inputs import forward_parameters, with_defaults

if TYPE_CHECKING:
    from customgrad.jacobian.report import Report

#: the seed of the random grad_outputs (gradgradcheck draws them at random too)
SEED = 0
#: the most entries of a second-order matrix :func:`beside` draws without being asked: the
#: app computes it after every first-order check, before that verdict is shown (20,000
#: entries, about 100 inputs: 0.2-0.8 s on a shared 2-core machine; the gallery's are 1,000
#: to 3,500, 0.1-0.3 s)
DRAWN_ENTRIES = 20_000


def _grad_output_names(count: int) -> list[str]:
    return ["grad_output"] if count == 1 else [f"grad_output{k}" for k in range(count)]


def _on_graph(outs: object) -> list[torch.Tensor]:
    """forward's outputs that backward gives a gradient for (the differentiable ones)."""
    return [o for o in (outs if isinstance(outs, tuple) else (outs,))
            if isinstance(o, torch.Tensor) and o.requires_grad]


def _draw_grad_outputs(function: type[Function], args: list, positions: list[int]) -> list:
    """One grad_output per differentiable output of ``function`` at ``args`` (seeded normal
    draws, as gradgradcheck draws them at random)."""
    call = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    with torch.enable_grad():
        leaves = [a.requires_grad_() if i in positions else a for i, a in enumerate(call)]
        outs = function.apply(*[a.clone() if isinstance(a, torch.Tensor) else a
                                for a in leaves])
    outs = _on_graph(outs)
    if not outs:
        raise SpecError(f"{function.__name__} has no differentiable output: no backward to "
                        "differentiate.")
    gen = torch.Generator().manual_seed(SEED)
    return [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in outs]


def backward_as_function(function: type[Function], args: list,
                         positions: list[int]) -> tuple[type, list, dict[str, bool]]:
    """(a Function whose forward is ``function``'s backward, its arguments, which of them to
    differentiate): forward's arguments then one grad_output per differentiable output
    (drawn from a normal distribution, seeded), returning the gradients of the arguments at
    ``positions``."""
    params = [p.name for p in forward_parameters(function)]
    grad_outputs = _draw_grad_outputs(function, args, positions)
    names = [*params, *_grad_output_names(len(grad_outputs))]
    count = len(params)

    def forward(ctx, *values):
        inputs, gos = list(values[:count]), values[count:]
        # called directly under autograd (customgrad.jacobian.exact's reference): the
        # gradients stay on the graph of the values given, so autograd differentiates them
        traced = torch.is_grad_enabled()
        with torch.enable_grad():
            leaves = [(a if traced and a.requires_grad else a.detach().requires_grad_())
                      if i in positions else a for i, a in enumerate(inputs)]
            go_leaves = [g if traced and g.requires_grad else g.detach().requires_grad_()
                         for g in gos]
            out = function.apply(*[a.clone() if isinstance(a, torch.Tensor) else a
                                   for a in leaves])
            out = _on_graph(out)
            wrt = [leaves[i] for i in positions]
            grads = torch.autograd.grad(out, wrt, go_leaves, create_graph=True,
                                        allow_unused=True)
        filled = [torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]
        ctx.graph = (filled, [leaves[i] for i in positions] + go_leaves)
        return tuple(filled) if traced else tuple(g.detach() for g in filled)

    def backward(ctx, *ggs):
        grads, wrt = ctx.graph
        linked = [(g, gg) for g, gg in zip(grads, ggs) if g.requires_grad and gg is not None]
        found: list = [None] * len(wrt)
        if linked:
            found = list(torch.autograd.grad([g for g, _ in linked], wrt,
                                             [gg for _, gg in linked], retain_graph=True,
                                             allow_unused=True))
        full: list = [None] * (count + len(grad_outputs))
        for k, i in enumerate(positions):
            full[i] = found[k]
        for k in range(len(grad_outputs)):
            full[count + k] = found[len(positions) + k]
        return tuple(full)

    forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    wrapper = type(f"{function.__name__}.backward", (torch.autograd.Function,),
                   {"forward": staticmethod(forward), "backward": staticmethod(backward),
                    "customgrad_output_names": tuple(f"grad_{names[i]}" for i in positions)})
    differentiate = {n: (i in positions or i >= count) for i, n in enumerate(names)}
    return wrapper, [*args, *grad_outputs], differentiate


def double_backward_report(function: type[Function], args: list, *,
                           positions: list[int] | None = None,
                           differentiate: Mapping[str, bool] | None = None,
                           diagnose: bool = True, **options):
    """The first-order report of ``function``'s backward (see the module's docstring):
    blocks d grad_x / d x and d grad_x / d grad_output, its worst entry, verdict and (when
    it fails and ``diagnose``) diagnoses. ``positions`` (or ``differentiate``, by parameter
    name) chooses the inputs as the first order does; ``options`` go to
    :func:`customgrad.jacobian.compare`."""
    from customgrad.jacobian.probe import differentiated_inputs
    from customgrad.verification import CheckOptions, verify

    args = with_defaults(function, args)
    if positions is None:
        params = [p.name for p in forward_parameters(function)]
        positions, _ = differentiated_inputs(function, args, params, [], differentiate)
    wrapper, wrapper_args, which = backward_as_function(function, args, positions)
    hooks = {k: options.pop(k) for k in ("progress", "should_stop", "allocate") if k in options}
    # no sub-checks: this is the double_backward sub-check's own report
    checked = CheckOptions(**options, differentiate=which, checks=frozenset(), diagnose=diagnose)
    try:
        report = verify(wrapper, wrapper_args, checked, **hooks)
    except FunctionError as exc:
        raise FunctionError(f"{function.__name__}'s backward could not be differentiated "
                            f"(double backward): {exc}", details=exc.details,
                            phase="backward") from None
    # the notes speak of the Function checked, whose backward is the double backward; so do
    # the diagnoses (not "F.backward.backward")
    return dataclasses.replace(
        report, notes=[f"double {n}" if n.startswith("backward ") else n for n in report.notes],
        diagnoses=[dataclasses.replace(d, detail=d.detail.replace(
            f"{wrapper.__name__}.backward", f"{function.__name__}'s double backward"))
            for d in report.diagnoses])


def double_backward_json(problem, checks: Mapping) -> dict:
    """``check --double --json``'s ``double_backward`` (nothing where ``checks``, the
    sub-checks run, has none): the sub-check's verdict (gradgradcheck's) and message, with the
    second-order report's keys where double backward is supported."""
    check = checks.get("double_backward")
    if check is None:
        return {}
    data = {"supported": check.status != "skipped", "passed": check.passed,
            "message": check.detail}
    if data["supported"]:
        s = problem.settings
        report = double_backward_report(problem.function, problem.args, eps=s.eps, atol=s.atol,
                                        rtol=s.rtol, memory_cap=s.memory_cap,
                                        differentiate=s.differentiate)
        data.update((k, v) for k, v in report.to_dict().items() if k != "passed")
    return {"double_backward": data}


def beside(report: Report, function: type, args: list, *,
           asked: bool = False) -> tuple[Report | None, str]:
    """The second-order report that goes with the first-order ``report`` (checked at
    ``args``, with its inputs and tolerances), and ""; or None and why it is not drawn: a
    backward marked @once_differentiable (gradgradcheck refuses it too), more than
    :data:`DRAWN_ENTRIES` entries unless ``asked``, or the double backward raised. A
    backward autograd cannot differentiate (it leaves torch) fails, as in gradgradcheck."""
    from customgrad.checks import once_differentiable

    positions = [a.position for a in report.inputs]
    if not positions:
        return None, "nothing is differentiated: no backward to differentiate."
    rows = sum(a.size for a in report.inputs)
    entries = rows * (rows + sum(a.size for a in report.outputs))
    if once_differentiable(function):
        return None, f"{function.__name__}.backward is marked @once_differentiable: no " \
            "double backward."
    if entries > DRAWN_ENTRIES and not asked:
        return None, (f"not computed: {entries:,} entries (over {DRAWN_ENTRIES:,}); "
                      "check with second order shown to compute it.")
    try:
        second = double_backward_report(function, args, positions=positions, eps=report.eps,
                                        atol=report.atol, rtol=report.rtol)
    except (FunctionError, SpecError) as exc:
        return None, str(exc)
    except Exception as exc:  # the user's forward or backward, outside the checked calls
        return None, f"double backward could not run: {type(exc).__name__}: {exc}"
    return second, ""
