"""scatter_rows (internal): rows of a table written at integer row indices, numpy's `x[idx] = v` and
`np.add.at(x, idx, v)` once the frontend has flattened the indexed axes (frontend/fancy.py).

scatter_rows(table (P, R), ids (J,) int, values (J, R), active (J,) bool; mode "set" | "add"):
- "set": row p becomes values[j] for the last j with ids[j] == p and active[j] (numpy's assignment: the last
  of duplicate indices wins); rows no index names keep their value;
- "add": row p gains the sum of values[j] over every active j with ids[j] == p (np.add.at: duplicates
  accumulate).
Indices outside [0, P) select no row (the frontend has normalised negative ones and records the
out-of-range condition numpy raises on). The one-hot hit[j, p] = (ids[j] == p) & active[j] has J x P
elements: fine for the label and position writes numpy code does, not a substitute for a DMA scatter
into a large table. "set" reads the winning row with `take` (exact for every float value); "add" sums
with a where and a reduction (exact for integers; floats add in a different order than numpy's loop).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder, decompose_of, types_of
from .common import fmt_shape, named
from .registry import Category, OpDef, register

MODES = ("set", "add")


def _scatter(b: Builder, table: Any, ids: Any, values: Any, active: Any, *, mode: str = "set") -> list[Any]:
    p = b.shape(table)[0]
    j = b.shape(ids)[0]
    dt = b.dtype(table)
    iota = b.array(np.arange(p, dtype=np.int32).reshape(1, p))
    # an inactive index becomes P, which names no row (one select on J elements instead of an `and` on J x P)
    named_row = b.op("where", active, b.cast(ids, "int32"), b.const(p, "int32"))
    hit = b.op("eq", b.op("reshape", named_row, shape=(j, 1)), iota)                          # (J, P)
    vals = b.cast(values, dt)
    if mode == "add":
        acc = dt if dt in ("float16", "float32") else "int32"
        zero = b.const(0, acc)
        picked = b.op("where", b.op("expand_dims", hit, axis=2),
                      b.op("expand_dims", b.cast(vals, acc), axis=1), zero)                  # (J, P, R)
        total = b.op("sum", picked, axis=0)                                                  # (P, R)
        return [b.cast(b.op("add", b.cast(table, acc), total), dt)]
    order = b.array(np.arange(j, dtype=np.int32).reshape(j, 1))
    winner = b.op("max", b.op("where", hit, order, b.const(-1, "int32")), axis=0)            # (P,)
    has = b.op("ge", winner, b.const(0, "int32"))
    rows = b.op("take", vals, b.op("maximum", winner, b.const(0, "int32")), axis=0)          # (P, R)
    return [b.op("where", b.op("reshape", has, shape=(p, 1)), rows, table)]


def _check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if len(ts) != 4:
        raise InferError(f"takes 4 inputs (table, ids, values, active), got {len(ts)}")
    table, ids, values, active = ts
    if attrs.get("mode", "set") not in MODES:
        raise InferError(f"mode must be one of {', '.join(MODES)}, got {attrs.get('mode')!r}")
    if table.ndim != 2 or ids.ndim != 1 or values.ndim != 2 or active.ndim != 1:
        raise InferError(f"expects table (P, R), ids (J,), values (J, R), active (J,); got {fmt_shape(table.shape)}, "
                         f"{fmt_shape(ids.shape)}, {fmt_shape(values.shape)}, {fmt_shape(active.shape)}")
    if any(isinstance(d, Sym) for t in ts for d in t.shape):
        raise InferError("needs static shapes")
    if not dtypes.is_int(ids.dtype) or active.dtype != "bool":
        raise InferError(f"ids must be integers and active bool, got {ids.dtype} and {active.dtype}")
    if values.shape[0] != ids.shape[0] or values.shape[1] != table.shape[1] or active.shape[0] != ids.shape[0]:
        raise InferError(f"shapes do not agree: table {fmt_shape(table.shape)}, ids {fmt_shape(ids.shape)}, values "
                         f"{fmt_shape(values.shape)}, active {fmt_shape(active.shape)}")


def _infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    _check(ts, attrs)
    return tuple(types_of(_scatter, ts, dict(attrs)))


def _eager(table: Any, ids: Any, values: Any, active: Any, *, mode: str = "set") -> Any:
    out = np.array(table, copy=True)
    vals = np.asarray(values).astype(out.dtype)
    p = out.shape[0]
    for j, (i, a) in enumerate(zip(np.asarray(ids), np.asarray(active))):
        if a and 0 <= i < p:
            if mode == "add":
                out[i] += vals[j]
            else:
                out[i] = vals[j]
    return out


register(OpDef("scatter_rows", Category.OPAQUE, named("scatter_rows", _infer), _eager,
               decompose=decompose_of(_scatter), expensive=True,
               doc="rows of a table written at integer indices (internal: x[idx] = v, np.add.at)"))
