"""Memoising pure functions of immutable values (the compiler's formulas, tilings and tables).

The compiler re-derives the same facts many times: every tiling candidate builds the same symbolic formulas,
the router and the tiler ask for the same candidates, every kernel of a chip reads the same tables. A
function whose result depends only on its arguments, all of them immutable (ints, strings, symbolic
expressions, frozen dataclasses such as a chip config or a tiling record), can remember its recent results:
a hit returns what a call would compute, so the cache is never stale. Never memoise a function of mutable
state (a graph being rewritten, a dict, an options object a caller may change).

This module is a leaf: it imports nothing from pyasc.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

Fn = TypeVar("Fn", bound=Callable[..., Any])


def memoised(maxsize: int) -> Callable[[Fn], Fn]:
    """A least-recently-used memo of up to `maxsize` results, keyed on the positional arguments and their types
    (a bool or a numpy integer never hits an int's entry). A call with an unhashable argument (a caller's
    record that is not frozen) skips the memo and runs the function as written, so its own checks and errors
    are unchanged. `cache_info()` / `cache_clear()` as functools.lru_cache's."""

    def wrap(fn: Fn) -> Fn:
        cached = functools.lru_cache(maxsize=maxsize, typed=True)(fn)

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            try:
                return cached(*args)
            except TypeError:  # unhashable arguments (or fn's own TypeError: it raises again, uncached)
                return fn(*args)

        call.cache_info = cached.cache_info    # type: ignore[attr-defined]
        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap
