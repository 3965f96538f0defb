"""What the numerical and the analytic pass share while they run: the matrices being filled
with the tile grid over them (:class:`Workspace`), and the progress events and cancellation
(:class:`Pacer`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from customgrad.checking.jacobian import limits, matrices, tiles
from customgrad.checking.jacobian.entries import Entries, EntryPairs
from customgrad.checking.jacobian.report import Axis, Progress
from customgrad.errors import Cancelled, TooLargeError


def estimate_bytes(rows: int, cols: int, keep_matrices: bool = True) -> int:
    """Bytes of float64 matrices the comparison allocates (numerical always, analytic if kept)."""
    return rows * cols * 8 * (2 if keep_matrices else 1)


@dataclass
class Workspace:
    """The two matrices and the tile grid over them.

    ``num_t`` is the numerical Jacobian input-major (a row per input element: the numerical
    pass writes whole rows of it); ``ana`` the analytic one, None when not kept. One numerical
    batch is a column tile, one analytic batch a row tile; ``num_nonzero[c, r]`` says whether
    tile (row tile r, column tile c) of the numerical matrix holds a non-zero entry.
    ``reference`` is the verified reference's non-zero entries (rows, columns, values), set
    where the numerical matrix is that reference (customgrad.checking.jacobian.exact): the
    analytic pass may then take the user's backward by compressed products.

    Where no one watches the matrices fill (no progress listener, matrices of the
    comparison's own) the entries of the compressed method are written only when the
    report's matrices are read: :meth:`write` keeps them in ``deferred`` (``defer``),
    :meth:`flush` writes them; ``entries`` (rows, columns, analytic and numerical values)
    names every entry that may be non-zero meanwhile.
    """

    outputs: list[Axis]
    inputs: list[Axis]
    rows: int
    cols: int
    num_t: torch.Tensor
    ana: torch.Tensor | None
    row_tiles: list[tuple[int, int]]
    col_tiles: list[tuple[int, int]]
    num_nonzero: torch.Tensor
    reference: Entries | None = None
    #: the reference's rows coloured as ``compressed_pass`` colours them, where the
    #: reference found them so already (its crossed groupings: the same pattern)
    row_colour: torch.Tensor | None = None
    defer: bool = False
    deferred: list[Callable[[], None]] = field(default_factory=list)
    entries: EntryPairs | None = None

    def write(self, fill: Callable[[], None]) -> None:
        """Run ``fill`` (it writes entries into the matrices) now, or where ``defer``,
        when :meth:`flush` runs."""
        if self.defer:
            self.deferred.append(fill)
        else:
            fill()

    def flush(self) -> None:
        """The deferred writes, in order (each once)."""
        while self.deferred:
            self.deferred.pop(0)()

    def value_at(self, r: int, c: int) -> tuple[float, float]:
        """Entry (r, c) of the analytic and the numerical matrix, written or deferred."""
        if self.deferred and self.entries is not None:
            return self.entries.value_at(r, c)
        assert self.ana is not None
        return float(self.ana[r, c]), float(self.num_t[c, r])


def allocate(outputs: list[Axis], inputs: list[Axis], memory_cap: int, keep_matrices: bool,
             zeros: matrices.Allocator = matrices.lazy_zeros) -> Workspace:
    """Zero matrices for ``outputs`` x ``inputs``, each made by ``zeros(shape)``;
    TooLargeError beyond ``memory_cap``."""
    rows, cols = sum(a.size for a in outputs), sum(a.size for a in inputs)
    need = estimate_bytes(rows, cols, keep_matrices)
    if need > memory_cap:
        raise TooLargeError(
            f"The Jacobian is {rows:,} x {cols:,}: its matrices need "
            f"{_size(need)}, more than the {_size(memory_cap)} cap. "
            "Use smaller shapes or differentiate fewer inputs.")
    # Zero matrices whose pages the OS maps only when written: tiles that are zero in a
    # matrix are never written, so a sparse Jacobian (most custom Functions act element by
    # element) touches a small part of its memory.
    num_t = zeros((cols, rows))
    ana = zeros((rows, cols)) if keep_matrices else None
    row_tiles, col_tiles = tiles.tiles(outputs, cols), tiles.tiles(inputs, rows)
    num_nonzero = torch.zeros((len(col_tiles), len(row_tiles)), dtype=torch.bool)
    return Workspace(outputs, inputs, rows, cols, num_t, ana, row_tiles, col_tiles, num_nonzero)


def _size(nbytes: float) -> str:
    """Bytes in words: '512 MiB', '1.5 GiB', '96 KiB'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} bytes"


class Pacer:
    """Progress events (at most one per ``limits.PROGRESS_SECONDS`` unless forced), the
    largest finite |entry| so far (a display's colour scale), and cancellation."""

    def __init__(self, space: Workspace, progress: Callable[[Progress], None] | None,
                 should_stop: Callable[[], bool] | None):
        self.space = space
        self.progress = progress
        self.should_stop = should_stop
        self.last = 0.0
        self.peak = 0.0

    def later(self) -> Pacer:
        """This pacer for a write :meth:`Workspace.write` may defer; where it does, one that
        never cancels (the write runs when the report's matrices are read)."""
        return Pacer(self.space, self.progress, None) if self.space.defer else self

    def check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise Cancelled("Jacobian comparison cancelled.")

    def emit(self, fraction: float, phase: str, force: bool = False,
             columns_done: int | None = None, rows_done: int | None = None) -> None:
        if self.progress is None:
            return
        now = time.perf_counter()
        if force or now - self.last >= limits.PROGRESS_SECONDS:
            self.last = now
            s = self.space
            self.progress(Progress(fraction, phase, s.ana, s.num_t.T, s.outputs, s.inputs,
                                   columns_done, rows_done, self.peak))

    def note_peak(self, rows: torch.Tensor, scale: float = 1.0) -> None:
        """Track the largest finite |entry| for progress (only when someone listens)."""
        if self.progress is not None:
            self.peak = max(self.peak, matrices.finite_absmax(rows) * scale)
