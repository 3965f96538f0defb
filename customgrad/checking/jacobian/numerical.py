"""The numerical pass: the Jacobian by central finite differences, a column per input element.

Column ``k`` is ``(f(x + eps e_k) - f(x - eps e_k)) / (2 eps)``. A column tile at a time is
filled with one vmapped ``forward`` per sign when vmap can batch the Function (checked against
the element-by-element loop on its first batch); else, where ``forward`` called on a stack of
points (a new leading dimension) gives the stack of its results (numpy inside, ``.detach()``:
one probe, :mod:`customgrad.function.batching`), with one such call per sign; else by the loop.
Only the tiles that hold a non-zero entry are written into the (lazily mapped) matrix. A
float32 point is promoted to float64 when the Function accepts it (torch's gradcheck rule),
else the tolerances are floored.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from customgrad.checking.jacobian import matrices
from customgrad.checking.jacobian.exact import reference_pass
from customgrad.checking.jacobian.limits import Tolerances
from customgrad.checking.jacobian.probe import Probe, chooses_direct, mutates, same_values
from customgrad.checking.jacobian.report import REFERENCE, Axis, Method
from customgrad.checking.jacobian.tiles import TileScan, axis_at, runs
from customgrad.checking.jacobian.workspace import Pacer, Workspace
from customgrad.errors import Cancelled, FunctionError
from customgrad.function import batching
from customgrad.function.contract import FakeCtx
from customgrad.function.dtypes import DOUBLE, flat_real
from customgrad.function.inputs import format_shape

#: perturbed points the stacking probe compares with single calls (either sign of a few
#: columns of the first tile: its first, its last and random ones between)
STACK_PROBE_COLUMNS = 4
#: a stacked result may differ from the single one by this many roundings of the point's
#: dtype (relative to the result's largest entry): a few, so that the columns it gives
#: differ from the loop's by far less than any tolerance (numpy's elementwise calls: none)
STACK_ROUNDINGS = 4
#: a stacked call takes about this many input entries (a stack that stays in the cache)
STACK_ENTRIES = 1 << 17


def numerical_pass(probe: Probe, space: Workspace, pacer: Pacer, tol: Tolerances,
                   notes: list[str]) -> tuple[torch.dtype, Tolerances, Method]:
    """Fill ``space.num_t`` and ``space.num_nonzero``; return the dtype the differences were
    taken in, the tolerances (floored when that is float32) and the method: the verified
    reference (customgrad.checking.jacobian.exact) where it holds, else finite differences."""
    base, dtype, tol = _base_point(probe, tol, notes)
    direct = chooses_direct(probe, base)
    forward = probe.forward_direct if direct else probe.forward_plain
    clone_each = mutates(probe, forward, base, notes)
    method = reference_pass(probe, space, pacer, tol.eps, tol.atol, base, forward,
                            direct, notes)
    if method.name == REFERENCE:
        pacer.emit(0.5, "numerical", force=True, columns_done=space.cols)
        return dtype, tol, method
    tensors = [i for i, a in enumerate(base) if isinstance(a, torch.Tensor)]
    kept = None if clone_each else [base[i].clone() for i in tensors]
    # vmap batches real tensors only: a complex axis goes element by element
    complex_axes = any(a.parts == 2 for a in (*space.inputs, *space.outputs))
    FiniteDifferences(probe, space, pacer, tol.eps, base, forward, clone_each,
                      vmap=direct and not complex_axes, stack=not complex_axes).run()
    if kept is not None and not all(same_values(base[i], k) for i, k in zip(tensors, kept)):
        # forward wrote into an input at some points only: every call again, on copies
        for i, k in zip(tensors, kept):
            base[i].copy_(k)
        for t, (c0, c1) in enumerate(space.col_tiles):  # the tiles written, cleared
            for r0, r1 in runs(space.num_nonzero[t], space.row_tiles):
                space.num_t[c0:c1, r0:r1].zero_()
        notes.append("forward modifies its input in place at some points: finite "
                     "differences use copies.")
        FiniteDifferences(probe, space, pacer, tol.eps, base, forward, True, vmap=False,
                          stack=False).run()
    return dtype, tol, method


def _base_point(probe: Probe, tol: Tolerances,
                notes: list[str]) -> tuple[list, torch.dtype, Tolerances]:
    """Detached copies of the arguments, in float64 (complex128) when the Function takes it
    (the float32 rule); else as given, with the tolerances floored."""
    fn, args, leaves = probe.function, probe.args, probe.leaves
    dtype = args[probe.in_pos[0]].dtype
    # contiguous: columns are the inputs' entries in row-major order (a transposed input
    # kept its strides through clone, and the loop's flat view of it failed); a tensor read
    # through a closure is the caller's own (contiguous), written through ``.data`` as
    # gradcheck writes it: no version bump, no complaint about a leaf requiring grad
    base = [a.data if i in probe.read_through else
            a.detach().clone(memory_format=torch.contiguous_format) if i in leaves else a
            for i, a in enumerate(args)]
    probe.kept_ids.update(id(base[i]) for i in probe.read_through)
    if dtype in DOUBLE.values():
        return base, dtype, tol
    lent = [probe.params[i] for i in probe.read_through if i in leaves]
    if lent:  # the closure reads the caller's tensor, which cannot be promoted in place
        tol = tol.floored()
        notes.append(f"{' and '.join(lent)} {'is' if len(lent) == 1 else 'are'} read "
                     f"through a closure, so the numerical Jacobian uses {str(dtype)[6:]} "
                     f"(the caller's tensor) with eps={tol.eps:g}, atol={tol.atol:g}, "
                     f"rtol={tol.rtol:g}.")
        return base, dtype, tol
    promoted = [a.to(DOUBLE[a.is_complex()]) if i in leaves else a for i, a in enumerate(base)]
    try:
        # copies: a forward that works in place must not move the base point
        outs = probe.forward_plain(probe.copies(promoted))
        ok = all(outs[k].dtype in DOUBLE.values() for k in probe.out_pos)
    except Exception:
        ok = False
    if ok:
        double = DOUBLE[dtype.is_complex]
        notes.append(f"numerical Jacobian evaluated in {str(double)[6:]} at the "
                     f"{str(dtype)[6:]} point (the float32 rule).")
        return promoted, double, tol
    tol = tol.floored()
    notes.append(f"{fn.__name__} does not accept float64, so the numerical "
                 f"Jacobian uses {str(dtype)[6:]} with eps={tol.eps:g}, "
                 f"atol={tol.atol:g}, rtol={tol.rtol:g}.")
    return base, dtype, tol


class FiniteDifferences:
    """Fills the numerical matrix column tile by column tile around ``base``.

    ``vmap`` is True until the first batched tile is checked ("verified" after), False once
    vmap failed or disagreed. Then, where ``stack`` allows it, one probe per input settles
    whether its columns take stacks of points (:attr:`stacks`), else the loop.
    """

    def __init__(self, probe: Probe, space: Workspace, pacer: Pacer, eps: float, base: list,
                 forward: Callable, clone_each: bool, vmap: bool, stack: bool = False):
        self.probe, self.space, self.pacer = probe, space, pacer
        self.eps, self.base, self.forward, self.clone_each = eps, base, forward, clone_each
        self.vmap: bool | str = vmap
        self.stack = stack
        #: by input position: whether its stacks give the stack of results (one probe each)
        self.stacks: dict[int, bool] = {}
        self._grid: torch.Tensor | None = None  # a batch of points, one per row
        self._grid_for: tuple[int, int] | None = None  # (input position, batch size)

    def run(self) -> None:
        space, pacer, scale = self.space, self.pacer, 0.5 / self.eps
        scan = TileScan(space.row_tiles)
        diffs = torch.empty((max(c1 - c0 for c0, c1 in space.col_tiles), space.rows),
                            dtype=torch.float64)
        for t, (c0, c1) in enumerate(space.col_tiles):
            axis = axis_at(space.inputs, c0)
            k0, k1 = c0 - axis.offset, c1 - axis.offset
            rows = diffs[:c1 - c0]  # f(x + eps) - f(x - eps), one row per input element
            # (a batch or a stack of points is not what a closure reads: its input's columns
            # go element by element, each written into the caller's tensor)
            if axis.position in self.probe.read_through or (
                    not self.batched(axis, k0, k1, rows)
                    and not self.stacked(axis, k0, k1, rows)):
                self.loop(axis, k0, k1, rows, self.forward)
            nonzero = scan(rows)
            pacer.note_peak(rows, scale)
            space.num_nonzero[t] = nonzero
            for r0, r1 in runs(nonzero, space.row_tiles):
                torch.mul(rows[:, r0:r1], scale, out=space.num_t[c0:c1, r0:r1])
            pacer.check_stop()
            pacer.emit(0.5 * c1 / space.cols, "numerical", columns_done=c1)
        pacer.emit(0.5, "numerical", force=True, columns_done=space.cols)

    def loop(self, axis: Axis, k0: int, k1: int, rows: torch.Tensor, forward: Callable):
        """Columns k0:k1 of input ``axis`` one element at a time (unscaled differences)."""
        eps, base, point = self.eps, self.base, self.base[axis.position]
        # a complex input's real and imaginary parts are perturbed one at a time
        flat = (torch.view_as_real(point) if point.is_complex() else point).view(-1)
        host = flat.numpy() if flat.device.type == "cpu" else None
        for k in range(k0, k1):
            self.pacer.check_stop()
            orig = float(host[k]) if host is not None else float(flat[k])
            for sign, value in ((1, orig + eps), (-1, orig - eps)):
                if host is not None:
                    host[k] = value
                else:
                    flat[k] = value
                outs = forward(self.probe.copies(base) if self.clone_each else base)
                if sign > 0:
                    plus = self.check_outputs(outs)
                else:
                    self.write_column(rows[k - k0], plus, self.check_outputs(outs))
            if host is not None:
                host[k] = orig
            else:
                flat[k] = orig

    def batched(self, axis: Axis, k0: int, k1: int, rows: torch.Tensor) -> bool:
        """Columns k0:k1 with one vmapped forward per sign; False when vmap cannot do it.

        The first batch is checked against the element-by-element loop.
        """
        if not self.vmap:
            return False
        pos, size = axis.position, k1 - k0
        grid = self._batch_grid(pos, size)
        ar = torch.arange(size, device=grid.device)
        vals = self.base[pos].reshape(-1)[k0:k1]
        vmapped = self._vmapped_forward(pos)
        try:
            with torch.no_grad():
                for sign, value in ((1, vals + self.eps), (-1, vals - self.eps)):
                    grid[ar, ar + k0] = value
                    self._batch_difference(vmapped, axis, grid, sign, rows)
        except Exception:
            self.vmap = False
            return False
        finally:
            grid[ar, ar + k0] = vals
        if self.vmap is True:
            self.vmap = "verified"
            if not self._matches_loop(axis, k0, k1, rows):
                self.vmap = False
                return False
        return True

    def stacked(self, axis: Axis, k0: int, k1: int, rows: torch.Tensor) -> bool:
        """Columns k0:k1 by calls of ``forward`` on stacks of their points (a few points a
        call, one call per sign); False where the probe (on this input's first tile) found
        that forward does not map a stack of it to the stack of its results. A later stack
        that raises leaves the rest to the loop."""
        pos = axis.position
        if self.stack and pos not in self.stacks:
            self.stacks[pos] = self._stack_probe(axis, k0, k1)
        if not self.stack or not self.stacks[pos]:
            return False
        # a few points a call, not the whole tile: a stack that stays in the cache is
        # faster a point than a long one (docs/engine.md)
        step = max(2, STACK_ENTRIES // max(1, axis.size))
        grid = self._batch_grid(pos, min(step, k1 - k0))
        many = self._stacked_forward(pos)
        for c0 in range(k0, k1, step):
            c1 = min(k1, c0 + step)
            points = grid[:c1 - c0]
            ar = torch.arange(c1 - c0, device=grid.device)
            vals = self.base[pos].reshape(-1)[c0:c1]
            try:
                sides = []
                for value in (vals + self.eps, vals - self.eps):
                    points[ar, ar + c0] = value
                    call = list(self.base)
                    # forward may write into its input: then each call takes a copy
                    stack = points.clone() if self.clone_each else points
                    call[pos] = stack.view(c1 - c0, *axis.shape)
                    sides.append(many(*call))
                dest = rows[c0 - k0:c1 - k0]
                for o in self.space.outputs:  # f(x + eps) - f(x - eps), in one pass
                    plus, minus = (side[o.position].reshape(c1 - c0, -1) for side in sides)
                    torch.sub(plus.to("cpu", torch.float64), minus.to("cpu", torch.float64),
                              out=dest[:, o.offset:o.offset + o.size])
            except Cancelled:
                raise
            except Exception:  # a later stack that raises: the loop from here on
                self.stacks[pos] = False
                self.loop(axis, c0, k1, rows[c0 - k0:], self.forward)
                return True
            finally:
                points[ar, ar + c0] = vals
        return True

    def _stack_probe(self, axis: Axis, k0: int, k1: int) -> bool:
        """Whether ``forward`` on a stack of perturbed points of this tile gives the stack of
        their single results, to :data:`STACK_ROUNDINGS` roundings: one stacked call, and a
        single call per point (:func:`customgrad.function.batching.probe`)."""
        if k1 - k0 < 2 * STACK_PROBE_COLUMNS:  # too few columns to gain from it
            return False
        point = self.base[axis.position]
        inner = torch.randperm(k1 - k0 - 2, generator=torch.Generator().manual_seed(0))
        picks = [k0, k1 - 1, *(k0 + 1 + int(k) for k in inner[:STACK_PROBE_COLUMNS - 2])]
        points = point.reshape(-1).unsqueeze(0).repeat(2 * len(picks), 1)
        for j, k in enumerate(picks):
            points[2 * j, k] += self.eps
            points[2 * j + 1, k] -= self.eps
        singles = []
        for row in points:
            call = self.probe.copies(self.base)
            call[axis.position] = row.view(axis.shape).clone()
            singles.append(torch.cat([out.reshape(-1) for out in
                                      self.check_outputs(self.forward(call))]))

        def many(stack: torch.Tensor) -> torch.Tensor:
            call = list(self.base)
            call[axis.position] = stack.view(len(stack), *axis.shape)
            outs = self._stacked_forward(axis.position)(*call)
            return torch.cat([outs[o.position].reshape(len(stack), -1)
                              for o in self.space.outputs], dim=1)
        rtol = STACK_ROUNDINGS * torch.finfo(point.dtype).eps
        return batching.probe(many, points, singles, rtol)

    def _stacked_forward(self, pos: int) -> Callable:
        """``forward`` on arguments whose argument ``pos`` is a stack of points (outputs as a
        tuple); it raises unless each output is a stack of outputs shaped as at the base
        point."""
        def forward(*call):
            size = len(call[pos])
            if self.clone_each:  # the stack is a fresh copy already
                call = (*self.probe.copies(list(call[:pos])), call[pos],
                        *self.probe.copies(list(call[pos + 1:])))
            outs = self.forward(list(call))
            for o in self.space.outputs:
                out = outs[o.position] if o.position < len(outs) else None
                if not isinstance(out, torch.Tensor) or out.shape != (size, *o.shape):
                    raise ValueError("a stack of points does not give a stack of outputs")
            return tuple(outs)
        return forward

    def _batch_grid(self, pos: int, size: int) -> torch.Tensor:
        """``size`` copies of input ``pos`` (flat), kept between batches of that size."""
        if self._grid is None or self._grid_for != (pos, size):
            self._grid = self.base[pos].reshape(-1).unsqueeze(0).expand(size, -1).clone()
            self._grid_for = (pos, size)
        return self._grid

    def _vmapped_forward(self, pos: int) -> Callable:
        """``forward`` batched over argument ``pos`` (outputs as a tuple)."""
        fn, new_style = self.probe.function, self.probe.new_style

        def forward(*call):
            raw = fn.forward(*call) if new_style else fn.forward(FakeCtx(), *call)
            return tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
        return batching.quiet_vmap(forward, tuple(0 if j == pos else None
                                                  for j in range(len(self.base))))

    def _batch_difference(self, vmapped: Callable, axis: Axis, grid: torch.Tensor, sign: int,
                          rows: torch.Tensor) -> None:
        """Add ``sign`` times the batched outputs at the points of ``grid`` into ``rows``
        (the plus side first: it is copied, the minus side subtracted)."""
        size = grid.shape[0]
        call = list(self.base)
        call[axis.position] = (grid.clone() if self.clone_each else grid).view(size, *axis.shape)
        outs = vmapped(*call)
        for o in self.space.outputs:
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

    def _matches_loop(self, axis: Axis, k0: int, k1: int, rows: torch.Tensor) -> bool:
        """The batch's first and last column agree with the loop's (to rounding)."""
        probe = sorted({k0, k1 - 1})
        check = torch.empty((len(probe), self.space.rows), dtype=torch.float64)
        for t, k in enumerate(probe):
            self.loop(axis, k, k + 1, check[t:t + 1], self.probe.forward_direct)
        return matrices.same_to_rounding(rows[[k - k0 for k in probe]], check,
                                         self.base[axis.position].dtype)

    def check_outputs(self, outs) -> list[torch.Tensor]:
        """The differentiable outputs, checked to keep the shape they had at the base point."""
        picked = []
        for axis in self.space.outputs:
            out = outs[axis.position] if axis.position < len(outs) else None
            if not isinstance(out, torch.Tensor) or out.shape != axis.shape:
                raise FunctionError(
                    f"{self.probe.function.__name__}.forward returned {_describe(out)} for "
                    f"{axis.name} at a perturbed point, but {format_shape(axis.shape)} at the "
                    "base point; its output shape must not depend on input values.",
                    phase="forward")
            picked.append(out if out.device.type == "cpu" else out.cpu())
        return picked

    def write_column(self, dest: torch.Tensor, plus: list, minus: list) -> None:
        """dest = f(x + eps) - f(x - eps), outputs concatenated (scaled later)."""
        if len(plus) == 1:
            torch.sub(flat_real(plus[0]), flat_real(minus[0]), out=dest)
            return
        for axis, p, m in zip(self.space.outputs, plus, minus):
            torch.sub(flat_real(p), flat_real(m), out=dest[axis.offset:axis.offset + axis.size])


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {format_shape(tuple(value.shape))}"
    return f"a {type(value).__name__}"
