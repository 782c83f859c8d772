"""Column chunks of a mixed launch's hand-over (templates/mixed.py): which chunk counts a block may take, and
how both sides name chunk `c` of the block they are on.

FixPipe writes L0C's 16-column panels a chunk at a time into workspace slots of their own; the vector cores
take, compute and store chunk by chunk. The cube's k-th write and the vector cores' k-th read are the same
slot (`cross_sync` orders them), so both sides count chunks alike: `k` runs over the group's chunks in order.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip
from ..schedule import Let, Loop, Stmt

F = sy.sym

CHUNKS = (1, 2, 4)   # the column chunk counts a block may cross over in
# narrower chunks pay more in transfer start-ups than they save, more than the estimates see (910b, a 1024^3
# product with a GELU epilogue: 128x64 blocks in 2 chunks of 32 ran 1.16x the 128x128 blocks in 2 chunks of 64)
MIN_CHUNK_FRACTALS = 4
# and each vector core's share of a chunk at least this many rows: every chunk pays a GM transfer start-up per
# input on each side, which shorter shares do not earn back (910b, the GPT-2 block's 64-row blocks, 32 rows
# per vector core: chunked ran 1.03-1.06x whole blocks; 128-row blocks in 64-column chunks ran 0.97x)
MIN_CHUNK_SHARE_ROWS = 64


def chunk_counts(tn: int, rows_per_aiv: int, chip: Chip) -> list[int]:
    """How many column chunks a tn-wide block may cross over in: a chunk is whole cube fractals (FixPipe takes
    L0C's 16-column panels), at least MIN_CHUNK_FRACTALS of them, each vector core's share at least
    MIN_CHUNK_SHARE_ROWS rows, and 2 * chunks workspace slots stay within what a cross-core flag counts."""
    return [n for n in CHUNKS if tn % (n * chip.cube_block) == 0 and 2 * n < chip.cross_flag_limit and
            (n == 1 or (tn // n >= MIN_CHUNK_FRACTALS * chip.cube_block and rows_per_aiv >= MIN_CHUNK_SHARE_ROWS))]


@dataclass(frozen=True)
class Chunk:
    """Column chunk `c` of the block in `t`/`i` (n0, nn), as both sides name it: its first column `n0`, its
    width `nn` and `k`, the group's running chunk count, which picks the workspace slot (the cube's k-th write
    is the vector cores' k-th read). `lets` define them; a block in one chunk needs none (the block's names)."""

    lets: list[Stmt]
    n0: IntLike
    nn: IntLike
    k: IntLike


def chunk(chunks: int, cols: int, c: IntLike) -> Chunk:
    """Chunk `c` (a loop variable or a number) of `chunks` of `cols` columns. A block on the N edge may have
    fewer chunks: k counts those of the group's earlier edge blocks (t // nnb - (t - i) // nnb of them) so
    every slot is written in turn."""
    if chunks == 1:
        return Chunk([], F("n0"), F("nn"), F("i"))
    nnb = sy.ceildiv(F("N"), F("tn"))
    edge_chunks = sy.ceildiv(sy.add(F("N"), sy.mul(-1, sy.add(nnb, -1), F("tn"))), cols)
    edges = sy.add(sy.floordiv(F("t"), nnb), sy.mul(-1, sy.floordiv(sy.add(F("t"), sy.mul(-1, F("i"))), nnb)))
    k = sy.add(sy.mul(F("i"), chunks), sy.mul(-1, edges, sy.add(chunks, sy.mul(-1, edge_chunks))), c)
    n0, nn = sy.add(F("n0"), sy.mul(c, cols)), sy.min_(cols, sy.add(F("nn"), sy.mul(-1, c, cols)))
    if isinstance(c, int):   # an unrolled chunk: its own expressions (a name bound twice in one body would not be)
        return Chunk([], n0, nn, k)
    return Chunk([Let("cn0", n0), Let("cw", nn), Let("k", k)], F("cn0"), F("cw"), F("k"))


def chunked(chunks: int, cols: int, body: list[Stmt], note: str) -> list[Stmt]:
    """`body` (after its `Chunk.lets`) once per column chunk of the block; no loop for a block in one chunk."""
    if chunks == 1:
        return body
    return [Loop("c", 0, sy.ceildiv(F("nn"), cols), 1, body, note=note)]
