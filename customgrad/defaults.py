"""The engine's defaults and names as plain data, importable without torch: the tolerances,
the default shape, the losses, optimizers and sub-checks. A front end shows them (the CLI's
``--help``) before anything needs torch; the modules that use them import them from here.
"""

from __future__ import annotations

from customgrad.errors import SpecError

#: gradcheck's finite-difference step and tolerances, |a - n| <= atol + rtol * |n|
EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3
DEFAULT_SHAPE = (3, 8)
#: the dtypes an input can be drawn in (customgrad.function.dtypes.DTYPES maps them to torch's)
DTYPE_NAMES = ("float32", "float64", "complex64", "complex128")
#: how a shape of no dimensions is written and read
SCALAR = "scalar"
LOSSES = ("mse", "l1", "sse")
OPTIMIZERS = ("sgd", "momentum", "adam")
#: every sub-check, in the order they run
CHECK_NAMES = ("jacobian", "double_backward", "forward_ad", "batched_grad", "undefined_grad",
               "grad_dtypes", "nondeterminism", "opcheck")
#: gradcheck's defaults: the Jacobian, and undefined gradients (check_undefined_grad=True)
DEFAULT_CHECKS = ("jacobian", "undefined_grad")


def format_shape(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape) if shape else SCALAR


def parse_checks(text: str) -> tuple[str, ...]:
    """``jacobian,forward_ad`` -> the names; SpecError naming an unknown one."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in CHECK_NAMES]
    if unknown or not names:
        raise SpecError(f"unknown check {', '.join(map(repr, unknown)) or '(none given)'}: "
                        f"choose from {', '.join(CHECK_NAMES)}.", field="checks")
    return names

#: the loss landscape's planes (customgrad.landscape.plane), how its legend names them, and
#: its grid's points per side (customgrad.landscape.SIZE): data, read by the window before torch
LANDSCAPE_MODES = ("gradients", "pca", "random")
LANDSCAPE_MODE_WORDS = {"gradients": "your backward and the true gradient",
                        "pca": "the path's principal directions",
                        "random": "two random directions"}
LANDSCAPE_SIZE = 41
