"""Markers a kernel's source may use: `pyasc.constexpr`, `pyasc.static_range`, `pyasc.runtime_range`."""


class constexpr:
    """Annotation marking a parameter as a compile-time constant (part of the specialisation key)."""


def static_range(*args: int) -> range:
    """`range(...)` that a kernel always unrolls, however many iterations (eager: plain range)."""
    return range(*args)


def runtime_range(*args: int) -> range:
    """`range(...)` that a kernel compiles as a runtime Loop, never unrolled (eager: plain range)."""
    return range(*(int(a) for a in args))
