"""Live loss curve of a gradient-descent run, with fainter overlays of earlier runs: the
widget (:mod:`.plot`) and its runs' points and view range, without Qt (:mod:`.runs`)."""

from playground.views.loss_plot.plot import LossPlot

__all__ = ["LossPlot"]
