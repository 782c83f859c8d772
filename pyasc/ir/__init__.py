"""Graph IR: types, graph/node/value, printer, DOT, JSON, verifier, reference interpreter."""
from .types import FORMATS, Dim, Sym, TensorType  # noqa: F401  (first: ops builds on it)
from .graph import Graph, Node, Value  # noqa: F401
