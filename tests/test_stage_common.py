"""The stages' sandbox limits (jaxjudge.grading.stage_common)."""

from __future__ import annotations

from jaxjudge import load_problem
from jaxjudge.grading.pipeline import Grading
from jaxjudge.grading.stage_common import MAX_RESULT_BYTES, sandbox_limits, stage_b_limits
from jaxjudge.grading.stage_paths import OBSERVE_SECONDS


def test_only_stage_b_gets_room_for_a_large_result() -> None:
    """Stage B (no user Python) may write a result as large as the trusted side reads; stage A,
    where the submission runs, keeps the problem's output cap (a stage B override once gave
    stage A 64 MiB too, and a 10 MB tree of directories was accepted in the warm pool)."""
    limits = load_problem("rematerialized-mlp-block").limits
    assert stage_b_limits(limits).output_bytes == MAX_RESULT_BYTES
    # and the observer's time, the grader's work, on top of the problem's
    assert stage_b_limits(limits).cpu_seconds == limits.cpu_seconds + OBSERVE_SECONDS
    assert sandbox_limits(limits).cpu_seconds == limits.cpu_seconds
    assert sandbox_limits(limits).output_bytes == max(limits.output_kb * 1024, 256 * 1024)
    grading = Grading.__new__(Grading)
    grading.limits = limits
    assert grading._sandbox_limits() == sandbox_limits(limits)
