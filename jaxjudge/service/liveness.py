"""A Procrastinate worker that lives through database outages, and says so when it cannot.

Procrastinate's worker stops as soon as one of its side tasks fails (heartbeat, listener), and
its job fetch raises out of the run loop: one PostgreSQL restart would stop every worker at
once, and the grades in flight with them. This subclass keeps Procrastinate's loop and
overrides the few steps that touch the database from a loop of their own, so that a
connection error (the database restarting, a connection killed) is waited out instead:

- the heartbeat retries at its interval; a worker whose row was pruned meanwhile (silent for
  a day, Procrastinate's prune at another worker's start-up) registers again, loudly;
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
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from procrastinate.worker import Worker

from jaxjudge.service.outage import Reachability, database_unreachable

log = logging.getLogger("jaxjudge.worker")

MAX_BACKOFF_SECONDS = 2.0  # between listener reconnects and job-status writes
# A job status that could not be written once the worker is stopping: given up after this.
STOPPING_PATIENCE_SECONDS = 10.0


class ResilientWorker(Worker):
    """Procrastinate's Worker, riding out database outages (see the module docstring)."""

    def __init__(
        self,
        *,
        reachability: Reachability,
        on_registered: Callable[[int], Awaitable[None]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(listen_notify=False, **options)  # our own listener: _listen_forever
        self.reachability = reachability
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
        while True:
            await asyncio.sleep(self.update_heartbeat_interval)
            worker_id = self.worker_id
            assert worker_id is not None
            try:
                await self.app.job_manager.update_heartbeat(worker_id)
                row = await self.app.connector.execute_query_one_async(
                    "SELECT EXISTS (SELECT 1 FROM procrastinate_workers "
                    "WHERE id = %(worker_id)s) AS registered",
                    worker_id=worker_id,
                )
            except Exception as exc:
                if not database_unreachable(exc):
                    raise
                self._unreachable("heartbeat", exc)
                continue
            self.reachability.ok()
            if not row["registered"]:
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
        while True:
            try:
                await super()._persist_job_status(*args, **kwargs)
                return
            except Exception as exc:
                if not database_unreachable(exc):
                    raise
                self._unreachable("job_status", exc)
                if self._stop_event.is_set():
                    stopping_since = stopping_since or loop.time()
                    if loop.time() - stopping_since > STOPPING_PATIENCE_SECONDS:
                        job = kwargs.get("job")
                        log.error("worker %s: the status of job %s could not be written "
                                  "before shutdown; it is redelivered once this worker's "
                                  "heartbeat is stale", self.worker_name,
                                  getattr(job, "id", "?"))
                        return
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)
