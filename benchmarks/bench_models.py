"""Model blocks on the emulator: launches, GM bytes over the minimum, simulated time, fraction of roofline, error.

    python benchmarks/bench_models.py [--chip 910b] [--only resnet_basic_block ...] [--out benchmarks/results/models.json]
                                      [--baseline benchmarks/baselines/models_before.json]

Rows per workload (`WORKLOADS`: name -> a function of the chip returning its `Row`s; add a workload by adding
an entry). Per row:
- launches: device launches of one call;
- GM bytes / min: the bytes the launches read and write in GM over the least any implementation must
  move (every input read once, every output written once);
- simulated us: the emulator's time for one call (launch start-up included);
- roofline: max(cube MACs / the chip's peak cube rate, minimal GM bytes / GM bandwidth)
  (`pyasc.runtime.roofline`), and the fraction of it the call reaches (roofline time / simulated time);
- max |err|: the largest difference from the workload's numpy reference evaluated in float64.
Each row is followed by the figures of --baseline (a JSON this script wrote earlier, e.g. on an older checkout
with PYTHONPATH pointing at it; by default main 5d4de7f's, before this phase's mixed kernels, attention and
conv): its launches, GM/min, simulated us and fraction of roofline. A workload an older
checkout cannot compile (conv before it existed) is reported as such, not left out.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

import pyasc
from _report import RESULTS, write_json
from pyasc.runtime.roofline import roofline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # picoGPT's pieces as the test writes them
from test_gpt2_block_numpy import gelu, layer_norm, softmax  # noqa: E402


#: the figures of main 5d4de7f (before the mixed-kernel, attention and conv work), written by this script
BASELINE = Path(__file__).resolve().parent / "baselines" / "models_before.json"


@dataclass
class Row:
    workload: str
    launches: int
    gm_bytes: int
    min_bytes: int
    simulated_us: float
    roofline_us: float
    max_abs_err: float
    note: str = ""
    failed: bool = False
    group: str = ""   # the WORKLOADS entry it came from

    @property
    def gm_ratio(self) -> float:
        return self.gm_bytes / self.min_bytes if self.min_bytes else float("nan")

    @property
    def fraction(self) -> float:
        return self.roofline_us / self.simulated_us if self.simulated_us else 0.0

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "gm_ratio": self.gm_ratio, "roofline_fraction": self.fraction}


def measure(workload: str, kernel: Any, args: Sequence[Any], note: str = "") -> Row:
    """Run `kernel(*args)` once on the emulator and compare it with its py_func in float64."""
    y, prof = kernel.profile(*args)
    art = kernel.compile(*args)
    outs = y if isinstance(y, tuple) else (y,)
    roof = roofline(art.graph, art.options.chip_config, args, outs)
    wide = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args]
    ref = kernel.py_func(*wide)
    refs = ref if isinstance(ref, tuple) else (ref,)
    err = max(float(np.abs(np.asarray(o, np.float64) - np.asarray(r, np.float64)).max()) for o, r in zip(outs, refs))
    return Row(workload, prof.launches, prof.gm_read_bytes + prof.gm_write_bytes, roof.ideal_gm_bytes,
               prof.time_s * 1e6, roof.time_s * 1e6, err, note)


def print_table(rows: Sequence[Row], title: str, before: dict[str, dict[str, Any]] | None = None) -> None:
    print(title)
    head = f"{'workload':<38} {'launches':>8} {'GM/min':>7} {'sim us':>8} {'roof us':>8} {'of roof':>7} {'max|err|':>9}"
    print(head)
    print("-" * len(head))
    for r in rows:
        if r.failed:
            print(f"{r.workload:<38} {'failed: ' + r.note}")
            continue
        print(f"{r.workload:<38} {r.launches:>8} {r.gm_ratio:>7.2f} {r.simulated_us:>8.2f} {r.roofline_us:>8.2f} "
              f"{r.fraction:>7.3f} {r.max_abs_err:>9.2e}" + (f"  {r.note}" if r.note else ""))
        if before is not None:
            b = before.get(r.workload) or before.get(r.group)
            print(f"{'  before':<38} " + ("(not in the baseline)" if b is None else f"failed: {b['note']}"
                                          if b.get("failed") else f"{b['launches']:>8} {b['gm_ratio']:>7.2f} "
                                          f"{b['simulated_us']:>8.2f} {'':>8} {b['roofline_fraction']:>7.3f}"))


# ---- workloads ----------------------------------------------------------------------------------------


def basic_block(x, w1, m1, v1, g1, b1, w2, m2, v2, g2, b2):
    """ResNet basic block (inference): conv3x3-bn-relu-conv3x3-bn-add-relu."""
    y = pyasc.relu(pyasc.batch_norm(pyasc.conv2d(x, w1, padding=1), m1, v1, g1, b1))
    y = pyasc.batch_norm(pyasc.conv2d(y, w2, padding=1), m2, v2, g2, b2)
    return pyasc.relu(y + x)


def resnet_basic_block(chip: str, n: int = 1, c: int = 64, hw: int = 56) -> Row:
    rng = np.random.default_rng(0)
    f16 = np.float16

    def norm():
        return [(rng.standard_normal(c) * 0.1).astype(f16), (rng.random(c) + 0.5).astype(f16),
                (rng.random(c) + 0.5).astype(f16), (rng.standard_normal(c) * 0.1).astype(f16)]

    x = rng.standard_normal((n, c, hw, hw)).astype(f16)
    w1, w2 = ((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(f16) for _ in range(2))
    args = (x, w1, *norm(), w2, *norm())
    k = pyasc.kernel(basic_block, chip=chip)
    row = measure(f"resnet basic block {n}x{c}x{hw}x{hw} f16", k, args)
    transdata = [kd.template for kd in k.compile(*args).kernels].count("transdata")
    row.note = (f"{transdata} transdata launches (block edges)" if transdata else
                "no transdata launch: the edge conversions run on the conv launches' vector cores")
    return row


def _attention_numpy(q, k, v):
    """Attention as people write it in numpy: GE's attention pass finds it (`disable_passes` keeps it apart)."""
    s = q @ k.transpose(0, 2, 1) * np.float16(1 / np.sqrt(q.shape[-1]))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def _attention_causal(q, k, v):
    return pyasc.attention(q, k, v, causal=True)


def attention_rows(chip: str, heads: int = 8, t: int = 1024, d: int = 128) -> list[Row]:
    rng = np.random.default_rng(0)
    args = [(rng.standard_normal((heads, t, d)) * 0.5).astype(np.float16) for _ in range(3)]
    name = f"attention {heads}x{t}x{d} f16"
    rows = []
    for label, fn, options in ((name, _attention_numpy, {}),
                               (f"{name} (pass off)", _attention_numpy, {"disable_passes": ["attention"]}),
                               (f"causal {name}", _attention_causal, {})):
        try:
            k = pyasc.kernel(fn, chip=chip, **options)
            row = measure(label, k, args)
        except Exception as e:  # noqa: BLE001 - a baseline checkout without the attention pass: its row fails
            rows.append(failed_row(label, e))
            continue
        _, prof = k.profile(*args)
        hbm = getattr(prof, "hbm_bytes", None)  # (a baseline checkout may predate the HBM/L2 split)
        row.note = "" if hbm is None else f"HBM bytes {hbm / row.min_bytes:.2f}x min" + _workspace_note(k, args, row)
        rows.append(row)
    return rows


def _workspace_note(kernel: Any, args: Sequence[Any], row: Row) -> str:
    """The launches' GM workspace over the minimum: the HBM bytes above the minimum are its footprint, not re-reads
    (K and V read again by later query blocks hit in L2; each workspace line's first write allocates a dirty L2
    line, written back once however often the tile is rewritten)."""
    scratch = sum(loc.nbytes for kd in kernel.compile(*args).kernels for loc in getattr(kd, "scratch", {}).values())
    return f", {scratch / row.min_bytes:.2f}x of it the workspace's footprint" if scratch else ""


def _decode_step(q, k, v):
    return pyasc.attention(q, k, v)


def decode_rows(chip: str, heads: Sequence[int] = (1, 8, 32), t: int = 4096, d: int = 128) -> list[Row]:
    """One decode step: a query row per head against a KV cache of t keys (memory-bound: K and V read once).
    The note says which form the cost model launched (codegen/decode.py: one launch, or the keys split over
    the cores and a combine launch)."""
    rng = np.random.default_rng(0)
    rows = []
    for h in heads:
        args = [(rng.standard_normal((1, h, n, d)) * 0.5).astype(np.float16) for n in (1, t, t)]
        k = pyasc.kernel(_decode_step, chip=chip)
        row = measure(f"decode step 1x{h}x1x{t}x{d} f16", k, args)
        form = [dk.template for dk in k.compile(*args).kernels]
        row.note = "keys split + combine" if "attention_combine" in form else "one launch"
        rows.append(row)
    return rows


def gpt2_block(x, ln1_g, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out, n_head: int):
    """picoGPT's transformer block, unchanged numpy but for the mask: float16 cannot hold picoGPT's -1e10
    ((1 - tri) * -1e10 is 0 * -inf = NaN there), so the same triangle is spelt with -inf."""
    t = x.shape[0]
    h = layer_norm(x, ln1_g, ln1_b) @ w_attn + b_attn
    heads = [np.split(part, n_head, axis=-1) for part in np.split(h, 3, axis=-1)]
    mask = np.where(np.tri(t, dtype=bool), 0, -np.inf).astype(x.dtype)
    att = np.hstack([softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v for q, k, v in zip(*heads)])
    x = x + (att @ w_proj + b_proj)
    return x + (gelu(layer_norm(x, ln2_g, ln2_b) @ w_fc + b_fc) @ w_out + b_out)


def gpt2_block_row(chip: str, t: int = 256, c: int = 768, n_head: int = 12) -> Row:
    rng = np.random.default_rng(0)

    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    one = lambda n: (1 + w(n)).astype(np.float16)  # noqa: E731 - a local shorthand
    args = [w(t, c, scale=1.0), one(c), w(c), w(c, 3 * c), w(3 * c), w(c, c), w(c), one(c), w(c), w(c, 4 * c), w(4 * c),
            w(4 * c, c), w(c), n_head]
    k = pyasc.kernel(gpt2_block, chip=chip)
    row = measure(f"GPT-2 block T={t} C={c} {n_head} heads f16", k, args)
    _, prof = k.profile(*args)
    row.note = "kernels (us): " + " ".join(f"{kk.template} {p.result.time_s * 1e6:.2f}"
                                           for kk, p in zip(k.compile(*args).kernels, prof.per_launch))
    return row


def matmul_alone(a, b):
    return a @ b


def matmul_relu_f32_bias(a, b, bias):
    """The product as float32 plus a float32 bias, then ReLU (the bias has another dtype than the product)."""
    return np.maximum((a @ b).astype(np.float32) + bias, 0)


def matmul_gelu_bias(a, b, bias):
    return gelu(a @ b + bias)


def mlp(x, w1, b1, w2, b2):
    return gelu(x @ w1 + b1) @ w2 + b2


def matmul_rows(chip: str, n: int = 1024) -> list[Row]:
    """A 1024^3 float16 product alone and with the epilogues of issue 18's table (the notes give the time over
    the product's alone), and the MLP 512x768x3072."""
    rng = np.random.default_rng(0)
    a, b = ((rng.standard_normal((n, n)) / np.sqrt(n) ** 0.5).astype(np.float16) for _ in range(2))
    base = measure(f"matmul {n}^3 f16", pyasc.kernel(matmul_alone, chip=chip), (a, b))
    rows = [base]
    for label, fn, bias in ((f"relu(a@b as f32 + f32 bias) {n}^3", matmul_relu_f32_bias,
                             rng.standard_normal(n).astype(np.float32)),
                            (f"gelu(a@b + f16 bias) {n}^3", matmul_gelu_bias, rng.standard_normal(n).astype(np.float16))):
        row = measure(label, pyasc.kernel(fn, chip=chip), (a, b, bias))
        row.note = f"{row.simulated_us / base.simulated_us:.2f}x the matmul alone"
        rows.append(row)
    m, c, h = 512, 768, 3072
    w = lambda *shape: (rng.standard_normal(shape) * 0.02).astype(np.float16)  # noqa: E731 - a local shorthand
    args = (w(m, c) * 50, w(c, h), w(h), w(h, c), w(c))
    row = measure(f"MLP gelu(x@W1+b1)@W2+b2 {m}x{c}x{h} f16", pyasc.kernel(mlp, chip=chip), args)
    row.note = "kernels: " + " ".join(kk.template for kk in pyasc.kernel(mlp, chip=chip).compile(*args).kernels)
    rows.append(row)
    return rows


def rms_norm(x, w, eps=1e-5):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


def llama_block(x, g1, wq, wk, wv, wo, g2, w_gate, w_up, w_down, cos, sin, n_head: int):
    """A Llama decoder block as numpy ports write it: RMSNorm, q/k/v projections, RoPE by rotate_half, causal
    attention per head (heads as a reshape and transpose), output projection, RMSNorm, SwiGLU."""
    t, c = x.shape
    d = c // n_head
    h = rms_norm(x, g1)
    q, k, v = ((h @ w).reshape(t, n_head, d).transpose(1, 0, 2) for w in (wq, wk, wv))
    q, k = (z * cos + rotate_half(z) * sin for z in (q, k))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(d) + np.where(np.tri(t, dtype=bool), 0, -np.inf).astype(x.dtype)
    att = softmax(s) @ v
    x = x + att.transpose(1, 0, 2).reshape(t, c) @ wo
    h = rms_norm(x, g2)
    gate = h @ w_gate
    return x + (gate / (1 + np.exp(-gate)) * (h @ w_up)) @ w_down


def llama_block_row(chip: str, t: int = 256, c: int = 768, n_head: int = 12, hidden: int = 2048) -> Row:
    rng = np.random.default_rng(0)

    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    d = c // n_head
    angles = np.arange(t)[:, None] / 10000 ** (np.arange(d // 2) * 2 / d)
    cos, sin = (np.concatenate([f(angles)] * 2, axis=-1).astype(np.float16) for f in (np.cos, np.sin))
    args = [w(t, c, scale=1.0), (1 + w(c)).astype(np.float16), w(c, c), w(c, c), w(c, c), w(c, c),
            (1 + w(c)).astype(np.float16), w(c, hidden), w(c, hidden), w(hidden, c), cos, sin, n_head]
    k = pyasc.kernel(llama_block, chip=chip)
    row = measure(f"Llama block T={t} C={c} {n_head} heads f16", k, args)
    row.note = "kernels: " + " ".join(kk.template for kk in k.compile(*args).kernels)
    return row


WORKLOADS: dict[str, Callable[[str], list[Row]]] = {
    "matmul": matmul_rows,
    "llama_block": lambda chip: [llama_block_row(chip)],
    "gpt2_block": lambda chip: [gpt2_block_row(chip)],
    "resnet_basic_block": lambda chip: [resnet_basic_block(chip)],
    "attention": attention_rows,
    "decode": decode_rows,
}


def failed_row(workload: str, e: Exception) -> Row:
    return Row(workload, 0, 0, 0, 0.0, 0.0, float("nan"), f"{type(e).__name__}: {str(e).splitlines()[0][:80]}",
               failed=True)


def _rows(name: str, chip: str) -> list[Row]:
    """A workload's rows; one a checkout cannot compile is a failed row (a baseline of an older checkout)."""
    try:
        rows = WORKLOADS[name](chip)
    except Exception as e:  # noqa: BLE001 - any failure of an older checkout is reported, not raised
        rows = [failed_row(name, e)]
    for r in rows:
        r.group = name
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chip", default="910b")
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS))
    parser.add_argument("--out", default=str(RESULTS / "models.json"))
    parser.add_argument("--baseline", default=str(BASELINE),
                        help="a JSON this script wrote earlier: its figures as 'before' ('' for none)")
    args = parser.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"
    rows = [row for name in args.only for row in _rows(name, args.chip)]
    before = None
    if args.baseline and Path(args.baseline).is_file():
        before = {r["workload"]: r for r in json.loads(Path(args.baseline).read_text())["results"]}
    print_table(rows, f"model blocks on the {args.chip} preset (simulated)", before)
    write_json(args.out, "models", {"pyasc_version": pyasc.__version__, "chip": args.chip},
               [r.record() for r in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
