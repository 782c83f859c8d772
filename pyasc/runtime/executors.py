"""Where parallel work runs: a local process pool, or a Ray cluster (`pyasc tune`, `pyasc cache warm`).

Both take a module-level function and jobs (picklable), run `fn(job)` — or
`fn(job, shared)` when `shared` is given: data every job reads, sent once
per worker process (Ray: put in the object store once) — for each, call
`on_done(index, result)` as results arrive (for a progress bar) and return
the results in job order. The jobs may be a generator: each is submitted as
soon as it is made, so making the next one (the tuner compiles it) overlaps
with the workers running the ones before. `fn` reports its own failures in
its result: an exception that escapes it is a bug and is raised here.

- `ProcessExecutor(workers)`: `concurrent.futures` with the "spawn" start
  method (a fresh interpreter per worker, the same on every OS). The jobs'
  functions are pyasc's own, so a worker never needs the caller's script:
  the main module is kept from being re-imported in the workers (which
  "spawn" would otherwise do), and `kernel.tune(...)` at a script's top
  level needs no `if __name__ == "__main__":` guard. The parallelism is
  the workers': each runs its BLAS (the cube's emulation multiplies small
  blocks with numpy) on one thread, unless the caller set a thread count;
  BLAS threads spinning on a busy machine made a 1024^3 matmul's emulation
  up to 10x slower.
- `RayExecutor(address)`: tasks on a Ray cluster (the optional extra
  `pip install -e '.[ray]'`). `address` is a running cluster's address
  ("auto" for the one `ray start` runs on this machine, "ray://host:port"
  through Ray Client), or "local" to start a private instance for this run
  (stopped after it). A Ray already initialised in this process is used as
  it is. Each task asks for one CPU, so Ray runs as many at once as the
  cluster has CPUs.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import sys
from typing import Any, Callable, Iterable, Iterator, Protocol

OnDone = Callable[[int, Any], None]

#: the environment variables a worker must see as this process does (a Ray worker does not inherit them)
FORWARDED_ENV_PREFIX = "PYASC_"


class Executor(Protocol):
    workers: int

    def describe(self) -> str: ...

    def map(self, fn: Callable[..., Any], jobs: Iterable[Any], on_done: OnDone | None = None,
            shared: Any = None) -> list[Any]: ...


def forwarded_env() -> dict[str, str]:
    """This process's PYASC_* settings (cache folder, chip, sanitizer ...), to apply in a worker."""
    return {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIX)}


def apply_env(env: dict[str, str]) -> None:
    """In a worker: take the submitting process's PYASC_* settings (and drop ones it did not have)."""
    for k in [k for k in os.environ if k.startswith(FORWARDED_ENV_PREFIX) and k not in env]:
        del os.environ[k]
    os.environ.update(env)


class ProcessExecutor:
    """A pool of worker processes, started at the first `map` and kept (with that map's `shared` data) until
    `close()`: a second map over the same data reuses the warm workers."""

    def __init__(self, workers: int | None = None):
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise ValueError(f"workers must be a positive int or None (the CPU count), got {workers!r}")
        self.workers = workers or os.cpu_count() or 1
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._shared: Any = None

    def describe(self) -> str:
        return f"{self.workers} local process(es)"

    def map(self, fn: Callable[..., Any], jobs: Iterable[Any], on_done: OnDone | None = None,
            shared: Any = None) -> list[Any]:
        if self._pool is not None and shared is not self._shared:
            self.close()  # the workers hold other shared data
        results: dict[int, Any] = {}
        pending: dict[concurrent.futures.Future, int] = {}
        for i, job in enumerate(jobs):  # a generator makes the next job while the workers run the last ones
            with _main_module_hidden(), _one_blas_thread():  # workers start (on demand) while submitting
                if self._pool is None:
                    self._pool = concurrent.futures.ProcessPoolExecutor(
                        self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_keep_shared,
                        initargs=(shared,))
                    self._shared = shared
                pending[self._pool.submit(_call, fn, job, shared is not None)] = i
            self._collect(pending, results, on_done, block=False)
        self._collect(pending, results, on_done, block=True)
        return [results[i] for i in range(len(results))]

    @staticmethod
    def _collect(pending: dict, results: dict[int, Any], on_done: OnDone | None, block: bool) -> None:
        while pending:
            done, _ = concurrent.futures.wait(pending, timeout=None if block else 0,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            if not done:
                return
            for future in done:
                i = pending.pop(future)
                results[i] = future.result()
                if on_done is not None:
                    on_done(i, results[i])

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
            self._shared = None


#: the thread-count settings of the BLAS and OpenMP libraries numpy may use, read when a worker starts
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """While workers start: one BLAS thread each (unless the caller set a count)."""
    added = [name for name in THREAD_ENV if name not in os.environ]
    os.environ.update({name: "1" for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While workers start: "spawn" re-imports the parent's main module (by its `__spec__` or `__file__`) in
    each worker, running a script's top-level code again; the workers run pyasc's functions only, so it is
    hidden from them."""
    main = sys.modules.get("__main__")
    saved = {name: main.__dict__[name] for name in ("__spec__", "__file__")
             if main is not None and name in main.__dict__}
    if main is not None:
        main.__dict__["__spec__"] = None
        main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__.update(saved)


_SHARED: Any = None  # in a pool worker: the `shared` data of the map it serves


def _keep_shared(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def _call(fn: Callable[..., Any], job: Any, with_shared: bool) -> Any:
    return fn(job, _SHARED) if with_shared else fn(job)


class RayExecutor:
    def __init__(self, address: str | None = None, workers: int | None = None):
        try:
            import ray  # the optional extra: only when a Ray executor is asked for
        except ImportError:
            raise ImportError("the Ray executor needs Ray: pip install -e '.[ray]' in the pyasc checkout "
                              "(or pip install ray)") from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
            if address in (None, "local"):
                ray.init(num_cpus=workers, include_dashboard=False, **quiet)
            else:
                ray.init(address=address, **quiet)
            self._started = True
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self.address = address or "local"

    def describe(self) -> str:
        return f"a Ray cluster ({self.address}) with {self.workers} CPU(s)"

    def map(self, fn: Callable[..., Any], jobs: Iterable[Any], on_done: OnDone | None = None,
            shared: Any = None) -> list[Any]:
        ray = self._ray
        results: dict[int, Any] = {}
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        extra = () if shared is None else (ray.put(shared),)  # a top-level reference: Ray resolves it
        pending: dict[Any, int] = {}

        def collect(block: bool) -> None:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1, timeout=None if block else 0)
                if not done:
                    return
                for ref in done:
                    i = pending.pop(ref)
                    results[i] = ray.get(ref)
                    if on_done is not None:
                        on_done(i, results[i])

        for i, job in enumerate(jobs):  # submitted as made: the cluster runs while the next one is made
            pending[remote.remote(job, *extra)] = i
            collect(block=False)
        collect(block=True)
        return [results[i] for i in range(len(results))]

    def close(self) -> None:
        """Stop the Ray instance this executor started (one it found running is left alone)."""
        if self._started:
            self._ray.shutdown()
            self._started = False


def make_executor(executor: str = "process", workers: int | None = None, address: str | None = None) -> Any:
    """The executor named ("process", the default, or "ray"); an `address` is Ray's and implies it."""
    if address is not None and executor == "process":
        executor = "ray"
    if executor == "process":
        return ProcessExecutor(workers)
    if executor == "ray":
        return RayExecutor(address, workers)
    raise ValueError(f"executor must be 'process' or 'ray', got {executor!r}")


def close(executor: Any) -> None:
    closer = getattr(executor, "close", None)
    if closer is not None:
        closer()
