"""The numbers every phase of the comparison shares: the default tolerances and their rule,
the memory cap, and the sizes of batches, comparison pieces and progress events.

The other modules read the sizes as ``limits.CHUNK_ELEMENTS`` when they run (never
``from ... import`` them), so a test that shrinks one here shrinks it for every phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from customgrad.defaults import ATOL as ATOL  # the tolerances live with the other defaults
from customgrad.defaults import EPS as EPS
from customgrad.defaults import RTOL as RTOL
from customgrad.errors import SpecError

#: the least eps/atol/rtol for a numerical Jacobian that has to stay in float32
FLOAT32_FLOOR = {"eps": 1e-3, "atol": 1e-3, "rtol": 1e-2}
MEMORY_CAP = 1 << 30
#: entries of one batch of rows or columns (and of one pass over a big matrix)
CHUNK_ELEMENTS = 1 << 19
#: entries of one piece of the comparison: small enough to stay in cache
TILE_ELEMENTS = 1 << 16
#: the least time between two progress events that are not forced
PROGRESS_SECONDS = 0.05
#: matrices this big or bigger are mapped lazily (see matrices.lazy_zeros)
LAZY_BYTES = 1 << 22


@dataclass(frozen=True)
class Tolerances:
    """The finite-difference step and gradcheck's ``|a - n| <= atol + rtol * |n|``."""

    eps: float
    atol: float
    rtol: float

    @classmethod
    def checked(cls, eps, atol, rtol) -> Tolerances:
        """The three as floats; SpecError (naming the field) unless each is a finite number
        >= 0 and eps > 0."""
        for name, value in (("eps", eps), ("atol", atol), ("rtol", rtol)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise SpecError(f"{name} must be a finite number >= 0, not {value!r}.", field=name)
        if eps <= 0:
            raise SpecError("eps must be greater than 0.", field="eps")
        return cls(float(eps), float(atol), float(rtol))

    def floored(self) -> Tolerances:
        """Each at least its :data:`FLOAT32_FLOOR` (for a float32 numerical Jacobian)."""
        return Tolerances(max(self.eps, FLOAT32_FLOOR["eps"]),
                          max(self.atol, FLOAT32_FLOOR["atol"]),
                          max(self.rtol, FLOAT32_FLOOR["rtol"]))
