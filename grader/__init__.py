"""jaxjudge's grading library: grade JAX submissions against problem packages.

The public API is exactly `__all__`; every other module is private and may change.
"""

from grader import render
from grader.batch import BatchEntry, BatchError, BatchResult, grade_file, grade_folder
from grader.grade import grade
from grader.grader import Grader
from grader.pool import WarmPool
from grader.problem import Limits, Problem, ProblemError, TestCase, list_problems, load_problem
from grader.report import Report, RequirementResult, TestResult, Verdict
from grader.sandbox import protections

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
