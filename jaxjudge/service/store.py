"""Durable submissions: SQLAlchemy 2 ORM over SQLite (default) or PostgreSQL.

A submission is committed before the API answers 202, and its status moves
queued -> running -> done in single UPDATE statements, so a crash at any point leaves rows a
restart can re-queue (`recover()`, local queue) or a redelivered job can claim again (the
PostgreSQL job queue). `attempts` is the fence: every claim increments it and `finish` only
writes when the row still carries the claim's number, so a late write from a grader presumed
dead changes nothing. Sources are stored as bytes: whatever was accepted is what gets graded,
byte for byte, on either backend (PostgreSQL text columns reject NUL characters).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    create_engine,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker
from sqlalchemy.pool import StaticPool

from jaxjudge.service.migrate import upgrade

Status = Literal["queued", "running", "done"]
STATUSES: tuple[Status, ...] = ("queued", "running", "done")
# A callback is `pending` from submit until it is delivered or given up (`failed`).
CallbackState = Literal["pending", "delivered", "failed"]
MAX_CALLBACK_ERROR = 500  # characters of the last delivery error kept on the row
ANONYMOUS = "anonymous"
# The PostgreSQL channel a finished grade is announced on (payload: the submission id), in the
# finishing transaction, so a waiter on any API node wakes up only once the row is readable.
DONE_CHANNEL = "jaxjudge_done"


class Base(DeclarativeBase):
    pass


class SubmissionRow(Base):
    """One submission. `seq` orders submissions (newest first) and backs the list cursor; `id`
    is the public, unguessable identifier."""

    __tablename__ = "submissions"

    seq: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    id: Mapped[str] = mapped_column(String(32), unique=True)
    problem_id: Mapped[str] = mapped_column(String(64))
    mode: Mapped[str] = mapped_column(String(8))
    source: Mapped[bytes] = mapped_column(LargeBinary)
    source_bytes: Mapped[int] = mapped_column(Integer)
    source_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(8), default="queued")
    verdict: Mapped[str | None] = mapped_column(String(32), default=None)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    max_score: Mapped[float | None] = mapped_column(Float, default=None)
    report_json: Mapped[str | None] = mapped_column(Text, default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Who submitted: sha256(bearer token)[:16], or "anonymous" with auth off. Drives fairness.
    owner: Mapped[str] = mapped_column(String(32), default=ANONYMOUS, server_default=ANONYMOUS)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    # The webhook (jaxjudge/service/webhooks.py): the checked URL, its delivery state (None: no
    # callback), attempts made (also the fence of the delivery record), the last answer and when the
    # next attempt is due (so a restart can re-schedule it).
    callback_url: Mapped[str | None] = mapped_column(String(2048), default=None)
    # The grading worker of the latest attempt (`jaxjudge worker`: name@host:pid).
    worker: Mapped[str | None] = mapped_column(String(200), default=None)
    # A run's custom inputs (JSON, checked by jaxjudge.grading.custom when submitted).
    custom_inputs: Mapped[str | None] = mapped_column(Text, default=None)
    # The client's Idempotency-Key: a retried POST finds its submission instead of adding one.
    idempotency_key: Mapped[str | None] = mapped_column(String(64), default=None)
    callback_state: Mapped[str | None] = mapped_column(String(16), default=None)
    callback_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    callback_last_status: Mapped[int | None] = mapped_column(Integer, default=None)
    callback_last_error: Mapped[str | None] = mapped_column(Text, default=None)
    callback_next_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), default=None
    )
    callback_delivered_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), default=None
    )

    __table_args__ = (
        Index("ix_submissions_status", "status"),
        Index("ix_submissions_problem_seq", "problem_id", "seq"),
        Index("ix_submissions_verdict_seq", "verdict", "seq"),
        Index("ix_submissions_owner_status", "owner", "status"),
        Index("ix_submissions_callback_state", "callback_state"),
        Index("ux_submissions_owner_idempotency_key", "owner", "idempotency_key", unique=True),
    )


@dataclass(frozen=True)
class SubmissionRecord:
    """A detached snapshot of a row (no lazy loading after the session closes); never holds the
    source, which only the worker needs."""

    id: str
    seq: int
    problem_id: str
    mode: str
    status: Status
    verdict: str | None
    score: float | None
    max_score: float | None
    source_bytes: int
    source_sha256: str
    attempts: int
    owner: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    report_json: str | None
    idempotency_key: str | None = None
    worker: str | None = None
    callback_url: str | None = None
    callback_state: CallbackState | None = None
    callback_attempts: int = 0
    callback_last_status: int | None = None
    callback_last_error: str | None = None
    callback_next_at: datetime | None = None
    callback_delivered_at: datetime | None = None
    custom_inputs: str | None = None  # a run's own inputs (JSON), as the request gave them


@dataclass(frozen=True)
class NewSubmission:
    """What a client asked to grade: everything a new row is made from, and what a retried
    request with the same Idempotency-Key must repeat (`same_request`)."""

    problem_id: str
    mode: str
    source: bytes
    owner: str = ANONYMOUS
    callback_url: str | None = None  # passed jaxjudge.service.webhooks.check_callback_url already
    idempotency_key: str | None = None
    custom_inputs: str | None = None  # JSON, checked by jaxjudge.grading.custom already

    def same_request(self, record: SubmissionRecord) -> bool:
        """Whether `record` was made from this very request (a retry, not a new one)."""
        return (record.problem_id, record.mode, record.source_sha256, record.callback_url,
                record.custom_inputs) == (
            self.problem_id, self.mode, hashlib.sha256(self.source).hexdigest(),
            self.callback_url, self.custom_inputs,
        )


@dataclass(frozen=True)
class ClaimedSubmission:
    """What a worker needs to grade one submission."""

    id: str
    problem_id: str
    mode: str
    source: bytes
    attempts: int
    callback_url: str | None = None
    custom_inputs: str | None = None


# Runs inside the finishing transaction once the grade is stored (e.g. defer the callback's
# delivery job): it commits with the grade or not at all.
InFinish = Callable[[Session], None]


@dataclass(frozen=True)
class QueuedCounts:
    total: int
    owner: int
    owner_runs: int


class KeyInUse(Exception):
    """The owner already made a submission with this Idempotency-Key."""

    def __init__(self, owner: str, key: str) -> None:
        super().__init__(f"idempotency key {key!r} already used by {owner}")
        self.owner, self.key = owner, key


class InvalidCursor(ValueError):
    """The list cursor was not produced by this service."""


def _utc(value: datetime | None) -> datetime | None:
    # SQLite hands back naive datetimes; everything we write is UTC.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


def _record(row: SubmissionRow) -> SubmissionRecord:
    created = _utc(row.created_at)
    assert created is not None
    return SubmissionRecord(
        id=row.id,
        seq=row.seq,
        problem_id=row.problem_id,
        mode=row.mode,
        status=row.status,  # type: ignore[arg-type]
        verdict=row.verdict,
        score=row.score,
        max_score=row.max_score,
        source_bytes=row.source_bytes,
        source_sha256=row.source_sha256,
        attempts=row.attempts,
        owner=row.owner,
        created_at=created,
        started_at=_utc(row.started_at),
        finished_at=_utc(row.finished_at),
        report_json=row.report_json,
        idempotency_key=row.idempotency_key,
        worker=row.worker,
        callback_url=row.callback_url,
        callback_state=row.callback_state,  # type: ignore[arg-type]
        callback_attempts=row.callback_attempts,
        callback_last_status=row.callback_last_status,
        callback_last_error=row.callback_last_error,
        callback_next_at=_utc(row.callback_next_at),
        callback_delivered_at=_utc(row.callback_delivered_at),
        custom_inputs=row.custom_inputs,
    )


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"s1:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        tag, _, value = raw.partition(":")
        seq = int(value)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidCursor("invalid cursor") from exc
    if tag != "s1" or seq < 1:
        raise InvalidCursor("invalid cursor")
    return seq


def make_engine(database_url: str) -> Engine:
    """An engine for `database_url`; creates the directory of a SQLite file."""
    url = make_url(database_url)
    kwargs: dict[str, Any] = {}
    if url.get_backend_name() == "sqlite":
        database = url.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            kwargs["poolclass"] = StaticPool
            kwargs["connect_args"] = {"check_same_thread": False}
        else:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            # Workers and request threads write concurrently: wait for the lock, don't fail.
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
    else:
        kwargs["pool_pre_ping"] = True
    engine = create_engine(url, **kwargs)
    if url.get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            # WAL: readers never block the writer; FULL: a commit survives power loss, not only
            # a killed process.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.close()

    return engine


class Store:
    """All database access of the service. Thread-safe: every call uses its own session."""

    def __init__(self, database_url: str) -> None:
        self.engine = make_engine(database_url)
        upgrade(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One session in one transaction: committed on exit, rolled back on an exception."""
        with self._sessions() as session, session.begin():
            yield session

    # -- writes ---------------------------------------------------------------------------
    @staticmethod
    def insert(session: Session, new: NewSubmission) -> SubmissionRecord:
        """Insert a queued submission in the caller's transaction (see `add`). Raises
        KeyInUse when the owner already has a submission with the same idempotency key (the
        transaction is then unusable: roll it back)."""
        row = SubmissionRow(
            id=uuid.uuid4().hex,
            problem_id=new.problem_id,
            mode=new.mode,
            source=new.source,
            source_bytes=len(new.source),
            source_sha256=hashlib.sha256(new.source).hexdigest(),
            status="queued",
            attempts=0,
            owner=new.owner,
            created_at=datetime.now(UTC),
            callback_url=new.callback_url,
            callback_state="pending" if new.callback_url else None,
            callback_attempts=0,
            idempotency_key=new.idempotency_key,
            custom_inputs=new.custom_inputs,
        )
        session.add(row)
        try:
            session.flush()
        except IntegrityError as exc:
            if new.idempotency_key is None:
                raise
            raise KeyInUse(new.owner, new.idempotency_key) from exc
        return _record(row)

    def find_by_key(self, owner: str, idempotency_key: str) -> SubmissionRecord | None:
        """The owner's submission made with `idempotency_key`, if any."""
        with self._sessions() as session:
            row = session.execute(
                select(SubmissionRow).where(
                    SubmissionRow.owner == owner,
                    SubmissionRow.idempotency_key == idempotency_key,
                )
            ).scalar_one_or_none()
            return _record(row) if row is not None else None

    def add(self, new: NewSubmission) -> SubmissionRecord:
        """Insert a queued submission and commit it (durable once this returns)."""
        with self.transaction() as session:
            return self.insert(session, new)

    def create(
        self, problem_id: str, mode: str, source: bytes, owner: str = ANONYMOUS
    ) -> SubmissionRecord:
        """`add` of a plain submission (no callback, no idempotency key)."""
        return self.add(NewSubmission(problem_id, mode, source, owner))

    def claim(
        self, submission_id: str, *, redelivery: bool = False, worker: str | None = None
    ) -> ClaimedSubmission | None:
        """Move a submission to running and take the next fence (`attempts`); None if there is
        nothing to grade.

        The local queue claims only `queued` rows (its one process re-queues orphans at
        start-up). A job queue that redelivers a job (`redelivery=True`) also claims a
        `running` row: its grader was presumed dead, and the new fence outdates it.
        `worker` names the grading process that holds this attempt.
        """
        claimable = ("queued", "running") if redelivery else ("queued",)
        with self.transaction() as session:
            result = session.execute(
                update(SubmissionRow)
                .where(SubmissionRow.id == submission_id, SubmissionRow.status.in_(claimable))
                .values(
                    status="running",
                    started_at=datetime.now(UTC),
                    attempts=SubmissionRow.attempts + 1,
                    worker=worker,
                )
            )
            if result.rowcount != 1:  # type: ignore[attr-defined]
                return None
            row = session.execute(
                select(SubmissionRow).where(SubmissionRow.id == submission_id)
            ).scalar_one()
            return ClaimedSubmission(
                id=row.id,
                problem_id=row.problem_id,
                mode=row.mode,
                source=row.source,
                attempts=row.attempts,
                callback_url=row.callback_url,
                custom_inputs=row.custom_inputs,
            )

    def finish(
        self,
        submission_id: str,
        *,
        verdict: str,
        score: float,
        max_score: float,
        report_json: str,
        fence: int | None = None,
        in_finish: InFinish | None = None,
    ) -> bool:
        """Store the report of a running submission; False if it was not running, or (with
        `fence`) if another claim took it since (its attempts moved on): a stale grader's
        write changes nothing. On PostgreSQL the same transaction announces the finish on
        DONE_CHANNEL (delivered to listeners only once it commits). `in_finish` runs in that
        transaction too, only when the grade was stored."""
        conditions = [SubmissionRow.id == submission_id, SubmissionRow.status == "running"]
        if fence is not None:
            conditions.append(SubmissionRow.attempts == fence)
        with self.transaction() as session:
            result = session.execute(
                update(SubmissionRow)
                .where(*conditions)
                .values(
                    status="done",
                    verdict=verdict,
                    score=score,
                    max_score=max_score,
                    report_json=report_json,
                    finished_at=datetime.now(UTC),
                )
            )
            done = result.rowcount == 1  # type: ignore[attr-defined]
            if done and self.backend == "postgresql":
                session.execute(
                    text("SELECT pg_notify(:channel, :id)"),
                    {"channel": DONE_CHANNEL, "id": submission_id},
                )
            if done and in_finish is not None:
                in_finish(session)
            return done

    # -- callbacks ------------------------------------------------------------------------
    def record_callback_attempt(
        self,
        submission_id: str,
        *,
        attempt: int,
        state: CallbackState,
        status_code: int | None,
        error: str | None,
        next_at: datetime | None = None,
        in_record: InFinish | None = None,
    ) -> bool:
        """Record how delivery attempt number `attempt` went. Fenced like `finish`: only a
        pending callback that has made `attempt - 1` attempts is written, so a redelivered
        delivery job that already ran (or a second scheduler) records nothing twice. False
        when nothing was written. `in_record` runs in the same transaction when it was."""
        now = datetime.now(UTC)
        with self.transaction() as session:
            result = session.execute(
                update(SubmissionRow)
                .where(
                    SubmissionRow.id == submission_id,
                    SubmissionRow.callback_state == "pending",
                    SubmissionRow.callback_attempts == attempt - 1,
                )
                .values(
                    callback_state=state,
                    callback_attempts=attempt,
                    callback_last_status=status_code,
                    callback_last_error=None if error is None else error[:MAX_CALLBACK_ERROR],
                    callback_next_at=next_at,
                    callback_delivered_at=now if state == "delivered" else None,
                )
            )
            written = result.rowcount == 1  # type: ignore[attr-defined]
            if written and in_record is not None:
                in_record(session)
            return written

    def pending_callbacks(self) -> list[tuple[str, datetime | None]]:
        """Graded submissions whose callback is still pending, with when the next attempt is
        due (None: at once), oldest first: what a restarted local server re-schedules."""
        with self._sessions() as session:
            rows = session.execute(
                select(SubmissionRow.id, SubmissionRow.callback_next_at)
                .where(SubmissionRow.callback_state == "pending",
                       SubmissionRow.status == "done")
                .order_by(SubmissionRow.seq)
            ).all()
        return [(sid, _utc(due)) for sid, due in rows]

    def recover(self) -> list[str]:
        """Re-queue interrupted (running) submissions; return every queued id, oldest first.

        Local queue only: it assumes a single service instance per database, where a running
        row is one whose grader died with the previous process. With the PostgreSQL job queue
        nothing calls this (a running row may be graded by a live worker elsewhere).
        """
        with self.transaction() as session:
            session.execute(
                update(SubmissionRow)
                .where(SubmissionRow.status == "running")
                .values(status="queued", started_at=None)
            )
            ids = session.execute(
                select(SubmissionRow.id)
                .where(SubmissionRow.status == "queued")
                .order_by(SubmissionRow.seq)
            ).scalars()
            return list(ids)

    # -- queue statistics (in the caller's session) ---------------------------------------
    @staticmethod
    def queued_counts(session: Session, owner: str) -> QueuedCounts:
        """Submissions waiting for a grader: all of them, the owner's, and the owner's runs,
        in one statement (admission runs it under a lock every API node shares)."""
        mine = SubmissionRow.owner == owner
        row = session.execute(
            select(
                func.count(),
                func.count().filter(mine),
                func.count().filter(mine, SubmissionRow.mode == "run"),
            ).where(SubmissionRow.status == "queued")
        ).one()
        return QueuedCounts(int(row[0]), int(row[1]), int(row[2]))

    @staticmethod
    def recent_grade_seconds(session: Session, last: int = 20) -> float | None:
        """Mean wall time of the last `last` grades (claim to finish), None before the first."""
        recent = (
            select(SubmissionRow.started_at, SubmissionRow.finished_at)
            .where(SubmissionRow.status == "done", SubmissionRow.started_at.is_not(None))
            .order_by(SubmissionRow.seq.desc())
            .limit(last)
        )
        spans = [
            (f - s).total_seconds()
            for s, f in session.execute(recent).all()
            if s is not None and f is not None
        ]
        return sum(spans) / len(spans) if spans else None

    # -- reads ----------------------------------------------------------------------------
    def get(self, submission_id: str) -> SubmissionRecord | None:
        with self._sessions() as session:
            row = session.execute(
                select(SubmissionRow).where(SubmissionRow.id == submission_id)
            ).scalar_one_or_none()
            return _record(row) if row is not None else None

    def source_of(self, submission_id: str, owner: str) -> bytes | None:
        """The submission's source if `owner` submitted it (never for "anonymous", which many
        clients share), else None."""
        if owner == ANONYMOUS:
            return None
        with self._sessions() as session:
            source: bytes | None = session.execute(
                select(SubmissionRow.source).where(
                    SubmissionRow.id == submission_id, SubmissionRow.owner == owner)
            ).scalar_one_or_none()
        return source

    def list_page(
        self,
        *,
        problem_id: str | None = None,
        verdict: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        limit: int = 20,
        cursor: str | None = None,
    ) -> tuple[list[SubmissionRecord], str | None]:
        """A page of submissions, newest first, and the cursor of the next page (None at the
        end). Raises InvalidCursor for a cursor this service did not hand out."""
        query = select(SubmissionRow).order_by(SubmissionRow.seq.desc()).limit(limit + 1)
        if cursor:
            query = query.where(SubmissionRow.seq < decode_cursor(cursor))
        if problem_id is not None:
            query = query.where(SubmissionRow.problem_id == problem_id)
        if verdict is not None:
            query = query.where(SubmissionRow.verdict == verdict)
        if status is not None:
            query = query.where(SubmissionRow.status == status)
        if owner is not None:
            query = query.where(SubmissionRow.owner == owner)
        with self._sessions() as session:
            rows = list(session.execute(query).scalars())
        records = [_record(r) for r in rows[:limit]]
        next_cursor = encode_cursor(records[-1].seq) if len(rows) > limit else None
        return records, next_cursor

    def count_by_status(self) -> dict[str, int]:
        with self._sessions() as session:
            rows = session.execute(
                select(SubmissionRow.status, func.count()).group_by(SubmissionRow.status)
            ).all()
        counts = dict.fromkeys(STATUSES, 0)
        counts.update({status: n for status, n in rows})
        return counts
