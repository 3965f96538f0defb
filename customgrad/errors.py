"""The one exception family the engine raises; every message is meant for a person."""

from __future__ import annotations

import ast
import functools
import sys
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

    drawn = False  # forward refused inputs the engine drew (a front end may say how to draw others)

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
    """The Jacobian matrices would exceed the memory cap. The engine's message says how
    large they are; each front end adds how to change that in its own words
    (:meth:`advised`)."""

    def advised(self, advice: str) -> TooLargeError:
        """This error with ``advice`` (the front end's options) after its message."""
        return TooLargeError(f"{self} {advice}", field=self.field)


class Cancelled(CustomGradError):
    """The computation was stopped on request. Where a worker process was stopped after
    running a while, ``file``/``line``/``function`` name the user's code it was in (the
    innermost frame of ``stack``, faulthandler's text taken just before the stop), else
    None: an endless loop is found where it loops."""

    def __init__(self, message: str = "", *, file: str | None = None, line: int | None = None,
                 function: str | None = None, stack: str = ""):
        super().__init__(message)
        self.file, self.line, self.function, self.stack = file, line, function, stack

    def where(self) -> str:
        """`` at loop.py:10 (in forward)``, or an empty string where the frame is not known."""
        if not (self.file and self.line):
            return ""
        import os

        return f" at {os.path.basename(self.file)}:{self.line}" + \
            (f" (in {self.function})" if self.function else "")


def is_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` is the user pressing Ctrl+C: a KeyboardInterrupt where SIGINT raises
    one. Where it does not (a worker process ignores SIGINT), a KeyboardInterrupt was raised
    by the user's code itself, and is its error like any other."""
    import signal

    return isinstance(exc, KeyboardInterrupt) \
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler


#: Held by every ast.parse in the process on Python < 3.13 (see serialise_ast_parse).
AST_LOCK = threading.RLock()


def serialise_ast_parse() -> None:
    """Make ``ast.parse`` one thread at a time, for every caller in the process.

    Process-wide, so never done by importing customgrad: the entry points that run threads
    which parse call it (the app's :func:`playground.app.application`, a worker process's
    setup); a notebook that wants it calls it too.

    On CPython 3.11 and 3.12 the AST constructor keeps its recursion depth in state shared
    by all threads. When a garbage collection runs Python code in the middle of a parse,
    another thread can parse too, and one of them fails with "SystemError: AST constructor
    recursion depth mismatch" (CPython issue 106905). The callers are not only ours: the
    GUI thread's inspect.getsource of a class and a worker's traceback formatting (3.11
    parses each source line to place its ^^^ markers) both parse. A re-entrant lock, so a
    finalizer that parses during a parse on the same thread does not deadlock.
    """
    if sys.version_info >= (3, 13) or getattr(ast.parse, "_customgrad_serialised", False):
        return
    parse = ast.parse

    @functools.wraps(parse)
    def serialised_parse(*args, **kwargs):
        with AST_LOCK:
            return parse(*args, **kwargs)

    # a mark on the function object, which mypy's type of a functools.wraps result cannot hold
    serialised_parse._customgrad_serialised = True  # type: ignore[attr-defined]
    ast.parse = serialised_parse


def format_traceback(exc: BaseException) -> str:
    """The whole traceback of ``exc`` as text, safe to call from several threads at once."""
    return "".join(traceback.format_exception(exc))
