"""The app factory: `create_app(settings)` wires routers, error handlers and the worker pool.

Run it with `jaxjudge serve`, or `uvicorn --factory jaxjudge.service.main:create_app` (settings from
the JAXJUDGE_* environment).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from sqlalchemy.engine import make_url
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jaxjudge import Grader, ProblemError, list_problems
from jaxjudge.grading.exposure import require_hidden
from jaxjudge.grading.processes import ProcessGrader, grader_for
from jaxjudge.isolation.sandbox import SandboxUnavailable, require_layers
from jaxjudge.service.api.deps import AuthDep
from jaxjudge.service.api.errors import error_response, install_error_handlers
from jaxjudge.service.api.routes import metrics, problems, submissions, system
from jaxjudge.service.callbacks import CallbackConfig, LocalCallbacks
from jaxjudge.service.config import Settings
from jaxjudge.service.dispatch import Dispatcher, LocalDispatcher, PostgresDispatcher
from jaxjudge.service.queue import GradingQueue, grading_function
from jaxjudge.service.ratelimit import RateLimiter
from jaxjudge.service.store import Store
from jaxjudge.service.web import install_web

log = logging.getLogger("jaxjudge.app")

API_VERSION = "v1"


# The most of an over-limit body read and thrown away so that a client that sends its whole
# body before it reads (urllib, requests, curl) sees the 413 instead of a reset; past it the
# connection is closed (Go's net/http and nginx's lingering close bound theirs too).
DRAIN_BYTES = 64 * 1024 * 1024


class BodySizeLimit:
    """Answer 413 for a request body larger than `max_bytes` before anyone parses it, so a
    huge upload costs neither memory nor JSON-decoding time. Works with and without
    Content-Length.

    The refused body is read and discarded first (up to `drain_bytes`, then the answer closes
    the connection): closing with unread bytes in the socket makes the kernel reset it, and a
    client still writing its body then never reads the answer. A client that asked
    `Expect: 100-continue` has sent nothing yet, so it is answered (and closed) at once."""

    def __init__(self, app: ASGIApp, max_bytes: int, drain_bytes: int = DRAIN_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.drain_bytes = max(drain_bytes, max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        declared = _content_length(headers.get(b"content-length"))
        if declared is not None and declared <= self.max_bytes:
            await self.app(scope, receive, send)  # the server delivers no more than declared
            return
        if declared is not None:
            waiting = headers.get(b"expect", b"").lower() == b"100-continue"
            drained = not waiting and declared <= self.drain_bytes \
                and await self._drain(receive, 0)
            await self._refuse(scope, receive, send, close=not drained)
            return
        # No Content-Length (chunked): hold the body, at most max_bytes, before the app runs.
        held: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left; nobody to answer
            held.append(message)
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                drained = message.get("more_body", False) is False \
                    or await self._drain(receive, seen)
                await self._refuse(scope, receive, send, close=not drained)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return held.pop(0) if held else await receive()

        await self.app(scope, replay, send)

    async def _drain(self, receive: Receive, seen: int) -> bool:
        """Read and discard the rest of the body; False if it ends early or passes the bound."""
        while seen <= self.drain_bytes:
            message = await receive()
            if message["type"] != "http.request":
                return False
            seen += len(message.get("body", b""))
            if not message.get("more_body", False):
                return seen <= self.drain_bytes
        return False

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, close: bool) -> None:
        headers = {"connection": "close"} if close else None
        message = f"the request body is larger than {self.max_bytes} bytes"
        await error_response(413, message, headers=headers)(scope, receive, send)


def _content_length(value: bytes | None) -> int | None:
    """The declared length, or None when absent (the server has already refused a bad one)."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _check_sandbox(settings: Settings) -> dict[str, dict[str, object]]:
    """Fail closed: every sandbox layer must be active, from now on for every grade too, unless
    the operator named it in the unsafe opt-out, which is logged at every start."""
    allowed = settings.allowed_missing_layers
    try:
        layers = require_layers(settings.required_layers, allowed)
        _require_hidden_problems()
    except SandboxUnavailable as exc:
        log.error("%s", exc)
        raise
    if allowed:
        missing = sorted(n for n, info in layers.items() if not info.get("active"))
        log.warning(
            "UNSAFE: JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=%s lets this service grade untrusted "
            "code without sandbox layers; missing now: %s",
            settings.unsafe_allow_missing_sandbox,
            ", ".join(f"{n} ({layers[n].get('detail', '')})" for n in missing) or "none",
        )
    return layers


def _require_hidden_problems() -> None:
    """Refuse to grade any problem whose hidden tests every sandboxed run could read."""
    exposed = []
    for problem in list_problems():
        try:
            require_hidden(problem)
        except ProblemError as exc:
            exposed.append(str(exc))
    if exposed:
        raise SandboxUnavailable("refusing to grade: " + "; ".join(exposed))


def _private_sqlite(database_url: str) -> None:
    """Keep a SQLite database away from every other uid, sandbox uids included (they hold
    sources and reports): a directory we create is 0700, the file and its WAL/SHM/journal
    siblings 0600. An existing directory is the operator's and is left as it is."""
    url = make_url(database_url)
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:") \
            or database.startswith("file:"):
        return
    path = Path(database).expanduser()
    missing = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
    for d in reversed(missing):
        d.mkdir(mode=0o700)
        os.chmod(d, 0o700)  # mkdir's mode is filtered by the umask
    with contextlib.suppress(FileExistsError):  # created private, before SQLite opens it
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for f in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        try:
            os.chmod(f, 0o600)
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("cannot make %s private (0600): %s", f, exc)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the store and the dispatcher; stop them on shutdown.

    Local queue: a Grader and the in-process pool, which re-queues unfinished submissions.
    PostgreSQL queue: this node only stores, enqueues and waits (no Grader, no recover():
    `jaxjudge worker` processes grade, and a running row may be theirs).
    """
    settings: Settings = app.state.settings
    grader: Grader | ProcessGrader | None = None
    # An API node of the postgres queue never runs a submission, so it needs no sandbox (and
    # its container no loosened profile): the workers check every layer and refuse to grade
    # without them. /v1/system and /metrics then show no layers for this node.
    app.state.protections = {}
    if settings.queue == "local":
        app.state.protections = await asyncio.to_thread(_check_sandbox, settings)
        grader = await asyncio.to_thread(
            grader_for, settings.workers, warm_pool=settings.warm_pool, engine=settings.engine,
            report_cache=settings.report_cache_size)
    await asyncio.to_thread(_private_sqlite, settings.database_url)
    store = await asyncio.to_thread(Store, settings.database_url)
    dispatcher: Dispatcher
    observed: metrics.Metrics | None = None
    if grader is not None:
        if settings.metrics_enabled:
            observed = metrics.app_metrics(app, settings, store)
        callbacks = LocalCallbacks(store, CallbackConfig.from_settings(settings),
                                   settings.webhook_concurrency)
        queue = GradingQueue(store, workers=settings.workers, queue_size=settings.queue_size,
                             grade_fn=grading_function(grader),
                             on_graded=observed.observe_report if observed else None,
                             on_callback=callbacks.graded)
        dispatcher = LocalDispatcher(store, queue, callbacks)
    else:
        postgres = PostgresDispatcher(store, settings)
        if settings.metrics_enabled:  # grades are counted by the workers that make them
            observed = metrics.app_metrics(app, settings, store,
                                           workers=postgres.live_workers)
        dispatcher = postgres
    app.state.metrics = observed
    await dispatcher.start()
    app.state.store = store
    app.state.dispatcher = dispatcher
    if isinstance(dispatcher, LocalDispatcher):
        log.info(
            "jaxjudge: %d workers, queue %d, %s database, %d submissions recovered",
            settings.workers,
            settings.queue_size,
            store.backend,
            dispatcher.recovered,
        )
    else:
        log.info("jaxjudge: API node of the postgres queue (bound %d); grading by "
                 "`jaxjudge worker`", settings.queue_size)
    try:
        yield
    finally:
        await dispatcher.stop()
        store.close()
        if grader is not None:
            await asyncio.to_thread(grader.close)


def create_app(settings: Settings | None = None) -> FastAPI:
    """A new app. Nothing starts until the ASGI lifespan does (so this is cheap and pure)."""
    settings = settings or Settings()
    app = FastAPI(
        title="jaxjudge",
        summary="An online judge for JAX programming problems.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url="/docs",
        openapi_url="/openapi.json",
    )
    app.state.settings = settings
    app.state.limiter = RateLimiter(settings.rate_limit_per_minute)
    install_error_handlers(app)
    # JSON escapes can take 6 bytes per source byte; leave room for the other fields.
    app.add_middleware(BodySizeLimit, max_bytes=6 * settings.max_source_bytes + 16 * 1024)
    app.include_router(system.health_router)
    if settings.metrics_enabled:
        app.include_router(metrics.router, dependencies=[AuthDep])
    for module in (problems, submissions, system):
        app.include_router(module.router, prefix=f"/{API_VERSION}", dependencies=[AuthDep])
    install_web(app)
    return app
