"""API errors and the handlers that render every failure as an `ErrorBody` JSON object."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from jaxjudge.service.outage import database_unreachable
from jaxjudge.service.schemas import ErrorBody

log = logging.getLogger("jaxjudge.api")

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}
# Retry-After of a 503 `database_unavailable`: a PostgreSQL restart or failover takes seconds.
DATABASE_RETRY_AFTER = 5


class ApiError(StarletteHTTPException):
    """An error with a specific machine-readable code (e.g. `queue_full`)."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status_code=status_code, detail=message, headers=headers)
        self.code = code or _CODES.get(status_code, "error")


def error_response(
    status_code: int,
    message: str,
    *,
    code: str | None = None,
    headers: dict[str, str] | None = None,
    details: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    body = ErrorBody(
        error=code or _CODES.get(status_code, "error"), message=message, details=details
    )
    return JSONResponse(
        body.model_dump(exclude_none=True), status_code=status_code, headers=headers
    )


def _clean_errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors without the offending input (it can be a 64 KiB source, or bytes)."""
    out = []
    for e in errors:
        loc = [str(p) for p in e.get("loc", ())]
        out.append({"loc": loc, "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))})
    return out


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    code = getattr(exc, "code", None)
    # FastAPI turns a body it cannot parse (e.g. invalid UTF-8 inside JSON) into a 400; for
    # this API every unreadable body is an invalid request.
    if status == 400 and isinstance(exc.__cause__, ValueError):
        status, code = 422, "invalid_request"
        if isinstance(exc.__cause__, UnicodeDecodeError):
            message = "the request body is not valid UTF-8 (JSON text must be UTF-8)"
        else:
            message = "the request body could not be parsed as JSON"
    return error_response(status, message, code=code, headers=getattr(exc, "headers", None))


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    details = _clean_errors(exc.errors())
    first = details[0] if details else {"loc": [], "msg": "invalid request"}
    where = ".".join(p for p in first["loc"] if p != "body") or "body"
    return error_response(
        422, f"invalid request: {where}: {first['msg']}", details=details
    )


async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal server error (logged); please retry or report it")


async def _database_error(request: Request, exc: Exception) -> JSONResponse:
    """The database could not be reached (restarting, failing over, a network cut): nothing
    is wrong with the request, so 503 and a Retry-After, not 500. A submission's row and its
    job are one transaction, so a POST stored both or neither (if the answer was lost after
    the commit, its Idempotency-Key makes the retry return that submission)."""
    if not database_unreachable(exc):
        return await _unhandled(request, exc)
    log.warning("database unreachable on %s %s: %s", request.method, request.url.path,
                type(exc.__cause__ or exc).__name__)
    return error_response(
        503, "the database is unreachable (restarting or failing over); retry after Retry-After "
        "seconds",
        code="database_unavailable", headers={"Retry-After": str(DATABASE_RETRY_AFTER)})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(DBAPIError, _database_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unhandled)
