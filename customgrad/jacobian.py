"""Full analytic-vs-numerical Jacobian comparison of a custom autograd Function.

The analytic Jacobian comes from the Function's own ``backward`` (one vector-Jacobian product
per output element); the numerical one from central finite differences (two ``forward`` calls
per input element). Entries agree by gradcheck's rule ``|a - n| <= atol + rtol * |n|``.

Speed: both passes call ``forward``/``backward`` directly instead of through ``apply`` and the
autograd engine, which costs a few microseconds per call instead of tens. A few rows are
checked against the engine first; any disagreement switches to the engine for every row.
"""

from __future__ import annotations

import math
import mmap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from customgrad.contract import (
    FakeCtx,
    call_backward,
    check_gradients,
    grad_mutation_error,
    normalize_outputs,
    run_user,
)
from customgrad.errors import Cancelled, FunctionError, SpecError, TooLargeError
from customgrad.inputs import format_shape, forward_parameters, is_new_style

if TYPE_CHECKING:  # both import this module
    from customgrad.diagnosis import Diagnosis
    from customgrad.subchecks import SubCheck

EPS, ATOL, RTOL = 1e-6, 1e-5, 1e-3
FLOAT32_FLOOR = {"eps": 1e-3, "atol": 1e-3, "rtol": 1e-2}
MEMORY_CAP = 1 << 30
_CHUNK_ELEMENTS = 1 << 19
_TILE_ELEMENTS = 1 << 16
_PROGRESS_SECONDS = 0.05
_LAZY_BYTES = 1 << 22  # matrices this big or bigger are mapped lazily


@dataclass(frozen=True)
class Axis:
    """One output (rows) or input (columns) of the Jacobian matrix."""

    name: str
    position: int
    shape: tuple[int, ...]
    offset: int

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def index(self, flat: int) -> tuple[int, ...]:
        """The tensor index of element ``flat`` of this axis."""
        return tuple(int(i) for i in _unravel(flat, self.shape))

    def label(self, flat: int) -> str:
        return f"{self.name}[{', '.join(map(str, self.index(flat)))}]"


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


@dataclass
class Report:
    """The verdict and everything needed to explain it."""

    passed: bool
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
    #: the sub-checks that ran beside the Jacobian (customgrad.subchecks), by name
    checks: dict[str, SubCheck] = field(default_factory=dict)

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
            self._cache["mask"] = ~_agree(self._kept("analytic"), self._kept("numerical"),
                                          self.atol, self.rtol)
        return self._cache["mask"]

    def value_peak(self) -> float:
        """Largest finite |entry| of both matrices (0 if none; needs them kept); cached."""
        if "value_peak" not in self._cache:
            self._cache["value_peak"] = max(finite_absmax(self._kept("analytic")),
                                            finite_absmax(self._kept("numerical")))
        return self._cache["value_peak"]

    def difference_peak(self) -> float:
        """Largest finite |analytic - numerical| (needs the matrices kept); cached."""
        if "difference_peak" not in self._cache:
            self._cache["difference_peak"] = finite_absmax(self.difference())
        return self._cache["difference_peak"]

    def overview(self, step: int) -> Overview:
        """The matrices pooled ``step`` x ``step`` for display, keeping in each cell the entry
        of largest magnitude (with its sign; NaN if any), and any mismatch; cached."""
        key = ("overview", step)
        if key not in self._cache:
            self._cache[key] = Overview(
                step, pool_signed(self._kept("analytic"), step),
                pool_signed(self._kept("numerical"), step), pool_signed(self.difference(), step),
                pool_signed(self.mismatch_mask().to(torch.float64), step) > 0)
        return self._cache[key]

    def has_overview(self, step: int) -> bool:
        """True if :meth:`overview` for ``step`` is computed already (1: nothing to pool)."""
        return step <= 1 or ("overview", step) in self._cache

    def _kept(self, name: str) -> torch.Tensor:
        matrix = getattr(self, name)
        if matrix is None:
            raise ValueError("the matrices were not kept (keep=False)")
        return matrix

    def prepare_display(self, step: int = 1) -> None:
        """Compute what a display reads (difference, mask, peaks, and the overview pooled by
        ``step`` if above 1) now, off the GUI thread; later calls find them cached."""
        if self.analytic is not None and self.numerical is not None:
            self.difference()
            self.mismatch_mask()
            self.value_peak()
            self.difference_peak()
            if step > 1:
                self.overview(step)

    def summary(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        failed = [c.name for c in self.checks.values() if c.status == "failed"]
        if not self.passed and self.mismatches == 0 and failed:  # the Jacobian agrees
            verdict = f"FAILED ({', '.join(failed)})"
        return (f"{verdict}: {self.mismatches:,} of {self.total:,} Jacobian entries outside "
                f"|a - n| <= {self.atol:g} + {self.rtol:g}*|n|; max abs error "
                f"{self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g} "
                f"(eps {self.eps:g}, numerical in {str(self.numerical_dtype)[6:]})")

    def block_table(self) -> list[str]:
        """The per-block table of the CLI's ``check`` text, a line per row (header first)."""
        rows = [("block", "entries", "mismatches", "max abs", "max rel", "")]
        for b in self.blocks:
            rows.append((b.name, f"{b.size:,}", f"{b.mismatches:,}", f"{b.max_abs_error:.3g}",
                         f"{b.max_rel_error:.3g}", "ok" if b.passed else "MISMATCH"))
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
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        """Jupyter: the verdict, the block table and the three heatmaps (drawn by the
        playground when Qt is available, else the text in a ``<pre>``)."""
        from customgrad.api import report_html

        return report_html(self)

    def _repr_png_(self) -> bytes | None:
        """Front ends without HTML: the three heatmaps as PNG (None without Qt)."""
        from customgrad.api import report_png

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
            "entries": self.total,
            "worst": worst,
            "blocks": [{"output": b.output.position, "input": b.input.position,
                        "output_name": b.output.name, "input_name": b.input.name,
                        "output_shape": list(b.output.shape), "input_shape": list(b.input.shape),
                        "passed": b.passed, "mismatches": b.mismatches,
                        "max_abs_error": _num(b.max_abs_error),
                        "max_rel_error": _num(b.max_rel_error)} for b in self.blocks],
            "eps": self.eps, "atol": self.atol, "rtol": self.rtol,
            "numerical_dtype": str(self.numerical_dtype).replace("torch.", ""),
            "notes": list(self.notes),
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


def _agree(a: torch.Tensor, n: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """gradcheck's rule, NaN-aware: NaN in both agrees, equal infinities agree.

    Computed in row chunks so big matrices need no full-size temporaries.
    """
    out = torch.empty(a.shape, dtype=torch.bool)
    step = max(1, _CHUNK_ELEMENTS // max(1, a.shape[-1])) if a.dim() == 2 else a.shape[0] or 1
    for r0 in range(0, a.shape[0], step):
        x, y = a[r0:r0 + step].double(), n[r0:r0 + step].double()
        ok = (x - y).abs() <= atol + rtol * y.abs()
        out[r0:r0 + step] = ok | (x == y) | (x.isnan() & y.isnan())
    return out


def estimate_bytes(rows: int, cols: int, keep: bool = True) -> int:
    """Bytes of float64 matrices the comparison allocates (numerical always, analytic if kept)."""
    return rows * cols * 8 * (2 if keep else 1)


def compare(function: type, args: list, *, eps: float = EPS, atol: float = ATOL,
            rtol: float = RTOL, memory_cap: int = MEMORY_CAP, keep: bool = True,
            progress: Callable[[Progress], None] | None = None,
            should_stop: Callable[[], bool] | None = None) -> Report:
    """Compare ``function``'s backward with finite differences at ``args`` (forward's arguments).

    Raises FunctionError (the Function raised or broke the autograd contract), SpecError /
    TooLargeError (bad tolerances, matrices beyond ``memory_cap``) or Cancelled.
    """
    return _Comparison(function, list(args), eps, atol, rtol, memory_cap, keep, progress,
                       should_stop).run()


class _Comparison:
    def __init__(self, function, args, eps, atol, rtol, memory_cap, keep, progress, should_stop):
        for name, value in (("eps", eps), ("atol", atol), ("rtol", rtol)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise SpecError(f"{name} must be a finite number >= 0, not {value!r}.", field=name)
        if eps <= 0:
            raise SpecError("eps must be greater than 0.", field="eps")
        self.function = function
        self.args = args
        self.eps, self.atol, self.rtol = float(eps), float(atol), float(rtol)
        self.memory_cap, self.keep = memory_cap, keep
        self.progress_cb, self.should_stop = progress, should_stop
        self.notes: list[str] = []
        self.params = [p.name for p in forward_parameters(function)]
        if len(args) != len(self.params):
            raise SpecError(f"{function.__name__}.forward takes {len(self.params)} arguments "
                            f"({', '.join(self.params)}), {len(args)} were given.")
        self.new_style = is_new_style(function)
        self._last_progress = 0.0
        self.started = time.perf_counter()

    # ---- setup -------------------------------------------------------------------------
    def run(self) -> Report:
        self._probe()
        self._allocate()
        # the outputs and inputs, before any entry: a display can lay the matrix out first
        self._emit(0.0, "numerical", force=True, columns_done=0, rows_done=0)
        self._numerical()
        self._analytic_and_compare()
        return self._report()

    def _check_stop(self):
        if self.should_stop is not None and self.should_stop():
            raise Cancelled("Jacobian comparison cancelled.")

    def _probe(self):
        """One real apply + raw backward: finds outputs, inputs and contract errors early."""
        fn, args = self.function, self.args
        self.in_pos = [i for i, a in enumerate(args)
                       if isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel()]
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and not a.is_floating_point():
                self.notes.append(f"input {self.params[i]} ({str(a.dtype)[6:]}) is not "
                                  "floating point: not differentiated.")
            elif isinstance(a, torch.Tensor) and not a.numel():
                self.notes.append(f"input {self.params[i]} is empty: not differentiated.")
        if not self.in_pos:
            raise SpecError(f"{fn.__name__} has no floating-point tensor input to differentiate; "
                            "give at least one parameter a shape.")
        self.leaves = {i: args[i].detach().clone().requires_grad_() for i in self.in_pos}
        call = [self.leaves[i].clone() if i in self.leaves else a for i, a in enumerate(args)]
        raw = run_user(fn, "forward", lambda: fn.apply(*call))
        outs = normalize_outputs(fn, raw)
        self.out_all = outs
        self.out_pos = []
        for k, out in enumerate(outs):
            oname = self._out_name(k, len(outs))
            if not out.is_floating_point():
                self.notes.append(f"{oname} ({str(out.dtype)[6:]}) is not differentiable: skipped.")
            elif not out.requires_grad:
                self.notes.append(f"{oname} is marked non-differentiable (or does not depend on "
                                  "any input): skipped.")
            elif not out.numel():
                self.notes.append(f"{oname} is empty: skipped.")
            else:
                self.out_pos.append(k)
            if out.is_floating_point() and not torch.isfinite(out).all():
                self.notes.append(f"{oname} contains NaN or Inf at this point.")
        if not self.out_pos:
            raise FunctionError(f"{fn.__name__} has no differentiable output to check.",
                                phase="forward")
        self.outputs, off = [], 0
        for k in self.out_pos:
            axis = Axis(self._out_name(k, len(outs)), k, tuple(outs[k].shape), off)
            self.outputs.append(axis)
            off += axis.size
        self.inputs, off = [], 0
        for i in self.in_pos:
            axis = Axis(self.params[i], i, tuple(args[i].shape), off)
            self.inputs.append(axis)
            off += axis.size
        self.rows, self.cols = self.shape = (sum(a.size for a in self.outputs),
                                             sum(a.size for a in self.inputs))
        node = outs[self.out_pos[0]].grad_fn
        self.node = node if getattr(node, "_forward_cls", None) is fn else None
        if self.node is not None:
            gen = torch.Generator().manual_seed(0)
            grads = [torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device)
                     if k in self.out_pos else self._zero_grad(o) for k, o in enumerate(outs)]
            raw_grads = call_backward(fn, self.node, grads)
            self.notes.extend(check_gradients(fn, self.params, args, raw_grads))
        else:
            self.notes.append(
                "a torch.library op: every row goes through the autograd engine (the op's "
                "registered backward)." if vars(fn).get("__custom_op__") is not None else
                "the output's graph node is not the Function's own, so every "
                              "row goes through the autograd engine.")

    def _zero_grad(self, out: torch.Tensor):
        materialize = getattr(self.node, "materialize_grads", True) if self.node else True
        if not out.is_floating_point():
            return None
        return torch.zeros_like(out) if materialize else None

    @staticmethod
    def _out_name(k: int, count: int) -> str:
        return "output" if count == 1 else f"output{k}"

    def _allocate(self):
        need = estimate_bytes(self.rows, self.cols, self.keep)
        if need > self.memory_cap:
            raise TooLargeError(
                f"The Jacobian is {self.rows:,} x {self.cols:,}: its matrices need "
                f"{_size(need)}, more than the {_size(self.memory_cap)} cap. "
                "Use smaller shapes, raise the cap (--memory-cap), or use the projected check "
                "(v^T J u: customgrad check --projected) for inputs this large.")
        # Zero matrices whose pages the OS maps only when written: tiles that are zero in a
        # matrix are never written, so a sparse Jacobian (most custom Functions act element by
        # element) touches a small part of its memory.
        self.num_t = _lazy_zeros((self.cols, self.rows))  # input-major: a row per input element
        self.ana = _lazy_zeros((self.rows, self.cols)) if self.keep else None
        # the tile grid: one numerical chunk is a column tile, one analytic chunk a row tile
        self.row_tiles = _tiles(self.outputs, self.cols)
        self.col_tiles = _tiles(self.inputs, self.rows)
        self.num_nonzero = torch.zeros((len(self.col_tiles), len(self.row_tiles)),
                                       dtype=torch.bool)
        self._scratch_bufs: list[torch.Tensor] = []
        self._peak = 0.0

    def _emit(self, fraction: float, phase: str, force: bool = False,
              columns_done: int | None = None, rows_done: int | None = None):
        if self.progress_cb is None:
            return
        now = time.perf_counter()
        if force or now - self._last_progress >= _PROGRESS_SECONDS:
            self._last_progress = now
            self.progress_cb(Progress(fraction, phase, self.ana, self.num_t.T, self.outputs,
                                      self.inputs, columns_done, rows_done, self._peak))

    def _note_peak(self, rows: torch.Tensor, scale: float = 1.0):
        """Track the largest finite |entry| for progress (a display's colour scale)."""
        if self.progress_cb is not None:
            self._peak = max(self._peak, finite_absmax(rows) * scale)

    # ---- numerical ---------------------------------------------------------------------
    def _numerical(self):
        fn, args = self.function, self.args
        dtype = args[self.in_pos[0]].dtype
        self.num_dtype = dtype
        base = [a.detach().clone() if i in self.leaves else a for i, a in enumerate(args)]
        if dtype != torch.float64:
            promoted = [a.double() if i in self.leaves else a for i, a in enumerate(base)]
            try:
                # copies: a forward that works in place must not move the base point
                outs = self._forward_plain([a.clone() if i in self.leaves else a
                                            for i, a in enumerate(promoted)])
                ok = all(outs[k].dtype == torch.float64 for k in self.out_pos)
            except Exception:
                ok = False
            if ok:
                base, self.num_dtype = promoted, torch.float64
                self.notes.append(f"numerical Jacobian evaluated in float64 at the {str(dtype)[6:]}"
                                  " point (the float32 rule).")
            else:
                self.eps = max(self.eps, FLOAT32_FLOOR["eps"])
                self.atol = max(self.atol, FLOAT32_FLOOR["atol"])
                self.rtol = max(self.rtol, FLOAT32_FLOOR["rtol"])
                self.notes.append(f"{fn.__name__} does not accept float64, so the numerical "
                                  f"Jacobian uses {str(dtype)[6:]} with eps={self.eps:g}, "
                                  f"atol={self.atol:g}, rtol={self.rtol:g}.")
        direct = self._choose_forward(base)
        clone_each = self._mutates(direct, base)
        self._vmap_forward = direct == self._forward_direct
        scale = 0.5 / self.eps
        scan = _TileScan(self.row_tiles)
        diffs = torch.empty((max(c1 - c0 for c0, c1 in self.col_tiles), self.rows),
                            dtype=torch.float64)
        for t, (c0, c1) in enumerate(self.col_tiles):
            axis = _axis_at(self.inputs, c0)
            k0, k1 = c0 - axis.offset, c1 - axis.offset
            rows = diffs[:c1 - c0]  # f(x + eps) - f(x - eps), one row per input element
            if not self._numerical_batched(base, axis, k0, k1, rows, clone_each):
                self._numerical_loop(base, axis, k0, k1, rows, direct, clone_each)
            nonzero = scan(rows)
            self._note_peak(rows, scale)
            self.num_nonzero[t] = nonzero
            for r0, r1 in _runs(nonzero, self.row_tiles):
                torch.mul(rows[:, r0:r1], scale, out=self.num_t[c0:c1, r0:r1])
            self._check_stop()
            self._emit(0.5 * c1 / self.cols, "numerical", columns_done=c1)
        self._emit(0.5, "numerical", force=True, columns_done=self.cols)

    def _numerical_loop(self, base, axis, k0, k1, rows, forward, clone_each):
        """Columns k0:k1 of input ``axis`` one element at a time (unscaled differences)."""
        eps, flat = self.eps, base[axis.position].view(-1)
        host = flat.numpy() if flat.device.type == "cpu" else None
        for k in range(k0, k1):
            self._check_stop()
            orig = float(host[k]) if host is not None else float(flat[k])
            for sign, value in ((1, orig + eps), (-1, orig - eps)):
                if host is not None:
                    host[k] = value
                else:
                    flat[k] = value
                call = [a.clone() if j in self.leaves else a for j, a in enumerate(base)] \
                    if clone_each else base
                outs = forward(call)
                if sign > 0:
                    plus = self._check_outputs(outs)
                else:
                    self._write_column(rows[k - k0], plus, self._check_outputs(outs))
            if host is not None:
                host[k] = orig
            else:
                flat[k] = orig

    def _numerical_batched(self, base, axis, k0, k1, rows, clone_each) -> bool:
        """Columns k0:k1 with one vmapped forward per sign; False when vmap cannot do it.

        The first batch is checked against the element-by-element loop.
        """
        if not self._vmap_forward:
            return False
        fn, pos, size = self.function, axis.position, k1 - k0
        x = base[pos]
        flat = x.reshape(-1)
        if getattr(self, "_grid_for", None) != (pos, size):
            self._grid = flat.unsqueeze(0).expand(size, -1).clone()
            self._grid_for = (pos, size)
        grid = self._grid
        ar = torch.arange(size, device=x.device)
        vals = flat[k0:k1]

        def forward(*call):
            raw = fn.forward(*call) if self.new_style else fn.forward(FakeCtx(), *call)
            return tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
        vmapped = torch.vmap(forward, in_dims=tuple(0 if j == pos else None
                                                    for j in range(len(base))))
        try:
            with torch.no_grad():
                for sign, value in ((1, vals + self.eps), (-1, vals - self.eps)):
                    grid[ar, ar + k0] = value
                    call = list(base)
                    call[pos] = (grid.clone() if clone_each else grid).view(size, *axis.shape)
                    outs = vmapped(*call)
                    for o in self.outputs:
                        out = outs[o.position].reshape(size, -1)
                        if out.shape[1] != o.size:
                            raise ValueError("batched output shape differs")
                        out = out.to("cpu", torch.float64)
                        dest = rows[:, o.offset:o.offset + o.size]
                        # one output batch alive at a time: fewer big temporaries, which the
                        # allocator would otherwise hand back to the OS and fault in again
                        if sign > 0:
                            dest.copy_(out)
                        else:
                            dest.sub_(out)
                    del outs, out
        except Exception:
            self._vmap_forward = False
            return False
        finally:
            grid[ar, ar + k0] = vals
        if self._vmap_forward is True:
            self._vmap_forward = "verified"
            probe = sorted({k0, k1 - 1})
            check = torch.empty((len(probe), self.rows), dtype=torch.float64)
            for t, k in enumerate(probe):
                self._numerical_loop(base, axis, k, k + 1, check[t:t + 1],
                                     self._forward_direct, clone_each)
            tol = 64 * torch.finfo(x.dtype).eps
            scale = max(1.0, float(check.abs().max().nan_to_num(0, 0, 0)))
            if not torch.allclose(rows[[k - k0 for k in probe]], check, rtol=tol,
                                  atol=tol * scale, equal_nan=True):
                self._vmap_forward = False
                return False
        return True

    def _check_outputs(self, outs):
        """The differentiable outputs, checked to keep the shape they had at the base point."""
        picked = []
        for axis in self.outputs:
            out = outs[axis.position] if axis.position < len(outs) else None
            if not isinstance(out, torch.Tensor) or out.shape != axis.shape:
                raise FunctionError(
                    f"{self.function.__name__}.forward returned {_describe(out)} for "
                    f"{axis.name} at a perturbed point, but {format_shape(axis.shape)} at the "
                    "base point; its output shape must not depend on input values.",
                    phase="forward")
            picked.append(out if out.device.type == "cpu" else out.cpu())
        return picked

    def _write_column(self, dest: torch.Tensor, plus, minus):
        """dest = f(x + eps) - f(x - eps), outputs concatenated (scaled later)."""
        if len(plus) == 1:
            torch.sub(plus[0].reshape(-1), minus[0].reshape(-1), out=dest)
            return
        for axis, p, m in zip(self.outputs, plus, minus):
            torch.sub(p.reshape(-1), m.reshape(-1), out=dest[axis.offset:axis.offset + axis.size])

    def _forward_plain(self, call):
        fn = self.function
        with torch.no_grad():
            raw = run_user(fn, "forward", lambda: fn.apply(*call))
        return normalize_outputs(fn, raw)

    def _forward_direct(self, call):
        fn = self.function
        with torch.no_grad():
            raw = fn.forward(*call) if self.new_style else fn.forward(FakeCtx(), *call)
        return raw if isinstance(raw, (tuple, list)) else (raw,)

    def _choose_forward(self, base):
        """Direct forward when it reproduces apply at the base point, else apply."""
        reference = self._forward_plain([a.clone() if i in self.leaves else a
                                         for i, a in enumerate(base)])
        try:
            direct = self._forward_direct([a.clone() if i in self.leaves else a
                                           for i, a in enumerate(base)])
            same = len(direct) == len(reference) and all(
                isinstance(d, torch.Tensor) and d.shape == r.shape
                and torch.equal(d.nan_to_num(), r.nan_to_num())
                for k, (d, r) in enumerate(zip(direct, reference)) if k in self.out_pos)
        except Exception:
            same = False
        if same:
            return self._forward_direct

        return self._forward_plain

    def _mutates(self, forward, base) -> bool:
        """True when forward changes its inputs in place (mark_dirty) or returns a view of one:
        then each call gets copies."""
        versions = [base[i]._version for i in self.in_pos]
        snapshot = [base[i].clone() for i in self.in_pos]
        outs = forward(base)
        modified = [base[i]._version for i in self.in_pos] != versions
        if modified:
            # restore the base point before anything else reads it
            for i, saved in zip(self.in_pos, snapshot):
                base[i].copy_(saved)
        storages = {base[i].untyped_storage().data_ptr() for i in self.in_pos}
        if any(isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
               for o in outs):
            self.notes.append("forward returns a view of its input: finite differences use "
                              "copies.")
            return True
        if not modified:
            return False
        self.notes.append("forward modifies its input in place: finite differences use copies.")
        return True

    # ---- analytic + comparison -----------------------------------------------------------
    def _analytic_and_compare(self):
        self.blocks = [Block(o, i) for o in self.outputs for i in self.inputs]
        self._grad_bufs = None
        self.analytic_path = "direct" if self.node is not None and self._direct_matches() \
            else "engine"
        if self.analytic_path == "engine" and self.node is not None:
            self.notes.append("calling backward directly disagreed with the autograd engine; "
                              "every row went through the engine.")
        self._vmap_backward = self.analytic_path == "direct"
        scan = _TileScan(self.col_tiles)
        self._blocks_at = {(b.output.position, b.input.position): b for b in self.blocks}
        buf = torch.empty((max(r1 - r0 for r0, r1 in self.row_tiles), self.cols),
                          dtype=torch.float64)
        for t, (r0, r1) in enumerate(self.row_tiles):
            axis = _axis_at(self.outputs, r0)
            rows = self._analytic_batched(axis, r0, r1, buf[:r1 - r0])
            if rows is None:
                rows = buf[:r1 - r0]
                for r in range(r0, r1):
                    self._check_stop()
                    self._analytic_row(r, rows[r - r0])
            nonzero = scan(rows)
            self._note_peak(rows)
            if self.ana is not None:
                for c0, c1 in _runs(nonzero, self.col_tiles):
                    self.ana[r0:r1, c0:c1].copy_(rows[:, c0:c1])
            # tiles that are zero in both matrices agree exactly: only the others are compared
            self._compare_rows(axis, r0, r1, rows, nonzero | self.num_nonzero[:, t])
            self._check_stop()
            self._emit(0.5 + 0.5 * r1 / self.rows, "analytic", rows_done=r1)
        for block in self.blocks:
            if block.worst_score < 0:  # every entry agreed exactly
                block.worst_score, block.worst = 0.0, (block.output.offset, block.input.offset)
        self._emit(1.0, "done", force=True, columns_done=self.cols, rows_done=self.rows)

    def _analytic_batched(self, axis: Axis, r0: int, r1: int,
                          rows: torch.Tensor) -> torch.Tensor | None:
        """Rows r0:r1 (all in output ``axis``) with one vmapped backward, in ``rows`` or a
        tensor of the same shape; None when vmap cannot do it.

        The first batch is checked against row-by-row direct calls.
        """
        if not self._vmap_backward:
            return None
        fn, node, size = self.function, self.node, r1 - r0
        grads = list(self._onehots(r0))
        self._reset_onehots()
        if getattr(self, "_onehot_for", None) != (axis.position, size):
            # kept between batches: one big temporary less for the allocator to churn
            self._onehot = torch.zeros((size, axis.size), dtype=grads[axis.position].dtype,
                                       device=grads[axis.position].device)
            self._onehot_for = (axis.position, size)
        onehot = self._onehot
        ar = torch.arange(size, device=onehot.device)
        cols = ar + (r0 - axis.offset)
        onehot[ar, cols] = 1
        version = onehot._version
        grads[axis.position] = onehot.view(size, *axis.shape)
        inputs = self.inputs

        def backward(*g):
            raw = fn.backward(node, *g)
            raw = raw if isinstance(raw, tuple) else (raw,)
            out = []
            for a in inputs:
                grad = raw[a.position] if a.position < len(raw) else None
                if grad is None:
                    grad = torch.zeros(a.shape, dtype=torch.float64, device=onehot.device)
                elif grad.shape != a.shape:
                    grad = grad.sum_to_size(a.shape)
                out.append(grad)
            return tuple(out)
        vmapped = torch.vmap(backward, in_dims=tuple(0 if k == axis.position else None
                                                     for k in range(len(grads))))
        try:
            with torch.no_grad():
                got = vmapped(*grads)
            if onehot._version != version:
                # backward wrote into its grad_output: the row-by-row path names the error
                raise ValueError("grad_output modified")
            first = got[0]
            if (len(inputs) == 1 and first.dim() == len(inputs[0].shape) + 1
                    and first.dtype == torch.float64 and first.device.type == "cpu"
                    and first.is_contiguous()
                    and first.untyped_storage().data_ptr()
                    != onehot.untyped_storage().data_ptr()):
                rows = first.view(size, -1)  # a fresh tensor already laid out as rows: no copy
            else:
                for a, g in zip(inputs, got):
                    if g.dim() != len(a.shape) + 1:
                        g = g.expand(size, *a.shape)
                    rows[:, a.offset:a.offset + a.size].copy_(g.reshape(size, -1))
        except Exception:
            self._vmap_backward = False
            return None
        finally:
            if onehot._version != version:
                self._onehot_for = None  # start from zeros again
            else:
                onehot[ar, cols] = 0
        if self._vmap_backward is True:
            self._vmap_backward = "verified"
            check = torch.empty((1, self.cols), dtype=torch.float64)
            for r in sorted({r0, r1 - 1}):
                self._row_direct(r, check[0])
                tol = 64 * torch.finfo(onehot.dtype).eps
                scale = max(1.0, float(check.abs().max().nan_to_num(0, 0, 0)))
                if not torch.allclose(rows[r - r0:r - r0 + 1], check, rtol=tol,
                                      atol=tol * scale, equal_nan=True):
                    self._vmap_backward = False
                    return None
        return rows

    def _onehots(self, r: int):
        """Gradients for every output: a one-hot at row ``r``, zeros (or None) elsewhere.

        Buffers are reused between rows; :meth:`_reset_onehots` clears the one entry set.
        """
        if self._grad_bufs is None:
            self._grad_bufs = [
                torch.zeros_like(o, memory_format=torch.contiguous_format)
                if k in self.out_pos else self._zero_grad(o) for k, o in enumerate(self.out_all)]
        for axis in self.outputs:
            if axis.offset <= r < axis.offset + axis.size:
                buf = self._grad_bufs[axis.position]
                buf.view(-1)[r - axis.offset] = 1
                self._set = (buf, r - axis.offset, buf._version)
                self._set_position = axis.position
        return self._grad_bufs

    def _reset_onehots(self):
        buf, k, version = self._set
        if buf._version != version:
            self._grad_bufs = None
            raise grad_mutation_error(self.function, self._set_position, len(self.out_all))
        buf.view(-1)[k] = 0

    def _analytic_row(self, r: int, dest: torch.Tensor):
        if self.analytic_path == "direct":
            self._row_direct(r, dest)
        else:
            self._row_engine(r, dest)

    def _row_direct(self, r: int, dest: torch.Tensor):
        grads = self._onehots(r)
        try:
            with torch.no_grad():
                raw = self.function.backward(self.node, *grads)
            if not isinstance(raw, tuple):
                raw = (raw,)
            for axis in self.inputs:
                g = raw[axis.position] if axis.position < len(raw) else None
                seg = dest[axis.offset:axis.offset + axis.size]
                if g is None:
                    seg.zero_()
                    continue
                if g.shape != axis.shape:
                    g = g.sum_to_size(axis.shape)
                seg.copy_(g.reshape(-1))
        finally:
            self._reset_onehots()

    def _row_engine(self, r: int, dest: torch.Tensor):
        grads = [g.clone() if isinstance(g, torch.Tensor) else g for g in self._onehots(r)]
        self._reset_onehots()
        fn, args = self.function, self.args
        call = [self.leaves[i].clone() if i in self.leaves else a for i, a in enumerate(args)]
        outs = normalize_outputs(fn, run_user(fn, "forward", lambda: fn.apply(*call)))
        pairs = [(outs[k], grads[k]) for k in self.out_pos]
        leaves = [self.leaves[a.position] for a in self.inputs]

        def vector_jacobian_product():
            # the gradient of sum(o * g) reaches each output as exactly g; unlike grad_outputs,
            # this path does not import sympy (a second, the first time) inside torch
            total = sum((o * g).sum() for o, g in pairs)
            return torch.autograd.grad(total, leaves, allow_unused=True)
        got = run_user(fn, "backward", vector_jacobian_product)
        for axis, g in zip(self.inputs, got):
            seg = dest[axis.offset:axis.offset + axis.size]
            if g is None:
                seg.zero_()
            else:
                seg.copy_(g.reshape(-1))

    def _direct_matches(self) -> bool:
        """Check a few rows of the direct path against the autograd engine."""
        probe = sorted({0, self.rows // 2, self.rows - 1})
        a = torch.empty((1, self.cols), dtype=torch.float64)
        b = torch.empty((1, self.cols), dtype=torch.float64)
        for r in probe:
            try:
                self._row_direct(r, a[0])
            except FunctionError:
                raise
            except Exception:
                return False
            self._row_engine(r, b[0])
            if not torch.allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True):
                return False
        return True

    def _compare_rows(self, axis: Axis, r0: int, r1: int, rows: torch.Tensor,
                      needed: torch.Tensor):
        """Compare analytic rows r0:r1 (of output ``axis``) with the numerical matrix on the
        column tiles flagged in ``needed``, in cache-sized pieces that stay inside one block."""
        width = max(1, _TILE_ELEMENTS // (r1 - r0))
        for lo, hi in _runs(needed, self.col_tiles):
            for inp in self.inputs:
                a, b = max(lo, inp.offset), min(hi, inp.offset + inp.size)
                if a >= b:
                    continue
                block = self._blocks_at[(axis.position, inp.position)]
                for c0 in range(a, b, width):
                    c1 = min(b, c0 + width)
                    # input-major like the numerical matrix: every operand walks memory in
                    # order (a transposing copy in cache beats strided arithmetic)
                    ana_t = self._scratch(3, (c1 - c0, r1 - r0))
                    ana_t.copy_(rows[:, c0:c1].T)
                    self._compare_piece(block, r0, c0, ana_t, self.num_t[c0:c1, r0:r1])

    def _scratch(self, k: int, shape: torch.Size) -> torch.Tensor:
        """Reusable contiguous buffer ``k`` of ``shape`` for the comparison's temporaries."""
        count = math.prod(shape)
        while len(self._scratch_bufs) <= k:
            self._scratch_bufs.append(torch.empty(0, dtype=torch.float64))
        if self._scratch_bufs[k].numel() < count:
            self._scratch_bufs[k] = torch.empty(max(count, _TILE_ELEMENTS), dtype=torch.float64)
        return self._scratch_bufs[k][:count].view(shape)

    def _compare_piece(self, block: Block, row0: int, col0: int, a: torch.Tensor,
                       n: torch.Tensor):
        """Fold one piece (columns x rows of the Jacobian: input-major) into ``block``'s
        statistics."""
        atol, rtol = self.atol, self.rtol
        diff = torch.sub(a, n, out=self._scratch(0, a.shape)).abs_()
        if float(diff.max()) == 0.0:
            return  # identical: every error and score is 0
        absn = torch.abs(n, out=self._scratch(1, a.shape))
        score = torch.mul(absn, rtol, out=self._scratch(2, a.shape)).add_(atol)
        torch.div(diff, score, out=score)
        best, flat = score.view(-1).max(0)
        if not math.isfinite(float(best)):
            both = (a.isnan() & n.isnan()) | (a == n)
            score[both] = 0.0
            diff[both] = 0.0
            score[score.isnan()] = math.inf
            diff[diff.isnan()] = math.inf
            # a NaN |n| would make the relative error NaN, which max() below would drop
            absn[absn.isnan()] = 1.0
            best, flat = score.view(-1).max(0)
        best, flat = float(best), int(flat)
        if best > 1:
            block.mismatches += int((score > 1).sum())
        block.max_abs_error = max(block.max_abs_error, float(diff.max()))
        rel = diff.div_(absn.clamp_min_(max(atol, 1e-300))).nan_to_num_(math.inf, math.inf)
        block.max_rel_error = max(block.max_rel_error, float(rel.max()))
        if best > block.worst_score:
            width = score.shape[1]
            block.worst_score = best
            block.worst = (row0 + flat % width, col0 + flat // width)

    def _report(self) -> Report:
        worst_block = max(self.blocks, key=lambda b: b.worst_score)
        r, c = worst_block.worst
        o, i = worst_block.output, worst_block.input
        a_val = float(self.ana[r, c]) if self.ana is not None else self._entry_analytic(r, c)
        worst = Entry(o.position, i.position, o.name, i.name, o.index(r - o.offset),
                      i.index(c - i.offset), r, c, a_val, float(self.num_t[c, r]))
        return Report(
            passed=all(b.passed for b in self.blocks), outputs=self.outputs, inputs=self.inputs,
            blocks=self.blocks, worst=worst, eps=self.eps, atol=self.atol, rtol=self.rtol,
            numerical_dtype=self.num_dtype, analytic_path=self.analytic_path, notes=self.notes,
            analytic=self.ana, numerical=self.num_t.T if self.keep else None,
            seconds=time.perf_counter() - self.started)

    def _entry_analytic(self, r: int, c: int) -> float:
        row = torch.empty(self.cols, dtype=torch.float64)
        self._analytic_row(r, row)
        return float(row[c])


def _size(nbytes: float) -> str:
    """Bytes in words: '512 MiB', '1.5 GiB', '96 KiB'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} bytes"


def _batch(count: int, width: int) -> int:
    """How many rows/columns of ``width`` entries one batch holds (about 1 MiB of float64)."""
    return max(1, min(count, _CHUNK_ELEMENTS // max(1, width)))


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {format_shape(tuple(value.shape))}"
    return f"a {type(value).__name__}"


def _lazy_zeros(shape: tuple[int, int]) -> torch.Tensor:
    """A float64 zero matrix in fresh anonymous memory: the OS maps (and zeroes) a page only
    when it is first written, so parts never written cost neither time nor memory.

    Small pages on purpose: with huge pages (numpy's zeros asks for them) one written entry
    costs 2 MiB of zeroing, and the first allocation can stall on memory compaction.
    """
    count = math.prod(shape)
    if count * 8 < _LAZY_BYTES:
        return torch.zeros(shape, dtype=torch.float64)
    memory = mmap.mmap(-1, count * 8)
    if hasattr(memory, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    # the tensor keeps ``memory`` alive; the mapping goes when the last view of it does
    return torch.frombuffer(memory, dtype=torch.float64, count=count).view(shape)


def _tiles(axes: list[Axis], width: int) -> list[tuple[int, int]]:
    """Consecutive [start, end) ranges covering ``axes`` (none crosses an axis), each about
    ``_CHUNK_ELEMENTS`` entries of a matrix ``width`` wide."""
    tiles = []
    for axis in axes:
        step = _batch(axis.size, width)
        end = axis.offset + axis.size
        tiles += [(k, min(end, k + step)) for k in range(axis.offset, end, step)]
    return tiles


class _TileScan:
    """Which tiles (column ranges) of each chunk hold a non-zero entry.

    A tile flagged by mistake only costs time, so after a chunk with every tile non-zero (a
    dense Jacobian) the next chunks are taken as dense too, and scanned again every 8th.
    """

    def __init__(self, tiles: list[tuple[int, int]]):
        self.starts = torch.tensor([t[0] for t in tiles], dtype=torch.int64)
        self.ends = torch.tensor([t[1] for t in tiles], dtype=torch.int64)
        self.dense = torch.ones(len(tiles), dtype=torch.bool)
        self.skip = 0

    def __call__(self, matrix: torch.Tensor) -> torch.Tensor:
        if self.skip:
            self.skip -= 1
            return self.dense
        flags = _nonzero_tiles(matrix, self.starts, self.ends)
        if bool(flags.all()):
            self.skip = 7
        return flags


def _nonzero_tiles(matrix: torch.Tensor, starts: torch.Tensor,
                   ends: torch.Tensor) -> torch.Tensor:
    """For each column range [starts[t], ends[t]): does ``matrix`` hold a non-zero (or NaN)
    entry there?"""
    # no full-size temporary (abs() would be one); NaN propagates, and NaN != 0
    nonzero = matrix.amax(0).ne_(0).logical_or_(matrix.amin(0).ne_(0))
    counts = torch.zeros(nonzero.numel() + 1, dtype=torch.int64)
    torch.cumsum(nonzero, 0, out=counts[1:])
    return counts[ends] > counts[starts]


def _runs(flags: torch.Tensor, tiles: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The [start, end) ranges covered by consecutive flagged tiles."""
    runs: list[tuple[int, int]] = []
    for flagged, (start, end) in zip(flags.tolist(), tiles):
        if not flagged:
            continue
        if runs and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
    return runs


def _axis_at(axes: list[Axis], index: int) -> Axis:
    """The axis holding matrix row/column ``index``."""
    for axis in axes:
        if axis.offset <= index < axis.offset + axis.size:
            return axis
    raise IndexError(index)


def finite_absmax(matrix: torch.Tensor) -> float:
    """Largest finite |entry| (0 when there is none), in passes of bounded memory."""
    flat = matrix.reshape(-1) if matrix.is_contiguous() else None
    if flat is None:
        matrix = matrix.T if matrix.dim() == 2 and matrix.T.is_contiguous() else matrix
        flat = matrix.reshape(-1)
    best = 0.0
    for start in range(0, flat.numel(), _CHUNK_ELEMENTS):
        piece = flat[start:start + _CHUNK_ELEMENTS]
        top, low = float(piece.max()), float(piece.min())
        if math.isfinite(top) and math.isfinite(low):
            best = max(best, top, -low)
        else:
            piece = piece.abs().nan_to_num_(0.0, 0.0, 0.0)
            best = max(best, float(piece.max()))
    return best


def pool_signed(matrix: torch.Tensor, step: int) -> torch.Tensor:
    """``matrix`` pooled ``step`` x ``step`` (ragged edges included): each cell keeps the
    entry of largest magnitude, with its sign; a cell holding a NaN is NaN."""
    if step <= 1:
        return matrix.to(torch.float64)
    rows = -(-matrix.shape[0] // step)
    out = torch.empty((rows, -(-matrix.shape[1] // step)), dtype=torch.float64)
    band = max(1, _CHUNK_ELEMENTS // max(1, matrix.shape[1] * step)) * step
    pool = torch.nn.functional.max_pool2d
    for r0 in range(0, matrix.shape[0], band):
        piece = matrix[r0:r0 + band].to(torch.float64)[None, None]
        high = pool(piece, step, ceil_mode=True)[0, 0]
        low = pool(-piece, step, ceil_mode=True)[0, 0]
        out[r0 // step:r0 // step + high.shape[0]] = torch.where(high >= low, high, -low)
    return out
