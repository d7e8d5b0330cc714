"""jaxjudge: grade JAX submissions against problem packages.

The public API is exactly `__all__` (`from jaxjudge import Grader, load_problem, Report`); every
other module is private and may change. Names are imported on first use (PEP 562), so
`import jaxjudge` or a one-off `jaxjudge grade` does not pay for the warm pool, batch grading or
the HTTP client. The layers below this package are drawn in docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxjudge.batch.folder import BatchEntry, BatchError, BatchResult, grade_file, grade_folder
    from jaxjudge.grading import render
    from jaxjudge.grading.grade import grade
    from jaxjudge.grading.grader import Grader
    from jaxjudge.grading.report import Report, RequirementResult, TestResult, Verdict
    from jaxjudge.isolation.pool import WarmPool
    from jaxjudge.isolation.sandbox import protections
    from jaxjudge.problems.package import (
        Limits,
        Problem,
        ProblemError,
        TestCase,
        list_problems,
        load_problem,
    )

_WHERE = {
    "BatchEntry": "jaxjudge.batch.folder",
    "BatchError": "jaxjudge.batch.folder",
    "BatchResult": "jaxjudge.batch.folder",
    "Grader": "jaxjudge.grading.grader",
    "Limits": "jaxjudge.problems.package",
    "Problem": "jaxjudge.problems.package",
    "ProblemError": "jaxjudge.problems.package",
    "Report": "jaxjudge.grading.report",
    "RequirementResult": "jaxjudge.grading.report",
    "TestCase": "jaxjudge.problems.package",
    "TestResult": "jaxjudge.grading.report",
    "Verdict": "jaxjudge.grading.report",
    "WarmPool": "jaxjudge.isolation.pool",
    "grade": "jaxjudge.grading.grade",
    "grade_file": "jaxjudge.batch.folder",
    "grade_folder": "jaxjudge.batch.folder",
    "list_problems": "jaxjudge.problems.package",
    "load_problem": "jaxjudge.problems.package",
    "protections": "jaxjudge.isolation.sandbox",
}

__all__ = [
    "BatchEntry",
    "BatchError",
    "BatchResult",
    "Grader",
    "Limits",
    "Problem",
    "ProblemError",
    "Report",
    "RequirementResult",
    "TestCase",
    "TestResult",
    "Verdict",
    "WarmPool",
    "grade",
    "grade_file",
    "grade_folder",
    "list_problems",
    "load_problem",
    "protections",
    "render",
]


def __getattr__(name: str) -> Any:
    if name == "render":
        return importlib.import_module("jaxjudge.grading.render")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

