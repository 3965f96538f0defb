"""The gallery: example Functions with the defaults their lessons use, from the classics
(classic), the seed script's (seeds) and Functions with a bug to find (bugs) to torch.library
ops (op_sin, op_sin_bug); what an entry is, in entry."""

import torch

from customgrad.targets.gallery.bugs import (
    ComplexMulBuggy,
    KillHeadBuggy,
    LinearFunctionBuggy,
    MulConstantBuggy,
    SigmoidBuggy,
    SoftmaxBuggy,
    SomethingBuggy,
)
from customgrad.targets.gallery.classic import (
    ComplexMul,
    Cube,
    Exp,
    NumpyTanh,
    ReluInplace,
    Sigmoid,
    SignSTE,
    SinCos,
    Softmax,
    Sort,
)
from customgrad.targets.gallery.entry import GalleryEntry
from customgrad.targets.gallery.seeds import (
    FunctionalLinear,
    KillHead,
    LinearFunction,
    MulConstant,
    MulConstantNoMaterialize,
    MyOwnLayer,
    Something,
)

__all__ = ["ENTRIES", "MyOwnLayer"]

SEEDS: list[GalleryEntry] = [
    GalleryEntry(
        name="killhead",
        title="KillHead",
        category="seed",
        function=KillHead,
        note=(
            "Zeroes the first n columns (EE-559, lecture 5.7). n is a plain int, so it is "
            "stored directly on ctx (ctx.n = n) and its gradient is None. The zeroed columns "
            "do not depend on the input, so backward zeroes the same columns of grad_output."
        ),
        shapes={"input": (3, 8)},
        constants={"n": 2},
        init={"input": "normal"},
        trained=("input",),
    ),
    GalleryEntry(
        name="abs_uv",
        title="|u v| (the seed's Something)",
        category="seed",
        function=Something,
        note=(
            "Two tensor inputs, so backward returns two gradients, in the order of forward's "
            "arguments. Both inputs are needed by backward, so forward keeps them with "
            "ctx.save_for_backward (the seed read them back with ctx.saved_variables, the old "
            "name of ctx.saved_tensors). |uv| has a kink where u or v is 0: keep samples away."
        ),
        shapes={"input1": (3, 8), "input2": (3, 8)},
        init={"input1": "normal", "input2": "normal"},
    ),
    GalleryEntry(
        name="functional_linear",
        title="FunctionalLinear",
        category="seed",
        function=FunctionalLinear,
        note=(
            "A linear layer written by broadcasting (multiply, then sum) instead of mm; the "
            "MyOwnLayer module of the same notes uses it. Its weight and bias gradients keep a "
            "batch dimension ([N, out, in] and [N, out]) that autograd sums away to the "
            "parameter's shape. Backward is marked once_differentiable, so a double backward "
            "raises an error instead of silently giving wrong numbers."
        ),
        shapes={"input": (3, 4), "weight": (5, 4), "bias": (5,)},
        init={"input": "normal", "weight": "uniform(-0.5,0.5)", "bias": "uniform(-0.5,0.5)"},
        trained=("weight", "bias"),
    ),
    GalleryEntry(
        name="linear",
        title="LinearFunction",
        category="seed",
        function=LinearFunction,
        note=(
            "The linear layer of the PyTorch docs, input @ weight.T + bias, one gradient per "
            "input. The ctx.needs_input_grad checks skip gradients nobody asked for, and the "
            "optional bias (default None) simply gets a None gradient when absent. bias is "
            "broadcast over the batch, so its gradient is grad_output summed over dimension 0."
        ),
        shapes={"input": (3, 4), "weight": (5, 4), "bias": (5,)},
        init={"input": "normal", "weight": "uniform(-0.5,0.5)", "bias": "uniform(-0.5,0.5)"},
        trained=("weight", "bias"),
    ),
    GalleryEntry(
        name="mulconstant",
        title="MulConstant",
        category="seed",
        function=MulConstant,
        note=(
            "A non-tensor argument: the constant is a plain number stashed on ctx, not saved "
            "with save_for_backward. backward must still return one value per forward "
            "argument, so the constant's gradient is None."
        ),
        shapes={"tensor": (3, 8)},
        constants={"constant": 2.5},
    ),
    GalleryEntry(
        name="mulconstant_nomat",
        title="MulConstant with set_materialize_grads(False)",
        category="seed",
        function=MulConstantNoMaterialize,
        note=(
            "After ctx.set_materialize_grads(False), autograd no longer turns a missing output "
            "gradient into a tensor of zeros: backward may receive None and must handle it "
            "(here by returning None, None). That saves allocating and multiplying zeros; "
            "the Jacobian is the same as MulConstant's."
        ),
        shapes={"tensor": (3, 8)},
        constants={"constant": 2.5},
    ),
]

CLASSICS: list[GalleryEntry] = [
    GalleryEntry(
        name="exp",
        title="Exp (saves its output)",
        category="classic",
        function=Exp,
        note=(
            "d/dx exp(x) = exp(x), so the output is exactly what backward needs: forward "
            "passes its result, not its input, to ctx.save_for_backward. Outputs may be "
            "saved just like inputs, and nothing is recomputed in backward."
        ),
        shapes={"x": (3, 8)},
        init={"x": "uniform(-1,1)"},
    ),
    GalleryEntry(
        name="sigmoid",
        title="Sigmoid (saves its output)",
        category="classic",
        function=Sigmoid,
        note=(
            "The sigmoid's derivative y (1 - y) is written with its output y, so saving y "
            "is enough. backward multiplies that local derivative by grad_output: the "
            "chain rule."
        ),
        shapes={"x": (3, 8)},
    ),
    GalleryEntry(
        name="sincos",
        title="SinCos (two outputs)",
        category="classic",
        function=SinCos,
        note=(
            "forward returns two tensors, so backward receives two gradients, one per "
            "output and in the same order. Both outputs depend on x, so their contributions "
            "add up: cos(x) * grad_sin - sin(x) * grad_cos."
        ),
        shapes={"x": (3, 8)},
    ),
    GalleryEntry(
        name="sort",
        title="Sort (non-differentiable indices)",
        category="classic",
        function=Sort,
        note=(
            "Sort returns the values and their integer indices; "
            "ctx.mark_non_differentiable(indices) declares that the indices carry no "
            "gradient. backward still receives an argument for them, ignores it, and "
            "scatters the values' gradient back to where each value came from. Ties are "
            "kinks: check it with distinct values."
        ),
        shapes={"x": (3, 6)},
    ),
    GalleryEntry(
        name="relu_inplace",
        title="ReLU in place (mark_dirty)",
        category="classic",
        function=ReluInplace,
        note=(
            "forward overwrites its input (x.clamp_) and declares it with ctx.mark_dirty(x), "
            "returning that same tensor. Autograd refuses in-place changes to a leaf that "
            "requires grad, so the input must be a non-leaf: callers pass a clone, as in "
            "ReluInplace.apply(x.clone()). Keep samples away from the kink at 0."
        ),
        shapes={"x": (3, 8)},
    ),
    GalleryEntry(
        name="numpy_tanh",
        title="Tanh in NumPy",
        category="classic",
        function=NumpyTanh,
        note=(
            "forward and backward leave torch for NumPy (detach, cpu, numpy) and come back "
            "with torch.from_numpy(...).to(x), which restores dtype and device. Autograd "
            "cannot see inside NumPy, so backward is marked once_differentiable: a double "
            "backward raises an error instead of returning wrong numbers."
        ),
        shapes={"x": (3, 8)},
    ),
    GalleryEntry(
        name="cube_newstyle",
        title="Cube (new style: setup_context, vmap)",
        category="classic",
        function=Cube,
        note=(
            "The new style splits forward(x), which gets no ctx, from "
            "setup_context(ctx, inputs, output), which saves what backward needs. With "
            "generate_vmap_rule = True it works under torch.func (vmap, jacrev, grad). "
            "backward uses ordinary differentiable torch ops, so double backward "
            "(gradgradcheck) works too."
        ),
        shapes={"x": (3, 8)},
        init={"x": "uniform(-1,1)"},
    ),
    GalleryEntry(
        name="softmax",
        title="Softmax (coupled outputs)",
        category="classic",
        function=Softmax,
        note=(
            "Each output of a row depends on every input of that row, so the Jacobian is "
            "not diagonal: dy_i/dx_j = y_i (delta_ij - y_j). backward never builds that "
            "matrix; it computes the vector-Jacobian product y * (g - sum(g * y)) from the "
            "saved output."
        ),
        shapes={"x": (3, 5)},
    ),
    GalleryEntry(
        name="ste_sign",
        title="Sign, straight-through",
        category="classic",
        function=SignSTE,
        note=(
            "sign(x) is flat almost everywhere: its true derivative, and the numerical "
            "Jacobian, is 0, so no gradient would ever reach x. The straight-through "
            "estimator's backward pretends sign was the identity (for |x| <= 1), so its "
            "analytic Jacobian deliberately differs from the numerical one and gradcheck "
            "fails on purpose: a training trick, not a bug."
        ),
        shapes={"x": (3, 8)},
        init={"x": "uniform(-1,1)"},
        correct=False,
    ),
    GalleryEntry(
        name="complex_mul",
        title="z * w (complex)",
        category="classic",
        function=ComplexMul,
        note=(
            "Complex inputs (drawn complex at the chosen precision). For a real loss L, "
            "PyTorch's gradient is dL/dx + i dL/dy, which for a holomorphic f makes "
            "grad_input = grad_output * conj(df/dz): here conj(w) for z and conj(z) for w. "
            "The check perturbs real and imaginary parts one at a time, as gradcheck: the "
            "heatmaps show each part."
        ),
        shapes={"z": (3, 4), "w": (3, 4)},
        complex=True,
    ),
]

BUGS: list[GalleryEntry] = [
    GalleryEntry(
        name="killhead_bug",
        title="KillHead (find the bug)",
        category="find-the-bug",
        function=KillHeadBuggy,
        note=(
            "Hint: look at the first n columns of both Jacobians. Does nudging input[:, 0] "
            "change the output at all?"
        ),
        shapes={"input": (3, 8)},
        constants={"n": 2},
        init={"input": "normal"},
        trained=("input",),
        twin_of="killhead",
        correct=False,
    ),
    GalleryEntry(
        name="mulconstant_bug",
        title="MulConstant (find the bug)",
        category="find-the-bug",
        function=MulConstantBuggy,
        note=(
            "Hint: change the constant and watch both Jacobians. The numerical one follows "
            "it; does the analytic one?"
        ),
        shapes={"tensor": (3, 8)},
        constants={"constant": 2.5},
        twin_of="mulconstant",
        correct=False,
    ),
    GalleryEntry(
        name="abs_uv_bug",
        title="|u v| (find the bug)",
        category="find-the-bug",
        function=SomethingBuggy,
        note=(
            "Hint: compare the analytic Jacobian for input1 with the numerical one for "
            "input2. Each gradient must be the derivative with respect to its own argument."
        ),
        shapes={"input1": (3, 8), "input2": (3, 8)},
        init={"input1": "normal", "input2": "normal"},
        twin_of="abs_uv",
        correct=False,
    ),
    GalleryEntry(
        name="linear_bug",
        title="LinearFunction (find the bug)",
        category="find-the-bug",
        function=LinearFunctionBuggy,
        note=(
            "Hint: only one of the three gradients is wrong. The default weight is square; "
            "try a non-square one and see which gradient torch complains about."
        ),
        shapes={"input": (3, 4), "weight": (4, 4), "bias": (4,)},
        init={"input": "normal", "weight": "uniform(-0.5,0.5)", "bias": "uniform(-0.5,0.5)"},
        trained=("weight", "bias"),
        twin_of="linear",
        correct=False,
    ),
    GalleryEntry(
        name="softmax_bug",
        title="Softmax (find the bug)",
        category="find-the-bug",
        function=SoftmaxBuggy,
        note=(
            "Hint: the two Jacobians agree in some entries and differ in others. Which "
            "ones, and which inputs does each output of a row really depend on?"
        ),
        shapes={"x": (3, 5)},
        twin_of="softmax",
        correct=False,
    ),
    GalleryEntry(
        name="sigmoid_bug",
        title="Sigmoid (find the bug)",
        category="find-the-bug",
        function=SigmoidBuggy,
        note=(
            "Hint: scale the loss by 2, or feed backward another grad_output. Do the "
            "gradients change the way the chain rule says they should?"
        ),
        shapes={"x": (3, 8)},
        twin_of="sigmoid",
        correct=False,
    ),    GalleryEntry(
        name="complex_mul_bug",
        title="z * w, complex (find the bug)",
        category="find-the-bug",
        function=ComplexMulBuggy,
        note=(
            "Hint: the entries that mix the parts (d output.imag / d z.real) have the wrong "
            "sign; those within one part agree. The derivative of z * w with respect to z "
            "is w: what does PyTorch's backward return for a complex input?"
        ),
        shapes={"z": (3, 4), "w": (3, 4)},
        complex=True,
        twin_of="complex_mul",
        correct=False,
    ),
]

def _custom_ops() -> list[GalleryEntry]:
    """The torch.library custom-op pair (torch 2.4 and newer: torch.library.custom_op)."""
    if not hasattr(torch.library, "custom_op"):
        return []
    from customgrad.function.customop import function_for_op
    from customgrad.targets.gallery import op_sin, op_sin_bug

    return [
        GalleryEntry(
            name="sin_op",
            title="sin as a torch.library custom op",
            category="classic",
            function=function_for_op(op_sin.sin, source=op_sin),
            note=(
                "Not a Function class but an op: torch.library.custom_op defines it, "
                "register_autograd gives it a derivative (setup_context saves x, backward "
                "multiplies grad_output by cos x). The playground checks it like a Function; "
                "torch.library.opcheck's own tests run as sub-checks."
            ),
            shapes={"x": (3, 8)},
        ),
        GalleryEntry(
            name="sin_op_bug",
            title="sin custom op (find the bug)",
            category="find-the-bug",
            function=function_for_op(op_sin_bug.sin_bug, source=op_sin_bug),
            note=(
                "Hint: torch.library.opcheck passes this op (run --checks opcheck). Compare "
                "the two Jacobians entry by entry: how far apart are they, and is it the "
                "same everywhere?"
            ),
            shapes={"x": (3, 8)},
            twin_of="sin_op",
            correct=False,
        ),
    ]


ENTRIES: list[GalleryEntry] = SEEDS + CLASSICS + BUGS + _custom_ops()
