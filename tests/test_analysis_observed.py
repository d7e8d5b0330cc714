"""The loop requirements decided from an observed run (jaxjudge.analysis.observed), and the
observation's schema at the trust boundary (jaxjudge.grading.stage_results)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from jaxjudge.analysis.observed import (
    LoopRun,
    Observation,
    Slot,
    judge_loop,
    unseen,
)
from jaxjudge.analysis.observed_activation import recomputed
from jaxjudge.analysis.observed_visits import visited, written_per_index
from jaxjudge.grading.stage_results import MalformedResult, parse_stage_b


def _run(first, kept, *, steps=6, entry=None, exit_=None, work=None, index=9,
         touches=None) -> LoopRun:
    slot = Slot(first=tuple(first), touches=tuple(touches or [steps] * len(first)),
                kept=tuple(kept), live=True)
    return LoopRun(index=index, depth=0, steps=steps, entry=tuple(entry or [3] * len(first)),
                   entry_max=tuple(entry or [3] * len(first)),
                   exit=tuple(exit_ or [18] * len(first)), work=tuple(work or [8] * steps),
                   exit_parts=(tuple(exit_ or [18] * len(first)),), needed=(1.0,),
                   slots=(slot,))


def _obs(*runs: LoopRun, outputs=None, groups=6) -> Observation:
    return Observation(count=6, sliced=("x",), test="hidden-01", status="ok", groups=groups,
                       group_elements=3, outputs=tuple(outputs or [18, 15, 12, 9, 6, 3]),
                       loops=runs)


HONEST = _run([0, 1, 2, 3, 4, 5], [True] * 6)


def test_an_honest_loop_passes() -> None:
    assert judge_loop(_obs(HONEST), every_step=True, sliced=True, names="x") is None


def test_a_first_step_that_only_sets_the_start_may_idle() -> None:
    run = _run([0, 1, 2, 3, 4, 5], [False] + [True] * 5)
    assert judge_loop(_obs(run), every_step=True, sliced=True, names="x") is None


def test_idle_steps_fail_and_say_what_ran() -> None:
    run = _run([0] * 6, [True] + [False] * 5, work=[64, 0, 0, 0, 0, 0])
    why = judge_loop(_obs(run), every_step=True, sliced=False, names="x")
    assert why is not None
    assert "steps 2–6 of its 6" in why
    assert "steps 2–6 executed 0 arithmetic operations; step 1 executed 64" in why


def test_unknown_steps_are_not_counted_against_the_loop() -> None:
    run = _run([0, 1, 2, 3, 4, 5], [True, None, None, True, True, True])
    assert judge_loop(_obs(run), every_step=True, sliced=False, names="x") is None


def test_several_shares_at_one_step_fail() -> None:
    run = _run([0, 0, 1, 1, 2, 2], [True] * 6)
    why = judge_loop(_obs(run), every_step=False, sliced=True, names="x")
    assert why is not None and "takes up 2 of the 6" in why


def test_one_step_may_take_up_two_shares() -> None:
    run = _run([1, 1, 2, 3, 4, None], [True] * 6)  # a buffer initialised with x, in place
    assert judge_loop(_obs(run), every_step=False, sliced=True, names="x") is None


def test_on_a_second_test_a_share_may_show_a_few_steps_late() -> None:
    # blocks whose scores underflow show only when a later rescaling lifts them
    for late in ([1, 1, 2, 3, 4, 7, None, 7], [1, 1, 2, 3, 5, 5, 7, 7]):
        run = _run(late, [True] * 8, steps=8)
        second = replace(_obs(run, groups=8), count=8, second=True)
        assert judge_loop(second, every_step=False, sliced=True, names="k") is None, late
        why = judge_loop(replace(second, second=False), every_step=False, sliced=True,
                         names="k")
        assert why is not None and "at once" in why, late  # first tests: strict
    # delays: three at every third step, or three or four at the last (a red-team round)
    for crowded in ([0, 0, 1, 1, 2, 2, 3, 3], [7] * 8, [4, 4, 5, 5, 6, 6, 7, 7],
                    [2, 2, 2, 5, 5, 5, 7, 7], [0, 1, 2, 3, 4, 7, 7, 7],
                    [0, 1, 2, 3, 7, 7, 7, 7]):
        run = _run(crowded, [True] * 8, steps=8)
        why = judge_loop(replace(second, loops=(run,)), every_step=False, sliced=True,
                         names="k")
        assert why is not None and "at once" in why, crowded


def test_shares_are_read_in_the_values_the_outputs_need() -> None:
    # a Kahan residue, dropped at the loop's end: its first steps are rounding's
    residue = Slot(first=(5,) * 6, touches=(6,) * 6, kept=(True,) * 6, live=True,
                   part=1)
    run = replace(_run([0, 1, 2, 3, 4, 5], [True] * 6), exit_parts=((18,) * 6, (0,) * 6))
    for needed, ok in (((1.0, 0.0), True), ((1.0, 0.5), False), ((1.0, None), False)):
        both = replace(run, slots=(*run.slots, residue), needed=needed)
        why = judge_loop(_obs(both), every_step=False, sliced=True, names="x")
        assert (why is None) is ok, (needed, why)


def test_a_mixture_entering_the_loop_fails() -> None:
    run = _run([None] * 6, [False] * 6, entry=[21, 18, 15, 12, 9, 6])
    why = judge_loop(_obs(run), every_step=False, sliced=True, names="x")
    assert why is not None and "before the loop starts" in why
    copies = _run([0, 1, 2, 3, 4, 5], [True] * 6, entry=[6] * 6)  # x and x[0] stacked: fine
    assert judge_loop(_obs(copies), every_step=False, sliced=True, names="x") is None


def test_outputs_mixed_after_the_loop_fail() -> None:
    run = _run([0, 1, 2, 3, 4, 5], [True] * 6, exit_=[3] * 6)
    why = judge_loop(_obs(run), every_step=False, sliced=True, names="x")
    assert why is not None and "after the loop" in why


def test_loop_results_the_outputs_do_not_need_are_not_counted_after_it() -> None:
    # a copy of one row per step, and a value holding every row (18 per group) that the
    # outputs take in times 1e-30: setting it back at the end moves them by nothing
    run = _run([0, 1, 2, 3, 4, 5], [True] * 6, exit_=[21] * 6)
    parts = dict(exit_parts=((3,) * 6, (18,) * 6))
    junk = replace(run, **parts, needed=(1.0, 0.0))
    why = judge_loop(_obs(junk), every_step=False, sliced=True, names="x")
    assert why is not None and "the outputs need only 3" in why
    needed = replace(run, **parts, needed=(1.0, 0.5))  # honest: both parts move the outputs
    assert judge_loop(_obs(needed), every_step=False, sliced=True, names="x") is None
    unknown = replace(run, **parts, needed=(1.0, None))  # not measured: counted
    assert judge_loop(_obs(unknown), every_step=False, sliced=True, names="x") is None


def test_a_result_that_alone_gives_the_outputs_what_the_loop_does_is_all_they_take() -> None:
    # a copy of one row per step (3 per group) and two fillers of every row (18 each) that
    # cancel exactly: each filler set back alone moves the outputs; kept alone, the copy
    # gives them what the whole loop does
    run = _run([0, 1, 2, 3, 4, 5], [True] * 6, exit_=[39] * 6)
    parts = dict(exit_parts=((18,) * 6, (18,) * 6, (3,) * 6), needed=(1.0, 1.0, 1.0))
    cancel = replace(run, **parts, alone=(0.9, 0.9, 0.0))
    why = judge_loop(_obs(cancel), every_step=False, sliced=True, names="x")
    assert why is not None and "the outputs need only 3" in why and "unchanged" in why
    honest = replace(run, **parts, alone=(0.9, 0.9, 0.5))  # no value suffices alone: all count
    assert judge_loop(_obs(honest), every_step=False, sliced=True, names="x") is None
    whole = replace(run, **parts, alone=(0.0, 0.9, 0.9))  # the 18-value result suffices alone
    assert judge_loop(_obs(whole), every_step=False, sliced=True, names="x") is None
    # a filler the outputs do not need is never enough, however unchanged they are with it
    # alone (a two-pass softmax: shifted by the stacked maxima, the output takes nothing)
    idle = replace(run, exit_parts=((18,) * 6, (3,) * 6), needed=(0.0, 0.0), alone=(0.0, 0.0))
    why = judge_loop(_obs(idle), every_step=False, sliced=True, names="x")
    assert why is not None and "the outputs need only 0" in why
    # two cancelling fillers (each needed alone) beside unneeded maxima kept alone: nothing
    two = replace(run, exit_parts=((18,) * 6, (18,) * 6, (3,) * 6), needed=(1.0, 1.0, 0.0),
                  alone=(0.9, 0.9, 0.0))
    why = judge_loop(_obs(two), every_step=False, sliced=True, names="x")
    assert why is not None and "the outputs need only 0" in why


def test_a_direct_copy_beside_the_loop_is_of_one_inputs_share() -> None:
    # blockwise at T = 16, d = 1: a block is 4 rows of k and 4 of v (8 values); the output
    # moves with it in all 16 values while no loop result the output needs does
    run = replace(_run([0, 1, 2, 3], [True] * 4, steps=4, exit_=[16] * 4),
                  exit_parts=((16,) * 4,), needed=(0.0,))
    obs = Observation(count=4, sliced=("k", "v"), test="hidden-01", groups=4,
                      group_elements=8, outputs=(16,) * 4, loops=(run,))
    why = judge_loop(obs, every_step=False, sliced=True, names="k and v")
    assert why is not None and "16 of your output values" in why
    copied = replace(obs, outputs=(8,) * 4)  # v's block copied into the output: 2 x 4
    assert judge_loop(copied, every_step=False, sliced=True, names="k and v") is None


def test_a_loop_whose_runs_differ_in_length_is_not_the_loop() -> None:
    inner = [_run([0] * 6, [True] * 6, index=20)] + [
        _run([None] * 6, [], steps=0, index=20) for _ in range(5)]
    outer = _run([0] * 6, [True] + [False] * 5, index=9)
    why = judge_loop(_obs(outer, *inner), every_step=True, sliced=False, names="x")
    assert why is not None and "steps 2–6" in why


def test_no_loop_of_the_trip_count() -> None:
    why = judge_loop(_obs(_run([0] * 6, [True] * 5, steps=5)), every_step=True, sliced=False,
                     names="x")
    assert why is not None and "no loop ran 6 steps" in why


def test_visiting_a_dimension_is_seen_whatever_picks_the_index() -> None:
    obs = Observation(count=4, sliced=(), dim="B", watched="q", test="t", status="ok",
                      groups=4, loops=(_run([0, 1, 2, 3], [], steps=5, touches=[1] * 4),))
    why = visited((obs,), "B")
    assert why is not None and "at 4 different steps" in why and "of q" in why
    honest = Observation(count=4, sliced=(), dim="B", test="t", status="ok", groups=4,
                         loops=(_run([0, 0, 0, 0], [], steps=8),))
    assert visited((honest,), "B") is None
    assert visited((obs,), "H") is None  # another dimension's run says nothing


def test_an_index_that_enters_the_update_again_is_a_visit() -> None:
    """Each index folded in half at its own step and half at the next (two steps each), or
    beside a sum of every index at step 0: where each entered again, different steps. An
    index a data mask takes up for good (keys past its length) is no visit, even at a step
    of its own."""
    run = _run([0, 0, 0, 0], [], steps=5, touches=[2] * 4)

    def with_(**kw) -> Observation:
        loop = LoopRun(index=run.index, depth=run.depth, steps=run.steps, entry=run.entry,
                       entry_max=run.entry_max, exit=run.exit, work=run.work,
                       slots=run.slots, **kw)
        return Observation(count=4, sliced=(), dim="B", test="t", status="ok", groups=4,
                           loops=(loop,))

    why = visited((with_(enters=(None, 1, 2, 3)),), "B")
    assert why is not None and "B index 1 at step 2" in why and "3 different steps" in why
    assert visited((with_(enters=(None, None, 2, 3)),), "B") is None  # two: not told apart
    assert visited((with_(),), "B") is None
    single = LoopRun(index=9, depth=0, steps=5, entry=(), entry_max=(), exit=(), work=(),
                     slots=(Slot(first=(1, 2, 3, 4), touches=(1,) * 4, kept=(), live=True),))
    assert visited((Observation(count=4, sliced=(), dim="B", test="t", loops=(single,)),),
                   "B") is not None
    taken_up = LoopRun(index=9, depth=0, steps=5, entry=(), entry_max=(), exit=(), work=(),
                       slots=single.slots, for_good=(True,) * 4)
    assert visited((Observation(count=4, sliced=(), dim="B", test="t", loops=(taken_up,)),),
                   "B") is None


def test_a_sum_of_every_index_at_every_step_does_not_hide_the_visits() -> None:
    """Every index moves the value at every step (a smeared sum), yet some element of it is
    one index's at one step only: the loop takes the indices up one at a time."""
    run = _run([0, 0, 0, 0], [], steps=8, touches=[8] * 4)
    tagged = LoopRun(index=run.index, depth=run.depth, steps=run.steps, entry=run.entry,
                     entry_max=run.entry_max, exit=run.exit, work=run.work,
                     slots=(Slot(first=(0,) * 4, touches=(8,) * 4, kept=(), live=True,
                                 single=(0, 1, 2, 3)),))
    obs = Observation(count=4, sliced=(), dim="N", test="t", status="ok", groups=4,
                      loops=(tagged,))
    why = visited((obs,), "N")
    assert why is not None and "N index 3 at step 4" in why
    still = Observation(count=4, sliced=(), dim="N", test="t", status="ok", groups=4,
                        loops=(run,))
    assert visited((still,), "N") is None


def _stage_b(observed: object) -> bytes:
    return json.dumps({"status": "ok", "programs": {}, "outputs": {},
                       "observed": observed}).encode()


def test_an_observation_is_schema_checked() -> None:
    good = {"r0": {"status": "ok", "groups": 1, "group_elements": 3, "outputs": [3],
                   "loops": [{"index": 9, "depth": 0, "steps": 1, "entry": [3], "exit": [3],
                              "work": [0], "slots": [{"first": [0], "touches": [1],
                                                      "kept": [True], "live": True}]}]}}
    assert parse_stage_b(_stage_b(good)).observed is not None
    for bad in (
        {"r0": {"status": "maybe"}},
        {"r0": {"status": "ok", "groups": 10**9}},
        {"r0": {"status": "ok", "loops": [{"index": 1, "depth": 0, "steps": 1, "entry": [],
                                           "work": [], "slots": [{"first": [], "touches": [],
                                                                  "kept": [1], "live": True}]}]}},
        {"r0": {"status": "ok", "outputs": [-1]}},
        {f"r{i}": {"status": "ok"} for i in range(65)},
    ):
        with pytest.raises(MalformedResult):
            parse_stage_b(_stage_b(bad))


def test_a_run_past_the_budget_fails_a_loop_requirement() -> None:
    """Over its budget (the reason carries the reference's figure) or past the loop runs the
    observer records, a run fails its requirement: none is skipped."""
    obs = Observation(count=4, sliced=(), dim="B", test="t", status="over_budget",
                      reason="it did more than 160x the observed work of the reference")
    why = visited((obs,), "B")
    assert why is not None and "160x" in why and "stopped watching" in why
    full = Observation(count=4, sliced=(), dim="B", test="t", status="over_records",
                       reason="more than 256 loop runs, the most the grader records")
    why = visited((full,), "B")
    assert why is not None and "256 loop runs" in why and "not confirmed" in why


def test_a_run_that_could_not_be_observed_fails() -> None:
    obs = Observation(count=6, sliced=("x",), test="t", status="unobservable",
                      reason="the op stablehlo.popcnt")
    why = unseen(obs)
    assert why is not None and "popcnt" in why
    assert unseen(_obs(HONEST)) is None


def test_a_value_passed_along_from_a_saturated_start_does_not_hide_the_visits() -> None:
    # each index changes the update of one step only, a different one each time
    obs = Observation(count=4, sliced=(), dim="B", test="t", groups=4,
                      loops=(_run([0, 1, 2, 3], [], steps=5, touches=[1, 1, 1, 1]),))
    assert visited((obs,), "B") is not None
    # an honest loop over keys with a length mask: each example updated at several steps
    honest = Observation(count=4, sliced=(), dim="B", test="t", groups=4,
                         loops=(_run([3, 1, 0, 2], [], steps=4, touches=[1, 3, 4, 2]),))
    assert visited((honest,), "B") is None


def test_without_shares_every_carried_value_must_keep_its_steps() -> None:
    junk = Slot(first=(), touches=(), kept=(True,) * 6, live=True)
    real = Slot(first=(), touches=(), kept=(True,) + (False,) * 5, live=True)
    run = LoopRun(index=9, depth=0, steps=6, entry=(), entry_max=(), exit=(), work=(8,) * 6,
                  slots=(junk, real))
    obs = Observation(count=6, sliced=(), test="t", loops=(run,))
    why = judge_loop(obs, every_step=True, sliced=False, names="")
    assert why is not None and "steps 2–6" in why


def test_a_value_carried_along_unchanged_is_not_a_value_that_stopped() -> None:
    carried = Slot(first=(), touches=(), kept=(False,) * 6, live=True)  # w w^T, carried along
    working = Slot(first=(), touches=(), kept=(True,) * 6, live=True)
    run = LoopRun(index=9, depth=0, steps=6, entry=(), entry_max=(), exit=(), work=(8,) * 6,
                  slots=(carried, working))
    obs = Observation(count=6, sliced=(), test="t", loops=(run,))
    assert judge_loop(obs, every_step=True, sliced=False, names="") is None


def test_code_per_index_fails_from_three_indices_with_ops_of_their_own() -> None:
    """Ops that move with one index alone, at three indices or more: written once per index.
    Two are not told from two vmapped halves at a size of 2, so they pass."""
    three = Observation(count=4, sliced=(), dim="H", test="t", private=(6, 6, 6, 0))
    why = visited((three,), "H")
    assert why is not None and "18 moved with one index alone" in why and "'t'" in why
    assert visited((Observation(count=2, sliced=(), dim="H", private=(6, 6)),), "H") is None
    assert visited((Observation(count=4, sliced=(), dim="H", private=(0,) * 4),), "H") is None


def test_a_scan_unrolled_three_times_is_not_code_per_index() -> None:
    """A scan with unroll=3 over 3 indices is unrolled whole, over 4 or 5 it makes one trip
    with three copies and leaves the rest outside: each copy moves with one index, as code
    written per index does, and passes. A Python loop over three of four does not."""
    whole = Observation(count=3, sliced=(), dim="B", test="t", private=(4, 4, 4))
    trip = Observation(count=5, sliced=(), dim="B", test="t", private=(4, 4, 4, 4, 4),
                       private_looped=(4, 4, 4, 0, 0))
    assert written_per_index((whole,), "B") is None
    assert written_per_index((trip,), "B") is None
    first_three = Observation(count=4, sliced=(), dim="B", test="t", private=(4, 4, 4, 0))
    assert written_per_index((first_three,), "B") is not None
    # three copies and one left over whose ops ride in the loop's carry (JAX 0.4.38 and new)
    carried = Observation(count=4, sliced=(), dim="B", test="t", private=(1, 1, 1, 3),
                          private_looped=(1, 1, 1, 2))
    assert written_per_index((carried,), "B") is None
    six_copies = Observation(count=6, sliced=(), dim="B", test="t", private=(4,) * 6,
                             private_looped=(4,) * 6)
    assert written_per_index((six_copies,), "B") is not None
    as_many_left = Observation(count=6, sliced=(), dim="B", test="t", private=(4,) * 6,
                               private_looped=(4, 4, 4, 0, 0, 0))
    assert written_per_index((as_many_left,), "B") is not None
    # two trips and two left over, one copy's op moved by its second trip's index alone
    # (the first's left a clipping scale of 1)
    data = Observation(count=8, sliced=(), dim="B", test="t", private=(0, 0, 0, 0, 2, 0, 1, 1),
                       private_looped=(0, 0, 0, 0, 2, 0, 0, 0))
    assert written_per_index((data,), "B") is None


def test_code_per_pair_of_indices_fails_from_three_pairs() -> None:
    """A Python loop over the batch two at a time, vmapped within each pair: no op moves with
    one index alone, but three disjoint pairs (or more) each have ops of their own."""
    pairs = Observation(count=8, sliced=(), dim="B", test="t", private=(0,) * 8, chunks=4)
    why = written_per_index((pairs,), "B")
    assert why is not None and "4 separate groups" in why and "'t'" in why
    two = Observation(count=8, sliced=(), dim="B", test="t", private=(0,) * 8, chunks=2)
    assert written_per_index((two,), "B") is None  # halves: a loop of two steps, not told


def test_independent_of_dim_reads_code_per_index_alone() -> None:
    """`written_per_index` (independent_of_dim) fails code written once per index, but not a
    rolled loop visiting the indices one per step, which that requirement allows."""
    three = Observation(count=4, sliced=(), dim="B", test="t", private=(5, 5, 5, 5))
    why = written_per_index((three,), "B")
    assert why is not None and "20 moved with one index alone" in why
    assert written_per_index((three,), "D") is None  # another dimension's run
    slot = Slot(first=(0, 1, 2, 3), touches=(1, 1, 1, 1), kept=(True,) * 4, live=True)
    rolled = Observation(count=4, sliced=(), dim="B", test="t", private=(0,) * 4,
                         loops=(LoopRun(index=0, depth=0, steps=4, entry=(), entry_max=(),
                                        exit=(), work=(), slots=(slot,)),))
    assert visited((rolled,), "B") is not None
    assert written_per_index((rolled,), "B") is None
    off = Observation(count=4, sliced=(), dim="B", test="t", status="unobservable",
                      reason="an op it does not run")
    assert "could not run" in (written_per_index((off,), "B") or "")


def _kept_run(kept: tuple[bool, ...], work: tuple[int, ...]) -> LoopRun:
    slot = Slot(first=(), touches=(), kept=kept, live=True)
    return LoopRun(index=3, depth=0, steps=len(work), entry=(), entry_max=(), exit=(),
                   work=work, slots=(slot,))


def test_work_crowded_into_one_step_fails_on_every_run() -> None:
    """All 8 iterations at step 1 under a branch (112 ops there, 13 or 0 elsewhere): crowded,
    on the first run and on the others, whatever the steps keep."""
    for primary in (True, False):
        run = _kept_run((True,) * 8, (112,) + (13,) * 7)
        obs = Observation(count=8, sliced=(), test="t", loops=(run,), primary=primary)
        why = judge_loop(obs, every_step=True, sliced=False, names="")
        assert why is not None and "step 1 of its 8 executed 112" in why and "median" in why
    # even steps two iterations, odd ones one: not three times the median
    even = _kept_run((True,) * 8, (28, 14) * 4)
    assert judge_loop(Observation(count=8, sliced=(), test="t", loops=(even,)),
                      every_step=True, sliced=False, names="") is None


def test_steps_kept_are_read_on_the_first_run_only() -> None:
    """Honest but unusual: a power iteration that converged (or started from u = 0) on the
    test of a second program keeps nothing after step 2; only the first run reads that."""
    converged = _kept_run((True, True) + (False,) * 6, (14,) * 8)
    other = Observation(count=8, sliced=(), test="t", loops=(converged,), primary=False)
    assert judge_loop(other, every_step=True, sliced=False, names="") is None
    first = Observation(count=8, sliced=(), test="t", loops=(converged,))
    why = judge_loop(first, every_step=True, sliced=False, names="")
    assert why is not None and "steps 3–8" in why


def test_a_sliced_loop_with_idle_steps_fails_whatever_tags_its_shares() -> None:
    """Two rows per step after 23 idle steps, each step's row tagged into the state: every
    share is first taken up at its own step, but steps 2-24 execute no arithmetic."""
    slot = Slot(first=tuple(range(48)), touches=(1,) * 48, kept=(True,) * 48, live=True)
    run = LoopRun(index=2, depth=0, steps=48, entry=(1,) * 48, entry_max=(1,) * 48,
                  exit=(1,) * 48, work=(20,) + (0,) * 23 + (20,) * 24, slots=(slot,))
    obs = Observation(count=48, sliced=("x",), test="t", groups=48, group_elements=1,
                      outputs=(1,) * 48, loops=(run,))
    why = judge_loop(obs, every_step=True, sliced=True, names="x")
    assert why is not None and "steps 2–24 of its 48 executed 0" in why
    # honest: a first step that only sets the starting value does less
    honest = LoopRun(index=2, depth=0, steps=48, entry=(1,) * 48, entry_max=(1,) * 48,
                     exit=(1,) * 48, work=(0,) + (20,) * 47, slots=(slot,))
    ok = Observation(count=48, sliced=("x",), test="t", groups=48, group_elements=1,
                     outputs=(1,) * 48, loops=(honest,))
    assert judge_loop(ok, every_step=True, sliced=True, names="x") is None


def test_steps_whose_reads_reach_no_output_are_idle_on_every_sliced_run() -> None:
    """A tag beside the state keeps every step's change, but the program drops it: steps
    whose change moved no output are idle, on extra runs of a sliced loop too."""
    run = _run([0, 1, 2, 3, 4, 5], [True] * 6)
    tagged = LoopRun(index=run.index, depth=0, steps=6, entry=run.entry,
                     entry_max=run.entry_max, exit=run.exit, work=run.work,
                     slots=run.slots, reached=(True, False, False, True, True, True))
    obs = _obs(tagged)
    extra = Observation(count=obs.count, sliced=obs.sliced, test=obs.test, status="ok",
                        groups=obs.groups, group_elements=obs.group_elements,
                        outputs=obs.outputs, loops=(tagged,), primary=False)
    for o in (obs, extra):
        why = judge_loop(o, every_step=True, sliced=True, names="x")
        assert why is not None and "steps 2–3 of its 6 change nothing your program returns" in why
    assert judge_loop(_obs(run), every_step=True, sliced=True, names="x") is None


def test_the_recomputed_activation_must_move_each_output_it_feeds() -> None:
    """Changing each tanh's result in turn: the recomputed one moves the gradients and not the
    loss. With `feeds` it must move W2's gradient too: a tanh saved by dots_saveable through a
    product with a permutation serves that gradient, and the tanh recomputed only for its own
    derivative moves the others alone (a red-team round)."""
    outs = ["loss", "grads.b1", "grads.w1", "grads.w2"]
    honest = ((1, 3, 6, 6), (0, 3, 6, 6))  # forward tanh: everything; recomputed: grads only
    cheat = ((1, 3, 6, 6), (0, 3, 6, 0))  # the recomputed one misses grads.w2
    for moved, feeds, ok in ((honest, ("grads.w2",), True), (cheat, (), True),
                             (cheat, ("grads.w2",), False)):
        obs = Observation(count=0, sliced=(), test="example-1", kind="activation",
                          activations=moved)
        why = recomputed((obs,), outs, ("loss",), ("grads",), "tanh", feeds)
        assert (why is None) is ok, why
        if not ok:
            assert "grads.w2 among them" in why and "the gradients but not grads.w2" in why


def test_the_recomputed_activation_must_move_what_it_feeds_by_a_hundredth() -> None:
    """A gradient read 99.9% from a saved copy moves with the recomputed tanh by 2e-4 of its
    size; an honest one moves wholly (0.06 to 1 on the remat problem's tests)."""
    outs = ["loss", "grads.b1", "grads.w1", "grads.w2"]
    moved = ((1, 3, 6, 6), (0, 3, 6, 6))
    for w2, ok in ((0.062, True), (0.0002, False)):
        obs = Observation(count=0, sliced=(), test="example-1", kind="activation",
                          activations=moved,
                          activation_sizes=((0.4, 0.2, 0.2, 0.4), (0.0, 0.5, 0.5, w2)))
        why = recomputed((obs,), outs, ("loss",), ("grads",), "tanh", ("grads.w2",))
        assert (why is None) is ok, why
        if not ok:
            assert "grads.w2 only by 0.0002 of its size" in why


def test_one_element_of_the_recomputed_activation_must_move_a_part_of_what_it_feeds() -> None:
    """W2's gradient h^T g moves in one row of its H when one element of the recomputed h
    changes; one read from a saved copy, rescaled by a factor recomputed from h (a sum),
    moves in every row though it moves by a whole size."""
    outs = ["loss", "grads.b1", "grads.w1", "grads.w2"]
    moved = ((1, 3, 6, 6), (0, 3, 6, 6))
    for spread, ok in ((0.25, True), (1.0, False)):
        obs = Observation(count=0, sliced=(), test="example-1", kind="activation",
                          activations=moved,
                          activation_sizes=((0.4, 0.2, 0.2, 0.4), (0.0, 0.5, 0.5, 0.5)),
                          activation_spread=((1.0, 1.0, 1.0, 1.0), (0.0, 0.3, 0.3, spread)))
        why = recomputed((obs,), outs, ("loss",), ("grads",), "tanh", ("grads.w2",))
        assert (why is None) is ok, why
        if not ok:
            assert "one element of it moved 100% of grads.w2" in why


def test_the_activation_thresholds_are_the_requirements_options() -> None:
    """`fed_share` and `local_share` (problem.toml) move where the line falls, and the rule
    passes them on: an author may widen what a gradient may move for a wider activation."""
    outs = ["loss", "grads.b1", "grads.w1", "grads.w2"]
    moved = ((1, 3, 6, 6), (0, 3, 6, 6))
    obs = Observation(count=0, sliced=(), test="example-1", kind="activation",
                      activations=moved,
                      activation_sizes=((0.4, 0.2, 0.2, 0.4), (0.0, 0.5, 0.5, 0.005)),
                      activation_spread=((1.0, 1.0, 1.0, 1.0), (0.0, 0.3, 0.3, 0.6)))
    args = ((obs,), outs, ("loss",), ("grads",), "tanh", ("grads.w2",))
    assert "only by 0.005 of its size" in (recomputed(*args) or "")
    assert "moved 60% of grads.w2" in (recomputed(*args, fed_share=1e-3) or "")
    assert recomputed(*args, fed_share=1e-3, local_share=0.7) is None


def test_the_share_taken_up_first_may_enter_the_loop_worked_on() -> None:
    """A running maximum started at the first block's maximum before the loop: that share
    enters already mixed (24 values, a copy has 3), the first step's work begun early. The
    share taken up first is whichever the loop starts from: block 6 for a loop run backwards.
    Any other share entering mixed is work done before the loop."""
    forward = _run([0, 1, 2, 3, 4, 5], [True] * 6, entry=[24, 3, 3, 3, 3, 3])
    backward = _run([5, 4, 3, 2, 1, 0], [True] * 6, entry=[3, 3, 3, 3, 3, 24])
    assert judge_loop(_obs(forward), every_step=True, sliced=True, names="x") is None
    assert judge_loop(_obs(backward), every_step=True, sliced=True, names="x") is None
    # block 1 folded before the loop, on data where no step is seen taking it up (its scores
    # underflow): the loop starts from that end all the same
    unseen_first = _run([None, 1, 2, 3, 4, 5], [True] * 6, entry=[24, 3, 3, 3, 3, 3])
    assert judge_loop(_obs(unseen_first), every_step=True, sliced=True, names="x") is None
    late = _run([5, 4, 3, 2, 1, 0], [True] * 6, entry=[24, 3, 3, 3, 3, 3])
    why = judge_loop(_obs(late), every_step=True, sliced=True, names="x")
    assert why is not None and "move with share 1 of x" in why
