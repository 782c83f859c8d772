"""Checking a template's lower bound: a `tiling.Ranking` that scores every candidate and compares each score with
the bound, and the tiling choices of a compile (what pruning must keep)."""
from __future__ import annotations

import pyasc
from pyasc.codegen import tiling


class Exhaustive(tiling.Ranking):
    """Scores every candidate (no pruning, none taking another's score) and checks the template's bound against each
    score, and its floors (if it has any: each never above the next finer one) against the bound."""

    checked: list[tuple[float, float, str]] = []
    floors: list[tuple[float, float, str]] = []

    def __init__(self, params, build, chip, dims, bound=None, floor=None, same=None):
        super().__init__(params, build, chip, dims, None)
        levels = tiling.bound_levels(bound, floor)
        if bound is not None:
            for c in self.scored:
                Exhaustive.checked.append((bound(c.params), c.score.cycles, c.line()))
                keys = [level(c.params) for level in levels]
                Exhaustive.floors += [(lower, upper, c.line()) for lower, upper in zip(keys, keys[1:])]


def choices(fn, args, chip, options):
    """(kernel, template, tiling, score, the runners-up listed with their scores, unscored) of each device kernel."""
    out = []
    for dk in pyasc.kernel(fn, chip=chip, **options).compile(*args).kernels:
        r = dk.tiling
        out.append((dk.name, dk.template, r.params, r.score.cycles,
                    [(o.params, o.score.cycles) for o in r.others], r.unscored))
    return out


def assert_pruning_keeps_the_choice(monkeypatch, lower_module, fn, args, chip, options) -> None:
    """The bound never exceeds a candidate's score, and the pruned search picks what scoring every candidate
    picks (same tiling, same score, the runners-up it lists the exhaustive order's first ones)."""
    pruned = choices(fn, args, chip, options)
    Exhaustive.checked, Exhaustive.floors = [], []
    monkeypatch.setattr(lower_module, "Ranking", Exhaustive)
    exhaustive = choices(fn, args, chip, options)
    assert Exhaustive.checked, "no template with a bound tiled this kernel"
    over = [(b, s, what) for b, s, what in Exhaustive.checked if b > s]
    assert not over, f"bounds above the score: {over[:3]}"
    over = [(f, b, what) for f, b, what in Exhaustive.floors if f > b]
    assert not over, f"floors above the bound: {over[:3]}"
    assert len(pruned) == len(exhaustive)
    for p, e in zip(pruned, exhaustive):
        assert p[:4] == e[:4]                      # the same kernel, template, tiling and score
        assert p[4] == e[4][:len(p[4])]            # the runners-up listed are the exhaustive order's first ones
        assert e[5] == 0
