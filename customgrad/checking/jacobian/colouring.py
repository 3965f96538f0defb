"""Curtis-Powell-Reid grouping: columns (or row groups) that never share a non-zero row may be
perturbed (or seeded) together, and each compressed entry still holds a single matrix entry.

:func:`group_columns` colours a sparsity pattern given as (row, column) pairs, as
``scipy.optimize._numdiff.group_columns`` does (largest columns first), in whole rounds of
tensor operations instead of a Python loop per column. :func:`group_sets` does the same for a
few sets given as a boolean matrix (the reference's row tiles and the columns they reach).
"""

from __future__ import annotations

import numpy as np
import torch


def group_columns(rows: torch.Tensor, cols: torch.Tensor, n_cols: int) -> torch.Tensor:
    """A colour per column (int64, 0..k-1) such that no two columns of one colour share a row
    of the pattern ``(rows[i], cols[i])``."""
    try:
        from scipy.optimize._numdiff import group_columns as scipy_groups
        from scipy.sparse import csc_matrix
    except ImportError:  # scipy moved its private helper: the same rule, in torch
        return group_columns_in_rounds(rows, cols, n_cols)
    if rows.numel() == 0:
        return torch.zeros(n_cols, dtype=torch.int64)
    pattern = csc_matrix((np.ones(rows.numel(), dtype=np.int8), (rows.numpy(), cols.numpy())),
                         shape=(int(rows.max()) + 1, n_cols))
    return torch.from_numpy(np.asarray(scipy_groups(pattern), dtype=np.int64))


def group_columns_in_rounds(rows: torch.Tensor, cols: torch.Tensor,
                            n_cols: int) -> torch.Tensor:
    """A colour per column (int64, 0..k-1) such that no two columns of one colour share a row
    of the pattern ``(rows[i], cols[i])``; a column with no entry takes colour 0.

    Columns are ranked largest first (most entries; the lower index on a tie). Each round, a
    row belongs to its best-ranked uncoloured column, and every column that holds all of its
    rows takes the round's colour: those columns share no row (a row has one holder), and the
    best-ranked uncoloured column always holds all of its rows, so each round colours one at
    least. On a diagonal pattern one round colours every column; on a dense one, one column.
    """
    colour = torch.zeros(n_cols, dtype=torch.int64)
    if rows.numel() == 0:
        return colour
    rows, cols = rows.long(), cols.long()
    counts = torch.bincount(cols, minlength=n_cols)
    order = torch.argsort(-counts, stable=True)
    rank = torch.empty(n_cols, dtype=torch.int64)
    rank[order] = torch.arange(n_cols)
    n_rows = int(rows.max()) + 1
    r, c = rows, cols
    k = 0
    while r.numel():
        rc = rank[c]
        holder = torch.full((n_rows,), n_cols, dtype=torch.int64)
        holder.scatter_reduce_(0, r, rc, reduce="amin")
        lost = torch.zeros(n_cols, dtype=torch.bool)
        lost[c[holder[r] != rc]] = True
        taken = ~lost[c]
        colour[c[taken]] = k
        keep = lost[c]
        r, c = r[keep], c[keep]
        k += 1
    return colour


def group_sets(members: torch.Tensor) -> list[list[int]]:
    """Groups of the sets (rows of the boolean ``members``) such that no two sets of a group
    share a member, largest sets first, each into the first group it fits (greedy)."""
    overlap = (members.double() @ members.double().T > 0).numpy()
    sizes = members.sum(1)
    groups: list[list[int]] = []
    # row g: the sets group g may not take (one numpy row per group: a set finds its group
    # in one operation, not one per group)
    clash = np.zeros((len(members), len(members)), dtype=bool)
    for s in torch.argsort(-sizes, stable=True).tolist():
        free = np.flatnonzero(~clash[:len(groups), s])
        if free.size:
            g = int(free[0])
            groups[g].append(s)
            clash[g] |= overlap[s]
        else:
            groups.append([s])
            clash[len(groups) - 1] = overlap[s]
    return groups
