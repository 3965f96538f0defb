"""customgrad: check, run and teach custom torch.autograd.Functions (torch only, no Qt)."""

from customgrad.errors import (
    Cancelled,
    CustomGradError,
    FunctionError,
    SpecError,
    TargetError,
    TooLargeError,
)

__all__ = ["Cancelled", "CustomGradError", "FunctionError", "SpecError", "TargetError",
           "TooLargeError", "__version__"]
__version__ = "0.1.0"
