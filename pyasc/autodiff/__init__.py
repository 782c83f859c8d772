"""Reverse-mode differentiation of pyasc graphs (knows graphs and the op registry; no Python syntax, no
hardware).

- `backward(graph, outputs, cotangents, wrt)` (reverse.py): the reverse sweep, adding backward nodes to
  a graph through each op's VJP rule (ops/vjp_*.py) or, for a composite without one, its decomposition;
- `grad_graph` / `vjp_graphs` (transforms.py): a gradient graph, and a forward/backward pair whose
  residuals are chosen by residuals.py (recompute cheap ops, keep expensive ones) and cut by split.py.

The runtime compiles the resulting graphs like any kernel (pyasc.grad, pyasc.vjp, pyasc.torch).
"""
from .residuals import INPUTS_AND_OUTPUTS, POLICIES, RECOMPUTE_CHEAP, Residual, ResidualPlan  # noqa: F401
from .reverse import VjpRuleError, backward, is_differentiable  # noqa: F401
from .transforms import GradError, VjpGraphs, copy_graph, grad_graph, vjp_graphs  # noqa: F401
