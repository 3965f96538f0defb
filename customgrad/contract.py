"""The boundary with user code: calling forward/backward and checking the autograd contract.

Everything that runs a user's Function goes through :func:`run_user`, which turns whatever it
raises into a :class:`FunctionError` naming the user's file and line.
"""

from __future__ import annotations

import inspect
import os
import traceback
from collections.abc import Callable

import torch

from customgrad.errors import Cancelled, FunctionError
from customgrad.inputs import format_shape

_TORCH_DIR = os.path.dirname(torch.__file__)
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__))
_GALLERY_DIR = os.path.join(_ENGINE_DIR, "gallery")


class FakeCtx:
    """Stands in for ``ctx`` when forward is called directly for finite differences."""

    needs_input_grad: tuple = ()
    materialize_grads = True

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors):
        pass

    def mark_dirty(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = value


def source_file(function: type) -> str | None:
    try:
        return os.path.abspath(inspect.getsourcefile(function) or "")
    except TypeError:
        return None


def method_line(function: type, name: str) -> int | None:
    """First line of ``function.<name>`` (unwrapping decorators such as once_differentiable)."""
    try:
        method = inspect.unwrap(getattr(function, name))
        return inspect.getsourcelines(method)[1]
    except (OSError, TypeError, AttributeError):
        return None


def _is_user_file(path: str) -> bool:
    path = os.path.abspath(path)
    if path.startswith(_TORCH_DIR) or path.startswith(os.path.dirname(_TORCH_DIR) + os.sep
                                                      + "numpy"):
        return False
    if path.startswith(_ENGINE_DIR) and not path.startswith(_GALLERY_DIR):
        return False
    return not path.startswith("<")


def user_location(exc: BaseException, function: type) -> tuple[str | None, int | None]:
    """The deepest traceback frame in the Function's file (or any user file)."""
    own = source_file(function)
    best = fallback = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        path = os.path.abspath(frame.f_code.co_filename)
        if own and path == own:
            best = (path, lineno)
        elif _is_user_file(path):
            fallback = (path, lineno)
    return best or fallback or (own, None)


def run_user(function: type, phase: str, call: Callable):
    """Run ``call`` (user code); anything it raises becomes a FunctionError with file:line."""
    try:
        return call()
    except (FunctionError, Cancelled, KeyboardInterrupt):
        raise
    except BaseException as exc:
        file, line = user_location(exc, function)
        name = f"{function.__name__}.{phase}"
        message = f"{name} raised {type(exc).__name__}: {_first_line(exc)}"
        text = str(exc)
        if "returned an incorrect number of gradients" in text:
            message = f"{name} returned the wrong number of gradients: {_first_line(exc)}"
        elif "returned an invalid gradient" in text:
            message = f"{name} returned a gradient of the wrong shape: {_first_line(exc)}"
        raise FunctionError(message, file=file, line=line or method_line(function, phase),
                            details="".join(traceback.format_exception(exc)),
                            phase=phase) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def normalize_outputs(function: type, raw) -> tuple[torch.Tensor, ...]:
    """forward's result as a tuple of tensors; FunctionError for anything else."""
    outs = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
    for k, out in enumerate(outs):
        if not isinstance(out, torch.Tensor):
            raise FunctionError(
                f"{function.__name__}.forward returned a {type(out).__name__} "
                f"{'' if len(outs) == 1 else f'at position {k} '}— outputs must be tensors.",
                file=source_file(function), line=method_line(function, "forward"),
                phase="forward")
    if not outs:
        raise FunctionError(f"{function.__name__}.forward returned an empty tuple.",
                            file=source_file(function), line=method_line(function, "forward"),
                            phase="forward")
    return outs


def call_backward(function: type, ctx, grads: list, checked: bool = True):
    """Call the user's backward directly with ``ctx`` (the graph node) and raw ``grads``."""
    def call():
        with torch.no_grad():
            return function.backward(ctx, *grads)
    if not checked:
        return call()
    versions = [g._version if isinstance(g, torch.Tensor) else None for g in grads]
    raw = run_user(function, "backward", call)
    for k, (g, v) in enumerate(zip(grads, versions)):
        if isinstance(g, torch.Tensor) and g._version != v:
            raise FunctionError(
                f"{function.__name__}.backward modifies grad_output"
                f"{'' if len(grads) == 1 else f' {k}'} in place. Autograd may reuse that tensor "
                "elsewhere, so never modify it; work on a copy (e.g. grad_output.clone()).",
                file=source_file(function), line=method_line(function, "backward"),
                phase="backward")
    return raw


def check_gradients(function: type, params: list[str], args: list, raw) -> list[str]:
    """Check backward's raw result against forward's arguments; notes for legal surprises.

    Raises FunctionError for the wrong number of gradients, a gradient for a non-tensor
    argument, a non-tensor gradient, or a gradient of the wrong shape, dtype or device.
    """
    name = f"{function.__name__}.backward"
    where = {"file": source_file(function), "line": method_line(function, "backward"),
             "phase": "backward"}
    grads = raw if isinstance(raw, tuple) else (raw,)
    if len(grads) < len(args) or any(g is not None for g in grads[len(args):]):
        raise FunctionError(
            f"{name} returned {len(grads)} gradient{'s' if len(grads) != 1 else ''}, but forward "
            f"takes {len(args)} argument{'s' if len(args) != 1 else ''} "
            f"({', '.join(params)}): return one per argument, None for non-tensors.", **where)
    notes = []
    for pos, (param, arg, grad) in enumerate(zip(params, args, grads)):
        if grad is None:
            if isinstance(arg, torch.Tensor) and arg.is_floating_point():
                notes.append(f"backward returns None for {param}: its gradient is zero.")
            continue
        if not isinstance(arg, torch.Tensor):
            raise FunctionError(
                f"{name} returned a gradient for {param} (position {pos}), which is not a tensor "
                f"but a {type(arg).__name__}; return None there.", **where)
        if not isinstance(grad, torch.Tensor):
            raise FunctionError(f"{name} returned a {type(grad).__name__} as the gradient of "
                                f"{param}; gradients must be tensors or None.", **where)
        if grad.device != arg.device:
            raise FunctionError(f"{name} returned the gradient of {param} on {grad.device}, but "
                                f"{param} is on {arg.device}.", **where)
        if grad.dtype != arg.dtype:
            raise FunctionError(f"{name} returned the gradient of {param} as "
                                f"{str(grad.dtype)[6:]}, but {param} is {str(arg.dtype)[6:]}.",
                                **where)
        if grad.shape != arg.shape:
            want, got = format_shape(tuple(arg.shape)), format_shape(tuple(grad.shape))
            try:
                grad.sum_to_size(arg.shape)
            except RuntimeError:
                raise FunctionError(f"{name} returned a gradient of shape [{got}] for {param}, "
                                    f"whose shape is [{want}].", **where) from None
            notes.append(f"shape surprise: backward returns a [{got}] gradient for {param}; "
                         f"autograd sums it to {param}'s [{want}].")
    return notes
