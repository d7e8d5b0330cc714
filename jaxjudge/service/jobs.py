"""The PostgreSQL job queue (JAXJUDGE_QUEUE=postgres): Procrastinate's App, its two tasks
(grade a submission, deliver its callback), and deferring them inside the transactions that
make them due (the submission's insert, the grade's finish).

Why Procrastinate: its jobs are rows in the same PostgreSQL as the submissions, so the API
inserts the submission and its job in ONE transaction (no dual write with a broker: either both
exist or neither); workers take jobs with `FOR UPDATE SKIP LOCKED`, heartbeat, and a stalled
worker's jobs can be found and retried; LISTEN/NOTIFY comes with the same database. Nothing but
PostgreSQL has to run.

The API nodes never open a Procrastinate App: `defer_in_transaction` calls Procrastinate's own
SQL function `procrastinate_defer_jobs_v1` on the SQLAlchemy session that inserts the row.
Only `jaxjudge worker` (jaxjudge/service/worker.py) opens the App and runs its worker.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime

from procrastinate import App, JobContext, PsycopgConnector, RetryDecision
from procrastinate.exceptions import JobAborted
from procrastinate.jobs import Job
from procrastinate.retry import BaseRetryStrategy
from psycopg.conninfo import make_conninfo
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

QUEUE_NAME = "grading"
TASK_NAME = "jaxjudge.grade_submission"
# `additional_context` key under which the worker runtime hands the task its grade coroutine.
GRADE_KEY = "jaxjudge_grade"

# Callback deliveries have their own queue, consumed by a separate, bounded Procrastinate
# worker in each `jaxjudge worker` process: a receiver that answers slowly holds a delivery
# slot, never a grading slot.
CALLBACK_QUEUE = "callbacks"
DELIVER_TASK = "jaxjudge.deliver_callback"
DELIVER_KEY = "jaxjudge_deliver"

# Priorities (Procrastinate fetches ORDER BY priority DESC, id ASC): a `run` (examples only,
# a learner waiting at the editor) goes before every `submit`, but only an owner's one waiting
# run does (a learner waits for one run at a time); within a mode, an owner's k-th pending job
# gets -k, so one token's 500 submissions, or 500 runs, interleave with everybody else's.
RUN_PRIORITY = 1_000_000
MAX_PENDING_PENALTY = 999_999

GradeCoroutine = Callable[[str], Awaitable[str]]
DeliverCoroutine = Callable[[str, int], Awaitable[str]]


def job_priority(mode: str, pending_of_owner: int, runs_of_owner: int = 0) -> int:
    """The job's priority from its mode and how many of its owner's jobs (`runs_of_owner`:
    of them runs) wait already. Only a run with no other run of its owner waiting jumps the
    queue: were every run boosted, one token flooding runs would starve every submit."""
    base = RUN_PRIORITY if mode == "run" and runs_of_owner <= 0 else 0
    return base - min(max(0, pending_of_owner), MAX_PENDING_PENALTY)


def conninfo(database_url: str) -> str:
    """A libpq connection string from the service's SQLAlchemy URL (psycopg 3 either way)."""
    url = make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ValueError("the job queue needs a PostgreSQL database")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def heartbeat_conninfo(database_url: str) -> str:
    """`conninfo` for a worker's own heartbeat connection, named like the pool's."""
    return make_conninfo(conninfo(database_url), application_name=WORKER_APPLICATION_NAME)


def _defer(session: Session, queue: str, task: str, args: dict[str, object], *,
           priority: int = 0, lock: str | None = None, queueing_lock: str | None = None,
           at: datetime | None = None) -> int:
    """One Procrastinate job, queued in the caller's (not yet committed) transaction through
    its own SQL function; returns the job id."""
    job_id = session.execute(
        text(
            "SELECT (procrastinate_defer_jobs_v1(ARRAY[ROW("
            "CAST(:queue AS varchar), CAST(:task AS varchar), CAST(:priority AS integer), "
            "CAST(:lock AS text), CAST(:qlock AS text), CAST(:args AS jsonb), "
            "CAST(:at AS timestamptz))::procrastinate_job_to_defer_v1]))[1]"
        ),
        {"queue": queue, "task": task, "priority": priority, "lock": lock,
         "qlock": queueing_lock, "args": json.dumps(args), "at": at},
    ).scalar_one()
    return int(job_id)


def defer_in_transaction(session: Session, submission_id: str, priority: int) -> int:
    """Queue the grade of `submission_id` in the caller's transaction; returns the job id.
    queueing_lock = the submission id: a submission can never have two jobs waiting (a second
    defer fails the transaction with a unique violation)."""
    return _defer(session, QUEUE_NAME, TASK_NAME, {"submission_id": submission_id},
                  priority=priority, queueing_lock=submission_id)


CALLBACK_LOCK_PREFIX = "callback:"


def callback_lock(submission_id: str) -> str:
    """The Procrastinate `lock` of a submission's delivery jobs: two of them never run at the
    same time (a retried stalled job waits for, or runs before, the next attempt's job)."""
    return f"{CALLBACK_LOCK_PREFIX}{submission_id}"


def defer_callback(
    session: Session, submission_id: str, attempt: int = 1, at: datetime | None = None
) -> int:
    """Queue delivery attempt number `attempt` of a submission's callback in the caller's
    transaction (the grade's finish for the first, the record of the previous attempt for
    the others), due at `at` (None: at once); returns the job id."""
    return _defer(session, CALLBACK_QUEUE, DELIVER_TASK,
                  {"submission_id": submission_id, "attempt": attempt},
                  lock=callback_lock(submission_id), at=at)


def requeue_orphan_callbacks(session: Session, older_than: float, limit: int = 100) -> list[str]:
    """Give a delivery job to every graded submission whose callback is pending but has no
    job left (Procrastinate gave up on one while the database was away); returns their ids.
    The next attempt is the row's count + 1, so nothing is recorded twice."""
    rows = session.execute(
        text(
            "SELECT s.id, s.callback_attempts FROM submissions AS s "
            "WHERE s.callback_state = 'pending' AND s.status = 'done' "
            "AND COALESCE(s.callback_next_at, s.finished_at) "
            "< now() - make_interval(secs => :age) "
            "AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs AS j "
            "WHERE j.lock = :prefix || s.id AND j.status IN ('todo', 'doing')) "
            "ORDER BY s.seq LIMIT :limit FOR UPDATE OF s SKIP LOCKED"
        ),
        {"age": older_than, "limit": limit, "prefix": CALLBACK_LOCK_PREFIX},
    ).all()
    for submission_id, attempts in rows:
        defer_callback(session, submission_id, attempts + 1)
    return [submission_id for submission_id, _ in rows]


def requeue_orphans(session: Session, older_than: float, limit: int = 100) -> list[str]:
    """Give a new job to every unfinished submission that has none left; returns their ids.

    Insert and defer share a transaction, so a queued row always starts with a job. A job can
    still end without the row being finished: Procrastinate gives up on it after its retries
    (the database was away for minutes), or a presumed-dead grader's late completion marks a
    redelivered job done while its new grader then dies. Without this such a row would stay
    `queued`/`running` for ever. The row's fence still counts every grade that starts, so a
    submission that keeps failing ends as internal_error rather than looping. Rows younger than
    `older_than` seconds are left alone, and SKIP LOCKED lets two sweepers share the work."""
    rows = session.execute(
        text(
            "SELECT s.id, s.mode FROM submissions AS s "
            "WHERE s.status IN ('queued', 'running') "
            "AND s.created_at < now() - make_interval(secs => :age) "
            "AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs AS j "
            "WHERE j.queueing_lock = s.id AND j.status IN ('todo', 'doing')) "
            "ORDER BY s.seq LIMIT :limit FOR UPDATE OF s SKIP LOCKED"
        ),
        {"age": older_than, "limit": limit},
    ).all()
    for submission_id, mode in rows:
        defer_in_transaction(session, submission_id, job_priority(mode, 0))
    return [submission_id for submission_id, _ in rows]


class RedeliverInterrupted(BaseRetryStrategy):
    """What Procrastinate does when the task did not complete.

    Cancelled (the worker's shutdown bound passed): back to `todo` at once, for another worker.
    Raised (the store was unreachable mid-grade): retried with backoff, at most
    `max_attempts` times; the submission row's own fence counts interrupted grades, so a
    submission that keeps killing graders still ends as internal_error.
    """

    def __init__(self, max_attempts: int = 10) -> None:
        self.max_attempts = max_attempts

    def get_retry_decision(
        self, *, exception: BaseException, job: Job
    ) -> RetryDecision | None:
        if isinstance(exception, asyncio.CancelledError | JobAborted):
            return RetryDecision()
        if isinstance(exception, Exception) and job.attempts < self.max_attempts:
            return RetryDecision(retry_in={"seconds": min(30, 2 ** job.attempts)})
        return None


async def _grade_submission(context: JobContext, submission_id: str) -> str:
    """The task: grade one stored submission (the worker's runtime does claim -> grade ->
    finish with the fence)."""
    grade: GradeCoroutine = context.additional_context[GRADE_KEY]
    return await grade(submission_id)


async def _deliver_callback(context: JobContext, submission_id: str, attempt: int) -> str:
    """The task: one delivery attempt of a submission's callback (jaxjudge/service/callbacks.py
    records it and, on a retryable failure, defers the next attempt in the same transaction)."""
    deliver: DeliverCoroutine = context.additional_context[DELIVER_KEY]
    return await deliver(submission_id, attempt)


WORKER_APPLICATION_NAME = "jaxjudge-worker"  # its connections in pg_stat_activity


def make_app(database_url: str, *, pool_size: int = 4) -> App:
    """Procrastinate's App on the service's database, with both tasks registered (its pool
    checks a connection before lending it, so that after a database restart no call gets a
    dead one); every connection carries WORKER_APPLICATION_NAME."""
    connector = PsycopgConnector(
        conninfo=conninfo(database_url), min_size=1, max_size=max(2, pool_size),
        kwargs={"application_name": WORKER_APPLICATION_NAME},
    )
    app = App(connector=connector)
    app.task(
        name=TASK_NAME,
        queue=QUEUE_NAME,
        pass_context=True,
        retry=RedeliverInterrupted(),
    )(_grade_submission)
    app.task(
        name=DELIVER_TASK,
        queue=CALLBACK_QUEUE,
        pass_context=True,
        retry=RedeliverInterrupted(),
    )(_deliver_callback)
    return app
