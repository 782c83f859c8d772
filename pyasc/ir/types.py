"""Tensor types live in `pyasc.tensor_type` (a leaf module both `pyasc.ir` and `pyasc.ops` build on); this name stays
so that `from pyasc.ir.types import TensorType` keeps working."""
from ..tensor_type import FORMATS, Dim, Sym, TensorType, is_static_dim  # noqa: F401
