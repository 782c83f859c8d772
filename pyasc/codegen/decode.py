"""The decode form of attention: when to split the keys of an attention over the cores (FlashDecoding's idea).

The attention template gives each group of one AIC and its AIVs a work item of a query block of one batch
index (heads are batch dims) and streams all the keys through it. A decode step has one query row (or a
few) per head: with fewer work items than groups most cores idle while each busy one walks the whole KV
cache. The split form cuts the keys into `chunks` runs of key blocks, a work item per (query block, run),
each leaving its partial O, m, l in workspace scratch, and a second launch (`attention_combine`) rescales
and sums the runs.

Which form runs is the cost model's call: the one-launch form, and the split form for a few run counts (so
that the items fill the groups once or twice), are each tiled and scored the way the driver scores them
(`tiling.Ranking`); the split form's score is both of its launches, each with its start-up. The cheapest
wins, and the first launch's notes say which form was chosen and what the others scored. Sizes known only
at launch keep the one-launch form (no compile-time score to compare).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ge.plan import KernelPlan
from ..ir import Graph, Value
from ..target import Chip
from ..tensor_type import TensorType
from .domain import dims, prod
from .kernel_graph import KernelGraph
from .template import Job, Unsupported
from .templates import TEMPLATES
from .templates.attention import SIZES
from .tiling import Ranking, scoring_dims

#: the run counts tried fill the groups this many times over with work items
FILLS = (1, 2)


@dataclass
class Form:
    """One way to launch an attention plan: its jobs and the cost model's cycles for all of them (None: a
    job no tiling takes)."""

    name: str
    jobs: list[Job]
    cycles: float | None = None
    parts: list[float] = field(default_factory=list)

    def line(self) -> str:
        if self.cycles is None:
            return f"{self.name}: no tiling"
        each = " + ".join(f"{c:.0f}" for c in self.parts)
        return f"{self.name}: {self.cycles:.0f} cycles" + (f" ({each})" if len(self.parts) > 1 else "")


def attention_jobs(label: str, kg: KernelGraph, plan: KernelPlan, chip: Chip, buffer_num: int,
                   cores: int = 0) -> list[Job]:
    """The launches of a kernel of one attention op: one, or the split keys and their combine when the cost
    model says that is faster (see the module docstring); `cores` caps the groups (0: all)."""
    forms = attention_forms(label, kg, plan, chip, buffer_num, cores)
    one = forms[0]
    if len(forms) == 1 or one.cycles is None:
        return one.jobs
    best = cheapest(forms)
    others = "; ".join(f.line() for f in forms if f is not best)
    best.jobs[0].options["notes"] = [f"attention form chosen by the cost model: {best.line()} (not {others})"]
    return best.jobs


def cheapest(forms: list[Form]) -> Form:
    """The form the cost model scores lowest (the first of equals: one launch before a split)."""
    return min((f for f in forms if f.cycles is not None), key=lambda f: f.cycles)


def attention_forms(label: str, kg: KernelGraph, plan: KernelPlan, chip: Chip, buffer_num: int,
                    cores: int = 0) -> list[Form]:
    """The one-launch form first, then the split forms worth scoring, each scored (none is when there is no
    split to weigh against)."""
    node = next(n for n in kg.nodes if n.op == "attention")
    where = {"op": node.op, "loc": node.loc}
    groups = min(cores or chip.aic_cores, chip.aic_cores)
    one = Form("one launch", [Job("attention", label, kg, list(kg.inputs), list(kg.outputs), plan, {}, **where)])
    forms = [one]
    for chunks in run_counts(kg, groups):
        parts = partial_values(label, kg, chunks)
        split = Job("attention", f"{label}_split", kg, list(kg.inputs), parts, plan,
                    {"chunks": chunks, "scratch": parts}, **where)
        combine = Job("attention_combine", f"{label}_combine", kg, parts, list(kg.outputs), plan,
                      {"chunks": chunks}, **where)
        forms.append(Form(f"keys split in {chunks} runs + a combine launch", [split, combine]))
    for f in forms if len(forms) > 1 else ():
        f.parts = [c for c in (best_cycles(j, chip, buffer_num, cores) for j in f.jobs) if c is not None]
        f.cycles = sum(f.parts) if len(f.parts) == len(f.jobs) else None
    return forms


def run_counts(kg: KernelGraph, groups: int) -> list[int]:
    """Run counts whose work items fill the groups once or twice (`FILLS`), each run at least two of the
    smallest key blocks; none when a size is known only at launch."""
    node = next(n for n in kg.nodes if n.op == "attention")
    sq, sk = dims(node.inputs[0].type.shape), dims(node.inputs[1].type.shape)
    if not all(isinstance(d, int) for d in list(sq[:-1]) + [sk[-2]]):
        return []
    items = max(1, prod(sq[:-2]) * -(-sq[-2] // SIZES[0]))
    most = sk[-2] // (2 * SIZES[0])
    return sorted({c for c in (-(-fill * groups // items) for fill in FILLS) if 2 <= c <= most})


def partial_values(label: str, kg: KernelGraph, chunks: int) -> list[Value]:
    """The split form's scratch results: O (batch * chunks, Tq, Dv), m and l (batch * chunks, Tq), float32."""
    node = next(n for n in kg.nodes if n.op == "attention")
    sq, sv = dims(node.inputs[0].type.shape), dims(node.inputs[2].type.shape)
    n, tq = prod(sq[:-2]) * chunks, sq[-2]
    g = Graph(f"{label}_partials")
    return [g.add_input(TensorType((n, tq, sv[-1]), "float32"), name="o_part"),
            g.add_input(TensorType((n, tq), "float32"), name="m_part"),
            g.add_input(TensorType((n, tq), "float32"), name="l_part")]


def best_cycles(job: Job, chip: Chip, buffer_num: int, cores: int = 0) -> float | None:
    """The cost model's cycles for the cheapest tiling of `job` (what the driver's tile stage ranks first), or
    None when its template refuses it or no tiling fits; `cores` caps the cores of each type (0: all)."""
    t = TEMPLATES[job.template]
    available = chip.cores_of(t.core_type)
    cores = max(1, min(cores or available, available))
    try:
        analyses = t.analyze(job, chip)
    except Unsupported:
        return None
    owner = {p: a for a in analyses for p in t.tilings(a, chip, buffer_num, cores)}
    symbols = set().union(*(t.symbols(a) for a in analyses)) if analyses else set()
    at, _ = scoring_dims(sorted(symbols))
    best = Ranking(list(owner), lambda p: t.schedule(owner[p], p, chip), chip, at).take(1)
    return best[0].score.cycles if best and best[0].score is not None else None
