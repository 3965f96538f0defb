"""The three heatmaps of a report drawn offscreen, as PNG: for notebooks, ``save=`` of
``customgrad.testing.assert_backward`` and scripts.

The drawing is the app's own: a :class:`~playground.views.jacobian.JacobianView` that never
shows on screen lays the report out (block lines, mismatches outlined, the worst entry
circled, big matrices pooled to the picture's size), and the heatmaps with their colour bars
are written by the app's export (:func:`playground.views.export.export_item`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

#: the picture's size in pixels before the export's scale (the three heatmaps side by side)
SIZE = (1200, 440)
#: pixels per on-screen pixel of a picture for a notebook (1) and of a file (the app's 2)
NOTEBOOK_SCALE, FILE_SCALE = 1.0, 2.0

__all__ = ["heatmaps_png", "landscape_png", "save_heatmaps", "save_landscape"]
#: a landscape's picture (before the export's scale)
LANDSCAPE_SIZE = (640, 560)


def _application():
    """The running QApplication, or a new one: on Qt's offscreen platform when no window
    could open here (no display), so that drawing never aborts the process. Qt's messages
    that mean nothing to the notebook's user are filtered (:mod:`playground.views.qt_messages`)."""
    from playground.views.qt_messages import filter_noise

    filter_noise()
    app = QApplication.instance()
    if app is not None:
        if not isinstance(app, QApplication):
            raise RuntimeError("a Qt core application without widgets is running here")
        return app
    from playground.support import window_check

    argv = [sys.argv[0] if sys.argv and sys.argv[0] else "customgrad"]
    if window_check.problem() is not None:
        argv += ["-platform", "offscreen"]
    return QApplication(argv)


def save_heatmaps(report, path: str | os.PathLike, *, size: tuple[int, int] = SIZE,
                  scale: float = FILE_SCALE) -> Path:
    """Write the analytic, numerical and difference heatmaps of ``report`` (which must have
    kept its matrices) as one PNG at ``path``; returns the path."""
    if report.analytic is None or report.numerical is None:
        raise ValueError("the report did not keep its matrices (keep_matrices=False): "
                         "nothing to draw")
    _application()
    from playground.views.export import export_item
    from playground.views.jacobian import JacobianView
    from playground.views.pacing import release_all

    view = JacobianView()
    try:
        view.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        view.heatmaps.graphics.setBackground("w")
        view.set_tolerances(report.eps, report.atol, report.rtol)
        view.resize(*size)
        view.show()
        view.show_report(report)
        release_all()  # a repaint held for a moment would be drawn blank
        QApplication.processEvents()
        view.fit()
        return export_item(view.heatmaps.graphics.ci, path, scale=scale)
    finally:
        view.clear()  # lets go of the report's matrices
        view.hide()
        shiboken6.delete(view)  # now: a script or notebook may never run an event loop


def heatmaps_png(report, *, size: tuple[int, int] = SIZE,
                 scale: float = NOTEBOOK_SCALE) -> bytes:
    """The heatmaps of :func:`save_heatmaps` as PNG bytes."""
    with tempfile.TemporaryDirectory(prefix="customgrad-") as folder:
        path = save_heatmaps(report, Path(folder) / "heatmaps.png", size=size, scale=scale)
        return path.read_bytes()


def save_landscape(landscape, path: str | os.PathLike, *, size: tuple[int, int] = LANDSCAPE_SIZE,
                   scale: float = FILE_SCALE) -> Path:
    """Write a :class:`customgrad.landscape.Landscape` as the Landscape tab draws it (the
    legend in words as its title) at ``path`` (PNG, or SVG by the suffix)."""
    _application()
    from playground.views.export import export_item
    from playground.views.landscape.geometry import legend_html
    from playground.views.landscape.plot import LandscapePlot
    from playground.views.pacing import release_all
    from playground.workers.landscape import drawn

    plot = LandscapePlot()
    try:
        plot.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        plot.resize(*size)
        plot.show()
        plot.plot_item.setTitle(legend_html(landscape.words, plot.dark))
        plot.show_landscape(*drawn(landscape))
        release_all()
        QApplication.processEvents()
        return export_item(plot.scene(), path, scale=scale)
    finally:
        plot.hide()
        shiboken6.delete(plot)


def landscape_png(landscape, *, size: tuple[int, int] = LANDSCAPE_SIZE,
                  scale: float = NOTEBOOK_SCALE) -> bytes:
    """:meth:`customgrad.landscape.Landscape._repr_png_`: the picture as PNG bytes."""
    with tempfile.TemporaryDirectory(prefix="customgrad-") as folder:
        return save_landscape(landscape, Path(folder) / "landscape.png", size=size,
                              scale=scale).read_bytes()
