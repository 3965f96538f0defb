"""One settings object for a run: what the app's form edits, the CLI fills, and workers read."""

from __future__ import annotations

import base64
import copy
import io
import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np

from customgrad.checking.jacobian.limits import ATOL, EPS, MEMORY_CAP, RTOL
from customgrad.defaults import DTYPE_NAMES, LOSSES, OPTIMIZERS
from customgrad.errors import SpecError

if TYPE_CHECKING:
    import torch


@dataclass
class Settings:
    """Function, inputs, dtype, device, constants, seed, loop and tolerance settings."""

    target: str = "killhead"
    shapes: dict[str, str] = field(default_factory=dict)
    constants: dict[str, object] = field(default_factory=dict)
    init: dict[str, str] = field(default_factory=dict)
    trained: dict[str, bool] = field(default_factory=dict)
    #: which tensor inputs the check differentiates, by name, as gradcheck's requires_grad:
    #: where any is True exactly those; else every floating-point one but those set False
    differentiate: dict[str, bool] = field(default_factory=dict)
    #: tensors by input name, for the inputs whose init is ``given`` (playground.show):
    #: CPU tensors, written into session files as ``.npy`` data (never pickle)
    given: dict[str, torch.Tensor] = field(default_factory=dict)
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 0
    lr: float = 1.0
    steps: int = 100
    loss: str = "mse"
    optimizer: str = "sgd"
    eps: float = EPS
    atol: float = ATOL
    rtol: float = RTOL
    #: how far two backward calls on the same graph may differ (gradcheck's nondet_tol)
    nondet_tol: float = 0.0
    check_every: int = 0
    memory_cap: int = MEMORY_CAP

    def validate(self) -> None:
        """SpecError naming the first invalid scalar field (see :meth:`check_field`)."""
        for name, rule in _RULES.items():
            problem = rule(name, getattr(self, name))
            if problem is not None:
                raise SpecError(problem, field=name)

    @staticmethod
    def check_field(name: str, value: object) -> str | None:
        """What is wrong with ``value`` as setting ``name``, in words, or None where it is
        fine (or the field has no rule of its own). The one rule per field: :meth:`validate`
        raises these messages, and the app's fields show them as the user types."""
        if name not in _FIELDS:
            raise ValueError(f"Settings has no field {name!r}")
        rule = _RULES.get(name)
        return None if rule is None else rule(name, value)

    def to_dict(self) -> dict:
        """JSON-ready: each given tensor as ``{"npy": base64 of its .npy bytes}``."""
        data = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
                if f.name != "given"}
        data["given"] = {name: {"npy": npy_text(value)} for name, value in self.given.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict) -> tuple[Settings, list[str]]:
        """Settings from a (possibly partial or outdated) dict, and a list of what was ignored."""
        settings, problems = cls(), []
        if not isinstance(data, dict):
            return settings, ["settings are not a JSON object; defaults used"]
        names = {f.name: f for f in fields(cls)}
        for key, value in data.items():
            if key not in names:
                problems.append(f"unknown setting {key!r} ignored")
                continue
            default = getattr(settings, key)
            if key == "given":
                value, bad = _read_given(value)
                problems.extend(bad)
                ok = True
            elif isinstance(default, dict):
                ok = isinstance(value, dict)
                if ok:
                    value = _typed_entries(key, value, problems)
            elif isinstance(default, bool):
                ok = isinstance(value, bool)
            elif isinstance(default, int):
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif isinstance(default, float):
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
                value = float(value) if ok else value
            else:
                ok = isinstance(value, str)
            if not ok:
                problems.append(f"setting {key!r} has the wrong type ({type(value).__name__}); "
                                "default used")
                continue
            previous = getattr(settings, key)
            setattr(settings, key, value)
            try:
                settings.validate()
            except SpecError as exc:
                setattr(settings, key, previous)
                problems.append(f"{exc} Default used.")
        return settings, problems


#: what each table's entries may hold, in words for the note about one that does not
_ENTRY_KINDS = {"shapes": "text", "init": "text", "trained": "true or false",
                "differentiate": "true or false", "constants": "a number, text, true, false, "
                "null or a list of them"}
_INT64 = 2 ** 63


def _plain_constant(value: object, depth: int = 0) -> bool:
    if value is None or isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return -_INT64 <= value < _INT64  # what a tensor or torch's int arguments hold
    if isinstance(value, float):
        return True
    return isinstance(value, list) and depth < 4 and \
        all(_plain_constant(v, depth + 1) for v in value)


def _entry_ok(key: str, value: object) -> bool:
    if key in ("shapes", "init"):
        return isinstance(value, str)
    if key in ("trained", "differentiate"):
        return isinstance(value, bool)
    return _plain_constant(value)


def _whole_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _INT64


def _shape_text(value: object) -> object:
    """A shape an older version wrote as a number or a JSON list (``[3, 8]``), as text
    (``3x8``); anything else as it is."""
    if _whole_size(value):
        return str(value)
    if isinstance(value, list) and all(_whole_size(v) for v in value):
        return "x".join(map(str, value))
    return value


def _typed_entries(key: str, table: dict, problems: list[str]) -> dict:
    """``table`` (setting ``key``, read from a file) less each entry whose value is not of
    the type the form and the checks take (a shape that is not text, a 'trained' that is not
    true or false), each said in ``problems``: no widget or check ever sees it."""
    kept = {}
    for name, value in table.items():
        if key == "shapes":
            value = _shape_text(value)
        if key in _ENTRY_KINDS and not _entry_ok(key, value):
            shown = repr(value)
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            problems.append(f"{key} for {name!r} is not {_ENTRY_KINDS[key]} ({shown}); "
                            "default used")
            continue
        kept[name] = value
    return kept


def npy_text(tensor: torch.Tensor) -> str:
    """``tensor`` as the base64 text of its ``.npy`` file."""
    buffer = io.BytesIO()
    np.save(buffer, tensor.detach().cpu().numpy(), allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _read_given(data: object) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Given tensors from a session's ``{"name": {"npy": base64}}``, and what was wrong."""
    if not isinstance(data, dict):
        return {}, ["setting 'given' is not a table of tensors; ignored"]
    import torch  # here: the window reads settings before it has torch

    out, problems = {}, []
    for name, item in data.items():
        text = item.get("npy") if isinstance(item, dict) else None
        if not isinstance(text, str):
            problems.append(f"the tensor given for {name!r} has no npy text; ignored")
            continue
        try:
            out[str(name)] = torch.from_numpy(_npy_array(base64.b64decode(text, validate=True)))
        except (TypeError, ValueError, OSError, EOFError) as exc:
            problems.append(f"the tensor given for {name!r} cannot be read ({exc}); ignored")
    return out, problems


def _npy_array(data: bytes) -> np.ndarray:
    """The array of an ``.npy`` file's bytes, its header checked first: a header that claims
    more data than the bytes hold (a shape of 10^12) is refused before anything is allocated."""
    stream = io.BytesIO(data)
    npy = np.lib.format
    version = npy.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f".npy format version {version} is not read here")
    read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, _, dtype = read_header(stream)
    if dtype.hasobject:
        raise ValueError("it holds Python objects")
    size = math.prod(shape) * dtype.itemsize
    if size != len(data) - stream.tell():
        raise ValueError(f"its header says shape {shape} ({size:,} bytes), "
                         f"the file holds {len(data) - stream.tell():,}")
    stream.seek(0)
    return np.array(np.load(stream, allow_pickle=False))


# ---------------------------------------------------------------------- rules, one per field


def _choice(options: tuple[str, ...], verdict: str = "is unknown", joiner: str = ", "):
    def rule(name: str, value: object) -> str | None:
        if value in options:
            return None
        return f"{name} {value!r} {verdict}; use {joiner.join(options)}."
    return rule


def _whole(what: str, minimum: int, limit: int | None = None):
    def rule(name: str, value: object) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum \
                and (limit is None or value < limit):
            return None
        return f"{name} must be {what}, not {value!r}."
    return rule


def _number(positive: bool):
    def rule(name: str, value: object) -> str | None:
        if not isinstance(value, (int, float)):
            return f"{name} must be a number, not {value!r}."
        if not math.isfinite(value):
            return f"{name} must be a finite number, not {value!r}."
        if positive and not value > 0:
            return f"{name} must be a positive number (greater than 0), not {value!r}."
        if not positive and value < 0:
            return f"{name} must be a number >= 0, not {value!r}."
        return None
    return rule


_FIELDS = frozenset(f.name for f in fields(Settings))
#: in the order :meth:`Settings.validate` checks them
_RULES = {
    "dtype": _choice(DTYPE_NAMES, "is not supported"),
    "loss": _choice(LOSSES),
    "optimizer": _choice(OPTIMIZERS),
    "seed": _whole("a whole number >= 0", 0, 2**63),
    "steps": _whole("a whole number >= 0", 0),
    "check_every": _whole("a whole number >= 0", 0),
    "memory_cap": _whole("a positive number of bytes", 1),
    "lr": _number(positive=True),
    "eps": _number(positive=True),
    "atol": _number(positive=False),
    "rtol": _number(positive=False),
    "nondet_tol": _number(positive=False),
}
