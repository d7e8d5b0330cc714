"""The browser page: the same app serves the single-page front end next to the API.

`/`, `/problems/{id}`, `/submissions` and `/submissions/{id}` answer the page's `index.html`
(the app routes in the browser); `/assets/*` serves its hashed bundle. Everything comes from
`jaxjudge/service/static/`, built from `web/` by `make web` and committed, so an install without
Node serves the page. None of it needs a token: the page holds no data, and every API call it makes
carries the learner's bearer token like any other client.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from jaxjudge.service.dispatch import OWNER_COOKIE, browser_owner, new_browser_id
from jaxjudge.service.store import ANONYMOUS

log = logging.getLogger("jaxjudge.web")
OWNER_COOKIE_SECONDS = 400 * 24 * 3600  # the longest browsers keep a cookie

STATIC_DIR = Path(__file__).resolve().parent / "static"
PAGE_PATHS = ("/", "/problems/{problem_id}", "/submissions", "/submissions/{submission_id}")

# Scripts only from this origin (no inline script, no CDN). Inline style attributes are needed
# by KaTeX's layout and CodeMirror's measured styles; report text is always inserted as text.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

NOT_BUILT = (
    "<!doctype html><html lang='en'><meta charset='utf-8'><title>jaxjudge</title>"
    "<main><h1>The web page is not built</h1><p>jaxjudge/service/static/index.html is missing: run "
    "<code>make web</code>. The API is at <a href='/docs'>/docs</a>.</p></main></html>"
)


class HashedAssets(StaticFiles):
    """Static files whose names carry a content hash, so browsers may cache them for good."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code == 200:
            response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
            response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def install_web(app: FastAPI, static_dir: Path = STATIC_DIR) -> None:
    """Add the page routes and the `/assets` mount to `app` (no authentication on either)."""
    index = static_dir / "index.html"
    if not index.is_file():
        log.warning("%s is missing: GET / explains how to build the page (make web)", index)

    def page(request: Request) -> HTMLResponse:
        # Read per request (1 KB): a `make web` while the server runs takes effect at once.
        try:
            response = HTMLResponse(index.read_text(encoding="utf-8"), headers=PAGE_HEADERS)
        except FileNotFoundError:
            return HTMLResponse(NOT_BUILT, status_code=503, headers=PAGE_HEADERS)
        settings = getattr(request.app.state, "settings", None)
        auth_off = settings is not None and not settings.auth_enabled
        if auth_off and browser_owner(request.cookies.get(OWNER_COOKIE)) == ANONYMOUS:
            # The browser's anonymous identity: its attempts are "mine", their source its own.
            response.set_cookie(OWNER_COOKIE, new_browser_id(), max_age=OWNER_COOKIE_SECONDS,
                                path="/", httponly=True, samesite="strict",
                                secure=request.url.scheme == "https")
        return response

    for path in PAGE_PATHS:
        app.add_api_route(path, page, methods=["GET", "HEAD"], include_in_schema=False)
    assets = static_dir / "assets"
    if assets.is_dir():
        app.mount("/assets", HashedAssets(directory=assets), name="assets")
