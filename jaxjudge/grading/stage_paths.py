"""The stage scripts and a problem's limits as the sandbox takes them: all that starting a stage
needs, apart from `jaxjudge.grading.stage_common` so that the one-off grade's launcher
(jaxjudge/grading/early.py) starts the stages without importing the report, the rules or the
problem package first."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from jaxjudge.isolation import sandbox

STAGES_DIR = Path(__file__).resolve().parent.parent / "stages"  # run by path, never imported
TRACE_SCRIPT = STAGES_DIR / "trace.py"
EXECUTE_SCRIPT = STAGES_DIR / "execute.py"


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
