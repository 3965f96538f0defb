"""The boundary with user code: calling forward/backward and checking the autograd contract.

Everything that runs a user's Function goes through :func:`run_user`, which turns whatever it
raises into a :class:`FunctionError` naming the user's file and line.
"""

from __future__ import annotations

import ast
import ctypes
import inspect
import os
import textwrap
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import torch
from torch.autograd import Function

from customgrad.errors import Cancelled, FunctionError, format_traceback, is_ctrl_c
from customgrad.function import shadow
from customgrad.function.inputs import format_shape

_TORCH_DIR = os.path.dirname(torch.__file__)
#: customgrad's folder (this module is ``__name__.count(".")`` folders down in it), and the
#: gallery's in it, whose Functions' frames are a user's like any other
_ENGINE_DIR = str(Path(os.path.abspath(__file__)).parents[__name__.count(".") - 1])
_GALLERY_DIR = os.path.join(_ENGINE_DIR, "targets", "gallery")


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


def source_file(function: type[Function]) -> str | None:
    """:func:`customgrad.function.shadow.source_file`, absolute (a notebook cell's pseudo-file as
    is)."""
    file = shadow.source_file(function)
    return _absolute(file) if file else file


def _absolute(file: str) -> str:
    """A file's absolute path; a pseudo-file's name (``<ipython-input-...>``, ``<string>``)
    as it is."""
    return file if file.startswith("<") else os.path.abspath(file)


def _method_tree(function: type[Function], name: str
                 ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int] | None:
    """The parsed ``def`` of ``function.<name>`` and the file line its source starts on."""
    try:
        method = inspect.unwrap(getattr(function, name))
        lines, first = inspect.getsourcelines(method)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, AttributeError, SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return node, first


def _own_nodes(node: ast.AST):
    """The nodes of a function body, not descending into nested functions or classes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield child
        yield from _own_nodes(child)


def method_line(function: type[Function], name: str) -> int | None:
    """The ``def`` line of ``function.<name>`` (unwrapping decorators such as
    once_differentiable), past any decorator lines."""
    found = _method_tree(function, name)
    if found is None:
        return None
    node, first = found
    return first + node.lineno - 1


def return_line(function: type[Function], name: str) -> int | None:
    """The line of ``function.<name>``'s return statement when it has exactly one (that is
    where a wrong result is made), else its ``def`` line."""
    found = _method_tree(function, name)
    if found is None:
        return None
    node, first = found
    returns = [n for n in _own_nodes(node) if isinstance(n, ast.Return)]
    return first + (returns[0] if len(returns) == 1 else node).lineno - 1


def returns_nothing(function: type[Function], name: str) -> bool:
    """Whether ``function.<name>`` has no ``return`` with a value (so it returns None as a
    whole: a forgotten return statement); False where its source cannot be read."""
    found = _method_tree(function, name)
    if found is None:
        return False
    return not any(isinstance(n, ast.Return) and n.value is not None
                   for n in _own_nodes(found[0]))


def mutation_line(function: type[Function], name: str = "backward") -> int | None:
    """The first line of ``function.<name>`` that modifies one of its gradient parameters in
    place (``g.mul_(2)``, ``g *= 2``, ``g[0] = 1``), else its ``def`` line."""
    found = _method_tree(function, name)
    if found is None:
        return None
    node, first = found
    grads = {a.arg for a in (node.args.posonlyargs + node.args.args)[1:]}  # all but ctx

    def is_grad(target) -> bool:
        while isinstance(target, ast.Subscript):
            target = target.value
        return isinstance(target, ast.Name) and target.id in grads

    hits = []
    for n in _own_nodes(node):
        if (isinstance(n, ast.AugAssign) and is_grad(n.target)) or (
                isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Subscript) and is_grad(t) for t in n.targets)):
            hits.append(n.lineno)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr.endswith("_") and not n.func.attr.startswith("_") \
                and is_grad(n.func.value):
            hits.append(n.lineno)
    return first + (min(hits) if hits else node.lineno) - 1


def _is_user_file(path: str) -> bool:
    if path.startswith("<"):  # <string>, <frozen ...>: no file to point at
        return False
    path = os.path.abspath(path)
    if path.startswith(_TORCH_DIR) or path.startswith(os.path.dirname(_TORCH_DIR) + os.sep
                                                      + "numpy"):
        return False
    if path.startswith(_ENGINE_DIR) and not path.startswith(_GALLERY_DIR):
        return False
    return True


def user_location(exc: BaseException, function: type[Function]) -> tuple[str | None, int | None]:
    """The deepest traceback frame in the Function's file (or any user file)."""
    own = source_file(function)
    best = fallback = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        path = _absolute(frame.f_code.co_filename)
        if own and path == own:
            best = (path, lineno)
        elif _is_user_file(path):
            fallback = (path, lineno)
    return best or fallback or (own, None)


def raised(function: type[Function], exc: BaseException) -> str:
    """What the user's code raised, in one line, and where: ``TypeError: message
    (file:line)``, the line the deepest in the Function's file (or any user file)."""
    text = str(exc).strip()
    file, line = user_location(exc, function)
    where = f" ({file}:{line})" if file and line else ""
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else '(no message)'}{where}"


def run_user(function: type[Function], phase: str, call: Callable):
    """Run ``call`` (user code); anything it raises becomes a FunctionError with file:line."""
    try:
        return call()
    except PASS_THROUGH as exc:
        if passes(exc):
            raise
        raise_user_error(function, phase, exc)
    except BaseException as exc:
        raise_user_error(function, phase, exc)


#: what user code may raise that is not its fault: raised again as it is (where
#: :func:`passes`; a KeyboardInterrupt only where it is Ctrl+C)
PASS_THROUGH = (FunctionError, Cancelled, KeyboardInterrupt)


def passes(exc: BaseException) -> bool:
    """Whether ``exc`` (one of PASS_THROUGH) is raised again as it is: not a KeyboardInterrupt
    the user's code raised itself (:func:`customgrad.errors.is_ctrl_c`)."""
    return not isinstance(exc, KeyboardInterrupt) or is_ctrl_c(exc)


class Overtime(Cancelled):
    """Raised into user code that ran past the time limit of :func:`run_user_within`."""


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in the thread at its next bytecode (None: drop one still pending)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), None if exception is None else ctypes.py_object(exception))


def run_user_within(function: type[Function], phase: str, call: Callable, seconds: float):
    """:func:`run_user` with a time limit, for calls the user did not ask for (a probe):
    :class:`Overtime` when ``call`` still runs after ``seconds``. Python code is stopped at
    its next bytecode; code inside C when it returns to Python."""
    thread = threading.get_ident()
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def fire():
        with lock:
            if not state["done"]:
                state["fired"] = True
                _raise_in(thread, Overtime)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        return run_user(function, phase, call)
    finally:
        with lock:
            state["done"] = True
            if state["fired"]:
                _raise_in(thread, None)  # fired as the call returned: not delivered yet
        timer.cancel()


def raise_user_error(function: type[Function], phase: str, exc: BaseException) -> NoReturn:
    """Raise ``exc`` (raised by ``function``'s ``phase``) as a FunctionError with file:line.
    Call it in the ``except`` block that caught ``exc``, after an ``except PASS_THROUGH:
    raise`` (what :func:`run_user` does; loops that cannot afford a wrapper call per step
    do the same inline): what passes through then never reaches this frame, which would
    join its traceback and, holding it, make a reference cycle."""
    file, line = user_location(exc, function)
    name = f"{function.__name__}.{phase}"
    message = f"{name} raised {type(exc).__name__}: {_first_line(exc)}"
    text = str(exc)
    returned = True  # autograd refused what the method returned
    if "returned an incorrect number of gradients" in text:
        message = _count_message(function, name, text) or \
            f"{name} returned the wrong number of gradients: {_first_line(exc)}"
    elif "returned an invalid gradient" in text:
        message = _shape_message(function, name, text) or \
            f"{name} returned a gradient of the wrong shape: {_first_line(exc)}"
    elif "returned a gradient different than None" in text:
        message = f"{name} returned a gradient for a non-tensor argument: {_first_line(exc)}"
    else:
        returned = False
        message += _hint(exc, file, line)
    if line is None:
        line = return_line(function, phase) if returned else method_line(function, phase)
    # what autograd refused after the method returned has no frame of the user's in its
    # traceback (torch's own alone): the message's file:line is the whole story, as the check's
    details = "" if returned else format_traceback(exc)
    raise FunctionError(message, file=file, line=line, details=details, phase=phase) from None


def _hint(exc: BaseException, file: str | None, line: int | None) -> str:
    """What a common mistake's message leaves unsaid, read from the line it was raised at:
    unpacking an empty ``ctx.saved_tensors`` (forward never saved them), and an allocation
    the machine refused (in GiB, not C++'s bytes); "" for anything else."""
    import linecache
    import re

    text = str(exc)
    source = linecache.getline(file, line) if file and line else ""
    if isinstance(exc, ValueError) and "saved_tensors" in source \
            and re.search(r"not enough values to unpack \(expected \d+, got 0\)", text):
        return (" — ctx.saved_tensors is empty: forward never called "
                "ctx.save_for_backward(...) with the tensors backward reads.")
    found = re.search(r"'(\w+)Backward' object has no attribute '(\w+)'", text)
    if isinstance(exc, AttributeError) and found:
        stored = _ctx_attributes(exc)
        known = f" (forward stored on ctx: {', '.join(stored)})" if stored else \
            " (forward stored nothing on it)"
        return f" — ctx, the object forward and backward share, has no {found[2]}{known}."
    found = re.search(r"tried to allocate (\d+) bytes", text)
    if isinstance(exc, RuntimeError) and found:
        return (f" — {int(found[1]) / 2 ** 30:.3g} GiB for one tensor: is a shape at this "
                "line written wrong?")
    return ""


def _ctx_attributes(exc: BaseException) -> list[str]:
    """What forward stored on the ``ctx`` of the innermost frame of ``exc`` that has one
    (its own attributes, not autograd's), in the order stored."""
    tb, names = exc.__traceback__, []
    while tb is not None:
        ctx = tb.tb_frame.f_locals.get("ctx")
        if ctx is not None:
            names = [n for n in getattr(ctx, "__dict__", {}) if not n.startswith("_")]
        tb = tb.tb_next
    return names


def _params(function: type[Function]) -> list[str]:
    from customgrad.function.inputs import forward_parameters

    try:
        return [p.name for p in forward_parameters(function)]
    except Exception:  # (a forward whose signature cannot be read)
        return []


def _shape_message(function: type[Function], name: str, text: str) -> str | None:
    """Autograd's "returned an invalid gradient at index 0 - got [8] but expected shape
    compatible with [3, 8]" in the check's words (the input's name, 3x8); None where it cannot
    be read."""
    import re

    found = re.search(r"at index (\d+) - got \[([\d, ]*)\] but expected shape compatible "
                      r"with \[([\d, ]*)\]", text)
    if found is None:
        return None
    index = int(found[1])
    got, want = (tuple(int(d) for d in part.split(",") if d.strip()) for part in found.group(2, 3))
    params = _params(function)
    param = params[index] if index < len(params) else f"argument {index}"
    return wrong_shape(name, got, param, want)


def wrong_shape(name: str, got: tuple[int, ...], param: str, want: tuple[int, ...]) -> str:
    """The words for a gradient of the wrong shape, the check's and the descent's."""
    return (f"{name} returned a gradient of shape [{format_shape(got)}] for {param}, "
            f"whose shape is [{format_shape(want)}].")


def _count_message(function: type[Function], name: str, text: str) -> str | None:
    """Autograd's "returned an incorrect number of gradients (expected 2, got 1)" in the
    words the check uses (``customgrad run`` said torch's own, ``check`` these); None where
    the numbers cannot be read."""
    import re

    found = re.search(r"expected (\d+), got (\d+)", text)
    if found is None:
        return None
    expected, got = int(found[1]), int(found[2])
    params = _params(function)[:expected]
    named = f" ({', '.join(params)})" if len(params) == expected else ""
    return (f"{name} returned {got} gradient{'s' if got != 1 else ''}, but forward takes "
            f"{expected} argument{'s' if expected != 1 else ''}{named}: return one per "
            "argument, None for non-tensors.")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


#: stands in for an item of forward's tuple that is not a tensor (an int, a dict, None:
#: autograd passes it through and hands backward None for it, and gradcheck skips it): empty
#: and not floating point, so never differentiated, and backward gets None for it
NOT_A_TENSOR = torch.empty(0, dtype=torch.bool)


def normalize_outputs(function: type[Function], raw) -> tuple[torch.Tensor, ...]:
    """forward's result as a tuple of tensors, an item that is not a tensor as
    :data:`NOT_A_TENSOR` where the tuple has a tensor; FunctionError for anything else."""
    outs = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
    if any(isinstance(out, torch.Tensor) for out in outs):
        outs = tuple(out if isinstance(out, torch.Tensor) else NOT_A_TENSOR for out in outs)
    for k, out in enumerate(outs):
        if not isinstance(out, torch.Tensor):
            kind = type(out).__name__
            numpy = type(out).__module__ == "numpy"
            error = FunctionError(
                f"{function.__name__}.forward returned {'an' if kind[0] in 'aeiou' else 'a'} "
                f"{'numpy ' if numpy else ''}{kind} "
                f"{'' if len(outs) == 1 else f'at position {k} '}— outputs must be tensors"
                + (": return torch.from_numpy(...) of it (a backward through numpy too: "
                   "@once_differentiable)." if numpy else "."),
                file=source_file(function), line=return_line(function, "forward"),
                phase="forward")
            error.returned = True  # type: ignore[attr-defined]  # (what it returned is wrong)
            raise error
    if not outs:
        raise FunctionError(f"{function.__name__}.forward returned an empty tuple.",
                            file=source_file(function), line=return_line(function, "forward"),
                            phase="forward")
    return outs


def call_backward(function: type[Function], ctx, grads: list,
                  written: list[int] | None = None):
    """Call the user's backward directly with ``ctx`` (the graph node) and raw ``grads``;
    FunctionError if it raises or modifies a grad_output in place (``written`` given: the
    positions of the grad_outputs it modified are appended there instead)."""
    def call():
        with torch.no_grad():
            return function.backward(ctx, *grads)
    versions = [g._version if isinstance(g, torch.Tensor) else None for g in grads]
    raw = run_user(function, "backward", call)
    for k, (g, v) in enumerate(zip(grads, versions)):
        if isinstance(g, torch.Tensor) and g._version != v:
            if written is None:
                raise grad_mutation_error(function, k, len(grads))
            written.append(k)
    return raw


def grad_mutation_note(function: type[Function], k: int, count: int) -> str:
    """Why a backward that modified its ``k``-th grad_output fails though every Jacobian
    entry may agree (each call was given a fresh grad_output, as gradcheck's are)."""
    line = mutation_line(function, "backward")
    where = f" ({source_file(function)}:{line})" if line else ""
    return (f"{function.__name__}.backward modifies grad_output{'' if count == 1 else f' {k}'} "
            f"in place{where}. gradcheck passes it (each row gets a fresh one-hot "
            "grad_output), and every Jacobian entry is judged here as there; but in use it "
            "breaks: after y.sum() autograd hands backward an expanded grad_output and the "
            "write raises ('more than one element of the written-to tensor refers to a single "
            "memory location'), and after y + w the same tensor is w's gradient too. Work on a "
            "copy (grad_output.clone(), or g * x for g.mul_(x)).")


def grad_mutation_error(function: type[Function], k: int, count: int) -> FunctionError:
    """The error for a backward that modified its ``k``-th grad_output (of ``count``)."""
    return FunctionError(
        f"{function.__name__}.backward modifies grad_output{'' if count == 1 else f' {k}'} in "
        "place. Autograd may reuse that tensor elsewhere, so never modify it; work on a copy "
        "(e.g. grad_output.clone()).",
        file=source_file(function), line=mutation_line(function, "backward"), phase="backward")


def write_site(function: type[Function], call: Callable, watched: list[torch.Tensor],
               state: Callable[[torch.Tensor], object] = lambda t: t._version
               ) -> tuple[str | None, int | None]:
    """Where ``call`` (the user's code) first writes in place into one of ``watched``: the
    user's file and line of the torch call after which a watched tensor's version counter
    moved (``x.mul_(2)``, ``x *= 2``, ``x[0] = 1``, ``out=x``, ``inplace=True``), found by
    running ``call`` under a TorchFunctionMode; (None, None) where it wrote none of them or
    raised. Slow (a version check around each torch call): only once a write is known.
    ``state`` reads another property to watch (``requires_grad``: ``x.detach_()``,
    ``x.requires_grad_(False)`` and ``x.requires_grad = False`` are torch calls too)."""
    found: list[tuple[str | None, int | None]] = []

    def around(func, args, kwargs):
        before = [state(t) for t in watched]
        result = func(*args, **kwargs)
        if not found and any(state(t) != v for t, v in zip(watched, before)):
            found.append(_calling_frame(function))
        return result

    _each_torch_call(call, around)
    return found[0] if found else (None, None)


def _each_torch_call(call: Callable, around: Callable) -> None:
    """Run ``call`` (the user's code) with each torch call in it made through
    ``around(func, args, kwargs)`` (a TorchFunctionMode); what ``call`` raises is dropped
    (the check's own calls report it, where it matters)."""
    from torch.overrides import TorchFunctionMode

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return around(func, args, kwargs or {})

    try:
        with Watch():
            call()
    except Exception:
        pass


def _calling_frame(function: type[Function]) -> tuple[str | None, int | None]:
    """The innermost frame of the current stack in the Function's file (or any user
    file), as :func:`user_location` reads a traceback's."""
    own = source_file(function)
    fallback: tuple[str | None, int | None] = (None, None)
    frame = inspect.currentframe()
    while frame is not None:
        path = _absolute(frame.f_code.co_filename)
        if own and path == own:
            return path, frame.f_lineno
        if fallback == (None, None) and _is_user_file(path):
            fallback = (path, frame.f_lineno)
        frame = frame.f_back
    return fallback


def nonfinite_site(function: type[Function], call: Callable) -> tuple[str | None, int | None]:
    """Where ``call`` (the user's code) first makes a NaN or Inf: the user's file and line of
    the first torch call whose result holds one while none of its tensor arguments did (a
    division by zero, log of a negative), else of the first whose result holds one (it came
    from outside torch: numpy, a Python float); (None, None) where none did or ``call``
    raised. Slow (each result looked at): only once a NaN or Inf is known."""
    from torch.utils._pytree import tree_leaves

    made: list[tuple[str | None, int | None]] = []
    carried: list[tuple[str | None, int | None]] = []

    def nonfinite(values) -> bool:
        return any(isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
                   and t.numel() > 0 and not bool(torch.isfinite(t).all())
                   for t in tree_leaves(values))

    def around(func, args, kwargs):
        if made:
            return func(*args, **kwargs)
        given = nonfinite((args, kwargs))  # before: an in-place call changes its argument
        result = func(*args, **kwargs)
        if nonfinite(result):
            (carried if given else made).append(_calling_frame(function))
        return result

    _each_torch_call(call, around)
    return made[0] if made else carried[0] if carried else (None, None)


@dataclass(frozen=True)
class GradientNote:
    """A legal surprise in backward's result, about one parameter: ``kind`` is ``"none"``
    (backward returns None for a floating-point tensor: its gradient is zero) or ``"shape"``
    (a gradient autograd sums to the parameter's shape); ``text`` says it to the user."""

    kind: str
    param: str
    text: str

    def __str__(self) -> str:
        return self.text


def autograd_casts(grad: torch.dtype, arg: torch.dtype) -> bool:
    """Whether autograd casts a gradient of dtype ``grad`` to its input's ``arg`` (as
    gradcheck sees it, even with ``check_grad_dtypes=True``): the engine's own rule
    (``validate_outputs``) refuses only a complex gradient for a real input and an integer
    one for a complex input; a real gradient for a complex input is cast (its imaginary
    part zero: the comparison then says what that costs)."""
    return grad.is_floating_point or grad.is_complex == arg.is_complex


def dtype_note(param: str, grad: torch.dtype, arg: torch.dtype) -> str:
    """What a gradient of another floating dtype than its input's means."""
    said = (f"backward returns the gradient of {param} as {str(grad)[6:]}, but {param} is "
            f"{str(arg)[6:]}: autograd casts it, as gradcheck sees it")
    if arg.is_complex and not grad.is_complex:
        return f"{said}, with no imaginary part."
    return (f"{said}, with {str(grad)[6:]}'s precision (torch.zeros(shape) and .float() make "
            f"the default dtype; torch.zeros_like({param}) and {param}.new_zeros keep "
            f"{param}'s).")


def check_gradients(function: type[Function], params: list[str], args: list,
                    raw) -> list[GradientNote]:
    """Check backward's raw result against forward's arguments; notes for legal surprises.

    Raises FunctionError for the wrong number of gradients, a gradient for a non-tensor
    argument, a non-tensor gradient, or a gradient of the wrong shape, dtype or device.
    """
    name = f"{function.__name__}.backward"

    def wrong(message: str) -> FunctionError:
        # where it is made, looked up only for an error: reading and parsing backward's
        # source cost more than the whole probe of a small Function (a check's probe is
        # run where nothing is wrong)
        return FunctionError(message, file=source_file(function),
                             line=return_line(function, "backward"), phase="backward")

    grads = raw if isinstance(raw, tuple) else (raw,)
    if len(grads) < len(args) or any(g is not None for g in grads[len(args):]):
        raise wrong(
            f"{name} returned {len(grads)} gradient{'s' if len(grads) != 1 else ''}, but forward "
            f"takes {len(args)} argument{'s' if len(args) != 1 else ''} "
            f"({', '.join(params)}): return one per argument, None for non-tensors.")
    notes = []
    for pos, (param, arg, grad) in enumerate(zip(params, args, grads)):
        if grad is None:
            if isinstance(arg, torch.Tensor) and arg.is_floating_point():
                notes.append(GradientNote("none", param, f"backward returns None for {param}: "
                                                         "its gradient is zero."))
            continue
        if not isinstance(arg, torch.Tensor):
            raise wrong(
                f"{name} returned a gradient for {param} (position {pos}), which is not a tensor "
                f"but a {type(arg).__name__}; return None there.")
        if not isinstance(grad, torch.Tensor):
            raise wrong(f"{name} returned a {type(grad).__name__} as the gradient of "
                        f"{param}; gradients must be tensors or None.")
        if grad.layout != torch.strided:
            raise wrong(f"{name} returned a sparse gradient ({str(grad.layout)[6:]}) for "
                        f"{param}; the check compares dense Jacobians: return "
                        "grad.to_dense() there.")
        if grad.device != arg.device:
            raise wrong(f"{name} returned the gradient of {param} on {grad.device}, but "
                        f"{param} is on {arg.device}.")
        if grad.dtype != arg.dtype:
            if not autograd_casts(grad.dtype, arg.dtype):
                raise wrong(f"{name} returned the gradient of {param} as "
                            f"{str(grad.dtype)[6:]}, but {param} is {str(arg.dtype)[6:]}: "
                            "autograd refuses it.")
            notes.append(GradientNote("dtype", param, dtype_note(param, grad.dtype, arg.dtype)))
        if grad.shape != arg.shape:
            want, got = format_shape(tuple(arg.shape)), format_shape(tuple(grad.shape))
            try:
                grad.sum_to_size(arg.shape)
            except RuntimeError:
                raise wrong(wrong_shape(name, tuple(grad.shape), param,
                                        tuple(arg.shape))) from None
            notes.append(GradientNote("shape", param, f"shape surprise: backward returns a "
                                                      f"[{got}] gradient for {param}; autograd "
                                                      f"sums it to {param}'s [{want}]."))
    return notes
