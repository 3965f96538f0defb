"""What crosses from a worker child to its parent: plain data only. The parent reads a
child's message with classes from the standard library and a few trusted packages, and a
child sends any error of the user's as a :class:`~customgrad.errors.FunctionError` (type
name, message, traceback text, the user's line), never the user's own class."""

from __future__ import annotations

import io
import pickle
import sys
import traceback

from customgrad.errors import CustomGradError, FunctionError, TargetError, format_traceback
from customgrad.workers.frames import user_frame

#: where the classes of what a child sends its parent may come from, besides the standard
#: library: the parent imports nothing else to read a message (a class of the user's would
#: import the user's module in the window, where a module that crashes ends it)
TRUSTED_PACKAGES = frozenset({"numpy", "torch", "customgrad", "playground"})


def trusted_module(name: str) -> bool:
    top = name.partition(".")[0]
    return top in TRUSTED_PACKAGES or top in sys.stdlib_module_names


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if not trusted_module(module) or module.startswith("customgrad_user_"):
            raise pickle.UnpicklingError(f"{module}.{name}")
        return super().find_class(module, name)


class NotPlainData(FunctionError):
    """What a child sent holds an object of a class this process does not import."""


def plain_loads(data: bytes):
    """A child's message, unpickled with classes of :data:`TRUSTED_PACKAGES` and the standard
    library only (numbers, text, tensors, the engine's results and errors);
    :class:`NotPlainData` otherwise."""
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError as exc:
        raise NotPlainData(
            f"The Function's code gave an object of class {exc} (a torch.Tensor subclass, "
            "say), which the window never imports: results cross from the worker process as "
            "plain data (tensors, numbers, text).") from None


def portable_error(exc: BaseException) -> BaseException:
    """``exc`` as the parent receives it: an error of the engine's own (its class from
    customgrad or playground, holding plain data) as it is; anything else, raised by the
    user's code or under it (KeyboardInterrupt, SystemExit, a class of the user's module, an
    error of torch's), a :class:`FunctionError` with its type's name, its message, the
    traceback's text and the user's innermost line: nothing of the user's is unpickled in
    the parent."""
    if isinstance(exc, CustomGradError) and type(exc).__module__.startswith(
            ("customgrad.", "playground.")):
        if isinstance(exc, TargetError) and exc.choices:
            exc.choices = []  # classes of a user module do not travel
        if getattr(exc, "cause", None) is not None:
            # (a SetupFailed's: what failed may be the user's); processes.py, where that class
            # lives, is not imported here, so mypy cannot see the attribute
            exc.cause = None  # type: ignore[attr-defined]
        try:
            plain_loads(pickle.dumps(exc))
            return exc
        except Exception:
            pass
    elif isinstance(exc, MemoryError):
        return MemoryError(str(exc))
    return as_function_error(exc)


def as_function_error(exc: BaseException) -> FunctionError:
    """``exc`` as plain data: a FunctionError naming its type, at the user's innermost line."""
    text = str(exc).strip()
    message = f"{type(exc).__name__}: {text.splitlines()[0] if text else '(no message)'}"
    details = format_traceback(exc)
    frames = "".join(f'  File "{f.filename}", line {f.lineno} in {f.name}\n'
                     for f in reversed(traceback.extract_tb(exc.__traceback__)))
    found = user_frame(frames)
    file, line = (found[0], found[1]) if found else (None, None)
    return FunctionError(message, file=file, line=line, details=details)
