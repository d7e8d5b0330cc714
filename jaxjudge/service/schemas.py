"""Request and response bodies of the HTTP API, named by role.

These are the public contract (they render into /openapi.json); storage rows and grader objects
are converted into them at the edge so internals can change without breaking clients.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jaxjudge.grading.report import Mode, Report, Verdict

Status = Literal["queued", "running", "done"]


class ErrorBody(BaseModel):
    """Every error response: a stable machine-readable `error` code and a human message."""

    error: str = Field(examples=["not_found"])
    message: str = Field(examples=["unknown problem 'nope'"])
    details: list[dict[str, Any]] | None = Field(
        default=None, description="Per-field problems of an invalid request body (422)."
    )


class SourceError(ValueError):
    """The submitted source cannot be graded as text (not UTF-8, bad base64)."""


class SubmissionCreate(BaseModel):
    """A new submission. Give the file either as `source` (text) or `source_b64` (the file's
    bytes, base64): the latter lets clients send a file without decoding it first."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=64, examples=["rematerialized-mlp-block"])
    source: str | None = Field(default=None, description="The Python file's text.")
    source_b64: str | None = Field(default=None, description="The Python file, base64-encoded.")
    mode: Mode = Field(
        default="submit",
        description="run: published examples only (fast feedback); submit: every test.",
    )
    custom_inputs: list[dict[str, Any]] | None = Field(
        default=None,
        max_length=3,
        description="With mode run: up to 3 inputs of your own (objects of the arguments), "
        "checked against the problem's arguments and constraints; the reference computes "
        "their expected outputs and the report shows them as tests custom-N, worth no points.",
    )
    callback_url: str | None = Field(
        default=None,
        max_length=2048,
        description="Where to POST a signed `submission.graded` notice once the grade is "
        "stored. Must be on the server's allow-list (https, public addresses); see Webhooks.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> SubmissionCreate:
        if (self.source is None) == (self.source_b64 is None):
            raise ValueError("give exactly one of `source` and `source_b64`")
        return self

    def source_bytes(self) -> bytes:
        """The file as UTF-8 bytes; raises SourceError if it is not valid UTF-8 text."""
        if self.source is not None:
            try:
                return self.source.encode("utf-8")
            except UnicodeEncodeError as exc:  # lone surrogates from "\ud800" JSON escapes
                raise SourceError("`source` is not valid Unicode text (lone surrogate)") from exc
        assert self.source_b64 is not None
        try:
            raw = base64.b64decode(self.source_b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SourceError("`source_b64` is not valid base64") from exc
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(
                f"`source_b64` is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from exc
        return raw


class CallbackPublic(BaseModel):
    """The delivery state of a submission's callback."""

    url: str = Field(description="As checked and normalized at submit time; whole only for "
                     "the token that sent it, others see `scheme://host/…` (a hook URL's path "
                     "or query is often the receiver's credential).")
    state: Literal["pending", "delivered", "failed"] = Field(
        description="pending: not delivered yet (before the grade, or between retries); "
        "delivered: a receiver answered 2xx; failed: given up (see last_error).")
    attempts: int = Field(description="Delivery attempts made so far.")
    last_status: int | None = Field(None, description="HTTP status of the last answer.")
    last_error: str | None = Field(
        None, description="Why the last attempt failed (only its owner sees it: a receiver's "
        "answer may quote the URL).")
    delivered_at: datetime | None = None


class SubmissionPublic(BaseModel):
    """A submission as clients see it. The source is sent back only to its owner (the token,
    or the browser identity, that submitted it), on the single submission; `source_sha256`
    lets any client match it to its file."""

    id: str
    problem_id: str
    mode: Mode
    status: Status
    verdict: Verdict | None = Field(None, description="Set once status is done.")
    score: float | None = None
    max_score: float | None = None
    source_bytes: int
    source_sha256: str
    mine: bool = Field(False, description="Submitted by this token (or this browser).")
    source: str | None = Field(
        None, description="The source, for its owner only, on GET /v1/submissions/{id}."
    )
    attempts: int = Field(description="How many times grading started (restarts re-run it).")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    report: Report | None = Field(
        None,
        description="The grade report (as `jaxjudge grade --json`) once done; hidden tests "
        "carry no details. Omitted in listings.",
    )
    callback: CallbackPublic | None = Field(
        None, description="The callback and its delivery state; null without a callback_url."
    )
    worker: str | None = Field(
        None, description="The `jaxjudge worker` process (name@host:pid) that holds the running "
        "attempt, or stored the last one; shown only to the submission's owner (null for "
        "others, and with the local queue).")


class SubmissionList(BaseModel):
    """One page of submissions, newest first."""

    items: list[SubmissionPublic]
    next_cursor: str | None = Field(
        None, description="Pass as `cursor` to get the next page; null on the last page."
    )


class ProblemSummary(BaseModel):
    id: str
    title: str
    difficulty: Literal["easy", "medium", "hard"]
    tags: list[str]
    summary: str


class ExamplePublic(BaseModel):
    """A published (visible) test: inputs and the reference's expected outputs."""

    name: str
    inputs: dict[str, Any]
    expected: Any
    note: str = ""


class RequirementPublic(BaseModel):
    name: str
    level: Literal["spec", "program"]
    description: str


class LimitsPublic(BaseModel):
    wall_seconds: float
    cpu_seconds: float
    memory_mb: int
    output_kb: int


class TolerancePublic(BaseModel):
    """|got - expected| <= atol + rtol * |expected|; `outputs` overrides it per output path."""

    rtol: float
    atol: float
    outputs: dict[str, dict[str, float]] = Field(default_factory=dict)


class ProblemPublic(ProblemSummary):
    """Everything a solver may see. Hidden tests and the reference solution are never here."""

    statement: str = Field(description="Markdown.")
    entry_point: str
    arguments: list[dict[str, Any]]
    returns: dict[str, Any]
    constraints: dict[str, Any]
    limits: LimitsPublic
    tolerance: TolerancePublic
    scoring: dict[str, float]
    requirements: list[RequirementPublic]
    examples: list[ExamplePublic]
    starter: str


class ProtectionStatus(BaseModel):
    active: bool
    detail: str = ""


class SystemInfo(BaseModel):
    versions: dict[str, str]
    queue: Literal["local", "postgres"] = Field(
        description="local: graded inside this server; postgres: by `jaxjudge worker` "
        "processes sharing the database (then `workers` counts the live ones).")
    workers: int
    queue_size: int
    queue_depth: int = Field(description="Submissions waiting for a worker.")
    running: int = Field(description="Submissions being graded now.")
    submissions: dict[str, int] = Field(description="Stored submissions by status.")
    database: str = Field(description="Database backend (sqlite or postgresql).")
    auth_enabled: bool
    rate_limit_per_minute: int
    max_source_bytes: int
    protections: dict[str, ProtectionStatus]
    sandbox_required: list[str] = Field(
        description="Sandbox layers the service requires (all of them).")
    unsafe_allow_missing_sandbox: list[str] = Field(
        description="UNSAFE opt-out: layers the service grades without when they are missing "
        "(JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX). Empty: it refuses to run without any.")
