"""The reference's non-zero entries, as the passes after it read them: (row, column, value)
triples (:class:`Entries`), or held as its compressed products over row colours
(:class:`ByColour`), with the triples taken from them only where a pass needs them.

A matrix product's Jacobian (LinearFunction 64x128 / 64x128: a million entries) comes from
its crossed groupings as 70 products whose every column belongs to one row of the product's
colour: 70 x 16,384 dense values and a small owner map say the same as a million triples, and
the passes after it (the verification's sums, the analytic pass's relations and its
comparison) run as dense operations on them instead of gathers and scatters through a million
indices. Where the triples are taken, they are the same entries in the same order (colour
by colour, column by column within a colour) as the triples the products gave before.
"""

from __future__ import annotations

import torch


class Entries:
    """Non-zero entries as triples (rows, columns, values), each entry once."""

    def __init__(self, rows: torch.Tensor, cols: torch.Tensor, values: torch.Tensor):
        self._triples = (rows, cols, values)

    def triples(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self._triples

    def most_in_a_row(self, n_rows: int) -> int:
        """The most entries any row holds (columns sharing a row take distinct colours:
        no colouring of the columns has fewer colours)."""
        rows = self.triples()[0]
        return int(torch.bincount(rows, minlength=n_rows).max()) if rows.numel() else 0

    def sums(self, weights: torch.Tensor, n_rows: int) -> torch.Tensor:
        """Each row's entries weighted by their columns' ``weights`` (k x cols) and summed:
        k x n_rows (the reference times each weighting)."""
        rows, cols, values = self.triples()
        out = torch.zeros((weights.shape[0], n_rows), dtype=torch.float64)
        for j in range(weights.shape[0]):
            out[j].index_add_(0, rows, values * weights[j, cols])
        return out


class ByColour(Entries):
    """Entries held as products over row colours: rows of a colour share no column, so in
    colour k column c belongs to at most one row, ``owner(k, c)``, whose entry there is
    ``values[k, c]`` (0 where the column has no owner, or the owner's entry is 0: not an
    entry). The owners come from a map over classes of columns (columns that every row
    reaches alike: a matrix product's 16,384 columns are 128 classes): ``owners[k, d]`` the
    row of colour k reaching class d (-1: none), ``class_of[c]`` column c's class.

    The entries are the non-zero values; :meth:`triples` lists them colour by colour, column
    by column (taken where a pass needs them)."""

    def __init__(self, values: torch.Tensor, owners: torch.Tensor, class_of: torch.Tensor,
                 colour: torch.Tensor):
        self.values = values  # colours x cols, float64
        self.owners = owners  # colours x classes, int32
        self.class_of = class_of  # cols, int64
        self.colour = colour  # rows, int64
        self.per_colour = values.count_nonzero(1)  # each colour's entries

    def owner(self, k0: int, k1: int) -> torch.Tensor:
        """Colours k0:k1's owner of each column (int32, -1: none), (k1 - k0) x cols."""
        return self.owners[k0:k1].index_select(1, self.class_of)

    def triples(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Taken anew at each call (not kept: the matrices' writes take them one after the
        other, and a million triples held beside the products would raise the peak)."""
        rows, cols, values = self.pick(self.values)
        return rows, cols, values

    def pick(self, *dense: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """(rows, columns, then each of ``dense`` at them) over the entries, in the order of
        :meth:`triples`: ``dense`` are colours x cols matrices laid out as ``values``."""
        # (flat places, then their colour and column: nonzero(as_tuple=True) gives views of
        # one places x 2 tensor, which the columns would keep whole)
        flat = self.values.view(-1).ne(0).nonzero().squeeze_(1)
        picked = [d.reshape(-1)[flat] for d in dense]
        k, c = flat.div(self.values.shape[1], rounding_mode="floor"), flat.remainder_(
            self.values.shape[1])
        rows = self.owners[k, self.class_of[c]].long()
        return (rows, c, *picked)

    def most_in_a_row(self, n_rows: int) -> int:
        """A bound from below of the most entries in a row, without the triples: the largest
        mean over a colour's rows of its entries (some row of the colour holds as many)."""
        rows = torch.bincount(self.colour, minlength=self.values.shape[0]).clamp_min_(1)
        return int(torch.ceil(self.per_colour / rows).max()) if rows.numel() else 0

    def sums(self, weights: torch.Tensor, n_rows: int) -> torch.Tensor:
        # the dense products weighted column by column, added into their owners' rows (an
        # unowned place, whose value is 0, into a row past the end): in the order the
        # triples give, so the same sums bit for bit (an entry's 0.0 adds nothing)
        index = (self.owners + 1).index_select(1, self.class_of).view(-1)
        out = torch.zeros((weights.shape[0], n_rows + 1), dtype=torch.float64)
        for j in range(weights.shape[0]):
            out[j].index_add_(0, index, (self.values * weights[j]).view(-1))
        return out[:, 1:]

    def row(self, r: int, *dense: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Row ``r``'s entries: their columns, then each of ``dense`` (laid out as
        ``values``) at them."""
        k = int(self.colour[r])
        c = (self.owner(k, k + 1)[0].eq(r) & self.values[k].ne(0)).nonzero(as_tuple=True)[0]
        return (c, *(d[k, c] for d in dense))


class EntryPairs:
    """The analytic and the numerical matrix's entries at the reference's places ``places``
    (every other entry is 0 in both): ``analytic`` and ``numerical`` laid out as the places
    are (aligned with their triples, or colours x cols for :class:`ByColour`)."""

    def __init__(self, places: Entries, analytic: torch.Tensor, numerical: torch.Tensor):
        self.places, self.ana, self.num = places, analytic, numerical

    def both(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(rows, columns, analytic values, numerical values)."""
        if isinstance(self.places, ByColour):
            return self.places.pick(self.ana, self.num)  # type: ignore[return-value]
        rows, cols, _ = self.places.triples()
        return rows, cols, self.ana, self.num

    def analytic(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(rows, columns, analytic values)."""
        if isinstance(self.places, ByColour):
            return self.places.pick(self.ana)  # type: ignore[return-value]
        rows, cols, _ = self.places.triples()
        return rows, cols, self.ana

    def value_at(self, r: int, c: int) -> tuple[float, float]:
        """Entry (r, c) of the analytic and the numerical matrix."""
        if isinstance(self.places, ByColour):
            cols, a, n = self.places.row(r, self.ana, self.num)
            at = (cols == c).nonzero(as_tuple=True)[0]
        else:
            rows, cols, _ = self.places.triples()
            at = ((rows == r) & (cols == c)).nonzero(as_tuple=True)[0]
            a, n = self.ana, self.num
        return (float(a[at[0]]), float(n[at[0]])) if at.numel() else (0.0, 0.0)
