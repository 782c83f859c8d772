"""pyasc.testing: assert_close, check(kernel, *inputs), and the pytest plugin's `golden` fixture."""
from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import numpy as np
import pytest

import pyasc
from pyasc.runtime.artifact import CompiledKernel
from pyasc.testing import assert_close, check, tolerance

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]


def test_assert_close_within_the_dtype_tolerance():
    x = np.linspace(1, 2, 12, dtype=np.float32)
    assert_close(x * np.float32(1 + 5e-6), x)
    assert_close(np.float16(1.001), np.float16(1.0))
    assert_close((x, np.arange(3)), [x.copy(), np.arange(3)])
    assert_close(np.array([np.nan, np.inf]), np.array([np.nan, np.inf]))
    assert_close(np.float32(1.0), 1.0, check_dtype=False)
    assert tolerance("float16", "float32") == (2e-3, 1e-3) and tolerance("int32") == (0.0, 0.0)


def test_a_mismatch_says_how_many_where_and_how_far():
    expected = np.zeros((3, 4), np.float32)
    actual = expected.copy()
    actual[1, 2] = 0.5
    actual[2, 0] = 1e-3
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected)
    lines = str(info.value).splitlines()
    assert lines[0] == "2 of 12 elements differ (rtol=1e-05, atol=1e-06; float32 vs expected float32)"
    assert lines[1].startswith("worst at index [1, 2]: actual 0.5, expected 0.0, abs err 0.5")
    assert "rel err inf" in lines[1] and lines[2].startswith("  also at [2, 0]")


@pytest.mark.parametrize("actual, expected, words", [
    (np.array([1, 2, 3]), np.array([1, 2, 4]), "1 of 3 elements differ (exact; int64"),
    (np.zeros(3, np.float32), np.zeros(3, np.float16), "dtype float32 != expected float16"),
    (np.zeros((2, 3)), np.zeros((3, 2)), "shape (2, 3) != expected (3, 2)"),
    ((np.zeros(2),), (np.zeros(2), np.zeros(2)), "actual has 1 results, expected 2"),
    ((np.zeros(2), np.ones(2)), (np.zeros(2), np.zeros(2)), "result 1: 2 of 2 elements differ"),
    (np.array([np.nan]), np.array([1.0]), "worst at index [0]: actual nan, expected 1.0"),
])
def test_assert_close_failures(actual, expected, words):
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected)
    assert words in str(info.value)


@pyasc.kernel(chip="tiny")
def scaled_softmax(x, scale):
    y = x * scale
    e = pyasc.exp(y - pyasc.max(y, axis=-1, keepdims=True))
    return e / pyasc.sum(e, axis=-1, keepdims=True), pyasc.cast(x > 0, pyasc.int32)


def test_check_compares_the_kernel_with_its_py_func_in_float64():
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    soft, positive = check(scaled_softmax, x, 2.0)
    assert soft.dtype == np.float32 and positive.dtype == np.int32


def test_check_reports_a_wrong_value_and_a_wrong_dtype(monkeypatch):
    x = np.ones((2, 16), np.float32)
    launch = CompiledKernel.launch
    monkeypatch.setattr(CompiledKernel, "launch", lambda self, arrays: tuple(
        r + 1 if r.dtype == np.float32 else r for r in launch(self, arrays)))
    with pytest.raises(AssertionError, match="result 0: 32 of 32 elements differ"):
        check(scaled_softmax, x, 1.0)
    monkeypatch.setattr(CompiledKernel, "launch", lambda self, arrays: tuple(
        r.astype(np.float64) for r in launch(self, arrays)))
    with pytest.raises(AssertionError, match="result 0 of scaled_softmax: dtype float64, but numpy gives float32"):
        check(scaled_softmax, x, 1.0)


# ---- the pytest plugin --------------------------------------------------------------------

GOLDEN_TEST = '''
import numpy as np

def test_values(golden):
    golden(np.arange(6, dtype=np.float32).reshape(2, 3) * {scale})
    golden((np.ones(2, np.int32), np.float32(1.5)), name="pair")
'''


def plugin_args() -> list[str]:
    """`-p pyasc.testing.plugin` unless the installed entry point already loads it."""
    points = importlib.metadata.entry_points(group="pytest11")
    installed = any(ep.value == "pyasc.testing.plugin" for ep in points)
    return [] if installed else ["-p", "pyasc.testing.plugin"]


def test_the_golden_fixture_records_compares_and_explains(pytester):
    pytester.makepyfile(test_golden=GOLDEN_TEST.format(scale=1.0))
    missing = pytester.runpytest(*plugin_args())
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no golden file*test_golden.test_values.npz; run pytest with --update-golden*"])
    pytester.runpytest(*plugin_args(), "--update-golden").assert_outcomes(passed=1)
    stored = pytester.path / "golden" / "test_golden.test_values.npz"
    with np.load(stored, allow_pickle=False) as data:
        assert sorted(data.files) == ["out", "pair.0", "pair.1"]
    pytester.runpytest(*plugin_args()).assert_outcomes(passed=1)
    pytester.makepyfile(test_golden=GOLDEN_TEST.format(scale=2.0))
    changed = pytester.runpytest(*plugin_args())
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*golden value 'out' (test_golden.test_values.npz): 5 of 6 elements differ*"])


GOLDEN_TREE_TEST = '''
import dataclasses
import numpy as np
import pyasc


@dataclasses.dataclass
class Stats:
    mean: np.ndarray
    var: np.ndarray


@pyasc.kernel(chip="tiny")
def normalise(x):
    m = x.mean(axis=-1, keepdims=True)
    return {{"y": (x - m) * {scale}, "stats": Stats(m, ((x - m) ** 2).mean(axis=-1))}}


def test_tree(golden):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = normalise(x)
    golden(out)                                   # a dict holding a dataclass, as the kernel returns it
    golden(out["stats"], name="stats")            # a dataclass on its own
    golden([x, {{"k": x[0]}}], name="mixed")
'''


def test_the_golden_fixture_takes_dict_and_dataclass_results(pytester):
    pytester.makepyfile(test_tree=GOLDEN_TREE_TEST.format(scale=1.0))
    pytester.runpytest(*plugin_args(), "--update-golden").assert_outcomes(passed=1)
    with np.load(pytester.path / "golden" / "test_tree.test_tree.npz", allow_pickle=False) as data:
        assert sorted(data.files) == ["mixed.0", "mixed.1.k", "out.stats.mean", "out.stats.var", "out.y",
                                      "stats.mean", "stats.var"]
    pytester.runpytest(*plugin_args()).assert_outcomes(passed=1)
    pytester.makepyfile(test_tree=GOLDEN_TREE_TEST.format(scale=2.0))
    changed = pytester.runpytest(*plugin_args())
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*golden value 'out.y' (test_tree.test_tree.npz):*differ*"])


def test_the_golden_fixture_says_which_recorded_leaf_a_result_lost(tmp_path):
    from pyasc.testing.plugin import Golden

    path = tmp_path / "g.npz"
    recorder = Golden(path, update=True)
    recorder({"a": np.ones(2), "b": np.zeros(2)})
    recorder.finish()
    with pytest.raises(AssertionError, match="golden value 'out' has no leaf 'out.b', which was recorded"):
        Golden(path, update=False)({"a": np.ones(2)})
    with pytest.raises(TypeError, match="dict key 1.5 is not a str or int"):
        Golden(path, update=False)({1.5: np.ones(2)})
    Golden(path, update=False)({"a": np.ones(2), "b": np.zeros(2)})  # the same structure compares


def test_the_plugin_is_registered_as_a_pytest_entry_point():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"pyasc": "pyasc.testing.plugin"}


@pyasc.kernel(chip="tiny")
def _pytree_kernel(params, x):
    return {"y": x * params["w"], "z": (x + params["b"], x * 0.5)}


@pyasc.kernel(chip="tiny")
def _weak_float64_kernel(x):
    return x * np.sqrt(2 / np.pi)


def test_check_compares_pytrees_leaf_by_leaf(rng):
    x = rng.standard_normal(8).astype(np.float32)
    params = {"w": rng.standard_normal(8).astype(np.float32), "b": rng.standard_normal(8).astype(np.float32)}
    out = check(_pytree_kernel, params, x)
    assert set(out) == {"y", "z"} and isinstance(out["z"], tuple)


def test_check_accepts_a_float16_result_where_numpy_widens_to_float64(rng):
    x = rng.standard_normal(8).astype(np.float16)
    assert check(_weak_float64_kernel, x).dtype == np.float16  # README: dtype rules


def test_check_still_catches_a_wrong_dtype(rng):
    x = rng.standard_normal(8).astype(np.float16)
    k = pyasc.kernel(_widening, chip="tiny")

    class Disagreeing:  # the kernel, with a py_func that disagrees about the dtype
        __name__ = "disagreeing"
        py_func = staticmethod(_widening_in_numpy)

        def __call__(self, *args):
            return k(*args)

    with pytest.raises(AssertionError, match="dtype float16, but numpy gives float32"):
        check(Disagreeing(), x)


def _widening(x):
    return x + x


def _widening_in_numpy(x):
    return x.astype(np.float32) + x
