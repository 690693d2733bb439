"""The op registry as Python functions and Tensor methods."""
import inspect

import numpy as np
import pytest

import tandem

X = np.array([[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]], dtype=np.float32)


def test_every_registered_op_is_a_function():
    ops = tandem._C.all_ops()
    assert len(ops) > 200
    missing = [op.name for op in ops if not callable(getattr(tandem, op.name, None))]
    assert missing == []
    assert tandem.add.__doc__ and "add" in tandem.add.__doc__


def test_signature_uses_schema_names():
    sig = inspect.signature(tandem.add)
    assert list(sig.parameters)[:3] == ["input", "other", "alpha"]
    assert sig.parameters["alpha"].default == 1
    msig = inspect.signature(tandem.Tensor.add)
    assert list(msig.parameters)[0] == "self"


@pytest.mark.parametrize("name,np_fn", [("exp", np.exp), ("abs", np.abs), ("tanh", np.tanh), ("sin", np.sin),
                                        ("neg", np.negative), ("relu", lambda a: np.maximum(a, 0))])
def test_unary_ops(name, np_fn):
    t = tandem.tensor(X)
    np.testing.assert_allclose(getattr(tandem, name)(t).numpy(), np_fn(X), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(getattr(t, name)().numpy(), np_fn(X), rtol=1e-6, atol=1e-7)


def test_attributes_by_position_and_name():
    t = tandem.tensor(X)
    np.testing.assert_allclose(tandem.add(t, 2, alpha=3).numpy(), X + 6)
    np.testing.assert_allclose(t.add(t, 0.5).numpy(), X * 1.5)
    np.testing.assert_allclose(tandem.add(input=t, other=t).numpy(), 2 * X)


def test_reductions():
    t = tandem.tensor(X)
    np.testing.assert_allclose(t.sum().item(), X.sum(), rtol=1e-6)
    np.testing.assert_allclose(t.sum(1).numpy(), X.sum(1), rtol=1e-6)
    np.testing.assert_allclose(t.sum(dim=0, keepdim=True).numpy(), X.sum(0, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(t.sum([0, 1]).item(), X.sum(), rtol=1e-6)
    np.testing.assert_allclose(tandem.mean(t, dim=1).numpy(), X.mean(1), rtol=1e-6)
    assert t.sum(dtype=tandem.float64).dtype is tandem.float64
    vals, idx = t.max(1)
    np.testing.assert_array_equal(vals.numpy(), X.max(1))
    np.testing.assert_array_equal(idx.numpy(), X.argmax(1))
    assert t.argmax().item() == X.argmax()


def test_clamp_takes_numbers():
    t = tandem.tensor(X)
    np.testing.assert_array_equal(t.clamp(-1, 1).numpy(), np.clip(X, -1, 1))
    np.testing.assert_array_equal(tandem.clamp(t, min=0).numpy(), np.clip(X, 0, None))
    i = tandem.tensor([1, 5, 9])
    assert i.clamp(2, 6).tolist() == [2, 5, 6]


def test_shape_methods_accept_unpacked_sizes():
    t = tandem.arange(6)
    assert t.view(2, 3).shape == (2, 3)
    assert t.view((3, 2)).shape == (3, 2)
    assert t.reshape(3, -1).shape == (3, 2)
    m = tandem.tensor(X)
    np.testing.assert_array_equal(m.permute(1, 0).numpy(), X.T)
    np.testing.assert_array_equal(m.transpose(0, 1).numpy(), X.T)
    np.testing.assert_array_equal(m.T.numpy(), X.T)
    assert m.unsqueeze(0).shape == (1, 2, 3)
    np.testing.assert_array_equal(m.flatten().numpy(), X.ravel())


def test_variadic_cat_stack():
    a, b = tandem.tensor(X), tandem.tensor(X * 2)
    np.testing.assert_array_equal(tandem.cat([a, b]).numpy(), np.concatenate([X, 2 * X]))
    np.testing.assert_array_equal(tandem.cat((a, b), dim=1).numpy(), np.concatenate([X, 2 * X], 1))
    np.testing.assert_array_equal(tandem.stack([a, b], 0).numpy(), np.stack([X, 2 * X]))


def test_matmul_softmax_where():
    a = tandem.tensor(X)
    np.testing.assert_allclose(tandem.matmul(a, a.t()).numpy(), X @ X.T, rtol=1e-6)
    e = np.exp(X - X.max(1, keepdims=True))
    np.testing.assert_allclose(tandem.softmax(a, dim=1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(tandem.where(a > 0, a, 0.0).numpy(), np.where(X > 0, X, 0))


def test_composite_nn_ops_are_registered():
    names = {op.name for op in tandem._C.all_ops()}
    assert "cross_entropy" in names
    logits = tandem.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]])
    target = tandem.tensor([0, 1])
    z = logits.numpy()
    lse = np.log(np.exp(z).sum(1))
    expected = np.mean(lse - z[[0, 1], [0, 1]])
    np.testing.assert_allclose(tandem.cross_entropy(logits, target).item(), expected, rtol=1e-6)


def test_inplace_methods():
    t = tandem.tensor(X.copy())
    r = t.mul_(2)
    assert r is not None and t.data_ptr() == r.data_ptr()
    np.testing.assert_allclose(t.numpy(), X * 2)
    t.zero_()
    assert not t.numpy().any()


def test_bad_arguments_raise_type_error():
    t = tandem.tensor(X)
    with pytest.raises(TypeError, match="unexpected keyword"):
        tandem.add(t, t, beta=2)
    with pytest.raises(TypeError, match="takes at most"):
        tandem.neg(t, 1, 2, 3)
    with pytest.raises(TypeError):
        tandem.add(t)
    with pytest.raises(TypeError):
        t.sum(keepdim="yes")


def test_pytorch_positional_order_for_dim_before_index():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    t = tandem.tensor(x)
    idx = tandem.tensor([2, 0])
    np.testing.assert_array_equal(tandem.index_select(t, 1, idx).numpy(), x[:, [2, 0]])
    np.testing.assert_array_equal(t.index_select(0, tandem.tensor([1])).numpy(), x[[1]])
    gi = np.array([[0, 2], [1, 0]])
    np.testing.assert_array_equal(t.gather(1, tandem.tensor(gi)).numpy(), np.take_along_axis(x, gi, 1))
    si = np.array([[0, 1, 0], [1, 0, 1]])
    out = tandem.zeros(2, 3).scatter_add(0, tandem.tensor(si), t).numpy()
    expected = np.zeros((2, 3), dtype=np.float32)
    for i in range(2):
        for j in range(3):
            expected[si[i, j], j] += x[i, j]
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(TypeError, match="multiple values"):
        tandem.index_select(t, 0, idx, dim=1)


def test_eye_layer_norm_repeat_interleave():
    np.testing.assert_array_equal(tandem.eye(3).numpy(), np.eye(3, dtype=np.float32))
    e = tandem.eye(2, 4, dtype=tandem.int64)
    assert e.dtype is tandem.int64 and e.tolist() == np.eye(2, 4, dtype=np.int64).tolist()
    x = np.array([[1.0, 2.0, 4.0], [0.0, -1.0, 1.0]], dtype=np.float32)
    ln = tandem.layer_norm(tandem.tensor(x), [3]).numpy()
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln, ref, rtol=1e-5, atol=1e-6)
    assert tandem.repeat_interleave(tandem.tensor([1, 2]), 2).tolist() == [1, 1, 2, 2]
    r = tandem.tensor(x).repeat_interleave(tandem.tensor([1, 2]), dim=0)
    np.testing.assert_array_equal(r.numpy(), np.repeat(x, [1, 2], axis=0))


def test_contains_format_hash():
    t = tandem.tensor([1, 2, 3])
    assert 2 in t and 5 not in t
    assert f"{tandem.tensor(0.123456):.3f}" == "0.123"
    assert len({t, t, tandem.tensor([1, 2, 3])}) == 2  # hashed by identity, as PyTorch


def test_keyword_dict_is_not_modified_and_duplicates_raise():
    t = tandem.tensor(X)
    kw = {"dim": 1, "keepdim": True}
    op = tandem.get_op("sum")
    assert op(t, **kw).shape == (2, 1)
    assert kw == {"dim": 1, "keepdim": True}
    with pytest.raises(TypeError, match="multiple values"):
        tandem.add(t, t, other=t)


def test_type_stubs_cover_the_api():
    import ast
    import os
    path = os.path.join(os.path.dirname(tandem.__file__), "__init__.pyi")
    tree = ast.parse(open(path).read())
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert {"Tensor", "dtype", "add", "index_select", "zeros", "tensor", "compile", "from_numpy"} <= top
    tensor_cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = {n.name for n in tensor_cls.body if isinstance(n, ast.FunctionDef)}
    assert {"add", "sum", "relu", "view", "backward", "__add__", "__radd__", "numpy"} <= methods
    index_select = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "index_select")
    assert [a.arg for a in index_select.args.args] == ["input", "dim", "index"]
    # tandem._C's bound classes (optimizers, schedulers, data loading, ...) have stubs too.
    c_tree = ast.parse(open(os.path.join(os.path.dirname(tandem.__file__), "_C.pyi")).read())
    classes = {n.name: n for n in c_tree.body if isinstance(n, ast.ClassDef)}
    bound = {n for n, v in vars(tandem._C).items() if isinstance(v, type) and n not in ("Tensor", "dtype")}
    assert bound <= set(classes) and {"SGD", "Adam", "StepLR", "DataLoader", "FashionMNIST"} <= bound
    assert [b.id for b in classes["SGD"].bases] == ["Optimizer"]
    sgd_init = next(n for n in classes["SGD"].body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assert [a.arg for a in sgd_init.args.args][:3] == ["self", "params", "lr"]
    assert [a.arg for a in sgd_init.args.kwonlyargs] == ["maximize"]
    step = next(n for n in classes["Optimizer"].body if isinstance(n, ast.FunctionDef) and n.name == "step")
    assert [a.arg for a in step.args.args] == ["self", "closure"]


def test_named_tuples_and_pytorch_overloads():
    t = tandem.tensor(X)
    r = t.max(dim=1)
    assert r.values.tolist() == X.max(1).tolist() and r.indices.tolist() == X.argmax(1).tolist()
    s = tandem.sort(t, descending=True)
    np.testing.assert_array_equal(s.values.numpy(), -np.sort(-X, axis=1))
    assert t.topk(1).indices.shape == (2, 1)
    u = tandem.tensor([3, 1, 3, 2])
    assert tandem.unique(u).tolist() == [1, 2, 3]
    vals, counts = tandem.unique(u, return_counts=True)
    assert counts.tolist() == [1, 1, 2]
    np.testing.assert_allclose(tandem.einsum("ij,kj->ik", t, t).numpy(), X @ X.T, rtol=1e-6)
    np.testing.assert_allclose(tandem.einsum("ii", [tandem.eye(3)]).item(), 3.0)
    rows, cols = tandem.where(t > 1)
    assert rows.tolist() == list(np.where(X > 1)[0]) and cols.tolist() == list(np.where(X > 1)[1])
    z = t.new_zeros(2, 2)
    assert z.dtype is tandem.float32 and z.tolist() == [[0, 0], [0, 0]]
    assert tandem.tensor([1]).new_full((2,), 5).tolist() == [5, 5]
    assert t.new_tensor([1, 2]).dtype is tandem.float32
