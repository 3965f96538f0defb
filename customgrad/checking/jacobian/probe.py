"""The probe: one real ``apply`` and one raw ``backward`` before any matrix entry.

It finds which arguments are differentiated (the Jacobian's columns) and which outputs (its
rows), reports contract errors early (wrong gradient count, shape or dtype), and finds the
graph node whose ``backward`` the analytic pass calls directly. The forward helpers here serve
the numerical pass: ``forward`` called directly (a few microseconds) when it reproduces
``apply`` (tens), and whether it writes into its inputs, so each call needs copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch.autograd import Function

from customgrad.checking.findings import SubCheck
from customgrad.checking.jacobian.report import Axis
from customgrad.errors import FunctionError, SpecError
from customgrad.function.closures import closure_read
from customgrad.function.contract import (
    NOT_A_TENSOR,
    FakeCtx,
    call_backward,
    check_gradients,
    grad_mutation_note,
    method_line,
    normalize_outputs,
    return_line,
    run_user,
    source_file,
    write_site,
)
from customgrad.function.dtypes import differentiable
from customgrad.function.inputs import is_new_style


@dataclass
class Probe:
    """What one real call of the Function showed."""

    function: type[Function]
    args: list
    params: list[str]  # forward's parameter names
    new_style: bool  # forward takes no ctx (a setup_context Function)
    in_pos: list[int]  # the differentiated arguments, by position
    leaves: dict[int, torch.Tensor]  # their detached copies (requires_grad), by position
    out_all: tuple  # every output of the probing apply
    out_pos: list[int]  # the differentiated outputs, by position
    outputs: list[Axis]  # the matrix's rows
    inputs: list[Axis]  # its columns
    node: object | None  # the Function's graph node; None: rows go through the engine
    #: whether autograd hands backward zeros, not None, for the outputs a row does not seed
    #: (its default; ``ctx.set_materialize_grads(False)`` turns it off)
    materializes: bool = True
    #: what the probe's backward call showed that fails the check though every entry may
    #: agree (``saved_tensors``: backward wrote into a tensor forward saved), by name
    findings: dict[str, SubCheck] = field(default_factory=dict)
    #: whether backward writes into its grad_output (the rows give it a fresh one each call)
    writes_grads: bool = False
    #: how far two backward calls on the same graph may differ (gradcheck's nondet_tol)
    nondet_tol: float = 0.0
    #: the tensor arguments forward also reads through a callable argument's closure (a
    #: checkpoint's parameters), by position: the position of that callable
    #: (customgrad.function.closures). They are the caller's own tensors, never copied: a
    #: copy is not what the closure reads. Each call gets them as they are (their leaf is
    #: the tensor itself), and finite differences write into them in place, as gradcheck's
    #: do (the caller's ``lent`` puts them back).
    read_through: dict[int, int] = field(default_factory=dict)
    #: the inputs nobody chose that backward returns None for: constants, not checked
    returns_none: list[str] = field(default_factory=list)
    #: ids of the tensors :meth:`copies` hands on as they are: the caller's tensors read
    #: through a closure, and the base point's aliases of them
    kept_ids: set[int] = field(default_factory=set)

    def copies(self, base: list) -> list:
        """``base`` with a copy of each tensor argument (a forward working in place on one,
        differentiated or not, must not change the next call's), but the caller's tensors
        read through a closure."""
        kept = self.kept_ids
        return [a if id(a) in kept else _copy(a) for a in base]

    def leaf_call(self) -> list:
        """Arguments for ``apply`` on the graph: a copy of each leaf and of each other tensor,
        the constants as given (a tensor read through a closure: itself)."""
        return [a if i in self.read_through else
                self.leaves[i].clone() if i in self.leaves else _copy(a)
                for i, a in enumerate(self.args)]

    def forward_plain(self, call: list) -> tuple:
        """``apply`` without a graph, through the user-code boundary."""
        fn = self.function
        with torch.no_grad():
            raw = run_user(fn, "forward", lambda: fn.apply(*call))
        return normalize_outputs(fn, raw)

    def forward_direct(self, call: list):
        """``forward`` itself, with a stand-in ctx for old-style Functions."""
        fn = self.function
        with torch.no_grad():
            raw = fn.forward(*call) if self.new_style else fn.forward(FakeCtx(), *call)
        return raw if isinstance(raw, (tuple, list)) else (raw,)

    def zero_grad(self, out: torch.Tensor):
        """The gradient handed to backward for an output nobody differentiates."""
        if not differentiable(out):
            return None
        return torch.zeros_like(out) if self.materializes else None


def run_probe(function: type[Function], args: list, params: list[str], notes: list[str],
              differentiate: Mapping[str, bool] | None = None,
              nondet_tol: float = 0.0, read: dict[int, int] | None = None) -> Probe:
    """Call the Function once through ``apply`` (and its backward once, raw); raise SpecError
    or FunctionError for what no comparison can start from; explain the rest in ``notes``.

    ``differentiate`` chooses the inputs as gradcheck's ``requires_grad`` does (see
    :func:`differentiated_inputs`); an input nobody chose that backward returns None for is
    then a constant, with a note. ``nondet_tol``: how far two backward calls on the same
    graph may differ (gradcheck's; 0: not at all), else the ``reentrant`` finding.
    ``read``: :func:`~customgrad.function.closures.closure_read` of ``args``, where the caller
    has it (found here otherwise); those tensors are the caller's, which it lends
    (:func:`~customgrad.function.closures.lent`)."""
    in_pos, chosen = differentiated_inputs(function, args, params, notes, differentiate)
    read = _read_through(args, params, in_pos, notes, read)
    leaves = {i: args[i] if i in read else args[i].detach().clone().requires_grad_()
              for i in in_pos}
    # (a tensor read through a closure is the caller's: written is a new version holding
    # other values; a copy's version starts at 0)
    versions = {i: (args[i]._version, args[i].detach().clone()) for i in read if i in in_pos}
    call = [args[i] if i in read else leaves[i].clone() if i in leaves else _copy(a)
            for i, a in enumerate(args)]
    outs = normalize_outputs(function, run_user(function, "forward",
                                                lambda: function.apply(*call)))
    out_pos = _differentiated_outputs(function, outs, notes)
    node = outs[out_pos[0]].grad_fn
    node = node if getattr(node, "_forward_cls", None) is function else None
    probe = Probe(function, args, params, is_new_style(function), in_pos, leaves, outs,
                  out_pos, [], [], node, nondet_tol=nondet_tol, read_through=read,
                  kept_ids={id(args[i]) for i in read})
    if node is not None:
        # (before backward's writes)
        written_inputs = _inputs_written(probe, call, outs, versions)
        gen = torch.Generator().manual_seed(0)
        grads = [torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device)
                 if k in out_pos else probe.zero_grad(o) for k, o in enumerate(outs)]
        saved = _saved_versions(node)
        wanted = [t.requires_grad for t, _ in saved]
        # (copies: a backward writing into its grad_output, passed as in gradcheck, must not
        # change the grads the sub-checks call it with again)
        written_grads: list[int] = []
        raw_grads = call_backward(function, node, _grad_copies(grads), written_grads)
        if written_grads:
            probe.writes_grads = True
            probe.findings["grad_output"] = SubCheck("grad_output", "failed", grad_mutation_note(
                function, written_grads[0], len(grads)))
        raw_grads = raw_grads if isinstance(raw_grads, tuple) else (raw_grads,)
        unused = [] if chosen else [i for i in in_pos
                                    if i >= len(raw_grads) or raw_grads[i] is None]
        if len(unused) < len(in_pos) and unused:
            needed = _needs_grad(function, args, in_pos, unused, out_pos)
            unused = [i for i in unused if i not in needed]
        dropped = [params[i] for i in unused] if len(unused) < len(in_pos) else []
        notes.extend(n.text for n in check_gradients(function, params, args, raw_grads)
                     if not (n.kind == "none" and n.param in dropped))
        for name in dropped:
            notes.append(f"{name}: backward returns None; treated as not differentiated.")
            del leaves[params.index(name)]
        probe.returns_none = dropped
        probe.in_pos = in_pos = [i for i in in_pos if params[i] not in dropped]
        probe.materializes = _materializes(probe)
        written_inputs = [i for i in written_inputs
                          if i < len(raw_grads) and raw_grads[i] is not None]
        if written_inputs:
            probe.findings["input_written"] = _input_write(probe, written_inputs)
        written = [k for k, (t, v) in enumerate(saved) if t._version != v]
        detached = [k for k, (t, _) in enumerate(saved) if wanted[k] and not t.requires_grad]
        if written:
            probe.findings["saved_tensors"] = _saved_write(probe, grads, written)
        elif detached:
            probe.findings["saved_tensors"] = _saved_detach(probe, grads, detached, len(saved))
        else:
            _reentrant(probe, grads, raw_grads, nondet_tol)
    else:
        notes.append(
            "a torch.library op: every row goes through the autograd engine (the op's "
            "registered backward)." if vars(function).get("__custom_op__") is not None else
            "the output's graph node is not the Function's own, so every "
            "row goes through the autograd engine.")
    probe.outputs = _lay_out([(output_name(k, len(outs), function), k, outs[k])
                              for k in out_pos])
    probe.inputs = _lay_out([(params[i], i, args[i]) for i in in_pos])
    return probe


def _read_through(args: list, params: list[str], in_pos: list[int], notes: list[str],
                  read: dict[int, int] | None) -> dict[int, int]:
    """The tensor arguments forward also reads through a callable argument (by position: the
    callable's), with a note naming them; those differentiated made to require grad (as a
    caller hands them to gradcheck: a checkpoint's backward takes ``autograd.grad`` over
    them), which the caller's ``lent`` undoes."""
    read = closure_read(args) if read is None else read
    for i, k in read.items():
        if i in in_pos and not args[i].requires_grad:
            args[i].requires_grad_()
        notes.append(f"{params[i]} is also read through {params[k]} (its closure, module or "
                     "partial): the check uses the caller's tensor itself, as gradcheck does, "
                     "writes its finite differences into it and puts it back exactly.")
    return read


def _needs_grad(function: type[Function], args: list, in_pos: list[int], unused: list[int],
                out_pos: list[int]) -> list[int]:
    """``unused`` (inputs backward returned None for, none chosen) where backward raises once
    they are constants, else none: a backward taking ``autograd.grad`` over them (a
    checkpoint's parameters, which its function reads through a closure) needs them to
    require grad ("One of the differentiated Tensors does not require grad"), as a caller
    passes them to gradcheck, so they stay differentiated. One more forward and backward,
    only where an input would become a constant."""
    read = closure_read(args)
    leaves = [args[i] if i in read else args[i].detach().clone().requires_grad_()
              for i in in_pos if i not in unused]
    taken = iter(leaves)
    call = [next(taken) if i in read and i in in_pos and i not in unused
            else next(taken).clone() if i in in_pos and i not in unused
            else a if i in read else _copy(a) for i, a in enumerate(args)]
    try:
        outs = normalize_outputs(function, function.apply(*call))
        diff = [outs[k] for k in out_pos if outs[k].requires_grad]
        torch.autograd.grad(diff, leaves, [torch.ones_like(o) for o in diff], allow_unused=True)
    except Exception:  # the user's code: whatever it raises there, it needs them
        return unused
    return []


def _inputs_written(probe: Probe, call: list, outs: tuple,
                    versions: Mapping[int, tuple[int, torch.Tensor]]) -> list[int]:
    """The differentiated inputs forward wrote into (a version bump, or a numpy write the
    version counter never sees) and did not return: not ``mark_dirty``'s pattern, which
    returns the changed tensor. ``call`` holds fresh copies of the leaves, but the caller's
    tensors read through a closure, whose ``versions`` and values before the call are given
    (written: both changed). (The
    caller keeps those whose gradient backward returns: a buffer it returns None for,
    updated in forward as a running mean is, changes no output gradcheck differences.)"""
    shared = {o.untyped_storage().data_ptr() for o in outs if isinstance(o, torch.Tensor)}
    return [i for i in probe.in_pos
            if (call[i]._version != versions[i][0] and not same_values(call[i], versions[i][1])
                if i in versions else written(call[i], probe.leaves[i].detach()))
            and call[i].untyped_storage().data_ptr() not in shared]


def _input_write(probe: Probe, written: list[int]) -> SubCheck:
    """The failed ``input_written`` finding: forward changes an input it does not return
    (the caller's tensor changes on every call), where (forward run once more on copies,
    watching them), as gradcheck fails it (its finite differences see the written input)."""
    fn = probe.function
    call = probe.leaf_call()
    file, line = write_site(fn, lambda: fn.apply(*call), [call[i] for i in written])
    if line is None:
        file, line = source_file(fn), method_line(fn, "forward")
    where = f" ({file}:{line})" if file and line else ""
    what = " and ".join(probe.params[i] for i in written)
    return SubCheck("input_written", "failed", (
        f"{fn.__name__}.forward writes in place into its input {what}{where} and does not "
        "return it: the caller's tensor changes on every call (a weight drifts, a second "
        "use of x sees another x; a tensor it saved raises in backward once written "
        "again), and gradcheck fails it. Compute on a copy (x = x.clone()), or return the "
        "changed tensor marked with ctx.mark_dirty(x)."))


def _saved_versions(node) -> list[tuple[torch.Tensor, int]]:
    """The tensors forward saved (``ctx.save_for_backward``) and their versions now: a
    backward that writes into one (``y.mul_(g)`` on a saved output, a version bump alone
    included) makes autograd raise when backward reads them again, as gradcheck's second
    row does. Empty where they cannot be read (what the backward call then says)."""
    try:
        saved = node.saved_tensors
    except Exception:
        return []
    return [(t, t._version) for t in saved if isinstance(t, torch.Tensor)]


def _reentrant(probe: Probe, grads: list, first: tuple, nondet_tol: float) -> None:
    """gradcheck's reentrancy check: backward called again on the same graph with the same
    grad_outputs must give the same gradients (within ``nondet_tol``, 0 by default: the
    same bits); else the failed ``reentrant`` finding. A backward with a little noise, or
    atomic adds in another order (scatter_add and index_add on a GPU), passed every entry
    within tolerance, where gradcheck fails it "not reentrant"."""
    fn = probe.function
    # (a copy: a backward returning a tensor it keeps on ctx and writes again, ``return
    # ctx.y.mul_(g)``, would change the first result with the second)
    first = tuple(g.detach().clone() if isinstance(g, torch.Tensor) else g for g in first)
    try:
        again = call_backward(fn, probe.node, _grad_copies(grads), [])
    except FunctionError as exc:  # (``del ctx.x`` after use, say)
        where = f" ({exc.file}:{exc.line})" if exc.file and exc.line else ""
        probe.findings["reentrant"] = SubCheck("reentrant", "failed", (
            f"{fn.__name__}.backward raises when called a second time on the same graph"
            f"{where}: {exc}. gradcheck calls it once per row, and raises too; so does "
            "a second backward with retain_graph=True. Keep what backward reads on ctx."))
        return
    again = again if isinstance(again, tuple) else (again,)
    gap, worst = 0.0, None
    for i in probe.in_pos:
        pair = [g[i] if i < len(g) else None for g in (first, again)]
        if pair[0] is None and pair[1] is None:
            continue
        like = next(g for g in pair if g is not None)
        a, b = (torch.zeros_like(like) if g is None else g.detach() for g in pair)
        if torch.equal(a, b):  # (the usual answer, in a few microseconds)
            continue
        if a.shape != b.shape:
            a, b = torch.broadcast_tensors(a, b)
        # as gradcheck's ``(j1 - j2).abs().max() > nondet_tol``: a NaN anywhere (NaN
        # against NaN, inf against inf) makes the maximum NaN, which is no gap
        d = float((a.to(b.dtype) - b).abs().max()) if b.numel() else 0.0
        if d > gap:
            gap, worst = d, probe.params[i]
    if gap > nondet_tol:
        probe.findings["reentrant"] = SubCheck("reentrant", "failed", (
            f"{fn.__name__}.backward is not reentrant: called twice on the same graph with "
            f"the same grad_outputs, it returns gradients of {worst} that differ by up to "
            f"{gap:.3g} (nondet_tol {nondet_tol:g}): its result depends on random numbers, "
            "on the order of atomic adds (a GPU), or on how often it ran (it writes into "
            "what it reads: a saved tensor through numpy, a tensor kept on ctx). gradcheck "
            "fails it too; where the gap is summation order, allow it: nondet_tol= above it "
            "(--nondet-tol on the command line)."))


def _saved_site(probe: Probe, grads: list, state=lambda t: t._version
                ) -> tuple[tuple[str | None, int | None], list, tuple, list, list]:
    """Where backward changes a saved tensor (its version: a write; its ``requires_grad``:
    a ``detach_()``): backward run once more, on a graph of its own, watching the saved
    tensors; the def line of backward where the change is not a torch call. Also that
    graph's call, outputs, saved tensors and their values before."""
    fn = probe.function
    call = probe.leaf_call()
    outs = normalize_outputs(fn, run_user(fn, "forward", lambda: fn.apply(*call)))
    node = outs[probe.out_pos[0]].grad_fn
    saved = [t for t, _ in _saved_versions(node)]
    before = [t.clone() for t in saved]

    def backward():
        with torch.no_grad():
            fn.backward(node, *[g.clone() if isinstance(g, torch.Tensor) else g
                                for g in grads])
    file, line = write_site(fn, backward, saved, state)
    if line is None:
        file, line = source_file(fn), method_line(fn, "backward")
    return (file, line), call, outs, saved, before


def _saved_write(probe: Probe, grads: list, written: list[int]) -> SubCheck:
    """The failed ``saved_tensors`` finding: which saved tensor backward wrote into, where,
    and whether it changed their values."""
    fn = probe.function
    (file, line), call, outs, saved, before = _saved_site(probe, grads)
    which = [k for k in written if k < len(saved)] or written
    what = " and ".join(_saved_name(probe, call, outs, saved[k]) if k < len(saved)
                        else f"saved_tensors[{k}]" for k in which)
    changed = any(k < len(saved) and not same_values(saved[k], before[k]) for k in which)
    where = f" ({file}:{line})" if file and line else ""
    return SubCheck("saved_tensors", "failed", (
        f"{fn.__name__}.backward writes in place into {what}, a tensor forward saved"
        f"{where}{', changing its values' if changed else ''}: autograd checks a saved tensor "
        "each time backward reads it, so a second backward through the graph "
        "(retain_graph=True, a double backward, gradcheck's second row) raises \"one of "
        "the variables needed for gradient computation has been modified by an inplace "
        "operation\". Compute on a copy (y * g, not y.mul_(g))."))


def _saved_detach(probe: Probe, grads: list, detached: list[int], count: int) -> SubCheck:
    """The failed ``saved_tensors`` finding for a backward that detached in place
    (``x.detach_()``, ``x.requires_grad_(False)``) a saved tensor that is the caller's
    input: that tensor no longer requires grad after backward. The line is the call's that
    cleared ``requires_grad`` (backward run again, watching it)."""
    fn = probe.function
    which = " and ".join("saved_tensors" if count == 1 else f"saved_tensors[{k}]"
                         for k in detached)
    (file, line), *_ = _saved_site(probe, grads, lambda t: t.requires_grad)
    where = f" ({file}:{line})" if file and line else ""
    return SubCheck("saved_tensors", "failed", (
        f"{fn.__name__}.backward detaches {which} in place (detach_ or requires_grad_(False))"
        f"{where}: a saved input is the caller's own tensor, which after one backward no "
        "longer requires grad (a weight stops learning; gradcheck's second row raises \"One "
        "of the differentiated Tensors does not require grad\"). Use x.detach(), a new "
        "tensor, not detach_()."))


def _saved_name(probe: Probe, call: list, outs: tuple, saved: torch.Tensor) -> str:
    """A saved tensor in words: the input or output it is (the same memory and shape),
    else its shape."""
    def same(t: object) -> bool:
        return (isinstance(t, torch.Tensor) and t is not NOT_A_TENSOR and t.numel() > 0
                and t.shape == saved.shape and t.layout == torch.strided
                and t.untyped_storage().data_ptr() == saved.untyped_storage().data_ptr())
    for i, a in enumerate(call):
        if same(a):
            return f"input {probe.params[i]}"
    for k, o in enumerate(outs):
        if same(o):
            return output_name(k, len(outs), probe.function)
    return f"a [{'x'.join(map(str, saved.shape)) or 'scalar'}] tensor"


def _materializes(probe: Probe) -> bool:
    """Whether autograd hands backward zeros (True) or None (after
    ``ctx.set_materialize_grads(False)``) for the outputs a row does not seed: gradcheck
    seeds one output at a time, so a backward that answers None for them otherwise (``if
    g_mean is None: return None``) is judged on what it does then. The node cannot be asked
    (the flag is write-only), so an output is seeded through the engine wherever backward
    answers zeros and None differently; where it cannot take None, zeros (the
    ``undefined_grad`` sub-check names that error)."""
    fn, outs = probe.function, probe.out_all
    leaves = [probe.leaves[i] for i in probe.in_pos]
    if len(outs) == 1 or not leaves:
        return True
    gen = torch.Generator().manual_seed(1)
    for k in probe.out_pos:
        g = torch.randn(outs[k].shape, generator=gen, dtype=outs[k].dtype).to(outs[k].device)
        seeded = [g if j == k else None for j in range(len(outs))]
        zeros = [torch.zeros_like(o) if j != k and differentiable(o) else seeded[j]
                 for j, o in enumerate(outs)]
        try:
            with_none, with_zeros = _direct_grads(probe, seeded), _direct_grads(probe, zeros)
        except Exception:  # the rows' own calls say what backward raised, where it did
            return True
        if _same_grads(with_none, with_zeros):
            continue
        engine = run_user(fn, "backward", lambda k=k, g=g: torch.autograd.grad(
            outs[k], leaves, g, retain_graph=True, allow_unused=True))
        return not _same_grads(engine, with_none)
    return True


def _direct_grads(probe: Probe, grads: list) -> list:
    """backward called directly on the node with ``grads``: the differentiated inputs'."""
    with torch.no_grad():
        raw = probe.function.backward(probe.node, *grads)
    raw = raw if isinstance(raw, tuple) else (raw,)
    return [raw[i] if i < len(raw) else None for i in probe.in_pos]


def _same_grads(first, second) -> bool:
    """The same gradients (None as zeros; to rounding, NaN equal to NaN)."""
    for a, b in zip(first, second):
        if a is None and b is None:
            continue
        a = torch.zeros_like(b) if a is None else a.detach()
        b = torch.zeros_like(a) if b is None else b.detach()
        if a.shape != b.shape or not torch.allclose(a.to(b.dtype), b, rtol=1e-10,
                                                    atol=1e-12, equal_nan=True):
            return False
    return True


def _copy(value: object) -> object:
    """A tensor's copy (forward may write into it); anything else as it is."""
    return value.clone() if isinstance(value, torch.Tensor) else value


def output_name(k: int, count: int, function: type | None = None) -> str:
    """Output ``k`` of ``count``'s name: ``output``/``output<k>``, unless ``function``
    names its outputs (``customgrad_output_names``, as the second order's Function does)."""
    names = vars(function).get("customgrad_output_names", ()) if function else ()
    if k < len(names):
        return names[k]
    return "output" if count == 1 else f"output{k}"


def differentiated_inputs(function: type[Function], args: list, params: list[str], notes: list[str],
                          differentiate: Mapping[str, bool] | None = None
                          ) -> tuple[list[int], bool]:
    """Positions of the arguments to differentiate, and whether they were chosen.

    As gradcheck's ``requires_grad``: where ``differentiate`` says True for any input, exactly
    those are (``chosen``); else every non-empty floating-point tensor but those it says False
    for. SpecError naming an unknown parameter, one that cannot be differentiated, or none."""
    differentiate = dict(differentiate or {})
    unknown = sorted(set(differentiate) - set(params))
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], params, n=1)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise SpecError(f"differentiate (--no-grad) given for {', '.join(unknown)}, but "
                        f"forward's parameters are {', '.join(params)}.{hint}",
                        field=unknown[0])
    floating = [i for i, a in enumerate(args)
                if isinstance(a, torch.Tensor) and differentiable(a) and a.numel()
                and a.layout == torch.strided]
    wanted = [params.index(n) for n, on in differentiate.items() if on]
    for i in wanted:
        if i not in floating:
            raise SpecError(f"{params[i]} cannot be differentiated: it is "
                            f"{_not_differentiable(args[i])}.", field=params[i])
    off = {n for n, on in differentiate.items() if not on}
    in_pos = sorted(wanted) if wanted else [i for i in floating if params[i] not in off]
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and not differentiable(a):
            notes.append(f"input {params[i]} ({str(a.dtype)[6:]}) is not "
                         "floating point: not differentiated.")
        elif isinstance(a, torch.Tensor) and not a.numel():
            notes.append(f"input {params[i]} is empty: not differentiated.")
        elif isinstance(a, torch.Tensor) and a.layout != torch.strided:
            notes.append(f"input {params[i]} is {_layout(a).split(':')[0]}: not "
                         "differentiated.")
        elif i in floating and i not in in_pos:
            notes.append(f"input {params[i]} is not differentiated (a constant here, as a "
                         "tensor that does not require grad is for gradcheck).")
    if not in_pos and floating:
        raise SpecError(f"{function.__name__}: every floating-point tensor input "
                        f"({', '.join(params[i] for i in floating)}) is left out; differentiate "
                        "at least one.", field=params[floating[0]])
    if not in_pos:
        raise SpecError(f"{function.__name__} has no floating-point tensor input (real or "
                        "complex) to differentiate; give at least one parameter a shape.")
    return in_pos, bool(wanted)


def _not_differentiable(a: object) -> str:
    """What ``a``, asked to be differentiated, is instead."""
    if not isinstance(a, torch.Tensor):
        return "not a tensor"
    if not a.numel():
        return "empty"
    if a.layout != torch.strided:
        return _layout(a)
    return f"{str(a.dtype)[6:]}, not floating point"


def _layout(a: torch.Tensor) -> str:
    """Why a sparse (or otherwise not strided) tensor is not differentiated."""
    layout = str(a.layout).removeprefix("torch.")
    return (f"a {layout} tensor: customgrad differentiates dense (strided) tensors only; "
            "pass its to_dense() to check its gradient, or keep it a constant "
            "(requires_grad=False)")


def _differentiated_outputs(function: type[Function], outs: tuple, notes: list[str]) -> list[int]:
    """Positions of the non-empty floating-point outputs on the graph (FunctionError if none,
    saying why of each)."""
    out_pos, first = [], len(notes)
    for k, out in enumerate(outs):
        oname = output_name(k, len(outs), function)
        if out is NOT_A_TENSOR:
            notes.append(f"{oname} is not a tensor: skipped.")
        elif not differentiable(out):
            notes.append(f"{oname} ({str(out.dtype)[6:]}) is not differentiable: skipped.")
        elif not out.requires_grad:
            notes.append(f"{oname} is marked non-differentiable (or does not depend on "
                         "any input): skipped.")
        elif not out.numel():
            notes.append(f"{oname} is empty: skipped.")
        else:
            out_pos.append(k)
        if differentiable(out) and not torch.isfinite(out).all():
            notes.append(f"{oname} contains NaN or Inf at this point.")
    if not out_pos:
        why = "; ".join(n.removesuffix(": skipped.").removesuffix(".") for n in notes[first:])
        raise FunctionError(f"{function.__name__} has no differentiable output to check "
                            f"({why}).", file=source_file(function),
                            line=return_line(function, "forward"), phase="forward")
    return out_pos


def _lay_out(named: list[tuple[str, int, torch.Tensor]]) -> list[Axis]:
    """Axes for (name, position, tensor) triples, one after the other along the matrix."""
    axes, offset = [], 0
    for name, position, tensor in named:
        axis = Axis(name, position, tuple(tensor.shape), offset, 2 if tensor.is_complex() else 1)
        axes.append(axis)
        offset += axis.size
    return axes


def chooses_direct(probe: Probe, base: list) -> bool:
    """True when calling ``forward`` directly reproduces ``apply`` at the base point."""
    reference = probe.forward_plain(probe.copies(base))
    try:
        direct = probe.forward_direct(probe.copies(base))
        return len(direct) == len(reference) and all(
            isinstance(d, torch.Tensor) and d.shape == r.shape
            and torch.equal(d.nan_to_num(), r.nan_to_num())
            for k, (d, r) in enumerate(zip(direct, reference)) if k in probe.out_pos)
    except Exception:
        return False


def mutates(probe: Probe, forward, base: list, notes: list[str]) -> bool:
    """True when forward changes its inputs in place (``mark_dirty``, a numpy write the
    version counter never sees) or returns a view of one: then each call gets copies. Asked
    on copies, so the base point stays as it is whatever forward does."""
    call = probe.copies(base)
    outs = forward(call)
    tensors = [i for i, a in enumerate(base) if isinstance(a, torch.Tensor)]
    modified = any(written(call[i], base[i]) for i in tensors)
    storages = {call[i].untyped_storage().data_ptr() for i in probe.in_pos}
    if any(isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
           for o in outs):
        notes.append("forward returns a view of its input: finite differences use copies.")
        return True
    if not modified:
        return False
    notes.append("forward modifies its input in place: finite differences use copies.")
    return True


def written(copy: torch.Tensor, original: torch.Tensor) -> bool:
    """``copy`` (a fresh copy of ``original`` handed to forward) was written in place: a
    version bump, or other values (a numpy write the version counter never sees)."""
    return bool(copy._version) or not same_values(copy, original)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` hold the same values (NaN where the other has NaN)."""
    if a.layout != torch.strided or b.layout != torch.strided:  # sparse: no torch.equal
        a, b = a.to_dense(), b.to_dense()
    return bool(torch.equal(a, b) or (differentiable(a) and a.shape == b.shape and
                                       torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)))


def _grad_copies(grads: list) -> list:
    """``grads`` with each tensor copied (backward may write into its grad_output)."""
    return [g.clone() if isinstance(g, torch.Tensor) else g for g in grads]
