"""The loss landscape tab: the loss over a plane through the current point, the run's path
and both gradients as arrows (:mod:`.view`, :mod:`.plot`), and what they draw worked out
without Qt (:mod:`.geometry`)."""

from playground.views.landscape.view import LandscapeView

__all__ = ["LandscapeView"]
