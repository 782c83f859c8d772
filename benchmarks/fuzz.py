"""Differential fuzzing: random numpy-style kernels on the emulator vs their numpy reference.

    python benchmarks/fuzz.py --minutes 20 [--seed 0] [--save tests/codegen/fuzz_cases]
    python benchmarks/fuzz.py --dynamic --cases 300 [--seed 0]      # dynamic=True kernels, fixed count

Each case is a random kernel written as Python source (elementwise chains, broadcasting, casts,
comparisons and where, reductions over any axes with and without keepdims, softmax / layer_norm /
rms_norm, matmul, transposes, slices, reshapes, a tensor if; issue 22's numpy and scipy.special functions,
integer-array gathers and scatters, np.add.at, masks feeding reductions and writes, out=, and arguments
written in place, compared with numpy's after the call), compiled at a random opt_level,
buffer_num and preset with the sanitizer on, run, and compared with the function run eagerly by
numpy. With --dynamic, kernels are compiled with dynamic=True, the generator adds what only dynamic
shapes make hard (slices and negative indices on symbolic axes, shape predicates, loops over a
symbolic dim), and each kernel also runs at a second shape of the same rank, which must not recompile.
A kernel numpy itself rejects is skipped. A failure is shrunk (statements removed while the
same class of failure remains) and saved as a small regression file that
`tests/codegen/test_fuzz_regressions.py` runs. Prints cases, failures by class, and writes JSON.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import random
import re
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import RESULTS, write_json  # noqa: E402

import pyasc  # noqa: E402

UNARY = ["pyasc.exp({})", "pyasc.tanh({})", "pyasc.relu({})", "pyasc.abs({})", "-{}", "pyasc.sigmoid({})",
         "pyasc.sqrt(pyasc.abs({}) + 1.0)", "pyasc.gelu({})", "pyasc.silu({})", "pyasc.floor({})", "pyasc.sin({})"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "pyasc.maximum({}, {})", "pyasc.minimum({}, {})",
          "({} / (pyasc.abs({}) + 1.0))"]
SCALARS = ["0.5", "2.0", "-1.5", "3"]
REDUCE = ["sum", "max", "min", "mean"]


@dataclass
class Case:
    source: str
    shapes: list[tuple[int, ...]]
    dtype: str
    opt_level: int
    buffer_num: int
    chip: str
    lines: list[str] = field(default_factory=list)
    dynamic: bool = False
    shapes2: list[tuple[int, ...]] = field(default_factory=list)  # the second launch's shapes (dynamic)


#: statements only dynamic shapes make hard: slices/indices on symbolic axes, shape predicates, loops
DYNAMIC = ["{a}[..., -5:]", "{a}[1:]", "{a}[-1]", "{a}[:-2] * 2.0", "({a} * 2.0) if {a}.shape[0] >= 8 else ({a} + 1.0)",
           "({a} - 1.0) if {a}.shape[-1] < 16 and {a}.shape[0] != 3 else pyasc.exp({a})"]
LOOP = ["    {v} = {a}", "    for _ in range(min({a}.shape[0], 4)):", "        {v} = {v} * 0.5 + 1.0"]

#: numpy code of issue 22: the numpy and scipy functions added, advanced indexing (gathers, scatters, add.at,
#: masks feeding reductions and writes) and writes that reach the caller (arguments compared after the call)
ISSUE22 = ["np.log10(np.abs({a}) + 1.0)", "np.round({a} * 3.0)", "np.trunc({a} * 2.0)", "np.nan_to_num({a} / {a})",
           "np.cumprod(np.tanh({a}), axis=-1)", "np.sort({a}, axis=-1)", "np.argsort({a}, axis=0, kind='stable')",
           "np.take_along_axis({a}, np.argsort({a}, axis=-1, kind='stable'), axis=-1)", "np.einsum('...i,...i->...', {a}, {a})",
           "np.prod(np.tanh({a}), axis=0)", "np.linalg.norm({a}, axis=-1)", "np.average({a}, axis=0)",
           "scipy.special.expit({a})", "scipy.special.logsumexp({a}, axis=-1)", "scipy.special.xlogy({a}, np.abs({a}) + 1.0)",
           "{a}[[0, -1]]", "{a}[{a} > 0.5].sum() + {a}[{a} < 0.0].mean()", "np.append({a}, {a})",
           "np.where(np.isnan({a}), 0.0, {a})", "np.any({a} > 1.0, axis=0)", "np.diag(np.ravel({a}))"]
#: statement groups: a fresh copy of {a} in {v}, then written
WRITES = [["    {v} = {a} * 1.0", "    {v}[{v} > 0.5] = 0.0"],
          ["    {v} = {a} * 1.0", "    {v}[[0, -1]] = 2.0", "    {v}[[0, 0]] += 1.0"],
          ["    {v} = {a} * 1.0", "    np.add.at({v}, [0, 0, -1], 1.0)"],
          ["    {v} = {a} * 1.0", "    {v}[{v} < 0.0] *= 3.0", "    np.maximum({v}, -1.0, out={v})"]]
ARG_WRITES = ["    {a} += 1.0", "    {a}[..., :1] = 0.5", "    {a}[{a} > 1.0] = -1.0", "    np.tanh({a}, out={a})"]


def _second_shapes(rng: random.Random, shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Other sizes for every dim that is not 0 or 1 (those are part of a dynamic key), aligned from the right
    so that operands that broadcast still do."""
    sizes = [2, 3, 5, 7, 8, 16, 31, 33, 64, 100]
    rank = max(len(s) for s in shapes)
    new = [rng.choice(sizes) for _ in range(rank)]
    out = []
    for s in shapes:
        off = rank - len(s)
        out.append(tuple(d if d in (0, 1) else new[off + i] for i, d in enumerate(s)))
    return out


def _shape(rng: random.Random) -> tuple[int, ...]:
    rank = rng.choice([1, 2, 2, 3])
    sizes = [1, 2, 3, 5, 7, 8, 16, 31, 33, 64, 100]
    return tuple(rng.choice(sizes) for _ in range(rank))


def gen_case(rng: random.Random, dynamic: bool = False) -> Case:
    shape = _shape(rng)
    dtype = rng.choice(["float32", "float32", "float16"])
    n_in = rng.choice([1, 2, 3])
    shapes = [shape]
    for _ in range(n_in - 1):
        # a full operand or a broadcastable one (trailing dims, or ones)
        s = list(shape)
        if rng.random() < 0.5 and len(s) > 1:
            s = s[rng.randrange(len(s)):]
        if rng.random() < 0.3:
            s[rng.randrange(len(s))] = 1
        shapes.append(tuple(s))
    names = [f"a{i}" for i in range(n_in)]
    live = list(names)
    lines = []
    for k in range(rng.randint(1, 8)):
        v = f"t{k}"
        kind = rng.random()
        a = rng.choice(live)
        if dynamic and rng.random() < 0.3:
            if rng.random() < 0.25:
                lines.extend(line.format(v=v, a=a) for line in LOOP)
            else:
                lines.append(f"    {v} = " + rng.choice(DYNAMIC).format(a=a))
            live.append(v)
            continue
        if rng.random() < 0.25:  # issue 22's numpy code
            pick = rng.random()
            if pick < 0.6:
                lines.append(f"    {v} = " + rng.choice(ISSUE22).format(a=a))
            elif pick < 0.85:
                lines.extend(line.format(v=v, a=a) for line in rng.choice(WRITES))
            else:  # an argument written in place: the caller must see it (compared after the call)
                arg = rng.choice(names)
                lines.append(rng.choice(ARG_WRITES).format(a=arg))
                lines.append(f"    {v} = {arg} * 1.0")
            live.append(v)
            continue
        if kind < 0.3:
            expr = rng.choice(UNARY).format(a)
        elif kind < 0.6:
            b = rng.choice(live + SCALARS)
            expr = rng.choice(BINARY).format(a, b if b not in SCALARS else b, b)
        elif kind < 0.72:
            op = rng.choice(REDUCE)
            axis = rng.choice(["-1", "0", "None", "(0, -1)"])
            keep = rng.choice(["True", "False"])
            expr = f"pyasc.{op}({a}, axis={axis}, keepdims={keep})"
        elif kind < 0.8:
            expr = rng.choice([f"pyasc.softmax({a})", f"pyasc.log_softmax({a}, axis=-1)",
                               f"pyasc.rms_norm({a})", f"pyasc.layer_norm({a})"])
        elif kind < 0.86:
            expr = rng.choice([f"{a}.T", f"{a}[..., ::2]", f"{a}[1:]", f"{a}.reshape(-1)"])
        elif kind < 0.92:
            expr = f"pyasc.where({a} > 0.0, {a}, {rng.choice(live + SCALARS)})"
        elif kind < 0.96:
            expr = f"({a}.astype('float16') * 2.0).astype('{dtype}')"
        else:
            expr = f"({a} @ {a}.T)"
        lines.append(f"    {v} = {expr}")
        live.append(v)
    outs = rng.sample(live[n_in:] or live, k=min(2, len(live[n_in:]) or 1))
    lines.append(f"    return {', '.join(outs)}" + ("," if len(outs) == 1 and rng.random() < 0.2 else ""))
    src = f"import numpy as np\nimport scipy.special\n\nimport pyasc\n\n\ndef kern({', '.join(names)}):\n" + \
        "\n".join(lines) + "\n"
    return Case(src, shapes, dtype, rng.choice([0, 1, 2, 3]), rng.choice([1, 2]), rng.choice(["tiny", "910b"]),
                lines, dynamic, _second_shapes(rng, shapes) if dynamic else [])


def _load(src: str, tmp: Path):
    path = tmp / f"fuzz_{hashlib.sha1(src.encode()).hexdigest()[:12]}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod.kern


def _inputs(case: Case, seed: int, shapes: list[tuple[int, ...]] | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(case.dtype) for s in (shapes or case.shapes)]


def _close(a, e, dtype) -> bool:
    a, e = np.asarray(a), np.asarray(e)
    if a.shape != e.shape:
        return False
    if a.dtype.kind == "f" or e.dtype.kind == "f":
        rtol, atol = (2e-2, 2e-2) if "float16" in (a.dtype.name, e.dtype.name, dtype) else (1e-4, 1e-4)
        return bool(np.allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(a, e))


def run_case(case: Case, tmp: Path) -> str | None:
    """None when the kernel agrees with numpy (or numpy rejects it), else the failure class."""
    fn = _load(case.source, tmp)
    runs = [_inputs(case, 0)] + ([_inputs(case, 1, case.shapes2)] if case.dynamic else [])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            ref_args = [[a.copy() for a in args] for args in runs]  # numpy writes its own copies
            refs_all = [fn(*args) for args in ref_args]
        except Exception:
            return None  # not valid numpy (at either shape): not a pyasc case
        k = pyasc.kernel(fn, opt_level=case.opt_level, buffer_num=case.buffer_num, chip=case.chip, sanitize=True,
                         **({"dynamic": True} if case.dynamic else {}))
        for args, ref, after in zip(runs, refs_all, ref_args):
            try:
                out = k(*args)
            except pyasc.CompileError as e:
                return "refused (CompileError): " + re.sub(r" in kernel \S+", "", e.reason.split(":")[0])[:60]
            except Exception as e:  # noqa: BLE001 - every other failure is a finding, classified by type
                return f"{type(e).__name__}: {str(e).splitlines()[0][:70]}"
            refs = ref if isinstance(ref, tuple) else (ref,)
            outs = out if isinstance(out, tuple) else (out,)
            if not all(_close(g, w, case.dtype) for g, w in zip(args, after)):
                return "an argument written in place differs from numpy's"
            if len(refs) == len(outs) and all(_close(o, r, case.dtype) for o, r in zip(outs, refs)):
                continue
            return judge(outs, refs, _exact(fn, args))
        if case.dynamic and k.cache_info().misses != 1:
            return "recompiled for a new shape of the same rank"
    return None


def _exact(fn, args) -> tuple | None:
    """The kernel run by numpy in float64 (None when it does not run so): the yardstick for rounding."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            r = fn(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in args])
        except Exception:  # noqa: BLE001 - a kernel that is dtype-specific has no float64 twin
            return None
    return r if isinstance(r, tuple) else (r,)


def judge(outs, refs, exact) -> str:
    """A mismatch with numpy's float32/float16 result is "rounding" when numpy's own result is about as far
    from the float64 result as ours (cancellation: t @ t.T of large terms), else "wrong result"."""
    if exact is None or len(exact) != len(outs) or len(refs) != len(outs):
        return "wrong result"
    for o, r, x in zip(outs, refs, exact):
        o, r, x = (np.asarray(v) for v in (o, r, x))
        if o.shape != x.shape or o.dtype.kind != "f":
            return "wrong result"
        o64, r64, x64 = (v.astype(np.float64) for v in (o, r, x))
        # the exact value rounded to the output dtype: overflow is inf there too; within 3% of the largest
        # finite value, either side of the boundary is rounding
        big = float(np.finfo(o.dtype).max)
        edge = (np.abs(x64) >= 0.97 * big) & (np.abs(x64) <= 1.03 * big)
        x64 = np.where(np.abs(x64) > big, np.sign(x64) * np.inf, x64)
        finite = np.isfinite(x64) & ~edge
        if not np.array_equal(np.isfinite(o64) | edge, np.isfinite(x64) | edge):
            return "wrong result"
        with np.errstate(invalid="ignore"):
            ours = np.abs(o64 - x64)[finite].max(initial=0.0)
            theirs = np.abs(r64 - x64)[finite].max(initial=0.0)
        if ours > 4 * theirs + 1e-6 * (np.abs(x64)[finite].max(initial=0.0) + 1.0):
            return "wrong result"
    return "rounding"


def run_is_valid(case: Case, tmp: Path) -> bool:
    """Whether numpy itself accepts the kernel at its shapes (run_case returns None for both kinds)."""
    fn = _load(case.source, tmp)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            fn(*_inputs(case, 0))
            if case.dynamic:
                fn(*_inputs(case, 1, case.shapes2))
        except Exception:
            return False
    return True


def shrink(case: Case, klass: str, tmp: Path) -> Case:
    body = list(case.lines)
    changed = True
    while changed:
        changed = False
        for i in range(len(body) - 1):
            trial = body[:i] + body[i + 1:]
            src = case.source.split("def kern")[0] + "def kern" + case.source.split("def kern")[1].split("\n")[0] + \
                "\n" + "\n".join(trial) + "\n"
            c2 = Case(src, case.shapes, case.dtype, case.opt_level, case.buffer_num, case.chip, trial, case.dynamic,
                      case.shapes2)
            try:
                if run_case(c2, tmp) == klass:
                    body, case, changed = trial, c2, True
                    break
            except Exception:  # noqa: BLE001 - a trial that breaks the loader is not smaller
                continue
    return case


def save(case: Case, klass: str, where: Path, name: str = "") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(case.source.encode()).hexdigest()[:10]
    path = where / (name or f"case_{digest}.py")
    header = (f'"""Fuzz regression ({klass}).\n\nshapes={case.shapes} dtype={case.dtype} '
              f"opt_level={case.opt_level} buffer_num={case.buffer_num} chip={case.chip}\n" + '"""\n')
    meta = (f"\nSHAPES = {case.shapes!r}\nDTYPE = {case.dtype!r}\nOPTIONS = dict(opt_level={case.opt_level}, "
            f"buffer_num={case.buffer_num}, chip={case.chip!r}{', dynamic=True' if case.dynamic else ''})\n")
    path.write_text(header + case.source + meta)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", default="", help="folder for shrunk failures (regression tests)")
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (and run a second shape)")
    ap.add_argument("--cases", type=int, default=0, help="stop after this many cases (0: run for --minutes)")
    ap.add_argument("--no-shrink", action="store_true", help="record failures as generated (faster)")
    ap.add_argument("--current", default="", help="folder: each case is written to its current_case.py before it runs (a case that hangs "
                    "or exhausts memory is left behind)")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYASC_CACHE", "0")
    rng = random.Random(args.seed)
    deadline = time.time() + args.minutes * 60
    cases = rounding = 0
    failures: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        valid = passed = 0
        while (cases < args.cases) if args.cases else (time.time() < deadline):
            case = gen_case(rng, args.dynamic)
            cases += 1
            if args.current:
                save(case, "running", Path(args.current), "current_case.py")
            try:
                klass = run_case(case, tmp)
            except Exception:  # noqa: BLE001 - the harness itself failed on this case
                klass = "harness: " + traceback.format_exc().splitlines()[-1][:60]
            if klass is None:
                if run_is_valid(case, tmp):
                    valid += 1
                    passed += 1
                continue
            valid += 1
            if klass == "rounding":   # not a finding: numpy's own low-precision result is as far off
                rounding += 1
                passed += 1
                continue
            small = shrink(case, klass, tmp) if not (klass.startswith("harness") or args.no_shrink) else case
            failures.setdefault(klass, []).append(small.source)
            if args.save:
                save(small, klass, Path(args.save))
    mode = "dynamic=True" if args.dynamic else "static shapes"
    print(f"fuzz ({mode}): {cases} random kernels (seed {args.seed}); {valid} valid numpy, {passed} pass "
          f"({passed / max(valid, 1):.1%})")
    print(f"{'failure class':<80}{'count':>6}")
    for k, v in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        print(f"{k[:80]:<80}{len(v):>6}")
    print(f"failures: {sum(map(len, failures.values()))}  (rounding, not counted: {rounding} mismatches where "
          f"numpy's own result is as far from the float64 result)")
    write_json(RESULTS / ("fuzz_dynamic.json" if args.dynamic else "fuzz.json"), "fuzz",
               {"minutes": args.minutes, "seed": args.seed, "dynamic": args.dynamic, "cases_cap": args.cases},
               {"cases": cases, "valid": valid, "passed": passed, "rounding": rounding,
                "failures": {k: len(v) for k, v in failures.items()},
                "examples": {k: v[0] for k, v in failures.items()}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
