"""Annotation markers a kernel's source may use (re-exported as `pyasc.constexpr`)."""


class constexpr:
    """Annotation marking a parameter as a compile-time constant (part of the specialisation key)."""
