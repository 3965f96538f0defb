"""One settings object for a run: what the app's form edits, the CLI fills, and workers read."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from customgrad.descent import LOSSES, OPTIMIZERS
from customgrad.errors import SpecError
from customgrad.jacobian import ATOL, EPS, MEMORY_CAP, RTOL


@dataclass
class Settings:
    """Function, inputs, dtype, device, constants, seed, loop and tolerance settings."""

    target: str = "killhead"
    shapes: dict[str, str] = field(default_factory=dict)
    constants: dict[str, object] = field(default_factory=dict)
    init: dict[str, str] = field(default_factory=dict)
    trained: dict[str, bool] = field(default_factory=dict)
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
    check_every: int = 0
    memory_cap: int = MEMORY_CAP

    def validate(self) -> None:
        """SpecError naming the first invalid scalar field."""
        if self.dtype not in ("float32", "float64"):
            raise SpecError(f"dtype {self.dtype!r} is not supported; use float32 or float64.",
                            field="dtype")
        if self.loss not in LOSSES:
            raise SpecError(f"loss {self.loss!r} is unknown; use {', '.join(LOSSES)}.",
                            field="loss")
        if self.optimizer not in OPTIMIZERS:
            raise SpecError(f"optimizer {self.optimizer!r} is unknown; use "
                            f"{', '.join(OPTIMIZERS)}.", field="optimizer")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not \
                0 <= self.seed < 2**63:
            raise SpecError(f"seed must be a whole number >= 0, not {self.seed!r}.",
                            field="seed")
        if not isinstance(self.steps, int) or self.steps < 0:
            raise SpecError(f"steps must be a whole number >= 0, not {self.steps!r}.",
                            field="steps")
        if not isinstance(self.check_every, int) or self.check_every < 0:
            raise SpecError(f"check_every must be a whole number >= 0, not "
                            f"{self.check_every!r}.", field="check_every")
        if not isinstance(self.memory_cap, int) or self.memory_cap <= 0:
            raise SpecError(f"memory_cap must be a positive number of bytes, not "
                            f"{self.memory_cap!r}.", field="memory_cap")
        for name in ("lr", "eps"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise SpecError(f"{name} must be a positive number, not {value!r}.", field=name)
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise SpecError(f"{name} must be a number >= 0, not {value!r}.", field=name)

    def to_dict(self) -> dict:
        return asdict(self)

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
            if isinstance(default, dict):
                ok = isinstance(value, dict)
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
