"""Delivering submission callbacks once their grade is stored (issue #15).

jaxjudge/service/webhooks.py decides where a callback may go and how one attempt is made; this
module makes the attempts happen and records them on the submission row, where the API shows them:

- one attempt at a time (`attempt_delivery`): read the graded row, POST the signed body with
  the submission id as the delivery id (the same on every attempt, so receivers can dedupe),
  then record the outcome under a fence (attempt n is written only over n - 1 attempts);
- a retryable failure leaves the callback `pending` with the next attempt due after
  `retry_delay(n)`; after `webhook_max_attempts`, or a failure not worth repeating, it is
  `failed` with the last error;
- local queue (`LocalCallbacks`): a few delivery threads of their own, apart from the grading
  threads, with a timer heap; pending callbacks are re-scheduled at start-up;
- PostgreSQL queue (`JobCallbacks`): each attempt is a Procrastinate job on its own queue; the
  first is deferred in the grade's finishing transaction, each next one in the transaction
  that records the previous attempt. A worker killed mid-attempt has its job redelivered by
  the stalled-job sweeper, so delivery is at least once.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from jaxjudge.service.store import CallbackState, Store, SubmissionRecord
from jaxjudge.service.webhooks import CallbackPolicy, callback_body, deliver, retry_delay

if TYPE_CHECKING:
    from jaxjudge.service.config import Settings

log = logging.getLogger("jaxjudge.callbacks")

# Defers the job of attempt `n` due at `at`, inside the transaction recording attempt n - 1.
ScheduleNext = Callable[[Session, int, datetime], None]


@dataclass(frozen=True)
class CallbackConfig:
    """What a delivery needs from the settings, read once per process."""

    policy: CallbackPolicy
    secret: bytes
    timeout: float
    max_attempts: int
    retry_base: float

    @classmethod
    def from_settings(cls, settings: Settings) -> CallbackConfig:
        secret = settings.webhook_secret
        return cls(
            policy=CallbackPolicy.from_settings(settings),
            # No secret means no allowed host, so `deliver` refuses before signing anything.
            secret=secret.get_secret_value().encode() if secret is not None else b"",
            timeout=settings.webhook_timeout_seconds,
            max_attempts=settings.webhook_max_attempts,
            retry_base=settings.webhook_retry_base_seconds,
        )


@dataclass(frozen=True)
class AttemptOutcome:
    """One recorded attempt. `retry_in`: seconds until the next one (state `pending`)."""

    attempt: int
    state: CallbackState
    status_code: int | None
    retry_in: float | None


def body_of(record: SubmissionRecord) -> bytes:
    """The signed body of a graded submission's callback (the same bytes on every attempt)."""
    return callback_body(
        submission_id=record.id,
        problem_id=record.problem_id,
        mode=record.mode,
        status=record.status,
        verdict=record.verdict,
        score=record.score,
        max_score=record.max_score,
        finished_at=record.finished_at,
    )


def attempt_delivery(
    store: Store,
    submission_id: str,
    config: CallbackConfig,
    *,
    attempt: int | None = None,
    schedule_next: ScheduleNext | None = None,
) -> AttemptOutcome | None:
    """Make the next delivery attempt of a graded submission's pending callback and record
    it. None when there was nothing to do: no callback, not graded yet, delivered or given up
    already, or (`attempt` given) that attempt was recorded already, i.e. this is a
    redelivered job whose attempt completed. Store errors propagate (nothing recorded)."""
    record = store.get(submission_id)
    if (
        record is None
        or record.status != "done"
        or record.callback_state != "pending"
        or not record.callback_url
    ):
        return None
    n = record.callback_attempts + 1
    if attempt is not None and attempt != n:
        return None
    result = deliver(
        record.callback_url,
        body_of(record),
        secret=config.secret,
        policy=config.policy,
        delivery_id=record.id,
        timeout=config.timeout,
    )
    state: CallbackState
    retry_in: float | None = None
    next_at: datetime | None = None
    if result.ok:
        state = "delivered"
    elif result.retryable and n < config.max_attempts:
        state = "pending"
        retry_in = retry_delay(n, config.retry_base)
        next_at = datetime.now(UTC) + timedelta(seconds=retry_in)
    else:
        state = "failed"
    in_record = None
    if next_at is not None and schedule_next is not None:
        due = next_at

        def in_record(session: Session) -> None:
            schedule_next(session, n + 1, due)

    written = store.record_callback_attempt(
        submission_id,
        attempt=n,
        state=state,
        status_code=result.status_code,
        error=result.error,
        next_at=next_at,
        in_record=in_record,
    )
    if not written:  # another attempt recorded meanwhile (a redelivered job raced this one)
        return None
    if state == "delivered":
        log.info("callback of %s delivered (attempt %d, HTTP %s)", submission_id, n,
                 result.status_code)
    elif state == "pending":
        log.warning("callback of %s: attempt %d failed (%s); next in %.1f s", submission_id,
                    n, result.error, retry_in)
    else:
        log.warning("callback of %s given up after attempt %d: %s", submission_id, n,
                    result.error)
    return AttemptOutcome(n, state, result.status_code, retry_in)


class LocalCallbacks:
    """Deliveries of the local queue: `concurrency` daemon threads and a heap of due times.

    Separate from the grading threads, so a slow receiver (each attempt is bounded by
    `webhook_timeout_seconds`) never holds a grade. A delivery that is due is made once even
    if scheduled twice. Nothing is lost on a crash: the row stays `pending` with its next due
    time and `start()` re-schedules it."""

    def __init__(self, store: Store, config: CallbackConfig, concurrency: int = 4) -> None:
        self._store = store
        self._config = config
        self._concurrency = concurrency
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []
        self._order = itertools.count()
        self._known: set[str] = set()  # scheduled or being delivered
        self._stopping = False
        self._threads: list[threading.Thread] = []

    def start(self) -> int:
        """Start the delivery threads and schedule every pending callback of a graded
        submission (left by a previous run); returns how many."""
        pending = self._store.pending_callbacks()
        now = datetime.now(UTC)
        for submission_id, due in pending:
            self.schedule(submission_id, (due - now).total_seconds() if due else 0.0)
        for i in range(self._concurrency):
            t = threading.Thread(target=self._work, name=f"jaxjudge-callback-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return len(pending)

    def graded(self, submission_id: str) -> None:
        """A grade was stored: deliver its callback now (the grading queue's hook)."""
        self.schedule(submission_id, 0.0)

    def schedule(self, submission_id: str, delay: float) -> None:
        with self._cond:
            if self._stopping or submission_id in self._known:
                return
            self._known.add(submission_id)
            due = time.monotonic() + max(0.0, delay)
            heapq.heappush(self._heap, (due, next(self._order), submission_id))
            self._cond.notify()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop; an attempt in flight is abandoned (its row stays pending for the next run)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def _next(self) -> str | None:
        with self._cond:
            while True:
                if self._stopping:
                    return None
                if self._heap:
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[2]
                    self._cond.wait(wait)
                else:
                    self._cond.wait()

    def _work(self) -> None:
        while (submission_id := self._next()) is not None:
            again: float | None = None
            try:
                outcome = attempt_delivery(self._store, submission_id, self._config)
                if outcome is not None and outcome.state == "pending":
                    again = outcome.retry_in
            except (SQLAlchemyError, OSError):  # the store failed: the row is still pending
                log.exception("callback of %s: could not record the attempt", submission_id)
                again = self._config.retry_base
            except Exception:  # our bug: not retried in a loop; the next start re-schedules it
                log.exception("callback of %s: delivery failed; left pending", submission_id)
            finally:
                with self._cond:
                    self._known.discard(submission_id)
            if again is not None:
                self.schedule(submission_id, again)


class JobCallbacks:
    """What the delivery task of the PostgreSQL queue calls, in a `jaxjudge worker`."""

    def __init__(self, store: Store, config: CallbackConfig) -> None:
        self._store = store
        self._config = config

    async def deliver(self, submission_id: str, attempt: int) -> str:
        from jaxjudge.service.jobs import defer_callback

        def schedule_next(session: Session, n: int, at: datetime) -> None:
            defer_callback(session, submission_id, n, at)

        outcome = await asyncio.to_thread(
            attempt_delivery, self._store, submission_id, self._config,
            attempt=attempt, schedule_next=schedule_next,
        )
        return "nothing to do" if outcome is None else f"attempt {attempt}: {outcome.state}"
