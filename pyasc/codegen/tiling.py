"""Choosing a tiling: enumerate a template's candidates, reject the illegal ones, score the rest, take the cheapest.

A candidate is legal when its schedule's buffers fit the chip's memories
(capacity x slots, alignment) and its flags fit the chip's event ids. The
score is the cost model's simulated cycles (`cost.estimate`) for the
kernel's dims — the real ones for static shapes, a nominal size per
symbolic dim under dynamic=True (the tiling fields themselves are still
computed from the real dims at launch). The choice records its score, the
runners-up and the rejected candidates with their reasons, so
`compile(...).kernels[i].tiling` can show what was picked and why.

A template with many candidates (the cube's) gives a lower bound on a
candidate's score computed from its tiling record alone; the `Ranking` then
scores candidates best bound first and never builds one whose bound is above
the scores it settled: the order, and so the choice, is the exhaustive one.
Cheaper floors under the bound (coarsest first, each never above the next)
spare computing the finer ones where a coarser one rules a candidate out.

A `TilingDecision` overrides the cost model for one device kernel: a plain
record naming the kernel (its label) and the candidate (its tiling record's
class and fields, as data). Autotuning measures the cost model's top
candidates on the emulator and stores the winners as such records; code
generation hands each `choose` the decision for its kernel, and `choose`
takes that candidate when it is among the legal ones (else the cost model's,
with a note saying why).
"""
from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..target import Chip
from . import schedules
from .cost import Estimate
from .cross_sync import CrossSyncError
from .emit import CapacityError
from .schedule import AnySchedule
from .schedules import AnySync
from .sync import SyncAllocationError

#: the size a symbolic dim is assumed to have when a dynamic kernel's tiling is scored
NOMINAL_DIM = 4096


@dataclass(frozen=True)
class TilingDecision:
    """Use, for device kernel `label`, the candidate whose tiling record is a `record` with these `fields`."""

    label: str
    record: str                               # the tiling record's class name, e.g. "MatmulTiling"
    fields: tuple[tuple[str, Any], ...]       # (field name, value) in declaration order: plain ints and strs
                                              # (nested records flattened: "cube.tm"; see _fields_of)

    @classmethod
    def of(cls, label: str, params: Any) -> "TilingDecision":
        return cls(label, type(params).__name__, _fields_of(params))

    def matches(self, params: Any) -> bool:
        return type(params).__name__ == self.record and _fields_of(params) == self.fields

    def describe(self) -> str:
        return f"{self.record}(" + ", ".join(f"{k}={v!r}" for k, v in self.fields) + ")"

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "record": self.record, "fields": [[k, v] for k, v in self.fields]}

    @classmethod
    def from_json(cls, doc: Any) -> "TilingDecision":
        """The record from its JSON form; ValueError for anything else (a tuning file is data, never code)."""
        try:
            fields = tuple((str(k), v) for k, v in doc["fields"])
            ok = isinstance(doc["label"], str) and isinstance(doc["record"], str)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok or not all(isinstance(v, (int, str)) and not isinstance(v, bool) for _, v in fields):
            raise ValueError(f"not a tiling decision: {doc!r}")
        return cls(doc["label"], doc["record"], fields)


def _fields_of(params: Any, prefix: str = "") -> tuple[tuple[str, Any], ...]:
    """The record's fields as plain ints and strs (a tuning file's data): a nested record (a mixed launch's cube
    tiling) flattened under "name.", None as "None", a bool as 0 / 1."""
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(params):
        value, name = getattr(params, f.name), prefix + f.name
        if dataclasses.is_dataclass(value):
            out.extend(_fields_of(value, name + "."))
        elif value is None:
            out.append((name, "None"))
        elif isinstance(value, bool):
            out.append((name, int(value)))
        else:
            out.append((name, value))
    return tuple(out)


@dataclass
class Candidate:
    params: Any                  # the template's tiling record (e.g. VectorTiling)
    schedule: AnySchedule | None = None
    sync: AnySync | None = None
    score: Estimate | None = None
    rejected: str = ""

    def line(self) -> str:
        what = self.params.describe() if hasattr(self.params, "describe") else str(self.params)
        if self.rejected:
            return f"{what}: rejected ({self.rejected})"
        assert self.score is not None
        return f"{what}: {self.score.describe()}"


@dataclass
class TilingChoice:
    chosen: Candidate
    others: list[Candidate] = field(default_factory=list)     # scored runners-up, cheapest first
    rejected: list[Candidate] = field(default_factory=list)
    dims: dict[str, int] = field(default_factory=dict)         # the dims the scores are for
    nominal: bool = False                                      # symbolic dims were scored at NOMINAL_DIM
    source: str = "cost model"                                 # or "tuned": a TilingDecision chose it
    note: str = ""                                             # why a decision given was not taken
    unscored: int = 0                                          # candidates a bound ruled out unscored

    @property
    def params(self) -> Any:
        return self.chosen.params

    @property
    def score(self) -> Estimate:
        assert self.chosen.score is not None
        return self.chosen.score

    def report(self) -> TilingReport:
        assert self.chosen.score is not None
        return TilingReport(self.chosen.params, self.chosen.score,
                            tuple(Option(c.params, c.score) for c in self.others),
                            tuple(Option(c.params, rejected=c.rejected) for c in self.rejected),
                            tuple(sorted(self.dims.items())), self.nominal, self.source, self.note, self.unscored)

    def text(self) -> str:
        return self.report().text()


@dataclass(frozen=True)
class Option:
    """A candidate as the report keeps it: its tiling record, its score, or why it was rejected."""

    params: Any
    score: Estimate | None = None
    rejected: str = ""


@dataclass(frozen=True)
class TilingReport:
    """What `kernels[i].tiling` shows: the chosen tiling, its score, the runners-up and the rejected ones
    (plain data, without the candidates' schedules)."""

    params: Any
    score: Estimate
    others: tuple[Option, ...] = ()
    rejected: tuple[Option, ...] = ()
    dims: tuple[tuple[str, int], ...] = ()
    nominal: bool = False
    source: str = "cost model"     # "tuned": an autotuning winner (a TilingDecision), not the cheapest score
    note: str = ""
    unscored: int = 0              # candidates never scored: a lower bound on each is above the scores listed

    def text(self) -> str:
        chosen = "chosen (tuned on the emulator)" if self.source == "tuned" else "chosen"
        lines = [f"{chosen}: {_line(self.params, self.score)}"]
        if self.note:
            lines.append(f"  note: {self.note}")
        lines += [f"  runner-up: {_line(o.params, o.score)}" for o in self.others[:4]]
        lines += [f"  {_describe(o.params)}: rejected ({o.rejected})" for o in self.rejected[:6]]
        if self.unscored:
            lines.append(f"  ({self.unscored} more candidates not scored: a lower bound on each is above these scores)")
        if self.nominal:
            lines.append(f"  (scored with every symbolic dim = {NOMINAL_DIM}; tiling fields use the real dims)")
        return "\n".join(lines)


def _describe(params: Any) -> str:
    return params.describe() if hasattr(params, "describe") else str(params)


def _line(params: Any, score: Estimate | None) -> str:
    return f"{_describe(params)}: {score.describe()}" if score is not None else _describe(params)


class NoLegalTiling(Exception):
    """Every candidate was rejected; the message lists why."""


def scoring_dims(symbols: Iterable[str], given: Mapping[str, int] | None = None) -> tuple[dict[str, int], bool]:
    given = dict(given or {})
    out = {s: given.get(s, NOMINAL_DIM) for s in symbols}
    return out, any(s not in given for s in symbols)


#: a lower bound on a candidate's score (simulated cycles) from its tiling record alone, never above the score
Bound = Callable[[Any], float]


def bound_levels(bound: Bound | None, floor: Bound | Sequence[Bound] | None) -> tuple[Bound, ...]:
    """A ranking's lower bounds, coarsest first and `bound` last: `floor` is one cheaper bound under it or several
    (coarsest first, each never above the next); none without a bound."""
    if bound is None:
        return ()
    floors = () if floor is None else (floor,) if callable(floor) else tuple(floor)
    return floors + (bound,)


class Ranking:
    """A kernel's candidates in the cost model's order (cheapest score first, ties in candidate order), built and
    scored only as far as that order is asked for.

    Without a `bound` every candidate is built, checked and scored at once. With one, candidates are scored in
    order of their bounds, and the cheapest not yet taken is certain once no unscored candidate has a bound at
    or below its score (a bound is never above the score it bounds): a candidate whose bound stays above the
    scores taken is never built. The order is the same either way; `take(n)` settles its first n candidates.
    `floor`: one cheaper bound under `bound` or several, coarsest first (`bound_levels`); a finer one is computed
    only for a candidate whose coarser one reaches the top of the queue. `same`: for a candidate, another one
    whose score its own is known to equal (or None); once that one is scored, this one is built and checked but
    takes its score unwalked.
    Candidates a build rejects (`CapacityError`) are in `rejected`."""

    def __init__(self, params: Sequence[Any], build: Callable[[Any], AnySchedule], chip: Chip,
                 dims: Mapping[str, int], bound: Bound | None = None,
                 floor: Bound | Sequence[Bound] | None = None, *, same: Callable[[Any], Any] | None = None):
        self.params = list(params)
        self.build, self.chip, self.dims = build, chip, dims
        self.order: list[Candidate] = []                       # settled, cheapest first
        self.rejected: list[Candidate] = []
        self._scored: list[tuple[float, int, Candidate]] = []   # a heap: scored, not yet settled
        # a heap: (key, index, the level of the key: an index into `_levels`, the last the candidate's bound)
        self._unscored: list[tuple[float, int, int]] = []
        self._estimates: dict = {}                              # schedules.score's memo of shared sides
        self._same = same
        self._scores: dict = {}                                 # tiling record -> its score, once scored
        self._levels = bound_levels(bound, floor)
        if not self._levels:
            for i in range(len(self.params)):
                self._score(i)
        else:
            coarsest = self._levels[0]
            self._unscored = [(coarsest(p), i, 0) for i, p in enumerate(self.params)]
        heapq.heapify(self._unscored)

    @property
    def scored(self) -> list[Candidate]:
        """Every candidate scored so far, settled or not."""
        return self.order + [c for _, _, c in self._scored]

    @property
    def unscored(self) -> int:
        return len(self._unscored)

    def _score(self, i: int) -> Candidate | None:
        cand = Candidate(self.params[i])
        try:
            cand.schedule = self.build(cand.params)
            schedules.check(cand.schedule, self.chip)
            twin = self._same(cand.params) if self._same is not None else None
            cand.score = self._scores.get(twin) if twin is not None else None
            if cand.score is None:
                cand.score = schedules.score(cand.schedule, self.dims, self.chip, self._estimates)
            if self._same is not None:
                self._scores[cand.params] = cand.score
        except CapacityError as e:
            cand.rejected = str(e)
            self.rejected.append(cand)
            return None
        heapq.heappush(self._scored, (cand.score.cycles, i, cand))
        return cand

    def _least_bound(self) -> float:
        """The least bound of the unscored candidates (inf: none left). A floor at the top of the heap is replaced
        by its candidate's next finer one until a bound is on top: every other key there is a bound or a floor
        no larger than the bound it stands for, so that one is the least, and the bounds leave the heap in the
        order (and with the ties) they would without floors."""
        heap, levels = self._unscored, self._levels
        last = len(levels) - 1
        while heap and heap[0][2] < last:
            _, i, level = heap[0]
            heapq.heapreplace(heap, (levels[level + 1](self.params[i]), i, level + 1))
        return heap[0][0] if heap else float("inf")

    def _settle(self) -> bool:
        """Settle the next candidate in the order; False when none is left."""
        while self._unscored:
            least = self._least_bound()   # (its candidate is now on top of the heap)
            if self._scored and least > self._scored[0][0]:
                break
            self._score(heapq.heappop(self._unscored)[1])
        if not self._scored:
            return False
        self.order.append(heapq.heappop(self._scored)[2])
        return True

    def take(self, n: int) -> list[Candidate]:
        """The first n candidates of the order (fewer when fewer are legal)."""
        while len(self.order) < n and self._settle():
            pass
        return self.order[:n]

    def known(self) -> list[Candidate]:
        """The settled candidates, and after them every scored one whose place is certain already (its score
        below every unscored bound): the order as far as it is known without scoring more."""
        limit = self._least_bound()
        while self._scored and self._scored[0][0] < limit:
            self.order.append(heapq.heappop(self._scored)[2])
        return list(self.order)

    def find(self, match: Callable[[Any], bool]) -> Candidate | None:
        """The legal candidate whose tiling record `match`es, scored now if it was not; None if there is none."""
        for c in self.scored:
            if match(c.params):
                return c
        for k, (_, i, _) in enumerate(self._unscored):
            if match(self.params[i]):
                self._unscored.pop(k)
                heapq.heapify(self._unscored)
                return self._score(i)
        return None


def pick(ranking: Ranking, chip: Chip, dims: Mapping[str, int], sync_mode: str = "flags", nominal: bool = False,
         decision: TilingDecision | None = None, runners_up: int = 0) -> TilingChoice:
    """The cheapest ranked candidate whose flags fit the chip's event ids (planned here, cheapest first; one
    that does not fit is rejected and the next is tried). When no candidate's flags fit, the cheapest runs with
    a pipe barrier after every tile op (sync mode "barrier": slower, never wrong) rather than refuse a valid
    kernel; raises NoLegalTiling when no candidate is left at all. A `decision` picks its candidate instead
    when that one is legal and its flags fit (else a note says why); its runners-up then list the cost model's
    own choice. The choice's runners-up are at least the
    next `runners_up` candidates of the order (more when their places are known without scoring more)."""
    note = ""
    if decision is not None:
        picked = ranking.find(decision.matches)
        if picked is None:
            note = f"the tuned tiling {decision.describe()} is not a candidate here; the cost model chose"
        else:
            assert picked.schedule is not None
            try:
                picked.sync = schedules.plan_flags(picked.schedule, chip, sync_mode)
                ranking.take(max(1, runners_up))  # at least the cost model's own choice is listed beside it
                others = [c for c in ranking.known() if c is not picked]
                return TilingChoice(picked, others, list(ranking.rejected), dict(dims), nominal, "tuned",
                                    unscored=ranking.unscored)
            except (SyncAllocationError, CrossSyncError) as e:
                note = f"the tuned tiling's flags do not fit ({e}); the cost model chose"
    failed: list[Candidate] = []
    i = 0
    while len(ranking.take(i + 1)) > i:
        best = ranking.order[i]
        assert best.schedule is not None
        try:
            best.sync = schedules.plan_flags(best.schedule, chip, sync_mode)
            break
        except (SyncAllocationError, CrossSyncError) as e:
            best.rejected = str(e)
            failed.append(best)
            i += 1
    if len(ranking.order) <= i:
        for fallback in failed:
            assert fallback.schedule is not None
            try:  # barriers stand for a core's own flags (a mixed launch's cross-core flags stay flags)
                fallback.sync = schedules.plan_flags(fallback.schedule, chip, "barrier")
            except (SyncAllocationError, CrossSyncError):
                continue
            fallback.rejected = ""
            failed.remove(fallback)
            rejected = list(ranking.rejected) + failed
            return TilingChoice(fallback, [], rejected, dict(dims), nominal, note=note, unscored=ranking.unscored)
    rejected = list(ranking.rejected) + failed
    if len(ranking.order) <= i:
        reasons = "; ".join(c.line() for c in rejected) or "no candidates"
        raise NoLegalTiling(f"no legal tiling: {reasons}")
    ranking.take(i + 1 + runners_up)
    order = ranking.known()
    return TilingChoice(order[i], order[i + 1:], rejected, dict(dims), nominal, note=note,
                        unscored=ranking.unscored)


def choose(params: Sequence[Any], build: Callable[[Any], AnySchedule], chip: Chip, dims: Mapping[str, int],
           sync_mode: str = "flags", nominal: bool = False, decision: TilingDecision | None = None,
           bound: Bound | None = None) -> TilingChoice:
    """`Ranking` then `pick`: the cheapest legal tiling with its flags, or the one a `decision` names if legal;
    raises NoLegalTiling when none is legal."""
    return pick(Ranking(params, build, chip, dims, bound), chip, dims, sync_mode, nominal, decision)


def largest_fitting(fits: Callable[[int], bool], upper: int) -> int:
    """The largest n in [1, upper] with fits(n) (fits is monotone: a bigger tile never fits better), or 0."""
    if upper < 1 or not fits(1):
        return 0
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
