"""Verdicts and the grade report: the one data model every front end (CLI, HTTP, batch) shares.

A submission's failure is never an exception: it is a `Verdict` with a message in a `Report`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Verdict(StrEnum):
    """The outcome of a grade (or of one test). The string values are the public contract."""

    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    REQUIREMENT_FAILED = "requirement_failed"
    RUNTIME_ERROR = "runtime_error"
    COMPILE_ERROR = "compile_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    INTERNAL_ERROR = "internal_error"
    # Only for tests that never ran because an earlier stage already decided the verdict.
    SKIPPED = "skipped"

    def __str__(self) -> str:
        return self.value


Mode = Literal["run", "submit"]


class TestDetails(BaseModel):
    """Inputs, expected and actual outputs: only ever filled for visible (published) tests."""

    inputs: dict[str, Any]
    expected: Any
    got: Any | None = None


class TestResult(BaseModel):
    model_config = ConfigDict(frozen=False)

    name: str
    visible: bool
    verdict: Verdict
    message: str = ""
    max_abs_error: float | None = None
    score: float = 0.0
    max_score: float = 0.0
    details: TestDetails | None = None
    seconds: float | None = Field(
        default=None,
        description="how long the program ran on this test in stage B (the first test of a "
        "shape also compiles it); None when the test did not run",
    )
    custom: bool = Field(
        default=False,
        description="the learner's own input (run mode): expected computed by the reference, "
        "worth no points",
    )


class Evidence(BaseModel):
    """The part of the verified exported program a requirement refers to: a few ops, printed
    by the trusted side from the program stage B verified (never from stage A alone), bounded
    in size; text only (a page shows it as text, a renderer escapes it)."""

    program: str = Field(description="the input shapes of the program shown, e.g. B=2,D=3,H=4")
    text: str = Field(description="a few StableHLO ops, one a line; '>' marks the ones decided on")
    focus: list[int] = Field(default_factory=list, description="0-based lines of `text` marked")
    source_lines: list[int] = Field(
        default_factory=list,
        description="lines of the submission the marked ops came from, if its trace recorded "
        "them (a pointer into the learner's own file: checked to lie within it, not evidence)",
    )
    source_file: str = Field(default="", description="the submission's file name they refer to")


class RequirementResult(BaseModel):
    name: str
    level: Literal["spec", "program"]
    passed: bool
    message: str
    score: float = 0.0
    max_score: float = 0.0
    evidence: Evidence | None = Field(
        default=None,
        description="where in the program (absent in reports stored by earlier releases)",
    )


class HeldArray(BaseModel):
    shape: str = Field(description='e.g. "4x5xf32" ("?" for a symbolic dimension)')
    bytes: int | None = Field(description="None when a dimension is symbolic")
    op: str = Field(description="the op that computes it, e.g. stablehlo.tanh")
    source: str | None = Field(
        default=None, description="the nearest op it is computed from that says what it is "
        "(e.g. stablehlo.tanh for the 1 - tanh² a backward pass keeps), when `op` does not")


class ProgramMemory(BaseModel):
    """One program's profile."""

    program: str = Field(description="the input shapes of the program measured")
    peak_arrays: int = Field(description="intermediate arrays held at once at the peak")
    peak_bytes: int | None = Field(description="their bytes (None: a symbolic dimension)")
    held: list[HeldArray] = Field(default_factory=list, description="the largest of them")
    largest: HeldArray | None = Field(default=None, description="the largest intermediate")


class MemoryReport(BaseModel):
    """What the program holds in memory next to the reference's program, at the same input
    shapes (jaxjudge.grading.memory)."""

    yours: ProgramMemory
    reference: ProgramMemory | None = None
    summary: str = ""


class Report(BaseModel):
    """Everything a learner (or a course tool) gets back for one submission."""

    verdict: Verdict
    problem: str
    mode: Mode
    message: str = Field(description="One-paragraph summary a learner can act on.")
    summary: str = Field(
        default="",
        description="One line above the details: how many tests and requirements hold and the "
        "first thing to fix (empty in reports stored by earlier releases).",
    )
    tests: list[TestResult] = Field(default_factory=list)
    requirements: list[RequirementResult] = Field(default_factory=list)
    score: float = 0.0
    max_score: float = 0.0
    memory: MemoryReport | None = Field(
        default=None,
        description="what the program holds in memory next to the reference's (programs "
        "exported per input shape only; absent in reports stored by earlier releases)",
    )
    timings: dict[str, float] = Field(default_factory=dict)
    output: str = Field(default="", description="The submission's own stdout/stderr, truncated.")
    versions: dict[str, str] = Field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)
