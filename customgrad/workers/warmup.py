"""Imported by the fork server (:data:`customgrad.workers.processes.PRELOAD`): the lazy imports a
job triggers are made here once, so that no child pays for them again. The first Jacobian
check of a process imports functorch, sympy (through torch's symbolic shapes) and more:
about half a second, which every worker process would otherwise spend on every check."""

from __future__ import annotations


def _warm() -> None:
    """One small check of a correct and a buggy gallery Function, their sub-checks and a
    descent step: what a worker process's jobs call first."""
    from customgrad.checking.verification import verify
    from customgrad.problems.problem import build
    from customgrad.problems.settings import Settings

    for name in ("killhead", "killhead_bug"):
        problem = build(Settings(target=name, shapes={"input": "2x3"}, dtype="float64"))
        verify(problem.function, problem.args, problem.check_options())
    problem.descent().step()


try:
    _warm()
except Exception:  # a fork server that cannot warm up still serves: its children warm
    pass
