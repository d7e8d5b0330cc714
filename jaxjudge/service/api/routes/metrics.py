"""GET /metrics: the Prometheus text exposition (registered only when `metrics_enabled`).

Authenticated like /v1 (bearer token, rate limit) when auth_tokens is set; see the Metrics
section of docs/sandbox-and-deployment.md for the Prometheus scrape configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response

from jaxjudge.service.api.errors import ApiError
from jaxjudge.service.api.routes.system import versions
from jaxjudge.service.config import Settings
from jaxjudge.service.metrics import CONTENT_TYPE, Metrics
from jaxjudge.service.store import Store

router = APIRouter(tags=["system"])


def app_metrics(
    app: FastAPI, settings: Settings, store: Store,
    workers: Callable[[], int | None] | None = None,
) -> Metrics:
    """The app's metrics: grades observed by its queue, gauges read from its store.
    `workers` counts grading workers at scrape time (default: the local pool's size; the
    PostgreSQL queue passes its count of live workers, read within the same 2 s cache)."""
    v = versions()
    metrics = Metrics(info={
        "version": v["jaxjudge"], "jax": v["jax"], "jaxlib": v["jaxlib"],
        "python": v["python"], "database": store.backend,
        "queue": settings.queue,
    })

    def protections() -> Mapping[str, Mapping[str, Any]]:
        return getattr(app.state, "protections", {}) or {}

    metrics.watch_database(store.engine, workers=workers or (lambda: settings.workers),
                           protections=protections)
    return metrics


# A sync endpoint: FastAPI runs it in its thread pool, so a (cached, bounded) database read
# never blocks the event loop.
@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    current: Metrics | None = getattr(request.app.state, "metrics", None)
    if current is None:
        raise ApiError(503, "metrics are not available yet (the server is starting)")
    return Response(current.render(), media_type=CONTENT_TYPE)
