"""Full analytic-vs-numerical Jacobian comparison of a custom autograd Function.

The analytic Jacobian comes from the Function's own ``backward`` (one vector-Jacobian product
per output element); the numerical one from central finite differences (two ``forward`` calls
per input element). Entries agree by gradcheck's rule ``|a - n| <= atol + rtol * |n|``.

Speed: both passes call ``forward``/``backward`` directly instead of through ``apply`` and the
autograd engine, which costs a few microseconds per call instead of tens. A few rows are
checked against the engine first; any disagreement switches to the engine for every row.

The modules, in the order :func:`compare` runs them:

- ``comparison``: :func:`compare` itself, the phases in order;
- ``probe``: one real call: the differentiated inputs and outputs, contract errors, the node;
- ``workspace``: the matrices (lazy zeros, memory cap), the tile grid, progress and cancel;
- ``numerical``: finite differences, batched with vmap or element by element;
- ``analytic``: backward rows (batched, direct, or through the engine), one-hot buffers;
- ``agreement``: the rule applied tile by tile into per-block statistics, the worst entry;
- ``report``: Axis, Entry, Block, Progress, Overview, Report and their text and JSON;
- ``tiles``, ``matrices``, ``limits``: the tile grid and zero-tile skipping, whole-matrix
  helpers in bounded memory, and the shared numbers (tests shrink the sizes there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

#: where each name lives: imported on first use (PEP 562), so that the window can import
#: ``report`` and ``limits`` (no torch) before torch, which ``comparison`` and the rest need
_WHERE = {
    "compare": "comparison", "estimate_bytes": "workspace",
    "ATOL": "limits", "EPS": "limits", "FLOAT32_FLOOR": "limits", "MEMORY_CAP": "limits",
    "RTOL": "limits",
    "agree": "matrices", "finite_absmax": "matrices", "pool_any": "matrices",
    "pool_signed": "matrices",
    "Axis": "report", "Block": "report", "Entry": "report", "Overview": "report",
    "Progress": "report", "Report": "report",
}

__all__ = ["ATOL", "EPS", "FLOAT32_FLOOR", "MEMORY_CAP", "RTOL", "Axis", "Block", "Entry",
           "Overview", "Progress", "Report", "agree", "compare", "estimate_bytes",
           "finite_absmax", "pool_any", "pool_signed"]

if TYPE_CHECKING:
    from customgrad.checking.jacobian.comparison import compare
    from customgrad.checking.jacobian.limits import ATOL, EPS, FLOAT32_FLOOR, MEMORY_CAP, RTOL
    from customgrad.checking.jacobian.matrices import agree, finite_absmax, pool_any, pool_signed
    from customgrad.checking.jacobian.report import Axis, Block, Entry, Overview, Progress, Report
    from customgrad.checking.jacobian.workspace import estimate_bytes


#: the submodules, read as attributes of the package (``jacobian.matrices``)
_MODULES = {"agreement", "analytic", "colouring", "comparison", "exact", "limits", "matrices",
            "numerical", "probe", "report", "tiles", "workspace"}


def __getattr__(name: str):
    from importlib import import_module

    if name in _MODULES:
        return import_module(f"{__name__}.{name}")
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
