"""When no tiling's flags fit the chip's event ids, the cheapest runs in barrier sync mode (never refused)."""
from __future__ import annotations

from test_sync import add_schedule, assert_adds

from pyasc.codegen.emit import emit
from pyasc.codegen.tiling import Ranking, pick
from simulator import chips


def test_a_schedule_needing_more_event_ids_than_the_chip_has_runs_with_barriers():
    chip = chips.get("tiny").replace(event_ids=1)  # double buffering needs 2 ids per pipe pair
    choice = pick(Ranking([2], add_schedule, chip, {}), chip, {})
    cand = choice.chosen
    assert cand.params == 2 and cand.sync.mode == "barrier" and not cand.rejected and not choice.rejected
    assert_adds(emit(cand.schedule, cand.sync, chip), chip)


def test_a_candidate_whose_flags_fit_is_preferred_to_barriers():
    chip = chips.get("tiny").replace(event_ids=1)
    choice = pick(Ranking([2, 1], add_schedule, chip, {}), chip, {})
    (double,) = choice.rejected
    assert choice.chosen.params == 1 and choice.chosen.sync.mode == "flags"
    assert double.params == 2 and "event ids" in double.rejected
