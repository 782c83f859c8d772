"""The pytest plugin (entry point `pyasc` in group pytest11): the `golden` fixture and `--update-golden`.

    def test_softmax(golden):
        golden(my_kernel(x))              # compared with what was recorded (name "out")
        golden(other, name="logits")      # several values per test, each by name
        golden({"y": y, "stats": (m, v)})  # a pytree: stored leaf by leaf as out.y, out.stats.0, ...

Values live in `<test folder>/golden/<test file stem>.<test name>.npz`, next
to the test, one file per test; a result that is a pytree (tuple, list, dict,
NamedTuple, dataclass, nested freely: what kernels may return) is stored
leaf by leaf, each under its path (`out.0`, `out.w`, `out.stats.mean`). Run
`pytest --update-golden` to (re)record them. The files are plain arrays:
read with allow_pickle=False, an object array is refused when writing.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .. import pytree
from . import assert_close

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]]+")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("pyasc")
    group.addoption("--update-golden", action="store_true", default=False,
                    help="record the values passed to the `golden` fixture instead of comparing with them")


class Golden:
    """One test's golden values: call it with a value to compare (or, when updating, to record)."""

    def __init__(self, path: Path, update: bool):
        self.path = path
        self.update = update
        self._recorded: dict[str, np.ndarray] = {}
        self._stored: dict[str, np.ndarray] | None = None
        self._count = 0

    def __call__(self, value: Any, name: str | None = None, *, rtol: float | None = None,
                 atol: float | None = None) -> None:
        if name is None:
            name = "out" if self._count == 0 else f"out{self._count}"
        self._count += 1
        items = _leaves(name, value)
        if not self.update and list(items) != [name]:  # a pytree: the recorded leaves must all still be there
            stored = self._load()
            gone = sorted(k for k in stored if k.startswith(name + ".") and k not in items)
            if gone:
                raise AssertionError(f"golden value {name!r} has no leaf {', '.join(map(repr, gone))}, which was "
                                     f"recorded in {self.path}; run pytest with --update-golden if the structure "
                                     "changed on purpose")
        for key, arr in items.items():
            if arr.dtype.hasobject:
                raise TypeError(f"golden value {key!r} is an array of Python objects; store numbers only")
            if self.update:
                self._recorded[key] = arr
                continue
            stored = self._load()
            if key not in stored:
                raise AssertionError(f"no golden value {key!r} in {self.path}; run pytest with --update-golden "
                                     "to record it")
            try:
                assert_close(arr, stored[key], rtol=rtol, atol=atol)
            except AssertionError as e:
                raise AssertionError(f"golden value {key!r} ({self.path.name}): {e}") from None

    def _load(self) -> dict[str, np.ndarray]:
        if self._stored is None:
            if not self.path.exists():
                raise AssertionError(f"no golden file {self.path}; run pytest with --update-golden to record it")
            with np.load(self.path, allow_pickle=False) as data:
                self._stored = {k: data[k] for k in data.files}
        return self._stored

    def finish(self) -> None:
        if self.update and self._recorded:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, **self._recorded)


def _leaves(name: str, value: Any) -> dict[str, np.ndarray]:
    """Stored name -> array for every leaf of `value`: the value itself, or a pytree's leaves by path."""
    try:
        leaves, tree = pytree.flatten(value, lambda v: not pytree.is_container(v))
    except pytree.BadKey as e:
        raise TypeError(f"golden value {name!r}: dict key {e.key!r} is not a str or int") from None
    items: dict[str, np.ndarray] = {}
    for path, leaf in zip(tree.paths(), leaves):
        key = ".".join([name, *map(str, path)])
        if key in items:
            raise TypeError(f"golden value {name!r}: two leaves are both stored as {key!r}")
        items[key] = np.asarray(leaf)
    if not items:
        raise TypeError(f"golden value {name!r} is an empty {type(value).__name__}: there is nothing to compare")
    return items


@pytest.fixture
def golden(request: Any) -> Any:
    """Compare values with the ones recorded for this test (`--update-golden` records them)."""
    test_file = Path(str(request.node.path))
    name = _UNSAFE.sub("_", request.node.name)
    g = Golden(test_file.parent / "golden" / f"{test_file.stem}.{name}.npz",
               bool(request.config.getoption("update_golden")))
    yield g
    g.finish()
