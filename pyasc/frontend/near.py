"""What to suggest for a numpy function pyasc does not compile: functions that mean something close, then ones
spelled alike (`np.nancumsum` -> np.cumsum; `np.median` -> np.sort, np.mean; never `np.cumprod` -> np.mod).

`FAMILIES` groups numpy names by what they do; a name in a family suggests the family's members that pyasc
compiles, in the family's order (the most common first). Spelling alone (difflib) is the fallback, with a cutoff that keeps
unrelated short names out.
"""
from __future__ import annotations

import difflib

from .. import ops

#: numpy (and scipy.special) names by meaning; order within a family is not significant
FAMILIES: dict[str, tuple[str, ...]] = {
    "cumulative": ("cumsum", "cumprod", "nancumsum", "nancumprod", "diff", "ediff1d", "gradient", "trapz",
                   "trapezoid"),
    "sorting": ("sort", "argsort", "partition", "argpartition", "lexsort", "msort", "sort_complex",
                "searchsorted", "take_along_axis", "median", "percentile", "quantile", "nanmedian",
                "nanpercentile", "nanquantile", "unique"),
    "extrema": ("max", "min", "amax", "amin", "argmax", "argmin", "nanmax", "nanmin", "nanargmax", "nanargmin",
                "ptp", "maximum", "minimum", "fmax", "fmin", "clip"),
    "statistics": ("mean", "average", "var", "std", "median", "nanmean", "nanvar", "nanstd", "nansum", "sum",
                   "prod", "nanprod", "cov", "corrcoef", "histogram", "bincount", "count_nonzero"),
    "exp_log": ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2", "power",
                "float_power", "sqrt", "cbrt", "square", "reciprocal", "scipy.special.logsumexp",
                "scipy.special.xlogy", "scipy.special.xlog1py"),
    "rounding": ("round", "around", "rint", "floor", "ceil", "trunc", "fix", "modf", "divmod", "mod", "remainder",
                 "fmod", "floor_divide"),
    "products": ("dot", "matmul", "einsum", "outer", "inner", "tensordot", "vdot", "kron", "cross",
                 "linalg.multi_dot", "linalg.matrix_power", "vecdot", "matvec", "vecmat"),
    "linalg": ("matmul", "dot", "transpose", "outer", "linalg.norm", "linalg.det", "linalg.inv", "linalg.solve",
               "linalg.svd", "linalg.eig", "linalg.eigh", "linalg.qr", "linalg.cholesky", "linalg.pinv",
               "linalg.lstsq", "trace", "diag", "diagonal"),
    "joining": ("concatenate", "concat", "stack", "hstack", "vstack", "dstack", "column_stack", "row_stack",
                "append", "insert", "block", "split", "array_split", "hsplit", "vsplit", "delete"),
    "shape": ("reshape", "ravel", "squeeze", "expand_dims", "transpose", "swapaxes", "moveaxis", "rollaxis",
              "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "flip", "fliplr", "flipud", "roll",
              "rot90", "tile", "repeat", "pad", "resize"),
    "selection": ("where", "take", "take_along_axis", "put", "put_along_axis", "choose", "select", "compress",
                  "extract", "place", "putmask", "nonzero", "argwhere", "flatnonzero", "copyto"),
    "nan": ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num", "nansum", "nanmean", "nanmax",
            "nanmin", "isnat"),
    "logic": ("logical_and", "logical_or", "logical_xor", "logical_not", "all", "any", "isclose", "allclose",
              "array_equal", "array_equiv", "equal", "not_equal", "where"),
    "creation": ("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
                 "linspace", "logspace", "geomspace", "eye", "identity", "diag", "diagflat", "tri", "tril", "triu",
                 "meshgrid", "indices", "mgrid", "ogrid", "fromfunction", "vander"),
    "trig": ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
             "arccosh", "arctanh", "hypot", "deg2rad", "rad2deg", "degrees", "radians", "sinc"),
    "activations": ("scipy.special.expit", "scipy.special.logit", "scipy.special.softmax",
                    "scipy.special.log_softmax", "scipy.special.erf", "scipy.special.erfc", "scipy.special.erfinv",
                    "tanh", "sigmoid", "relu", "gelu", "silu", "softmax", "log_softmax"),
    "sign": ("sign", "abs", "absolute", "fabs", "negative", "positive", "copysign", "signbit", "heaviside"),
}


def _compiled(name: str) -> bool:
    """pyasc compiles `name` (a numpy/scipy name the registry has a twin for, or a pyasc public function)."""
    return ops.numpy_twin(name) is not None or name in ops.public_functions()


def near_names(name: str) -> list[str]:
    """pyasc-compiled names close to `name` in meaning (in the families' order), then in spelling (at most five)."""
    full = name.split("np.", 1)[-1] if name.startswith("np.") else name
    last = full.rsplit(".", 1)[-1]
    by_meaning: list[str] = []
    for members in FAMILIES.values():
        if full in members or last in members:
            for m in members:
                if m != full and _compiled(m) and m not in by_meaning:
                    by_meaning.append(m)
    pool = sorted(set(ops.numpy_names()) | set(ops.public_functions()))
    cutoff = 0.8 if by_meaning else 0.7
    by_spelling = [m for m in difflib.get_close_matches(last, pool, n=5, cutoff=cutoff)
                   if m not in by_meaning and m != full]
    return (by_meaning + by_spelling)[:5]


def spell(name: str) -> str:
    """How a suggestion is written: np.<name>, scipy.special.<name>, or pyasc.<name> for pyasc's own."""
    if ops.numpy_twin(name) is not None:
        return name if name.startswith("scipy.") else f"np.{name}"
    return f"pyasc.{name}"


#: numpy functions whose result's size depends on the values (a kernel's shapes are fixed when it compiles), and
#: what keeps a static shape instead
_SELECTION = "np.where(condition, x, fill) keeps the shape, and x[mask].sum() (or .max(), ...) reduces a selection"
DATA_DEPENDENT: dict[str, str] = {
    "unique": "np.sort keeps every element with equal ones adjacent; np.isin(x, values) tests membership",
    "unique_values": "np.sort keeps every element with equal ones adjacent",
    "unique_counts": "(x[..., None] == values).sum(axis=0) counts compile-time values",
    "unique_inverse": "np.searchsorted(sorted_values, x) indexes compile-time values",
    "unique_all": "np.sort and np.isin keep static shapes",
    "nonzero": _SELECTION, "argwhere": _SELECTION, "flatnonzero": _SELECTION, "extract": _SELECTION,
    "trim_zeros": "np.where keeps the shape",
    "intersect1d": "np.isin(a, b) marks the common elements", "setdiff1d": "np.isin(a, b, invert=True) marks them",
    "union1d": "np.concatenate and np.sort keep every element", "setxor1d": "np.isin marks the elements",
}


def data_dependent(name: str) -> str | None:
    """Why `np.<name>` cannot compile and what to write instead, when its result's size depends on the values."""
    why = DATA_DEPENDENT.get(name)
    if why is None:
        return None
    return (f"its result's size depends on the values, and a kernel's shapes are fixed when it compiles; "
            f"instead: {why}")
