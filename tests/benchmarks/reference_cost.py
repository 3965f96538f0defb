"""What an exact reference and compressed finite differences would cost (issue 32, items 1-2).

    python tests/benchmarks/reference_cost.py [--repeat N]

For KillHead 64x128 (elementwise: a diagonal 8192 x 8192 Jacobian) and LinearFunction
(input 64x128, weight 64x128: dense blocks), side by side in one process, best of
``--repeat``: today's full comparison, what its finite differences cost (2n forwards: its
numerical pass, to the progress event that ends it), the reference Jacobian by autograd through
forward (rows by batched vjp, or columns by batched jvp, chunked), the Curtis-Powell-Reid
colours of its sparsity pattern (greedy, largest first), and the compressed differences
(two forwards per colour). Threads as a worker chooses them (customgrad.workers.threads).
Not part of the test suite, and not the engine: a measurement of a design.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.func import jvp, vjp, vmap

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from customgrad.checking.jacobian import compare
from customgrad.function.contract import FakeCtx
from customgrad.targets.gallery.seeds import KillHead, LinearFunction
from customgrad.workers import threads

CHUNK = 1024


def best(fn, repeat: int) -> tuple[float, object]:
    seconds, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, value


def _flat_forward(function, args, positions):
    """forward as a function of the differentiated inputs, flattened to one vector each."""
    shapes = [args[i].shape for i in positions]

    def forward(*flat):
        call = list(args)
        for i, f, shape in zip(positions, flat, shapes):
            call[i] = f.reshape(shape)
        return function.forward(FakeCtx(), *call).reshape(-1)
    return forward


def reference_rows(forward, leaves) -> torch.Tensor:
    """The Jacobian by batched vjp, CHUNK rows at a time."""
    out, pull = vjp(forward, *leaves)
    rows, cols = out.numel(), sum(leaf.numel() for leaf in leaves)
    matrix = torch.empty(rows, cols, dtype=torch.float64)
    for r0 in range(0, rows, CHUNK):
        r1 = min(rows, r0 + CHUNK)
        eye = torch.zeros(r1 - r0, rows, dtype=torch.float64)
        eye[torch.arange(r1 - r0), torch.arange(r0, r1)] = 1
        matrix[r0:r1] = torch.cat([g.reshape(r1 - r0, -1) for g in vmap(pull)(eye)], dim=1)
    return matrix


def reference_columns(forward, leaves) -> torch.Tensor:
    """The Jacobian by batched jvp, CHUNK columns at a time."""
    sizes = [leaf.numel() for leaf in leaves]
    cols = sum(sizes)
    rows = forward(*leaves).numel()
    matrix = torch.empty(rows, cols, dtype=torch.float64)
    for c0 in range(0, cols, CHUNK):
        c1 = min(cols, c0 + CHUNK)
        eye = torch.zeros(c1 - c0, cols, dtype=torch.float64)
        eye[torch.arange(c1 - c0), torch.arange(c0, c1)] = 1
        tangents = eye.split(sizes, dim=1)
        matrix[:, c0:c1] = vmap(lambda *t: jvp(forward, tuple(leaves), t)[1])(*tangents).T
    return matrix


def colours(pattern: torch.Tensor) -> np.ndarray:
    """Curtis-Powell-Reid: columns of one colour share no nonzero row; greedy, the columns
    with most nonzeros first (as scipy.optimize._numdiff.group_columns orders them)."""
    row_of, col_of = np.nonzero(pattern.contiguous().numpy())
    by_column = np.argsort(col_of, kind="stable")  # the rows each column touches, in turn
    cols_at, col = col_of[by_column], row_of[by_column]
    crow = np.searchsorted(cols_at, np.arange(pattern.shape[1] + 1))
    counts = np.diff(crow)
    order = np.argsort(-counts, kind="stable")
    used = np.zeros((pattern.shape[0], 1), dtype=bool)  # row r has a column of colour k
    colour = np.empty(pattern.shape[1], dtype=np.int64)
    for c in order:
        rows = col[crow[c]:crow[c + 1]]
        free = np.flatnonzero(~used[rows].any(axis=0)) if len(rows) else np.array([0])
        k = int(free[0]) if len(free) else used.shape[1]
        if k == used.shape[1]:
            used = np.concatenate([used, np.zeros((used.shape[0], used.shape[1]),
                                                  dtype=bool)], axis=1)
        used[rows, k] = True
        colour[c] = k
    return colour


def compressed_differences(forward, leaves, colour: np.ndarray, eps: float = 1e-6):
    """(f(x + eps s_k) - f(x - eps s_k)) / 2 eps for each colour's seed s_k: J S."""
    x = torch.cat([leaf.reshape(-1) for leaf in leaves])
    sizes = [leaf.numel() for leaf in leaves]
    count = int(colour.max()) + 1
    seeds = torch.zeros(count, x.numel(), dtype=torch.float64)
    seeds[torch.as_tensor(colour), torch.arange(x.numel())] = 1
    with torch.no_grad():
        points = x + eps * seeds
        plus = vmap(forward)(*points.split(sizes, dim=1))
        points = x - eps * seeds
        minus = vmap(forward)(*points.split(sizes, dim=1))
    return ((plus - minus) / (2 * eps)).T, seeds.T


def case(name, function, args, positions, repeat):
    leaves = [args[i] for i in positions]
    forward = _flat_forward(function, args, positions)
    flat = [leaf.reshape(-1) for leaf in leaves]
    compare(function, [a[:4, :8].contiguous() if isinstance(a, torch.Tensor) else a
                       for a in args])  # warm up
    threads.use_free_cores()
    split = {}

    def full():
        start = time.perf_counter()

        def progress(event):
            if event.phase == "numerical" and event.fraction == 0.5:
                split["fd"] = time.perf_counter() - start
        compare(function, args, progress=progress)
        return split["fd"]
    full_s, fd_s = best(full, repeat)
    rows_s, ref = best(lambda: reference_rows(forward, flat), repeat)
    cols_s, _ = best(lambda: reference_columns(forward, flat), repeat)
    colour_s, colour = best(lambda: colours(ref != 0), 1)
    cfd_s, (compressed, seeds) = best(lambda: compressed_differences(forward, flat, colour),
                                      repeat)
    agree = bool(((compressed - ref @ seeds).abs()
                  <= 1e-5 + 1e-3 * compressed.abs()).all())
    print(f"{name}: Jacobian {ref.shape[0]} x {ref.shape[1]}, {int(colour.max()) + 1} colours, "
          f"J_fd S == J_ref S: {agree}, threads {torch.get_num_threads()}")
    for label, seconds in [("today's full comparison", full_s),
                           ("  of which its differences", fd_s),
                           ("reference by rows (vjp)", rows_s),
                           ("reference by columns (jvp)", cols_s),
                           ("colouring", colour_s),
                           ("compressed differences", cfd_s)]:
        print(f"  {label:<28} {seconds:8.3f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    repeat = parser.parse_args(argv).repeat
    print(f"load: {' '.join(Path('/proc/loadavg').read_text().split()[:4])}")
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(64, 128, dtype=torch.float64, generator=gen)
    case("KillHead 64x128", KillHead, [x, 2], [0], repeat)
    w = torch.randn(64, 128, dtype=torch.float64, generator=gen)
    case("LinearFunction 64x128 @ (64x128).T", LinearFunction, [x, w], [0, 1], repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
