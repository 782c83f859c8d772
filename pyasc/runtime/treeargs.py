"""Pytree arguments at call time: which arguments are pytrees, their key, their leaf names.

A dict, list, NamedTuple or dataclass argument, or a plain tuple holding a
tensor or such a container, is a pytree argument (a plain tuple of numbers
stays one compile-time value, as before). Its key is a `TreeKey`: the
structure plus one key record per leaf, so changing the structure or a
scalar leaf compiles a new specialisation and the same structure with new
tensor contents hits. Its tensor leaves are passed to the graph in leaf
order, as if each were a parameter of its own, named `leaf_name(...)`.

This module does not import specialize.py (which imports it): the per-leaf
key is a callback.
"""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

from .. import pytree
from ..pytree import TreeDef
from .errors import ArgumentTypeError

_NOT_IDENTIFIER = re.compile(r"\W+")


class TreeKey(NamedTuple):
    """A pytree argument's part of the key: its structure and one key record per leaf (leaf order)."""

    tree: TreeDef
    leaves: tuple


def is_tree_argument(value: Any, is_tensor: Callable[[Any], bool]) -> bool:
    """True for a value specialisation flattens (see the module docstring)."""
    if isinstance(value, (dict, list)) or pytree.is_namedtuple(value) or pytree.is_dataclass_instance(value):
        return True
    if isinstance(value, tuple):
        return any(is_tensor(x) or is_tree_argument(x, is_tensor) for x in value)
    return False


def tree_key(kernel: str, name: str, value: Any, is_tensor: Callable[[Any], bool],
             leaf_key: Callable[[str, Any], Any]) -> TreeKey:
    """The key of a pytree argument; `leaf_key(label, leaf)` keys one leaf (and keeps a tensor's array)."""
    try:
        leaves, tree = pytree.flatten(value, is_tensor)
    except pytree.BadKey as e:
        where = pytree.path_text_for(name, _partial_tree(value, e.path), e.path) if e.path else name
        raise ArgumentTypeError(
            f"{kernel}() argument {where!r} is a dict with the key {e.key!r} ({type(e.key).__name__}); a dict "
            "argument's keys must be str or int (they are part of the compiled specialisation)") from None
    keys = tuple(leaf_key(pytree.path_text_for(name, tree, path), leaf)
                 for path, leaf in zip(tree.paths(), leaves))
    return TreeKey(tree, keys)


def _partial_tree(value: Any, path: tuple) -> TreeDef:
    """The structure along `path` (the part that flattened before a bad key), for the error message."""
    _, tree = pytree.flatten(value, lambda v: isinstance(v, dict) and any(
        isinstance(k, bool) or not isinstance(k, (str, int)) for k in v))
    return tree


def leaf_name(name: str, tree: TreeDef, path: tuple) -> str:
    """An identifier for a leaf (graph input names, symbolic dims): `params_w`, `layers_0_b`."""
    parts = [name, *(str(k) for k in path)]
    return _NOT_IDENTIFIER.sub("_", "_".join(parts)).strip("_") or name


def leaf_labels(name: str, tree: TreeDef) -> list[str]:
    """How the user spells each leaf (`params['w']`), in leaf order."""
    return [pytree.path_text_for(name, tree, p) for p in tree.paths()]
