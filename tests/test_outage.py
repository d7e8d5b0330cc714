"""Scale-out through database outages (issue #24): real `jaxjudge worker` processes and a real
API node on a PostgreSQL cluster of this module's own, which the tests stop and start again.

Workers heartbeat every 0.5 s and are presumed dead after 3 s, so an outage of a few seconds is
already several stall periods long.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_fixtures import (
    BROKEN,
    PROBLEM,
    REFERENCE,
    PostgresCluster,
    Server,
    Worker,
    free_port,
    service_env,
)
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from jaxjudge.service.jobs import WORKER_APPLICATION_NAME, defer_in_transaction
from jaxjudge.service.store import NewSubmission, Store

pytestmark = pytest.mark.postgres

OUTAGE = {"worker_heartbeat_seconds": 0.5, "worker_stall_seconds": 3}
OUTAGE_SECONDS = 10.0
SETTLE_SECONDS = 240.0  # a guard against hanging, not a performance assertion


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    try:
        pg = PostgresCluster()
    except LookupError as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    try:
        Store(pg.url).close()  # migrated once, before workers race to
        yield pg
    finally:
        pg.close()


@pytest.fixture
def store(cluster: PostgresCluster) -> Iterator[Store]:
    if not cluster.running:  # a failed test left it stopped
        cluster.start()
    s = Store(cluster.url)
    yield s
    s.close()


def slow_source(seconds: float, tag: str) -> str:
    return f"{REFERENCE}\nimport time  # {tag}\ntime.sleep({seconds})\n"


def queue(store: Store, source: str, mode: str = "submit") -> str:
    """Store a submission and its job in one transaction, as an API node does."""
    with store.transaction() as session:
        sid = Store.insert(session, NewSubmission(PROBLEM, mode, source.encode())).id
        defer_in_transaction(session, sid, 0)
    return sid


def rows(store: Store, ids: list[str]) -> dict[str, dict[str, Any]]:
    with store.engine.connect() as conn:
        found = conn.execute(text("SELECT * FROM submissions WHERE id = ANY(:ids)"),
                             {"ids": ids}).mappings().all()
    return {r["id"]: dict(r) for r in found}


def wait_rows(store: Store, ids: list[str], pred: Any, what: str,
              timeout: float = SETTLE_SECONDS) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = rows(store, ids)
        except Exception:  # the database is still coming back
            found = {}
        if len(found) == len(ids) and all(pred(r) for r in found.values()):
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s: "
                                 f"{[(r['status'], r['attempts']) for r in found.values()]}")
        time.sleep(0.1)


def grade_starts(workers: list[Worker], sid: str) -> int:
    """How many times any worker started grading `sid` (one log line per claim)."""
    return sum(1 for w in workers for line in w.log().splitlines()
               if "grade started" in line and f"[submission {sid} attempt " in line)


@pytest.fixture
def workers(cluster: PostgresCluster, tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    try:
        for name in ("w1", "w2"):
            started.append(Worker(tmp_path, cluster.url, name, **OUTAGE))
        for w in started:
            w.wait_ready()
        yield started
    finally:
        for w in started:
            w.stop()


def test_an_outage_spends_no_attempt_and_runs_nothing_twice(
    cluster: PostgresCluster, store: Store, workers: list[Worker]
) -> None:
    """PostgreSQL stops for 10 s (3 stall periods) while two grades run and one waits: every
    grade is stored once, on its first attempt, and the workers live on to grade more."""
    ids = [queue(store, slow_source(4.0, f"outage-{i}-{time.time()}")) for i in range(3)]
    wait_rows(store, ids, lambda r: r["status"] != "queued" or r["id"] == ids[2],
              "two grades in flight", timeout=120)
    time.sleep(1.0)  # inside the grades (the sleep alone is 4 s)
    cluster.stop()
    time.sleep(OUTAGE_SECONDS)
    cluster.start()
    back = time.monotonic()
    done = wait_rows(store, ids, lambda r: r["status"] == "done", "grades after the outage")
    print(f"all grades stored {time.monotonic() - back:.1f} s after PostgreSQL came back")
    assert [done[i]["verdict"] for i in ids] == ["accepted"] * 3
    assert [done[i]["attempts"] for i in ids] == [1, 1, 1]  # no attempt spent
    assert [grade_starts(workers, i) for i in ids] == [1, 1, 1]  # nothing ran twice
    assert all(w.alive() for w in workers), [w.log()[-3000:] for w in workers]
    for w in workers:
        assert_readable(w.log())
    after = queue(store, slow_source(0.1, f"after-{time.time()}"))
    assert wait_rows(store, [after], lambda r: r["status"] == "done",
                     "a grade after the outage", timeout=120)[after]["verdict"] == "accepted"


def worker_connections(store: Store, listening: bool = False) -> list[int]:
    """Backend pids of the workers' Procrastinate connections (only LISTEN ones: `listening`;
    a listener's last query stays its LISTEN for its first 30 s)."""
    query = ("SELECT pid FROM pg_stat_activity WHERE application_name = :app "
             + ("AND query LIKE 'LISTEN %'" if listening else ""))
    with store.engine.connect() as conn:
        return list(conn.execute(text(query), {"app": WORKER_APPLICATION_NAME}).scalars())


def live_workers(node: Server) -> int:
    return int(httpx.get(f"{node.base_url}/v1/system", timeout=10).json()["workers"])


def test_killed_connections_are_replaced_and_the_worker_stays_counted(
    cluster: PostgresCluster, store: Store, tmp_path: Path
) -> None:
    """pg_terminate_backend on every connection of a worker (its heartbeat's and its
    listeners' included): the worker keeps heartbeating, listens again, stays counted on
    /v1/system and grades the next submission on its first attempt."""
    node = Server(tmp_path / "node", queue="postgres", database_url=cluster.url, **OUTAGE)
    w = Worker(tmp_path, cluster.url, "victim", **OUTAGE)
    try:
        w.wait_ready()
        node.wait_for(lambda: live_workers(node) == 1, "the worker counted", 60)
        for _ in range(3):  # again and again: whichever connection the heartbeat holds
            pids = worker_connections(store)
            assert pids
            with store.engine.begin() as conn:
                conn.execute(text("SELECT pg_terminate_backend(pid) FROM unnest(:pids) AS pid"),
                             {"pids": pids})
            time.sleep(1.0)  # two heartbeats
        node.wait_for(lambda: len(worker_connections(store, listening=True)) >= 2,
                      "both of the worker's listeners back", 60)
        time.sleep(OUTAGE["worker_stall_seconds"] + 1)  # a stalled heartbeat would show now
        assert live_workers(node) == 1
        sid = queue(store, slow_source(0.1, f"after-kill-{time.time()}"))
        row = wait_rows(store, [sid], lambda r: r["status"] == "done", "a grade", 120)[sid]
        assert (row["verdict"], row["attempts"]) == ("accepted", 1)
        assert w.alive() and "side task" not in w.log(), w.log()[-3000:]
    finally:
        w.stop()
        node.stop()


def start_latency(store: Store, tag: str, n: int = 3) -> float:
    """Median seconds from a submission's commit to its grade starting (the job fetched)."""
    waits = []
    for i in range(n):
        sid = queue(store, BROKEN + f"# {tag} {i} {time.time()}\n")
        row = wait_rows(store, [sid], lambda r: r["status"] == "done", "a quick grade", 120)[sid]
        waits.append((row["started_at"] - row["created_at"]).total_seconds())
    return sorted(waits)[len(waits) // 2]


def test_the_listener_comes_back_after_a_database_restart(
    cluster: PostgresCluster, store: Store, workers: list[Worker]
) -> None:
    """A restart drops every LISTEN connection; each worker opens its listeners again (a new
    job is then announced, not only found by the next poll)."""
    before = start_latency(store, "before")
    cluster.stop("fast")
    time.sleep(3.0)
    cluster.start()
    workers[0].wait_for(lambda: len(worker_connections(store, listening=True)) >= 4,
                        "every listener back", 60)
    after = start_latency(store, "after")
    print(f"submit-to-start latency (median of 3): {before:.2f} s before a restart, "
          f"{after:.2f} s after (polling every {OUTAGE['worker_heartbeat_seconds']} s)")
    assert all(w.alive() for w in workers)


def test_api_nodes_answer_503_while_the_database_is_away_and_submit_retries(
    cluster: PostgresCluster, store: Store, tmp_path: Path, workers: list[Worker]
) -> None:
    """With PostgreSQL stopped an API node answers 503 `database_unavailable` with a
    Retry-After (never 500) and stays live; `jaxjudge submit` started during the outage
    retries and gets its verdict once the database is back."""
    node = Server(tmp_path / "node", queue="postgres", database_url=cluster.url, **OUTAGE)
    source = tmp_path / "solution.py"
    source.write_text(BROKEN, encoding="utf-8")
    try:
        cluster.stop()
        with node.client() as c:
            answers = [
                c.post("/v1/submissions", json={"problem_id": PROBLEM, "source": BROKEN,
                                                "mode": "run"}),
                c.get("/v1/submissions/0123456789abcdef"),
                c.get("/v1/submissions"),
                c.get("/v1/system"),
            ]
            for r in answers:
                assert r.status_code == 503, (r.request.url, r.status_code, r.text)
                assert r.headers["Retry-After"] == "5"
                assert r.json()["error"] == "database_unavailable"
            assert c.get("/healthz").status_code == 200
        env = service_env(server=node.base_url)
        env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
        submitting = subprocess.Popen(
            [sys.executable, "-m", "jaxjudge.cli.service", "submit", "--server",
             node.base_url, "-p", PROBLEM, str(source)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3.0)  # its first tries meet the outage
        cluster.start()
        out, err = submitting.communicate(timeout=240)
        assert "database is unreachable" in err, err
        assert "compile_error" in out, (out, err)
        assert "Traceback" not in node.log() and " 500 " not in node.log()
    finally:
        node.stop()


# -- logs an operator can read -----------------------------------------------------------------
RECORD = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


def assert_readable(log: str) -> None:
    """Every log record starts with a UTC timestamp and a level, its further lines (a
    traceback, a driver's multi-line message) indented; no asyncio complaint about an
    exception nobody retrieved."""
    assert "never retrieved" not in log, log[-3000:]
    for line in log.splitlines():
        assert RECORD.match(line) or line.startswith("    "), f"not a log record: {line!r}"


def test_worker_logs_are_readable_through_an_outage(
    cluster: PostgresCluster, store: Store, workers: list[Worker]
) -> None:
    cluster.stop()
    time.sleep(4.0)
    cluster.start()
    sid = queue(store, BROKEN + f"# logs {time.time()}\n")
    wait_rows(store, [sid], lambda r: r["status"] == "done", "a grade after the outage", 120)
    for w in workers:
        assert_readable(w.log())
    lines = [line for w in workers for line in w.log().splitlines()]
    assert any("the database is unreachable" in line and " WARNING " in line for line in lines)
    assert any("grade stored: compile_error" in line and f"[submission {sid} attempt 1]" in line
               for line in lines)


def test_serve_logs_json_lines_and_exits_0_on_sigterm(
    cluster: PostgresCluster, tmp_path: Path
) -> None:
    """`jaxjudge serve` with JAXJUDGE_LOG_FORMAT=json: every line is one JSON object with a
    time and a level (uvicorn's too); SIGTERM stops it cleanly with status 0."""
    node = Server(tmp_path, via_cli=True, queue="postgres", database_url=cluster.url,
                  log_format="json", log_level="info", **OUTAGE)
    try:
        with node.client() as c:
            assert c.get("/v1/system").status_code == 200
        node.proc.send_signal(signal.SIGTERM)
        assert node.proc.wait(60) == 0, node.log()[-3000:]
    finally:
        node.stop()
    records = [json.loads(line) for line in node.log().splitlines()]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["logger"].startswith("uvicorn") for r in records)
    assert not any("never retrieved" in r["message"] for r in records)


# -- which worker has my job -------------------------------------------------------------------
def metric(text: str, name: str, **labels: str) -> float | None:
    """One sample's value from a /metrics text, None if absent."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


def test_the_submission_and_metrics_name_the_worker_and_count_redeliveries(
    cluster: PostgresCluster, store: Store, tmp_path: Path
) -> None:
    """The running attempt's worker is in the submission (its owner only) and in
    jaxjudge_running_submissions; SIGKILL it: the survivor counts the redelivery and
    observes the grade's attempt 2; the submission then names the survivor."""
    owner, other = "token-of-owner-0123456789", "token-of-other-0123456789"
    node = Server(tmp_path / "node", queue="postgres", database_url=cluster.url,
                  auth_tokens=f"{owner},{other}", rate_limit_per_minute=0, **OUTAGE)
    ports = [free_port(), free_port()]
    ws = [Worker(tmp_path, cluster.url, f"m{i}", worker_metrics_port=p, **OUTAGE)
          for i, p in enumerate(ports)]
    try:
        for w in ws:
            w.wait_ready()
        with node.client(owner) as mine, node.client(other) as theirs:
            sid = mine.post("/v1/submissions", json={
                "problem_id": PROBLEM, "source": slow_source(4.0, f"who-{time.time()}"),
                "mode": "submit"}).json()["id"]
            wait_rows(store, [sid], lambda r: r["status"] == "running", "claimed", 120)
            holder = mine.get(f"/v1/submissions/{sid}").json()["worker"]
            assert theirs.get(f"/v1/submissions/{sid}").json()["worker"] is None
            victim = next(i for i, w in enumerate(ws) if f":{w.proc.pid}" in holder)
            assert holder.startswith("jaxjudge@")
            time.sleep(2.5)  # past the metrics' database cache
            scraped = mine.get("/metrics").text
            assert metric(scraped, "jaxjudge_running_submissions", worker=holder) == 1
            ws[victim].kill()
            done = wait_rows(store, [sid], lambda r: r["status"] == "done", "redelivered")[sid]
            assert (done["verdict"], done["attempts"]) == ("accepted", 2)
            survivor = ws[1 - victim]
            assert mine.get(f"/v1/submissions/{sid}").json()["worker"].endswith(
                f":{survivor.proc.pid}")
        text = httpx.get(f"http://127.0.0.1:{ports[1 - victim]}/metrics", timeout=10).text
        assert metric(text, "jaxjudge_redeliveries_total", queue="grading") == 1
        assert metric(text, "jaxjudge_grade_attempts_bucket", le="1.0") == 0
        assert metric(text, "jaxjudge_grade_attempts_bucket", le="2.0") == 1
    finally:
        for w in ws:
            w.stop()
        node.stop()


def test_draining_a_worker_finishes_its_grade_and_exits_0(
    cluster: PostgresCluster, store: Store, tmp_path: Path
) -> None:
    """The documented drain: SIGTERM while a grade runs; the grade is stored on attempt 1
    (nothing redelivered) and the worker exits with status 0."""
    w = Worker(tmp_path, cluster.url, "drained", worker_shutdown_seconds=60, **OUTAGE)
    try:
        w.wait_ready()
        sid = queue(store, slow_source(3.0, f"drain-{time.time()}"))
        wait_rows(store, [sid], lambda r: r["status"] == "running", "claimed", 120)
        w.proc.send_signal(signal.SIGTERM)
        assert w.proc.wait(120) == 0, w.log()[-3000:]
        row = rows(store, [sid])[sid]
        assert (row["status"], row["verdict"], row["attempts"]) == ("done", "accepted", 1)
        assert_readable(w.log())
    finally:
        w.stop()


def test_a_status_write_that_committed_before_its_answer_was_lost_is_done(
    cluster: PostgresCluster, store: Store
) -> None:
    """The database stops between committing a job's finish and answering it: the worker's
    retry finds the job no longer `doing` and counts the write as done, where Procrastinate's
    finish would raise (the CI failure of 2026-12-07: an exception nobody retrieved)."""
    import asyncio

    import psycopg
    from procrastinate import JobContext, jobs

    from jaxjudge.service.jobs import TASK_NAME, heartbeat_conninfo, make_app
    from jaxjudge.service.liveness import ResilientWorker
    from jaxjudge.service.outage import Reachability

    async def scenario() -> tuple[bool, int]:
        app = make_app(cluster.url)
        async with app.open_async():
            job_id = await app.configure_task(TASK_NAME).defer_async(submission_id="lost")
            worker = ResilientWorker(app=app, reachability=Reachability(),
                                     heartbeat_conninfo=heartbeat_conninfo(cluster.url),
                                     delete_jobs="successful", install_signal_handlers=False)
            worker.worker_id = await app.job_manager.register_worker()
            job = await app.job_manager.fetch_job(queues=None, worker_id=worker.worker_id)
            assert job is not None and job.id == job_id
            real_finish = app.job_manager.finish_job
            calls = 0

            async def finish_then_lose_the_answer(**kwargs: Any) -> None:
                nonlocal calls
                calls += 1
                await real_finish(**kwargs)
                if calls == 1:
                    raise psycopg.OperationalError("server closed the connection unexpectedly")

            app.job_manager.finish_job = finish_then_lose_the_answer  # type: ignore[method-assign]
            await worker._persist_job_status(
                job=job, status=jobs.Status.SUCCEEDED, retry_decision=None,
                context=JobContext(app=app, job=job, worker_name="test", start_timestamp=0.0,
                                   abort_reason=lambda: None),
                job_result=None)
            row = await app.connector.execute_query_one_async(
                "SELECT count(*) AS n FROM procrastinate_jobs WHERE id = %(i)s", i=job_id)
            return calls == 2, row["n"]

    retried, left = asyncio.run(scenario())
    assert retried  # the first write's answer was lost, so it was tried again
    assert left == 0  # the job is finished (deleted on success), once
