"""Callbacks end to end (issue #15): a real receiver on loopback, a real `jaxjudge serve` with
the local queue, real API nodes and a real `jaxjudge worker` on a real PostgreSQL.

Loopback receivers need JAXJUDGE_WEBHOOK_ALLOW_PRIVATE and _ALLOW_HTTP here; one API node
runs without them to show the refusal. The backoff base is 0.2 s (production: 5 s), so three
attempts take well under a second of waiting.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_fixtures import (
    BROKEN,
    PROBLEM,
    Answer,
    Receiver,
    Server,
    Worker,
    answer_status,
    wait_done,
)
from sqlalchemy import text

from jaxjudge.service.jobs import CALLBACK_QUEUE, defer_callback
from jaxjudge.service.store import NewSubmission, Store
from jaxjudge.service.webhooks import verify_signature

SECRET = "a-webhook-secret-of-at-least-32-bytes!"
MAX_ATTEMPTS = 3
HOOKS: dict[str, Any] = {
    "webhook_allowed_hosts": "127.0.0.1",
    "webhook_secret": SECRET,
    "webhook_allow_private": "true",
    "webhook_allow_http": "true",
    "webhook_max_attempts": MAX_ATTEMPTS,
    "webhook_retry_base_seconds": 0.2,
    "webhook_timeout_seconds": 5,
}
CALLBACK_SECONDS = 30.0  # a guard against hanging, not a performance assertion


# -- helpers -----------------------------------------------------------------------------------
def answers(*codes: int) -> Answer:
    """Answer the k-th request with codes[k] (the last code from then on)."""
    lock = threading.Lock()
    count = [0]

    def answer(handler: Any) -> None:
        with lock:
            code = codes[min(count[0], len(codes) - 1)]
            count[0] += 1
        answer_status(code, b"not now" if code >= 400 else b"")(handler)

    return answer


@pytest.fixture
def receivers() -> Iterator[Any]:
    started: list[Receiver] = []

    def start(*codes: int) -> Receiver:
        r = Receiver(answers(*codes))
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()


def submit_with(client: httpx.Client, callback_url: str | None, source: str = BROKEN
                ) -> httpx.Response:
    body: dict[str, Any] = {"problem_id": PROBLEM, "source": source, "mode": "run"}
    if callback_url is not None:
        body["callback_url"] = callback_url
    return client.post("/v1/submissions", json=body)


def wait_callback(client: httpx.Client, sid: str, state: str) -> dict[str, Any]:
    """Poll the submission until its callback reaches `state`; the whole submission."""
    deadline = time.monotonic() + CALLBACK_SECONDS
    while True:
        body: dict[str, Any] = client.get(f"/v1/submissions/{sid}").json()
        if body["callback"] is not None and body["callback"]["state"] == state:
            return body
        assert time.monotonic() < deadline, f"callback never {state}: {body['callback']}"
        time.sleep(0.1)


def check_signed(receiver: Receiver, sid: str, verdict: str) -> None:
    """Every request the receiver got is the signed notice of `sid`'s grade."""
    assert receiver.requests
    for request in receiver.requests:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert verify_signature(SECRET.encode(), headers["x-jaxjudge-signature"],
                                request["body"])
        assert not verify_signature(b"another-secret" * 3, headers["x-jaxjudge-signature"],
                                    request["body"])
        assert headers["x-jaxjudge-delivery"] == sid  # stable across attempts
        assert headers["x-jaxjudge-event"] == "submission.graded"
        payload = json.loads(request["body"])
        assert (payload["submission_id"], payload["status"], payload["verdict"]) == (
            sid, "done", verdict)
    assert len({r["body"] for r in receiver.requests}) == 1  # the same bytes every time


# -- local queue (SQLite, `jaxjudge serve`) ----------------------------------------------------
@pytest.fixture(scope="module")
def leftover(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Receiver, str, str]]:
    """A graded submission whose callback a previous run left pending (its one failed
    attempt recorded, the next one due): the server must deliver it after start-up."""
    root = tmp_path_factory.mktemp("local")
    url = f"sqlite:///{root}/judge.db"
    receiver = Receiver(answers(204))
    store = Store(url)
    try:
        sid = store.add(NewSubmission(PROBLEM, "run", BROKEN.encode(),
                                      callback_url=receiver.url())).id
        claimed = store.claim(sid)
        assert claimed is not None and claimed.callback_url == receiver.url()
        assert store.finish(sid, verdict="compile_error", score=0, max_score=1,
                            report_json=_report_json(), fence=claimed.attempts)
        assert store.record_callback_attempt(sid, attempt=1, state="pending", status_code=503,
                                             error="receiver answered HTTP 503")
    finally:
        store.close()
    yield receiver, url, sid
    receiver.close()


def _report_json() -> str:
    from jaxjudge import Report, Verdict

    return Report(verdict=Verdict.COMPILE_ERROR, problem=PROBLEM, mode="run",
                  message="m").model_dump_json()


@pytest.fixture(scope="module")
def local(leftover: tuple[Receiver, str, str], tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Server]:
    _, url, _ = leftover
    srv = Server(tmp_path_factory.mktemp("local-srv"), database_url=url, workers=1,
                 warm_pool="false", rate_limit_per_minute=0, **HOOKS)
    yield srv
    srv.stop()


def test_local_pending_callbacks_survive_a_restart(
    local: Server, leftover: tuple[Receiver, str, str]
) -> None:
    receiver, _, sid = leftover
    with local.client() as client:
        body = wait_callback(client, sid, "delivered")
    callback = body["callback"]
    assert callback["attempts"] == 2 and callback["last_status"] == 204
    assert callback["last_error"] is None and callback["delivered_at"] is not None
    check_signed(receiver, sid, "compile_error")
    assert len(receiver.requests) == 1


def test_local_delivers_signed_after_retries(local: Server, receivers: Any) -> None:
    receiver = receivers(500, 500, 200)
    # Honest but unusual: a query string and an explicit port are kept as given.
    url = receiver.url(path="/hooks/jaxjudge?team=7&x=a%20b")
    with local.client() as client:
        r = submit_with(client, url)
        assert r.status_code == 202, r.text
        sid = r.json()["id"]
        assert r.json()["callback"] == {"url": url, "state": "pending", "attempts": 0,
                                        "last_status": None, "last_error": None,
                                        "delivered_at": None}
        assert wait_done(client, sid)["verdict"] == "compile_error"
        body = wait_callback(client, sid, "delivered")
    assert body["callback"]["attempts"] == 3 and body["callback"]["last_status"] == 200
    assert [r["path"] for r in receiver.requests] == ["/hooks/jaxjudge?team=7&x=a%20b"] * 3
    check_signed(receiver, sid, "compile_error")


def test_local_gives_up_after_max_attempts(local: Server, receivers: Any) -> None:
    receiver = receivers(500)
    with local.client() as client:
        sid = submit_with(client, receiver.url()).json()["id"]
        body = wait_callback(client, sid, "failed")
        # Longer than a 4th attempt's backoff (retry_delay(3, 0.2) <= 1.8 s): a delivery
        # that kept going would have been made, and counted, by now.
        time.sleep(2.0)
        again = client.get(f"/v1/submissions/{sid}").json()
    callback = body["callback"]
    assert callback["attempts"] == MAX_ATTEMPTS and callback["last_status"] == 500
    assert "HTTP 500" in callback["last_error"] and callback["delivered_at"] is None
    assert len(receiver.requests) == MAX_ATTEMPTS and again["callback"] == callback


def test_a_refused_callback_is_422_and_nothing_is_stored(local: Server, receivers: Any
                                                         ) -> None:
    receiver = receivers(204)
    with local.client() as client:
        before = client.get("/v1/system").json()["submissions"]
        for url, reason in [
            (receiver.url(host="localhost"), "is not on this server's allow-list"),
            ("http://10.0.0.8/hook", "is not on this server's allow-list"),
            ("http://0.0.0.0/hook", "an unspecified address"),
            ("http://2130706433/hook", "non-standard spelling"),
            (f"http://user:pw@127.0.0.1:{receiver.port}/", "user name or password"),
            ("ftp://127.0.0.1/hook", "must be an https:// URL"),
        ]:
            r = submit_with(client, url)
            assert r.status_code == 422, (url, r.text)
            assert reason in r.json()["message"], (url, r.json())
        too_long = submit_with(client, "http://127.0.0.1/" + "a" * 2048)
        assert too_long.status_code == 422
        assert client.get("/v1/system").json()["submissions"] == before
        # Without a callback nothing changes: no `callback` on the submission.
        plain = submit_with(client, None).json()
        assert plain["callback"] is None
        assert wait_done(client, plain["id"])["callback"] is None
    assert receiver.requests == []


# -- PostgreSQL queue (`jaxjudge worker`) -----------------------------------------------------
@pytest.fixture(scope="module")
def node(db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("node"), queue="postgres", database_url=db,
                 rate_limit_per_minute=0, **HOOKS)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def worker(db: str, node: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("worker"), db, "hooks", **HOOKS)
    try:
        w.wait_ready()
        yield w
    finally:
        w.stop()


def _callback_jobs(store: Store, sid: str) -> list[str]:
    with store.engine.connect() as conn:
        return list(conn.execute(text(
            "SELECT status FROM procrastinate_jobs WHERE queue_name = :q "
            "AND args->>'submission_id' = :id"), {"q": CALLBACK_QUEUE, "id": sid}).scalars())


@pytest.mark.postgres
def test_refusals_on_api_nodes_without_private_or_callbacks(db: str, tmp_path: Path,
                                                            receivers: Any) -> None:
    """An API node whose allow-list names 127.0.0.1 but not allow_private refuses it (and
    localhost by name), before anything is stored; one without an allow-list refuses every
    callback. The private case passes on the node that allows it (the tests below)."""
    receiver = receivers(204)
    strict = Server(tmp_path / "strict", queue="postgres", database_url=db,
                    **{**HOOKS, "webhook_allow_private": "false"})
    off = Server(tmp_path / "off", queue="postgres", database_url=db)
    try:
        with strict.client() as client:
            r = submit_with(client, receiver.url())
            assert r.status_code == 422
            assert r.json()["message"] == (
                "callback_url points to 127.0.0.1, a loopback address; callbacks go to "
                "public addresses")
            r = submit_with(client, f"http://[::ffff:127.0.0.1]:{receiver.port}/")
            assert r.status_code == 422 and "inside an IPv6 address" in r.json()["message"]
        with off.client() as client:
            r = submit_with(client, receiver.url())
            assert r.status_code == 422
            assert r.json()["message"] == "callbacks are not enabled on this server"
            assert submit_with(client, None).status_code == 202  # no callback: accepted
        with Store(db).engine.connect() as conn:
            stored = conn.execute(text(
                "SELECT count(*) FROM submissions WHERE callback_url IS NOT NULL")).scalar_one()
        assert stored == 0 and receiver.requests == []
    finally:
        strict.stop()
        off.stop()


@pytest.mark.postgres
@pytest.mark.usefixtures("worker")
class TestWithAWorker:
    def test_delivered_signed_after_retries(self, node: Server, pg_store: Store,
                                            receivers: Any) -> None:
        receiver = receivers(500, 503, 200)
        with node.client() as client:
            sid = submit_with(client, receiver.url()).json()["id"]
            assert wait_done(client, sid)["verdict"] == "compile_error"
            body = wait_callback(client, sid, "delivered")
            # One process runs a grading and a delivery worker: it counts as one.
            assert client.get("/v1/system").json()["workers"] == 1
        assert body["callback"]["attempts"] == 3 and body["callback"]["last_status"] == 200
        check_signed(receiver, sid, "compile_error")
        assert len(receiver.requests) == 3
        assert _callback_jobs(pg_store, sid) == []  # every attempt's job done and deleted

    def test_failed_after_max_attempts(self, node: Server, pg_store: Store,
                                       receivers: Any) -> None:
        receiver = receivers(500)
        with node.client() as client:
            sid = submit_with(client, receiver.url()).json()["id"]
            body = wait_callback(client, sid, "failed")
        assert body["callback"]["attempts"] == MAX_ATTEMPTS
        assert "HTTP 500" in body["callback"]["last_error"]
        time.sleep(0.6)
        assert len(receiver.requests) == MAX_ATTEMPTS and _callback_jobs(pg_store, sid) == []

    def test_a_fenced_out_late_finish_sends_nothing(self, node: Server, pg_store: Store,
                                                    receivers: Any) -> None:
        """The grader presumed dead finishes late with its old fence: the row does not change
        and no delivery is queued; the live grader's finish queues exactly one."""
        receiver = receivers(204)
        sid = pg_store.add(NewSubmission(PROBLEM, "run", b"x", callback_url=receiver.url())).id
        stale = pg_store.claim(sid, redelivery=True)
        live = pg_store.claim(sid, redelivery=True)
        assert stale is not None and live is not None

        def finish(fence: int) -> bool:
            return pg_store.finish(sid, verdict="accepted", score=1, max_score=1,
                                   report_json=_report_json(), fence=fence,
                                   in_finish=lambda s: defer_callback(s, sid))

        assert not finish(stale.attempts)
        assert _callback_jobs(pg_store, sid) == []
        time.sleep(1.0)  # a worker polls every 0.5 s: a stray job would be delivered by now
        assert receiver.requests == []
        assert finish(live.attempts)
        assert not finish(stale.attempts)  # later still: nothing
        with node.client() as client:
            body = wait_callback(client, sid, "delivered")
        time.sleep(1.0)
        assert body["callback"]["attempts"] == 1 and len(receiver.requests) == 1


@pytest.mark.postgres
@pytest.mark.usefixtures("worker")  # the module's worker: it would anyway, so it must, always
def test_only_its_owner_sees_the_path_and_query_of_a_callback_url(
    db: str, tmp_path: Path
) -> None:
    """A callback URL's path or query often is the receiver's credential (Slack-style hook
    URLs, `?key=`): another token reading or listing the submission must not learn it. The
    token that sent it still sees it whole (honest case)."""
    token_a, token_b = "callback-owner-token-0123456789", "another-token-0123456789ab"
    secret_url = "http://127.0.0.1:9/hooks/T0123/B0456/s3cretPathPart?key=s3cretQuery"
    srv = Server(tmp_path / "authed", queue="postgres", database_url=db, rate_limit_per_minute=0,
                 auth_tokens=f"{token_a},{token_b}", **HOOKS)
    try:
        with srv.client(token_a) as a, srv.client(token_b) as b:
            created = submit_with(a, secret_url)
            assert created.status_code == 202, created.text
            sid = created.json()["id"]
            assert created.json()["callback"]["url"] == secret_url
            assert a.get(f"/v1/submissions/{sid}").json()["callback"]["url"] == secret_url
            mine = [s for s in a.get("/v1/submissions").json()["items"] if s["id"] == sid]
            assert mine[0]["callback"]["url"] == secret_url
            # Port 9 refuses: once every attempt has failed, nothing writes the callback again.
            wait_callback(a, sid, "failed")
            seen_by_b = [
                b.get(f"/v1/submissions/{sid}").text,
                b.get(f"/v1/submissions/{sid}", params={"wait": 0.1}).text,
                b.get("/v1/submissions").text,
            ]
            for text_ in seen_by_b:
                assert sid in text_ and "s3cret" not in text_, text_
            other = b.get(f"/v1/submissions/{sid}").json()["callback"]
            assert other["url"] == "http://127.0.0.1:9/…" and other["state"] == "failed"
            # A failed attempt whose receiver quoted the path back (Express's default 404).
            quoted = "receiver answered HTTP 404: Cannot POST /hooks/T0123/B0456/s3cretPathPart"
            with Store(db).engine.begin() as conn:
                conn.execute(text("UPDATE submissions SET callback_last_status = 404, "
                                  "callback_last_error = :e WHERE id = :id"),
                             {"e": quoted, "id": sid})
            for text_ in (b.get(f"/v1/submissions/{sid}").text, b.get("/v1/submissions").text):
                assert "s3cret" not in text_ and "404" in text_, text_
            assert a.get(f"/v1/submissions/{sid}").json()["callback"]["last_error"] == quoted
    finally:
        srv.stop()
        with Store(db).engine.begin() as conn:
            conn.execute(text("DELETE FROM procrastinate_jobs"))
            conn.execute(text("DELETE FROM submissions"))
