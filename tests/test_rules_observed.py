"""The loop requirements decided from an observed run (jaxjudge.rules.observed), and the
observation's schema at the trust boundary (jaxjudge.grading.stage_results)."""

from __future__ import annotations

import json

import pytest

from jaxjudge.grading.stage_results import MalformedResult, parse_stage_b
from jaxjudge.rules.observed import LoopRun, Observation, judge_loop, visited


def _run(first, kept, *, steps=6, entry=None, exit_=None, work=None, index=9) -> LoopRun:
    return LoopRun(index=index, depth=0, steps=steps, entry=tuple(entry or [3] * len(first)),
                   first=tuple(first), exit=tuple(exit_ or [18] * len(first)),
                   kept=tuple(kept), work=tuple(work or [8] * steps))


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


def test_a_mixture_entering_the_loop_fails() -> None:
    run = _run([None] * 6, [False] * 6, entry=[21, 18, 15, 12, 9, 6])
    why = judge_loop(_obs(run), every_step=False, sliced=True, names="x")
    assert why is not None and "before the loop starts" in why


def test_outputs_mixed_after_the_loop_fail() -> None:
    run = _run([0, 1, 2, 3, 4, 5], [True] * 6, exit_=[3] * 6)
    why = judge_loop(_obs(run), every_step=False, sliced=True, names="x")
    assert why is not None and "after the loop" in why


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
                      groups=4, loops=(_run([0, 1, 2, 3], [], steps=5),))
    why = visited((obs,), "B")
    assert why is not None and "4 different steps" in why and "of q" in why
    honest = Observation(count=4, sliced=(), dim="B", test="t", status="ok", groups=4,
                         loops=(_run([0, 0, 0, 0], [], steps=8),))
    assert visited((honest,), "B") is None
    assert visited((obs,), "H") is None  # another dimension's run says nothing


def _stage_b(observed: object) -> bytes:
    return json.dumps({"status": "ok", "programs": {}, "outputs": {},
                       "observed": observed}).encode()


def test_an_observation_is_schema_checked() -> None:
    good = {"r0": {"status": "ok", "groups": 1, "group_elements": 3, "outputs": [3],
                   "loops": [{"index": 9, "depth": 0, "steps": 1, "entry": [3], "first": [0],
                              "exit": [3], "kept": [True], "work": [0]}]}}
    assert parse_stage_b(_stage_b(good)).observed is not None
    for bad in (
        {"r0": {"status": "maybe"}},
        {"r0": {"status": "ok", "groups": 10**9}},
        {"r0": {"status": "ok", "loops": [{"index": 1, "depth": 0, "steps": 1, "entry": [],
                                           "first": [], "kept": [1], "work": []}]}},
        {"r0": {"status": "ok", "outputs": [-1]}},
        {f"r{i}": {"status": "ok"} for i in range(65)},
    ):
        with pytest.raises(MalformedResult):
            parse_stage_b(_stage_b(bad))


def test_a_run_past_the_budget_fails_a_loop_requirement() -> None:
    obs = Observation(count=4, sliced=(), dim="B", test="t", status="over_budget",
                      reason="more than 60,000,000 element operations")
    why = visited((obs,), "B")
    assert why is not None and "could not watch" in why


def test_work_outside_the_loop_and_a_start_computed_from_the_inputs_fail() -> None:
    busy = _run([], [True] * 6, work=[50] * 6)
    fine = Observation(count=6, sliced=(), test="t", outside_work=60, loops=(busy,))
    assert judge_loop(fine, every_step=True, sliced=False, names="", outside_factor=2) is None
    heavy = Observation(count=6, sliced=(), test="t", outside_work=400, loops=(busy,))
    why = judge_loop(heavy, every_step=True, sliced=False, names="", outside_factor=2)
    assert why is not None and "outside the loop your program executed 400" in why
    started = LoopRun(index=9, depth=0, steps=6, entry=(), first=(), exit=(), kept=(True,) * 6,
                      work=(50,) * 6, whole_entry=9)
    why = judge_loop(Observation(count=6, sliced=(), test="t", loops=(started,)),
                     every_step=True, sliced=False, names="", outside_factor=2)
    assert why is not None and "before the loop" in why
