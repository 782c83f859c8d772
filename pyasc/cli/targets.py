"""What the command line names: `FILE.py::func` targets and argument specs like `f32[1024,1024]`."""
from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any, Sequence

import click
import numpy as np

from .. import dtypes

_TENSOR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([0-9,\s]*)\]\s*$")
#: dtype spellings an argument spec accepts: the printer's short names and the canonical ones
DTYPE_NAMES = {**{dtypes.short(n): n for n in dtypes.NAMES}, **{n: n for n in dtypes.NAMES}, "bool_": "bool"}
ARGSPEC_HELP = ("a tensor as DTYPE[DIMS] (f32[64,128], f16[8], i32[], bool[4,4]; random values, seeded) or a "
                "compile-time Python literal (3, 2.5, True, (2, 3), 'name')")


def target_options(f: Any) -> Any:
    """`--arg` (repeated, one per parameter), `--chip` and `--opt-level`: how every command that compiles a
    FILE.py::func for example arguments (compile, tune, cache explain) takes them."""
    f = click.option("--opt-level", type=click.IntRange(0, 3), default=None,
                     help="graph optimisation level 0-3 (default: the kernel's own)")(f)
    f = click.option("--chip", default=None, metavar="PRESET", help="chip preset (default: the kernel's own)")(f)
    return click.option("--arg", "args", multiple=True, metavar="ARGSPEC",
                        help=f"one per parameter, in order: {ARGSPEC_HELP}")(f)


def parse_arg(text: str, rng: np.random.Generator) -> Any:
    """One argument from its spec (a tensor of random values, or a literal); ValueError if it is neither."""
    m = _TENSOR.match(text)
    if m is not None:
        name = DTYPE_NAMES.get(m.group(1))
        if name is None:
            raise ValueError(f"unknown dtype {m.group(1)!r} in {text!r}; dtypes are {', '.join(DTYPE_NAMES)}")
        dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
        return random_array(name, dims, rng)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"{text!r} is not an argument spec: write {ARGSPEC_HELP}") from None


def random_array(name: str, dims: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = dtypes.to_numpy(name)
    if name == "bool":
        return rng.random(dims) < 0.5
    if dt.kind == "f":
        return rng.standard_normal(dims).astype(dt)
    low, high = (0, 256) if dt.kind == "u" else (-8, 8)
    return rng.integers(low, high, dims).astype(dt)


def parse_args(specs: Sequence[str], seed: int = 0) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        try:
            out.append(parse_arg(spec, rng))
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="ARGSPEC") from None
    return tuple(out)


def load_module(path: Path, quiet: bool = False) -> types.ModuleType:
    """Import a Python file by path (its folder first on sys.path, as `python FILE.py` would have it).
    Importing runs the file's top-level code, so the command says so on stderr (unless `quiet`)."""
    path = path.resolve()
    if not path.is_file():
        raise click.BadParameter(f"{path} is not a file", param_hint="FILE.py")
    if not quiet:
        click.echo(f"pyasc: importing {path.name} to find its kernels runs its top-level code (code under "
                   "`if __name__ == \"__main__\":` does not run)", err=True)
    name = path.stem if path.stem.isidentifier() else "pyasc_cli_module"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise click.BadParameter(f"{path} is not a Python file", param_hint="FILE.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_kernel(target: str, quiet: bool = False, **overrides: Any) -> Any:
    """`FILE.py::name` -> a pyasc kernel (a plain function is wrapped; `overrides` are kernel options)."""
    import pyasc  # the package object: its kernel decorator

    file, sep, name = target.partition("::")
    if not sep or not name:
        raise click.BadParameter(f"{target!r} does not name a function: write FILE.py::function", param_hint="TARGET")
    module = load_module(Path(file), quiet)
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise click.BadParameter(f"{file} has no {name!r}", param_hint="TARGET")
        obj = getattr(obj, part)
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if isinstance(obj, pyasc.Kernel):
        if not overrides:
            return obj
        options = {f.name: getattr(obj.options, f.name) for f in dataclasses.fields(obj.options)
                   if f.name != "chip_config"}
        return pyasc.kernel(obj.py_func, **{**options, **overrides})
    if not isinstance(obj, types.FunctionType):
        raise click.BadParameter(f"{name!r} in {file} is a {type(obj).__name__}, not a function or kernel",
                                 param_hint="TARGET")
    return pyasc.kernel(obj, **overrides)
