"""Classic custom Functions, each showing one feature of ctx or of Function itself."""

import numpy as np
import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class Exp(Function):
    """exp(x), saving its OUTPUT for backward, since d/dx exp(x) = exp(x)."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        # Outputs may be saved too: no need to recompute exp in backward.
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class Sigmoid(Function):
    """The logistic sigmoid 1 / (1 + exp(-x)), saving its output."""

    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + torch.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        # sigmoid'(x) = y (1 - y), chained with the incoming gradient.
        return grad_output * y * (1 - y)


class SinCos(Function):
    """Two outputs, sin(x) and cos(x): backward receives one gradient per output."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, grad_sin, grad_cos):
        (x,) = ctx.saved_tensors
        # Both outputs depend on x: their contributions add up.
        return grad_sin * x.cos() - grad_cos * x.sin()


class Sort(Function):
    """Sort along the last dimension; the indices output is not differentiable."""

    @staticmethod
    def forward(ctx, x):
        values, indices = x.sort(dim=-1)
        # Integer outputs never require grad, but saying so is explicit and
        # also works for outputs of floating type.
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        # grad_indices is ignored: indices are not differentiable.
        (indices,) = ctx.saved_tensors
        # values[..., j] = x[..., indices[..., j]]: send each gradient back
        # to the position its value came from.
        return torch.zeros_like(grad_values).scatter(-1, indices, grad_values)


class ReluInplace(Function):
    """ReLU that overwrites its input in place, declared with ctx.mark_dirty."""

    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        # x was modified in place: tell autograd, and return it as the output.
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        # The gradient flows only where the output is positive.
        return grad_output * (y > 0).to(grad_output.dtype)


class NumpyTanh(Function):
    """tanh computed with NumPy, outside autograd, in forward and in backward."""

    @staticmethod
    def forward(ctx, x):
        # Leave torch: detach, move to the CPU, convert to a NumPy array.
        y = np.tanh(x.detach().cpu().numpy())
        # Come back with the input's dtype and device.
        result = torch.from_numpy(y).to(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    @once_differentiable  # NumPy code cannot be differentiated a second time
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        y = result.cpu().numpy()
        g = grad_output.cpu().numpy()
        # tanh'(x) = 1 - tanh(x)^2
        return torch.from_numpy(g * (1 - y**2)).to(grad_output)


class Cube(Function):
    """x ** 3 in the new style: forward without ctx, plus setup_context."""

    # Let torch.func.vmap batch this Function by running it per sample.
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        # Called after forward with its inputs and output.
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        # Plain differentiable torch ops: double backward works too.
        return 3 * x**2 * grad_output


class Softmax(Function):
    """Softmax along the last dimension, saving its output."""

    @staticmethod
    def forward(ctx, x):
        # Subtracting the row maximum avoids overflow and changes nothing.
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        # Every output of a row depends on every input of the row:
        # dy_i/dx_j = y_i (delta_ij - y_j).
        return y * (grad_output - (grad_output * y).sum(dim=-1, keepdim=True))


class SignSTE(Function):
    """sign(x) with a straight-through estimator as its backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sign()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        # Pretend sign was the identity, but only inside [-1, 1]:
        # a deliberate lie that lets gradient descent move x.
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


class ComplexMul(Function):
    """z * w for complex z and w: PyTorch's gradients are conjugated derivatives."""

    @staticmethod
    def forward(ctx, z, w):
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx, grad_output):
        z, w = ctx.saved_tensors
        # d(zw)/dz = w, but for a real loss PyTorch's gradient is grad_output * conj(dz).
        return grad_output * w.conj(), grad_output * z.conj()
