"""What one grade borrows from its Grader: the runner, the engine and the caches.

The pipeline and the stage protocols take this protocol, not the Grader class, so that they sit
below the Grader that builds them instead of importing it back."""

from __future__ import annotations

from typing import Protocol

from jaxjudge.grading.caches import FiguresCache, ModelsCache, ProgramCache
from jaxjudge.grading.stage_common import StageRunner


class Resources(Protocol):
    runner: StageRunner  # how sandboxed stages start (fresh interpreters or the warm pool)
    engine: str  # stage B's engine: "interpret" or "xla"
    overlap: bool  # start stage B's interpreter while stage A runs
    live_job_dir: bool  # a stage's files appear in its job dir as it writes them (cold runs)
    programs: ProgramCache  # stage B results per exported program
    rules: ModelsCache  # program-rule outcomes per verified program
    tests: ModelsCache  # compared tests per program and package
    memory: ModelsCache  # the reference's memory profile per package, mode and shapes
    figures: FiguresCache  # the reference's observed work per run, per package and mode
