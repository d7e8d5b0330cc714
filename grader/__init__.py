"""jaxjudge's grading library: grade JAX submissions against problem packages.

The public API is exactly `__all__`; every other module is private and may change. Names are
imported on first use (PEP 562), so `import grader.sandbox` or a one-off `jaxjudge grade` does
not pay for the warm pool, batch grading or the HTTP client.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader import render
    from grader.batch import BatchEntry, BatchError, BatchResult, grade_file, grade_folder
    from grader.grade import grade
    from grader.grader import Grader
    from grader.pool import WarmPool
    from grader.problem import Limits, Problem, ProblemError, TestCase, list_problems, load_problem
    from grader.report import Report, RequirementResult, TestResult, Verdict
    from grader.sandbox import protections

_WHERE = {
    "BatchEntry": "grader.batch",
    "BatchError": "grader.batch",
    "BatchResult": "grader.batch",
    "Grader": "grader.grader",
    "Limits": "grader.problem",
    "Problem": "grader.problem",
    "ProblemError": "grader.problem",
    "Report": "grader.report",
    "RequirementResult": "grader.report",
    "TestCase": "grader.problem",
    "TestResult": "grader.report",
    "Verdict": "grader.report",
    "WarmPool": "grader.pool",
    "grade": "grader.grade",
    "grade_file": "grader.batch",
    "grade_folder": "grader.batch",
    "list_problems": "grader.problem",
    "load_problem": "grader.problem",
    "protections": "grader.sandbox",
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
        return importlib.import_module("grader.render")
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'grader' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


class _Package(types.ModuleType):
    """`grader.grade` is the function, as it always was, even once the submodule of the same
    name is imported (the import system would set the attribute to the module)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "grade" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
