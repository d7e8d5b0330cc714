"""Database outages: recognising one, riding it out, and not mistaking it for dead workers.

A PostgreSQL restart, failover or network cut shows up as a connection error in whatever
touches the database at that moment. Nothing about a submission is wrong then, so the
service waits and retries (a grade in flight keeps its result until the database can take
it) instead of failing the work. After an outage every worker's heartbeat is old at once;
`Reachability` is how a process avoids reading that as "the others died": only a worker
whose heartbeat stopped while this process could reach the database is presumed dead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg

log = logging.getLogger("jaxjudge.outage")

T = TypeVar("T")
MAX_BACKOFF_SECONDS = 5.0


def database_unreachable(exc: BaseException) -> bool:
    """True if `exc` (or what it wraps: SQLAlchemy's and Procrastinate's errors keep the
    driver's as their cause) says the database could not be reached or the connection
    dropped, as opposed to a query the database refused."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, psycopg.OperationalError | psycopg.InterfaceError):
            return True
        current = current.__cause__ or current.__context__
    return False


def retry_while_unreachable(
    fn: Callable[[], T],
    *,
    what: str,
    give_up: Callable[[], bool],
    on_failure: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`fn()`, tried again with capped backoff for as long as the database is unreachable
    and `give_up()` is false; any other error, or the last one, propagates."""
    backoff = 0.2
    failures = 0
    while True:
        try:
            result = fn()
        except Exception as exc:
            if not database_unreachable(exc) or give_up():
                raise
            failures += 1
            if on_failure is not None:
                on_failure()
            if failures == 1:
                log.warning("%s: the database is unreachable (%s); retrying until it is back",
                            what, type(exc).__name__)
            sleep(backoff)
            backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)
            continue
        if failures:
            log.info("%s: done after the database came back (%d failed tries)", what, failures)
        return result


class Reachability:
    """Since when this process has reached the database without a failure.

    Every database call of the worker's own loops (heartbeat, fetch, sweep) reports its
    failures here. A process has seen the others' heartbeats "while the database was
    reachable" only once it has been reaching it for a whole stall period: before that, an old
    heartbeat may only mean that its owner, like this process, could not write it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._since = clock()  # start-up counts as coming back: the past is unknown
        self._down = False

    def failed(self) -> None:
        self._since = self._clock()
        self._down = True

    def ok(self) -> None:
        """A call succeeded (after failures: the outage is over for this process)."""
        if self._down:
            self._down = False
            log.info("the database is reachable again")

    @property
    def down(self) -> bool:
        return self._down

    def reachable_for(self) -> float:
        """Seconds since the last failure (or start-up); 0 while the last call failed."""
        return 0.0 if self._down else self._clock() - self._since
