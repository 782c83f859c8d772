"""The disk cache key: everything a compiled artifact depends on, as named, process-independent components.

Two parts. `KeyComponents` is what is known before compiling (the compiler,
the kernel's code, the arguments, options, chip, environment): its digest
names a folder of the disk cache. What the kernel read while it compiled
(pyasc.guards: globals, attributes, helpers and their defaults) is only
known after, so each compile of the same components is one *variant* in
that folder, told apart by its guards' fingerprints; the full key is
`sha256(components digest + guards digest)`. No part is a file time or an
object id, so two processes, or two machines, compute the same key.

Costly facts are computed once per process, and the two that read many
files or load LLVM are also kept in the cache folder (`compiler_digest`,
`host_facts`), revalidated cheaply, so that a fresh process reaches a disk
hit in a few milliseconds.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..guards import code_digest
from .cachesecret import SecretUnavailable, load_secret
from .entryfiles import canonical
from .options import KernelOptions
from .privatefiles import make_folders, read_regular_file, replace_file
from .specialize import ArgKey, Param, TensorKey
from .treeargs import TreeKey

#: version of the cache entry layout (manifest + sections; 2: authenticated); entries of another version are discarded
CACHE_FORMAT = 2

#: environment variables the compile pipeline itself reads (options take theirs at decoration time and
#: are keyed as options); code generation adds the ones that change the code it emits
CODEGEN_ENV: tuple[str, ...] = ()

#: a memoised file whose stat is this close to when the memo was written may have changed unseen
#: within the file system's time resolution, so it is hashed again (the "racy git" rule)
_RACY_SECONDS = 2.0


@dataclass(frozen=True)
class KeyComponents:
    """What a compiled kernel depends on, known before compiling (see the module docstring)."""

    cache_format: int
    pyasc_version: str
    compiler: str            # sha256 over the source files of pyasc and simulator
    python: str              # implementation and major.minor: bytecode and code digests depend on it
    numpy: str               # the reference backend and constant folding compute with it
    llvmlite: str            # host object code: the LLVM that built it ...
    llvm: str
    host_cpu: str            # ... and the CPU it was built for
    kernel: str              # qualified name
    kernel_code: str         # pyasc.guards.code_digest of the kernel function
    kernel_location: str     # "file.py:LINE": source locations in stage texts and errors
    args: tuple              # (name, key record as JSON) per parameter
    options: tuple           # (name, value) per option, the chip by name
    chip: tuple              # every field of the chip config, (name, value)
    env: tuple               # (name, value) for each of CODEGEN_ENV
    tuning: tuple = ()       # the autotuned tiling decisions code generation follows (tunestore.py), as JSON

    def with_tuning(self, decisions: Sequence[Any]) -> "KeyComponents":
        """These components for a compile that follows these tiling decisions (TilingDecision records)."""
        return dataclasses.replace(self, tuning=tuple(json.dumps(d.to_json(), sort_keys=True) for d in decisions))

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def digest(self) -> str:
        return _sha(self.to_json())


def full_key(components_digest: str, guards_digest: str) -> str:
    return hashlib.sha256(f"{components_digest}:{guards_digest}".encode()).hexdigest()


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return "sha256:" + hashlib.sha256(value).hexdigest()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _sha(doc: Any) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def arg_component(param: Param, key: ArgKey) -> tuple:
    return (param.name, _key_doc(key))


def _key_doc(key: ArgKey) -> tuple:
    if isinstance(key, TensorKey):
        return ("tensor", key.dtype, key.dims) + (("numpy scalar",) if key.scalar else ()) + \
            ((f"same array as input {key.same_as}",) if key.same_as >= 0 else ())
    if isinstance(key, TreeKey):  # the structure (classes by name) and every leaf's record
        return ("tree", key.tree.key_text(), tuple(_key_doc(leaf) for leaf in key.leaves))
    return ("const", key.value)


def components(fn: Any, params: Sequence[Param], key: Sequence[ArgKey], options: KernelOptions,
               cache_root: Path | None) -> KeyComponents:
    """The components for one call; `cache_root` (None: the disk cache is off) keeps the costly facts."""
    from .. import __version__  # the package's own version, set after its submodules are imported

    chip = options.chip_config
    code = fn.__code__
    facts = host_facts(cache_root)
    return KeyComponents(
        cache_format=CACHE_FORMAT,
        pyasc_version=__version__,
        compiler=compiler_digest(cache_root),
        python=f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}",
        numpy=np.__version__,
        llvmlite=facts["llvmlite"], llvm=facts["llvm"], host_cpu=facts["host_cpu"],
        kernel=fn.__qualname__,
        kernel_code=code_digest(code),
        kernel_location=f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}",
        args=tuple(arg_component(p, k) for p, k in zip(params, key)),
        options=tuple((name, options.chip_name if name == "chip" else value) for name, value in options.key()),
        chip=tuple((f.name, _chip_value(getattr(chip, f.name))) for f in dataclasses.fields(chip)),
        env=tuple((name, os.environ.get(name)) for name in CODEGEN_ENV),
    )


def graph_components(name: str, graph_digest: str, params: Sequence[Param], key: Sequence[ArgKey],
                     options: KernelOptions, cache_root: Path | None) -> KeyComponents:
    """The components of a kernel compiled from a prebuilt graph (runtime/graph_kernel.py): the graph's
    content digest stands where a Python kernel's code digest does."""
    from .. import __version__  # the package's own version, set after its submodules are imported

    chip = options.chip_config
    facts = host_facts(cache_root)
    return KeyComponents(
        cache_format=CACHE_FORMAT, pyasc_version=__version__, compiler=compiler_digest(cache_root),
        python=f"{sys.implementation.name}-{sys.version_info[0]}.{sys.version_info[1]}", numpy=np.__version__,
        llvmlite=facts["llvmlite"], llvm=facts["llvm"], host_cpu=facts["host_cpu"],
        kernel=name, kernel_code=graph_digest, kernel_location="graph",
        args=tuple(arg_component(p, k) for p, k in zip(params, key)),
        options=tuple((n, options.chip_name if n == "chip" else value) for n, value in options.key()),
        chip=tuple((f.name, _chip_value(getattr(chip, f.name))) for f in dataclasses.fields(chip)),
        env=tuple((n, os.environ.get(n)) for n in CODEGEN_ENV),
    )


def _chip_value(v: Any) -> Any:
    return dataclasses.astuple(v) if dataclasses.is_dataclass(v) else v


# ---- costly facts, memoised -------------------------------------------------------------------

_memo: dict[str, Any] = {}


def _compiler_roots() -> list[str]:
    import pyasc  # the package object: where its files are

    simulator = importlib.util.find_spec("simulator")  # found, not imported
    return [os.path.dirname(pyasc.__file__), os.path.dirname(simulator.origin)]


def _source_files() -> list[tuple[str, str, os.stat_result]]:
    """(name relative to the packages' parent folder, path, stat) of every .py file, sorted."""
    out = []
    for root in _compiler_roots():
        prefix = len(os.path.dirname(root)) + 1
        stack = [root]
        while stack:
            folder = stack.pop()
            with os.scandir(folder) as entries:
                for e in entries:
                    if e.name.endswith(".py"):
                        out.append((e.path[prefix:].replace(os.sep, "/"), e.path, e.stat()))
                    elif e.name != "__pycache__" and e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
    return sorted(out)


def compiler_digest(cache_root: Path | None) -> str:
    """sha256 over the name and contents of every .py file of pyasc and simulator.

    Once per process. With a cache folder, each file's sha256 is remembered with its size and
    modification time (`compiler-files.json`), so later processes re-read only files that changed
    (as git's index does); the key itself is the contents' digest, never a time.
    """
    if "compiler" in _memo:
        return _memo["compiler"]
    memo_path = cache_root / "compiler-files.json" if cache_root is not None else None
    old = _read_json(memo_path) if memo_path is not None else {}
    written_at = old.get("written_at", 0.0) if isinstance(old, dict) else 0.0
    known = old.get("files", {}) if isinstance(old, dict) else {}
    files: dict[str, list] = {}
    changed = False
    for rel, path, st in _source_files():
        stamp = [st.st_size, st.st_mtime_ns]
        entry = known.get(rel)
        if entry is not None and entry[:2] == stamp and st.st_mtime_ns / 1e9 < written_at - _RACY_SECONDS:
            files[rel] = entry
            continue
        with open(path, "rb") as f:
            files[rel] = [*stamp, hashlib.sha256(f.read()).hexdigest()]
        changed = True
    digest = _sha(sorted((rel, entry[2]) for rel, entry in files.items()))
    if memo_path is not None and (changed or set(files) != set(known)):
        _write_json(memo_path, {"written_at": time.time(), "files": files})
    _memo["compiler"] = digest
    return digest


def host_facts(cache_root: Path | None) -> dict[str, str]:
    """llvmlite and LLVM versions and the host CPU name (what host object code is built for).

    Loading LLVM to ask takes tens of milliseconds, so the answer is kept in the cache folder per
    llvmlite version, machine type and host name.
    """
    if "host" in _memo:
        return _memo["host"]
    import llvmlite  # the package only: its version, without loading LLVM

    ident = f"{llvmlite.__version__}|{platform.machine()}|{platform.node()}"
    memo_path = cache_root / "host-facts.json" if cache_root is not None else None
    stored = _read_json(memo_path) if memo_path is not None else {}
    facts = stored.get(ident) if isinstance(stored, dict) else None
    if not (isinstance(facts, dict) and set(facts) == {"llvmlite", "llvm", "host_cpu"}):
        import llvmlite.binding as llvm  # loads LLVM: only when the answer is not remembered

        facts = {"llvmlite": llvmlite.__version__, "llvm": ".".join(map(str, llvm.llvm_version_info)),
                 "host_cpu": llvm.get_host_cpu_name()}
        if memo_path is not None:
            _write_json(memo_path, {**(stored if isinstance(stored, dict) else {}), ident: facts})
    _memo["host"] = facts
    return facts


_MEMO_PURPOSE = "pyasc.cache.memo"


def _read_json(path: Path) -> Any:
    """A memo this user's pyasc wrote (its MAC checks out under the cache's secret), else {}: a memo planted by
    someone else could make keys name other artifacts."""
    try:
        secret = load_secret()
        data = read_regular_file(path, 64 << 20)
        doc = json.loads(data.decode("utf-8"))
        if isinstance(doc, dict) and secret.verify(doc.get("mac"), _MEMO_PURPOSE, canonical(doc.get("memo"))):
            return doc["memo"]
    except (OSError, ValueError, TypeError, SecretUnavailable):
        pass
    return {}


def _write_json(path: Path, doc: Any) -> None:
    """Atomic replace, signed; a memo that cannot be written is only a slower next process."""
    try:
        secret = load_secret()
        doc = json.loads(json.dumps(doc))  # signed as it will be read
        signed = {"memo": doc, "mac": secret.mac(_MEMO_PURPOSE, canonical(doc))}
        make_folders(path.parent, secret.modes)
        replace_file(path, json.dumps(signed).encode("utf-8"), secret.modes)
    except (OSError, SecretUnavailable):
        pass
