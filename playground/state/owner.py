"""What the session's parts (:mod:`~playground.state.target`, :mod:`~playground.state.loop`,
:mod:`~playground.state.checks`) see of the :class:`~playground.state.session.Session` that
owns them: its signals, its settings and a few readings. A Protocol, so that the parts never
import the session, which imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import SignalInstance

if TYPE_CHECKING:
    from customgrad.problems.problem import Problem
    from customgrad.problems.settings import Settings
    from playground.workers.policy import JobPolicy


class Checking(Protocol):
    def start(self, args: list | None) -> None:
        """Compare the Jacobians at ``args`` (None: the Problem's own inputs)."""


class Owner(Protocol):
    settings: Settings
    #: where the jobs the parts start run the user's code
    policy: JobPolicy
    #: the heatmaps' size on screen in device pixels
    view_pixels: int
    #: the pane shows the second order: checks compute it however big
    second_order_asked: bool

    @property
    def problem(self) -> Problem | None: ...
    @property
    def step(self) -> int: ...
    @property
    def checks(self) -> Checking: ...

    def problem_built(self, problem: Problem) -> None: ...

    # the session's signals the parts emit
    @property
    def batchReady(self) -> SignalInstance: ...
    @property
    def busyChanged(self) -> SignalInstance: ...
    @property
    def errorRaised(self) -> SignalInstance: ...
    @property
    def jacobianFailed(self) -> SignalInstance: ...
    @property
    def jacobianProgress(self) -> SignalInstance: ...
    @property
    def jacobianReady(self) -> SignalInstance: ...
    @property
    def secondOrderReady(self) -> SignalInstance: ...
    @property
    def jacobianStarted(self) -> SignalInstance: ...
    @property
    def jacobianRunningAt(self) -> SignalInstance: ...
    @property
    def loopStarted(self) -> SignalInstance: ...
    @property
    def notice(self) -> SignalInstance: ...
    @property
    def runNotice(self) -> SignalInstance: ...
    @property
    def runReset(self) -> SignalInstance: ...
    @property
    def runningChanged(self) -> SignalInstance: ...
    @property
    def settingsChanged(self) -> SignalInstance: ...
    @property
    def specsChanged(self) -> SignalInstance: ...
    @property
    def targetChanged(self) -> SignalInstance: ...
