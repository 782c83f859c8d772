"""Which work item and key block each step of an attention group is (the attention template's arithmetic).

A work item is a block of bq query rows of one batch index; groups of one AIC and its AIVs take items in turn
(`item_lets`, `count`), and an item walks its key blocks (`key_blocks`: all of them, or for a causal attention
those up to its last row's diagonal).

In one launch the template runs a group's items as one pipeline. When every item walks the same NKB key blocks
(not causal: `Steps`), the cube's P V (and the vector cores' fold) run `lead` steps behind S across item
boundaries, so an item's first S blocks overlap the last P V of the item before instead of a fill and drain per
item. A step's channel tile is then the group's step count w NKB + j (the tiles rotating over the channel's ring
as ever), which both sides compute alike.

A causal item walks a number of blocks that grows with its query block: the group's step count is a sum over its
earlier items with no closed form. Its steps still run as one pipeline (`CausalSteps`): a step's tile is its
block's parity in one of two banks, the item's parity (consecutive steps take different tiles, within an item and
across items; a tile's previous user is two steps back or more, so the channels' flags, which count transfers,
order it as a ring of two); the step `lead` back is found from the block counts of the one or two items before
(an item walks at least one block). A channel of one tile needs no banks (the template's `rings`: causal, S and
P V take one). Measured on 910b, 8 x 1024 x 128 causal: 28.3 us per item (a fill and drain each, two blocks in
flight), 31.1 us in one pipeline with one block in flight, 25.1 us with two (every channel in two banks of two
tiles), 24.4 us with one S and one P V tile.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ... import symbolic as sy
from ...symbolic import IntLike
from ..schedule import Let, Stmt

if TYPE_CHECKING:   # the template's records, for hints only (the template imports this module)
    from .attention import AttentionOp, AttentionTiling

F = sy.sym


def item_lets(t: "AttentionTiling", who: str, chunks: int = 1, w: IntLike = F("w"), sfx: str = "") -> list[Stmt]:
    """The work item of iteration w of this group (`who`: CORE on the AIC, GROUP on an AIV) and its query rows
    (`sfx` on every name: the item of a step behind, next to the current one's). Items are numbered longest
    first: the last query block of every batch index, then the one before, ... (a causal item's work grows with
    its query block); groups take them in turn, every other round in reverse (a snake). Longest first with a
    snake is the classic balanced partition: a group that took a long item in one round takes a short one in
    the next (8 heads x 8 causal blocks on 24 groups: 13 key blocks on the busiest group against 12 on average;
    numbered by batch first, 20 against 12). In the split form item t is run t mod chunks (its first key block
    `kb0`) of query item t // chunks."""
    lets = [Let(f"t{sfx}", sy.add(sy.mul(w, F("G")), snake(w, F(who))))]
    item = F(f"t{sfx}")
    if chunks > 1:
        lets += [Let("c", sy.mod(F("t"), chunks)), Let("kb0", sy.mul(F("c"), F("BPC")))]
        item = sy.floordiv(F("t"), chunks)
    return lets + [Let(f"qb{sfx}", sy.add(F("NQB"), -1, sy.mul(-1, sy.floordiv(item, F("B"))))),
                   Let(f"bi{sfx}", sy.mod(item, F("B"))), Let(f"q0{sfx}", sy.mul(F(f"qb{sfx}"), t.bq)),
                   Let(f"qm{sfx}", sy.min_(t.bq, sy.add(F("Tq"), sy.mul(-1, F(f"q0{sfx}")))))]


def key0(a: "AttentionOp", t: "AttentionTiling", j: IntLike) -> IntLike:
    """The first key of the item's key block j (its run's blocks in the split form)."""
    return sy.mul(sy.add(F("kb0"), j) if a.chunks > 1 else j, t.bk)


def snake(w: IntLike, who: IntLike) -> IntLike:
    """Group `who`'s place in round w: its own index in even rounds, counted from the other end in odd whole
    ones; the last round, when not whole, goes to the first groups (core 0 stays the busiest: the cost
    model times it)."""
    whole = sy.lt(w, sy.floordiv(F("W"), F("G")))
    return sy.select(sy.mod(w, 2), sy.select(whole, sy.add(F("G"), -1, sy.mul(-1, who)), who), who)


def count(who: str) -> IntLike:
    """Items group `who` takes: one per whole round, and one more if it is among the first of the rest."""
    return sy.add(sy.floordiv(F("W"), F("G")), sy.lt(F(who), sy.mod(F("W"), F("G"))))


def key_blocks(a: "AttentionOp", t: "AttentionTiling", sfx: str = "") -> IntLike:
    """The key blocks of the item named with `sfx`. A causal item stops at the block holding its last row's
    diagonal (the one-launch form walks at least one block: a row seeing no key must end as 0 / 0). A run of
    the split form takes its BPC blocks of those, none when they all lie past the diagonal (its m, l, O stay
    lowest, 0, 0: weight 0 in the combine)."""
    total = sy.ceildiv(F("Tk"), t.bk)
    seen = total
    if a.causal:
        last = sy.add(F(f"q0{sfx}"), F(f"qm{sfx}"), F("Tk"), sy.mul(-1, F("Tq")))   # keys its last row sees
        seen = sy.min_(total, sy.ceildiv(last, t.bk))
    if a.chunks > 1:
        return sy.max_(0, sy.min_(F("BPC"), sy.add(seen, sy.mul(-1, F("kb0")))))
    return sy.max_(1, seen) if a.causal else total


def pipelined(a: "AttentionOp", t: "AttentionTiling") -> bool:
    """Whether the group's items run as one pipeline (`Steps`, or `CausalSteps` when the items walk different
    numbers of key blocks) in one launch (the split form's runs stay apart)."""
    return a.chunks == 1 and (not a.causal or t.lead <= 2)


def banks(a: "AttentionOp", t: "AttentionTiling") -> int:
    """Copies of a channel's ring of two or more tiles: two for the causal one pipeline (`CausalSteps`), else
    one (the template's `rings` says which channels keep a ring)."""
    return 2 if a.chunks == 1 and a.causal and pipelined(a, t) else 1


def steps_of(a: "AttentionOp", t: "AttentionTiling", who: str) -> "Steps":
    """The one-pipeline numbering of the op's steps on side `who`."""
    return CausalSteps(t, who, a) if banks(a, t) > 1 else Steps(t, who)


@dataclass(frozen=True)
class Steps:
    """The one-pipeline numbering of a group's steps (see the module docstring) on side `who` (CORE or GROUP):
    step (w, j) is block j of the group's item w, the group's step w NKB + j; `behind` names the step `lead`
    before it (block jb of item wb, its item Lets suffixed "b")."""

    t: "AttentionTiling"
    who: str

    @staticmethod
    def tile(w: IntLike, j: IntLike) -> IntLike:
        """Step (w, j)'s tile of a channel (taken modulo the channel's ring): the group's step count."""
        return sy.add(sy.mul(w, F("NKB")), j)

    def behind(self, w: IntLike, j: IntLike) -> tuple[IntLike, list[Stmt]]:
        """Whether step (w, j) has a step `lead` before it in this group, and the Lets naming that step."""
        g = sy.add(self.tile(w, j), -self.t.lead)
        return sy.le(0, g), [Let("wb", sy.floordiv(g, F("NKB"))), Let("jb", sy.mod(g, F("NKB")))] + \
            item_lets(self.t, self.who, w=F("wb"), sfx="b")

    def blocks(self, sfx: str = "") -> IntLike:
        """Key blocks of the item named with `sfx`."""
        return F("NKB")

    def before(self, w: IntLike) -> list[Stmt]:
        """Lets `behind`'s condition reads, to put ahead of the statement it guards."""
        return []

    def alpha_slots(self) -> int:
        """The vector cores' alpha slots (`alpha_slot`)."""
        return self.t.lead

    def alpha_slot(self, tile: IntLike) -> IntLike:
        """The vector cores' slot of the alpha of the step of `tile`: written by its softmax, read by the fold
        of the step before it in its item `lead` steps on (consecutive tiles take different slots)."""
        return sy.mod(tile, self.t.lead) if self.t.lead > 1 else 0


@dataclass(frozen=True)
class CausalSteps(Steps):
    """Steps of items that walk different numbers of key blocks (causal; see the module docstring): step (w, j)
    takes tile 2 (w mod 2) + j mod 2 of a channel's four (two banks of a ring of two); `behind` finds the step
    `lead` (1 or 2) back from the block counts of items w - 1 and w - 2."""

    a: "AttentionOp"

    @staticmethod
    def tile(w: IntLike, j: IntLike) -> IntLike:
        return sy.add(sy.mul(2, sy.mod(w, 2)), sy.mod(j, 2))

    def blocks(self, sfx: str = "") -> IntLike:
        return key_blocks(self.a, self.t, sfx)

    def before(self, w: IntLike) -> list[Stmt]:
        """The block counts of items w - 1 and w - 2 (`nkbp1`, `nkbp2`; past the first item, unused)."""
        out: list[Stmt] = []
        for back in range(1, self.t.lead + 1):
            out += item_lets(self.t, self.who, w=sy.add(w, -back), sfx=f"p{back}")
            out.append(Let(f"nkbp{back}", self.blocks(f"p{back}")))
        return out

    def behind(self, w: IntLike, j: IntLike) -> tuple[IntLike, list[Stmt]]:
        lead = self.t.lead
        n1, n2 = F("nkbp1"), F("nkbp2")
        if lead == 1:
            has = sy.max_(sy.le(1, j), sy.le(1, w))
            wb, jb = sy.select(sy.le(1, j), w, sy.add(w, -1)), sy.select(sy.le(1, j), sy.add(j, -1), sy.add(n1, -1))
        else:
            # two steps back: in this item (j >= 2), the last block of the item before (j = 1), its last but
            # one (j = 0, when it has two), else the last block of the item before that (every item has one)
            has = sy.max_(sy.le(2, j), sy.le(2, w), sy.mul(sy.eq(w, 1), sy.le(2, sy.add(j, n1))))
            prev = sy.max_(sy.eq(j, 1), sy.le(2, n1))          # the step is in item w - 1
            wb = sy.select(sy.le(2, j), w, sy.select(prev, sy.add(w, -1), sy.add(w, -2)))
            back = sy.select(sy.le(2, n1), sy.add(n1, -2), sy.add(n2, -1))       # j = 0
            jb = sy.select(sy.le(2, j), sy.add(j, -2), sy.select(sy.eq(j, 1), sy.add(n1, -1), back))
        return has, [Let("wb", wb), Let("jb", jb)] + item_lets(self.t, self.who, w=F("wb"), sfx="b")

    def alpha_slots(self) -> int:
        """Four with two steps in flight (a step's tile: consecutive steps differ), else one."""
        return 4 if self.t.lead > 1 else 1

    def alpha_slot(self, tile: IntLike) -> IntLike:
        return tile if self.t.lead > 1 else 0
