"""An exact reference Jacobian, where one exists: autograd through ``forward`` itself.

When forward is made of differentiable torch operations, differentiating it with autograd
(ignoring the custom backward) gives the Jacobian free of finite-difference error. Forward is
called directly (a stand-in ctx for old-style Functions), in float64 where the report's
numerical Jacobian is. Where that cannot work (numpy, ``.detach()``, ``torch.no_grad``,
in-place tricks, non-differentiable operations such as ``round``), the answer is None: the
reference is only offered when it agrees with the finite differences nearly everywhere.
"""

from __future__ import annotations

import torch
from torch.autograd import Function

from customgrad.checking.jacobian.matrices import agree
from customgrad.checking.jacobian.report import Report
from customgrad.errors import Cancelled
from customgrad.function.contract import FakeCtx, normalize_outputs
from customgrad.function.inputs import is_new_style

#: the reference is computed up to this many entries (it builds the matrix in one piece)
MAX_ENTRIES = 1 << 22
#: the share of entries on which the reference may disagree with the finite differences
#: (kinks, rounding) and still be taken as exact
MAX_DISAGREEING = 0.01


def reference_jacobian(function: type[Function], args: list, report: Report) -> torch.Tensor | None:
    """The Jacobian by autograd through forward, laid out as ``report``'s matrices (float64),
    or None where forward cannot be differentiated that way."""
    rows, cols = report.shape
    if rows * cols > MAX_ENTRIES or report.numerical is None:
        return None
    try:
        matrix = _jacobian(function, args, report)
    except Cancelled:
        raise
    except Exception:
        return None
    if matrix is None or not bool(matrix.isfinite().all()):
        return None
    disagree = ~agree(matrix, report.numerical.double(), report.atol, report.rtol)
    if float(disagree.double().mean()) > MAX_DISAGREEING:
        return None
    return matrix


def _jacobian(function: type[Function], args: list, report: Report) -> torch.Tensor | None:
    dtype = report.numerical_dtype
    positions = [a.position for a in report.inputs]
    leaves = [args[i].detach().to(dtype).clone().requires_grad_() for i in positions]
    call = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]  # never the caller's
    with torch.enable_grad():
        for i, leaf in zip(positions, leaves):
            call[i] = leaf.clone()  # forward may work in place on its input
        if is_new_style(function):
            raw = function.forward(*call)
        else:
            raw = function.forward(FakeCtx(), *call)
        outs = normalize_outputs(function, raw)
        chosen = [outs[a.position] for a in report.outputs]
        if any(not o.requires_grad or o.grad_fn is None for o in chosen):
            return None  # forward left autograd (numpy, detach, no_grad)
        flat = torch.cat([o.reshape(-1) for o in chosen])
        eye = torch.eye(flat.numel(), dtype=flat.dtype, device=flat.device)
        grads: tuple[torch.Tensor, ...] | list[torch.Tensor | None]
        try:
            grads = torch.autograd.grad(flat, leaves, eye, is_grads_batched=True,
                                        allow_unused=True, retain_graph=True)
        except RuntimeError:  # an operation vmap cannot batch: one row at a time
            rows = [torch.autograd.grad(flat, leaves, e, allow_unused=True, retain_graph=True)
                    for e in eye]
            grads = [None if r[k] is None else torch.stack([row[k] for row in rows])
                     for k, r in enumerate(rows[:1] * len(leaves))]
    blocks = [torch.zeros(flat.numel(), leaf.numel(), dtype=torch.float64) if g is None
              else g.detach().reshape(flat.numel(), -1).double().cpu()
              for g, leaf in zip(grads, leaves)]
    return torch.cat(blocks, dim=1)
