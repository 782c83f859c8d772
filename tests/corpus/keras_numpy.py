"""Keras-3-numpy-backend style: every op converts its inputs with convert_to_tensor, dtypes are standardised
by name, scalars become `np.array(c, x.dtype)` so numpy keeps the input's dtype."""
from __future__ import annotations

import numpy as np
import scipy.special

from .harness import Call, case, f32

CASES: list = []
KERAS = "keras"


def standardize_dtype(dtype):
    if dtype is None:
        return "float32"
    if hasattr(dtype, "name"):
        dtype = dtype.name
    elif hasattr(dtype, "__name__"):
        dtype = dtype.__name__
    elif hasattr(dtype, "__str__") and ("torch" in str(dtype) or "jax.numpy" in str(dtype)):
        dtype = str(dtype).split(".")[-1]
    if dtype == "float":
        dtype = "float32"
    if dtype == "int":
        dtype = "int32"
    return dtype


def result_type(*dtypes):
    if len(dtypes) == 0:
        return "float32"
    return standardize_dtype(np.result_type(*[standardize_dtype(d) if isinstance(d, str) else d for d in dtypes]))


def is_tensor(x):
    if isinstance(x, (np.generic, np.ndarray)):
        return True
    return False


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    if sparse:
        raise ValueError("`sparse=True` is not supported with numpy backend")
    if ragged:
        raise ValueError("`ragged=True` is not supported with numpy backend")
    if dtype is not None:
        dtype = standardize_dtype(dtype)
    if dtype is None:
        dtype = result_type(getattr(x, "dtype", type(x)))
    return np.array(x, dtype=dtype)


def standardize_axis_for_numpy(axis):
    """NumPy doesn't allow list as axis, so we need to convert it to tuple."""
    return tuple(axis) if isinstance(axis, list) else axis


def epsilon():
    return 1e-7


# ---- nn ------------------------------------------------------------------------------------------------


def relu(x):
    x = convert_to_tensor(x)
    return np.maximum(x, np.array(0.0, x.dtype))


def relu6(x):
    x = convert_to_tensor(x)
    # np.clip incorrectly promote bfloat16 to float32, so we replace it with np.minimum and np.maximum here
    return np.minimum(np.maximum(x, np.array(0.0, x.dtype)), np.array(6.0, x.dtype))


def sigmoid(x):
    x = convert_to_tensor(x)
    return np.array(1.0, x.dtype) / (np.array(1.0, x.dtype) + np.exp(-x))


def tanh(x):
    return np.tanh(x)


def softplus(x):
    x = convert_to_tensor(x)
    return np.logaddexp(x, np.array(0.0, x.dtype))


def softsign(x):
    x = convert_to_tensor(x)
    return x / (np.array(1.0, x.dtype) + np.abs(x))


def silu(x):
    x = convert_to_tensor(x)
    return x * sigmoid(x)


def log_sigmoid(x):
    x = convert_to_tensor(x)
    return -softplus(-x)


def leaky_relu(x, negative_slope=0.2):
    x = convert_to_tensor(x)
    return np.maximum(x, np.array(negative_slope, x.dtype) * x)


def hard_sigmoid(x):
    # python numbers will be promoted to float64 by np, so it's neccessary to
    # first convert the python numbers to np scalars
    x = x / np.array(6.0, x.dtype) + np.array(0.5, x.dtype)
    return np.where(x <= 0.0, np.array(0.0, x.dtype), np.where(x >= 1.0, np.array(1.0, x.dtype), x))


def hard_silu(x):
    return x * hard_sigmoid(x)


def elu(x, alpha=1.0):
    x = convert_to_tensor(x)
    return np.where(x >= np.array(0.0, x.dtype), x, np.array(alpha, x.dtype) * np.expm1(x))


def selu(x, alpha=1.6732632423543772848170429916717, scale=1.0507009873554804934193349852946):
    x = convert_to_tensor(x)
    return np.array(scale, x.dtype) * elu(x, alpha)


def gelu(x, approximate=True):
    x = convert_to_tensor(x)
    # followed by JAX's implementation
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
        cdf = np.array(0.5, x.dtype) * (
            np.array(1.0, x.dtype)
            + np.tanh(sqrt_2_over_pi * (x + np.array(0.044715, x.dtype) * (x**3).astype(x.dtype)))
        )
        return x * cdf
    else:
        sqrt_2 = np.sqrt(2).astype(x.dtype)
        return x * (scipy.special.erf(x / sqrt_2) + 1).astype(x.dtype) / np.array(2, x.dtype)


def softmax(x, axis=None):
    exp_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exp_x / np.sum(exp_x, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    max_x = np.max(x, axis=axis, keepdims=True)
    logsumexp = np.log(np.exp(x - max_x).sum(axis=axis, keepdims=True))
    return x - max_x - logsumexp


def one_hot(x, num_classes, axis=-1, dtype="float32"):
    x = convert_to_tensor(x)
    input_shape = x.shape
    x = x.reshape(-1)
    if not num_classes:
        num_classes = np.max(x) + 1
    batch_size = x.shape[0]
    categorical = np.zeros((batch_size, num_classes), dtype=dtype)
    valid_indices = x >= 0
    categorical[np.arange(batch_size)[valid_indices], x[valid_indices]] = 1
    # First, reshape the array with the extra dimension at the end
    output_shape = input_shape + (num_classes,)
    categorical = np.reshape(categorical, output_shape)
    # Then, move this new dimension to the right place (according to axis)
    if axis != -1:
        categorical = np.moveaxis(categorical, -1, axis)
    return categorical


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    target = np.array(target)
    output = np.array(output)
    if target.shape != output.shape:
        raise ValueError("Arguments `target` and `output` must have the same shape. "
                         f"Received: target.shape={target.shape}, output.shape={output.shape}")
    if len(target.shape) < 1:
        raise ValueError("Arguments `target` and `output` must be at least rank 1.")
    if from_logits:
        log_prob = log_softmax(output, axis=axis)
    else:
        output = output / np.sum(output, axis, keepdims=True)
        output = np.clip(output, epsilon(), 1.0 - epsilon())
        log_prob = np.log(output)
    return -np.sum(target * log_prob, axis=axis)


def binary_crossentropy(target, output, from_logits=False):
    target = np.array(target)
    output = np.array(output)
    if from_logits:
        output = sigmoid(output)
    output = np.clip(output, epsilon(), 1.0 - epsilon())
    bce = target * np.log(output)
    bce += (1.0 - target) * np.log(1.0 - output)
    return -bce


def moments(x, axes, keepdims=False, synchronized=False):
    if synchronized:
        raise NotImplementedError("Argument synchronized=True is not supported with NumPy.")
    axes = tuple(axes) if isinstance(axes, list) else axes
    # The dynamic range of float16 is too limited for statistics. As a
    # workaround, we simply perform the operations on float32 and convert back
    # to float16
    need_cast = False
    ori_dtype = standardize_dtype(x.dtype)
    if ori_dtype == "float16":
        need_cast = True
        x = x.astype("float32")
    mean = np.mean(x, axes, keepdims=True)
    # The variance is computed using $Var = E[|x|^2] - |E[x]|^2$, It is faster
    # but less numerically stable.
    variance = np.mean(np.square(x), axis=axes, keepdims=True) - np.square(mean)
    if not keepdims:
        mean = np.squeeze(mean, axes)
        variance = np.squeeze(variance, axes)
    if need_cast:
        # avoid overflow and underflow when casting from float16 to float32
        mean = np.clip(mean, np.finfo(np.float16).min, np.finfo(np.float16).max)
        variance = np.clip(variance, np.finfo(np.float16).min, np.finfo(np.float16).max)
        mean = mean.astype(ori_dtype)
        variance = variance.astype(ori_dtype)
    return mean, variance


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    shape = [1] * len(x.shape)
    shape[axis] = mean.shape[0]
    mean = np.reshape(mean, shape)
    variance = np.reshape(variance, shape)
    inv = 1.0 / np.sqrt(variance + epsilon)
    if scale is not None:
        scale = np.reshape(scale, shape)
        inv = inv * scale
    res = -mean * inv
    if offset is not None:
        offset = np.reshape(offset, shape)
        res = res + offset
    return x * inv + res


# ---- numpy ops ----------------------------------------------------------------------------------------


def add(x1, x2):
    if not isinstance(x1, (int, float)):
        x1 = convert_to_tensor(x1)
    if not isinstance(x2, (int, float)):
        x2 = convert_to_tensor(x2)
    dtype = result_type(getattr(x1, "dtype", type(x1)), getattr(x2, "dtype", type(x2)))
    x1 = convert_to_tensor(x1, dtype)
    x2 = convert_to_tensor(x2, dtype)
    return np.add(x1, x2)


def multiply(x1, x2):
    if not isinstance(x1, (int, float)):
        x1 = convert_to_tensor(x1)
    if not isinstance(x2, (int, float)):
        x2 = convert_to_tensor(x2)
    dtype = result_type(getattr(x1, "dtype", type(x1)), getattr(x2, "dtype", type(x2)))
    x1 = convert_to_tensor(x1, dtype)
    x2 = convert_to_tensor(x2, dtype)
    return np.multiply(x1, x2)


def mean(x, axis=None, keepdims=False):
    axis = standardize_axis_for_numpy(axis)
    x = convert_to_tensor(x)
    ori_dtype = standardize_dtype(x.dtype)
    if "int" in ori_dtype or ori_dtype == "bool":
        result_dtype = result_type(x.dtype, "float32")
    else:
        result_dtype = ori_dtype
    return np.mean(x, axis=axis, keepdims=keepdims).astype(result_dtype)


def max(x, axis=None, keepdims=False, initial=None):
    axis = standardize_axis_for_numpy(axis)
    return np.max(x, axis=axis, keepdims=keepdims, initial=initial)


def matmul(x1, x2):
    x1 = convert_to_tensor(x1)
    x2 = convert_to_tensor(x2)
    dtype = result_type(x1.dtype, x2.dtype)
    x1 = x1.astype(dtype)
    x2 = x2.astype(dtype)
    return np.matmul(x1, x2)


def einsum(subscripts, *operands, **kwargs):
    operands = [convert_to_tensor(x) for x in operands]
    dtypes_to_resolve = list(set(standardize_dtype(x.dtype) for x in operands))
    if len(dtypes_to_resolve) == 1 and dtypes_to_resolve[0] == "int8":
        compute_dtype = "int32"
        result_dtype = "int32"
    else:
        result_dtype = result_type(*dtypes_to_resolve)
        compute_dtype = result_dtype
    operands = [x.astype(compute_dtype) for x in operands]
    return np.einsum(subscripts, *operands, **kwargs).astype(result_dtype)


def cumsum(x, axis=None, dtype=None):
    axis = standardize_axis_for_numpy(axis)
    dtype = dtype or x.dtype
    return np.cumsum(x, axis=axis, dtype=dtype)


def cumprod(x, axis=None, dtype=None):
    axis = standardize_axis_for_numpy(axis)
    dtype = dtype or x.dtype
    return np.cumprod(x, axis=axis, dtype=dtype)


def log10(x):
    x = convert_to_tensor(x)
    dtype = standardize_dtype(x.dtype)
    if "int" in dtype or dtype == "bool":
        dtype = "float32"
    return np.log10(x, dtype=dtype)


def log1p(x):
    x = convert_to_tensor(x)
    dtype = standardize_dtype(x.dtype)
    if "int" in dtype or dtype == "bool":
        dtype = "float32"
    return np.log1p(x, dtype=dtype)


def sort(x, axis=-1):
    axis = standardize_axis_for_numpy(axis)
    return np.sort(x, axis=axis)


def argsort(x, axis=-1):
    axis = standardize_axis_for_numpy(axis)
    dtype = standardize_dtype(x.dtype)
    if dtype == "bool":
        x = x.astype("uint8")
    return np.argsort(x, axis=axis).astype("int32")


def append(x1, x2, axis=None):
    axis = standardize_axis_for_numpy(axis)
    x1 = convert_to_tensor(x1)
    x2 = convert_to_tensor(x2)
    dtype = result_type(x1.dtype, x2.dtype)
    x1 = x1.astype(dtype)
    x2 = x2.astype(dtype)
    return np.append(x1, x2, axis=axis)


def clip(x, x_min, x_max):
    x = convert_to_tensor(x)
    dtype = standardize_dtype(x.dtype)
    if dtype == "bool":
        dtype = "int32"
    return np.clip(x, x_min, x_max).astype(dtype)


def where(condition, x1=None, x2=None):
    if x1 is not None and x2 is not None:
        if not isinstance(x1, (int, float)):
            x1 = convert_to_tensor(x1)
        if not isinstance(x2, (int, float)):
            x2 = convert_to_tensor(x2)
        dtype = result_type(getattr(x1, "dtype", type(x1)), getattr(x2, "dtype", type(x2)))
        x1 = convert_to_tensor(x1, dtype)
        x2 = convert_to_tensor(x2, dtype)
        return np.where(condition, x1, x2)
    else:
        return np.where(condition)


def square(x):
    x = convert_to_tensor(x)
    if standardize_dtype(x.dtype) == "bool":
        x = x.astype("int32")
    return np.square(x)


def var(x, axis=None, keepdims=False):
    axis = standardize_axis_for_numpy(axis)
    x = convert_to_tensor(x)
    compute_dtype = result_type(x.dtype, "float32")
    result_dtype = result_type(x.dtype, float)
    return np.var(x, axis=axis, keepdims=keepdims, dtype=compute_dtype).astype(result_dtype)


def logsumexp(x, axis=None, keepdims=False):
    max_x = np.max(x, axis=axis, keepdims=True)
    result = np.log(np.sum(np.exp(x - max_x), axis=axis, keepdims=True)) + max_x
    return np.squeeze(result) if not keepdims else result


def top_k(x, k, sorted=False):
    if sorted:
        # Take the k largest values.
        sorted_indices = np.argsort(x, axis=-1)[..., ::-1]
        sorted_values = np.take_along_axis(x, sorted_indices, axis=-1)
        top_k_values = sorted_values[..., :k]
        top_k_indices = sorted_indices[..., :k]
    else:
        # Partition the array such that all values larger than the k-th
        # largest value are to the right of it.
        top_k_values = np.partition(x, -k, axis=-1)[..., -k:]
        top_k_indices = np.argpartition(x, -k, axis=-1)[..., -k:]
    return top_k_values, top_k_indices


def diag(x, k=0):
    x = convert_to_tensor(x)
    return np.diag(x, k=k)


def normalize(x, axis=-1, order=2, epsilon=None):
    if epsilon is None:
        epsilon = 1e-7
    norm = np.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    denom = np.maximum(norm, epsilon)
    return np.divide(x, denom)


def ones_like(x, dtype=None):
    return np.ones_like(x, dtype=dtype)


# ---- cases ---------------------------------------------------------------------------------------------


def _unary(fn, *shape):
    def make(rng):
        return Call(fn, (f32(rng, *shape),))
    make.__name__ = fn.__name__
    return make


for _fn in (relu, relu6, sigmoid, tanh, softplus, softsign, silu, log_sigmoid, leaky_relu, hard_sigmoid, hard_silu,
            elu, selu, gelu, square, log1p):
    case(KERAS, CASES)(_unary(_fn, 4, 8))


@case(KERAS, CASES)
def gelu_exact(rng):
    def kernel(x):
        return gelu(x, approximate=False)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def softmax_last(rng):
    def kernel(x):
        return softmax(x, axis=-1)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def log_softmax_last(rng):
    def kernel(x):
        return log_softmax(x, axis=-1)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def one_hot_labels(rng):
    def kernel(y):
        return one_hot(y, 5)

    return Call(kernel, (rng.integers(0, 5, size=6).astype(np.int32),))


@case(KERAS, CASES)
def categorical_ce(rng):
    t = np.eye(5, dtype=np.float32)[rng.integers(0, 5, size=4)]
    def kernel(t, o):
        return categorical_crossentropy(t, o, from_logits=True)

    return Call(kernel, (t, f32(rng, 4, 5)))


@case(KERAS, CASES)
def categorical_ce_probs(rng):
    t = np.eye(5, dtype=np.float32)[rng.integers(0, 5, size=4)]
    p = np.abs(f32(rng, 4, 5)) + 0.1
    return Call(categorical_crossentropy, (t, p))


@case(KERAS, CASES)
def binary_ce(rng):
    t = (rng.random((4, 3)) > 0.5).astype(np.float32)
    def kernel(t, o):
        return binary_crossentropy(t, o, from_logits=True)

    return Call(kernel, (t, f32(rng, 4, 3)))


@case(KERAS, CASES)
def moments_batch(rng):
    def kernel(x):
        return moments(x, [0])

    return Call(kernel, (f32(rng, 6, 8),))


@case(KERAS, CASES)
def batch_norm_inference(rng):
    def kernel(x, m, v, o, s):
        return batch_normalization(x, m, v, axis=-1, offset=o, scale=s)

    return Call(kernel, (f32(rng, 4, 8), f32(rng, 8), np.abs(f32(rng, 8)) + 0.5, f32(rng, 8), f32(rng, 8)))


@case(KERAS, CASES)
def add_scalar(rng):
    def kernel(x):
        return add(x, 2.0)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def multiply_tensors(rng):
    return Call(multiply, (f32(rng, 4, 8), f32(rng, 8)))


@case(KERAS, CASES)
def mean_list_axis(rng):
    def kernel(x):
        return mean(x, axis=[0, 1])

    return Call(kernel, (f32(rng, 3, 4, 8),))


@case(KERAS, CASES)
def mean_int(rng):
    def kernel(x):
        return mean(x, axis=1)

    return Call(kernel, (rng.integers(0, 9, size=(3, 4)).astype(np.int32),))


@case(KERAS, CASES)
def max_initial(rng):
    def kernel(x):
        return max(x, axis=1, initial=0.0)

    return Call(kernel, (f32(rng, 3, 4),))


@case(KERAS, CASES)
def matmul_mixed(rng):
    return Call(matmul, (f32(rng, 4, 8), f32(rng, 8, 3).astype(np.float16)))


@case(KERAS, CASES)
def einsum_bilinear(rng):
    def kernel(a, b):
        return einsum("ij,jk->ik", a, b)

    return Call(kernel, (f32(rng, 4, 8), f32(rng, 8, 3)))


@case(KERAS, CASES)
def einsum_attention(rng):
    def kernel(q, k):
        return einsum("bqhd,bkhd->bhqk", q, k)

    return Call(kernel, (f32(rng, 2, 4, 2, 8), f32(rng, 2, 4, 2, 8)))


@case(KERAS, CASES)
def cumsum_axis(rng):
    def kernel(x):
        return cumsum(x, axis=1)

    return Call(kernel, (f32(rng, 3, 6),))


@case(KERAS, CASES)
def cumprod_axis(rng):
    def kernel(x):
        return cumprod(x, axis=1)

    return Call(kernel, (np.abs(f32(rng, 3, 6)) + 0.5,))


@case(KERAS, CASES)
def log10_values(rng):
    return Call(log10, (np.abs(f32(rng, 4, 8)) + 0.1,))


@case(KERAS, CASES)
def sort_last(rng):
    return Call(sort, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def argsort_last(rng):
    return Call(argsort, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def append_axis0(rng):
    def kernel(a, b):
        return append(a, b, axis=0)

    return Call(kernel, (f32(rng, 2, 4), f32(rng, 3, 4)))


@case(KERAS, CASES)
def clip_values(rng):
    def kernel(x):
        return clip(x, -0.5, 0.5)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def where_scalar(rng):
    def kernel(c, x):
        return where(c, x, 0.0)

    return Call(kernel, (rng.random((4, 8)) > 0.5, f32(rng, 4, 8)))


@case(KERAS, CASES)
def var_axis(rng):
    def kernel(x):
        return var(x, axis=0)

    return Call(kernel, (f32(rng, 6, 8),))


@case(KERAS, CASES)
def logsumexp_rows(rng):
    def kernel(x):
        return logsumexp(x, axis=-1)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def top_k_sorted(rng):
    def kernel(x):
        return top_k(x, 3, sorted=True)

    return Call(kernel, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def diag_vector(rng):
    return Call(diag, (f32(rng, 5),))


@case(KERAS, CASES)
def normalize_l2(rng):
    return Call(normalize, (f32(rng, 4, 8),))


@case(KERAS, CASES)
def ones_like_dtype(rng):
    def kernel(x):
        return ones_like(x, dtype="int32") + x.astype("int32")

    return Call(kernel, (f32(rng, 4, 8),))
