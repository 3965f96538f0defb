"""Second order drawn like the first: the Jacobian of backward's outputs with respect to its
inputs and grad_output, analytic (autograd through the user's backward) against finite
differences of backward, compared, reported and diagnosed by the first-order machinery.

This is gradgradcheck's check: it runs gradcheck on the function (inputs, grad_outputs) ->
gradients, with grad_outputs drawn at random. Here that function becomes a Function of its
own (:func:`backward_as_function`) whose forward is the user's backward, run with
``create_graph``, and whose backward differentiates that graph; the first-order
:func:`customgrad.checking.jacobian.compare` then checks it as it checks any Function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from torch.autograd import Function

from customgrad.checking.backward_function import backward_as_function, once_differentiable
from customgrad.errors import FunctionError, SpecError
from customgrad.function.inputs import forward_parameters, with_defaults

if TYPE_CHECKING:
    from customgrad.checking.jacobian.report import Report

#: the most entries of a second-order matrix :func:`beside` draws without being asked: the
#: app computes it after every first-order check, once that verdict is shown (20,000
#: entries, about 100 inputs: 0.2-0.8 s on a shared 2-core machine; the gallery's are 1,000
#: to 3,500, 0.1-0.3 s)
DRAWN_ENTRIES = 20_000




def double_backward_report(function: type[Function], args: list, *,
                           positions: list[int] | None = None,
                           differentiate: Mapping[str, bool] | None = None,
                           diagnose: bool = True, **options):
    """The first-order report of ``function``'s backward (see the module's docstring):
    blocks d grad_x / d x and d grad_x / d grad_output, its worst entry, verdict and (when
    it fails and ``diagnose``) diagnoses. ``positions`` (or ``differentiate``, by parameter
    name) chooses the inputs as the first order does; ``options`` go to
    :func:`customgrad.checking.jacobian.compare`."""
    from customgrad.checking.jacobian.probe import differentiated_inputs
    from customgrad.checking.verification import CheckOptions, verify

    args = with_defaults(function, args)
    if positions is None:
        params = [p.name for p in forward_parameters(function)]
        positions, _ = differentiated_inputs(function, args, params, [], differentiate)
    wrapper, wrapper_args, which = backward_as_function(function, args, positions)
    hooks = {k: options.pop(k) for k in ("progress", "should_stop", "allocate") if k in options}
    # no sub-checks: this is the double_backward sub-check's own report
    checked = CheckOptions(**options, differentiate=which, checks=frozenset(), diagnose=diagnose)
    try:
        report = verify(wrapper, wrapper_args, checked, **hooks)
    except FunctionError as exc:
        raise FunctionError(f"{function.__name__}'s backward could not be differentiated "
                            f"(double backward): {exc}", details=exc.details,
                            phase="backward") from None
    # the notes speak of the Function checked, whose backward is the double backward; so do
    # the diagnoses (not "F.backward.backward")
    return dataclasses.replace(
        report, notes=[f"double {n}" if n.startswith("backward ") else n for n in report.notes],
        diagnoses=[dataclasses.replace(d, detail=d.detail.replace(
            f"{wrapper.__name__}.backward", f"{function.__name__}'s double backward"))
            for d in report.diagnoses])


def double_backward_json(problem, checks: Mapping) -> dict:
    """``check --double --json``'s ``double_backward`` (nothing where ``checks``, the
    sub-checks run, has none): the sub-check's verdict (gradgradcheck's) and message, with the
    second-order report's keys where double backward is supported."""
    check = checks.get("double_backward")
    if check is None:
        return {}
    data = {"supported": check.status != "skipped", "passed": check.passed,
            "message": check.detail}
    if data["supported"]:
        s = problem.settings
        report = double_backward_report(problem.function, problem.args, eps=s.eps, atol=s.atol,
                                        rtol=s.rtol, memory_cap=s.memory_cap,
                                        differentiate=s.differentiate)
        data.update((k, v) for k, v in report.to_dict().items() if k != "passed")
    return {"double_backward": data}


def beside(report: Report, function: type, args: list, *,
           asked: bool = False) -> tuple[Report | None, str]:
    """The second-order report that goes with the first-order ``report`` (checked at
    ``args``, with its inputs and tolerances), and ""; or None and why it is not drawn: a
    backward marked @once_differentiable (gradgradcheck refuses it too), more than
    :data:`DRAWN_ENTRIES` entries unless ``asked``, or the double backward raised. A
    backward autograd cannot differentiate (it leaves torch) fails, as in gradgradcheck."""
    positions = [a.position for a in report.inputs]
    if not positions:
        return None, "nothing is differentiated: no backward to differentiate."
    rows = sum(a.size for a in report.inputs)
    entries = rows * (rows + sum(a.size for a in report.outputs))
    if once_differentiable(function):
        return None, f"{function.__name__}.backward is marked @once_differentiable: no " \
            "double backward."
    if entries > DRAWN_ENTRIES and not asked:
        return None, (f"not computed: {entries:,} entries (over {DRAWN_ENTRIES:,}); "
                      "check with second order shown to compute it.")
    try:
        second = double_backward_report(function, args, positions=positions, eps=report.eps,
                                        atol=report.atol, rtol=report.rtol)
    except (FunctionError, SpecError) as exc:
        return None, str(exc)
    except Exception as exc:  # the user's forward or backward, outside the checked calls
        return None, f"double backward could not run: {type(exc).__name__}: {exc}"
    return second, ""
