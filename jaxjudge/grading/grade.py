"""`grade()`: grade one submission with a process-wide default `Grader`.

The one-call convenience for scripts and the CLI: a fresh-interpreter runner, the engine from
JAXJUDGE_ENGINE, no report cache. Anything that grades many submissions, or wants a warm pool,
builds its own `jaxjudge.Grader` and passes it around.
"""

from __future__ import annotations

import threading
from typing import Any

from jaxjudge.grading.early import Started
from jaxjudge.grading.grader import Grader
from jaxjudge.grading.report import Mode, Report
from jaxjudge.grading.scoring import max_score
from jaxjudge.problems.package import Limits, Problem
from jaxjudge.version import BASE_VERSION, grader_version

__all__ = ["BASE_VERSION", "default_grader", "grade", "grader_version", "max_score"]

_default: Grader | None = None
_lock = threading.Lock()


def default_grader() -> Grader:
    """The grader `grade()` uses, made on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = Grader()
        return _default


def grade(
    problem: Problem | str,
    source: str | bytes,
    mode: Mode = "submit",
    *,
    filename: str = "submission.py",
    limits: Limits | None = None,
    early: Started | None = None,
    custom_inputs: list[dict[str, Any]] | None = None,
) -> Report:
    """Grade one submission (see `Grader.grade`)."""
    return default_grader().grade(problem, source, mode, filename=filename, limits=limits,
                                  early=early, custom_inputs=custom_inputs)
