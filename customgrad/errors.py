"""The one exception family the engine raises; every message is meant for a person."""

from __future__ import annotations

import threading
import traceback


class CustomGradError(Exception):
    """Base class: anything the engine refuses or that went wrong in the user's Function."""


class TargetError(CustomGradError):
    """A target (catalog name, file, import path) could not be resolved or loaded."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 details: str = "", choices: list | None = None):
        super().__init__(message)
        self.file = file
        self.line = line
        self.details = details
        self.choices = choices or []  # the Functions found, when the target named none of them


class SpecError(CustomGradError):
    """A shape, constant, dtype, device or tolerance is invalid."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class FunctionError(CustomGradError):
    """The user's Function raised or broke the autograd contract.

    ``file``/``line`` point into the user's code where known; ``details`` is the
    full traceback text, one click away in the app.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None,
                 details: str = "", phase: str = ""):
        super().__init__(message)
        self.file = file
        self.line = line
        self.details = details
        self.phase = phase

    def where(self) -> str:
        """``file:line`` or an empty string."""
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        return self.file or ""


class TooLargeError(SpecError):
    """The Jacobian matrices would exceed the memory cap."""


class Cancelled(CustomGradError):
    """The computation was stopped on request."""


#: Held around every ast.parse of ours, traceback formatting included (Python 3.11 parses
#: source lines to place its ^^^ markers): two threads parsing at once can fail with
#: "SystemError: AST constructor recursion depth mismatch" (CPython issue 106905).
AST_LOCK = threading.Lock()


def format_traceback(exc: BaseException) -> str:
    """The whole traceback of ``exc`` as text, safe to call from several threads at once."""
    with AST_LOCK:
        return "".join(traceback.format_exception(exc))
