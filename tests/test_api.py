"""The HTTP service end to end: a real uvicorn server in a subprocess, a real SQLite file, real
grades (mode "run", tiny submissions so the suite stays short)."""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from api_fixtures import (
    BROKEN,
    PROBLEM,
    REFERENCE,
    Server,
    free_port,
    service_env,
    submit,
    wait_done,
)
from pydantic import ValidationError

from jaxjudge import load_problem, protections
from jaxjudge.isolation.sandbox import LAYERS
from jaxjudge.service.config import Settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("api")
    srv = Server(
        workdir,
        database_url=f"sqlite:///{workdir}/judge.db",
        workers=2,
        queue_size=50,
        wait_timeout_seconds=240,
    )
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def assert_error(r: httpx.Response, status: int, code: str | None = None) -> dict[str, str]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert isinstance(body["message"], str) and body["message"]
    if code:
        assert body["error"] == code
    return body  # type: ignore[no-any-return]


# -- service basics -----------------------------------------------------------------------------
def test_healthz_openapi_and_docs(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    assert {"/v1/submissions", "/v1/submissions/{submission_id}", "/v1/problems",
            "/v1/problems/{problem_id}", "/v1/system", "/healthz"} <= set(spec["paths"])
    schemas = set(spec["components"]["schemas"])
    assert {"SubmissionCreate", "SubmissionPublic", "SubmissionList", "ProblemSummary",
            "ProblemPublic", "SystemInfo", "ErrorBody"} <= schemas
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_system_info(client: httpx.Client) -> None:
    info = client.get("/v1/system").json()
    assert info["workers"] == 2 and info["queue_size"] == 50
    assert info["database"] == "sqlite" and info["auth_enabled"] is False
    assert {"python", "fastapi", "jax"} <= set(info["versions"])
    assert info["protections"], "jaxjudge.protections() reported no layers"
    for layer in info["protections"].values():
        assert isinstance(layer["active"], bool)
    assert set(info["submissions"]) == {"queued", "running", "done"}


def test_problems_list_and_detail_never_leak_hidden_tests(client: httpx.Client) -> None:
    listed = client.get("/v1/problems").json()
    assert PROBLEM in [p["id"] for p in listed]
    r = client.get(f"/v1/problems/{PROBLEM}")
    assert r.status_code == 200
    p = r.json()
    problem = load_problem(PROBLEM)
    assert p["title"] == problem.title and p["statement"] == problem.statement
    assert p["starter"] == problem.starter and p["difficulty"] == problem.difficulty
    assert [q["name"] for q in p["requirements"]] == [q.name for q in problem.requirements]
    assert all(q["description"] for q in p["requirements"])
    assert p["limits"]["wall_seconds"] == problem.limits.wall_seconds
    assert p["constraints"]["text"]
    assert p["tolerance"] == {"rtol": problem.tolerance.rtol, "atol": problem.tolerance.atol,
                              "outputs": {}}
    cases = problem.cases("submit")
    visible = [c.name for c in cases if c.visible]
    hidden = [c.name for c in cases if not c.visible]
    assert [e["name"] for e in p["examples"]] == visible and visible
    assert all("inputs" in e and "expected" in e for e in p["examples"])
    assert hidden and not any(f'"{name}"' in r.text for name in hidden)
    assert "reference" not in p


def test_unknown_problem_is_404(client: httpx.Client) -> None:
    assert_error(client.get("/v1/problems/no-such-problem"), 404, "not_found")
    assert_error(client.get("/v1/problems/..%2Fetc"), 404)
    r = client.post("/v1/submissions", json={"problem_id": "no-such-problem", "source": BROKEN})
    assert_error(r, 404, "not_found")


# -- submitting ---------------------------------------------------------------------------------
def test_submit_then_poll(client: httpx.Client) -> None:
    r = submit(client, BROKEN)
    assert r.status_code == 202, r.text
    sub = r.json()
    assert sub["status"] == "queued" and sub["problem_id"] == PROBLEM and sub["mode"] == "run"
    assert sub["verdict"] is None and sub["report"] is None
    assert r.headers["location"] == f"/v1/submissions/{sub['id']}"
    done = wait_done(client, sub["id"])
    assert done["verdict"] == "compile_error" and done["attempts"] == 1
    report = done["report"]
    assert report["verdict"] == "compile_error" and report["mode"] == "run"
    assert report["problem"] == PROBLEM and "total" in report["timings"]
    assert done["started_at"] and done["finished_at"]


def test_wait_mode_grades_the_reference(client: httpx.Client) -> None:
    r = submit(client, REFERENCE, wait="true")
    assert r.status_code == 200, r.text
    done = r.json()
    assert done["status"] == "done" and done["verdict"] == "accepted", done["report"]["message"]
    report = done["report"]
    assert report["tests"] and all(t["visible"] for t in report["tests"])
    assert {q["name"] for q in report["requirements"]} == {
        q.name for q in load_problem(PROBLEM).requirements
    }
    assert r.headers["location"] == f"/v1/submissions/{done['id']}"


def test_get_long_polls_until_the_grade_is_stored(client: httpx.Client) -> None:
    """GET ?wait=S holds the request until the submission is done (no polling needed), at
    most S seconds (and the server's bound); a done submission answers at once."""
    source = f"{REFERENCE}\nimport time  # long poll {time.time_ns()}\ntime.sleep(1.5)\n"
    sid = submit(client, source).json()["id"]
    short = client.get(f"/v1/submissions/{sid}", params={"wait": 0.3})
    assert short.status_code == 200 and short.json()["status"] != "done"
    asked = time.monotonic()
    held = client.get(f"/v1/submissions/{sid}", params={"wait": 25}, timeout=40)
    assert held.status_code == 200
    assert held.json()["status"] == "done" and held.json()["verdict"] == "accepted"
    assert time.monotonic() - asked < 25  # answered when stored, not at the bound
    asked = time.monotonic()
    again = client.get(f"/v1/submissions/{sid}", params={"wait": 25}, timeout=40)
    assert again.json()["status"] == "done" and time.monotonic() - asked < 5
    assert_error(client.get(f"/v1/submissions/{sid}", params={"wait": 601}), 422)
    assert_error(client.get(f"/v1/submissions/{sid}", params={"wait": "soon"}), 422)


def test_idempotency_key_makes_a_retried_post_the_same_submission(client: httpx.Client) -> None:
    """A POST retried with its Idempotency-Key (its answer was lost) returns the submission
    the first one made; the same key with another body is refused; racing duplicates make
    one submission; a new key (or none) is a new submission, as before."""
    key = f"retry-{time.time_ns()}"
    body = {"problem_id": PROBLEM, "source": BROKEN, "mode": "run"}
    first = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 202, first.text
    again = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": key})
    assert again.status_code in (200, 202) and again.json()["id"] == first.json()["id"]
    assert again.headers["location"] == first.headers["location"]
    other = client.post("/v1/submissions", json={**body, "mode": "submit"},
                        headers={"Idempotency-Key": key})
    assert_error(other, 422)
    assert first.json()["id"] in other.json()["message"]
    assert_error(client.post("/v1/submissions", json=body,
                             headers={"Idempotency-Key": "has space"}), 422)
    fresh = client.post("/v1/submissions", json=body, headers={"Idempotency-Key": key + "-2"})
    plain = client.post("/v1/submissions", json=body)
    assert len({first.json()["id"], fresh.json()["id"], plain.json()["id"]}) == 3

    race_key = f"race-{time.time_ns()}"
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(
            lambda _: client.post("/v1/submissions", json=body,
                                  headers={"Idempotency-Key": race_key}),
            range(8),
        ))
    assert all(a.status_code in (200, 202) for a in answers), [a.text for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1


def test_source_b64_is_accepted(client: httpx.Client) -> None:
    b64 = base64.b64encode(BROKEN.encode()).decode()
    r = client.post("/v1/submissions",
                    json={"problem_id": PROBLEM, "source_b64": b64, "mode": "run"})
    assert r.status_code == 202, r.text
    assert r.json()["source_bytes"] == len(BROKEN)


def test_invalid_bodies_are_422(client: httpx.Client) -> None:
    url = "/v1/submissions"
    for body in (
        {"source": BROKEN},  # no problem_id
        {"problem_id": PROBLEM},  # no source
        {"problem_id": PROBLEM, "source": BROKEN, "mode": "fast"},
        {"problem_id": PROBLEM, "source": BROKEN, "source_b64": "eA=="},
        {"problem_id": PROBLEM, "source": BROKEN, "unexpected": 1},
        {"problem_id": PROBLEM, "source_b64": "not base64!"},
        {"problem_id": PROBLEM, "source_b64": base64.b64encode(b"x = '\xff'\n").decode()},
        [1, 2, 3],
    ):
        assert_error(client.post(url, json=body), 422, "invalid_request")
    details = client.post(url, json={"source": BROKEN}).json()["details"]
    assert details[0]["loc"] == ["body", "problem_id"]
    headers = {"content-type": "application/json"}
    assert_error(client.post(url, content=b"{not json", headers=headers), 422)


def test_non_utf8_bodies_are_422(client: httpx.Client) -> None:
    headers = {"content-type": "application/json"}
    raw = b'{"problem_id": "' + PROBLEM.encode() + b'", "source": "x = \'\xff\xfe\'"}'
    body = assert_error(client.post("/v1/submissions", content=raw, headers=headers), 422)
    assert "UTF-8" in body["message"]
    # A JSON escape can smuggle a lone surrogate into a str: not encodable, so not gradable.
    escaped = b'{"problem_id": "' + PROBLEM.encode() + b'", "source": "x = \'\\ud800\'"}'
    assert_error(client.post("/v1/submissions", content=escaped, headers=headers), 422)


def test_oversized_sources_are_413(client: httpx.Client) -> None:
    big = "#" * (64 * 1024 + 1)
    body = assert_error(submit(client, big), 413, "payload_too_large")
    assert "65536" in body["message"]
    multibyte = "é" * (32 * 1024 + 1)  # 32 Ki characters, 64 KiB + 2 bytes in UTF-8
    assert_error(submit(client, multibyte), 413)
    exactly = "#" * (64 * 1024 - 1) + "\n"
    assert submit(client, exactly).status_code == 202
    huge = b"{" + b" " * (2 * 1024 * 1024) + b"}"  # refused before parsing
    headers = {"content-type": "application/json"}
    assert_error(client.post("/v1/submissions", content=huge, headers=headers), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        for _ in range(64):
            yield b" " * 32 * 1024

    assert_error(client.post("/v1/submissions", content=chunks(), headers=headers), 413)
    # urllib writes the whole body before it reads, and asks to close: the 413 still arrives.
    url = str(client.base_url).rstrip("/") + "/v1/submissions"
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(urllib.request.Request(url, data=huge, headers=headers))
    assert caught.value.code == 413
    assert "the request body is larger than" in caught.value.read().decode()


def test_unknown_submission_is_404(client: httpx.Client) -> None:
    assert_error(client.get("/v1/submissions/0123456789abcdef"), 404, "not_found")
    assert_error(client.get("/v1/submissions/" + "a" * 300), 404)


# -- listing ------------------------------------------------------------------------------------
def test_listing_filters_and_cursor(client: httpx.Client) -> None:
    ids = [submit(client, BROKEN).json()["id"] for _ in range(3)]
    for sid in ids:
        wait_done(client, sid)
    everything: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/submissions", params=params).json()
        assert len(page["items"]) <= 2
        assert all(item["report"] is None for item in page["items"])
        everything += [item["id"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(everything) == len(set(everything))
    assert everything[:3] == ids[::-1]  # newest first
    ce = client.get("/v1/submissions", params={"verdict": "compile_error", "limit": 100}).json()
    assert set(ids) <= {i["id"] for i in ce["items"]}
    assert all(i["verdict"] == "compile_error" for i in ce["items"])
    acc = client.get("/v1/submissions", params={"verdict": "accepted", "limit": 100}).json()
    assert not set(ids) & {i["id"] for i in acc["items"]}
    other = client.get("/v1/submissions", params={"problem_id": "other-problem"}).json()
    assert other == {"items": [], "next_cursor": None}
    mine = client.get("/v1/submissions", params={"problem_id": PROBLEM, "limit": 100000})
    assert mine.status_code == 200 and 3 <= len(mine.json()["items"]) <= 100
    assert_error(client.get("/v1/submissions", params={"cursor": "garbage"}), 422)
    assert_error(client.get("/v1/submissions", params={"verdict": "great"}), 422)
    assert_error(client.get("/v1/submissions", params={"limit": 0}), 422)


# -- a saturated pool ---------------------------------------------------------------------------
def test_full_queue_is_503_and_the_api_stays_responsive(tmp_path: Path) -> None:
    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/q.db", workers=1, queue_size=1)
    slow = "import time\ntime.sleep(60)\n"
    try:
        with srv.client() as c:
            statuses = []
            for _ in range(6):
                r = submit(c, slow)
                statuses.append(r.status_code)
                if r.status_code == 503:
                    body = assert_error(r, 503, "queue_full")
                    assert "full" in body["message"]
                    assert int(r.headers["retry-after"]) >= 1
            assert statuses[0] == 202 and 503 in statuses, statuses
            accepted = statuses.count(202)
            assert accepted <= 2  # one running, one waiting
            # Every worker is busy with a sleeping submission, and yet:
            assert c.get("/healthz").status_code == 200
            info = c.get("/v1/system").json()
            assert info["running"] + info["queue_depth"] == accepted
            listed = c.get("/v1/submissions").json()["items"]
            assert len(listed) == accepted  # 503s left no rows behind
    finally:
        srv.kill()


# -- authentication -----------------------------------------------------------------------------
def test_bearer_auth_and_rate_limit(tmp_path: Path) -> None:
    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/a.db", workers=1,
                 auth_tokens="tok-a, tok-b", rate_limit_per_minute=3, wait_timeout_seconds=0.5)
    try:
        with srv.client() as anon, srv.client("tok-a") as a, srv.client("tok-b") as b:
            assert anon.get("/healthz").status_code == 200
            assert anon.get("/openapi.json").status_code == 200
            r = assert_error(anon.get("/v1/problems"), 401, "unauthorized")
            assert "token" in r["message"]
            assert anon.get("/v1/system").headers["www-authenticate"] == "Bearer"
            with srv.client("wrong") as wrong:
                assert_error(wrong.get("/v1/problems"), 401)
            assert_error(anon.post("/v1/submissions", json={}), 401)
            for _ in range(3):
                assert a.get("/v1/problems").status_code == 200
            limited = a.get("/v1/system")
            assert_error(limited, 429, "rate_limited")
            assert int(limited.headers["retry-after"]) >= 1
            assert b.get("/v1/system").json()["auth_enabled"] is True  # per-token buckets
            # wait=true gives up after wait_timeout_seconds and answers 202, still queued.
            slow = submit(b, "import time\ntime.sleep(60)\n", wait="true")
            assert slow.status_code == 202, slow.text
            assert slow.json()["status"] in ("queued", "running")
            assert slow.headers["location"].endswith(slow.json()["id"])
    finally:
        srv.stop()


# -- configuration ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        {"workers": 0},
        {"port": 70000},
        {"queue_size": 0},
        {"max_source_bytes": 0},
        {"wait_timeout_seconds": -1},
        {"rate_limit_per_minute": -5},
        {"database_url": "mysql://u@h/db"},
        {"database_url": "not a url"},
        {"log_level": "loud"},
        {"auth_tokens": "good,has space"},
    ],
)
def test_settings_fail_fast(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Settings(**bad)  # type: ignore[arg-type]


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXJUDGE_AUTH_TOKENS", " tok-one,tok-two ,, ")
    monkeypatch.setenv("JAXJUDGE_WORKERS", "3")
    monkeypatch.setenv("JAXJUDGE_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("JAXJUDGE_DATABASE_URL", "postgresql://u:secret@db.example/judge")
    s = Settings()
    assert s.auth_tokens == ["tok-one", "tok-two"] and s.auth_enabled
    assert s.workers == 3 and s.log_level == "debug"
    assert s.database_url == "postgresql+psycopg://u:secret@db.example/judge"
    assert "secret" not in repr(s) and "tok-" not in repr(s)
    assert not Settings(auth_tokens="").auth_enabled  # type: ignore[arg-type]


def test_serve_refuses_bad_settings(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "jaxjudge.cli.service", "serve", "--workers", "0"],
        cwd=tmp_path,
        env=service_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "workers" in proc.stderr
    assert not (tmp_path / "var").exists()  # failed before touching the database


def test_sandbox_settings() -> None:
    assert Settings().required_layers == set(LAYERS)  # fail closed by default
    assert Settings().allowed_missing_layers == set()
    with pytest.raises(ValidationError, match="JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=cgroup"):
        Settings(sandbox_require="bwrap,seccomp,rlimits,uid_pool")
    with pytest.raises(ValidationError, match="unknown sandbox layers"):
        Settings(unsafe_allow_missing_sandbox="bwrap,firewall")
    assert Settings(unsafe_allow_missing_sandbox="1").allowed_missing_layers == set(LAYERS)
    assert Settings(unsafe_allow_missing_sandbox=" cgroup, uid_pool").allowed_missing_layers \
        == {"cgroup", "uid_pool"}


def test_serve_refuses_to_grade_without_a_sandbox_layer(tmp_path: Path) -> None:
    """A layer is missing (forced off here; on a fresh machine: no bwrap, or not root): the
    service does not start, and says which layer, why it matters and both ways out."""
    proc = subprocess.run(
        [sys.executable, "-m", "jaxjudge.cli.service", "serve", "--port", str(free_port())],
        cwd=tmp_path,
        env=service_env(sandbox_disable="bwrap"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    err = proc.stderr
    assert "refusing to grade untrusted code" in err and "bwrap" in err
    assert "hidden expected outputs" in err  # why it matters
    assert "root" in err and "JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=bwrap" in err  # ways out
    assert not (tmp_path / "var").exists()  # refused before opening the database
    with pytest.raises(RuntimeError, match="refusing to grade untrusted code"):  # the factory too
        Server(tmp_path / "factory", sandbox_disable="seccomp", workers=1)


OPEN_DB = """
import sys
try:
    open({path!r}, "rb").read(16)
    outcome = "READ THE DATABASE"
except OSError as exc:
    outcome = type(exc).__name__
def solve(params, x, y):
    raise ValueError("OPEN " + outcome)
"""


def test_unsafe_opt_out_is_explicit_shown_and_the_database_stays_private() -> None:
    """With bwrap forced off and explicitly allowed to be missing, the service grades, says so
    in /v1/system and in its log, and a submission (a pool uid seeing the host's files) still
    cannot open the SQLite database: the file is 0600 even in an existing world-readable var/."""
    if not protections()["uid_pool"]["active"]:
        pytest.skip("needs the uid pool (root): as the service's own uid a run could read it")
    root = Path(tempfile.mkdtemp(prefix="jaxjudge-db-"))
    try:
        os.chmod(root, 0o755)  # reachable by other uids, like a checkout in a home directory
        (root / "var").mkdir(mode=0o755)
        os.chmod(root / "var", 0o755)
        srv = Server(root, sandbox_disable="bwrap", unsafe_allow_missing_sandbox="bwrap",
                     workers=1, warm_pool="false")
        try:
            with srv.client() as c:
                info = c.get("/v1/system").json()
                assert info["unsafe_allow_missing_sandbox"] == ["bwrap"]
                assert info["sandbox_required"] == sorted(LAYERS)
                assert info["protections"]["bwrap"]["active"] is False
                db = root / "var" / "jaxjudge.db"
                assert db.is_file() and stat.S_IMODE(db.stat().st_mode) == 0o600
                r = submit(c, OPEN_DB.format(path=str(db)), wait="true")
                body = r.json() if r.status_code == 200 else wait_done(c, r.json()["id"])
            report = body["report"]
            assert "OPEN PermissionError" in report["message"], report["message"]
            assert "UNSAFE" in srv.log() and "bwrap" in srv.log()
        finally:
            srv.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_private_sqlite_paths(tmp_path: Path) -> None:
    from jaxjudge.service.main import _private_sqlite

    _private_sqlite(f"sqlite:///{tmp_path}/new/var/judge.db")
    for d in (tmp_path / "new", tmp_path / "new" / "var"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    old = tmp_path / "old.db"
    old.write_bytes(b"")
    old.chmod(0o644)
    (tmp_path / "old.db-wal").write_bytes(b"")
    _private_sqlite(f"sqlite:///{old}")
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "old.db-wal").stat().st_mode) == 0o600
    _private_sqlite("sqlite://")  # in memory: nothing to do
