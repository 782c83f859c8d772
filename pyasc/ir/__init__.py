"""Graph IR: types, graph/node/value, printer, DOT, JSON, verifier, reference interpreter."""
from ..tensor_type import FORMATS, Dim, Sym, TensorType  # noqa: F401
from .graph import ANNOTATION_ATTRS, Graph, Node, Value, is_annotation  # noqa: F401
from .uses import UseIndex  # noqa: F401
from .printer import attr_key, format_graph, format_node, node_names  # noqa: F401
from .dot import to_dot  # noqa: F401
from .serialize import SerializationError, from_json, to_json  # noqa: F401
from .verifier import VerificationError, verify  # noqa: F401
from .interpreter import InterpreterError, interpret  # noqa: F401
