"""sin as a torch.library custom op, with a bug in its registered backward that
``torch.library.opcheck`` does not see: all four of its tests pass."""

import torch

from customgrad.targets.gallery.op_sin import setup_context


@torch.library.custom_op("customgrad::sin_bug", mutates_args=())
def sin_bug(x: torch.Tensor) -> torch.Tensor:
    """sin x, an op of the customgrad library (find the bug)."""
    return torch.sin(x)


@sin_bug.register_fake
def _(x):
    return torch.empty_like(x)


@sin_bug.register_vmap  # element-wise: a batch is one call (the check batches its calls)
def _(info, in_dims, x):
    return sin_bug(x), in_dims[0]


def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * x.cos() * 1.01


sin_bug.register_autograd(backward, setup_context=setup_context)
