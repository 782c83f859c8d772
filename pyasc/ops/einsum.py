"""np.einsum as a composite: transposes, reshapes, diagonals, sums and (batched) matmuls on the cube.

The subscripts are parsed once (`parse`: explicit `->` or numpy's implicit output, `...` for broadcast
dims) into one label string per operand and the output's. Then, operand by operand:
- a label repeated in one operand ("ii") is its diagonal: a mask and a sum;
- a label no one else needs (not in the output, in no other operand) is summed away first;
- operands are contracted left to right: labels both share and someone needs later are batch dims,
  labels only they share are the contracted dims, each side's own labels its free dims; the pair is
  transposed and reshaped to (batch, free_a, contracted) @ (batch, contracted, free_b), a batched matmul
  (no contracted label: a broadcast product);
- the result is transposed to the output order.
Dtypes are numpy's result type of the operands, narrowed; integer products accumulate in int32 where
numpy's einsum keeps the operands' (int8 would wrap there). All-bool operands give numpy's bool result (an
OR of ANDs): the int32 count of true products, then != 0; a bool beside numbers is cast to their type.
"""
from __future__ import annotations

import math
import string
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder, decompose_of, types_of
from .common import fmt_shape, named, sugar_arguments
from .registry import Category, OpDef, register, register_sugar

_LETTERS = string.ascii_letters


def parse(subscripts: str, ndims: Sequence[int]) -> tuple[list[str], str]:
    """(one label string per operand, the output's), `...` expanded into labels no one wrote."""
    if not isinstance(subscripts, str):
        raise InferError(f"einsum: subscripts must be a string, got {subscripts!r}")
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        lhs, out = spec.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = spec, "", False
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise InferError(f"einsum: {len(ins)} operand(s) in the subscripts {subscripts!r}, {len(ndims)} given")
    used = set(c for c in spec if c.isalpha())
    spare = [c for c in _LETTERS if c not in used]
    ell_dims = 0
    for term, nd in zip(ins, ndims):
        if "..." in term:
            ell_dims = max(ell_dims, nd - (len(term) - 3))
    ell = "".join(spare[:ell_dims])
    labels = []
    for term, nd in zip(ins, ndims):
        if "..." in term:
            k = nd - (len(term) - 3)
            if k < 0:
                raise InferError(f"einsum: operand with subscripts {term!r} has only {nd} dimension(s)")
            term = term.replace("...", ell[ell_dims - k:] if k else "")
        if any(not c.isalpha() for c in term):
            raise InferError(f"einsum: invalid subscript in {subscripts!r}")
        if len(term) != nd:
            raise InferError(f"einsum: operand with subscripts {term!r} has {nd} dimension(s)")
        labels.append(term)
    if explicit:
        out = out.replace("...", ell)
        if any(not c.isalpha() for c in out) or len(set(out)) != len(out):
            raise InferError(f"einsum: invalid output subscripts in {subscripts!r}")
        missing = [c for c in out if not any(c in t for t in labels)]
        if missing:
            raise InferError(f"einsum: output subscript {missing[0]!r} does not appear in the inputs")
    else:
        counts: dict[str, int] = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return labels, out


def _sizes(labels: Sequence[str], shapes: Sequence[Sequence[Any]]) -> dict[str, Any]:
    sizes: dict[str, Any] = {}
    for term, shape in zip(labels, shapes):
        for c, d in zip(term, shape):
            if c in sizes and sizes[c] != d and d != 1 and sizes[c] != 1:
                raise InferError(f"einsum: label {c!r} has sizes {sizes[c]} and {d}")
            if c not in sizes or sizes[c] == 1:
                sizes[c] = d
    return sizes


def _diagonal(b: Builder, x: Any, term: str) -> tuple[Any, str]:
    """x with every repeated label reduced to its diagonal (each label once)."""
    while len(set(term)) != len(term):
        c = next(ch for ch in term if term.count(ch) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        shape = b.shape(x)
        n = shape[i]
        eye = np.eye(n, dtype=bool).reshape(tuple(n if a in (i, j) else 1 for a in range(len(shape))))
        zero = b.const(0, b.dtype(x))
        x = b.op("sum", b.op("where", b.array(eye), x, zero), axis=j)
        term = term[:j] + term[j + 1:]
    return x, term


def _to_order(b: Builder, x: Any, term: str, order: str) -> Any:
    perm = tuple(term.index(c) for c in order)
    return b.op("transpose", x, axes=perm) if perm != tuple(range(len(term))) else x


def _contract(b: Builder, x: Any, tx: str, y: Any, ty: str, needed: set[str]) -> tuple[Any, str]:
    sizes = _sizes([tx, ty], [b.shape(x), b.shape(y)])
    both = [c for c in tx if c in ty]
    batch = [c for c in both if c in needed]
    contracted = [c for c in both if c not in needed]
    free_x = [c for c in tx if c not in ty]
    free_y = [c for c in ty if c not in tx]
    dt = b.result_type(b.dtype(x), b.dtype(y))
    x, y = b.cast(x, dt), b.cast(y, dt)
    bx = [sizes[c] for c in batch]  # a size-1 batch dim on one side broadcasts to the other's
    if not contracted:
        order = batch + free_x + free_y
        xs = _to_order(b, x, tx, "".join(batch + free_x))
        ys = _to_order(b, y, ty, "".join(batch + free_y))
        xs = b.op("reshape", xs, shape=tuple(b.shape(xs)) + (1,) * len(free_y))
        ys = b.op("reshape", ys, shape=tuple(b.shape(ys)[:len(batch)]) + (1,) * len(free_x) +
                  tuple(b.shape(ys)[len(batch):]))
        return b.op("mul", xs, ys), "".join(order)
    xs = _to_order(b, x, tx, "".join(batch + free_x + contracted))
    ys = _to_order(b, y, ty, "".join(batch + contracted + free_y))
    xb = [b.shape(xs)[i] for i in range(len(batch))]
    yb = [b.shape(ys)[i] for i in range(len(batch))]
    if xb != bx:
        xs = b.op("broadcast_to", xs, shape=tuple(bx) + tuple(b.shape(xs)[len(batch):]))
    if yb != bx:
        ys = b.op("broadcast_to", ys, shape=tuple(bx) + tuple(b.shape(ys)[len(batch):]))
    m = math.prod(sizes[c] for c in free_x)
    k = math.prod(sizes[c] for c in contracted)
    n = math.prod(sizes[c] for c in free_y)
    xm = b.op("reshape", xs, shape=tuple(bx) + (m, k))
    ym = b.op("reshape", ys, shape=tuple(bx) + (k, n))
    r = b.op("matmul", xm, ym)
    r = b.op("reshape", r, shape=tuple(bx) + tuple(sizes[c] for c in free_x) + tuple(sizes[c] for c in free_y))
    return r, "".join(batch + free_x + free_y)


def _einsum(b: Builder, *xs: Any, subscripts: str) -> list[Any]:
    dts = [b.dtype(x) for x in xs]
    if "bool" in dts:  # the cube has no bool products
        if all(d == "bool" for d in dts):
            count = _einsum(b, *(b.cast(x, "int32") for x in xs), subscripts=subscripts)[0]
            return [b.op("ne", count, b.const(0, "int32"))]
        dt = b.result_type(*dts)
        xs = tuple(b.cast(x, dt) for x in xs)
    labels, out = parse(subscripts, [len(b.shape(x)) for x in xs])
    terms = []
    values = []
    for x, t in zip(xs, labels):
        x, t = _diagonal(b, x, t)
        values.append(x)
        terms.append(t)
    for i in range(len(values)):  # labels only this operand has and the output does not: summed first
        others = set(out).union(*(terms[j] for j in range(len(terms)) if j != i))
        alone = [a for a, c in enumerate(terms[i]) if c not in others]
        if alone:
            values[i] = b.op("sum", values[i], axis=tuple(alone))
            terms[i] = "".join(c for c in terms[i] if c in others)
    x, tx = values[0], terms[0]
    for j in range(1, len(values)):
        needed = set(out).union(*terms[j + 1:])
        x, tx = _contract(b, x, tx, values[j], terms[j], needed)
    gone = [a for a, c in enumerate(tx) if c not in out]
    if gone:
        x = b.op("sum", x, axis=tuple(gone))
        tx = "".join(c for c in tx if c in out)
    return [_to_order(b, x, tx, out) if tx else x]


def _infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if not ts:
        raise InferError("einsum: needs at least one operand")
    if any(isinstance(d, Sym) for t in ts for d in t.shape):
        raise InferError("einsum: operands of shapes " + ", ".join(fmt_shape(t.shape) for t in ts) +
                         " have sizes only known at launch; einsum needs static sizes")
    labels, _ = parse(attrs.get("subscripts", ""), [t.ndim for t in ts])
    _sizes(labels, [t.shape for t in ts])
    return tuple(types_of(_einsum, ts, dict(attrs)))


def _eager(*arrays: Any, subscripts: str) -> Any:
    return np.einsum(subscripts, *arrays)


register(OpDef("einsum", Category.OPAQUE, named("einsum", _infer), _eager, decompose=decompose_of(_einsum),
               expensive=True, doc="Einstein summation (internal: np.einsum is its sugar)"))


def einsum(subscripts, *operands, optimize=False):  # noqa: ANN001, ANN201 - numpy's signature
    """Einstein summation over the operands' labelled axes."""
    return np.einsum(subscripts, *operands, optimize=optimize)


def _bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    import inspect  # the sugar's own signature, read on the (rare) call

    arguments = sugar_arguments(einsum, inspect.signature(einsum), args, kwargs)
    subscripts = arguments["subscripts"]
    if not isinstance(subscripts, str):
        raise TypeError("einsum(): the subscripts must be a string (the interleaved operand form is not supported)")
    return list(arguments["operands"]), {"subscripts": subscripts}


register_sugar("einsum", "einsum", einsum, _bind, numpy_names=("einsum",))
