"""The op registry (see registry.py) and every op definition.

Importing this package registers all ops; `pyasc/__init__` exports
`public_functions()`: one eager function per op with a signature, plus the
sugar functions zeros/ones (-> full) and astype (-> cast).

Op names, operands and attributes (attribute defaults in brackets):

  add sub mul div floordiv mod pow maximum minimum  (x1, x2)      broadcasting
  lt le gt ge eq ne -> bool; bitwise_and/or/xor      (x1, x2)      ints and bool
  neg invert abs exp log sqrt rsqrt reciprocal sin cos tanh sigmoid relu
  gelu silu erf floor ceil sign                        (x)
  where                                   (condition, x, y)
  cast                                    (x)        dtype
  sum max min mean                        (a)        axis [None] int|tuple, keepdims [False]
  softmax log_softmax                     (x)        axis [-1]
  layer_norm                              (x[, weight][, bias])  eps [1e-5], has_weight, has_bias
  rms_norm                                (x[, weight])          eps [1e-6], has_weight
  matmul                                  (a, b)     transpose_a [False], transpose_b [False]
  fused_matmul (internal)                 (a, b[, bias])  transpose_a, transpose_b, has_bias [False],
                                                       activation [None]|"relu", out_dtype [None]
  transpose                               (a)        axes [None]
  reshape                                 (a)        shape (may hold one -1)
  broadcast_to                            (array)    shape
  expand_dims                             (a)        axis int|tuple
  squeeze                                 (a)        axis [None] int|tuple
  slice (internal)                        (x)        starts, stops, steps (one per axis, normalised)
  slice_update (internal)                 (x, v)     starts, stops, steps: x with that region replaced by v
  transdata (internal)                    (x)        src_format, dst_format
  full                                    ()         shape, fill_value, dtype [None]
  Data ()  index, type;   Const ()  value;   If (cond, *branch inputs)  then_branch, else_branch

Composites (a `decompose`): softmax log_softmax layer_norm rms_norm gelu silu erf.
  attention                               (q, k, v[, mask])  scale [None: 1/sqrt(D)], causal [False], has_mask;
                                          OPAQUE: its own kernel, else its decomposition (attention.py)

numpy functions as composites whose eager function is numpy's own (numpy_composite.py):
  log1p expm1 sinh cosh arctan arcsin arccos log2 exp2 square copy   (x) / (a)   elementary.py
  logaddexp (x1, x2); clip (a[, a_min][, a_max])                                  elementary.py
  var std (a) axis [None], ddof [0], keepdims [False]                            statistics.py
  full_like (a) fill_value, dtype [None]; sugar zeros_like ones_like empty_like   like.py
  swapaxes (a) axis1, axis2; moveaxis (a) source, destination; repeat (a) repeats, axis [None];
  tile (A) reps; pad (array) pad_width, mode ["constant"], constant_values [0]   arrange.py
  dot (a, b)                                                                      dot.py
  argmax argmin (a) axis [None], keepdims [False]; take (a, indices) axis [None]  search.py
  cumsum (a) axis [None], dtype [None]                                            scan.py
  arange linspace eye tri () (numpy's attributes); tril triu (m) k [0]; outer (a, b)   constructors.py
  roll (a) shift, axis [None]; diff (a[, prepend][, append]) n [1], axis [-1]      shifts.py
  flip (m) axis [None]; fliplr flipud (m)                                         flips.py
  isclose allclose (a, b) rtol, atol, equal_nan; heaviside (x1, x2);
  select (internal, variadic: conds then choices) n, default; sugar select        closeness.py
  nansum nanmean nanmax nanmin ptp (a) axis [None], keepdims; nanvar nanstd (a) + ddof [0]   nanreduce.py
  np.<ufunc>.reduce/accumulate/outer: sugar <ufunc>_<method> over sum prod max min all any cumsum cumprod and
  the internal ufunc_accumulate (array) ufunc, axis; ufunc_outer (A, B) ufunc        ufuncs.py
  tensordot (a, b) axes [2]; inner kron (a, b); cross (a, b) axisa, axisb, axisc, axis;
  matrix_power (a) n                                                              products.py
  quantile percentile (a) q, axis [None], keepdims; median (a) axis, keepdims;
  searchsorted (a, v) side ["left"]; interp (x, xp, fp) left, right, period       quantiles.py
  convolve (a, v) mode ["full"]; correlate (a, v) mode ["valid"]; trapezoid (y[, x]) dx [1.0], axis [-1];
  meshgrid (internal, variadic, one output per input) sparse, indexing; sugar meshgrid   signal.py
  concat (internal, variadic) axis, kind; split (internal, one output per piece) sections, axis, equal:
  sugar concatenate concat stack hstack vstack / split array_split                 joining.py

numpy functions as internal ops with a sugar binding numpy's signature (numpy_composite.numpy_sugar_op; their
values are tested in tests/test_ops_numpy4.py):
  hypot copysign fmod ldexp float_power left_shift right_shift (x1, x2); cbrt deg2rad rad2deg sinc (x);
  real imag conj (val)/(x); angle (z) deg; modf frexp (x) and divmod (x1, x2): two outputs   floatmath.py
  rot90 (m) k, axes; dstack column_stack (variadic); resize (a) new_shape; delete (arr) obj, axis;
  compress (a) condition, axis; insert (arr, values) obj, axis; diagonal (a) offset, axis1, axis2;
  unravel_index (indices) shape, order: one output per axis; pad's edge/reflect/symmetric/wrap   rearrange.py
  cov (m[, y]) rowvar, bias, ddof; corrcoef (x[, y]) rowvar                                   covariance.py
  polyval (p, x); gradient (f) varargs, axis, edge_order: one output per axis; ediff1d (ary[, to_end][, to_begin]);
  unwrap (p) discont, axis, period; nancumsum nancumprod (a) axis, dtype;
  cumulative_sum cumulative_prod (x) axis, dtype, include_initial                             series.py
  digitize (x, bins) right; histogram (a[, weights]) bins, range, density: (counts, edges);
  isin (element, test_elements) invert; choose (a, *choices) mode                              binning.py
  lexsort (*keys) axis                                                                         lexsort.py
  vdot (a, b)                                                                                  products.py
  linalg.solve (a, b); linalg.inv linalg.det (a); linalg.slogdet (a): (sign, logabsdet);
  linalg.cholesky (a) upper                                                                     linsolve.py
  lib.stride_tricks.sliding_window_view (x) window_shape, axis                                 windows.py
  linspace_between (internal: np.linspace with tensor ends) (start, stop) num, endpoint, dtype, axis  spaces.py
  tan arcsinh arccosh arctanh (x); arctan2 logaddexp2 (x1, x2) (np.atan2 asinh acosh atanh too)   trig.py
  fabs positive signbit isposinf isneginf (x); gcd lcm (x1, x2)                                 signs.py
  nanargmax nanargmin (a) axis, keepdims; nanprod (a) axis, dtype, keepdims; nanmedian (a) axis, keepdims;
  nanquantile nanpercentile (a) q, axis, keepdims                                              nanorder.py
  array_equal (a1, a2) equal_nan; array_equiv (a1, a2); vander (x) N, increasing; rollaxis (a) axis, start;
  broadcast_arrays (variadic, one output per input)                                            arraytools.py
  vecdot (x1, x2) axis; matvec vecmat (x1, x2); packbits (a) axis, bitorder; unpackbits (a) axis, count,
  bitorder                                                                                     vecproducts.py

Facts passes read from each OpDef (see registry.py): structural (Data Const If),
leaf (Data Const), subgraph_attrs (If), reduce_axes / reduced_axes (REDUCE ops),
row_composite (softmax log_softmax layer_norm rms_norm), cube_operands and
accepted formats (matmul fused_matmul: ND or FRACTAL_NZ on a and b; transdata
and If: any format; everything else ND), expensive (not cheap to recompute), data_error
(numpy raises on some operand values, nanargmax's all-NaN slice: the frontend records a data check).
"""
from .registry import (  # noqa: F401
    ANY_FORMAT,
    ELEMENTWISE_FORMATS,
    ND_ONLY,
    Category,
    CubeOperand,
    DataError,
    OpDef,
    bind_call,
    exists,
    get,
    infer,
    names,
    numpy_function,
    numpy_names,
    numpy_twin,
    public,
    public_functions,
    register,
    register_sugar,
)
from . import elementwise, reduce, shape, matmul, creation, composite, dimvalue, loop, update  # noqa: F401,E402  (registers ops)
from . import elementary, statistics, like, joining, arrange, dot, search, scan, constructors  # noqa: F401,E402  (numpy functions as composites)
from . import npmath, special, accumulate, linalg, einsum, sorting, scatter, shifts  # noqa: F401,E402  (more numpy, scipy.special)
from . import flips, closeness, nanreduce, ufuncs, products, quantiles, signal  # noqa: F401,E402  (numpy functions, issue 22 part 3)
from . import floatmath, rearrange, covariance, series, binning, lexsort  # noqa: F401,E402  (numpy functions, numpy4)
from . import linsolve  # noqa: F401,E402  (np.linalg.solve, inv, det, slogdet, cholesky)
from . import windows  # noqa: F401,E402  (np.lib.stride_tricks.sliding_window_view)
from . import spaces  # noqa: F401,E402  (np.linspace with run-time ends: linspace_between)
from . import trig, signs, nanorder, arraytools, vecproducts  # noqa: F401,E402  (numpy functions, numpy6)
from . import attention  # noqa: F401,E402  (registers the attention op)
from . import conv  # noqa: F401,E402  (conv2d, pooling, batch_norm)
from . import vjp_elementwise, vjp_structure, vjp_composite  # noqa: F401,E402  (VJP rules, keyed by op)
from .shape import IndexPlan, normalize_index  # noqa: F401,E402
