"""Pytrees in the frontend: pytree parameters, dict displays and comprehensions, and pytree results.

A pytree parameter arrives as a `TreeArg` (its structure, and per leaf a
TensorType or a compile-time value): each tensor leaf becomes a Data input
of the graph in leaf order, and the parameter is bound to the rebuilt
container (a dict of tensors, a NamedTuple, ...), so `params["w"]`,
`cfg.scale`, `for k, v in d.items()` are ordinary compile-time Python on it.

A kernel may return a pytree: its leaves (tensors, and numbers or constant
arrays, which become constants) are the graph's outputs; the structure is
kept in `FrontendResult.out_tree` and the runtime rebuilds it.
"""
from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import dtypes, pytree
from ..ir.graph import Graph, Value
from ..pytree import TreeDef
from ..tensor_type import TensorType
from .protocol import KernelBuilder
from .tensors import scalar_const_dtype
from .values import describe, is_const_array, is_number, is_tensor


@dataclass(frozen=True)
class TreeArg:
    """A pytree parameter: the structure, one leaf per position (a TensorType for a tensor leaf, else the
    compile-time value) and one identifier per leaf (the Data input's name)."""

    tree: TreeDef
    leaves: tuple
    names: tuple

    def __post_init__(self) -> None:
        n = self.tree.num_leaves
        if len(self.leaves) != n or len(self.names) != n:
            raise TypeError(f"TreeArg: the structure has {n} leaves, got {len(self.leaves)} leaves and "
                            f"{len(self.names)} names")


def map_tensors(value: Any, fn: Any) -> Any:
    """`value` with each tensor leaf mapped by `fn`, rebuilt with the same types (a dict stays a dict, a
    NamedTuple its class); `value` itself when nothing changed. For an in-place operator: every container
    holding the updated tensor sees the new value, as numpy's shared array would."""
    if is_tensor(value):
        return fn(value)
    if not pytree.is_container(value):
        return value
    try:
        leaves, tree = pytree.flatten(value, is_tensor)
    except pytree.BadKey:  # a dict with other keys (`{(0, 1): ...}`): the same walk, by hand
        if isinstance(value, dict):
            items = {k: map_tensors(v, fn) for k, v in value.items()}
            return items if any(items[k] is not value[k] for k in value) else value
        if isinstance(value, (tuple, list)):
            seq = [map_tensors(v, fn) for v in value]
            return type(value)(seq) if any(a is not c for a, c in zip(seq, value)) else value
        return value
    mapped = [fn(v) if is_tensor(v) else v for v in leaves]
    if all(a is c for a, c in zip(mapped, leaves)):
        return value
    return pytree.unflatten(tree, mapped)


def bind_tree(b: KernelBuilder, graph: Graph, arg: TreeArg, at: ast.AST) -> Any:
    """The parameter's value in the kernel: the container with a Data input at each tensor leaf."""
    leaves = [graph.add_input(leaf, name=name, loc=b.loc(at)) if isinstance(leaf, TensorType) else leaf
              for leaf, name in zip(arg.leaves, arg.names)]
    return pytree.unflatten(arg.tree, leaves)


def leaf_labels(param: str, arg: TreeArg) -> list[str]:
    """How the user spells each tensor leaf of a pytree parameter (`params['w']`), in leaf order."""
    return [pytree.path_text_for(param, arg.tree, path)
            for path, leaf in zip(arg.tree.paths(), arg.leaves) if isinstance(leaf, TensorType)]


def dict_display(b: KernelBuilder, node: ast.Dict) -> dict:
    """`{"a": x, **other}`: keys are compile-time values; values may be tensors."""
    out: dict = {}
    for k, v in zip(node.keys, node.values):
        if k is None:  # `**mapping`
            mapping = b.eval(v)
            if not isinstance(mapping, dict):
                raise b.error(f"`**` in a dict display needs a dict, got {describe(mapping)}", v)
            out.update(mapping)
            continue
        key = b.eval(k)
        if is_tensor(key):
            raise b.error(f"a dict key must be a compile-time value, got {describe(key)} in `{b.text(k)}`", k)
        value = b.eval(v)
        try:
            out[key] = value
        except TypeError:
            raise b.error(f"the dict key `{b.text(k)}` is unhashable ({describe(key)})", k) from None
    return out


def dict_comprehension(b: Any, node: ast.DictComp) -> dict:
    """`{k: f(v) for k, v in d.items()}`: the builder's list comprehension over (key, value) pairs, unrolled."""
    pair = ast.copy_location(ast.Tuple(elts=[node.key, node.value], ctx=ast.Load()), node.key)
    pair.end_lineno, pair.end_col_offset = node.value.end_lineno, node.value.end_col_offset
    out: dict = {}
    for key, value in b._comprehension(ast.copy_location(ast.ListComp(elt=pair, generators=node.generators), node)):
        if is_tensor(key):
            raise b.error(f"a dict key must be a compile-time value, got {describe(key)} in `{b.text(node.key)}`",
                          node.key)
        try:
            out[key] = value
        except TypeError:
            raise b.error(f"the dict key `{b.text(node.key)}` is unhashable ({describe(key)})", node.key) from None
    return out


def kernel_outputs(b: KernelBuilder, value: Any, at: ast.AST, name: str) -> tuple[list[Value], TreeDef, tuple]:
    """The graph outputs of a kernel's result, its structure (a single tensor: a leaf) and its constant leaves
    ((leaf index, value) for None, strings and Python numbers, returned as they are: numpy code returns them
    too; numpy scalars and arrays known at compile time become constant outputs)."""
    try:
        leaves, tree = pytree.flatten(value, is_tensor)
    except pytree.BadKey as e:
        raise b.error(f"kernel `{name}` returns a dict with the key {e.key!r}; result dict keys must be str or "
                      "int", at) from None
    flat_tuple = tree.kind == pytree.TUPLE and all(c.kind == pytree.LEAF for c in tree.children)
    outputs = []
    consts = []
    for i, (path, v) in enumerate(zip(tree.paths(), leaves)):
        if v is None or isinstance(v, str) or type(v) in (bool, int, float):
            consts.append((i, v))  # a compile-time Python value: returned as it is, as numpy code returns it
            continue
        what = (f"result {i}" if flat_tuple else f"result {pytree.path_text_for('', tree, path)}"
                if path else "the result")
        if is_tensor(v):
            outputs.append(v)
        elif is_number(v):
            outputs.append(b.const(v, scalar_const_dtype(v, (), ""), at))
        elif is_const_array(v):
            try:
                outputs.append(b.const(v, dtypes.narrow(v.dtype), at))
            except dtypes.DTypeError as e:
                raise b.error(f"kernel {what}: {e}", at) from None
        else:
            raise b.error(
                f"{what} of kernel `{name}` is {describe(v)}; a kernel returns tensors (numbers become constants), "
                "None and strings",
                at,
            )
    return outputs, tree, tuple(consts)


def is_record_class(cls: Any) -> bool:
    """A NamedTuple class or a dataclass: calling it in a kernel builds a pytree node."""
    return isinstance(cls, type) and (
        (issubclass(cls, tuple) and hasattr(cls, "_fields")) or dataclasses.is_dataclass(cls))


def construct(b: KernelBuilder, cls: type, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    """`Pair(a, b)` in a kernel: the NamedTuple or dataclass holding tensors, built by its own constructor
    (which only stores the fields; a `__post_init__` computing on a tensor is reported at this call)."""
    try:
        return cls(*args, **kwargs)
    except Exception as e:
        raise b.error(f"{name}(): {type(e).__name__}: {e}", at) from None
