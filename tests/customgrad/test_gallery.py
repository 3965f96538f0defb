"""Tests of the gallery of example Functions (plain torch, no Qt)."""

import inspect
import itertools

import pytest
import torch
import torch.nn.functional as nnf
from torch.autograd.gradcheck import GradcheckError

from customgrad.problems.problem import build
from customgrad.problems.settings import Settings
from customgrad.targets.catalog import CATEGORIES, GalleryEntry
from customgrad.targets.gallery import ENTRIES, MyOwnLayer

BY_NAME = {e.name: e for e in ENTRIES}


def forward_params(entry: GalleryEntry) -> list[inspect.Parameter]:
    """forward's parameters without ctx (new-style forwards have none)."""
    params = list(inspect.signature(entry.function.forward).parameters.values())
    if params and params[0].name == "ctx":
        params = params[1:]
    return params


def kink_free(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """float64 values with magnitude in [0.2, 1] and random sign, pairwise distinct."""
    n = 1
    for s in shape:
        n *= s
    # Distinct magnitudes on a grid (step >= 0.8 / n, far above gradcheck's eps).
    mags = 0.2 + 0.8 * (torch.randperm(n, generator=gen, dtype=torch.float64) + 0.5) / n
    signs = torch.randint(0, 2, (n,), generator=gen, dtype=torch.float64) * 2 - 1
    return (mags * signs).reshape(shape)


def make_args(entry: GalleryEntry, seed: int = 0) -> tuple[list, list[int]]:
    """forward's arguments in signature order, and the positions of the tensors."""
    gen = torch.Generator().manual_seed(seed)
    args, tensor_pos = [], []
    for p in forward_params(entry):
        if p.name in entry.shapes:
            tensor_pos.append(len(args))
            value = kink_free(entry.shapes[p.name], gen)
            if entry.complex:
                value = torch.complex(value, kink_free(entry.shapes[p.name], gen))
            args.append(value.requires_grad_())
        elif p.name in entry.constants:
            args.append(entry.constants[p.name])
        else:
            assert p.default is not inspect.Parameter.empty, (entry.name, p.name)
            args.append(p.default)
    return args, tensor_pos


def make_fn(entry: GalleryEntry, args: list, tensor_pos: list[int]):
    """A function of the tensor inputs only, applying the entry's Function."""

    def fn(*tensors):
        full = list(args)
        for pos, t in zip(tensor_pos, tensors):
            # An in-place Function must not modify a leaf: hand it a clone.
            full[pos] = t.clone() if entry.name == "relu_inplace" else t
        return entry.function.apply(*full)

    return fn


# ---------------------------------------------------------------- catalogue


def test_entries_are_well_formed():
    assert len(ENTRIES) >= 15
    names = [e.name for e in ENTRIES]
    assert len(names) == len(set(names))
    for e in ENTRIES:
        assert isinstance(e, GalleryEntry)
        assert e.name == e.name.lower() and " " not in e.name
        assert e.title.strip()
        assert e.category in CATEGORIES
        assert e.note.strip()
        assert "class " in e.source or "@torch.library.custom_op" in e.source
        assert issubclass(e.function, torch.autograd.Function)
        assert (e.function.__doc__ or "").strip(), e.name
        if e.twin_of is not None:
            assert e.twin_of in BY_NAME
            twin = BY_NAME[e.twin_of]
            assert twin.correct and twin.category != "find-the-bug"
        if e.category == "find-the-bug":
            assert e.twin_of is not None and not e.correct
    assert {e.category for e in ENTRIES} == set(CATEGORIES)
    assert [e.name for e in ENTRIES if not e.correct and e.category != "find-the-bug"] == [
        "ste_sign"
    ]


def test_every_category_has_one_display_title():
    from customgrad.targets.catalog import CATEGORY_TITLES

    assert list(CATEGORY_TITLES) == list(CATEGORIES)
    titles = list(CATEGORY_TITLES.values())
    assert len(set(titles)) == len(titles) and all(t.strip() for t in titles)
    assert CATEGORY_TITLES["seed"] == "From the lessons"


def test_the_gallery_never_imports_the_catalog():
    """catalog reads the gallery; the gallery (entry type included) imports nothing back, not
    even lazily: no import cycle."""
    import grimp  # import-linter's graph builder, in the test extra

    graph = grimp.build_graph("customgrad", cache_dir=None)
    assert graph.find_shortest_chains(importer="customgrad.targets.gallery",
                                      imported="customgrad.targets.catalog") == set()
    assert graph.find_shortest_chain(importer="customgrad.targets.catalog",
                                     imported="customgrad.targets.gallery") is not None


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_gallery_entries_need_no_guessed_constants(entry: GalleryEntry):
    """The gallery gives every value its lesson uses: nothing is left to a probe."""
    problem = build(Settings(target=entry.name, dtype="float64"))
    assert problem.guesses == []


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_defaults_match_signature(entry: GalleryEntry):
    names = [p.name for p in forward_params(entry)]
    assert set(entry.shapes) <= set(names)
    assert set(entry.constants) <= set(names)
    assert not set(entry.shapes) & set(entry.constants)
    assert set(entry.init) <= set(entry.shapes)
    if entry.trained is not None:
        assert entry.trained and set(entry.trained) <= set(entry.shapes)
    for p in forward_params(entry):
        if p.name not in entry.shapes and p.name not in entry.constants:
            assert p.default is not inspect.Parameter.empty


def test_catalog_lookup():
    from customgrad.targets import catalog

    ordered = catalog.entries()
    assert sorted(e.name for e in ordered) == sorted(BY_NAME)
    assert catalog.get("KillHead").function is BY_NAME["killhead"].function
    with pytest.raises(catalog.TargetError):
        catalog.get("no-such-function")


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_runs_without_error(entry: GalleryEntry):
    args, pos = make_args(entry)
    fn = make_fn(entry, args, pos)
    tensors = [args[i] for i in pos]
    out = fn(*tensors)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum(o.abs().square().sum() if o.is_complex() else o.sum()
               for o in outs if o.requires_grad)
    grads = torch.autograd.grad(loss, tensors)
    for t, g in zip(tensors, grads):
        assert g.shape == t.shape


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_gradcheck_verdict(entry: GalleryEntry):
    args, pos = make_args(entry)
    fn = make_fn(entry, args, pos)
    tensors = tuple(args[i] for i in pos)
    ok = torch.autograd.gradcheck(fn, tensors, eps=1e-6, atol=1e-4, raise_exception=False)
    assert ok == entry.correct
    if not entry.correct:
        # Wrong numbers, not a crash: gradcheck reports a Jacobian mismatch.
        with pytest.raises(GradcheckError, match="Jacobian mismatch"):
            torch.autograd.gradcheck(fn, tensors, eps=1e-6, atol=1e-4)


def _killhead_ref(x, n=2):
    mask = torch.ones(x.shape[-1], dtype=x.dtype)
    mask[:n] = 0
    return x * mask


REFERENCES = {
    "killhead": lambda x: _killhead_ref(x, BY_NAME["killhead"].constants["n"]),
    "abs_uv": lambda u, v: (u * v).abs(),
    "functional_linear": nnf.linear,
    "linear": nnf.linear,
    "mulconstant": lambda t: t * 2.5,
    "mulconstant_nomat": lambda t: t * 2.5,
    "exp": torch.exp,
    "sigmoid": torch.sigmoid,
    "sincos": lambda x: (torch.sin(x), torch.cos(x)),
    "relu_inplace": torch.relu,
    "numpy_tanh": torch.tanh,
    "cube_newstyle": lambda x: x**3,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "complex_mul": lambda z, w: z * w,
    **({"sin_op": torch.sin} if "sin_op" in BY_NAME else {}),  # torch.library ops: 2.4+
}


def test_every_correct_entry_but_sort_has_a_reference():
    correct = {e.name for e in ENTRIES if e.correct}
    assert correct - set(REFERENCES) == {"sort"}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_jacobian_matches_reference(name: str):
    entry = BY_NAME[name]
    args, pos = make_args(entry, seed=1)
    tensors = tuple(args[i].detach() for i in pos)
    fn, ref_fn = make_fn(entry, args, pos), REFERENCES[name]
    if entry.complex:  # the real Jacobian: parts side by side (jacobian takes real outputs)
        fn, ref_fn, tensors = _as_real(fn), _as_real(ref_fn), tuple(
            torch.view_as_real(t) for t in tensors)
    ours = torch.autograd.functional.jacobian(fn, tensors)
    ref = torch.autograd.functional.jacobian(ref_fn, tensors)
    torch.testing.assert_close(ours, ref)


def _as_real(fn):
    """``fn`` of complex tensors as a function of their real views, to a real view."""
    return lambda *parts: torch.view_as_real(fn(*(torch.view_as_complex(p) for p in parts)))


def test_sort_jacobian_is_a_permutation():
    entry = BY_NAME["sort"]
    (x,), _ = make_args(entry)
    values, indices = entry.function.apply(x)
    assert not indices.requires_grad and indices.dtype == torch.int64
    torch.testing.assert_close(values, x.sort(dim=-1).values)
    jac = torch.autograd.functional.jacobian(lambda t: entry.function.apply(t)[0], x.detach())
    ref = torch.autograd.functional.jacobian(lambda t: t.sort(dim=-1).values, x.detach())
    torch.testing.assert_close(jac, ref)


def test_ste_backward_is_clipped_identity():
    x = torch.tensor([-2.0, -0.5, 0.3, 1.5], dtype=torch.float64, requires_grad=True)
    y = BY_NAME["ste_sign"].function.apply(x)
    torch.testing.assert_close(y, x.detach().sign())
    y.backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, torch.tensor([0.0, 1.0, 1.0, 0.0], dtype=torch.float64))


def test_relu_inplace_modifies_its_input():
    x = torch.tensor([-1.0, 2.0], requires_grad=True)
    inner = x.clone()
    out = BY_NAME["relu_inplace"].function.apply(inner)
    assert out is inner
    torch.testing.assert_close(inner.detach(), torch.tensor([0.0, 2.0]))
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([0.0, 1.0]))


def test_mulconstant_nomaterialize_handles_none():
    fn = BY_NAME["mulconstant_nomat"].function
    assert fn.backward(None, None) == (None, None)
    x = torch.ones(2, requires_grad=True)
    fn.apply(x, 3.0).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((2,), 3.0))


# ---------------------------------------------------------------- double backward, torch.func


def test_cube_newstyle_double_backward_and_func():
    cube = BY_NAME["cube_newstyle"].function
    (x,), _ = make_args(BY_NAME["cube_newstyle"])
    assert torch.autograd.gradcheck(cube.apply, (x,))
    assert torch.autograd.gradgradcheck(cube.apply, (x,))
    v = x.detach()[0]
    jac = torch.func.jacrev(cube.apply)(v)
    torch.testing.assert_close(jac, torch.diag(3 * v**2))
    batched = torch.func.vmap(torch.func.grad(lambda t: cube.apply(t).sum()))(x.detach())
    torch.testing.assert_close(batched, 3 * x.detach() ** 2)


@pytest.mark.parametrize("name", ["functional_linear", "numpy_tanh"])
def test_once_differentiable_refuses_double_backward(name: str):
    entry = BY_NAME[name]
    args, pos = make_args(entry)
    tensors = [args[i] for i in pos]
    out = make_fn(entry, args, pos)(*tensors)
    (g,) = torch.autograd.grad(out.sum(), tensors[:1], create_graph=True)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(g.sum(), tensors[:1])


# ---------------------------------------------------------------- the seeds' own usage


def test_myownlayer_forward_backward():
    torch.manual_seed(0)
    layer = MyOwnLayer(4, 5)
    assert "in_features=4, out_features=5, bias=True" == layer.extra_repr()
    x = torch.randn(3, 4)
    out = layer(x)
    assert out.shape == (3, 5)
    torch.testing.assert_close(out, nnf.linear(x, layer.weight, layer.bias))
    out.pow(2).sum().backward()
    assert layer.weight.grad.shape == (5, 4)
    assert layer.bias.grad.shape == (5,)
    w = layer.weight.detach().clone().requires_grad_()
    b = layer.bias.detach().clone().requires_grad_()
    nnf.linear(x, w, b).pow(2).sum().backward()
    torch.testing.assert_close(layer.weight.grad, w.grad)
    torch.testing.assert_close(layer.bias.grad, b.grad)
    assert MyOwnLayer(4, 5, bias=False)(x).shape == (3, 5)


def test_killhead_seed_training_loop_decreases_loss():
    killhead = BY_NAME["killhead"].function.apply
    torch.manual_seed(0)
    y = torch.empty(3, 8).normal_()
    x = torch.empty(y.size()).normal_().requires_grad_()
    criterion, eta = torch.nn.MSELoss(), 1e-0
    losses = []
    for k in range(5):
        r = killhead(x, 2)
        loss = criterion(r, y)
        if k > 0:
            x.grad.zero_()
        loss.backward()
        losses.append(loss.item())
        with torch.no_grad():
            x.sub_(eta * x.grad)
    assert all(b < a for a, b in itertools.pairwise(losses))
    # The killed head never receives a gradient, so it never moves.
    assert torch.all(x.grad[:, :2] == 0)


def test_linear_seed_gradcheck_as_in_the_notes():
    linear = BY_NAME["linear"].function.apply
    inputs = (
        torch.randn(20, 20, dtype=torch.double, requires_grad=True),
        torch.randn(30, 20, dtype=torch.double, requires_grad=True),
    )
    assert torch.autograd.gradcheck(linear, inputs, eps=1e-6, atol=1e-4)


def test_catalog_listing_is_the_gallery():
    """The names and titles that ``customgrad list`` shows without torch are the gallery's."""
    from customgrad.targets import catalog

    real = [(e.name, e.title, e.category, e.function.__name__, e.correct, e.twin_of)
            for e in catalog.entries()]
    data = [(e.name, e.title, e.category, e.function, e.correct, e.twin_of)
            for e in catalog.listing()]
    assert data == real, "catalog.LISTING is out of step with the gallery: it should read\n" + \
        "\n".join(map(repr, real))
    assert [e.name for e in catalog.LISTING if not e.custom_op or catalog._has_custom_op()] \
        == [e.name for e in ENTRIES]  # in the gallery's own order too


def test_a_misspelled_gallery_name_gets_the_closest():
    from customgrad.targets import catalog

    with pytest.raises(catalog.TargetError, match="Did you mean killhead\\?"):
        catalog.get("killhed")
    with pytest.raises(catalog.TargetError) as caught:
        catalog.get("zzzzzz")
    assert "Did you mean" not in str(caught.value)
