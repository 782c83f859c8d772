"""Why a call would hit or miss the disk cache (`pyasc cache explain`)."""
from __future__ import annotations

import json
from typing import Any

from .diskcache import DiskCache
from .guardset import GuardSet

VALUE_WIDTH = 100


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + "..."


def explain(kernel: Any, *args: Any, **kwargs: Any) -> list[str]:
    """Lines: the key's components for this call, then the cache's verdict and, for a miss, what
    differs from the nearest stored entry (components) or why the stored variants do not apply (guards)."""
    components = kernel.key_components(*args, **kwargs)
    digest = components.digest()
    doc = components.to_json()
    lines = ["key components (known before the kernel runs; what it reads is each entry's guards):"]
    width = max(len(k) for k in doc)
    lines += [f"  {name.ljust(width)}  {_text(value)}" for name, value in doc.items()]
    lines.append(f"components digest: {digest}")
    store = DiskCache.from_env()
    if store is None:
        return lines + ["the disk cache is off (PYASC_CACHE=0)"]
    lines.append(f"disk cache: {store.root}")
    same = [e for e in store.list() if e.manifest.get("components_digest") == digest]
    for entry in same:
        why = GuardSet.mismatch(entry.manifest["guards"], kernel.py_func)
        if why is None:
            return lines + [f"HIT: entry {entry.key[:12]} ({entry.kernel}({entry.signature}), chip {entry.chip}): "
                            "its guards hold"]
        lines.append(f"entry {entry.key[:12]} has these components but not these values: {why}")
    if same:
        return lines + [f"MISS: none of the {len(same)} entries with these components fits what the kernel reads"]
    return lines + _nearest(store, doc)


def _nearest(store: DiskCache, doc: dict) -> list[str]:
    """The entry of the same kernel nearest to these components (entries of other kernels explain nothing)."""
    candidates, others = [], 0
    for entry in store.list():
        theirs = entry.manifest.get("components")
        if not isinstance(theirs, dict):
            continue
        if theirs.get("kernel") != doc["kernel"]:
            others += 1
            continue
        differ = [k for k in doc if theirs.get(k) != doc[k]]
        candidates.append((len(differ), entry.key, entry, differ, theirs))
    if not candidates:
        if not others:
            return ["MISS: the cache holds no entries"]
        return [f"MISS: the cache holds no entry of kernel {doc['kernel']} (only {others} of other kernels); "
                "the first call compiles it"]
    _, _, entry, differ, theirs = min(candidates, key=lambda c: (c[0], c[1]))
    out = [f"MISS: no entry has these components; the nearest is {entry.key[:12]} ({entry.kernel}"
           f"({entry.signature}), chip {entry.chip}), which differs in {len(differ)}:"]
    for name in differ:
        out.append(f"  {name}: {_text(theirs.get(name))}")
        out.append(f"  {' ' * len(name)}  now {_text(doc[name])}")
    return out

