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

from customgrad.checking.jacobian.comparison import compare
from customgrad.checking.jacobian.limits import ATOL, EPS, FLOAT32_FLOOR, MEMORY_CAP, RTOL
from customgrad.checking.jacobian.matrices import agree, finite_absmax, pool_any, pool_signed
from customgrad.checking.jacobian.report import Axis, Block, Entry, Overview, Progress, Report
from customgrad.checking.jacobian.workspace import estimate_bytes

__all__ = ["ATOL", "EPS", "FLOAT32_FLOOR", "MEMORY_CAP", "RTOL", "Axis", "Block", "Entry",
           "Overview", "Progress", "Report", "agree", "compare", "estimate_bytes",
           "finite_absmax", "pool_any", "pool_signed"]
