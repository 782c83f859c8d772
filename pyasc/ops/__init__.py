"""The op registry (see registry.py) and every op definition.

Importing this package registers all ops; `pyasc/__init__` exports a public
eager function for each op that has a signature.
"""
from .registry import (  # noqa: F401
    Category,
    OpDef,
    exists,
    get,
    infer,
    names,
    numpy_twin,
    public,
    register,
)
from . import elementwise, reduce  # noqa: F401,E402  (registers ops)
