"""Curtis-Powell-Reid grouping: columns (or row groups) that never share a non-zero row may be
perturbed (or seeded) together, and each compressed entry still holds a single matrix entry.

:func:`group_columns` colours a sparsity pattern given as (row, column) pairs exactly as
``scipy.optimize._numdiff.group_columns`` does (its compiled kernel);
:func:`group_columns_in_rounds` is the fallback where scipy's private kernel is gone, in whole
rounds of tensor operations (more colours where columns overlap in chains).
:func:`group_sets` does the same for a few sets given as a boolean matrix (the reference's
row tiles and the columns they reach).
"""

from __future__ import annotations

import numpy as np
import torch


def group_columns(rows: torch.Tensor, cols: torch.Tensor, n_cols: int) -> torch.Tensor:
    """A colour per column (int64, 0..k-1) such that no two columns of one colour share a row
    of the pattern ``(rows[i], cols[i])``: ``scipy.optimize._numdiff.group_columns``'s, from
    its compiled kernel (see :func:`_scipy_kernel`)."""
    kernel = _scipy_kernel()
    if kernel is None:  # scipy moved its private helper: the same rule, in torch
        return group_columns_in_rounds(rows, cols, n_cols)
    if rows.numel() == 0:
        return torch.zeros(n_cols, dtype=torch.int64)
    # what group_columns(A) does with its default order (a permutation drawn with seed 0),
    # the CSC pattern of A[:, order] built here in numpy (scipy.sparse not needed)
    n_rows = int(rows.max()) + 1
    order = np.random.RandomState(0).permutation(n_cols)
    position = np.empty(n_cols, dtype=np.int64)
    position[order] = np.arange(n_cols)
    # entries grouped by column: a stable sort, numpy's radix sort where the columns fit in
    # 16 bits (a million entries: 20 ms, against 0.2 s for int64 and 1-2 s for np.unique)
    column = position[cols.numpy()]
    by_column = np.argsort(column.astype(np.uint16) if n_cols <= 1 << 16 else column,
                           kind="stable")
    indices = rows.numpy().astype(np.int64)[by_column]
    indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(column, minlength=n_cols), out=indptr[1:])
    groups = np.asarray(kernel(n_rows, n_cols, indices, indptr), dtype=np.int64)
    colour = np.empty_like(groups)
    colour[order] = groups
    return torch.from_numpy(colour)


_KERNEL: list = []


def _scipy_kernel():
    """scipy's compiled Curtis-Powell-Reid kernel (``group_sparse``), loaded from its file
    alone: ``import scipy.optimize`` (which any import of its submodule runs first) costs
    0.6 to 0.7 s of CPU, paid by every fresh process's first check (the CLI's, the fork
    server's warm-up before the first verdict). Through ``scipy.optimize._numdiff`` where the
    file is not found; None without either."""
    if _KERNEL:
        return _KERNEL[0]
    kernel = None
    try:
        import importlib.util
        from pathlib import Path

        import scipy

        for path in sorted((Path(scipy.__file__).parent / "optimize").glob("_group_columns.*")):
            if path.suffix in (".so", ".pyd"):
                spec = importlib.util.spec_from_file_location("scipy.optimize._group_columns",
                                                              path)
                if spec is not None and spec.loader is not None:
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    kernel = module.group_sparse
                    break
    except Exception:  # any failure: the importable path below
        kernel = None
    if kernel is None:
        try:
            from scipy.optimize import _group_columns

            kernel = _group_columns.group_sparse
        except (ImportError, AttributeError):
            kernel = None
    _KERNEL.append(kernel)
    return kernel


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
