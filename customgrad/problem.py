"""A Function with its specs and seeded inputs and targets: what a check or a run works on."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from customgrad import jacobian
from customgrad.contract import normalize_outputs, run_user
from customgrad.descent import Descent
from customgrad.inputs import (
    ConstSpec,
    Spec,
    TensorSpec,
    apply_overrides,
    derive_specs,
    draw,
    parse_device,
    parse_dtype,
)
from customgrad.loader import Target, resolve
from customgrad.settings import Settings


@dataclass
class Problem:
    """Everything drawn from one seed: forward's arguments and the descent targets."""

    target: Target
    specs: list[Spec]
    dtype: torch.dtype
    device: torch.device
    args: list[object]
    targets: list[torch.Tensor]
    settings: Settings

    @property
    def function(self) -> type:
        return self.target.function

    def descent(self) -> Descent:
        s = self.settings
        return Descent(self.function, self.specs, self.args, self.targets, lr=s.lr, loss=s.loss,
                       optimizer=s.optimizer)

    def compare(self, args: list | None = None, **kwargs) -> jacobian.Report:
        """Jacobian comparison at ``args`` (default: the seeded starting point)."""
        s = self.settings
        options = {"eps": s.eps, "atol": s.atol, "rtol": s.rtol, "memory_cap": s.memory_cap}
        options.update(kwargs)
        return jacobian.compare(self.function, self.args if args is None else args, **options)


def specs_for(target: Target, settings: Settings) -> list[Spec]:
    """Specs from forward's signature, then the gallery's defaults, then the settings."""
    specs = derive_specs(target.function)
    entry = target.entry
    if entry is not None:
        trained = None
        if entry.trained is not None:
            trained = {s.name: s.name in entry.trained for s in specs}
        specs = apply_overrides(specs, entry.shapes, entry.constants, entry.init, trained)
    return apply_overrides(specs, settings.shapes, settings.constants, settings.init,
                           settings.trained)


def output_shapes(function: type, specs: list[Spec], dtype: torch.dtype,
                  device: torch.device) -> list[tuple[int, ...]]:
    """Shapes of the differentiable outputs, from one forward at throwaway inputs.

    This is also where a shape the Function rejects is reported, with its own message.
    """
    _, args = draw(specs, 0, dtype, device)
    call = [a.requires_grad_().clone() if isinstance(a, torch.Tensor) else a for a in args]
    outs = normalize_outputs(function, run_user(function, "forward",
                                                lambda: function.apply(*call)))
    return [tuple(o.shape) for o in outs if o.is_floating_point() and o.requires_grad]


def build(settings: Settings, target: Target | None = None) -> Problem:
    """Resolve, validate and draw: raises CustomGradError subclasses with clear messages."""
    settings.validate()
    target = target or resolve(settings.target)
    dtype, device = parse_dtype(settings.dtype), parse_device(settings.device)
    specs = specs_for(target, settings)
    shapes = output_shapes(target.function, specs, dtype, device)
    targets, args = draw(specs, settings.seed, dtype, device, shapes)
    return Problem(target, specs, dtype, device, args, targets, settings)


__all__ = ["ConstSpec", "Problem", "TensorSpec", "build", "output_shapes", "specs_for"]
