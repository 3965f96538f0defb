"""customgrad: check, run and teach custom torch.autograd.Functions (torch only, no Qt).

From Python: ``report = customgrad.check(MyFunction, x, w, 2)``; in tests,
``customgrad.testing.assert_backward(MyFunction, x, w, 2)``. Importing the package stays
cheap: ``check`` and the report types load torch when first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from customgrad.errors import (
    Cancelled,
    CustomGradError,
    FunctionError,
    SpecError,
    TargetError,
    TooLargeError,
)

if TYPE_CHECKING:
    from customgrad import testing
    from customgrad.api import check
    from customgrad.checking.findings import Diagnosis
    from customgrad.checking.jacobian.report import Block, Entry, Report

__all__ = ["Block", "Cancelled", "CustomGradError", "Diagnosis", "Entry", "FunctionError",
           "Report", "SpecError", "TargetError", "TooLargeError", "__version__", "check",
           "testing"]
__version__ = "0.1.0"

#: public names imported on first use (each pulls in torch)
_LAZY = {"check": "customgrad.api", "Report": "customgrad.checking.jacobian.report",
         "Block": "customgrad.checking.jacobian.report",
         "Entry": "customgrad.checking.jacobian.report",
         "Diagnosis": "customgrad.checking.findings", "testing": None}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'customgrad' has no attribute {name!r}")
    module = _LAZY[name]
    value = (importlib.import_module(f"customgrad.{name}") if module is None
             else getattr(importlib.import_module(module), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
