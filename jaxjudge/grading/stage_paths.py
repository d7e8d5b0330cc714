"""The stage scripts and a problem's limits as the sandbox takes them: all that starting a stage
needs, apart from `jaxjudge.grading.stage_common` so that the one-off grade's launcher
(jaxjudge/grading/early.py) starts the stages without importing the report, the rules or the
problem package first."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol

from jaxjudge.isolation import sandbox

STAGES_DIR = Path(__file__).resolve().parent.parent / "stages"  # run by path, never imported
TRACE_SCRIPT = STAGES_DIR / "trace.py"
EXECUTE_SCRIPT = STAGES_DIR / "execute.py"
MAX_RESULT_BYTES = 64 * 1024 * 1024  # the most of a stage's result file the trusted side reads
# Stage B's time on top of the problem's when the problem's rules observe its programs
# (`Problem.observed`; jaxjudge/stages/observe.py): the observer's runs are counted in element
# operations, not seconds, and cost up to ~15-25 s of CPU (observe.TOTAL_WORK, 720 M: every run
# is watched to its own budget, none skipped; the costliest honest sample takes ~544 M; a cheat
# spending the whole total took 23 s of stage B on the oldest JAX, past 4 + 18 s of CPU),
# which is the grader's work, not the submission's; without it such a program's verdict
# changed with the load. A problem nothing observes keeps its own limits.
OBSERVE_SECONDS = 30.0
# Its wall time: the observer's work is counted, so its CPU time is bounded whatever the load;
# the wall time is what the load stretches (a cheat whose runs spend the whole total took 34 s
# of stage B beside other grades on 2 cores, a time-limit verdict where requirement_failed is
# right). Slow under load, never another verdict.
OBSERVE_WALL_SECONDS = 4 * OBSERVE_SECONDS


class StageLimits(Protocol):
    """`jaxjudge.problems.package.Limits`, or the launcher's `limits.PeekedLimits`."""

    @property
    def wall_seconds(self) -> float: ...
    @property
    def cpu_seconds(self) -> float: ...
    @property
    def memory_mb(self) -> int: ...
    @property
    def output_kb(self) -> int: ...


def sandbox_limits(limits: StageLimits) -> sandbox.SandboxLimits:
    """A problem's per-stage limits as the sandbox takes them."""
    return sandbox.SandboxLimits(
        wall_seconds=limits.wall_seconds,
        cpu_seconds=limits.cpu_seconds,
        memory_bytes=limits.memory_mb * 1024 * 1024,
        output_bytes=max(limits.output_kb * 1024, 256 * 1024),
    )


def stage_b_limits(limits: StageLimits, observed: bool) -> sandbox.SandboxLimits:
    """Stage B's: the problem's, plus the observer's time (OBSERVE_SECONDS of CPU,
    OBSERVE_WALL_SECONDS of wall time) when `observed`,
    and room for a result as large as the trusted side reads. No user Python runs in stage B;
    what it writes is the tests' outputs and the observer's runs, one per program the tests
    run (jaxjudge.grading.observing), which a program with nested loops takes past the
    problem's output_kb. Their size is bounded by their schema."""
    base = sandbox_limits(limits)
    extra = OBSERVE_SECONDS if observed else 0.0
    wall = OBSERVE_WALL_SECONDS if observed else 0.0
    return dataclasses.replace(base, output_bytes=max(base.output_bytes, MAX_RESULT_BYTES),
                               cpu_seconds=base.cpu_seconds + extra,
                               wall_seconds=base.wall_seconds + wall)
