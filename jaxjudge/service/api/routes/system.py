"""GET /healthz (liveness, never authenticated) and GET /v1/system (what is running where)."""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata

from fastapi import APIRouter, Request

from jaxjudge.service.api.deps import DispatcherDep, SettingsDep, StoreDep
from jaxjudge.service.schemas import ProtectionStatus, SystemInfo

health_router = APIRouter(tags=["system"])
router = APIRouter(tags=["system"])


@cache
def versions() -> dict[str, str]:
    """Installed versions, read from package metadata (importing jax here would cost seconds
    and memory in the server process, which never runs JAX itself)."""
    out = {"python": platform.python_version()}
    for dist in ("jaxjudge", "jax", "jaxlib", "fastapi", "pydantic", "sqlalchemy", "uvicorn",
                 "procrastinate"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "source checkout" if dist == "jaxjudge" else "not installed"
    return out


@health_router.get("/healthz", summary="Liveness")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/system", response_model=SystemInfo, summary="Versions, pool and sandbox status")
def system(
    request: Request, settings: SettingsDep, store: StoreDep, dispatcher: DispatcherDep
) -> SystemInfo:
    layers: dict[str, dict[str, object]] = request.app.state.protections
    stats = dispatcher.stats()
    return SystemInfo(
        versions=versions(),
        queue=dispatcher.kind,
        workers=stats.workers,
        queue_size=dispatcher.queue_size,
        queue_depth=stats.depth,
        running=stats.running,
        submissions=store.count_by_status(),
        database=store.backend,
        auth_enabled=settings.auth_enabled,
        rate_limit_per_minute=settings.rate_limit_per_minute,
        max_source_bytes=settings.max_source_bytes,
        protections={
            name: ProtectionStatus(
                active=bool(info.get("active")), detail=str(info.get("detail", ""))
            )
            for name, info in layers.items()
        },
        sandbox_required=sorted(settings.required_layers),
        unsafe_allow_missing_sandbox=sorted(settings.allowed_missing_layers),
    )
