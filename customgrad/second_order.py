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

import inspect
from collections.abc import Mapping

import torch

from customgrad.errors import FunctionError, SpecError
from customgrad.inputs import forward_parameters, with_defaults

#: the seed of the random grad_outputs (gradgradcheck draws them at random too)
SEED = 0


def _grad_output_names(count: int) -> list[str]:
    return ["grad_output"] if count == 1 else [f"grad_output{k}" for k in range(count)]


def _on_graph(outs: object) -> list[torch.Tensor]:
    """forward's outputs that backward gives a gradient for (the differentiable ones)."""
    return [o for o in (outs if isinstance(outs, tuple) else (outs,))
            if isinstance(o, torch.Tensor) and o.requires_grad]


def _draw_grad_outputs(function: type, args: list, positions: list[int]) -> list:
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


def backward_as_function(function: type, args: list,
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
        grads = [torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]
        ctx.graph = (grads, [leaves[i] for i in positions] + go_leaves)
        return tuple(grads) if traced else tuple(g.detach() for g in grads)

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


def double_backward_report(function: type, args: list, *, positions: list[int] | None = None,
                           differentiate: Mapping[str, bool] | None = None,
                           diagnose: bool = True, **options):
    """The first-order report of ``function``'s backward (see the module's docstring):
    blocks d grad_x / d x and d grad_x / d grad_output, its worst entry, verdict and (when
    it fails and ``diagnose``) diagnoses. ``positions`` (or ``differentiate``, by parameter
    name) chooses the inputs as the first order does; ``options`` go to
    :func:`customgrad.jacobian.compare`."""
    from customgrad import jacobian
    from customgrad.diagnosis import diagnose as diagnoses_of
    from customgrad.jacobian.probe import differentiated_inputs

    args = with_defaults(function, args)
    if positions is None:
        params = [p.name for p in forward_parameters(function)]
        positions, _ = differentiated_inputs(function, args, params, [], differentiate)
    wrapper, wrapper_args, which = backward_as_function(function, args, positions)
    try:
        report = jacobian.compare(wrapper, wrapper_args, differentiate=which, **options)
        if diagnose and not report.passed and report.analytic is not None:
            report.diagnoses = diagnoses_of(report, wrapper, wrapper_args)
    except FunctionError as exc:
        raise FunctionError(f"{function.__name__}'s backward could not be differentiated "
                            f"(double backward): {exc}", details=exc.details,
                            phase="backward") from None
    report.function = wrapper.__name__
    # the notes speak of the Function checked, whose backward is the double backward
    report.notes = [f"double {n}" if n.startswith("backward ") else n for n in report.notes]
    return report


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
