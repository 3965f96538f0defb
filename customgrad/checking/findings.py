"""What the checks beside the Jacobian found, as records: a :class:`Diagnosis` (why a backward
disagrees) and a :class:`SubCheck` (one of gradcheck's checks, with its verdict).

Plain data that imports nothing of customgrad, so that the report can hold them while
:mod:`customgrad.checking.diagnosis` and :mod:`customgrad.checking.subchecks`, which compute them,
import the report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Diagnosis:
    """One explanation: the block it is about (None: the Function as a whole), its kind, the
    evidence in words and how sure it is (0 to 1)."""

    block: str | None
    kind: str
    detail: str
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.block}: " if self.block else ""
        return f"{where}{self.detail} [{self.kind}]"


@dataclass(frozen=True)
class SubCheck:
    """One sub-check's verdict: ``status`` is passed, failed or skipped, ``detail`` says why."""

    name: str
    status: str  # passed | failed | skipped
    detail: str

    @property
    def passed(self) -> bool:
        return self.status != "failed"

    def to_dict(self) -> dict:
        return asdict(self)
