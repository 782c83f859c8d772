"""Shared test helpers: pyasc.testing.assert_close, the rng fixture; the disk cache is off unless a test turns it on."""
from __future__ import annotations

import gc
import importlib.util
import os

import numpy as np
import pytest
from hypothesis import settings

# A worker process lives for the whole suite and its heap is large (torch, Ray, jax, every module-level kernel
# and its compiled artefacts): with CPython's default thresholds the cyclic collector walked all of it ~40 times
# per worker. Measured with gc.callbacks on a twelfth of the suite in one process: 20 of its 87 CPU seconds were
# collections, 9 with this. Compiling a kernel allocates many short-lived objects: collect the young generation
# less eagerly; and once collection is done, freeze what the imports and the test modules made (it lives until
# the session ends) so that full collections only walk what the tests themselves create.
gc.set_threshold(50_000, 20, 20)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


# property tests explore the same examples on every run: CI must not pass or fail by chance
# (explore more locally with e.g. `--hypothesis-seed=N` and a larger max_examples)
settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")

# tests never read or fill the user's compile cache; the disk-cache tests point PYASC_CACHE_DIR at a
# temporary folder and set PYASC_CACHE=1 themselves (the `disk_cache` fixture)
os.environ["PYASC_CACHE"] = "0"

# every kernel the suite runs on the emulator is checked by the sanitizer (races, reads of unwritten
# memory, flags left set) unless a test says otherwise; read when a kernel is decorated
os.environ.setdefault("PYASC_SANITIZE", "1")

# the golden comparison the suite uses is the one pyasc ships (dtype-aware tolerances, located messages)
from pyasc.testing import assert_close  # noqa: E402,F401


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session", autouse=True)
def private_config_folder(tmp_path_factory):
    """The disk cache's per-user secret goes to a config folder of the test session (and of the processes
    tests start), never the user's own."""
    old = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    if old is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = old


@pytest.fixture
def disk_cache(tmp_path, monkeypatch):
    """The disk cache on, in a fresh folder (returned); its per-user secret is the session's (a worker process
    started earlier, a Ray one, shares it)."""
    root = tmp_path / "pyasc-cache"
    monkeypatch.setenv("PYASC_CACHE", "1")
    monkeypatch.setenv("PYASC_CACHE_DIR", str(root))
    monkeypatch.delenv("PYASC_CACHE_KEY", raising=False)
    return root


#: optional extras whose tests skip without them, and how to install each (README: "Running the tests")
OPTIONAL_EXTRAS = {
    "torch": "pip install torch==2.13.0 (the CPU build, as .ci/run does) or pip install -e '.[torch]'",
    "ray": "pip install -e '.[ray]'",
}


def missing_extras_lines(find_spec=importlib.util.find_spec) -> list[str]:
    """One line per optional extra that is not installed: its tests were skipped, and how to get them."""
    return [f"NOTE: {name} is not installed, so its tests were skipped; to run them: {how}"
            for name, how in OPTIONAL_EXTRAS.items() if find_spec(name) is None]


def pytest_terminal_summary(terminalreporter):
    """The suite never skips a whole integration silently: say which extras are missing and how to add them."""
    for line in missing_extras_lines():
        terminalreporter.write_line(line, yellow=True, bold=True)
