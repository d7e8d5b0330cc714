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


class BodySizeLimit:
    """Answer 413 for a request body larger than `max_bytes` before anyone parses it, so a
    huge upload costs neither memory nor JSON-decoding time. Works with and without
    Content-Length."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = error_response(
            413, f"the request body is larger than {self.max_bytes} bytes"
        )
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await too_big(scope, receive, send)
                    return
        seen = 0
        exceeded = False

        async def limited_receive() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    exceeded = True
                    return {"type": "http.disconnect"}
            return message

        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:
                # The app saw a disconnect; replace whatever it answers with the 413.
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await too_big(scope, receive, send)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, limited_receive, guarded_send)


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
    grader: Grader | None = None
    # An API node of the postgres queue never runs a submission, so it needs no sandbox (and
    # its container no loosened profile): the workers check every layer and refuse to grade
    # without them. /v1/system and /metrics then show no layers for this node.
    app.state.protections = {}
    if settings.queue == "local":
        app.state.protections = await asyncio.to_thread(_check_sandbox, settings)
        grader = await asyncio.to_thread(
            Grader,
            warm_pool=settings.workers if settings.warm_pool else False,
            engine=settings.engine,
            report_cache=settings.report_cache_size,
        )
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
