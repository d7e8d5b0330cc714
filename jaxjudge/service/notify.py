"""`?wait=true` on any API node: one LISTEN connection per process, waiters by submission id.

A worker's finishing transaction runs `pg_notify('jaxjudge_done', id)` (Store.finish), which
PostgreSQL delivers to listeners only after the commit, so a woken waiter always reads the
stored verdict. A waiter registers first and reads the row second, so a finish in between is
never missed. While the listener connection is down (PostgreSQL restarting, a network cut)
waiters poll the row every `poll_seconds` instead, and the listener reconnects with capped
exponential backoff; on every (re)connect or loss all waiters re-read the row, since
notifications sent meanwhile are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import psycopg
from psycopg import sql

from jaxjudge.service.store import DONE_CHANNEL

log = logging.getLogger("jaxjudge.notify")

IsDone = Callable[[], Awaitable[bool]]
LISTENER_APPLICATION_NAME = "jaxjudge-done-listener"  # visible in pg_stat_activity
HEALTH_SECONDS = 5.0  # a silent connection is checked this often
MAX_BACKOFF_SECONDS = 5.0  # between reconnects


class DoneListener:
    """LISTEN on DONE_CHANNEL and wake the waiters of each announced submission."""

    def __init__(self, conninfo: str, *, poll_seconds: float = 1.0) -> None:
        self._conninfo = conninfo
        self.poll_seconds = poll_seconds
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.notifications = 0  # received, for tests and /v1/system debugging

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="jaxjudge-done-listener")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._connected.clear()

    async def wait_connected(self, timeout: float) -> bool:
        """True once LISTEN is in place (start-up ordering for tests and readiness)."""
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # -- waiting --------------------------------------------------------------------------
    async def wait(self, submission_id: str, timeout: float, is_done: IsDone) -> bool:
        """Wait until `is_done()` (the row says done) or `timeout` passes; True if done."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        event = asyncio.Event()
        self._waiters.setdefault(submission_id, set()).add(event)
        try:
            while True:
                if await is_done():  # after registering: a finish in between is seen
                    return True
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                step = remaining if self.connected else min(self.poll_seconds, remaining)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), step)
                event.clear()
        finally:
            events = self._waiters.get(submission_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[submission_id]

    def _wake(self, submission_id: str) -> None:
        for event in self._waiters.get(submission_id, ()):
            event.set()

    def _wake_all(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()

    # -- the connection -------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = 0.2
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True, connect_timeout=10,
                    application_name=LISTENER_APPLICATION_NAME,
                )
                async with conn:
                    await conn.execute(
                        sql.SQL("LISTEN {}").format(sql.Identifier(DONE_CHANNEL)))
                    self._connected.set()
                    self._wake_all()  # anything finished while we were away
                    backoff = 0.2
                    log.info("listening for finished grades on %s", DONE_CHANNEL)
                    while True:
                        async for note in conn.notifies(timeout=HEALTH_SECONDS):
                            self.notifications += 1
                            self._wake(note.payload)
                        await conn.execute("SELECT 1")  # a silently dead connection raises
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnect; waiters poll meanwhile
                log.warning("done listener lost its connection (%s); reconnecting in %.1f s",
                            type(exc).__name__, backoff)
            finally:
                if self._connected.is_set():
                    self._connected.clear()
                    self._wake_all()  # switch every waiter to polling now
            await asyncio.sleep(backoff)
            backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)
