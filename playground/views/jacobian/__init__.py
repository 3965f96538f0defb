"""Analytic vs numerical Jacobian, side by side, with the verdict in words.

Three heatmaps share zoom and pan: the Jacobian from the Function's own ``backward``
(analytic), the one from central finite differences (numerical) and their difference.
Analytic and numerical share one diverging colour scale; the difference has its own, with
every entry outside tolerance outlined. Rows are the outputs' elements, columns the inputs'
elements; block lines and axis labels show where each output and input lives.

The pane in parts, each a module:

- :mod:`.view`: :class:`JacobianView`, which composes the others and takes the comparison's
  progress and report;
- :mod:`.banner`: the verdict banner (+ Details); :mod:`.tolerances`: the tolerance bar;
- :mod:`.heatmaps`: the three heatmaps, row labels, block lines and colour bars;
  :mod:`.labels`: block labels and titles fitted to the room; :mod:`.marks`: mismatches,
  the worst entry's ring, diagnosed blocks, the hovered cell; :mod:`.items`: small Qt items;
- Qt-free: :mod:`.geometry` (aspect, block lines, label fitting), :mod:`.words` (hover text,
  hint, verdict lines), :mod:`.progress` (what progress has been scanned so far). The
  previews drawn while computing are made off the GUI thread (:mod:`playground.support.preview`).
"""

from playground.views.jacobian.geometry import FILL_TARGET, MAX_CELL_STRETCH, MIN_FILL
from playground.views.jacobian.marks import SCAN_ENTRIES, SCATTER_LIMIT
from playground.views.jacobian.view import JacobianView

__all__ = ["FILL_TARGET", "MAX_CELL_STRETCH", "MIN_FILL", "SCAN_ENTRIES", "SCATTER_LIMIT",
           "JacobianView"]
