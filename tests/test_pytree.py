"""Pytree arguments and results: dicts, lists, tuples, NamedTuples, dataclasses (issue 11 part 3)."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import pyasc
from pyasc import pytree
from pyasc.testing import assert_close


class Pair(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    scale: float


@dataclasses.dataclass(frozen=True)
class Out:
    y: object
    z: object


def mixed(x, params, cfg, xs, pair):
    y = x * params["w"] + params["b"]
    z = y * cfg.scale + cfg.w
    for t in xs:
        z = z + t
    return {"y": y, "z": z}, Pair(w=z - pair.w, b=pair.b * 2.0), [Out(y=z, z=y)]


def _inputs(rng, dtype=np.float32):
    def r(*shape):
        return rng.standard_normal(shape).astype(dtype)

    return (r(4, 40), {"w": r(40), "b": r(40)}, Layer(r(40), 3.0), [r(40), r(4, 40)], Pair(r(4, 40), r(40)))


def _compare(got, want):
    g_leaves, g_tree = pytree.flatten(got, lambda v: isinstance(v, np.ndarray))
    w_leaves, w_tree = pytree.flatten(want, lambda v: isinstance(v, np.ndarray))
    assert g_tree == w_tree
    for g, w in zip(g_leaves, w_leaves):
        assert_close(g, w)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pytree_arguments_and_results_match_numpy(chip, dtype, rng):
    k = pyasc.kernel(mixed, chip=chip)
    args = _inputs(rng, dtype)
    got = k(*args)
    want = mixed(*args)
    _compare(got, want)
    assert isinstance(got[0], dict) and list(got[0]) == ["y", "z"]
    assert type(got[1]) is Pair and isinstance(got[2], list) and type(got[2][0]) is Out
    assert got[0]["y"].dtype == dtype


def test_signature_shows_the_structure(rng):
    art = pyasc.kernel(mixed, chip="tiny").compile(*_inputs(rng))
    assert art.signature == ("x: f32[4,40], params={'w': f32[40], 'b': f32[40]}, cfg=Layer(w=f32[40], "
                             "scale=3.0), xs=[f32[40], f32[4,40]], pair=Pair(w=f32[4,40], b=f32[40])")
    assert [p.name for p, _ in art.tensor_params] == [
        "x", "params['w']", "params['b']", "cfg.w", "xs[0]", "xs[1]", "pair.w", "pair.b"]
    # the graph's inputs are the tensor leaves, named after their paths
    assert [n.name for n in art.graph.inputs][:4] == ["x", "params_w", "params_b", "cfg_w"]


def test_run_takes_the_tensor_leaves(rng):
    args = _inputs(rng)
    art = pyasc.kernel(mixed, chip="tiny").compile(*args)
    x, params, cfg, xs, pair = args
    _compare(art.run(x, params["w"], params["b"], cfg.w, xs[0], xs[1], pair.w, pair.b), mixed(*args))


def scaled(x, p):
    return x * p["s"] + p["t"]


def test_cache_key_scalar_leaves_and_structure(rng):
    k = pyasc.kernel(scaled, chip="tiny")
    x = rng.standard_normal((3, 8)).astype(np.float32)
    t = rng.standard_normal(8).astype(np.float32)
    assert_close(k(x, {"s": 2.0, "t": t}), x * 2.0 + t)
    assert k.cache_info().misses == 1
    assert_close(k(x, {"s": 2.0, "t": t + 1}), x * 2.0 + t + 1)  # new contents, same structure: a hit
    assert k.cache_info()[:3] == (1, 0, 1)
    assert_close(k(x, {"s": 3.0, "t": t}), x * 3.0 + t)  # a scalar leaf is part of the key
    assert k.cache_info().misses == 2
    assert_close(k(x, {"t": t, "s": 3.0}), x * 3.0 + t)  # another key order: another structure
    assert k.cache_info().misses == 3
    assert_close(k(x, {"s": 3.0, "t": t[:1]}), x * 3.0 + t[:1])  # a tensor leaf's shape
    assert k.cache_info().misses == 4
    assert_close(k(x, {"s": np.float32(3.0), "t": t}), x * np.float32(3.0) + t)  # a numpy scalar is a tensor
    assert k.cache_info().misses == 5
    k(x, {"s": 3.0, "t": t})
    assert k.cache_info() == (2, 0, 5, 5)


def total(xs):
    out = xs[0]
    for t in xs[1:]:
        out = out + t
    return out


def test_list_length_and_tuple_are_structures(rng):
    k = pyasc.kernel(total, chip="tiny")
    a, b, c = (rng.standard_normal(8).astype(np.float32) for _ in range(3))
    assert_close(k([a, b]), a + b)
    assert_close(k([a, b, c]), a + b + c)
    assert_close(k((a, b)), a + b)  # a tuple of arrays is a pytree too (not a compile-time constant)
    assert_close(k((c, b)), c + b)
    assert k.cache_info()[:3] == (1, 0, 3)


def test_a_tuple_of_numbers_stays_one_compile_time_value():
    def shaped(x, shape):
        return x.reshape(shape)

    art = pyasc.kernel(shaped, chip="tiny").compile(np.zeros(6, np.float32), (2, 3))
    assert art.signature == "x: f32[6], shape=(2, 3)"


def nested(d):
    return d["a"][0] + d["a"][1]["b"]


def test_nested_containers(rng):
    a0, b = rng.standard_normal((2, 16)).astype(np.float32)
    assert_close(pyasc.kernel(nested, chip="tiny")({"a": [a0, {"b": b}]}), a0 + b)


def items(d, shift):
    out = {}
    for name, v in d.items():
        out = {**out, name: v + shift}
    return {**out, "n": len(d)}


def test_dict_items_and_dict_displays(rng):
    d = {"p": rng.standard_normal(8).astype(np.float32), "q": rng.standard_normal(8).astype(np.float32)}
    got = pyasc.kernel(items, chip="tiny")(d, 1.0)
    assert list(got) == ["p", "q", "n"]
    assert_close(got["p"], d["p"] + 1.0)
    assert type(got["n"]) is int and got["n"] == 2  # a Python number in a result is returned as it is (numpy)


def test_dynamic_pytree(rng):
    k = pyasc.kernel(scaled, chip="tiny", dynamic=True)
    for n in (8, 24):
        x = rng.standard_normal((3, n)).astype(np.float32)
        t = rng.standard_normal(n).astype(np.float32)
        assert_close(k(x, {"s": 2.0, "t": t}), x * 2.0 + t)
    assert k.cache_info().misses == 1


def test_bad_dict_key_is_a_type_error():
    k = pyasc.kernel(scaled, chip="tiny")
    with pytest.raises(TypeError) as info:
        k(np.zeros(2, np.float32), {"s": 1.0, (1, 2): np.zeros(2, np.float32)})
    assert str(info.value) == ("scaled() argument 'p' is a dict with the key (1, 2) (tuple); a dict argument's "
                               "keys must be str or int (they are part of the compiled specialisation)")


def test_bad_leaf_names_its_path():
    k = pyasc.kernel(scaled, chip="tiny")
    with pytest.raises(TypeError) as info:
        k(np.zeros(2, np.float32), {"s": 1.0, "t": [object()]})
    msg = str(info.value)
    assert msg.startswith("scaled() argument \"p['t'][0]\" is a builtins.object, which pyasc cannot take")


def test_bad_leaf_dtype_names_its_path():
    k = pyasc.kernel(scaled, chip="tiny")
    with pytest.raises(TypeError) as info:
        k(np.zeros(2, np.float32), {"s": 1.0, "t": np.zeros(2, np.float64)})
    assert str(info.value).startswith("scaled() argument \"p['t']\" has dtype float64, which pyasc does not support")


def test_tensor_dict_key_in_a_display_is_located():
    def bad(x):
        return {x: x}

    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(bad, chip="tiny")(np.zeros(2, np.float32))
    assert "a dict key must be a compile-time value, got a tensor f32[2] in `x`" in str(info.value)


def test_empty_results_none_and_strings_are_returned_as_numpy_code_returns_them():
    def empty(x):
        return {}

    def nothing(x):
        y = x + 1  # noqa: F841

    def mixed(x):
        return {"a": x * 2, "b": "text", "c": [None, x.sum()]}

    x = np.ones(2, np.float32)
    assert pyasc.kernel(empty, chip="tiny")(x) == {}
    assert pyasc.kernel(nothing, chip="tiny")(x) is None
    got = pyasc.kernel(mixed, chip="tiny")(x)
    assert got["b"] == "text" and got["c"][0] is None
    np.testing.assert_array_equal(got["a"], x * 2)
    assert float(got["c"][1]) == 2.0


def test_bad_result_leaf_names_its_path():
    def bad(x):
        return {"a": x, "b": print}

    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(bad, chip="tiny")(np.zeros(2, np.float32))
    assert "result ['b'] of kernel" in str(info.value) and "is a builtin_function_or_method" in str(info.value)


def as_pair(x):
    return Pair(w=x + 1.0, b=x * 2.0)


def test_pytree_results_come_back_from_the_disk_cache(disk_cache, rng):
    x = rng.standard_normal(8).astype(np.float32)
    first = pyasc.kernel(as_pair, chip="tiny")
    assert type(first(x)) is Pair
    second = pyasc.kernel(as_pair, chip="tiny")  # a new Kernel object: only the disk cache knows it
    got = second(x)
    assert second.cache_info().disk_hits == 1
    assert type(got) is Pair
    assert_close(got.w, x + 1.0)


def make_local_kernel():
    class Local(NamedTuple):
        a: object

    def local(x):
        return Local(a=x + 1.0)

    return local, Local


def test_a_result_class_comes_from_the_live_kernel_never_from_its_name(disk_cache, rng):
    x = rng.standard_normal(8).astype(np.float32)
    fn, cls = make_local_kernel()
    assert type(pyasc.kernel(fn, chip="tiny")(x)) is cls
    fn2, cls2 = make_local_kernel()  # the same code and class name, another class object in the closure
    second = pyasc.kernel(fn2, chip="tiny")
    got = second(x)
    assert second.cache_info().disk_hits == 1 and type(got) is cls2 and cls2 is not cls
    assert_close(got.a, x + 1.0)


def test_treedef_json_round_trip_with_class_references():
    _, tree = pytree.flatten({"a": [1, Pair(1, 2)], 3: (4,)})
    classes = {"pair": Pair}
    doc = tree.to_json(lambda cls: next(k for k, v in classes.items() if v is cls))
    assert pytree.TreeDef.from_json(doc, classes.__getitem__) == tree
    with pytest.raises(ValueError, match="needs a namedtuple class"):
        pytree.TreeDef.from_json(doc, lambda ref: dict)


def scaled_all(params, x):
    return {name: x * w for name, w in params.items() if name != "skip"}


def test_dict_comprehension_over_a_dict_argument(rng):
    params = {"a": rng.standard_normal(8).astype(np.float32), "skip": np.ones(8, np.float32),
              "b": rng.standard_normal(8).astype(np.float32)}
    x = rng.standard_normal(8).astype(np.float32)
    got = pyasc.kernel(scaled_all, chip="tiny")(params, x)
    assert list(got) == ["a", "b"]
    assert_close(got["b"], x * params["b"])


def test_a_tensor_key_in_a_dict_comprehension_is_located():
    def bad(x):
        return {x * 2: x for _ in range(2)}

    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(bad, chip="tiny")(np.zeros(2, np.float32))
    assert "a dict key must be a compile-time value, got a tensor f32[2] in `x * 2`" in str(info.value)
    assert str(info.value).endswith("\n            return {x * 2: x for _ in range(2)}\n                    ^^^^^")


def test_an_unhashable_key_in_a_dict_display_is_located():
    def bad(x):
        return {[1]: x}

    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(bad, chip="tiny")(np.zeros(2, np.float32))
    assert "the dict key `[1]` is unhashable" in str(info.value)


def update_through_dict(d):
    y = d["a"]
    y += 1.0  # numpy: the same array as d["a"]
    return d["a"], d


def update_through_namedtuple(p):
    y = p.w
    y *= 2.0
    return p


def update_with_tuple_keys(x):
    d = {(0, 1): x, "k": [x]}
    y = x
    y += 1.0
    return d[(0, 1)] + d["k"][0]


def test_an_in_place_update_is_seen_through_containers():
    d = {"a": np.ones(3, np.float32), "b": np.zeros(3, np.float32)}
    a, out = pyasc.kernel(update_through_dict, chip="tiny")(d)
    assert_close(a, np.full(3, 2.0, np.float32))
    assert_close(out["a"], np.full(3, 2.0, np.float32))
    p = pyasc.kernel(update_through_namedtuple, chip="tiny")(Pair(np.ones(3, np.float32), np.ones(3, np.float32)))
    assert type(p) is Pair  # (the update kept the NamedTuple)
    assert_close(p.w, np.full(3, 2.0, np.float32))
    assert_close(pyasc.kernel(update_with_tuple_keys, chip="tiny")(np.ones(3, np.float32)),
                 np.full(3, 4.0, np.float32))


def builds_dicts(x, y):
    names = ("p", "q")
    return dict(zip(names, (x, y))), dict(s=x + y)


def test_dict_constructor_in_a_kernel():
    x, y = np.ones(4, np.float32), np.full(4, 2.0, np.float32)
    a, b = pyasc.kernel(builds_dicts, chip="tiny")(x, y)
    assert list(a) == ["p", "q"] and list(b) == ["s"]
    assert_close(b["s"], x + y)


def test_pytree_arguments_key_the_disk_cache(disk_cache, rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    t = rng.standard_normal(8).astype(np.float32)
    pyasc.kernel(scaled, chip="tiny")(x, {"s": 2.0, "t": t})
    same = pyasc.kernel(scaled, chip="tiny")  # a fresh Kernel: only the disk cache has the compile
    assert_close(same(x, {"s": 2.0, "t": t * 3}), x * 2.0 + t * 3)
    assert same.cache_info()[:3] == (0, 1, 0)
    other = pyasc.kernel(scaled, chip="tiny")
    assert_close(other(x, {"s": 5.0, "t": t}), x * 5.0 + t)  # another scalar leaf: another disk key
    assert other.cache_info()[:3] == (0, 0, 1)
    args = _inputs(rng)
    pyasc.kernel(mixed, chip="tiny")(*args)
    again = pyasc.kernel(mixed, chip="tiny")
    _compare(again(*args), mixed(*args))
    assert again.cache_info().disk_hits == 1  # the dataclass and NamedTuple arguments' classes key by name


def test_a_structure_containing_itself_is_a_type_error():
    loop = [np.ones(2, np.float32)]
    loop.append(loop)
    with pytest.raises(TypeError) as info:
        pyasc.kernel(total, chip="tiny")(loop)
    assert str(info.value) == ("total() argument 'xs' nests too deeply to flatten (or contains itself); pass a "
                               "flatter structure")


def dispatches(p):
    if isinstance(p, dict):
        return p["a"] * 2.0
    if isinstance(p, (list, tuple)):
        return p[0] + p[1]
    return p.w


def test_isinstance_on_a_pytree_argument():
    a = np.ones(3, np.float32)
    k = pyasc.kernel(dispatches, chip="tiny")
    assert_close(k({"a": a}), a * 2.0)
    assert_close(k([a, a]), a + a)
    assert_close(k(Pair(a, a)), a + a)  # a NamedTuple is a tuple

    def on_a_tensor(x):
        return x * 2.0 if isinstance(x, np.ndarray) else x

    assert_close(pyasc.kernel(on_a_tensor, chip="tiny")(a), a * 2.0)  # numpy's answer: a tensor is an ndarray


def colliding(p_w, p):
    return p_w + p["w"]


def test_leaf_names_do_not_collide_with_parameters_under_dynamic_shapes(rng):
    k = pyasc.kernel(colliding, chip="tiny", dynamic=True)
    a = rng.standard_normal((3, 8)).astype(np.float32)
    b = rng.standard_normal((3, 8)).astype(np.float32)
    assert_close(k(a, {"w": b}), a + b)
    assert [n.name for n in k.compile(a, {"w": b}).graph.inputs] == ["p_w", "p_w_"]


# ---- properties of flattening and keys (no compiles) ------------------------------------------------

from hypothesis import given, strategies as st  # noqa: E402  (only these property tests use hypothesis)

from pyasc.runtime.specialize import Param, specialize  # noqa: E402

_leaves = st.one_of(st.integers(-3, 3), st.floats(-2, 2, allow_nan=False), st.booleans(), st.none(),
                    st.integers(1, 3).map(lambda n: np.arange(n, dtype=np.float32)))
_trees = st.recursive(_leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.tuples(kids, kids),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
    st.builds(Pair, kids, kids), st.builds(Layer, kids, kids)), max_leaves=8)


def _same(a, b):
    la, ta = pytree.flatten(a, lambda v: isinstance(v, np.ndarray))
    lb, tb = pytree.flatten(b, lambda v: isinstance(v, np.ndarray))
    return ta == tb and all(x is y for x, y in zip(la, lb))


@given(_trees)
def test_flatten_unflatten_round_trip(tree):
    leaves, structure = pytree.flatten(tree, lambda v: isinstance(v, np.ndarray))
    rebuilt = pytree.unflatten(structure, leaves)
    assert _same(rebuilt, tree)
    assert len(structure.paths()) == structure.num_leaves == len(leaves)
    classes = [Pair, Layer]
    assert pytree.TreeDef.from_json(structure.to_json(classes.index), classes.__getitem__) == structure


@given(_trees)
def test_the_key_ignores_tensor_contents_and_sees_scalars(tree):
    params = (Param("p", False),)
    call = specialize("k", params, [[tree]], False)
    leaves, structure = pytree.flatten([tree], lambda v: isinstance(v, np.ndarray))
    bumped = pytree.unflatten(structure, [v + 1 if isinstance(v, np.ndarray) else v for v in leaves])
    assert specialize("k", params, [bumped], False).key == call.key  # new contents: the same specialisation
    scalars = [i for i, v in enumerate(leaves) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if scalars:
        i = scalars[0]
        other = pytree.unflatten(structure, [v + 10 if j == i else v for j, v in enumerate(leaves)])
        assert specialize("k", params, [other], False).key != call.key  # a scalar leaf is in the key
    assert len(call.arrays) == sum(isinstance(v, np.ndarray) for v in leaves)
