"""Find the bug: twins of gallery Functions, each with one typical mistake in backward.

Every twin runs without an error and returns gradients of the right shapes;
only the numbers are wrong.
"""

import torch
from torch.autograd import Function

# Kept in the same layout as their correct twins, for easy comparison.
# fmt: off


class KillHeadBuggy(Function):
    """KillHead, with one mistake in backward."""

    @staticmethod
    def forward(ctx, input, n):
        ctx.n = n
        result = input.clone()
        result[:, 0:ctx.n] = 0
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result = grad_output.clone()
        return result, None


class MulConstantBuggy(Function):
    """MulConstant, with one mistake in backward."""

    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


class SomethingBuggy(Function):
    """|u v| (the seed's Something), with one mistake in backward."""

    @staticmethod
    def forward(ctx, input1, input2):
        ctx.save_for_backward(input1, input2)
        return (input1 * input2).abs()

    @staticmethod
    def backward(ctx, grad_output):
        input1, input2 = ctx.saved_tensors
        return grad_output * input1.abs() * input2.sign(), \
            grad_output * input1.sign() * input2.abs()


class LinearFunctionBuggy(Function):
    """LinearFunction, with one mistake in backward."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None

        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = input.t().mm(grad_output)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)

        return grad_input, grad_weight, grad_bias


class SoftmaxBuggy(Function):
    """Softmax along the last dimension, with one mistake in backward."""

    @staticmethod
    def forward(ctx, x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


class SigmoidBuggy(Function):
    """The logistic sigmoid, with one mistake in backward."""

    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + torch.exp(-x))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return y * (1 - y)


class ComplexMulBuggy(Function):
    """z * w for complex z and w, with one mistake in backward."""

    @staticmethod
    def forward(ctx, z, w):
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx, grad_output):
        z, w = ctx.saved_tensors
        return grad_output * w, grad_output * z
