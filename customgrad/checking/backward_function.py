"""A Function's backward as a Function of its own: forward is the user's backward, run
with ``create_graph`` on (inputs, grad_outputs drawn at random), and backward differentiates
that graph. gradgradcheck's check is the first-order check of this Function
(:mod:`customgrad.checking.second_order` draws and reports it;
:mod:`customgrad.checking.beyond_jacobian` gives its verdict as a sub-check). A leaf: torch and the
Function's signature only."""

from __future__ import annotations

import inspect

import torch
from torch.autograd import Function

from customgrad.errors import SpecError
from customgrad.function.inputs import forward_parameters

#: the seed of the random grad_outputs (gradgradcheck draws them at random too), and of the
#: sub-checks' random directions; not 0, the seed inputs are drawn with by default
#: (``--seed``, the app's): with it, the grad_output was the first input itself wherever
#: their shapes matched, and a backward's error along x (a row norm's forgotten
#: d||x||/dx) vanished from the double backward
SEED = 20261129


def seed_apart(args) -> int:
    """:data:`SEED`, or the next seed whose stream does not reproduce the tensors of ``args``:
    inputs drawn with SEED itself (``--seed 20261129``, a date as people choose seeds) made
    the grad_output and the directions the inputs again, the false PASS SEED avoids at seed 0.
    Each tensor is compared with the draw of its shape and dtype, in order, as the inputs
    are drawn."""
    tensors = [a.detach().cpu() for a in args if isinstance(a, torch.Tensor)
               and a.is_floating_point() and a.numel() and a.layout == torch.strided]
    seed = SEED
    while True:
        gen = torch.Generator().manual_seed(seed)
        if not any(torch.equal(torch.randn(t.shape, dtype=t.dtype, generator=gen), t)
                   for t in tensors):
            return seed
        seed += 1

def once_differentiable(function: type[Function]) -> bool:
    """True when backward is wrapped by torch's @once_differentiable."""
    backward = function.backward
    code = getattr(backward, "__code__", None)
    return (getattr(backward, "__wrapped__", None) is not None and code is not None
            and code.co_filename.replace("\\", "/").endswith("torch/autograd/function.py"))


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
    gen = torch.Generator().manual_seed(seed_apart(args))
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
        # called directly under autograd (customgrad.checking.jacobian.exact's reference): the
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
