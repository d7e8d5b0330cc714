"""My attempts (#23 item 3) through the real API: a submission's source goes back to its owner
only (the bearer token that sent it, or, with auth off, the browser identity cookie the page
issues), never to another owner or to the shared "anonymous" one; `mine=true` lists one's own.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from api_fixtures import BROKEN, Server, submit, wait_done

from jaxjudge.service.dispatch import OWNER_COOKIE


def test_a_token_sees_its_own_source_and_no_other_owner_does(tmp_path: Path) -> None:
    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/a.db", workers=1,
                 auth_tokens="tok-a, tok-b", rate_limit_per_minute=100)
    try:
        with srv.client("tok-a") as a, srv.client("tok-b") as b:
            source = BROKEN + "# alice's secret\n"
            made = submit(a, source).json()
            done = wait_done(a, made["id"])
            assert done["mine"] is True and done["source"] == source
            theirs = b.get(f"/v1/submissions/{made['id']}").json()
            assert theirs["mine"] is False and theirs["source"] is None
            assert "alice's secret" not in b.get(f"/v1/submissions/{made['id']}").text
            assert "alice's secret" not in b.get("/v1/submissions").text
            # mine=true: a's list holds it, b's does not; listings never carry a source.
            mine_a = a.get("/v1/submissions", params={"mine": "true"}).json()["items"]
            assert [s["id"] for s in mine_a] == [made["id"]] and mine_a[0]["source"] is None
            assert b.get("/v1/submissions", params={"mine": "true"}).json()["items"] == []
            assert [s["mine"] for s in b.get("/v1/submissions").json()["items"]] == [False]
    finally:
        srv.stop()


def test_with_auth_off_the_browser_cookie_is_the_owner(tmp_path: Path) -> None:
    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/b.db", workers=1)
    try:
        with srv.client() as one, srv.client() as two, srv.client() as bare:
            for browser in (one, two):  # loading the page issues each browser its identity
                page = browser.get("/")
                assert page.status_code == 200 and OWNER_COOKIE in page.cookies
                cookie = page.headers["set-cookie"].lower()
                assert "httponly" in cookie and "samesite=strict" in cookie
            assert one.cookies[OWNER_COOKIE] != two.cookies[OWNER_COOKIE]
            assert one.get("/").headers.get("set-cookie") is None  # kept, not reissued
            source = BROKEN + "# one's draft\n"
            made = submit(one, source).json()
            assert wait_done(one, made["id"])["source"] == source
            for other in (two, bare):  # another browser, and a client with no identity
                seen = other.get(f"/v1/submissions/{made['id']}").json()
                assert seen["source"] is None and seen["mine"] is False
            # A client without the cookie is "anonymous": it owns nothing, sees no source,
            # even of what it submitted itself (every cookieless client shares that name).
            anon = submit(bare, BROKEN).json()
            assert wait_done(bare, anon["id"])["source"] is None
            assert bare.get("/v1/submissions", params={"mine": "true"}).json()["items"] == []
            # A forged, malformed cookie is no identity either.
            with httpx.Client(base_url=srv.base_url, cookies={OWNER_COOKIE: "x"}) as forged:
                assert forged.get(f"/v1/submissions/{anon['id']}").json()["source"] is None
            listed = one.get("/v1/submissions", params={"mine": "true"}).json()["items"]
            assert [s["id"] for s in listed] == [made["id"]]
    finally:
        srv.stop()
