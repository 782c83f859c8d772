"""The FX frontend's entries for convolutions, pooling and inference batch norm (merged into aten_ops.TABLE).

aten.convolution (2-D, not transposed) -> pyasc.conv2d; max_pool2d(_with_indices) -> pyasc.max_pool2d
(the indices are not computed: an entry whose indices are read is a graph break); avg_pool2d ->
pyasc.avg_pool2d (no divisor_override); batch norm in inference (running statistics) -> pyasc.batch_norm,
which GE folds into a preceding conv. Arguments the ops do not take raise `Unsupported` (a reported graph
break).
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import torch

aten = torch.ops.aten


class Unsupported(Exception):
    """Arguments these entries cannot express (aten_ops re-raises it as its own)."""


def _arg(node: torch.fx.Node, i: int, name: str, default: Any) -> Any:
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _pair(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(v) if len(v) == 2 else (v[0], v[0]) if len(v) == 1 else None
    return v


def _convolution(e: Callable[[Any], str], n: torch.fx.Node) -> str:
    x, w, b = n.args[0], n.args[1], _arg(n, 2, "bias", None)
    stride, padding, dilation = (_pair(_arg(n, i, k, 1 if k != "padding" else 0))
                                 for i, k in ((3, "stride"), (4, "padding"), (5, "dilation")))
    transposed, groups = _arg(n, 6, "transposed", False), _arg(n, 8, "groups", 1)
    if transposed:
        raise Unsupported("transposed convolution")
    if w.meta["val"].dim() != 4:
        raise Unsupported(f"a {w.meta['val'].dim() - 2}-D convolution (pyasc has conv2d)")
    bias = e(b) if b is not None else "None"
    return (f"pyasc.conv2d({e(x)}, {e(w)}, {bias}, stride={stride!r}, padding={padding!r}, "
            f"dilation={dilation!r}, groups={groups!r})")


def _conv2d(e: Callable[[Any], str], n: torch.fx.Node) -> str:
    x, w, b = n.args[0], n.args[1], _arg(n, 2, "bias", None)
    stride, padding, dilation = (_pair(_arg(n, i, k, d)) for i, k, d in ((3, "stride", 1), (4, "padding", 0),
                                                                        (5, "dilation", 1)))
    bias = e(b) if b is not None else "None"
    return (f"pyasc.conv2d({e(x)}, {e(w)}, {bias}, stride={stride!r}, padding={padding!r}, "
            f"dilation={dilation!r}, groups={_arg(n, 6, 'groups', 1)!r})")


def _pool_args(n: torch.fx.Node) -> tuple[Any, Any, Any, bool]:
    kernel = _pair(n.args[1])
    stride = _pair(_arg(n, 2, "stride", None))
    padding = _pair(_arg(n, 3, "padding", 0))
    return kernel, (None if stride in ((), [], None) else stride), padding, bool(_arg(n, 5, "ceil_mode", False))


def _max_pool(e: Callable[[Any], str], n: torch.fx.Node) -> str:
    kernel, stride, padding, _ = _pool_args(n)
    if _pair(_arg(n, 4, "dilation", 1)) not in (1, (1, 1)):
        raise Unsupported("max pooling with dilation")
    ceil_mode = bool(_arg(n, 5, "ceil_mode", False))
    return f"pyasc.max_pool2d({e(n.args[0])}, {kernel!r}, {stride!r}, {padding!r}, {ceil_mode!r})"


def _max_pool_with_indices(e: Callable[[Any], str], n: torch.fx.Node) -> list[str]:
    if any(u.target is operator.getitem and u.args[1] == 1 for u in n.users):
        raise Unsupported("max pooling whose indices are used")
    return [_max_pool(e, n), "None"]


def _avg_pool(e: Callable[[Any], str], n: torch.fx.Node) -> str:
    kernel, stride, padding, _ = _pool_args(n)
    ceil_mode = bool(_arg(n, 4, "ceil_mode", False))
    count_include_pad = bool(_arg(n, 5, "count_include_pad", True))
    if _arg(n, 6, "divisor_override", None) is not None:
        raise Unsupported("avg pooling with divisor_override")
    return (f"pyasc.avg_pool2d({e(n.args[0])}, {kernel!r}, {stride!r}, {padding!r}, {ceil_mode!r}, "
            f"{count_include_pad!r})")


def _bn(e: Callable[[Any], str], x: Any, w: Any, b: Any, mean: Any, var: Any, eps: Any) -> str:
    if mean is None or var is None:
        raise Unsupported("batch norm without running statistics")
    weight = e(w) if w is not None else "None"
    bias = e(b) if b is not None else "None"
    return f"pyasc.batch_norm({e(x)}, {e(mean)}, {e(var)}, {weight}, {bias}, eps={float(eps)!r})"


def _bn_no_training(e: Callable[[Any], str], n: torch.fx.Node) -> list[str]:
    """_native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps) -> (y, save_mean, save_invstd)."""
    x, w, b, mean, var = n.args[:5]
    return [_bn(e, x, w, b, mean, var, _arg(n, 6, "eps", 1e-5)), "None", "None"]


def _native_bn(e: Callable[[Any], str], n: torch.fx.Node) -> list[str]:
    """native_batch_norm(x, w, b, mean, var, training, momentum, eps): inference only."""
    if _arg(n, 5, "training", False):
        raise Unsupported("batch norm in training mode (batch statistics)")
    x, w, b, mean, var = n.args[:5]
    return [_bn(e, x, w, b, mean, var, _arg(n, 7, "eps", 1e-5)), "None", "None"]


TABLE: dict[Any, Any] = {
    aten.convolution.default: _convolution, aten.conv2d.default: _conv2d,
    aten.max_pool2d.default: _max_pool, aten.max_pool2d_with_indices.default: _max_pool_with_indices,
    aten.avg_pool2d.default: _avg_pool,
    aten._native_batch_norm_legit_no_training.default: _bn_no_training,
    aten.native_batch_norm.default: _native_bn,
}
