"""A problem package must stay out of the sandbox's sight.

Every sandboxed run reads the system and Python prefixes (isolation/bwrap.py): a problem set
installed there (a `pip install` of a course's package into jaxjudge's own environment, say) would
hand its hidden expected outputs and its reference to every submission. Such a problem is refused
before anything runs, with the way out, instead of being graded unsafely."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from jaxjudge.isolation.bwrap import visible_dirs
from jaxjudge.problems.package import Problem, ProblemError


@functools.cache
def _visible() -> tuple[str, ...]:
    return tuple(visible_dirs())


def visible_to_runs(folder: Path) -> str | None:
    """The sandbox-visible directory `folder` lies in, or None (compared by path components,
    after resolving symlinks: `/opt/venv-problems` is not inside `/opt/venv`)."""
    real = os.path.realpath(folder)
    for top in _visible():
        if real == top or real.startswith(top.rstrip("/") + "/"):
            return top
    return None


def require_hidden(problem: Problem) -> None:
    """ProblemError when the problem's folder is readable from inside every sandboxed run."""
    top = visible_to_runs(problem.root)
    if top is not None:
        raise ProblemError(
            f"problem {problem.id!r} lives in {problem.root}, inside {top}, which every "
            "sandboxed run can read: its hidden tests and reference would be readable by "
            "submissions. Keep problem sets outside the Python and system prefixes (e.g. "
            "JAXJUDGE_PROBLEMS_DIR=/srv/jaxjudge/problems, or pip install --target such a folder)"
        )
