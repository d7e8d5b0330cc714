"""Small helpers shared by test modules (imported like api_fixtures: tests/ is on sys.path)."""

from __future__ import annotations

from typing import Any

from grader import Problem, Report, grade
from grader.grade import set_stage_runner


def grade_through(runner: Any, problem: Problem, sources: list[str],
                  mode: str = "run") -> list[Report]:
    """Grade `sources` in order with `runner` launching the stages, then restore the default."""
    set_stage_runner(runner)
    try:
        return [grade(problem, source, mode) for source in sources]  # type: ignore[arg-type]
    finally:
        set_stage_runner(None)
