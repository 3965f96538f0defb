"""Complex Functions, correct and with the classic complex-backward bugs (a missing or extra
conj()), for the parity tests against gradcheck. PyTorch's convention: for a real loss L,
backward returns dL/dx + i dL/dy, so grad_input = grad_output * conj(df/dz) for a
holomorphic f."""

from __future__ import annotations

import torch


class AbsSquared(torch.autograd.Function):
    """C -> R: |z|^2."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return (z * z.conj()).real

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return 2 * g * z


class AbsSquaredConj(AbsSquared):
    """Bug: conj(z) where z belongs (the gradient comes out conjugated)."""

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return 2 * g * z.conj()


class Square(torch.autograd.Function):
    """C -> C: z * z (holomorphic)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * (2 * z).conj()


class SquareNoConj(Square):
    """Bug: grad_output times the derivative, not its conjugate."""

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * 2 * z


class Cis(torch.autograd.Function):
    """R -> C: exp(i x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.polar(torch.ones_like(x), x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g.conj() * 1j * torch.polar(torch.ones_like(x), x)).real


class CisGradNoConj(Cis):
    """Bug: grad_output where its conjugate belongs."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (g * 1j * torch.polar(torch.ones_like(x), x)).real


class Multiply(torch.autograd.Function):
    """C x C -> C: z * w."""

    @staticmethod
    def forward(ctx, z, w):
        ctx.save_for_backward(z, w)
        return z * w

    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return g * w.conj(), g * z.conj()


class MultiplyConjGrad(Multiply):
    """Bug: conj(grad_output) for z's gradient."""

    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return g.conj() * w.conj(), g * z.conj()


class MultiplyTwice(Multiply):
    """Bug, not a conjugate one: z's gradient doubled."""

    @staticmethod
    def backward(ctx, g):
        z, w = ctx.saved_tensors
        return 2 * g * w.conj(), g * z.conj()


class ExpPlusNoise(torch.autograd.Function):
    """Bug, not a conjugate one: exp(z)'s gradient plus a term that belongs nowhere."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z.exp()

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * (z.exp().conj() + 0.5 * z.abs())


class Scale(torch.autograd.Function):
    """R x C -> C: a real gain a times a complex signal z."""

    @staticmethod
    def forward(ctx, a, z):
        ctx.save_for_backward(a, z)
        return a * z

    @staticmethod
    def backward(ctx, g):
        a, z = ctx.saved_tensors
        return (g * z.conj()).real, g * a


class ScaleNoConj(Scale):
    """Bug: the real gain's gradient without the conjugate."""

    @staticmethod
    def backward(ctx, g):
        a, z = ctx.saved_tensors
        return (g * z).real, g * a


class AbsSquaredOffset(AbsSquared):
    """Bug near the tolerance: every gradient off by the complex number ``OFFSET``."""

    OFFSET = 0j

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * (2 * z + AbsSquaredOffset.OFFSET)


class SquareJvp(Square):
    """C -> C, z * z with a forward-mode rule: the tangent of z^2 is 2 z t."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        ctx.save_for_forward(z)
        return z * z

    @staticmethod
    def jvp(ctx, t):
        (z,) = ctx.saved_tensors
        return 2 * z * t


class SquareJvpConj(SquareJvp):
    """Bug: the backward habit carried to jvp, 2 conj(z) t (forward mode takes no conj)."""

    @staticmethod
    def jvp(ctx, t):
        (z,) = ctx.saved_tensors
        return 2 * z.conj() * t


class AbsSquaredJvp(AbsSquared):
    """C -> R, |z|^2 with a forward-mode rule: the tangent is 2 Re(conj(z) t)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        ctx.save_for_forward(z)
        # a copy: torch's forward AD refuses a custom Function's output that is a view
        return (z * z.conj()).real.clone()

    @staticmethod
    def jvp(ctx, t):
        (z,) = ctx.saved_tensors
        return 2 * (z.conj() * t).real


class AbsSquaredJvpNoConj(AbsSquaredJvp):
    """Bug: 2 Re(z t), a conj() missing."""

    @staticmethod
    def jvp(ctx, t):
        (z,) = ctx.saved_tensors
        return 2 * (z * t).real
