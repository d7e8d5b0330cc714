"""The bounded grading pool: N worker threads draining a bounded queue of submission ids.

Threads are enough: `jaxjudge.grade()` spends its time waiting on sandboxed subprocesses,
and it never runs on the event loop, so the API stays responsive while every worker is busy. The
queue holds ids only; the source is read back from the store when a worker claims it, so what is in
memory can always be rebuilt from the database after a crash (`recover()`).

`grade_and_store` (claim -> grade -> public report -> fenced finish) is the one grade path,
shared by this in-process pool and by `jaxjudge worker` (jaxjudge/service/worker.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from sqlalchemy.orm import Session

from jaxjudge import Grader, Report, TestResult, Verdict, grade
from jaxjudge.grading.custom import CUSTOM_PREFIX, CustomInputError
from jaxjudge.grading.processes import ProcessGrader
from jaxjudge.service.logs import grading
from jaxjudge.service.outage import retry_while_unreachable
from jaxjudge.service.store import ClaimedSubmission, Store

log = logging.getLogger("jaxjudge.queue")

GradeFn = Callable[[str, bytes, str], Report]
# A submission whose grading was interrupted this many times (e.g. it keeps taking the server
# or a worker down) is finished with internal_error instead of being retried forever.
MAX_ATTEMPTS = 3


class QueueFull(Exception):
    """No room for another submission; retry after `retry_after` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the grading queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


def grading_function(grader: Grader | ProcessGrader) -> GradeFn:
    """The queue's grade call, through the service's Grader (its pool, engine and caches)."""

    def grade_one(problem_id: str, source: bytes, mode: str,
                  custom_inputs: list[dict[str, Any]] | None = None) -> Report:
        return grader.grade(problem_id, source, mode,  # type: ignore[arg-type]
                            custom_inputs=custom_inputs)

    return grade_one


def _grade(problem_id: str, source: bytes, mode: str,
           custom_inputs: list[dict[str, Any]] | None = None) -> Report:
    return grade(problem_id, source, mode, custom_inputs=custom_inputs)  # type: ignore[arg-type]


def public_report(report: Report) -> Report:
    """The report with every hidden test's details removed (grader already omits them; this is
    the belt to its braces: hidden inputs and expected outputs must never leave the server)."""
    tests = [t if t.visible else t.model_copy(update={"details": None}) for t in report.tests]
    return report.model_copy(update={"tests": tests})


def _inputs_refused(report: Report, why: str) -> Report:
    """`report` (graded without the learner's own inputs, possibly a cached object: copied)
    with one skipped custom test saying why they did not run."""
    refused = TestResult(
        name=f"{CUSTOM_PREFIX}1", visible=True, verdict=Verdict.SKIPPED, custom=True,
        message=f"your own inputs were not run: {why} (the problem changed after you "
        "submitted them)")
    return report.model_copy(update={"tests": [*report.tests, refused]})


def internal_error_report(problem_id: str, mode: str, message: str) -> Report:
    return Report(
        verdict=Verdict.INTERNAL_ERROR,
        problem=problem_id,
        mode=mode,  # type: ignore[arg-type]
        message=message,
    )


@dataclass(frozen=True)
class GradeOutcome:
    """One stored grade, as `grade_and_store` returns it."""

    submission_id: str
    problem_id: str
    mode: str
    attempts: int  # the fence this grade held
    report: Report  # as stored: hidden tests' details removed
    seconds: float  # claim to report
    callback_url: str | None = None  # the submission's callback, due now


# Called with each stored (public) report and the attempt that stored it, in the grading
# thread (e.g. Metrics.observe_report).
OnGraded = Callable[[Report, int], None]
# Queues the delivery of a submission's callback inside the grade's finishing transaction
# (the PostgreSQL queue: jaxjudge.service.jobs.defer_callback).
DeferCallback = Callable[[Session, str], object]


def run_grade(grade_fn: GradeFn, problem_id: str, source: bytes, mode: str,
              custom_inputs: str | None = None) -> Report:
    """`grade_fn`, with an exception (never a submission's fault) turned into internal_error.
    `custom_inputs`: a run's own inputs as stored (JSON), passed only when there are some."""
    try:
        if custom_inputs:
            try:
                return grade_fn(problem_id, source, mode,  # type: ignore[call-arg]
                                custom_inputs=json.loads(custom_inputs))
            except CustomInputError as exc:
                # Checked when it was submitted: the problem or the judge changed since (an
                # upgrade, a package edit). The submission is graded; its inputs say why not.
                return _inputs_refused(grade_fn(problem_id, source, mode), str(exc))
        return grade_fn(problem_id, source, mode)
    except Exception as exc:  # grade() never raises for a bad submission: this is our bug
        log.error("grade() raised for problem %s:\n%s", problem_id, traceback.format_exc())
        return internal_error_report(
            problem_id,
            mode,
            f"The judge failed while grading ({type(exc).__name__}). This is a bug in the "
            "judge, not in your code; please report it.",
        )


def grade_and_store(
    store: Store,
    submission_id: str,
    grade_fn: GradeFn,
    *,
    redelivery: bool = False,
    on_graded: OnGraded | None = None,
    abandoned: Callable[[], bool] | None = None,
    defer_callback: DeferCallback | None = None,
    ride_out_outages: bool = False,
    worker: str | None = None,
) -> GradeOutcome | None:
    """Claim one submission, grade it, store its public report under the claim's fence.

    Returns None when there was nothing to store: not claimable (graded already), the grade
    was `abandoned()` meanwhile (its worker is shutting down; the job is redelivered), or the
    fence moved on (another claim took the row since: this late write changes nothing).
    Store errors propagate (the row stays `running` for recovery or redelivery).
    `redelivery`: see `Store.claim`. `defer_callback`: called in the finishing transaction
    of a submission with a callback, so its delivery is queued if and only if this grade is
    the one stored (a fenced-out late finish queues nothing). `ride_out_outages`: a finish
    that finds the database unreachable is tried again until it is back (or `abandoned()`):
    the grade is kept, and no attempt is spent on the outage. `worker`: the grading
    process's name, recorded with the claim.
    """
    claimed = store.claim(submission_id, redelivery=redelivery, worker=worker)
    if claimed is None:
        return None  # already graded (e.g. queued twice around a restart)
    with grading(submission_id, claimed.attempts):  # on every log line of this grade
        return _grade_claimed(store, claimed, grade_fn, on_graded=on_graded,
                              abandoned=abandoned, defer_callback=defer_callback,
                              ride_out_outages=ride_out_outages)


def _grade_claimed(
    store: Store,
    claimed: ClaimedSubmission,
    grade_fn: GradeFn,
    *,
    on_graded: OnGraded | None,
    abandoned: Callable[[], bool] | None,
    defer_callback: DeferCallback | None,
    ride_out_outages: bool,
) -> GradeOutcome | None:
    """`grade_and_store` once the claim is made."""
    submission_id = claimed.id
    log.info("grade started: %s, %s", claimed.problem_id, claimed.mode)
    started = time.monotonic()
    if claimed.attempts > MAX_ATTEMPTS:
        report = internal_error_report(
            claimed.problem_id,
            claimed.mode,
            f"Grading was interrupted {MAX_ATTEMPTS} times (the grading process stopped while "
            "grading this submission); it was not retried again. This is the judge's "
            "problem, not necessarily your code's: please resubmit.",
        )
    else:
        report = run_grade(grade_fn, claimed.problem_id, claimed.source, claimed.mode,
                           claimed.custom_inputs)
    elapsed = time.monotonic() - started
    try:
        report = public_report(report)
        report_json = report.model_dump_json()
    except (ValueError, TypeError) as exc:  # e.g. unencodable output: our bug, not theirs
        log.error("the report is not serializable: %s", exc)
        report = internal_error_report(
            claimed.problem_id, claimed.mode, "The judge could not store the report."
        )
        report_json = report.model_dump_json()
    if abandoned is not None and abandoned():
        log.warning("grade abandoned (shutting down); it will be redelivered")
        return None
    in_finish = None
    if defer_callback is not None and claimed.callback_url:
        queue_delivery = defer_callback

        def in_finish(session: Session) -> None:
            queue_delivery(session, submission_id)

    def finish() -> bool:
        return store.finish(
            submission_id,
            verdict=report.verdict.value,
            score=report.score,
            max_score=report.max_score,
            report_json=report_json,
            fence=claimed.attempts,
            in_finish=in_finish,
        )

    if ride_out_outages:
        stored = retry_while_unreachable(
            finish, what="storing the grade", give_up=abandoned or (lambda: False))
    else:
        stored = finish()
    if not stored:
        log.warning("grade not stored: another attempt claimed the submission since")
        return None
    log.info("grade stored: %s in %.1f s", report.verdict.value, elapsed)
    outcome = GradeOutcome(
        submission_id=submission_id,
        problem_id=claimed.problem_id,
        mode=claimed.mode,
        attempts=claimed.attempts,
        report=report,
        seconds=elapsed,
        callback_url=claimed.callback_url,
    )
    if on_graded is not None:
        try:
            on_graded(report, claimed.attempts)
        except Exception:  # a hook's failure must not undo or repeat a stored grade
            log.exception("on_graded hook failed")
    return outcome


class Reservation:
    """A queue slot held while the submission is written to the store (`GradingQueue.reserve`)."""

    def __init__(self, queue: GradingQueue) -> None:
        self._queue = queue
        self._open = True

    def push(self, submission_id: str) -> None:
        """Turn the slot into a queued submission."""
        if self._open:
            self._open = False
            self._queue._push_reserved(submission_id)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._open:  # never pushed (the insert failed): give the slot back
            self._open = False
            self._queue._release()


class GradingQueue:
    """Bounded FIFO of submission ids plus the worker threads that grade them."""

    def __init__(
        self,
        store: Store,
        *,
        workers: int,
        queue_size: int,
        grade_fn: GradeFn = _grade,
        on_graded: OnGraded | None = None,
        on_callback: Callable[[str], None] | None = None,
    ) -> None:
        self._store = store
        self._on_graded = on_graded  # called with each stored report (e.g. metrics)
        # Called with the id of each stored grade whose submission has a callback.
        self._on_callback = on_callback
        self._workers = workers
        self._queue_size = queue_size
        self._grade = grade_fn
        self._cond = threading.Condition()
        self._pending: deque[str] = deque()
        self._reserved = 0
        self._running = 0
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[str, list[asyncio.Event]] = {}
        self._avg_seconds = 5.0  # running mean of grade durations, for Retry-After

    # -- introspection --------------------------------------------------------------------
    @property
    def workers(self) -> int:
        return self._workers

    @property
    def queue_size(self) -> int:
        return self._queue_size

    @property
    def depth(self) -> int:
        """Submissions waiting for a worker."""
        with self._cond:
            return len(self._pending)

    @property
    def running(self) -> int:
        with self._cond:
            return self._running

    def retry_after(self) -> int:
        """Seconds until a slot is likely to free up: one grade spread over the workers."""
        return max(1, min(120, math.ceil(self._avg_seconds / self._workers)))

    # -- life cycle -----------------------------------------------------------------------
    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Start the workers. `loop` is where `wait()` callers live."""
        self._loop = loop
        for i in range(self._workers):
            t = threading.Thread(target=self._work, name=f"jaxjudge-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def recover(self) -> int:
        """Queue everything the store says is unfinished (ignoring the bound: these were
        accepted already). Returns how many."""
        ids = self._store.recover()
        with self._cond:
            self._pending.extend(ids)
            self._cond.notify_all()
        return len(ids)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking work and wait briefly for the workers. A grade still in flight is
        abandoned: its row stays `running` and the next start-up re-queues it."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    # -- submitting -----------------------------------------------------------------------
    def reserve(self) -> Reservation:
        """Hold a slot for a submission about to be stored; raises QueueFull when there is
        none. Reserve, then insert, then push: a 503 never leaves a row behind, and a 202
        never goes out for a submission that is not both stored and queued."""
        with self._cond:
            if self._stopping or len(self._pending) + self._reserved >= self._queue_size:
                raise QueueFull(self.retry_after())
            self._reserved += 1
        return Reservation(self)

    def _push_reserved(self, submission_id: str) -> None:
        with self._cond:
            self._reserved -= 1
            self._pending.append(submission_id)
            self._cond.notify()

    def _release(self) -> None:
        with self._cond:
            self._reserved -= 1

    # -- waiting (event loop side) --------------------------------------------------------
    async def wait(self, submission_id: str, timeout: float, is_done: Callable[[], bool]) -> bool:
        """Wait until the submission is graded or `timeout` passes; True if done.

        `is_done` is checked after registering, so a grade that finishes in between is seen.
        """
        event = asyncio.Event()
        with self._cond:
            self._waiters.setdefault(submission_id, []).append(event)
        try:
            if await asyncio.to_thread(is_done):
                return True
            try:
                await asyncio.wait_for(event.wait(), timeout)
            except TimeoutError:
                return await asyncio.to_thread(is_done)
            return True
        finally:
            with self._cond:
                events = self._waiters.get(submission_id, [])
                if event in events:
                    events.remove(event)
                if not events:
                    self._waiters.pop(submission_id, None)

    def _notify_done(self, submission_id: str) -> None:
        with self._cond:
            events = list(self._waiters.get(submission_id, []))
        loop = self._loop
        if loop is None:
            return
        for event in events:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the loop is closed: the server is shutting down
                return

    # -- workers --------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                submission_id = self._pending.popleft()
                self._running += 1
            try:
                self._grade_one(submission_id)
            except Exception:  # the store failed: the row stays running, recovered on restart
                log.exception("could not grade submission %s", submission_id)
            finally:
                with self._cond:
                    self._running -= 1
                self._notify_done(submission_id)

    def _grade_one(self, submission_id: str) -> None:
        outcome = grade_and_store(
            self._store, submission_id, self._grade, on_graded=self._on_graded
        )
        if outcome is not None:
            self._avg_seconds = 0.8 * self._avg_seconds + 0.2 * outcome.seconds
            if outcome.callback_url and self._on_callback is not None:
                self._on_callback(submission_id)
