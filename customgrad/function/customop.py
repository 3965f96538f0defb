"""torch.library custom ops as targets: an op with a registered autograd formula
(``torch.library.custom_op`` + ``register_autograd``) checked like a Function.

:func:`function_for_op` wraps the op in a ``torch.autograd.Function`` subclass whose ``apply``
is the op itself (autograd runs the registered backward) and whose ``forward`` calls it for the
finite differences; forward's parameters come from the op's schema, typed, so that tensors and
constants are told apart.
"""

from __future__ import annotations

import inspect

import torch
from torch.autograd import Function

from customgrad.errors import TargetError

#: schema types and the Python annotation that makes a parameter a tensor or a constant
_ANNOTATIONS = {"Tensor": torch.Tensor, "float": float, "int": int, "bool": bool, "str": str,
                "SymInt": int}


def is_custom_op(obj: object) -> bool:
    """True for a ``torch.library.custom_op`` (its decorated callable) or an op overload."""
    return (hasattr(obj, "_opoverload") and hasattr(obj, "_namespace")) or isinstance(
        obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))


def _definition(op: object, overload: torch._ops.OpOverload) -> object | None:
    """The Python function a ``torch.library.custom_op`` was made from (None for others)."""
    if hasattr(op, "_init_fn"):
        return op._init_fn
    from torch._library import custom_ops

    found = custom_ops.OPDEFS.get(overload._schema.name)
    return getattr(found, "_init_fn", None)


def _overload(op: object) -> torch._ops.OpOverload:
    if isinstance(op, torch._ops.OpOverload):
        return op
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op.default
    return op._opoverload  # type: ignore[attr-defined]  # a custom_op's CustomOpDef (private)


def op_by_name(qualname: str) -> torch._ops.OpOverload:
    """``mylib::myop`` (or ``mylib::myop.overload``), registered already."""
    namespace, _, rest = qualname.partition("::")
    name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        raise TargetError(f"No torch.library op called {qualname!r} is registered: define it "
                          "(torch.library.custom_op) in the file or module named before it, "
                          f"e.g. path/to/ops.py:{qualname}.") from None


def function_for_op(op: object, source: object | None = None) -> type[Function]:
    """A Function class that stands for ``op``: ``apply`` calls the op (through autograd),
    ``forward`` calls it for finite differences. ``source``: what the code view shows (by
    default the op's Python definition)."""
    overload = _overload(op)
    schema = overload._schema
    if any(a.is_out or (a.alias_info is not None and a.alias_info.is_write)
           for a in schema.arguments):
        raise TargetError(f"{schema.name} mutates its arguments: only functional ops can be "
                          "checked against finite differences.")
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for arg in schema.arguments:
        annotation = _ANNOTATIONS.get(str(arg.type).rstrip("?"), inspect.Parameter.empty)
        default = arg.default_value if arg.has_default_value() else inspect.Parameter.empty
        params.append(inspect.Parameter(arg.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=default, annotation=annotation))

    def forward(ctx, *args):
        return overload(*args)

    def backward(ctx, *grads):  # never called: apply goes through the op's own autograd
        raise RuntimeError(f"{schema.name}'s backward runs through autograd")

    # read by inspect.signature; mypy's function type has no room for it
    forward.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    name = schema.name.split("::")[-1]
    defined = _definition(op, overload)
    doc = inspect.getdoc(defined) if defined is not None else None
    adapter = type(name, (torch.autograd.Function,), {
        "forward": staticmethod(forward),
        "backward": staticmethod(backward),
        "apply": classmethod(lambda cls, *args: overload(*args)),
        "__doc__": doc,
        "__module__": getattr(defined, "__module__", __name__),
        "__custom_op__": overload,
        "__source_object__": source if source is not None else defined,
    })
    return adapter


def op_of(function: type[Function]) -> torch._ops.OpOverload | None:
    """The op a :func:`function_for_op` class stands for; None for a plain Function."""
    return vars(function).get("__custom_op__")
