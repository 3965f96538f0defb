"""What a comparison hands back: the matrix's axes, the per-block statistics, the worst entry,
the progress events, and the :class:`Report` with its text, JSON and display helpers.

Pure data and its presentation: nothing here calls the Function. The whole-matrix passes a
display asks for go through :mod:`customgrad.checking.jacobian.matrices` (called as
``matrices.name`` so a test can count them).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from customgrad.checking.findings import Diagnosis, SubCheck
from customgrad.defaults import format_shape

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Axis:
    """One output (rows) or input (columns) of the Jacobian matrix.

    A complex tensor takes two places per element (``parts`` 2), its real part then its
    imaginary part, as gradcheck perturbs them (inputs) and splits them (outputs)."""

    name: str
    position: int
    shape: tuple[int, ...]
    offset: int
    parts: int = 1  # 2 for a complex tensor

    @property
    def size(self) -> int:
        return math.prod(self.shape) * self.parts

    def index(self, flat: int) -> tuple[int, ...]:
        """The tensor index of element ``flat`` of this axis."""
        return tuple(int(i) for i in _unravel(flat // self.parts, self.shape))

    def part(self, flat: int) -> str:
        """"" for a real tensor, else which part element ``flat`` is ("real", "imag")."""
        return "" if self.parts == 1 else ("real", "imag")[flat % 2]

    def element_name(self, flat: int) -> str:
        """The axis's name, with the part of element ``flat`` for a complex one (z.imag)."""
        part = self.part(flat)
        return f"{self.name}.{part}" if part else self.name

    def label(self, flat: int) -> str:
        return f"{self.element_name(flat)}[{', '.join(map(str, self.index(flat)))}]"


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for dim in reversed(shape):
        out.append(flat % dim)
        flat //= dim
    return list(reversed(out))


@dataclass
class Entry:
    """One Jacobian entry, named by output/input position and element index."""

    output: int
    input: int
    output_name: str
    input_name: str
    output_index: tuple[int, ...]
    input_index: tuple[int, ...]
    row: int
    col: int
    analytic: float
    numerical: float

    @property
    def abs_error(self) -> float:
        return abs(self.analytic - self.numerical)


@dataclass
class Block:
    """Agreement statistics of one (output, input) block."""

    output: Axis
    input: Axis
    mismatches: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    worst_score: float = -1.0
    worst: tuple[int, int] = (0, 0)
    #: entries whose difference is NaN (one side NaN, or both infinite alike): counted in
    #: ``max_abs_error`` as infinite, so that ``max`` keeps them, and written "nan" in words
    nan_entries: int = 0

    @property
    def size(self) -> int:
        return self.output.size * self.input.size

    @property
    def passed(self) -> bool:
        return self.mismatches == 0

    @property
    def name(self) -> str:
        return (f"d {self.output.name} [{format_shape(self.output.shape)}] / "
                f"d {self.input.name} [{format_shape(self.input.shape)}]")


REFERENCE = "reference+compressed"
FINITE_DIFFERENCES = "finite-differences"
#: the reason a first-order report gives while its second-order report is still being
#: computed: an app shows the first verdict before the double backward's
#: (:func:`customgrad.checking.second_order.beside`)
COMPUTING = "computing…"


@dataclass(frozen=True)
class Method:
    """How the numerical Jacobian was made: ``REFERENCE`` (``colours`` colours verified with
    ``forwards`` forward calls after ``products`` vector-Jacobian products) or
    ``FINITE_DIFFERENCES`` (two forward calls per column), with ``reason`` why not the first."""

    name: str = FINITE_DIFFERENCES
    colours: int = 0
    forwards: int = 0
    products: int = 0
    reason: str = ""

    def to_dict(self) -> dict:
        if self.name == REFERENCE:
            return {"name": self.name, "colours": self.colours, "forwards": self.forwards,
                    "products": self.products}
        return {"name": self.name, "reason": self.reason}

    def line(self, of: str = "forward") -> str:
        """One line for the text report; ``of`` names the function differenced ("backward"
        for the second order's report, whose forward is the user's backward)."""
        if self.name == REFERENCE:
            directions = "direction" if self.colours == 1 else "directions"
            return (f"numerical Jacobian by autograd through {of}, verified by finite "
                    f"differences in {self.colours:,} compressed {directions} "
                    f"({self.forwards:,} {of} calls)")
        why = f" ({self.reason})" if self.reason else ""
        return f"numerical Jacobian by finite differences, two {of} calls per column{why}"


@dataclass
class Progress:
    """Handed to the progress callback: fraction done and the partially filled matrices.

    The numerical matrix is filled column by column (``columns_done`` of them so far), then
    the analytic one row by row (``rows_done``); entries not computed yet hold no meaning
    (zero, or NaN in matrices made by hand). ``numerical`` is a transposed view.
    """

    fraction: float
    phase: str
    analytic: torch.Tensor | None
    numerical: torch.Tensor | None
    outputs: list[Axis] = field(default_factory=list)
    inputs: list[Axis] = field(default_factory=list)
    columns_done: int | None = None
    rows_done: int | None = None
    value_peak: float | None = None  # largest finite |entry| computed so far, both matrices


@dataclass(frozen=True)
class Overview:
    """A report's matrices pooled ``step`` x ``step`` (see :meth:`Report.overview`)."""

    step: int
    analytic: torch.Tensor
    numerical: torch.Tensor
    difference: torch.Tensor
    mismatches: torch.Tensor  # bool: any mismatch in the cell


class Fill:
    """Writes a report's matrices put off by the comparison (where no one watched them fill,
    the compressed method's entries are written when the matrices are first read): kept in
    the report's cache, run once (under a lock: two threads may read a report)."""

    def __init__(self, write: Callable[[], None]):
        self.write = write
        self.lock = threading.Lock()

    @staticmethod
    def run(cache: dict) -> None:
        """The pending fill in ``cache``, if any, written and dropped."""
        fill = cache.get("fill")
        if not isinstance(fill, Fill):
            return
        write = fill.write
        with fill.lock:
            if cache.get("fill") is fill:  # (not written by another thread meanwhile)
                write()
                del cache["fill"]


@dataclass(frozen=True)
class Report:
    """The verdict and everything needed to explain it: a value, built once
    (:func:`customgrad.checking.verification.verify` builds the whole one; a bare :func:`compare`
    one has no sub-checks, diagnoses or label) and never changed after.

    :attr:`passed` is computed from its parts: every Jacobian block agrees and no sub-check
    failed."""

    outputs: list[Axis]
    inputs: list[Axis]
    blocks: list[Block]
    worst: Entry | None
    eps: float
    atol: float
    rtol: float
    numerical_dtype: torch.dtype
    analytic_path: str
    notes: list[str] = field(default_factory=list)
    analytic: torch.Tensor | None = None
    numerical: torch.Tensor | None = None
    seconds: float = 0.0
    _cache: dict = field(default_factory=dict, repr=False)  # what display methods computed
    #: what the verdict line of :meth:`text` starts with (the Function's title), and its class
    #: name; both None for a bare :func:`compare` (the CLI prefixes its target's label itself)
    label: str | None = None
    function: str | None = None
    #: explanations of a failure, where they were sought (``customgrad.check`` does)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    #: the inputs nobody chose to differentiate that backward returns None for: constants,
    #: not checked (a buffer's None is right; a trained input's is a forgotten gradient,
    #: which gradcheck fails where the input requires grad): the verdict line names them
    returns_none: list[str] = field(default_factory=list)
    #: the sub-checks that ran beside the Jacobian (customgrad.checking.subchecks), by name
    checks: dict[str, SubCheck] = field(default_factory=dict)
    #: how the numerical Jacobian was made (the verified reference, or finite differences)
    method: Method = field(default_factory=Method)
    #: the double backward's report (customgrad.checking.second_order.beside), where the app drew
    #: it; else why not, in words ("" where it was not sought)
    second_order: Report | None = None
    second_order_reason: str = ""
    #: the verdict: no Jacobian entry outside tolerance and no sub-check failed
    passed: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", all(b.passed for b in self.blocks)
                           and all(c.passed for c in self.checks.values()))

    def __getattribute__(self, name: str):
        # the matrices, written first where the comparison put their entries off (Fill)
        if name == "analytic" or name == "numerical":
            Fill.run(object.__getattribute__(self, "_cache"))
        return object.__getattribute__(self, name)

    def __getstate__(self) -> dict:
        """Pickled with its matrices written (a pending write is not sent)."""
        Fill.run(self._cache)
        return dict(self.__dict__)

    def replace(self, **changes) -> Report:
        """``dataclasses.replace(self, **changes)`` that leaves a pending write of the
        matrices pending (shared: both reports read the same matrices and cache)."""
        cache = self._cache
        fill = cache.pop("fill", None)
        try:
            return dataclasses.replace(self, **changes)
        finally:
            if fill is not None:
                cache["fill"] = fill

    @property
    def mismatches(self) -> int:
        return sum(b.mismatches for b in self.blocks)

    @property
    def total(self) -> int:
        return sum(b.size for b in self.blocks)

    @property
    def max_abs_error(self) -> float:
        return max((b.max_abs_error for b in self.blocks), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((b.max_rel_error for b in self.blocks), default=0.0)

    @property
    def nan_entries(self) -> int:
        return sum(b.nan_entries for b in self.blocks)

    @property
    def shape(self) -> tuple[int, int]:
        return (sum(a.size for a in self.outputs), sum(a.size for a in self.inputs))

    def difference(self) -> torch.Tensor:
        """analytic - numerical (needs the matrices kept); computed once, then cached."""
        if "difference" not in self._cache:
            self._cache["difference"] = self._kept("analytic") - self._kept("numerical")
        return self._cache["difference"]

    def mismatch_mask(self) -> torch.Tensor:
        """True where an entry is outside tolerance (needs the matrices kept); cached."""
        if "mask" not in self._cache:
            if self.mismatches == 0:  # the comparison found none: no need to look again
                import torch

                self._kept("analytic", write=False)
                self._cache["mask"] = torch.zeros((), dtype=torch.bool).expand(self.shape)
            else:
                analytic, numerical = self._kept("analytic"), self._kept("numerical")
                pairs = tuple((a.offset, a.size) for a in self.inputs if a.parts == 2)
                self._cache["mask"] = ~_matrices().agree(analytic, numerical, self.atol,
                                                      self.rtol, pairs)
        return self._cache["mask"]

    def value_peak(self) -> float:
        """Largest finite |entry| of both matrices (0 if none; needs them kept); cached."""
        if "value_peak" not in self._cache:
            self._cache["value_peak"] = max(_matrices().finite_absmax(self._kept("analytic")),
                                            _matrices().finite_absmax(self._kept("numerical")))
        return self._cache["value_peak"]

    def difference_peak(self) -> float:
        """Largest finite |analytic - numerical| (needs the matrices kept); cached."""
        if "difference_peak" not in self._cache:
            self._cache["difference_peak"] = _matrices().finite_absmax(self.difference())
        return self._cache["difference_peak"]

    def overview(self, step: int) -> Overview:
        """The matrices pooled ``step`` x ``step`` for display, keeping in each cell the entry
        of largest magnitude (with its sign; NaN if any), and any mismatch; cached."""
        key = ("overview", step)
        if key not in self._cache:
            self._cache[key] = Overview(
                step, _matrices().pool_signed(self._kept("analytic"), step),
                _matrices().pool_signed(self._kept("numerical"), step),
                _matrices().pool_signed(self.difference(), step),
                _matrices().pool_any(self.mismatch_mask(), step))
        return self._cache[key]

    def has_overview(self, step: int) -> bool:
        """True if :meth:`overview` for ``step`` is computed already (1: nothing to pool)."""
        return step <= 1 or ("overview", step) in self._cache

    def _kept(self, name: str, write: bool = True) -> torch.Tensor:
        """Matrix ``name``; ValueError where it was not kept. ``write``: with every entry
        (else maybe not written yet, see :class:`Fill`)."""
        matrix = getattr(self, name) if write else object.__getattribute__(self, name)
        if matrix is None:
            raise ValueError("the matrices were not kept (keep_matrices=False)")
        return matrix

    def prepare_drawing(self, step: int = 1) -> None:
        """Compute what a drawing reads (difference, mask, peaks, and the overview pooled by
        ``step`` if above 1) now, off the GUI thread; later calls find them cached."""
        if self.analytic is not None and self.numerical is not None:
            self.difference()
            self.mismatch_mask()
            self.value_peak()
            self.difference_peak()
            if step > 1:
                self.overview(step)

    @property
    def agrees(self) -> bool:
        """Every Jacobian block agrees (the verdict but for the sub-checks)."""
        return all(b.passed for b in self.blocks)

    def summary(self, jacobian_only: bool = False) -> str:
        """The verdict line; ``jacobian_only``: the Jacobian's alone (:attr:`agrees`)."""
        verdict = "PASSED" if (self.agrees if jacobian_only else self.passed) else "FAILED"
        failed = [c.name for c in self.checks.values() if c.status == "failed"]
        if verdict == "FAILED" and self.mismatches == 0 and failed:  # the Jacobian agrees
            verdict = f"FAILED ({', '.join(failed)})"
        nans = self.nan_entries
        errors = (f"max abs error {_error(self.max_abs_error, nans)}, max rel error "
                  f"{_error(self.max_rel_error, nans)}")
        where = f"NaN in {nans:,} {'entry' if nans == 1 else 'entries'}; " if nans else ""
        return (f"{verdict}: {self.mismatches:,} of {self.total:,} Jacobian entries outside "
                f"|a - n| <= {self.atol:g} + {self.rtol:g}*|n|; {errors} "
                f"({where}eps {self.eps:g}, numerical in {str(self.numerical_dtype)[6:]})"
                f"{self.unchecked_words()}")

    def unchecked_words(self) -> str:
        """The verdict line's end where backward returns None for inputs nobody chose: "; w
        not checked: backward returns None for it (...)", else ""."""
        if not self.returns_none:
            return ""
        names = ", ".join(self.returns_none)
        one = len(self.returns_none) == 1
        return (f"; {names} not checked: backward returns None for {'it' if one else 'them'} "
                f"(right for a buffer, a mask or a filter; for an input that is trained, its "
                f"gradient is missing: --no-grad {self.returns_none[0]} or requires_grad says "
                f"which)")

    def block_table(self) -> list[str]:
        """The per-block table of the CLI's ``check`` text, a line per row (header first)."""
        rows = [("block", "entries", "mismatches", "max abs", "max rel", "")]
        for b in self.blocks:
            rows.append((b.name, f"{b.size:,}", f"{b.mismatches:,}",
                         _error(b.max_abs_error, b.nan_entries),
                         _error(b.max_rel_error, b.nan_entries),
                         "ok" if b.passed else "MISMATCH"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                for r in rows]

    def worst_line(self) -> str | None:
        """``worst entry: d output[1, 0] / d weight[3, 0]: analytic .., numerical ..`` (or
        ``largest deviation`` for a report that passed); None without a worst entry."""
        w = self.worst
        if w is None:
            return None
        label = "worst entry" if not self.passed else "largest deviation"
        return (f"{label}: d {w.output_name}{list(w.output_index)} / d {w.input_name}"
                f"{list(w.input_index)}: analytic {w.analytic:.6g}, numerical "
                f"{w.numerical:.6g}, difference {w.analytic - w.numerical:.3g}")

    def text(self, label: str | None = None) -> str:
        """The CLI's ``check`` text: the verdict line (after ``label``, default
        :attr:`label`), the block table, the worst entry, the diagnoses, the sub-checks
        (those that did not pass with their reason) and the notes."""
        label = self.label if label is None else label
        lines = [f"{label}: {self.summary()}" if label else self.summary()]
        lines += self.block_table()
        worst = self.worst_line()
        if worst is not None:
            lines.append(worst)
        lines += [f"diagnosis: {d}" for d in self.diagnoses]
        if len(self.checks) > 1:
            lines.append("checks: " + ", ".join(f"{c.name} {c.status}"
                                                for c in self.checks.values()))
            lines += [f"check {c.name}: {c.status}: {c.detail}" for c in self.checks.values()
                      if c.name != "jacobian" and c.status != "passed"]
        lines += [f"note: {note}" for note in self.notes]
        lines.append(f"method: {self.method.line()}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        """Jupyter: the verdict, the block table and the three heatmaps (drawn by the
        playground when Qt is available, else the text in a ``<pre>``)."""
        from customgrad.checking.notebook import report_html

        return report_html(self)

    def _repr_png_(self) -> bytes | None:
        """Front ends without HTML: the three heatmaps as PNG (None without Qt)."""
        from customgrad.checking.notebook import report_png

        return report_png(self)

    def to_dict(self) -> dict:
        """A JSON-ready dict; NaN and infinity become None."""
        worst = None
        if self.worst is not None:
            w = self.worst
            worst = {"output": w.output, "input": w.input, "output_name": w.output_name,
                     "input_name": w.input_name, "output_index": list(w.output_index),
                     "input_index": list(w.input_index), "analytic": _num(w.analytic),
                     "numerical": _num(w.numerical), "abs_error": _num(w.abs_error)}
        data = {
            "passed": self.passed,
            "max_abs_error": _num(self.max_abs_error),
            "max_rel_error": _num(self.max_rel_error),
            "mismatches": self.mismatches,
            "nan_entries": self.nan_entries,
            "returns_none": list(self.returns_none),
            "entries": self.total,
            "worst": worst,
            "blocks": [{"output": b.output.position, "input": b.input.position,
                        "output_name": b.output.name, "input_name": b.input.name,
                        "output_shape": list(b.output.shape), "input_shape": list(b.input.shape),
                        # a complex tensor's entries are its real, then imaginary parts
                        "output_complex": b.output.parts == 2,
                        "input_complex": b.input.parts == 2,
                        "passed": b.passed, "mismatches": b.mismatches,
                        "nan_entries": b.nan_entries,
                        "max_abs_error": _num(b.max_abs_error),
                        "max_rel_error": _num(b.max_rel_error)} for b in self.blocks],
            "eps": self.eps, "atol": self.atol, "rtol": self.rtol,
            "numerical_dtype": str(self.numerical_dtype).replace("torch.", ""),
            "notes": list(self.notes),
            "method": self.method.to_dict(),
            "seconds": round(self.seconds, 4),
            "diagnoses": [d.to_dict() for d in self.diagnoses],
        }
        if self.function is not None:
            data["function"] = self.function
        if self.checks:
            data["checks"] = {name: c.to_dict() for name, c in self.checks.items()}
        double = self.checks.get("double_backward")
        if double is not None:  # the key `check --double --json` has always had
            data["double_backward"] = {"supported": double.status != "skipped",
                                       "passed": double.status == "passed",
                                       "message": double.detail}
        return data


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _error(value: float, nan_entries: int) -> str:
    """An error in words: "nan" where it is infinite only because entries were NaN (the
    comparison counts those as infinite so that a maximum keeps them), not "inf"."""
    return "nan" if nan_entries and math.isinf(value) else f"{value:.3g}"


def _matrices():
    """The whole-matrix helpers (torch): imported where a report's matrices are read, so that
    the window can import this module before torch (a test counts their calls there)."""
    from customgrad.checking.jacobian import matrices

    return matrices
