"""A Procrastinate worker that lives through database outages, and says so when it cannot.

Procrastinate's worker stops as soon as one of its side tasks fails (heartbeat, listener), and
its job fetch raises out of the run loop: one PostgreSQL restart would stop every worker at
once, and the grades in flight with them. This subclass keeps Procrastinate's loop and
overrides the few steps that touch the database from a loop of their own, so that a
connection error (the database restarting, a connection killed) is waited out instead:

- the heartbeat retries at its interval, on a connection of its own (`HeartbeatLine`): the
  pool's reconnect backoff doubles through an outage, so a heartbeat that waited for the pool
  would come back seconds after the database and other workers would presume this one dead
  and redeliver its grades; a worker whose row was pruned meanwhile (silent for a day,
  Procrastinate's prune at another worker's start-up) registers again, loudly;
- the LISTEN connection is opened again with capped backoff, and a fetch follows every
  reconnect (what was announced while it was away is lost);
- a fetch that fails is retried at the next poll; a job's status that cannot be written is
  written when the database is back (otherwise its row stays `doing` under a live worker);
- every failure is reported to the process's `Reachability`, which gates the stalled-job sweep.

Anything else a side task raises is a bug: Procrastinate stops the worker, `failure` says
which task died, and `jaxjudge worker` exits non-zero so its supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from procrastinate.sql import queries
from procrastinate.worker import Worker

from jaxjudge.service.outage import Reachability, database_unreachable

log = logging.getLogger("jaxjudge.worker")

MAX_BACKOFF_SECONDS = 2.0  # between listener reconnects and job-status writes
# A job status that could not be written once the worker is stopping: given up after this.
STOPPING_PATIENCE_SECONDS = 10.0


class HeartbeatLine:
    """A worker's heartbeat on one connection of its own, opened again at the next beat
    after any failure: it is back within a heartbeat of the database, whatever the pool's
    backoff. A beat that takes longer than `timeout` (a cut network) counts as a failure."""

    def __init__(self, conninfo: str, timeout: float) -> None:
        self._conninfo = conninfo
        self._timeout = timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def beat(self, worker_id: int) -> bool:
        """Write the heartbeat; whether the worker is still registered. Connection failures
        and time-outs raise psycopg.OperationalError."""
        try:
            return await asyncio.wait_for(self._beat(worker_id), self._timeout)
        except TimeoutError as exc:
            await self.close()
            raise psycopg.OperationalError(
                f"the heartbeat took over {self._timeout:.1f} s") from exc
        except psycopg.Error:
            await self.close()
            raise

    async def _beat(self, worker_id: int) -> bool:
        if self._conn is None:
            self._conn = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True,
                connect_timeout=max(2, round(self._timeout)))  # libpq's minimum is 2
        async with self._conn.cursor() as cursor:
            # Procrastinate's own statement (its function is versioned with its schema)
            await cursor.execute(queries["update_heartbeat"], {"worker_id": worker_id})
            await cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM procrastinate_workers WHERE id = %(worker_id)s)",
                {"worker_id": worker_id})
            row = await cursor.fetchone()
        return bool(row and row[0])

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):  # already broken: nothing to flush
                await conn.close()


class ResilientWorker(Worker):
    """Procrastinate's Worker, riding out database outages (see the module docstring)."""

    def __init__(
        self,
        *,
        reachability: Reachability,
        on_registered: Callable[[int], Awaitable[None]] | None = None,
        heartbeat_conninfo: str,
        **options: Any,
    ) -> None:
        super().__init__(listen_notify=False, **options)  # our own listener: _listen_forever
        self.reachability = reachability
        self._heartbeat_line = HeartbeatLine(
            heartbeat_conninfo, timeout=max(2.0, 2 * self.update_heartbeat_interval))
        self._on_registered = on_registered  # called with each id this worker registers as
        self.failure: str | None = None  # "task: error" of a side task that died
        # Recoveries by kind, for /metrics and the logs: heartbeat, listener, fetch,
        # job_status, reregistered.
        self.recoveries: Counter[str] = Counter()

    async def run(self) -> None:
        announcing = None
        if self._on_registered is not None:
            announcing = asyncio.create_task(self._announce_registration())
        try:
            await super().run()
        finally:
            if announcing is not None:
                announcing.cancel()

    async def _announce_registration(self) -> None:
        while self.worker_id is None:  # Worker.run registers first thing
            await asyncio.sleep(0.05)
        assert self._on_registered is not None
        await self._on_registered(self.worker_id)

    # -- side tasks -----------------------------------------------------------------------
    def _start_side_tasks(self) -> list[asyncio.Task[Any]]:
        tasks = super()._start_side_tasks()
        tasks.append(asyncio.create_task(self._listen_forever(), name="listener"))
        for task in tasks:
            task.add_done_callback(self._side_task_done)
        return tasks

    def _side_task_done(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        self.failure = f"{task.get_name()}: {task.exception()!r}"
        log.critical("worker %s: side task %s died (%r); stopping this worker so that its "
                     "supervisor restarts it", self.worker_name, task.get_name(),
                     task.exception())

    def _unreachable(self, what: str, exc: BaseException) -> None:
        """Note a connection failure (warning on the first of an outage, debug after)."""
        first = not self.reachability.down
        self.reachability.failed()
        self.recoveries[what] += 1
        log.log(logging.WARNING if first else logging.DEBUG,
                "worker %s: %s failed, the database is unreachable (%s: %s); retrying",
                self.worker_name, what, type(exc).__name__, str(exc).strip()[:200])

    async def _update_heartbeat(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.update_heartbeat_interval)
                await self._beat_once()
        finally:
            await self._heartbeat_line.close()

    async def _beat_once(self) -> None:
        worker_id = self.worker_id
        assert worker_id is not None
        try:
            registered = await self._heartbeat_line.beat(worker_id)
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            self._unreachable("heartbeat", exc)
            return
        self.reachability.ok()
        if not registered:
            # Pruned (Procrastinate's start-up prune of another worker): our jobs were
            # redelivered (the fence keeps our late results out). Take a new id so that
            # fetching and heartbeats work again.
            self.worker_id = await self.app.job_manager.register_worker()
            self.recoveries["reregistered"] += 1
            if self._on_registered is not None:
                await self._on_registered(self.worker_id)
            log.error("worker %s: its registration %d was pruned (presumed dead); "
                      "registered again as %d", self.worker_name, worker_id,
                      self.worker_id)

    async def _listen_forever(self) -> None:
        loop = asyncio.get_running_loop()
        backoff = 0.2
        while True:
            started = loop.time()
            self._new_job_event.set()  # notifications sent while we were away are lost
            try:
                await self.app.job_manager.listen_for_jobs(
                    on_notification=self._handle_notification, queues=self.queues)
            except Exception as exc:
                if not database_unreachable(exc):
                    raise
                self._unreachable("listener", exc)
            if loop.time() - started > 10 * MAX_BACKOFF_SECONDS:
                backoff = 0.2
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)

    # -- the run loop's database calls ----------------------------------------------------
    async def _fetch_and_process_jobs(self) -> None:
        try:
            await super()._fetch_and_process_jobs()
        except Exception as exc:  # the next poll (or a notification) fetches again
            if not database_unreachable(exc):
                raise
            self._unreachable("fetch", exc)

    async def _persist_job_status(self, *args: Any, **kwargs: Any) -> None:
        loop = asyncio.get_running_loop()
        backoff = 0.2
        stopping_since: float | None = None
        interrupted = False  # a write failed with the connection: it may have committed
        job = kwargs.get("job")
        while True:
            try:
                await super()._persist_job_status(*args, **kwargs)
                return
            except Exception as exc:
                if not database_unreachable(exc):
                    if await self._job_left_doing(job):
                        # Procrastinate's finish/retry refuses a job no longer `doing`: the
                        # write that lost its connection had committed (the database stopped
                        # between its commit and its answer), or the job was redelivered and
                        # is its new holder's (the submission's fence kept our grade out if
                        # it was late). Nothing is left to write.
                        log.log(logging.INFO if interrupted else logging.WARNING,
                                "worker %s: job %s is no longer this worker's to finish (%s)",
                                self.worker_name, getattr(job, "id", "?"),
                                "its status was written before the connection dropped"
                                if interrupted else "redelivered meanwhile")
                        return
                    raise
                interrupted = True
                self._unreachable("job_status", exc)
                if self._stop_event.is_set():
                    stopping_since = stopping_since or loop.time()
                    if loop.time() - stopping_since > STOPPING_PATIENCE_SECONDS:
                        log.error("worker %s: the status of job %s could not be written "
                                  "before shutdown; it is redelivered once this worker's "
                                  "heartbeat is stale", self.worker_name,
                                  getattr(job, "id", "?"))
                        return
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)

    async def _job_left_doing(self, job: Any) -> bool:
        """Whether `job` is no longer `doing` under this worker (its row finished, retried
        or deleted): read after a status write whose commit is in doubt."""
        job_id = getattr(job, "id", None)
        if job_id is None:
            return False
        rows = await self.app.connector.execute_query_all_async(
            "SELECT status::text AS status, worker_id FROM procrastinate_jobs "
            "WHERE id = %(job_id)s",
            job_id=job_id,
        )
        return not rows or rows[0]["status"] != "doing" or rows[0]["worker_id"] != self.worker_id
