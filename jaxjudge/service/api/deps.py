"""Request dependencies: typed access to the app's singletons, and bearer-token auth."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from jaxjudge.service.api.errors import ApiError
from jaxjudge.service.config import Settings
from jaxjudge.service.dispatch import OWNER_COOKIE, Dispatcher, browser_owner, owner_of
from jaxjudge.service.ratelimit import RateLimiter
from jaxjudge.service.store import Store


def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def get_store(request: Request) -> Store:
    return request.app.state.store  # type: ignore[no-any-return]


def get_dispatcher(request: Request) -> Dispatcher:
    return request.app.state.dispatcher  # type: ignore[no-any-return]


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
DispatcherDep = Annotated[Dispatcher, Depends(get_dispatcher)]

_bearer = HTTPBearer(auto_error=False, description="Required only when auth_tokens is set.")


def _known_token(settings: Settings, token: str) -> bool:
    # Compare against every token (no early exit) in constant time per token.
    found = False
    for known in settings.auth_tokens:
        found |= hmac.compare_digest(known.encode(), token.encode())
    return found


async def require_token(
    request: Request,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """With auth on: 401 without a valid bearer token, 429 when the token's rate is spent."""
    if not settings.auth_enabled:
        return
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ApiError(401, "missing bearer token (Authorization: Bearer <token>)",
                       headers=challenge)
    if not _known_token(settings, credentials.credentials):
        raise ApiError(401, "invalid bearer token", headers=challenge)
    limiter: RateLimiter = request.app.state.limiter
    wait = limiter.acquire(credentials.credentials)
    if wait > 0:
        raise ApiError(
            429,
            f"rate limit of {settings.rate_limit_per_minute} requests per minute exceeded",
            headers={"Retry-After": limiter.retry_after_header(wait)},
        )


AuthDep = Depends(require_token)


def get_owner(
    request: Request,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """Whose submission this is (fairness, "mine", who may read its source): a hash of the
    (already verified) bearer token with auth on; with auth off, the browser identity cookie
    the page issues, else "anonymous" (shared: never shown a source)."""
    if not settings.auth_enabled:
        return browser_owner(request.cookies.get(OWNER_COOKIE))
    if credentials is None:
        return owner_of(None)
    return owner_of(credentials.credentials)


OwnerDep = Annotated[str, Depends(get_owner)]
