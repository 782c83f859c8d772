"""The roofline time of one compiled call: the least time the chip's peak rates allow for its work.

Two bounds, taken from the chip config: the GM traffic an ideal kernel needs (read every
tensor input once, write every output once) at the aggregate GM bandwidth, and the
matmul MACs at the peak cube rate of all cube cores. Launch start-up is not part of a
roofline: a small kernel is far from it because of launch cost, and the report says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from simulator import ChipConfig

from ..ir.graph import Graph
from ..ops import Category, exists as op_exists, get as get_op


@dataclass(frozen=True)
class Roofline:
    memory_s: float     # ideal GM bytes / aggregate GM bandwidth
    compute_s: float    # matmul MACs / peak cube MACs per second
    ideal_gm_bytes: int

    @property
    def time_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    def fraction_of(self, simulated_s: float) -> float:
        """How close a simulated time is to this roofline (1.0 = at the roofline)."""
        return self.time_s / simulated_s if simulated_s > 0 else 0.0


def _macs_per_cycle(chip: ChipConfig, itemsize: int) -> float:
    """Peak MACs one cube core does per cycle for operands of `itemsize` bytes (one fractal block per
    block-cycle: 16 x c0 x 16 with c0 = 32 B / itemsize)."""
    b = chip.cube_block
    block = b * chip.fractal_c0(itemsize) * b
    cycles = {1: chip.cube_int8_block_cycles, 2: chip.cube_fp16_block_cycles}.get(itemsize, chip.cube_fp32_block_cycles)
    return block / cycles


def _matmul_macs(graph: Graph, chip: ChipConfig) -> float:
    """Cycles-worth of cube work: sum over the cube's nodes of their MACs (the registry's `cube_macs`, or
    M*N*K for a matmul) / peak MACs per cycle per core."""
    cycles = 0.0
    for node in _all_nodes(graph):
        if not op_exists(node.op):
            continue
        op = get_op(node.op)
        a = node.inputs[0].type if node.inputs else None
        if op.cube_macs is not None:
            attrs = {k: v for k, v in node.attrs.items() if not isinstance(v, Graph)}
            macs = op.cube_macs([v.type for v in node.inputs], attrs)
        elif op.category is Category.MATMUL:
            out = node.outputs[0]
            k = a.shape[-1] if not node.attrs.get("transpose_a") else a.shape[-2]
            macs = int(np.prod(out.shape)) * int(k)
        else:
            continue
        cycles += macs / _macs_per_cycle(chip, np.dtype(a.dtype).itemsize)
    return cycles


def _all_nodes(graph: Graph) -> Iterable[Any]:
    for node in graph.nodes:
        yield node
        for sub in node.attrs.values():
            if isinstance(sub, Graph):
                yield from _all_nodes(sub)


def roofline(graph: Graph, chip: ChipConfig, inputs: Iterable[np.ndarray], outputs: Iterable[np.ndarray]) -> Roofline:
    ideal = sum(int(np.asarray(a).nbytes) for a in inputs) + sum(int(np.asarray(o).nbytes) for o in outputs)
    memory_s = ideal / chip.gm_bytes_per_second
    compute_s = _matmul_macs(graph, chip) / max(chip.aic_cores, 1) / chip.clock_hz
    return Roofline(memory_s, compute_s, ideal)
