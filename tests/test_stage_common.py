"""The stages' sandbox limits (jaxjudge.grading.stage_common)."""

from __future__ import annotations

from jaxjudge import list_problems, load_problem
from jaxjudge.grading.pipeline import Grading
from jaxjudge.grading.stage_common import MAX_RESULT_BYTES, sandbox_limits, stage_b_limits
from jaxjudge.grading.stage_paths import OBSERVE_SECONDS, OBSERVE_WALL_SECONDS
from jaxjudge.problems.limits import peek_limits


def test_only_stage_b_gets_room_for_a_large_result() -> None:
    """Stage B (no user Python) may write a result as large as the trusted side reads; stage A,
    where the submission runs, keeps the problem's output cap (a stage B override once gave
    stage A 64 MiB too, and a 10 MB tree of directories was accepted in the warm pool)."""
    limits = load_problem("rematerialized-mlp-block").limits
    assert stage_b_limits(limits, True).output_bytes == MAX_RESULT_BYTES
    assert stage_b_limits(limits, False).output_bytes == MAX_RESULT_BYTES
    # and the observer's time, the grader's work, on top of the problem's when it observes
    b = stage_b_limits(limits, True)
    assert (b.cpu_seconds, b.wall_seconds) == (limits.cpu_seconds + OBSERVE_SECONDS,
                                               limits.wall_seconds + OBSERVE_WALL_SECONDS)
    assert OBSERVE_WALL_SECONDS > OBSERVE_SECONDS  # the load stretches the wall time only
    b = stage_b_limits(limits, False)
    assert (b.cpu_seconds, b.wall_seconds) == (limits.cpu_seconds, limits.wall_seconds)
    assert sandbox_limits(limits).cpu_seconds == limits.cpu_seconds
    assert sandbox_limits(limits).output_bytes == max(limits.output_kb * 1024, 256 * 1024)
    grading = Grading.__new__(Grading)
    grading.limits = limits
    assert grading._sandbox_limits() == sandbox_limits(limits)


def test_only_a_problem_whose_rules_observe_gives_stage_b_the_observers_time() -> None:
    """The seed problem's activation rule reads stage B's observed runs, so its stage B gets
    OBSERVE_SECONDS more; the straight-through estimator's rules observe nothing, so a slow
    program there meets the problem's own limits. The CLI's early start (which peeks at
    problem.toml before the problem loads) grants the same as the loaded problem, on every
    problem: else the stages it started would not be adopted."""
    assert load_problem("rematerialized-mlp-block").observed
    assert not load_problem("straight-through-estimator").observed
    problems = list_problems()
    assert len(problems) >= 13
    for problem in problems:
        peeked = peek_limits(str(problem.root))
        assert peeked is not None and peeked.observed == problem.observed, problem.id
