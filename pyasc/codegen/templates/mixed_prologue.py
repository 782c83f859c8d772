"""A mixed launch's vector prologue: the vector cores compute the cube's A operand before the cube reads it.

GE's `matmul_prologue` hands a MATMUL plan the kernel that computes its A operand (a layer norm, an RMS norm,
a cast or a scale of A's rows). In the mixed launch (templates/mixed.py) the vector cores of every group run
that kernel first, as the vector template schedules it (`vector.schedule`: its analysis and op translation,
tiles of whole rows of A spread over all the launch's vector cores), writing A in the cube's dtype into a GM
workspace of the launch (`WSA`, M x K per batch, row-major: the layout the cube reads its A operand in, and
small enough to stay in L2); then every core meets at an all-core barrier (`sync_all`, which orders the
hand-over through GM, as in templates/conv_launch.py) and the cube cores run their block loop reading A from
the workspace, the epilogue following on the vector cores as before. A row of A is computed once for the
whole launch (not once per output block, nor once per group). The launch saves the producer's own launch and
its HBM round trip; the vector cores' work on A does not overlap the cube's (the cost model adds it in
front of the two-stage pipeline, `schedules.score`). What the cube reads that the prologue does not write
does not wait for it: the first K chunk of B is loaded ahead of the barrier (`prefetched`), under the vector
cores' work on A.

The prologue's schedule lives in the vector side's body next to the epilogue's, so its names are prefixed
(`PREFIX`): tiling fields, loop and Let variables and UB buffers; its GM inputs are renamed to the launch's
parameters (in0 is the prologue's first input, its others follow the epilogue's) and its output to `WSA`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip
from ..cost import estimate
from ..kernel_graph import KernelGraph
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileOp, TileSchedule, When
from ..template import Unsupported
from . import vector, vector_kernel
from .vector_kernel import VectorKernel, VectorTiling, buffers_for, in_param, out_param

WSA = "wsa"
PREFIX = "p_"
NOTE = ("A's producer (the plan's prologue) runs on the vector cores first, writing A to an L2-resident "
        "workspace the cube reads after an all-core barrier (no launch of its own, no HBM round trip)")


@dataclass(frozen=True)
class Prologue:
    """The kernel computing A (its one output), with the row structure GE found for it (`rows` None: pointwise)."""

    kg: KernelGraph
    rows: tuple | None
    k: int


def analyze(label: str, pro: Prologue, dtype: str, chip: Chip) -> VectorKernel:
    """The prologue's vector analysis (whole rows of A per tile); Unsupported when A is not in the cube's dtype."""
    out = pro.kg.outputs[0]
    if out.type.dtype != dtype:
        raise Unsupported(f"the prologue computes A as {out.type.dtype}, the cube multiplies {dtype}")
    try:
        return vector_kernel.analyze(f"{label}_prologue", pro.kg, pro.rows, pro.k, "rows", chip.ub_align)
    except Exception as e:  # UnsupportedDomain and friends: the analysis says why
        raise Unsupported(f"the prologue does not tile in whole rows of A: {e}") from None


def candidates(vk: VectorKernel, chip: Chip, buffer_num: int, cores: int,
               dims: Mapping[str, int] | None = None) -> list[tuple[int, VectorTiling]]:
    """The prologue's tilings over `cores` vector cores with their UB bytes, the best first: the least time the
    cost model gives them on those cores (the cube waits for the last; a tile or two per core in flight can
    beat one bigger tile), then the fewest rows per core, then the largest tiles. `dims`: the scoring dims."""
    rows = vk.domain.R if isinstance(vk.domain.R, int) else None
    outer = vk.domain.outer_count if isinstance(vk.domain.outer_count, int) else 1

    def per_core(t: VectorTiling) -> int:
        tiles = outer * -(-(rows or t.rows) // t.rows)
        return -(-tiles // cores) * t.rows

    def cycles(t: VectorTiling) -> float:
        try:   # on the launch's vector cores, as the mixed launch runs it (`mixed._prologue`)
            return estimate(replace(vector.schedule(vk, t, chip), blocks=cores), dims or {}, chip).cycles
        except sy.UnboundSymbolError:   # a symbol the scoring dims do not name: the order of the rows alone
            return 0.0

    found = sorted(vector.tilings(vk, chip, buffer_num, cores), key=lambda t: (cycles(t), per_core(t), -t.rows))
    return [(need(vk, t, chip), t) for t in found]


def tiling(found: Sequence[tuple[int, VectorTiling]], ub_left: int) -> VectorTiling | None:
    """The best of the `candidates` within `ub_left` bytes of UB; None when none fits."""
    return next((t for n, t in found if n <= ub_left), None)


def need(vk: VectorKernel, t: VectorTiling, chip: Chip) -> int:
    return sum(b.nbytes for b in buffers_for(vk, t, chip))


def schedule(vk: VectorKernel, t: VectorTiling, chip: Chip, first_other: int) -> TileSchedule:
    """The prologue's vector schedule with its names prefixed, its input j > 0 read as launch parameter
    in(first_other + j - 1) and its output written to `WSA`."""
    s = vector.schedule(vk, t, chip)
    params = {in_param(0): in_param(0), out_param(0): WSA}
    params.update({in_param(j): in_param(first_other + j - 1) for j in range(1, len(vk.kg.inputs))})
    names = set(s.fields) | _bound_names(s.body)
    symbols = {n: sy.sym(PREFIX + n) for n in names}
    buffers = {b.name: PREFIX + b.name for b in s.buffers}
    r = _Renamer(symbols, buffers, params)
    # an operand every vector core reads whole (a layer norm's weight row) comes from HBM once: the other
    # cores' reads hit in L2
    shared = tuple(params[in_param(u.index)] for u in vk.resident)
    return replace(s, params=[GmParam(params[p.name], p.dtype, "scratch" if p.name == out_param(0) else p.role)
                              for p in s.params],
                   fields={PREFIX + k: r.expr(v) for k, v in s.fields.items()},
                   buffers=[replace(b, name=buffers[b.name]) for b in s.buffers],
                   body=r.body(s.body), notes=[f"prologue: {n}" for n in s.notes],
                   l2_resident=lambda f, blocks: {name: 1.0 / max(1, blocks) for name in shared})


def prefixed(s: TileSchedule, prefix: str, params: Mapping[str, str], scratch: Sequence[str] = (),
             symbols: Mapping[str, IntLike] | None = None) -> TileSchedule:
    """`s` with its fields, loop and Let variables and buffers prefixed and its GM parameters renamed
    (`params`; those renamed to a `scratch` name become workspace parameters), so that it can share one
    side's body with another schedule (conv_launch's phases); `symbols` replaces free symbols too (a phase on
    a range of the cores: the core index and the core count it sees)."""
    names = set(s.fields) | _bound_names(s.body)
    r = _Renamer({**{n: sy.sym(prefix + n) for n in names}, **(symbols or {})},
                 {b.name: prefix + b.name for b in s.buffers}, params)
    return replace(s, params=[GmParam(params.get(p.name, p.name), p.dtype,
                                      "scratch" if params.get(p.name) in scratch else p.role) for p in s.params],
                   fields={prefix + k: r.expr(v) for k, v in s.fields.items()},
                   buffers=[replace(b, name=prefix + b.name) for b in s.buffers], body=r.body(s.body))


def _bound_names(body: Sequence[Stmt]) -> set[str]:
    out: set[str] = set()
    for st in body:
        if isinstance(st, Let):
            out.add(st.var)
        elif isinstance(st, Loop):
            out.add(st.var)
            out |= _bound_names(st.body)
        elif isinstance(st, When):
            out |= _bound_names(st.body)
    return out


@dataclass(frozen=True)
class _Renamer:
    symbols: Mapping[str, IntLike]
    buffers: Mapping[str, str]
    params: Mapping[str, str]

    def expr(self, v: Any) -> Any:
        return sy.substitute(v, self.symbols) if sy.is_expr(v) else v

    def var(self, name: str) -> str:
        new = self.symbols.get(name)
        return new.name if isinstance(new, sy.Expr) else name

    def operand(self, v: Any) -> Any:
        if isinstance(v, Ref):
            return Ref(self.buffers.get(v.buffer, v.buffer), self.expr(v.slot), self.expr(v.offset))
        if isinstance(v, GmRef):
            return GmRef(self.params.get(v.param, v.param), self.expr(v.offset))
        return self.expr(v)

    def body(self, stmts: Sequence[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        for st in stmts:
            if isinstance(st, TileOp):
                out.append(replace(st, args={k: self.operand(v) for k, v in st.args.items()},
                                   reads=tuple(self.operand(x) for x in st.reads),
                                   writes=tuple(self.operand(x) for x in st.writes)))
            elif isinstance(st, Let):
                out.append(Let(self.var(st.var), self.expr(st.value)))
            elif isinstance(st, Loop):
                out.append(replace(st, var=self.var(st.var), start=self.expr(st.start), stop=self.expr(st.stop),
                                   step=self.expr(st.step), body=self.body(st.body)))
            elif isinstance(st, When):
                out.append(replace(st, cond=self.expr(st.cond), body=self.body(st.body)))
            else:
                raise AssertionError(f"unexpected statement {st!r} in the prologue's schedule")
        return out


def reading_workspace(s: TileSchedule, scratch: Mapping[str, str]) -> TileSchedule:
    """`s` (the cube side) reading the launch's workspaces for some of its GM parameters (`scratch`: parameter
    -> workspace name)."""
    r = _Renamer({}, {}, scratch)
    return replace(s, params=[GmParam(r.params.get(p.name, p.name), p.dtype,
                                      "scratch" if p.name in scratch else p.role) for p in s.params],
                   body=r.body(s.body))


def buffer_names(bufs: Sequence[Buffer]) -> list[Buffer]:
    """The prologue's UB buffers as its renamed schedule names them."""
    return [replace(b, name=PREFIX + b.name) for b in bufs]


def prefetched(s: TileSchedule, param: str) -> TileSchedule:
    """The cube side `s` (a block loop over the core's output blocks, an L1 chunk loop inside each) with its
    first block's first-chunk loads of GM parameter `param` ahead of the rest: issued at the top of the body
    (on a core that has a block), and skipped in the loop where they were. They fill the same L1 slot, so the
    sync plan orders them as before; a barrier put in front of the rest then waits for them only after they
    ran in its shadow."""
    blocks = next((st for st in s.body if isinstance(st, Loop)), None)
    chunks = next((st for st in blocks.body if isinstance(st, Loop)), None) if blocks is not None else None
    if chunks is None:
        return s
    loads = [st for st in chunks.body if _reads(st, param)]
    if not loads:
        return s
    # the loads' operands at the first block and chunk: the Lets before them, evaluated there
    first: dict[str, Any] = {blocks.var: 0, chunks.var: 0}
    before = blocks.body[:blocks.body.index(chunks)] + chunks.body[:chunks.body.index(loads[0])]
    for st in before:
        if isinstance(st, Let):
            first[st.var] = sy.substitute(st.value, first) if sy.is_expr(st.value) else st.value
    ahead = _Renamer(first, {}, {}).body(loads)
    later = sy.lt(0, sy.add(sy.sym(blocks.var), sy.sym(chunks.var)))
    inner = replace(chunks, body=[When(later, [st]) if st in loads else st for st in chunks.body])
    outer = replace(blocks, body=[inner if st is chunks else st for st in blocks.body])
    return replace(s, body=[When(sy.lt(0, blocks.stop), ahead)] + [outer if st is blocks else st for st in s.body],
                   notes=s.notes + [f"the first block's first {param} chunk is loaded ahead of the rest"])


def _reads(st: Stmt, param: str) -> bool:
    """Whether every op of `st` reads GM parameter `param` (a load of it, maybe in a loop or a When)."""
    if isinstance(st, TileOp):
        return any(isinstance(v, GmRef) and v.param == param for v in st.args.values())
    if isinstance(st, (Loop, When)):
        ops = [x for x in st.body if not isinstance(x, Let)]
        return bool(ops) and all(_reads(x, param) for x in ops)
    return False
