"""The numerical Jacobian as an exact reference, verified: autograd through ``forward``, checked
against compressed finite differences (Curtis-Powell-Reid), or the reason it cannot be.

1. Forward is called directly under autograd (float64, the custom backward never involved).
   Its Jacobian's rows come from vector-Jacobian products, compressed: a few random-weighted
   products over groups of rows show which columns each group reaches; groups that reach
   disjoint columns are seeded together (one row of each per product), so a product holds
   whole rows of several groups at once, each entry a single Jacobian entry.
2. The reference's non-zero pattern is coloured (:func:`colouring.group_columns`): columns of
   one colour share no row. Finite differences of forward along each colour's direction (two
   calls), once with random weights in [1, 2) and once with random signed ones, are compared
   with the reference times the same directions, within a tenth of the check's atol (no
   rtol: a compressed entry sums a row's entries over the colour). A wrong or
   missing reference entry changes a compressed entry (cancellation needs both seeds to
   cancel at once).
3. They agree: the reference is the numerical Jacobian (exact, every entry verified). They
   do not, or step 1 cannot run (forward leaves autograd: numpy, ``.detach()``, ``.data``,
   non-differentiable operations; complex numbers; float32 only; a dense Jacobian): nothing
   was written, and the caller runs full finite differences; :class:`Method` says why.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from customgrad.checking.jacobian import limits, matrices
from customgrad.checking.jacobian.colouring import group_columns, group_sets
from customgrad.checking.jacobian.entries import ByColour, Entries
from customgrad.checking.jacobian.probe import Probe, same_values
from customgrad.checking.jacobian.report import REFERENCE, Method
from customgrad.checking.jacobian.tiles import by_label, by_tile
from customgrad.checking.jacobian.workspace import Pacer, Workspace
from customgrad.errors import Cancelled
from customgrad.function.batching import quiet_vmap
from customgrad.function.contract import FakeCtx

#: the verification's tolerance, as a share of the check's atol: the reference may move a
#: compressed entry (and so each entry it sums) by at most this much of atol
VERIFY_SHARE = 0.1
#: a Jacobian this small takes the reference even where its rows do not compress
SMALL = 1 << 16
#: the most non-zero entries the reference keeps (a denser Jacobian takes finite differences)
MAX_ENTRIES = 1 << 22
#: a matrix product's reference is kept as its products over row colours (entries.ByColour)
#: where they hold at most this many places per entry of the crossings (a place takes 8
#: bytes, an entry's triple 24), else as the triples of its non-zero entries
DENSE_WITHIN = 2
#: from this many colours on, the verification first tries every column at once (one
#: colour: four forward calls); only where that fails does it take the colours one by one
ALL_AT_ONCE_FROM = 16


class Fallback(Exception):
    """The reference cannot be used; the message says why."""


def reference_pass(probe: Probe, space: Workspace, pacer: Pacer, eps: float, atol: float,
                   base: list, forward, direct: bool,
                   notes: list[str] | None = None) -> Method:
    """Write the verified reference into ``space`` (``num_t``, ``num_nonzero``) and say so;
    or write nothing and give the reason (the caller then takes finite differences)."""
    try:
        if any(a.position in probe.read_through for a in space.inputs):
            raise Fallback("an input is read through a closure: finite differences write "
                           "into the caller's tensor")
        _usable(space, base, direct)
        traced = Traced(probe, space, base)
        found, products = traced.entries(pacer)
        checker = Verifier(probe, space, base, forward, eps, atol * VERIFY_SHARE)
        checker.verify(pacer, found)
    except Cancelled:
        raise
    except Fallback as why:
        return Method(reason=str(why))
    # (written when read where no one watches: the analytic pass writes them first where it
    # takes every row)
    later = pacer.later()
    space.write(lambda: _write(space, later, *found.triples()))
    space.reference = found
    space.row_colour = traced.row_colour
    if checker.scribbled and notes is not None:
        notes.append("forward modifies its input in place at some points: finite "
                     "differences use copies.")
    return Method(REFERENCE, checker.colours, checker.forwards, products)


def _usable(space: Workspace, base: list, direct: bool) -> None:
    if any(a.parts == 2 for a in (*space.inputs, *space.outputs)):
        raise Fallback("complex numbers take gradcheck's full method")
    if any(base[a.position].dtype != torch.float64 for a in space.inputs):
        raise Fallback("the reference is computed in float64, which forward does not take")
    if not direct:
        raise Fallback("forward called directly differs from apply")


class Traced:
    """Forward's graph at the base point (float64), and its rows by vector-Jacobian products."""

    def __init__(self, probe: Probe, space: Workspace, base: list):
        self.space = space
        fn = probe.function
        self.leaves = [base[a.position].detach().clone().requires_grad_() for a in space.inputs]
        call = probe.copies(base)
        try:
            with torch.enable_grad():
                for axis, leaf in zip(space.inputs, self.leaves):
                    call[axis.position] = leaf.clone()  # forward may work in place on it
                prefix = () if probe.new_style else (FakeCtx(),)
                raw = fn.forward(*prefix, *call)
        except Cancelled:
            raise
        except Exception as exc:
            raise Fallback(f"forward raised under autograd ({type(exc).__name__})") from None
        outs = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
        chosen = []
        for axis in space.outputs:
            out = outs[axis.position] if axis.position < len(outs) else None
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != axis.shape:
                raise Fallback(f"forward's {axis.name} differs under autograd")
            if not out.requires_grad or out.grad_fn is None:
                raise Fallback(f"autograd cannot see how {axis.name} depends on the inputs "
                               "(numpy, .detach(), .data or no_grad in forward)")
            chosen.append(out.reshape(-1).double())
        self.flat = torch.cat(chosen) if len(chosen) > 1 else chosen[0]
        self.batched = True
        self.products = 0
        #: the rows coloured by the crossings, where those are exactly the entries found
        #: (the analytic pass colours the same pattern the same way)
        self.row_colour: torch.Tensor | None = None
        self._seed_buf: torch.Tensor | None = None

    def vjp(self, grads: torch.Tensor) -> torch.Tensor:
        """``grads`` (k x rows) times the Jacobian: k x cols, float64."""
        self.products += grads.shape[0]
        leaves, k = self.leaves, grads.shape[0]
        got = None
        if self.batched:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # vmap's fallbacks warn about speed
                    got = torch.autograd.grad(self.flat, leaves, grads, retain_graph=True,
                                              allow_unused=True, is_grads_batched=True)
            except (RuntimeError, NotImplementedError):
                self.batched = False
        if got is None:
            try:
                rows = [torch.autograd.grad(self.flat, leaves, g, retain_graph=True,
                                            allow_unused=True) for g in grads]
            except RuntimeError as exc:  # e.g. forward changed a tensor its graph needs
                raise Fallback(f"autograd cannot differentiate forward ({_first_line(exc)})") \
                    from None
            got = tuple(None if rows[0][j] is None
                        else torch.stack([r[j] for r in rows])  # type: ignore[misc]
                        for j in range(len(leaves)))
        out = torch.cat([torch.zeros(k, leaf.numel(), dtype=torch.float64) if g is None
                         else g.detach().reshape(k, -1).double()
                         for g, leaf in zip(got, leaves)], dim=1)
        if out.numel() and not all(math.isfinite(float(m)) for m in torch.aminmax(out)):
            # 0 * inf is NaN: a product's NaN need not come from the rows it seeded, so the
            # pattern (and a row's entries) cannot be read from it
            raise Fallback("autograd's derivative of forward is NaN or infinite at this point")
        return out

    def _seeds(self, k: int) -> torch.Tensor:
        """A zero k x rows matrix for seeds, one buffer kept (its user zeroes what it set):
        fresh megabyte-sized zeros are fresh pages for the kernel to map, batch after batch."""
        if self._seed_buf is None or self._seed_buf.shape[0] < k:
            self._seed_buf = torch.zeros((k, self.space.rows), dtype=torch.float64)
        return self._seed_buf[:k]

    def entries(self, pacer: Pacer) -> tuple[Entries, int]:
        """The reference's non-zero entries, and how many vector-Jacobian products they
        took."""
        n_rows = self.space.rows
        size = first_size = 1 << max(0, round(math.log2(math.sqrt(n_rows))))
        while True:
            starts = torch.arange(0, n_rows, size)
            reach = self._reach(starts, size, pacer)
            groups = group_sets(_distinct_columns(reach))
            seeded = sum(min(size, n_rows - int(starts[g[0]])) for g in groups)
            if seeded <= n_rows // 4 or size <= 8:
                break
            if size == first_size:
                crossed = self._crossed(reach, size, pacer)
                if crossed is not None:
                    return crossed, self.products
            size //= 8
        if seeded > n_rows // 2 and n_rows * self.space.cols > SMALL:
            raise Fallback("the Jacobian is nearly dense: compression saves nothing")
        return Entries(*self._rows(groups, starts, size, reach, pacer)), self.products

    def _reach(self, starts: torch.Tensor, size: int, pacer: Pacer) -> torch.Tensor:
        """Which columns each group of ``size`` rows reaches (random positive weights: a
        reached column is missed only by exact cancellation)."""
        n_rows, cols = self.space.rows, self.space.cols
        gen = torch.Generator().manual_seed(0)
        weights = torch.rand(n_rows, generator=gen, dtype=torch.float64).add_(1.0)
        group_of = torch.arange(n_rows) // size
        reach = torch.empty((len(starts), cols), dtype=torch.bool)
        step = _batch(n_rows, cols)
        for g0 in range(0, len(starts), step):
            g1 = min(len(starts), g0 + step)
            grads = self._seeds(g1 - g0)
            lo, hi = g0 * size, min(n_rows, g1 * size)
            at = (group_of[lo:hi] - g0, torch.arange(lo, hi))
            grads[at] = weights[lo:hi]
            product = self.vjp(grads)
            grads[at] = 0
            torch.ne(product, 0, out=reach[g0:g1])  # NaN != 0 too
            pacer.check_stop()
        return reach

    def _crossed(self, reach: torch.Tensor, size: int, pacer: Pacer) -> Entries | None:
        """The entries where groups of consecutive rows overlap (``reach``: row r in group
        r // size), by a second grouping across them: rows r with the same r % size (a
        matrix product's rows (i, j) reach x[i] and w[j]: the first groups share all of w,
        the second all of x, a row reaches at most what both its groups reach). Rows
        whose crossings share no column are seeded together (``group_columns`` on the
        crossings); each non-zero entry of a product belongs to the one row of the product
        whose crossing holds its column. None where that leaves more than a quarter of the
        rows to seed (or more products than groups 8 times smaller would take at least), or
        the crossings hold too many entries: the caller then refines its groups.

        A column's crossing rows depend only on which groups of each grouping reach it, so
        columns reached alike form one class (a matrix product's 16,384 columns: 128), and
        the crossings, their colouring and the owner map are built over the classes: the
        same colours as over every column (the rows' overlaps are the same), without a pair
        per entry."""
        n_rows, cols = self.space.rows, self.space.cols
        across = self._reach_across(size, pacer)
        # (every crossing, as the product of the groupings' reach would count them)
        per_column = [m.view(torch.uint8).sum(0, dtype=torch.int64) for m in (reach, across)]
        if int((per_column[0] * per_column[1]).sum()) > MAX_ENTRIES:
            return None
        firsts, class_of = _column_classes(torch.cat([reach, across]))
        rows_x, class_x = _crossings(reach[:, firsts], across[:, firsts], size, n_rows)
        pacer.check_stop()
        # rows coloured so that rows of a colour share no column of their crossings
        colour = group_columns(class_x, rows_x, n_rows)
        colours = int(colour.max()) + 1 if colour.numel() else 0
        finer = size // 8  # (the refinement's groups: at least their reach and one class)
        if colours > n_rows // 4 or colours >= -(-n_rows // finer) + finer:
            return None
        classes = len(firsts)
        crossings = int((torch.bincount(class_x, minlength=classes)
                         * torch.bincount(class_of, minlength=classes)).sum())
        # the products kept whole where they take no more memory than the entries' triples
        # would (each entry lies in a crossing), else their non-zero entries as triples
        dense = colours * cols <= DENSE_WITHIN * crossings
        values = torch.empty((colours, cols) if dense else (0, cols), dtype=torch.float64)
        # each colour's owner of each class of columns (a colour's rows share none): kept
        # whole with the products, else a batch's at a time (the crossings by colour)
        owners = torch.full((colours if dense else 0, classes), -1, dtype=torch.int32)
        order, bounds = by_label(colour[rows_x], colours)
        rows_x, class_x = rows_x[order], class_x[order]
        members, member_bounds = by_label(colour, colours)
        found_r, found_c, found_v = [], [], []
        step = _batch(n_rows, cols)
        for k0 in range(0, colours, step):
            k1 = min(colours, k0 + step)
            seeded = members[member_bounds[k0]:member_bounds[k1]]
            at = (colour[seeded] - k0, seeded)
            grads = self._seeds(k1 - k0)
            grads[at] = 1
            product = self.vjp(grads)
            grads[at] = 0
            owner = owners[k0:k1] if dense else torch.empty((k1 - k0, classes),
                                                            dtype=torch.int32)
            owner.fill_(-1)
            r = rows_x[bounds[k0]:bounds[k1]]
            owner[colour[r] - k0, class_x[bounds[k0]:bounds[k1]]] = r.int()
            unowned = owner.lt(0).index_select(1, class_of)
            if bool(product.ne(0).logical_and_(unowned).any()):  # NaN != 0 too
                raise Fallback("a column no group was seen to reach holds an entry")
            if dense:
                values[k0:k1] = product
            else:
                p, c = product.ne(0).nonzero(as_tuple=True)
                found_r.append(owner[p, class_of[c]].long())
                found_c.append(c)
                found_v.append(product[p, c])
            pacer.check_stop()
        found: Entries
        if dense:
            held = ByColour(values, owners, class_of, colour)
            found, count = held, int(held.per_colour.sum())
        else:
            empty = torch.zeros(0, dtype=torch.int64)
            found = Entries(torch.cat([empty, *found_r]), torch.cat([empty, *found_c]),
                            torch.cat([empty.double(), *found_v]))
            count = len(found.triples()[0])
        if count == crossings:  # (each entry found lies in a crossing, once)
            self.row_colour = colour
        return found

    def _reach_across(self, size: int, pacer: Pacer) -> torch.Tensor:
        """Which columns each group of rows with the same r % size reaches (as
        :meth:`_reach`)."""
        n_rows, cols = self.space.rows, self.space.cols
        gen = torch.Generator().manual_seed(3)
        weights = torch.rand(n_rows, generator=gen, dtype=torch.float64).add_(1.0)
        group_of = torch.arange(n_rows) % size
        reach = torch.empty((size, cols), dtype=torch.bool)
        step = _batch(n_rows, cols)
        for g0 in range(0, size, step):
            g1 = min(size, g0 + step)
            grads = self._seeds(g1 - g0)
            rows = ((group_of >= g0) & (group_of < g1)).nonzero(as_tuple=True)[0]
            at = (group_of[rows] - g0, rows)
            grads[at] = weights[rows]
            product = self.vjp(grads)
            grads[at] = 0
            torch.ne(product, 0, out=reach[g0:g1])  # NaN != 0 too
            pacer.check_stop()
        return reach

    def _rows(self, groups: list[list[int]], starts: torch.Tensor, size: int,
              reach: torch.Tensor,
              pacer: Pacer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every row of every group, by products seeding row j of each group of a class (a
        batch of products may span classes: fewer, larger calls)."""
        n_rows, cols = self.space.rows, self.space.cols
        found_r, found_c, found_v = [], [], []
        count = 0
        step = _batch(n_rows, cols)
        firsts = [starts[members] for members in groups]
        plan = [(m, j) for m in range(len(groups)) for j in range(size)]
        owners: dict[int, torch.Tensor] = {}  # by class: the group reaching each column
        for b0 in range(0, len(plan), step):
            part = plan[b0:b0 + step]
            local = sorted({m for m, _ in part})
            for m in list(owners):
                if m < local[0]:
                    del owners[m]  # (classes come in order)
            for m in local:
                if m not in owners:
                    owner = torch.full((cols,), -1, dtype=torch.int64)
                    for g in groups[m]:
                        owner[reach[g]] = int(starts[g])
                    owners[m] = owner
            owner = torch.stack([owners[m] for m in local])
            where = {m: t for t, m in enumerate(local)}
            lid = torch.tensor([where[m] for m, _ in part])
            js = torch.tensor([j for _, j in part])
            grads = self._seeds(len(part))
            set_at = []
            for t, (m, j) in enumerate(part):
                rows = firsts[m] + j
                rows = rows[rows < n_rows]
                grads[t, rows] = 1
                set_at.append(rows)
            product = self.vjp(grads)
            for t, rows in enumerate(set_at):
                grads[t, rows] = 0
            hit = product.ne(0)  # NaN != 0 too
            p, c = hit.nonzero(as_tuple=True)
            found = owner[lid[p], c]
            if bool((found < 0).any()):
                raise Fallback("a column no group was seen to reach holds an entry")
            found_r.append(found + js[p])
            found_c.append(c)
            found_v.append(product[p, c])
            count += len(c)
            if count > MAX_ENTRIES:
                raise Fallback("the Jacobian has too many non-zero entries to keep")
            pacer.check_stop()
        if not found_r:
            empty = torch.zeros(0, dtype=torch.int64)
            return empty, empty, torch.zeros(0, dtype=torch.float64)
        return torch.cat(found_r), torch.cat(found_c), torch.cat(found_v)


def _crossings(first: torch.Tensor, second: torch.Tensor, size: int,
               n_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, columns) of every column that both groups of a row reach: row r is in
    ``first``'s group r // size and ``second``'s group r % size. Column by column: each
    group of the first reaching it pairs with each group of the second reaching it."""
    c1, g1 = first.T.nonzero(as_tuple=True)  # (by column, then group)
    c2, g2 = second.T.nonzero(as_tuple=True)
    cols = first.shape[1]
    count2 = torch.bincount(c2, minlength=cols)
    start2 = torch.cumsum(count2, 0) - count2
    repeats = count2[c1]  # each pair of the first meets its column's pairs of the second
    total = int(repeats.sum())
    began = torch.cumsum(repeats, 0) - repeats  # where each one's meetings begin

    def spread(values: torch.Tensor) -> torch.Tensor:
        return torch.repeat_interleave(values, repeats, output_size=total)
    col = spread(c1)
    # meeting t of pair k: its column's pair start2 + (t - began[k]) of the second
    row = spread(g1 * size) + g2[torch.arange(total) + spread(start2[c1] - began)]
    if n_rows % size == 0:  # (every row of every group exists)
        return row, col
    keep = row < n_rows
    return row[keep], col[keep]


def _batch(n_rows: int, cols: int) -> int:
    """Products per batch: half a tile's entries, so the reference's temporaries stay below
    the analytic pass's (the check's peak memory is the analytic pass's)."""
    return max(1, limits.CHUNK_ELEMENTS // 2 // max(n_rows, cols))


def _distinct_columns(reach: torch.Tensor) -> torch.Tensor:
    """``reach`` with the columns no group reaches dropped and identical columns once (the
    overlaps of groups are the same, the matrix much narrower)."""
    firsts, _ = _column_classes(reach)
    firsts = firsts[reach[:, firsts].any(0)]  # (the class of the columns no group reaches)
    return reach[:, firsts]


def _column_classes(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The classes of identical columns of the boolean ``matrix``: each class's first column
    (in order), and each column's class."""
    # each column's bits packed into 64-bit words, in torch (numpy's packbits down the
    # columns was far slower: docs/engine.md, step 8), the columns sorted by
    # them (torch.unique(dim=1) compares column by column in Python-sized steps; np.unique
    # of the bytes as one opaque value compares them byte by byte)
    n, cols = matrix.shape
    nbytes = -(-n // 64) * 8
    bits = torch.zeros((nbytes * 8, cols), dtype=torch.uint8)
    bits[:n] = matrix
    place = torch.tensor([1 << k for k in range(8)], dtype=torch.uint8).view(1, 8, 1)
    packed = bits.view(nbytes, 8, cols).mul_(place).sum(1, dtype=torch.uint8)
    words = packed.T.contiguous().numpy().view(np.uint64)  # columns x words
    order = np.lexsort(words.T[::-1])  # (stable: a class's first column comes first)
    ranked = words[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (ranked[1:] != ranked[:-1]).any(1)
    first = order[starts]  # each class's first column, classes in the words' order
    by_first = np.argsort(first)
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(first))
    classes = np.empty(len(order), dtype=np.int64)
    classes[order] = rank[np.cumsum(starts) - 1]
    return (torch.from_numpy(first[by_first].astype(np.int64)), torch.from_numpy(classes))


class Verifier:
    """Finite differences of forward along the colours' directions (random weights, then
    random signed weights) against the reference times the same directions, within atol."""

    def __init__(self, probe: Probe, space: Workspace, base: list, forward, eps: float,
                 atol: float):
        self.probe, self.space, self.base, self.forward = probe, space, base, forward
        self.eps, self.atol = eps, atol
        self.forwards = 0
        self.colours = 0  # the colours the verification took (1: every column at once)
        self.scribbled = False  # forward wrote into an input (each call has its own copies)
        self.vmap: bool | str = True  # until the first batch is checked; False: single calls

    def verify(self, pacer: Pacer, found: Entries) -> None:
        """Verify the reference's entries ``found``, or raise Fallback: along the colours of
        its columns (``group_columns``), from ``ALL_AT_ONCE_FROM`` colours on along every
        column at once first; where the colours would cost as many forward calls as finite
        differences (2n), along every column at once alone.

        Every column at once is tried before the colours are computed where no colouring can
        have fewer than ``ALL_AT_ONCE_FROM`` colours (a row holds as many entries): where it
        holds, the colours were not needed; where it fails, the colours decide as before
        (the sums are not taken twice)."""
        n_cols = self.space.cols
        weights = self._weights()
        tried = found.most_in_a_row(self.space.rows) >= ALL_AT_ONCE_FROM
        if tried:
            self.colours = 1
            if self._all_at_once(found, weights):
                return
        found = Entries(*found.triples())  # (taken once: the colours and each batch read them)
        rows, cols, _ = found.triples()
        colour = group_columns(rows, cols, n_cols)
        colours = int(colour.max()) + 1 if colour.numel() else 0
        if 4 * colours < 2 * n_cols:
            self.run(pacer, found, colour, colours, tried)
        elif tried or not self.at_once(found):
            # (a scalar loss of a 64x128 input: 16,384 columns, one colour each, verified
            # along all of them at once in four forward calls where the sum holds)
            raise Fallback("the Jacobian's columns compress too little to save forward calls")

    def run(self, pacer: Pacer, found: Entries, colour, colours: int,
            tried: bool = False) -> None:
        """Each colour's two directions (weights, signed weights), a batch of colours at a time:
        forward vmapped over the batch's directions where it batches (its first batch
        checked against single calls), else called once per direction and side."""
        n_rows, n_cols = self.space.rows, self.space.cols
        weights = self._weights()
        self.colours = 1
        if (not tried and colours >= ALL_AT_ONCE_FROM
                and self._all_at_once(found, weights)):
            return
        self.colours = colours
        rows, cols, values = found.triples()
        step = max(1, limits.CHUNK_ELEMENTS // max(n_rows, n_cols) // 2)
        # the entries and the columns grouped by colour once: a batch takes a slice of each
        # (a mask over a million entries for each batch cost more than its differences)
        order, bounds = by_label(colour[cols], colours)
        rows, cols, values = rows[order], cols[order], values[order]
        col_order, col_bounds = by_label(colour, colours)
        for k0 in range(0, colours, step):
            k1 = min(colours, k0 + step)
            b = k1 - k0
            # direction 2k: weights over colour k's columns; 2k + 1: signed weights
            directions = torch.zeros((2 * b, n_cols), dtype=torch.float64)
            in_batch = col_order[col_bounds[k0]:col_bounds[k1]]
            at = 2 * (colour[in_batch] - k0)
            directions[at, in_batch] = weights[0, in_batch]
            directions[at + 1, in_batch] = weights[1, in_batch]
            sel = slice(bounds[k0], bounds[k1])
            r, c, v = rows[sel], cols[sel], values[sel]
            k = 2 * (colour[c] - k0)
            expected = torch.zeros(2 * b * n_rows, dtype=torch.float64)
            expected.index_add_(0, k * n_rows + r, v * weights[0, c])
            expected.index_add_(0, (k + 1) * n_rows + r, v * weights[1, c])
            expected = expected.view(2 * b, n_rows)
            numerical = self._batched_differences(directions)
            if numerical is not None:
                self._check(numerical, expected)
            else:
                for j in range(2 * b):
                    self._check(self._difference(directions[j]), expected[j])
                    if j % 2:
                        pacer.check_stop()
            pacer.check_stop()

    def _weights(self) -> torch.Tensor:
        """Each column's two weights: in [1, 2), the second signed: a pair of hidden entries
        (a, -a) in one row cancels in a direction only where its two weights agree (with
        signs of +-1 alone, half of all pairs cancelled in both directions)."""
        gen = torch.Generator().manual_seed(1)
        weights = torch.rand((2, self.space.cols), generator=gen, dtype=torch.float64).add_(1.0)
        weights[1] *= torch.randint(0, 2, (self.space.cols,), generator=gen).mul_(2).sub_(1)
        return weights

    def at_once(self, found: Entries) -> bool:
        """The reference verified along every column at once alone (four forward calls),
        for a Jacobian whose colours would cost more forward calls than finite differences;
        False where the sums differ (the caller then takes finite differences)."""
        self.colours = 1
        return self._all_at_once(found, self._weights())

    def _all_at_once(self, found: Entries, weights: torch.Tensor) -> bool:
        """Every column in one colour: forward differenced along the weights and the signed
        weights over all columns, against the reference times them (each row's entries
        weighted and summed: a wrong or missing entry moves the sum, and hides only where
        the row's errors cancel in both directions at once, as within a colour). False where
        they differ (the colours then decide: a sum of many entries may differ by rounding
        or curvature where each colour's would not)."""
        expected = found.sums(weights, self.space.rows)
        try:
            numerical = self._batched_differences(weights)
            if numerical is not None:
                self._check(numerical, expected)
            else:
                for j in range(2):
                    self._check(self._difference(weights[j]), expected[j])
        except Fallback:
            return False
        return True

    def _batched_differences(self, directions: torch.Tensor) -> torch.Tensor | None:
        """(f(x + eps d) - f(x - eps d)) / (2 eps) for each row d of ``directions``, by one
        vmapped forward per side; None where forward does not batch (or, on the first batch,
        its first direction differs from single calls beyond rounding)."""
        if not self.vmap:
            return None
        k = directions.shape[0]
        sides = []
        try:
            for sign in (1.0, -1.0):
                call = self.probe.copies(self.base)
                for axis in self.space.inputs:
                    step = directions[:, axis.offset:axis.offset + axis.size]
                    call[axis.position] = (self.base[axis.position].reshape(1, -1)
                                           + (sign * self.eps) * step).view(k, *axis.shape)
                sent = [(call[a.position], call[a.position].clone()) for a in self.space.inputs]
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # vmap's fallbacks warn about speed
                    outs = self._vmapped()(*call)
                self.scribbled = self.scribbled or not all(same_values(t, c) for t, c in sent)
                picked = []
                for axis in self.space.outputs:
                    out = outs[axis.position]
                    if tuple(out.shape) != (k, *axis.shape):
                        raise ValueError("batched output shape differs")
                    picked.append(out.detach().reshape(k, -1).to("cpu", torch.float64))
                sides.append(torch.cat(picked, dim=1) if len(picked) > 1 else picked[0])
        except Cancelled:
            raise
        except Exception:
            self.vmap = False
            return None
        if self.vmap is True:
            self.vmap = "verified"
            counted = self.forwards
            single = self._sides(directions[0])
            self.forwards = counted  # (the count is of the directions' differences)
            if not all(matrices.same_to_rounding(s[:1], o.unsqueeze(0), torch.float64)
                       for s, o in zip(sides, single)):
                self.vmap = False
                return None
        self.forwards += 2 * k
        return (sides[0] - sides[1]) / (2 * self.eps)

    def _vmapped(self):
        """forward (outputs as a tuple) vmapped over the differentiated inputs."""
        fn, new_style = self.probe.function, self.probe.new_style
        positions = {a.position for a in self.space.inputs}

        def forward(*call):
            raw = fn.forward(*call) if new_style else fn.forward(FakeCtx(), *call)
            return tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
        return quiet_vmap(forward, tuple(0 if j in positions else None
                                         for j in range(len(self.base))))

    def _difference(self, direction: torch.Tensor) -> torch.Tensor:
        """(f(x + eps d) - f(x - eps d)) / (2 eps), outputs concatenated."""
        plus, minus = self._sides(direction)
        return (plus - minus) / (2 * self.eps)

    def _sides(self, direction: torch.Tensor) -> list[torch.Tensor]:
        """f(x + eps d) and f(x - eps d), outputs concatenated, by single calls."""
        sides = []
        for sign in (1.0, -1.0):
            call = self.probe.copies(self.base)
            for axis in self.space.inputs:
                step = direction[axis.offset:axis.offset + axis.size].view(axis.shape)
                call[axis.position] = self.base[axis.position] + (sign * self.eps) * step
            sent = [(call[a.position], call[a.position].clone()) for a in self.space.inputs]
            try:
                outs = self.forward(call)
            except Cancelled:
                raise
            except Exception as exc:
                raise Fallback(f"forward raised at a perturbed point ({type(exc).__name__})") \
                    from None
            self.forwards += 1
            self.scribbled = self.scribbled or not all(same_values(t, c) for t, c in sent)
            picked = []
            for axis in self.space.outputs:
                out = outs[axis.position] if axis.position < len(outs) else None
                if not isinstance(out, torch.Tensor) or tuple(out.shape) != axis.shape:
                    raise Fallback("forward's output changed shape at a perturbed point")
                picked.append(out.detach().reshape(-1).to("cpu", torch.float64))
            sides.append(torch.cat(picked) if len(picked) > 1 else picked[0])
        return sides

    def _check(self, numerical: torch.Tensor, reference: torch.Tensor) -> None:
        """Rows of differences against the reference's (one direction a row, or a single
        one): the first direction that fails says why."""
        if numerical.dim() == 1:
            numerical, reference = numerical.unsqueeze(0), reference.unsqueeze(0)
        infinite = ~(numerical.isfinite().all(1) & reference.isfinite().all(1))
        # atol alone: a compressed entry sums a row's entries over the colour's columns, and
        # rtol of the one the reference has would cover entries it misses (at 1000, one of
        # 0.05 where gradcheck's bound is 1e-5)
        bad = ((reference - numerical).abs() > self.atol).any(1)
        failed = (infinite | bad).nonzero(as_tuple=True)[0]
        if failed.numel() == 0:
            return
        if bool(infinite[failed[0]]):
            raise Fallback("NaN or Inf near the base point")
        gap = float((reference - numerical)[failed].abs().max())
        scale = float(numerical[failed].abs().max())
        raise Fallback(f"autograd through forward disagrees with finite differences by up to "
                       f"{gap:.2g} (forward does something autograd does not see: .detach(), "
                       ".data, numpy, a non-differentiable operation; or, with values as "
                       f"large as {scale:.2g}, finite differences round too coarsely to "
                       "confirm it)" if gap <= 1e-6 * scale else
                       f"autograd through forward disagrees with finite differences by up to "
                       f"{gap:.2g} (forward does something autograd does not see: .detach(), "
                       ".data, numpy, a non-differentiable operation)")


def _write(space: Workspace, pacer: Pacer, rows: torch.Tensor, cols: torch.Tensor,
           values: torch.Tensor) -> None:
    """The entries into the (lazily mapped, input-major) numerical matrix column tile by
    column tile (a display sees it fill as with finite differences), and the flags of the
    tiles they fall in."""
    order, bounds = by_tile(cols, space.col_tiles)
    rows, cols, values = rows[order], cols[order], values[order]
    row_starts = torch.tensor([t[0] for t in space.row_tiles])
    for t, (_, c1) in enumerate(space.col_tiles):
        start, end = bounds[t], bounds[t + 1]
        if end > start:
            r, c, v = rows[start:end], cols[start:end], values[start:end]
            space.num_t.index_put_((c, r), v)
            space.num_nonzero[t, torch.searchsorted(row_starts, r, right=True) - 1] = True
            pacer.note_peak(v.unsqueeze(0))
        pacer.emit(0.5 * c1 / space.cols, "numerical", columns_done=c1)


def _first_line(exc: Exception) -> str:
    return str(exc).split("\n")[0].split(". ")[0][:120]
