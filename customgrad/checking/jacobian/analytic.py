"""The analytic pass: the Jacobian from the Function's own ``backward``, a row per output
element (the vector-Jacobian product with a one-hot), each row tile compared as it comes;
where the numerical matrix is the verified reference, first by compressed products over row
colours (:func:`compressed_pass`), which either prove every row or leave the rows to the pass.

Rows are computed the fastest way that gives the engine's answer: ``backward`` called directly
on the graph node ("direct", checked on a few rows against the autograd engine first), batched
over a row tile with vmap (checked on its first tile against direct calls), else one row at a
time; a Function whose node is not its own, or that disagrees, goes through the engine for
every row. One-hot buffers are reused between rows, and a backward that writes into its
``grad_output`` is caught by the buffer's version counter.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from customgrad.checking.findings import SubCheck
from customgrad.checking.jacobian import limits, matrices
from customgrad.checking.jacobian.agreement import Tally
from customgrad.checking.jacobian.entries import ByColour, Entries, EntryPairs
from customgrad.checking.jacobian.probe import Probe
from customgrad.checking.jacobian.report import Axis
from customgrad.checking.jacobian.tiles import TileScan, axis_at, by_label, by_tile, runs
from customgrad.checking.jacobian.workspace import Pacer, Workspace
from customgrad.errors import FunctionError
from customgrad.function.batching import quiet_vmap
from customgrad.function.contract import grad_mutation_error, normalize_outputs, run_user
from customgrad.function.dtypes import flat_real


def analytic_pass(space: Workspace, pacer: Pacer, backward: Backward, tally: Tally) -> None:
    """Fill ``space.ana`` (when kept) row tile by row tile, folding each tile into ``tally``;
    by compressed products where the verified reference allows it and they prove the rows."""
    if space.reference is not None and compressed_pass(space, pacer, backward, tally):
        return
    space.flush()  # the reference's entries, where they were put off: the rows read them
    scan = TileScan(space.col_tiles)
    buf = torch.empty((max(r1 - r0 for r0, r1 in space.row_tiles), space.cols),
                      dtype=torch.float64)
    for t, (r0, r1) in enumerate(space.row_tiles):
        axis = axis_at(space.outputs, r0)
        rows = backward.batched(axis, r0, r1, buf[:r1 - r0])
        if rows is None:
            rows = buf[:r1 - r0]
            for r in range(r0, r1):
                pacer.check_stop()
                backward.row(r, rows[r - r0])
        nonzero = scan(rows)
        pacer.note_peak(rows)
        if space.ana is not None:
            for c0, c1 in runs(nonzero, space.col_tiles):
                space.ana[r0:r1, c0:c1].copy_(rows[:, c0:c1])
        # tiles that are zero in both matrices agree exactly: only the others are compared
        tally.compare_rows(axis, r0, r1, rows, nonzero | space.num_nonzero[:, t])
        pacer.check_stop()
        pacer.emit(0.5 + 0.5 * r1 / space.rows, "analytic", rows_done=r1)
    tally.finish()
    pacer.emit(1.0, "done", force=True, columns_done=space.cols, rows_done=space.rows)


#: a compressed product proves a column when its residual is within this many roundings
#: of its size (relative) ...
ROUNDING = 1e-13
#: ... and within this share of atol: a wrong entry |e| > atol outside the reference's
#: pattern hides only where two random weights lie within this share of each other
HIDDEN_SHARE = 1e-4


def compressed_pass(space: Workspace, pacer: Pacer, backward: Backward, tally: Tally) -> bool:
    """The analytic Jacobian by compressed products, where they prove it; False (nothing
    written or folded) where they do not, and the caller computes every row.

    The reference's rows are coloured so that rows of a colour share no column
    (``colouring.group_columns`` on the transposed pattern): in a colour, each column has at
    most one row of the reference reaching it, its *owner*. For each colour, the user's
    backward takes three seeds over the colour's rows: ones, random weights s in [1, 2), and
    random signed weights t. Where the user's rows reach only their owners' columns, each
    column of the products is its owner's entry u times 1, s_owner and t_owner. So every
    column must read p_s = s_owner p_1 and p_t = t_owner p_1 (to rounding: at most
    ``ROUNDING`` of its size and ``HIDDEN_SHARE`` of atol), and exactly zero where no row of
    the colour owns it. A row of the colour reaching another's column (a backward putting
    gradient where the true Jacobian has none) adds (s_r - s_owner) e to the first residual
    and (t_r - t_owner) e to the second: it passes unseen only where both random weights lie
    within ``HIDDEN_SHARE`` of its owner's (for |e| just above atol; less likely the larger
    |e|), or where several such entries cancel in both at once. A backward that is not linear
    in grad_output breaks the same relations. The entries then are p_1 at the owners (the
    rows one-hot gradients would give, checked on three rows called one at a time), zero
    elsewhere, in both matrices: only the reference's entries are compared, by the same rule.
    """
    if backward.path != "direct" or any(a.parts == 2 for a in (*space.inputs,
                                                               *space.outputs)):
        return False
    if not backward.probe.materializes and len(space.outputs) > 1:
        return False  # a seed over several outputs is not what one output's row gets
    found = space.reference
    assert found is not None
    n_rows = space.rows
    if space.row_colour is not None:
        colour = space.row_colour
    else:
        from customgrad.checking.jacobian.colouring import group_columns

        ref_rows, ref_cols, _ = found.triples()
        colour = group_columns(ref_cols, ref_rows, n_rows) if ref_rows.numel() else \
            torch.zeros(n_rows, dtype=torch.int64)
    colours = int(colour.max()) + 1
    if 3 * colours >= n_rows:
        return False  # no fewer backward calls than rows
    gen = torch.Generator().manual_seed(2)
    weights = torch.rand((2, n_rows), generator=gen, dtype=torch.float64).add_(1.0)
    weights[1] *= torch.randint(0, 2, (n_rows,), generator=gen).mul_(2).sub_(1)
    if isinstance(found, ByColour) and found.colour is colour:
        proved = _by_colour(space, pacer, backward, tally, found, weights)
    else:
        proved = _by_entries(space, pacer, backward, tally, found, colour, weights)
    if not proved:
        return False
    tally.finish()
    pacer.emit(1.0, "done", force=True, columns_done=space.cols, rows_done=space.rows)
    backward.compressed = colours
    return True


def _batches(space: Workspace, pacer: Pacer, backward: Backward, colour: torch.Tensor,
             colours: int, weights: torch.Tensor):
    """The colours a batch at a time: (k0, k1, the user's products of their seeds, the seeds
    as backward received them); None, and no more, where vmap cannot batch backward."""
    row_order, row_bounds = by_label(colour, colours)
    step = max(1, limits.CHUNK_ELEMENTS // max(space.rows, space.cols) // 3)
    for k0 in range(0, colours, step):
        k1 = min(colours, k0 + step)
        members = row_order[row_bounds[k0]:row_bounds[k1]]
        got = backward.products(_seeds(colour, members, k0, k1, weights))
        pacer.check_stop()
        if got is None:
            yield None
            return
        yield (k0, k1, *got)


def _seeds(colour: torch.Tensor, members: torch.Tensor, k0: int, k1: int,
           weights: torch.Tensor) -> torch.Tensor:
    """Colours k0:k1's three seeds each (ones, the weights, the signed weights over the
    colour's rows ``members``): 3 (k1 - k0) x rows."""
    seeds = torch.zeros((3 * (k1 - k0), colour.numel()), dtype=torch.float64)
    at = 3 * (colour[members] - k0)
    seeds[at, members] = 1.0
    seeds[at + 1, members] = weights[0, members]
    seeds[at + 2, members] = weights[1, members]
    return seeds


def _by_entries(space: Workspace, pacer: Pacer, backward: Backward, tally: Tally,
                found: Entries, colour: torch.Tensor, weights: torch.Tensor) -> bool:
    """:func:`compressed_pass` over the reference's entries as triples."""
    ref_rows, ref_cols, ref_values = found.triples()
    colours = int(colour.max()) + 1
    # the entries and the rows grouped by colour once: a batch takes a slice of each (a mask
    # over a million entries for each batch cost more than its products)
    labels = colour[ref_rows]
    if bool((labels[1:] >= labels[:-1]).all()):  # (found colour by colour: the crossings')
        bounds = [0, *torch.cumsum(torch.bincount(labels, minlength=colours), 0).tolist()]
        e_rows, e_cols, e_ref = ref_rows, ref_cols, ref_values
    else:
        order, bounds = by_label(labels, colours)
        e_rows, e_cols, e_ref = ref_rows[order], ref_cols[order], ref_values[order]
    e_ana = torch.empty_like(e_ref)
    for batch in _batches(space, pacer, backward, colour, colours, weights):
        if batch is None:
            return False
        k0, k1, products, sent = batch
        sel = slice(bounds[k0], bounds[k1])
        r, c = e_rows[sel], e_cols[sel]
        k = colour[r] - k0
        ones, p_s, p_t = products[0::3], products[1::3], products[2::3]
        one, at_s, at_t = ones[k, c], p_s[k, c], p_t[k, c]
        # a non-zero (or NaN) where no row of the colour owns the column: more non-zeros in
        # the products than at their owners' places
        if any(int(whole.count_nonzero()) != int(owned.count_nonzero())
               for whole, owned in ((ones, one), (p_s, at_s), (p_t, at_t))):
            return False
        if not _proportional(((at_s, sent[3 * k + 1, r]), (at_t, sent[3 * k + 2, r])), one,
                             HIDDEN_SHARE * tally.atol):
            return False
        e_ana[sel] = one
    ref_rows, ref_cols, ref_values = e_rows, e_cols, e_ref
    if not _spot_check(space, backward, ref_rows, ref_cols, e_ana):
        return False
    later = pacer.later()
    space.write(lambda: _write(space, later, ref_rows, ref_cols, e_ana))
    space.entries = EntryPairs(Entries(ref_rows, ref_cols, ref_values), e_ana, ref_values)
    tally.compare_entries(ref_rows, ref_cols, e_ana, ref_values)
    return True


def _by_colour(space: Workspace, pacer: Pacer, backward: Backward, tally: Tally,
               found: ByColour, weights: torch.Tensor) -> bool:
    """:func:`compressed_pass` over the reference held as products over the same row
    colours (``ByColour``): the user's products are laid out as the reference's, so each
    relation is one dense operation over colours x columns, the same rule at every entry
    (a place no row owns, or whose reference is 0, must be 0 in all three products: there
    the relations hold trivially), and the entries are taken as triples only where the
    matrices differ or are read."""
    colour = found.colour
    colours = found.values.shape[0]
    n_rows, n_cols = space.rows, space.cols
    ana = torch.empty_like(found.values)
    for batch in _batches(space, pacer, backward, colour, colours, weights):
        if batch is None:
            return False
        k0, k1, products, sent = batch
        ones, p_s, p_t = products[0::3], products[1::3], products[2::3]
        # a non-zero (or NaN) in any of the three where the reference has no entry (no
        # owner, or the owner's entry is 0)
        outside = found.values[k0:k1].eq(0).unsqueeze(1)
        if bool(products.view(k1 - k0, 3, n_cols).ne(0).logical_and_(outside).any()):
            return False
        owner = found.owner(k0, k1).clamp_min(0).long()  # (unowned: 0 there, any row)
        if not _proportional(((p_s, sent[1::3].gather(1, owner)),
                              (p_t, sent[2::3].gather(1, owner))), ones,
                             HIDDEN_SHARE * tally.atol):
            return False
        ana[k0:k1] = ones
    # the spot check's three rows' entries, row by row
    checked = sorted({0, n_rows // 2, n_rows - 1})
    picked = [found.row(r, ana) for r in checked]
    if not _spot_check(space, backward,
                       torch.cat([torch.full_like(c, r) for r, (c, _) in zip(checked, picked)]),
                       torch.cat([c for c, _ in picked]), torch.cat([v for _, v in picked])):
        return False
    pairs = EntryPairs(found, ana, found.values)
    later = pacer.later()
    space.write(lambda: _write(space, later, *pairs.analytic()))
    space.entries = pairs
    if not torch.equal(ana, found.values):  # (identical, no NaN: nothing to fold)
        tally.compare_entries(*pairs.both())
    return True


def _proportional(pairs, one: torch.Tensor, cap: float) -> bool:
    """Each ``p`` of ``pairs`` (p, w) is ``w * one`` to rounding: within ``ROUNDING`` of
    their size and ``cap`` (NaN is not)."""
    for p, w_owner in pairs:
        scaled = w_owner * one
        if not bool(torch.sub(p, scaled).any()):
            continue  # exactly proportional (NaN and inf - inf are not 0): within any limit
        limit = (p.abs() + scaled.abs()).mul_(ROUNDING).clamp_max_(cap)
        if not bool(((p - scaled).abs() <= limit).all()):
            return False  # (NaN too)
    return True


def _spot_check(space: Workspace, backward: Backward, rows: torch.Tensor, cols: torch.Tensor,
                values: torch.Tensor) -> bool:
    """Three rows called one at a time equal the compressed rows (to rounding)."""
    got = torch.empty((1, space.cols), dtype=torch.float64)
    want = torch.zeros((1, space.cols), dtype=torch.float64)
    checked = sorted({0, space.rows // 2, space.rows - 1})
    # their entries picked in one pass over all of them
    picked = (rows == checked[0])
    for r in checked[1:]:
        picked |= rows == r
    at = picked.nonzero(as_tuple=True)[0]
    rows, cols, values = rows[at], cols[at], values[at]
    for r in checked:
        backward.row(r, got[0])
        want.zero_()
        at = rows == r
        want[0, cols[at]] = values[at]
        if not matrices.same_to_rounding(got, want, torch.float64):
            return False
    return True


def _write(space: Workspace, pacer: Pacer, rows: torch.Tensor, cols: torch.Tensor,
           values: torch.Tensor) -> None:
    """The entries into the (lazily mapped) analytic matrix when kept, row tile by row tile
    (a display sees it fill as with rows)."""
    pacer.note_peak(values.unsqueeze(0))
    bounds = [0] * (len(space.row_tiles) + 1)
    if space.ana is not None:
        order, bounds = by_tile(rows, space.row_tiles)
        rows, cols, values = rows[order], cols[order], values[order]
    for t, (_, r1) in enumerate(space.row_tiles):
        start, end = bounds[t], bounds[t + 1]
        if space.ana is not None and end > start:
            space.ana.index_put_((rows[start:end], cols[start:end]), values[start:end])
        pacer.check_stop()
        pacer.emit(0.5 + 0.5 * r1 / space.rows, "analytic", rows_done=r1)


#: :meth:`Backward.direct_matches` keeps its rows for later where they are this short
KEEP_ROWS_UP_TO = 1 << 16


class Backward:
    """Rows of the analytic Jacobian.

    ``path`` is "direct" or "engine" (chosen on construction, with a note when direct calls
    disagreed). ``vmap`` is True until the first batched tile is checked ("verified" after),
    False once vmap failed or disagreed.
    """

    def __init__(self, probe: Probe, rows: int, cols: int, notes: list[str]):
        self.probe = probe
        self.rows, self.cols = rows, cols  # the matrix's shape
        self._grad_bufs: list | None = None  # the one-hot gradients, one per output
        self._set: tuple | None = None  # (buffer, flat index, its version) of the one set
        self._set_position = 0  # that buffer's output position
        self._onehot: torch.Tensor | None = None  # a batch of one-hot rows
        self._onehot_for: tuple[int, int] | None = None  # (output position, batch size)
        #: the rows :meth:`direct_matches` called backward for, kept (where small): the
        #: compressed products' spot check and the row loop ask for the same rows again
        self._kept: dict[int, torch.Tensor] = {}
        self.compressed = 0  # colours, where the rows came by compressed products
        # (backward wrote into what forward saved: a second direct call on the node raises)
        direct = probe.node is not None and "saved_tensors" not in probe.findings
        self.path = "direct" if direct and self.direct_matches() else "engine"
        if self.path == "engine" and direct:
            notes.append("calling backward directly disagreed with the autograd engine; "
                         "every row went through the engine.")
        # vmap batches real tensors only: a complex axis goes row by row
        self.vmap: bool | str = self.path == "direct" and not any(
            a.parts == 2 for a in (*probe.inputs, *probe.outputs))

    def row(self, r: int, dest: torch.Tensor) -> None:
        """Row ``r`` into ``dest``, by the chosen path."""
        if self.path != "direct":
            self.row_engine(r, dest)
        elif r in self._kept:  # (the same call on the same graph: the probe checked that
            dest.copy_(self._kept[r])  # backward gives the same bits each time)
        else:
            self.row_direct(r, dest)

    def entry(self, r: int, c: int) -> float:
        """One entry (the matrix was not kept): its whole row, computed again."""
        row = torch.empty(self.cols, dtype=torch.float64)
        self.row(r, row)
        return float(row[c])

    def onehots(self, r: int) -> list:
        """Gradients for every output: a one-hot at row ``r``, zeros (or None) elsewhere.

        A complex output's row is its element's real part (a grad_output of 1) or imaginary
        part (1j), as gradcheck splits it. Buffers are reused between rows;
        :meth:`reset_onehots` clears the one entry set.
        """
        probe = self.probe
        if self._grad_bufs is None:
            self._grad_bufs = [
                torch.zeros_like(o, memory_format=torch.contiguous_format)
                if k in probe.out_pos else probe.zero_grad(o)
                for k, o in enumerate(probe.out_all)]
        for axis in probe.outputs:
            if axis.offset <= r < axis.offset + axis.size:
                buf = self._grad_bufs[axis.position]
                k, part = divmod(r - axis.offset, axis.parts)
                buf.view(-1)[k] = 1j if part else 1
                self._set = (buf, k, buf._version)
                self._set_position = axis.position
        if probe.materializes:
            return self._grad_bufs
        # the engine's None for the outputs the row does not seed, as gradcheck seeds them
        return [b if k == self._set_position else None for k, b in enumerate(self._grad_bufs)]

    def reset_onehots(self) -> None:
        assert self._set is not None  # (onehots set one)
        buf, k, version = self._set
        if buf._version != version:
            self._grad_bufs = None  # (written by backward: fresh ones for the next row)
            if self.probe.writes_grads:
                return
            raise grad_mutation_error(self.probe.function, self._set_position,
                                      len(self.probe.out_all))
        buf.view(-1)[k] = 0

    def row_direct(self, r: int, dest: torch.Tensor, node: object = None) -> None:
        """Row ``r`` from the node's ``backward`` called directly (``node``: another graph's
        node of the same Function, in place of the probe's)."""
        grads = self.onehots(r)
        try:
            with torch.no_grad():
                raw = self.probe.function.backward(
                    self.probe.node if node is None else node, *grads)
            if not isinstance(raw, tuple):
                raw = (raw,)
            for axis in self.probe.inputs:
                g = raw[axis.position] if axis.position < len(raw) else None
                seg = dest[axis.offset:axis.offset + axis.size]
                if g is None:
                    seg.zero_()
                    continue
                g = g.detach()  # (a gradient that requires grad: the forgotten chain rule)
                if g.shape != axis.shape:
                    g = g.sum_to_size(axis.shape)
                seg.copy_(_as_input(g, axis))
        finally:
            self.reset_onehots()

    def row_engine(self, r: int, dest: torch.Tensor) -> None:
        """Row ``r`` through ``apply`` and the autograd engine."""
        grads = [g.clone() if isinstance(g, torch.Tensor) else g for g in self.onehots(r)]
        self.reset_onehots()
        probe = self.probe
        fn = probe.function
        call = probe.leaf_call()
        outs = normalize_outputs(fn, run_user(fn, "forward", lambda: fn.apply(*call)))
        pairs = [(outs[k], grads[k]) for k in probe.out_pos if grads[k] is not None]
        leaves = [probe.leaves[a.position] for a in probe.inputs]

        def vector_jacobian_product():
            # the gradient of sum(o * g) reaches each output as exactly g (of the real part of
            # sum(o * conj(g)) for a complex one); unlike grad_outputs, this path does not
            # import sympy (a second, the first time) inside torch
            total = sum((o * g.conj()).real.sum() if o.is_complex() else (o * g).sum()
                        for o, g in pairs)
            assert isinstance(total, torch.Tensor)  # (row r is an output's: pairs has one)
            return torch.autograd.grad(total, leaves, allow_unused=True)
        got = run_user(fn, "backward", vector_jacobian_product)
        for axis, g in zip(probe.inputs, got):
            seg = dest[axis.offset:axis.offset + axis.size]
            if g is None:
                seg.zero_()
            else:
                seg.copy_(_as_input(g.detach(), axis))

    def direct_matches(self) -> bool:
        """Check a few rows of the direct path against the autograd engine."""
        rows = self.rows
        a = torch.empty((1, self.cols), dtype=torch.float64)
        b = torch.empty((1, self.cols), dtype=torch.float64)
        for r in sorted({0, rows // 2, rows - 1}):
            try:
                self.row_direct(r, a[0])
            except FunctionError:
                raise
            except Exception:
                return False
            self.row_engine(r, b[0])
            if not torch.allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True):
                self._kept.clear()  # (direct, yet on the probe's graph, as gradcheck's rows)
                return self._counted(r, a, b)
            if self.cols <= KEEP_ROWS_UP_TO and "reentrant" not in self.probe.findings:
                self._kept[r] = a[0].clone()
        return True

    def _counted(self, r: int, direct: torch.Tensor, engine: torch.Tensor) -> bool:
        """Row ``r`` from a direct call on the probe's node (``direct``, its fourth call or
        later) disagreed with the engine's (``engine``, the first call on a fresh graph).
        Where the first direct call on another fresh graph gives the engine's row, backward's
        result depends on how often it ran on its graph (a count or a buffer on ctx): the
        failed ``reentrant`` finding (beyond nondet_tol), and True: the rows stay direct
        calls on the probe's graph, as gradcheck's, all on one graph (the engine's, a fresh
        graph each, would hide it: every call a first). False: the direct call itself
        differs from the engine's, every row goes through the engine."""
        probe = self.probe
        if "reentrant" in probe.findings or "saved_tensors" in probe.findings:
            return False
        fn = probe.function
        call = probe.leaf_call()
        outs = normalize_outputs(fn, run_user(fn, "forward", lambda: fn.apply(*call)))
        fresh = torch.empty_like(direct)
        try:
            self.row_direct(r, fresh[0], node=outs[probe.out_pos[0]].grad_fn)
        except FunctionError:
            raise
        except Exception:
            return False
        if not torch.allclose(fresh, engine, rtol=1e-10, atol=1e-12, equal_nan=True):
            return False  # (the direct call itself differs from the engine's)
        gap = float((direct - fresh).abs().max())
        if gap > probe.nondet_tol:
            probe.findings["reentrant"] = SubCheck("reentrant", "failed", (
                f"{fn.__name__}.backward is not reentrant: called again and again on the same "
                f"graph with the same grad_outputs, its gradients change after a few calls (by "
                f"up to {gap:.3g}; nondet_tol {probe.nondet_tol:g}): it "
                "depends on how often it ran (a count or a buffer kept on ctx, a saved tensor "
                "written through numpy). gradcheck fails it too; so does a second backward "
                "with retain_graph=True."))
        return True

    def batched(self, axis: Axis, r0: int, r1: int,
                rows: torch.Tensor) -> torch.Tensor | None:
        """Rows r0:r1 (all in output ``axis``) with one vmapped backward, in ``rows`` or a
        tensor of the same shape; None when vmap cannot do it.

        The first batch is checked against row-by-row direct calls.
        """
        if not self.vmap:
            return None
        size = r1 - r0
        grads = list(self.onehots(r0))
        self.reset_onehots()
        onehot = self._batch_onehot(axis, size, grads[axis.position])
        ar = torch.arange(size, device=onehot.device)
        cols = ar + (r0 - axis.offset)
        onehot[ar, cols] = 1
        version = onehot._version
        grads[axis.position] = onehot.view(size, *axis.shape)
        vmapped = self._vmapped_backward({axis.position}, len(grads), onehot.device)
        try:
            with torch.no_grad():
                got = vmapped(*grads)
            if onehot._version != version:
                # backward wrote into its grad_output: the row-by-row path names the error
                raise ValueError("grad_output modified")
            rows = self._as_rows(got, onehot, rows)
        except Exception:
            self.vmap = False
            return None
        finally:
            if onehot._version != version:
                self._onehot_for = None  # start from zeros again
            else:
                onehot[ar, cols] = 0
        if self.vmap is True:
            self.vmap = "verified"
            if not self._matches_direct(r0, r1, rows, onehot.dtype):
                self.vmap = False
                return None
        return rows

    def products(self, seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``seeds`` (k x rows: a grad_output per row, over every output) times the analytic
        Jacobian, k x cols, by one vmapped backward; and the seeds as backward received them
        (in each output's dtype, as float64). None where vmap cannot batch backward."""
        if not self.vmap:
            return None
        probe, k = self.probe, seeds.shape[0]
        if self._grad_bufs is None:
            self.onehots(0)
            self.reset_onehots()
        assert self._grad_bufs is not None
        grads = list(self._grad_bufs)
        sent = torch.empty_like(seeds)
        for axis in probe.outputs:
            part = seeds[:, axis.offset:axis.offset + axis.size]
            g = part.to(grads[axis.position].dtype, copy=True)  # backward may write into it
            sent[:, axis.offset:axis.offset + axis.size] = g
            grads[axis.position] = g.reshape(k, *axis.shape)
        positions = {a.position for a in probe.outputs}
        vmapped = self._vmapped_backward(positions, len(grads), seeds.device)
        rows = torch.empty((k, self.cols), dtype=torch.float64)
        try:
            with torch.no_grad():
                got = vmapped(*grads)
            rows = self._as_rows(got, seeds, rows)
        except Exception:
            return None
        return rows, sent

    def _batch_onehot(self, axis: Axis, size: int, like: torch.Tensor) -> torch.Tensor:
        """A zero (size, axis.size) matrix for one-hot rows, kept between batches: one big
        temporary less for the allocator to churn."""
        if self._onehot is None or self._onehot_for != (axis.position, size):
            self._onehot = torch.zeros((size, axis.size), dtype=like.dtype, device=like.device)
            self._onehot_for = (axis.position, size)
        return self._onehot

    def _vmapped_backward(self, positions: set[int], count: int,
                          device: torch.device) -> Callable:
        """``backward`` batched over the gradients of the outputs at ``positions``: a
        gradient per differentiated input, summed to its shape (zeros for None)."""
        fn, node, inputs = self.probe.function, self.probe.node, self.probe.inputs

        def backward(*g):
            raw = fn.backward(node, *g)
            raw = raw if isinstance(raw, tuple) else (raw,)
            out = []
            for a in inputs:
                grad = raw[a.position] if a.position < len(raw) else None
                if grad is None:
                    grad = torch.zeros(a.shape, dtype=torch.float64, device=device)
                else:
                    grad = grad.detach()  # (one that requires grad: the forgotten chain rule)
                    if grad.shape != a.shape:
                        grad = grad.sum_to_size(a.shape)
                out.append(grad)
            return tuple(out)
        return quiet_vmap(backward, tuple(0 if k in positions else None for k in range(count)))

    def _as_rows(self, got: tuple, onehot: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """The batched gradients as rows: ``got[0]`` itself when it is a fresh float64 CPU
        tensor laid out as rows already (no copy), else copied into ``rows``."""
        inputs, size = self.probe.inputs, rows.shape[0]
        first = got[0]
        if (len(inputs) == 1 and first.dim() == len(inputs[0].shape) + 1
                and first.dtype == torch.float64 and first.device.type == "cpu"
                and first.is_contiguous()
                and first.untyped_storage().data_ptr()
                != onehot.untyped_storage().data_ptr()):
            return first.view(size, -1)
        for a, g in zip(inputs, got):
            if g.dim() != len(a.shape) + 1:
                g = g.expand(size, *a.shape)
            rows[:, a.offset:a.offset + a.size].copy_(g.reshape(size, -1))
        return rows

    def _matches_direct(self, r0: int, r1: int, rows: torch.Tensor,
                        dtype: torch.dtype) -> bool:
        """The batch's first and last row agree with direct calls (to rounding)."""
        check = torch.empty((1, self.cols), dtype=torch.float64)
        for r in sorted({r0, r1 - 1}):
            self.row(r, check[0])  # (direct: the batch is on that path)
            if not matrices.same_to_rounding(rows[r - r0:r - r0 + 1], check, dtype):
                return False
        return True


def _as_input(grad: torch.Tensor, axis: Axis) -> torch.Tensor:
    """A gradient as a row segment of input ``axis``: a complex input's real and imaginary
    parts side by side; a real input keeps the real part of a complex gradient, as the
    autograd engine does."""
    if grad.is_complex() and axis.parts == 1:
        return grad.real.reshape(-1)
    if axis.parts == 2 and not grad.is_complex():
        grad = grad.to(torch.complex128)
    return flat_real(grad)
