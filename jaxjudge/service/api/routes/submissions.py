"""POST/GET /v1/submissions: store durably, queue, and serve the reports."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Header, Query, Response

from jaxjudge.grading.custom import CustomInputError, custom_cases
from jaxjudge.grading.report import Report, Verdict
from jaxjudge.problems.package import Problem
from jaxjudge.service.api.deps import DispatcherDep, OwnerDep, SettingsDep, StoreDep
from jaxjudge.service.api.errors import ApiError
from jaxjudge.service.api.routes.problems import find_problem
from jaxjudge.service.config import Settings
from jaxjudge.service.owner_view import for_others
from jaxjudge.service.queue import QueueFull, public_report
from jaxjudge.service.schemas import (
    CallbackPublic,
    ErrorBody,
    SourceError,
    Status,
    SubmissionCreate,
    SubmissionList,
    SubmissionPublic,
)
from jaxjudge.service.store import (
    ANONYMOUS,
    InvalidCursor,
    KeyInUse,
    NewSubmission,
    Store,
    SubmissionRecord,
)
from jaxjudge.service.webhooks import CallbackPolicy, CallbackRejected, check_callback_url


def _per_reader(response: Response) -> None:
    """What a submission says depends on who asks (its source, `mine`, `worker`, the callback
    URL): no shared cache (a proxy, a CDN) may keep one reader's answer for another."""
    response.headers["Cache-Control"] = "private, no-store"
    response.headers["Vary"] = "Authorization, Cookie"


router = APIRouter(prefix="/submissions", tags=["submissions"],
                   dependencies=[Depends(_per_reader)])

MAX_PAGE = 100


def shown_callback_url(url: str, *, owner: bool) -> str:
    """The callback URL as a reader sees it: whole for the token that sent it; for anyone
    else only its scheme and host, since a hook URL's path or query is often the receiver's
    credential (and every token may read every submission)."""
    if owner:
        return url
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…"


def to_public(
    record: SubmissionRecord, *, with_report: bool = True, viewer: str | None = None,
    source: bytes | None = None,
) -> SubmissionPublic:
    """The public form of a row; `viewer` is the reader's owner key
    (jaxjudge.service.dispatch.owner_of): only the submission's own owner sees its callback URL
    whole."""
    report = None
    if with_report and record.report_json is not None:
        # Stored reports were stripped when written; strip again in case an older writer
        # did not.
        report = public_report(Report.model_validate_json(record.report_json))
        if viewer != record.owner:
            # The source lines its tracebacks quote and its output are the owner's (with
            # auth off, clients without an identity all share "anonymous", as before).
            report = for_others(report)
    callback = None
    if record.callback_url and record.callback_state:
        owner = viewer == record.owner
        callback = CallbackPublic(
            url=shown_callback_url(record.callback_url, owner=owner),
            state=record.callback_state,
            attempts=record.callback_attempts,
            last_status=record.callback_last_status,
            # What the receiver answered may quote the URL's path (many error pages do).
            last_error=record.callback_last_error if owner else None,
            delivered_at=record.callback_delivered_at,
        )
    # The record's fields are the public ones plus `seq`, `report_json` and the callback_*
    # columns (ignored here).
    # Which worker holds it says where the service runs: the owner's business, not others'.
    worker = record.worker if viewer == record.owner else None
    mine = viewer is not None and viewer != ANONYMOUS and viewer == record.owner
    text = source.decode("utf-8", "replace") if source is not None and mine else None
    return SubmissionPublic.model_validate(
        {**asdict(record), "report": report, "callback": callback, "worker": worker,
         "mine": mine, "source": text}
    )


def checked_callback(settings: Settings, url: str | None) -> str | None:
    """The normalized callback URL, or 422 saying why it is refused (before anything is
    stored). No DNS here: the addresses a name resolves to are checked at each delivery."""
    if url is None:
        return None
    try:
        return check_callback_url(url, CallbackPolicy.from_settings(settings))
    except CallbackRejected as exc:
        raise ApiError(422, str(exc)) from exc


def checked_custom_inputs(problem: Problem, body: SubmissionCreate) -> str | None:
    """The run's own inputs as stored (JSON), or 422 saying what is wrong with them (before
    anything is stored)."""
    if not body.custom_inputs:
        return None
    if body.mode != "run":
        raise ApiError(422, "custom_inputs are for mode \"run\"")
    try:
        custom_cases(problem, body.custom_inputs)
    except CustomInputError as exc:
        raise ApiError(422, str(exc)) from exc
    return json.dumps(body.custom_inputs)


def _get_or_404(store: Store, submission_id: str) -> SubmissionRecord:
    # No id holds a NUL, which PostgreSQL refuses in any text parameter (a 500, not a 404).
    found = len(submission_id) <= 64 and "\x00" not in submission_id
    record = store.get(submission_id) if found else None
    if record is None:
        raise ApiError(404, f"unknown submission {submission_id!r}")
    return record


@router.post(
    "",
    status_code=202,
    response_model=SubmissionPublic,
    summary="Submit a solution",
    description="Stores the submission, queues it and answers 202 with status `queued` and a "
    "Location header. With `wait=true` the answer is held until the grade is done (200) or "
    "the server's wait bound passes (202).",
    responses={
        200: {"model": SubmissionPublic, "description": "Graded (with wait=true)."},
        404: {"model": ErrorBody, "description": "Unknown problem."},
        413: {"model": ErrorBody, "description": "Source larger than max_source_bytes."},
        422: {"model": ErrorBody,
              "description": "Invalid body, source not UTF-8, or callback_url refused."},
        503: {"model": ErrorBody, "description": "Queue full; see Retry-After."},
    },
)
async def create_submission(
    body: SubmissionCreate,
    response: Response,
    settings: SettingsDep,
    store: StoreDep,
    dispatcher: DispatcherDep,
    owner: OwnerDep,
    wait: Annotated[bool, Query(description="Hold the request until graded.")] = False,
    idempotency_key: Annotated[
        str | None,
        Header(min_length=1, max_length=64, pattern=r"^[\x21-\x7e]+$",
               description="Any printable ASCII string (e.g. a UUID) naming this submission "
               "for its token: a retried POST with the same key and body returns the "
               "submission the first one made instead of a second one."),
    ] = None,
) -> SubmissionPublic:
    try:
        source = body.source_bytes()
    except SourceError as exc:
        raise ApiError(422, str(exc)) from exc
    if len(source) > settings.max_source_bytes:
        raise ApiError(
            413, f"the source is larger than the limit of {settings.max_source_bytes} bytes"
        )
    callback_url = checked_callback(settings, body.callback_url)
    problem = await asyncio.to_thread(find_problem, body.problem_id)
    custom = checked_custom_inputs(problem, body)
    new = NewSubmission(body.problem_id, body.mode, source, owner, callback_url,
                        idempotency_key, custom)
    record = None
    if idempotency_key is not None:
        record = await asyncio.to_thread(store.find_by_key, owner, idempotency_key)
    try:
        if record is None:
            # One thread call for store + queue: a client disconnecting mid-request cannot
            # leave a stored row that was never queued.
            record = await asyncio.to_thread(dispatcher.submit, new)
    except QueueFull as exc:
        raise ApiError(
            503, str(exc), code="queue_full", headers={"Retry-After": str(exc.retry_after)}
        ) from exc
    except KeyInUse:  # the same key raced in from another request: that one made it
        assert idempotency_key is not None
        record = await asyncio.to_thread(store.find_by_key, owner, idempotency_key)
        if record is None:
            raise ApiError(409, "a request with this Idempotency-Key is still being "
                           "stored; retry it", code="conflict") from None
    if record.idempotency_key is not None and not new.same_request(record):
        raise ApiError(422, "this Idempotency-Key was already used for a different submission "
                       f"({record.id}); use a new key for a new submission")
    response.headers["Location"] = f"/v1/submissions/{record.id}"
    if wait and settings.wait_timeout_seconds > 0:
        if await dispatcher.wait(record.id, settings.wait_timeout_seconds):
            response.status_code = 200
        record = await asyncio.to_thread(_get_or_404, store, record.id)
    return to_public(record, viewer=owner)


@router.get(
    "/{submission_id}",
    response_model=SubmissionPublic,
    summary="One submission (with its report once done)",
    responses={404: {"model": ErrorBody}},
)
async def get_submission(
    submission_id: str,
    settings: SettingsDep,
    store: StoreDep,
    dispatcher: DispatcherDep,
    owner: OwnerDep,
    wait: Annotated[
        float,
        Query(ge=0, le=600, description="Long poll: hold the request up to this many seconds "
              "(capped by the server's wait bound) until the submission is done. 0: answer at "
              "once."),
    ] = 0,
) -> SubmissionPublic:
    record = await asyncio.to_thread(_get_or_404, store, submission_id)
    hold = min(wait, settings.wait_timeout_seconds)
    if record.status != "done" and hold > 0:
        # A client waiting for its verdict hears it when it is stored, instead of polling.
        await dispatcher.wait(record.id, hold)
        record = await asyncio.to_thread(_get_or_404, store, submission_id)
    source = await asyncio.to_thread(store.source_of, record.id, owner)
    return to_public(record, viewer=owner, source=source)


@router.get(
    "",
    response_model=SubmissionList,
    summary="Page through submissions, newest first",
    responses={422: {"model": ErrorBody}},
)
def list_submissions(
    store: StoreDep,
    owner: OwnerDep,
    problem_id: Annotated[str | None, Query(max_length=64, pattern=r"^[^\x00]*$")] = None,
    verdict: Verdict | None = None,
    status: Status | None = None,
    mine: Annotated[bool, Query(description="Only this token's (or this browser's) "
                                "submissions.")] = False,
    limit: Annotated[int, Query(ge=1, description=f"Page size (capped at {MAX_PAGE}).")] = 20,
    cursor: Annotated[str | None, Query(max_length=200, description="From next_cursor.")] = None,
) -> SubmissionList:
    try:
        records, next_cursor = store.list_page(
            problem_id=problem_id,
            verdict=verdict.value if verdict else None,
            status=status,
            # "anonymous" is shared by every client without an identity: it owns nothing.
            owner=(owner if owner != ANONYMOUS else "\0") if mine else None,
            limit=min(limit, MAX_PAGE),
            cursor=cursor,
        )
    except InvalidCursor as exc:
        raise ApiError(422, "invalid cursor: pass a next_cursor from a previous page") from exc
    return SubmissionList(
        items=[to_public(r, with_report=False, viewer=owner) for r in records],
        next_cursor=next_cursor,
    )
