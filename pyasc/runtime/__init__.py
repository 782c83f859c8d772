"""The runtime: the Kernel object, specialisation, in-memory cache, dumps and launch.

The only layer with I/O and caching (DESIGN.md section 2).
"""
from .artifact import CompiledKernel  # noqa: F401
from .errors import InternalCompilerError  # noqa: F401
from .kernel import CacheInfo, Kernel, kernel  # noqa: F401
from .options import KernelOptions, make_options  # noqa: F401
