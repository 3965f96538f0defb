"""Writing pictures and numbers to files: plots as PNG/SVG, the loss history, the Jacobians.

Each function takes the path to write; the menus ask for it with a file dialog.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyqtgraph as pg

from playground.views.pacing import release_all
from playground.views.pyqtgraph_compat import svg_tolerates_close_path

__all__ = ["JACOBIANS", "export_item", "jacobian_arrays", "jacobian_paths", "save_jacobians",
           "save_loss_csv", "save_window"]

JACOBIANS = ("analytic", "numerical", "difference")
IMAGE_SCALE = 2  # pictures for slides: twice the on-screen resolution


def export_item(item, path: str | os.PathLike, scale: float = IMAGE_SCALE) -> Path:
    """Write a plot (a PlotItem, a GraphicsLayout or a whole scene) as SVG or a bitmap.

    The suffix chooses: ``.svg`` is vector, anything else (``.png``) a bitmap ``scale``
    times the size on screen.
    """
    import pyqtgraph.exporters  # noqa: F401 (registers pg.exporters; not before the first paint)

    path = Path(path)
    if path.suffix.lower() == ".svg":
        svg_tolerates_close_path()
        pg.exporters.SVGExporter(item).export(str(path))
    else:
        exporter = pg.exporters.ImageExporter(item)
        width = max(1, int(exporter.parameters()["width"] * scale))
        exporter.parameters()["width"] = width
        if not exporter.export(str(path)) and not path.exists():
            raise OSError(f"could not write {path}")
    if not path.exists() or path.stat().st_size == 0:
        raise OSError(f"could not write {path}")
    return path


def save_loss_csv(loss_plot, path: str | os.PathLike) -> Path:
    """The loss history (``run,step,loss`` rows, earlier runs first) as CSV."""
    loss_plot.flush()
    loss_plot.export_csv(path)
    return Path(path)


def jacobian_arrays(report) -> dict[str, np.ndarray]:
    """analytic, numerical and their difference as numpy arrays (rows: outputs)."""
    if report is None or report.analytic is None or report.numerical is None:
        raise ValueError("no Jacobian comparison to export yet: open a Function and check it")

    def array(tensor) -> np.ndarray:
        return tensor.detach().cpu().numpy()

    return {"analytic": array(report.analytic), "numerical": array(report.numerical),
            "difference": array(report.difference())}


def jacobian_paths(path: str | os.PathLike, fmt: str) -> dict[str, Path]:
    """``out.npy`` -> out_analytic.npy, out_numerical.npy, out_difference.npy."""
    path = Path(path)
    stem = path.stem if path.suffix.lower() == f".{fmt}" else path.name
    for name in JACOBIANS:
        if stem.endswith(f"_{name}"):
            stem = stem[: -len(name) - 1]
    return {name: path.with_name(f"{stem}_{name}.{fmt}") for name in JACOBIANS}


def save_jacobians(report, path: str | os.PathLike, fmt: str = "npy") -> dict[str, Path]:
    """The last report's three matrices, one file each, as ``.npy`` or CSV (full precision)."""
    if fmt not in ("npy", "csv"):
        raise ValueError(f"format {fmt!r}: use npy or csv")
    arrays = jacobian_arrays(report)
    written = jacobian_paths(path, fmt)
    for name, target in written.items():
        matrix = arrays[name]
        if fmt == "npy":
            np.save(target, matrix)
        else:
            np.savetxt(target, np.atleast_2d(matrix), delimiter=",", fmt="%.17g")
    return written


def save_window(window, path: str | os.PathLike) -> Path:
    """The whole window as it looks now, as PNG."""
    path = Path(path)
    release_all()  # a repaint held for a moment would be drawn blank
    if not window.grab().save(str(path)):
        raise OSError(f"could not write {path}")
    return path
