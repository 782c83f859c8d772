"""Between the Kernel and the disk cache: a CompiledKernel as a manifest + section files, and back."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from .. import pytree
from ..guards import NotPersistable, step_from_json
from .artifact import CompiledKernel
from .diskcache import CacheWarning, DiskCache
from .records import RecordError
from .guardset import GuardSet
from .keys import KeyComponents
from .options import KernelOptions
from .sections import check_artifact, decode_artifact, encode_artifact
from .specialize import BoundCall, Param, describe_key


def save(store: DiskCache, compiled: CompiledKernel, components_digest: str) -> None:
    """Publish an artifact; one whose guards have no JSON form stays in memory only."""
    try:
        guards = compiled.guards.to_json()
    except NotPersistable:
        return
    manifest = {
        "key": compiled.full_key,
        "components_digest": components_digest,
        "components": compiled.components.to_json(),
        "kernel": compiled.name,
        "qualname": compiled.components.kernel,
        "signature": compiled.signature,
        "chip": compiled.options.chip_name,
        "guards": guards,
        "guards_text": compiled.guards.describe(),
        "stages": list(compiled.stages),
    }
    try:
        files = encode_artifact(compiled)
    except (pytree.NotPersistable, NotPersistable):  # a class import cannot find again (a local class), a store
        return                                          # target reached other than by a name: memory only
    except RecordError as e:  # a record with no stored form is our bug, but it must not fail the user's call
        warnings.warn(CacheWarning(f"kernel {compiled.name}: not stored in the disk cache ({e}); the call is "
                                   "unaffected, the next process compiles it again"), stacklevel=2)
        return
    store.publish(components_digest, compiled.full_key, manifest, files)


def load(store: DiskCache, fn: Any, name: str, params: Sequence[Param], options: KernelOptions, call: BoundCall,
         components: KeyComponents, components_digest: str) -> CompiledKernel | None:
    """The stored artifact for this call whose guards hold in this process, or None."""
    signature = describe_key(params, call.key)

    def select(manifest: dict) -> GuardSet | None:
        if manifest.get("components_digest") != components_digest or manifest.get("signature") != signature:
            return None  # a digest-prefix collision or another kernel: not this entry (and not a fault)
        return GuardSet.revive(manifest["guards"], fn)

    def build(manifest: dict, files: dict[str, bytes], guards: GuardSet) -> CompiledKernel:
        key = str(manifest["key"])
        fields = decode_artifact(files, {
            "name": name, "key": call.key, "key_hash": key[:12], "options": options, "params": tuple(params),
            "guards": guards, "py_func": fn, "full_key": key, "components": components, "origin": "disk",
        })
        return CompiledKernel(**fields)

    return store.load(components_digest, select, build)


def check_entry(manifest: dict, files: dict[str, bytes]) -> None:
    """What `pyasc cache verify` asks beyond authentication: this pyasc can read the entry's guards and decode
    every section (raises what reading raises)."""
    for steps, _fingerprint in manifest["guards"]["guards"]:
        for step in steps:
            step_from_json(step)
    for steps, _dtype in manifest["guards"]["hidden"]:
        for step in steps:
            step_from_json(step)
    check_artifact(files)
