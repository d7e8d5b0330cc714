"""`jaxjudge worker`: a grading process of the PostgreSQL job queue (JAXJUDGE_QUEUE=postgres).

One process = one Procrastinate worker with concurrency N (JAXJUDGE_WORKERS or --concurrency)
and N grading processes (jaxjudge.grading.processes; its own Grader when N is 1). Each job runs
the same grade path as the local pool (`jaxjudge.service.queue.grade_and_store`: claim ->
grade -> public report -> finish under the fence) in a thread, so the event loop keeps the
heartbeat going while grades run.

The guarantee (exactly once in the store, at least once in execution):
- every worker heartbeats every `worker_heartbeat_seconds` (2 s);
- every worker sweeps every heartbeat: a job in `doing` whose worker's last heartbeat is older
  than `worker_stall_seconds` (10 s), or whose worker row is gone, goes back to `todo`
  (several sweepers may race: the losers' retries fail harmlessly);
- the redelivered job claims the `running` row again with attempts + 1; a late finish from
  the presumed-dead grader carries the old fence and changes nothing;
- a submission interrupted MAX_ATTEMPTS (3) times is finished as internal_error.
Redelivery after a SIGKILL: stall (10 s) + one sweep (2 s) + one fetch poll (2 s), so
<= 16 s plus a heartbeat's slack; documented as <= 30 s.

SIGTERM/SIGINT: stop fetching, let in-flight grades finish for `worker_shutdown_seconds`, then
abandon the rest (their threads' results are dropped, their jobs go back to `todo` at once for
another worker) and exit. A second signal kills at once (jobs are then swept as stalled).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from procrastinate import App
from procrastinate.manager import JobManager
from procrastinate.worker import Worker as ProcrastinateWorker
from sqlalchemy import text

from jaxjudge import Report
from jaxjudge.grading.processes import grader_for
from jaxjudge.service.callbacks import CallbackConfig, JobCallbacks
from jaxjudge.service.config import Settings
from jaxjudge.service.jobs import (
    CALLBACK_QUEUE,
    DELIVER_KEY,
    GRADE_KEY,
    QUEUE_NAME,
    defer_callback,
    heartbeat_conninfo,
    make_app,
    requeue_orphan_callbacks,
    requeue_orphans,
)
from jaxjudge.service.liveness import ResilientWorker
from jaxjudge.service.metrics import Metrics, serve_metrics, worker_metrics
from jaxjudge.service.outage import Reachability, database_unreachable
from jaxjudge.service.queue import GradeFn, OnGraded, grade_and_store, grading_function
from jaxjudge.service.store import Store

log = logging.getLogger("jaxjudge.worker")

T = TypeVar("T")
STARTUP_PRUNE_SECONDS = 86400.0


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """Run `fn` in a daemon thread and await it. Cancelling the await leaves the thread
    running (a grade cannot be interrupted mid-way) but never blocks the process's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(result: T | None, exc: BaseException | None) -> None:
        if future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        try:
            result, exc = fn(), None
        except BaseException as e:
            result, exc = None, e
        with contextlib.suppress(RuntimeError):  # the loop is gone: the process is exiting
            loop.call_soon_threadsafe(deliver, result, exc)

    threading.Thread(target=target, name="jaxjudge-grade", daemon=True).start()
    return await future


class WorkerRuntime:
    """What the Procrastinate task calls: the grade path with this process's store and grader."""

    def __init__(self, store: Store, grade_fn: GradeFn, on_graded: OnGraded | None = None,
                 name: str | None = None):
        self._store = store
        self._name = name  # recorded with each claim: which worker holds the attempt
        self._grade_fn = grade_fn
        self._on_graded = on_graded

    async def grade(self, submission_id: str) -> str:
        abandoned = threading.Event()

        def work() -> str:
            outcome = grade_and_store(
                self._store,
                submission_id,
                self._grade_fn,
                redelivery=True,
                on_graded=self._on_graded,
                abandoned=abandoned.is_set,
                defer_callback=defer_callback,  # queued in the grade's own transaction
                ride_out_outages=True,
                worker=self._name,
            )
            return outcome.report.verdict.value if outcome else "nothing stored"

        try:
            return await in_daemon_thread(work)
        except asyncio.CancelledError:
            abandoned.set()  # shutting down: whatever the thread finds is not stored
            raise


async def sweep_stalled(
    job_manager: JobManager, stall_seconds: float, alive: Collection[int | None] = (),
    on_redelivered: Callable[[str], None] | None = None,
) -> int:
    """Put the jobs of presumed-dead workers back to `todo`; returns how many this call did.
    Two sweepers may find the same job: the second retry fails (the job is no longer
    `doing`) and is ignored. Jobs of the workers in `alive` (this process's own, which run
    on the very loop that sweeps) are left alone, whatever their heartbeat says."""
    # Every job in this database is one of ours (grading or delivery): one query for both.
    stalled = list(await job_manager.get_stalled_jobs(seconds_since_heartbeat=stall_seconds))
    retried = 0
    for job in stalled:
        if job.worker_id is not None and job.worker_id in alive:
            continue
        try:
            await job_manager.retry_job(job)
        except Exception as exc:  # another sweeper won, or the job finished meanwhile
            log.debug("job %s not retried: %s", job.id, exc)
            continue
        retried += 1
        if on_redelivered is not None:
            on_redelivered(job.queue)
        log.warning("redelivering job %s (%s): its worker stopped heartbeating",
                    job.id, job.task_kwargs.get("submission_id"))
    return retried


def sweep_orphans(store: Store, stall_seconds: float) -> list[str]:
    """Re-queue unfinished submissions whose job is gone (`requeue_orphans`), logging each."""
    with store.transaction() as session:
        ids = requeue_orphans(session, older_than=stall_seconds)
        callbacks = requeue_orphan_callbacks(session, older_than=stall_seconds)
    for submission_id in ids:
        log.warning("re-queued submission %s: unfinished, and its job had ended", submission_id)
    for submission_id in callbacks:
        log.warning("re-queued the callback of %s: pending, and its job had ended",
                    submission_id)
    return ids


async def _sweep_forever(
    job_manager: JobManager, store: Store, settings: Settings, reachability: Reachability,
    own: Collection[ProcrastinateWorker],
    on_redelivered: Callable[[str], None] | None = None,
) -> None:
    """Stalled jobs every heartbeat (they bound redelivery); orphans, which only a long
    database outage makes, once per stall period (two NOT EXISTS scans).

    Only once this process has reached the database for a whole stall period: right after
    an outage (or its own start) every heartbeat is old, and a worker that could not write
    its heartbeat is not dead. Dead workers' rows are not pruned here (they are harmless:
    their jobs are found by heartbeat, and /v1/system counts recent heartbeats only), so a
    worker whose heartbeat was merely late is never unregistered under its running jobs."""
    orphans_due = 0.0
    while True:
        try:
            if reachability.reachable_for() >= settings.worker_stall_seconds:
                await sweep_stalled(job_manager, settings.worker_stall_seconds,
                                    {w.worker_id for w in own}, on_redelivered)
                if time.monotonic() >= orphans_due:
                    await asyncio.to_thread(sweep_orphans, store, settings.worker_stall_seconds)
                    orphans_due = time.monotonic() + settings.worker_stall_seconds
            else:
                await job_manager.check_connection_async()
            reachability.ok()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if database_unreachable(exc):
                reachability.failed()
            log.warning("stalled-job sweep failed: %s", exc)
        await asyncio.sleep(settings.worker_heartbeat_seconds)


async def run_worker(settings: Settings, *, on_graded: OnGraded | None = None) -> None:
    """Grade jobs until SIGTERM/SIGINT. Fails closed like `serve` (SandboxUnavailable)."""
    from jaxjudge.service.main import _check_sandbox  # the very check `serve` runs at start-up

    layers = await asyncio.to_thread(_check_sandbox, settings)
    metrics_server = None
    failure: str | None = None
    on_redelivered: Callable[[str], None] | None = None
    if settings.worker_metrics_port is not None:
        observed, metrics_server = _serve_metrics(settings, layers)
        on_graded = _both(on_graded, observed.observe_report)

        def on_redelivered(queue: str) -> None:
            observed.redeliveries.labels(queue).inc()

    concurrency = settings.workers
    grader = await asyncio.to_thread(
        grader_for, concurrency, warm_pool=settings.warm_pool, engine=settings.engine,
        report_cache=settings.report_cache_size)
    try:
        store = await asyncio.to_thread(Store, settings.database_url)  # migrates if behind
        try:
            options = _worker_options(settings, "jaxjudge")
            runtime = WorkerRuntime(store, grading_function(grader), on_graded,
                                    name=options["name"])
            jobs_app = make_app(settings.database_url,
                                pool_size=concurrency + settings.webhook_concurrency + 4)
            reachability = Reachability()
            async with jobs_app.open_async():
                grading = ResilientWorker(
                    app=jobs_app,
                    reachability=reachability,
                    heartbeat_conninfo=heartbeat_conninfo(settings.database_url),
                    **options,
                    queues=[QUEUE_NAME],
                    concurrency=concurrency,
                    shutdown_graceful_timeout=settings.worker_shutdown_seconds,
                    additional_context={GRADE_KEY: runtime.grade},
                    install_signal_handlers=True,
                )
                delivery = _delivery_worker(jobs_app, store, settings, reachability)
                sweeper = asyncio.create_task(_sweep_forever(
                    jobs_app.job_manager, store, settings, reachability, (grading, delivery),
                    on_redelivered))
                delivering = asyncio.create_task(_deliver_forever(delivery, grading))
                log.info("jaxjudge worker: concurrency %d, heartbeat %.1f s, stall %.1f s",
                         concurrency, settings.worker_heartbeat_seconds,
                         settings.worker_stall_seconds)
                try:
                    await grading.run()
                finally:
                    sweeper.cancel()
                    delivering.cancel()  # stops gracefully: in-flight attempts are bounded
                    with contextlib.suppress(asyncio.CancelledError):
                        await sweeper
                    with contextlib.suppress(asyncio.CancelledError):
                        failure = await delivering
                    failure = failure or grading.failure
        finally:
            store.close()
    finally:
        await asyncio.to_thread(grader.close)
        if metrics_server is not None:
            metrics_server.shutdown()
    if failure:
        log.critical("jaxjudge worker stopped because %s; exiting with status 1", failure)
        raise WorkerDied(failure)
    log.info("jaxjudge worker stopped")


class WorkerDied(RuntimeError):
    """One of the worker's own tasks died (a bug, not an outage): the process exits non-zero
    so that its supervisor restarts it."""


def _worker_options(settings: Settings, role: str) -> dict[str, Any]:
    """What both Procrastinate workers of this process share: their name, the heartbeat,
    polling at the heartbeat (a retried job sends no NOTIFY) and deleting succeeded jobs.
    Procrastinate prunes workers stalled for `stalled_worker_timeout` at start-up, a first
    look back that an outage would fool: only workers silent for a day go then, the sweep
    prunes the others (`_sweep_forever`)."""
    return {
        "name": f"{role}@{socket.gethostname()}:{os.getpid()}",
        "update_heartbeat_interval": settings.worker_heartbeat_seconds,
        "stalled_worker_timeout": STARTUP_PRUNE_SECONDS,
        "fetch_job_polling_interval": settings.worker_heartbeat_seconds,
        "delete_jobs": "successful",
    }


def _delivery_worker(
    jobs_app: App, store: Store, settings: Settings, reachability: Reachability
) -> ResilientWorker:
    """The callbacks queue's own Procrastinate worker in this process, `webhook_concurrency`
    deliveries at once: a slow receiver holds one of these slots, never a grading slot. API
    nodes count grading workers only, so its registration is tagged (again if it registers
    again)."""
    callbacks = JobCallbacks(store, CallbackConfig.from_settings(settings))

    async def tag(worker_id: int) -> None:
        try:
            await asyncio.to_thread(_tag_delivery_worker, store, worker_id)
        except Exception as exc:  # only the worker count on /v1/system is off by one
            log.warning("could not tag the delivery worker: %s", exc)

    return ResilientWorker(
        app=jobs_app,
        reachability=reachability,
        heartbeat_conninfo=heartbeat_conninfo(settings.database_url),
        on_registered=tag,
        **_worker_options(settings, "jaxjudge-callbacks"),
        queues=[CALLBACK_QUEUE],
        concurrency=settings.webhook_concurrency,
        shutdown_graceful_timeout=settings.webhook_timeout_seconds,
        additional_context={DELIVER_KEY: callbacks.deliver},
        install_signal_handlers=False,
    )


async def _deliver_forever(worker: ResilientWorker, grading: ProcrastinateWorker) -> str | None:
    """Run the delivery worker until cancelled (when the grading worker stops); signals are
    the grading worker's. If it stops by itself (a side task died), the grading worker is
    stopped too and the reason returned: the process exits loudly rather than grade with no
    one delivering."""
    running = asyncio.create_task(worker.run())
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        running.cancel()  # Worker.run stops gracefully, then re-raises
        with contextlib.suppress(asyncio.CancelledError):
            await running
        return worker.failure
    failure = worker.failure or "the callback worker stopped by itself"
    log.critical("jaxjudge worker: %s; stopping the grading worker", failure)
    grading.stop()
    return failure


def _tag_delivery_worker(store: Store, worker_id: int) -> None:
    with store.transaction() as session:
        session.execute(text("INSERT INTO jaxjudge_delivery_workers (worker_id) VALUES (:id) "
                             "ON CONFLICT DO NOTHING"), {"id": worker_id})


def _serve_metrics(
    settings: Settings, layers: dict[str, dict[str, object]]
) -> tuple[Metrics, Any]:
    """This worker's metrics server (`--metrics-port`): its grades, stage seconds and layers."""
    from jaxjudge.service.api.routes.system import versions

    v = versions()
    observed = worker_metrics(
        {"version": v["jaxjudge"], "jax": v["jax"], "jaxlib": v["jaxlib"],
         "python": v["python"], "queue": settings.queue, "role": "worker"},
        layers,
    )
    assert settings.worker_metrics_port is not None
    server = serve_metrics(settings.worker_metrics_port, observed, settings.worker_metrics_addr)
    log.info("jaxjudge worker: metrics at http://%s:%d/metrics", settings.worker_metrics_addr,
             settings.worker_metrics_port)
    return observed, server


def _both(first: OnGraded | None, second: OnGraded) -> OnGraded:
    if first is None:
        return second

    def both(report: Report, attempts: int) -> None:
        first(report, attempts)
        second(report, attempts)

    return both
