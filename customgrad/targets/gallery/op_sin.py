"""sin as a torch.library custom op: the way torch recommends writing custom ops since 2.4.

The op is defined once, its derivative registered with ``register_autograd``: a
``setup_context`` that saves what backward needs, and a ``backward`` that gets grad_output."""

import torch


@torch.library.custom_op("customgrad::sin", mutates_args=())
def sin(x: torch.Tensor) -> torch.Tensor:
    """sin x, an op of the customgrad library."""
    return torch.sin(x)


@sin.register_fake
def _(x):
    return torch.empty_like(x)


@sin.register_vmap  # element-wise: a batch is one call (the check batches its calls)
def _(info, in_dims, x):
    return sin(x), in_dims[0]


def setup_context(ctx, inputs, output):
    (x,) = inputs
    ctx.save_for_backward(x)


def backward(ctx, grad_output):
    (x,) = ctx.saved_tensors
    return grad_output * x.cos()


sin.register_autograd(backward, setup_context=setup_context)
