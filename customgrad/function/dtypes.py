"""The dtypes taken, and complex tensors by gradcheck's convention: seen as real ones, their
real and imaginary parts side by side.

A complex input's two parts are perturbed one at a time; a complex output is split into its
real part (grad_output 1) and its imaginary part (grad_output 1j). The Jacobian is then real,
two columns (rows) per complex element, and its analytic entries are PyTorch's gradients
dL/dx + i dL/dy read part by part (the conjugate Wirtinger derivative, times 2).
"""

from __future__ import annotations

import torch

from customgrad.errors import SpecError

DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "complex64": torch.complex64, "complex128": torch.complex128}
#: the double-precision dtype of a real (False) and of a complex (True) tensor
DOUBLE = {False: torch.float64, True: torch.complex128}


def parse_dtype(name: str | torch.dtype) -> torch.dtype:
    try:
        return DTYPES[str(name).replace("torch.", "")]
    except KeyError:
        raise SpecError(f"dtype {name!r} is not supported; use float32, float64, complex64 "
                        "or complex128.", field="dtype") from None


def differentiable(t: torch.Tensor) -> bool:
    """A floating-point or complex tensor (gradcheck differentiates both)."""
    return t.is_floating_point() or t.is_complex()


def real_view(t: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real and imaginary parts (a last dimension of 2); a real one
    as it is."""
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t


def flat_real(t: torch.Tensor) -> torch.Tensor:
    """``t`` flattened, a complex tensor as its parts side by side (an axis of two parts)."""
    return real_view(t).reshape(-1)


def converted(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``tensor`` in ``dtype`` where it is floating point or complex: a complex ``dtype``
    makes a real tensor complex; a real one gives a complex tensor that precision, kept
    complex. Other tensors (integers, bools) as they are."""
    if tensor.is_complex():
        dtype = in_kind(dtype, True)
    return tensor.to(dtype) if differentiable(tensor) else tensor


def same_kind(dtype: torch.dtype, t: torch.Tensor) -> torch.dtype:
    """``dtype``'s precision in ``t``'s kind: complex for a complex ``t``, real for a real
    one; ``t``'s own dtype for an integer or bool tensor."""
    return in_kind(dtype, t.is_complex()) if differentiable(t) else t.dtype


def in_kind(dtype: torch.dtype, complex_: bool) -> torch.dtype:
    """``dtype``'s precision, complex or real (float32 <-> complex64, float64 <->
    complex128; another dtype as it is)."""
    pairs = {torch.float32: torch.complex64, torch.float64: torch.complex128}
    if complex_ and not dtype.is_complex:
        return pairs.get(dtype, dtype)
    if not complex_ and dtype.is_complex:
        return {c: r for r, c in pairs.items()}.get(dtype, dtype)
    return dtype


#: where a conjugate is missing or extra, and what the Jacobian then looks like
CONJUGATE = {
    "gradient": ("the gradient backward returns for {i} is the complex conjugate of the "
                 "true one (real parts agree, imaginary parts have the opposite sign): add or "
                 "remove a conj() on what backward returns"),
    "grad_output": ("backward uses conj(grad_output) where grad_output is meant, or the "
                    "reverse: the rows of {o}'s imaginary part have the opposite sign"),
    "derivative": ("backward multiplies grad_output by d {o}/d {i} where its conjugate is "
                   "meant, or the reverse: PyTorch's convention is grad_input = grad_output "
                   "* conj(df/dz) for a holomorphic f (each real/imaginary 2x2 block comes "
                   "out transposed)"),
    "both": ("backward's gradient for {i} is conjugated, and so is grad_output: real and "
             "imaginary parts disagree in sign"),
}


def conjugated(n: torch.Tensor, out_parts: int, in_parts: int) -> dict[str, torch.Tensor]:
    """The block ``n`` (rows: an output's parts, columns: an input's) as a backward with a
    conjugate too many or too few would give it, by where the conjugate is (CONJUGATE's
    keys): on the gradient returned (imaginary-part columns negated), on grad_output
    (imaginary-part rows negated), on the derivative (each 2x2 block transposed; tried before
    "both", which is the same matrix for a holomorphic f)."""
    flip_cols = torch.ones(n.shape[1], dtype=n.dtype)
    flip_cols[1::2] = -1 if in_parts == 2 else 1
    flip_rows = torch.ones(n.shape[0], dtype=n.dtype)
    flip_rows[1::2] = -1 if out_parts == 2 else 1
    moved = {"gradient": n * flip_cols, "grad_output": n * flip_rows[:, None]}
    if in_parts == 2 and out_parts == 2:
        rows, cols = n.shape
        moved["derivative"] = n.reshape(rows // 2, 2, cols // 2, 2).transpose(1, 3) \
            .reshape(rows, cols)
    moved["both"] = n * flip_cols * flip_rows[:, None]
    return moved
