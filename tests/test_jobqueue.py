"""The PostgreSQL job queue (issue #15) on a real PostgreSQL, with real `jaxjudge worker`
processes and two real API nodes (`uvicorn jaxjudge.service.main:create_app`,
JAXJUDGE_QUEUE=postgres).

Workers run with a fast heartbeat (0.5 s) and stall timeout (2 s) so redelivery takes seconds;
the production defaults (2 s, 10 s) only scale those numbers.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from api_fixtures import (
    BROKEN,
    FAST,
    PROBLEM,
    REFERENCE,
    Server,
    Worker,
    service_env,
    submit,
    wait_done,
)
from pydantic import ValidationError
from sqlalchemy import text

from jaxjudge import Report, Verdict
from jaxjudge.service.config import Settings
from jaxjudge.service.jobs import conninfo, defer_in_transaction, job_priority
from jaxjudge.service.notify import LISTENER_APPLICATION_NAME, DoneListener
from jaxjudge.service.queue import MAX_ATTEMPTS, grade_and_store
from jaxjudge.service.store import DONE_CHANNEL, NewSubmission, Store

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parent.parent
TOKEN_A, TOKEN_B = "token-of-a-0123456789", "token-of-b-0123456789"
QUEUE_SIZE = 8


def slow_source(seconds: float, tag: str) -> str:
    """The reference solution, taking `seconds` to load (well inside the 10 s wall limit);
    `tag` keeps report caches from answering for it."""
    return f"{REFERENCE}\nimport time  # {tag}\ntime.sleep({seconds})\n"


@pytest.fixture(scope="module")
def store(pg_store: Store) -> Store:
    return pg_store


@pytest.fixture(scope="module")
def nodes(db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """Two API nodes on one database: they share nothing else."""
    settings = {"queue": "postgres", "database_url": db, "auth_tokens": f"{TOKEN_A},{TOKEN_B}",
                "rate_limit_per_minute": 0, "queue_size": QUEUE_SIZE,
                "wait_timeout_seconds": 30, **FAST}
    one = Server(tmp_path_factory.mktemp("node1"), **settings)
    try:
        two = Server(tmp_path_factory.mktemp("node2"), **settings)
    except BaseException:
        one.stop()
        raise
    yield one, two
    one.stop()
    two.stop()


def _clear(store: Store) -> None:
    """Forget every submission and job (between tests that count the queue)."""
    with store.transaction() as session:
        session.execute(text("DELETE FROM procrastinate_jobs"))
        session.execute(text("DELETE FROM submissions"))


def _row(store: Store, sid: str) -> dict[str, Any]:
    with store.engine.connect() as conn:
        return dict(conn.execute(text("SELECT * FROM submissions WHERE id = :id"),
                                 {"id": sid}).mappings().one())


def _wait_row(store: Store, sid: str, pred: Any, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        row = _row(store, sid)
        if pred(row):
            return row
        assert time.monotonic() < deadline, f"row {sid} never matched: {row['status']}"
        time.sleep(0.05)


# -- settings ----------------------------------------------------------------------------------
def test_settings_fail_fast(db: str) -> None:
    with pytest.raises(ValidationError, match="JAXJUDGE_QUEUE=postgres needs a PostgreSQL"):
        Settings(queue="postgres")  # the default SQLite URL
    with pytest.raises(ValidationError, match="at least 3 heartbeats"):
        Settings(worker_heartbeat_seconds=5, worker_stall_seconds=10)
    # Honest configurations: the default, and the distributed mode on PostgreSQL.
    assert Settings().queue == "local"
    assert Settings(queue="postgres", database_url="postgresql://u:p@db/judge").queue == "postgres"

    def cli(command: str, **settings: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "jaxjudge.cli.service", command], cwd=REPO,
                              env=service_env(**settings), capture_output=True, text=True,
                              timeout=120)

    serve = cli("serve", queue="postgres", database_url="sqlite:///nowhere.db")
    assert serve.returncode == 2 and "needs a PostgreSQL database" in serve.stderr
    worker = cli("worker", database_url=db)  # the queue is local: nothing to consume
    assert worker.returncode == 2 and "JAXJUDGE_QUEUE=postgres" in worker.stderr
    assert not (REPO / "nowhere.db").exists()


def test_worker_refuses_to_grade_without_a_sandbox_layer(db: str, store: Store) -> None:
    """`jaxjudge worker` fails closed exactly like serve (a layer forced off here), before it
    registers with the queue; the honest case (every layer) is every other worker here."""
    proc = subprocess.run(
        [sys.executable, "-m", "jaxjudge.cli.service", "worker"], cwd=REPO,
        env=service_env(queue="postgres", database_url=db, sandbox_disable="bwrap"),
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert "refusing to grade untrusted code" in proc.stderr and "bwrap" in proc.stderr
    assert "JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=bwrap" in proc.stderr
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM procrastinate_workers")).scalar_one() == 0


# -- the fence ---------------------------------------------------------------------------------
def _finish(store: Store, sid: str, verdict: str, fence: int | None) -> bool:
    return store.finish(sid, verdict=verdict, score=0, max_score=1, report_json="{}",
                        fence=fence)


def test_fenced_claim_and_finish(store: Store) -> None:
    sid = store.create("p1", "submit", b"x").id
    first = store.claim(sid, redelivery=True)
    assert first is not None and first.attempts == 1
    assert store.claim(sid) is None  # the local queue never takes a running row
    second = store.claim(sid, redelivery=True)  # a redelivered job does
    assert second is not None and second.attempts == 2
    assert not _finish(store, sid, "accepted", first.attempts)  # the presumed-dead grader
    row = _row(store, sid)
    assert (row["status"], row["verdict"], row["attempts"]) == ("running", None, 2)
    assert _finish(store, sid, "wrong_answer", second.attempts)
    assert not _finish(store, sid, "accepted", second.attempts)  # exactly once
    assert store.claim(sid, redelivery=True) is None  # a stray redelivery finds it done
    row = _row(store, sid)
    assert (row["status"], row["verdict"], row["attempts"]) == ("done", "wrong_answer", 2)


def test_the_shared_grade_path_drops_a_stale_grade(store: Store) -> None:
    """grade_and_store (the local pool's and the workers' one path) whose row is claimed
    again while it grades stores nothing and calls no hook; the new claim's grade is kept."""
    sid = store.create(PROBLEM, "run", b"source").id
    seen: list[Report] = []

    def report(verdict: Verdict) -> Report:
        return Report(verdict=verdict, problem=PROBLEM, mode="run", message="m")

    def overtaken(problem_id: str, source: bytes, mode: str) -> Report:
        assert store.claim(sid, redelivery=True) is not None  # redelivered meanwhile
        return report(Verdict.ACCEPTED)

    assert grade_and_store(store, sid, overtaken, redelivery=True,
                           on_graded=lambda r, _n: seen.append(r)) is None
    assert seen == [] and _row(store, sid)["status"] == "running"
    outcome = grade_and_store(store, sid, lambda *a: report(Verdict.WRONG_ANSWER),
                              redelivery=True, on_graded=lambda r, _n: seen.append(r))
    assert outcome is not None and outcome.attempts == 3 and seen == [outcome.report]
    row = _row(store, sid)
    assert (row["status"], row["verdict"]) == ("done", "wrong_answer")


# -- LISTEN/NOTIFY -----------------------------------------------------------------------------
def test_a_notify_wakes_its_waiter_and_only_it(db: str) -> None:
    """Polling is set to 60 s, so only the notification can explain a return within 2 s."""

    async def scenario() -> None:
        listener = DoneListener(conninfo(db), poll_seconds=60)
        listener.start()
        try:
            assert await listener.wait_connected(10)
            done = {"mine": False}
            checks = {"n": 0}

            async def is_done() -> bool:
                checks["n"] += 1
                return done["mine"]

            started = time.monotonic()
            waiter = asyncio.create_task(listener.wait("mine", 30, is_done))
            await asyncio.sleep(0.3)
            async with await psycopg.AsyncConnection.connect(conninfo(db),
                                                             autocommit=True) as conn:
                await conn.execute("SELECT pg_notify(%s, 'other')", (DONE_CHANNEL,))
                await asyncio.sleep(0.3)
                assert not waiter.done() and checks["n"] == 1  # not woken for another id
                done["mine"] = True
                await conn.execute("SELECT pg_notify(%s, 'mine')", (DONE_CHANNEL,))
            assert await asyncio.wait_for(waiter, 5)
            assert time.monotonic() - started < 2.0
            assert listener.notifications == 2
        finally:
            await listener.stop()

    asyncio.run(scenario())


def test_waiters_poll_while_the_listener_is_down_and_it_reconnects(db: str) -> None:
    async def scenario() -> None:
        # Never connects: waiters poll every poll_seconds.
        dead = DoneListener("postgresql://postgres@127.0.0.1:1/none", poll_seconds=0.2)
        dead.start()
        try:
            flag = {"done": False}

            async def is_done() -> bool:
                return flag["done"]

            waiter = asyncio.create_task(dead.wait("x", 30, is_done))
            await asyncio.sleep(0.3)
            flag["done"] = True
            started = time.monotonic()
            assert await asyncio.wait_for(waiter, 5)
            assert time.monotonic() - started < 1.0 and not dead.connected
        finally:
            await dead.stop()

        # Connected, then its connection is killed: the listener reconnects, and a grade that
        # finished while it was away (its NOTIFY lost) is still seen.
        live = DoneListener(conninfo(db), poll_seconds=60)
        live.start()
        try:
            assert await live.wait_connected(10)
            flag["done"] = False
            waiter = asyncio.create_task(live.wait("y", 30, is_done))
            await asyncio.sleep(0.2)
            async with await psycopg.AsyncConnection.connect(conninfo(db),
                                                             autocommit=True) as conn:
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s", (LISTENER_APPLICATION_NAME,))
            flag["done"] = True  # finished while the listener is down, no NOTIFY
            assert await asyncio.wait_for(waiter, 10)
            assert await live.wait_connected(10)
        finally:
            await live.stop()

    asyncio.run(scenario())


# -- back-pressure -----------------------------------------------------------------------------
def test_back_pressure_counts_the_queue_of_every_node(
    nodes: tuple[Server, Server], store: Store
) -> None:
    """No worker runs: QUEUE_SIZE submissions spread over both nodes fill the one queue."""
    _clear(store)
    one, two = nodes
    with one.client(TOKEN_A) as c1, two.client(TOKEN_B) as c2:
        for i in range(QUEUE_SIZE):
            r = submit(c1 if i % 2 else c2, BROKEN)
            assert r.status_code == 202, r.text
        for client in (c1, c2):
            full = submit(client, BROKEN)
            assert full.status_code == 503, full.text
            assert full.json()["error"] == "queue_full"
            assert 1 <= int(full.headers["Retry-After"]) <= 120
        info = c2.get("/v1/system").json()
    assert info["queue"] == "postgres" and info["queue_depth"] == QUEUE_SIZE
    assert info["queue_size"] == QUEUE_SIZE and info["workers"] == 0
    with store.engine.connect() as conn:
        rows = conn.execute(text("SELECT count(*) FROM submissions")).scalar_one()
        jobs = conn.execute(text("SELECT count(*) FROM procrastinate_jobs")).scalar_one()
    assert rows == jobs == QUEUE_SIZE  # the refused ones left nothing behind
    _clear(store)


def _fetch_order(store: Store) -> list[str]:
    """Submission ids in the order Procrastinate would fetch their jobs."""
    with store.engine.connect() as conn:
        return list(conn.execute(text(
            "SELECT args->>'submission_id' FROM procrastinate_jobs WHERE status = 'todo' "
            "ORDER BY priority DESC, id ASC"
        )).scalars())


def test_a_flood_of_runs_cannot_starve_another_owners_submits(
    nodes: tuple[Server, Server], store: Store
) -> None:
    """Owner A floods `run`s on both nodes: only A's first waiting run jumps the queue, the
    rest take their fair turn, so B's submits are not pushed behind all of them. Honest but
    unusual: B's own run, sent while B has submits waiting, still goes before every submit."""
    _clear(store)
    one, two = nodes
    with one.client(TOKEN_A) as a, two.client(TOKEN_A) as a2, two.client(TOKEN_B) as b:
        b_first = submit(b, BROKEN, mode="submit").json()["id"]
        a_runs = [submit(a if i % 2 else a2, BROKEN, mode="run").json()["id"] for i in range(5)]
        b_second = submit(b, BROKEN, mode="submit").json()["id"]
        order = _fetch_order(store)
        assert order[:4] == [a_runs[0], b_first, a_runs[1], b_second], order
        b_run = submit(b, BROKEN, mode="run").json()["id"]
        assert _fetch_order(store)[:2] == [a_runs[0], b_run]
    _clear(store)


# -- with one worker ---------------------------------------------------------------------------
@pytest.fixture(scope="class")
def worker(db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = Worker(tmp_path_factory.mktemp("worker"), db, "w0")
    try:
        w.wait_ready()
        yield w
    finally:
        w.stop()


@pytest.mark.usefixtures("worker")
class TestWithAWorker:
    def test_runs_go_first_and_one_owner_cannot_starve_another(
        self, nodes: tuple[Server, Server], store: Store
    ) -> None:
        """While the worker is busy, owner A queues 4 submits, B queues 1 submit, A queues a
        run: the run goes first, and B's one submit goes before A's 2nd..4th."""
        one, two = nodes
        with one.client(TOKEN_A) as a, two.client(TOKEN_B) as b:
            busy = submit(a, slow_source(2.5, "busy"), mode="submit").json()["id"]
            _wait_row(store, busy, lambda r: r["status"] == "running")
            a_submits = [submit(a, BROKEN, mode="submit").json()["id"] for _ in range(4)]
            b_submit = submit(b, BROKEN, mode="submit").json()["id"]
            a_run = submit(a, BROKEN, mode="run").json()["id"]
            for sid in (busy, *a_submits, b_submit, a_run):
                wait_done(a, sid)
        with store.engine.connect() as conn:
            order = list(conn.execute(text(
                "SELECT id FROM submissions WHERE status = 'done' ORDER BY started_at"
            )).scalars())
        assert order == [busy, a_run, a_submits[0], b_submit, *a_submits[1:]]
        assert job_priority("run", 3) > job_priority("submit", 0) > job_priority("submit", 1)

    def test_wait_returns_on_any_node_by_notification(
        self, db: str, nodes: tuple[Server, Server], store: Store
    ) -> None:
        one, two = nodes
        # ?wait=true on node 2: the verdict comes from the worker, the wake-up from its NOTIFY.
        with two.client(TOKEN_B) as b:
            started = time.monotonic()
            r = submit(b, slow_source(1.0, "wait-node2"), wait="true")
            elapsed = time.monotonic() - started
        assert r.status_code == 200, r.text
        assert r.json()["verdict"] == "accepted" and elapsed < 20  # bound: 30 s

        # A listener standing for a third node, polling only every 60 s, waits for a
        # submission made on node 1.
        async def third_node() -> tuple[bool, float, int]:
            listener = DoneListener(conninfo(db), poll_seconds=60)
            listener.start()
            try:
                assert await listener.wait_connected(10)
                with one.client(TOKEN_A) as a:
                    sid = submit(a, slow_source(1.0, "wait-node1")).json()["id"]

                async def is_done() -> bool:
                    record = await asyncio.to_thread(store.get, sid)
                    return record is not None and record.status == "done"

                t0 = time.monotonic()
                ok = await listener.wait(sid, 50, is_done)
                return ok, time.monotonic() - t0, listener.notifications
            finally:
                await listener.stop()

        ok, waited, notes = asyncio.run(third_node())
        print(f"cross-node wait returned after {waited:.2f} s (poll fallback: 60 s)")
        assert ok and waited < 20 and notes >= 1

    def test_a_submission_interrupted_too_often_ends_as_internal_error(
        self, nodes: tuple[Server, Server], store: Store
    ) -> None:
        """The job arrives for the 4th time (3 graders died on it): the worker stores
        internal_error with a message instead of grading it again, and it stays done."""
        with store.transaction() as session:
            sid = Store.insert(session, NewSubmission(PROBLEM, "submit", REFERENCE.encode())).id
            session.execute(text("UPDATE submissions SET status = 'running', attempts = :n "
                                 "WHERE id = :id"), {"n": MAX_ATTEMPTS, "id": sid})
            defer_in_transaction(session, sid, 0)
        row = _wait_row(store, sid, lambda r: r["status"] == "done")
        assert row["verdict"] == "internal_error" and row["attempts"] == MAX_ATTEMPTS + 1
        with nodes[0].client(TOKEN_A) as a:
            message = a.get(f"/v1/submissions/{sid}").json()["report"]["message"]
        assert f"interrupted {MAX_ATTEMPTS} times" in message
        time.sleep(1.5)  # a looping job would have been claimed again by now
        assert _row(store, sid)["attempts"] == MAX_ATTEMPTS + 1


# -- redelivery --------------------------------------------------------------------------------
def test_a_worker_killed_mid_grade_is_redelivered_once(
    db: str, nodes: tuple[Server, Server], store: Store, tmp_path: Path
) -> None:
    """SIGKILL the worker grading a submission: the other worker stores exactly one verdict,
    on the second attempt, within the documented bound."""
    first = Worker(tmp_path, db, "w1")
    second = Worker(tmp_path, db, "w2")
    try:
        first.wait_ready()
        second.wait_ready()
        with nodes[0].client(TOKEN_A) as a:
            sid = submit(a, slow_source(3.0, "redelivery"), mode="submit").json()["id"]
            _wait_row(store, sid, lambda r: r["status"] == "running")
            time.sleep(0.5)  # well inside the grade (the sleep alone is 3 s)
            victim, survivor = (first, second) if sid in first.log() else (second, first)
            assert sid in victim.log() and sid not in survivor.log()
            victim.kill()
            killed = time.monotonic()
            _wait_row(store, sid, lambda r: r["attempts"] == 2)
            delay = time.monotonic() - killed
            print(f"redelivery delay after SIGKILL: {delay:.1f} s (stall timeout 2 s)")
            assert delay <= 30
            body = wait_done(a, sid)
        assert (body["status"], body["verdict"], body["attempts"]) == ("done", "accepted", 2)
        assert sid in survivor.log()
        with store.engine.connect() as conn:
            jobs = conn.execute(text(
                "SELECT status FROM procrastinate_jobs WHERE args->>'submission_id' = :id"
            ), {"id": sid}).scalars().all()
        assert jobs == []  # one job, finished (and deleted as successful), none left over
        time.sleep(1.0)
        assert _row(store, sid)["attempts"] == 2  # not graded a third time
    finally:
        first.stop()
        second.stop()


def test_api_node_does_not_recover_running_rows(db: str, store: Store, tmp_path: Path) -> None:
    """A new API node starting while a worker grades must leave the running row alone (the
    local queue's recover() would re-queue it)."""
    sid = store.create(PROBLEM, "run", b"x").id
    claimed = store.claim(sid, redelivery=True)
    assert claimed is not None
    node = Server(tmp_path, queue="postgres", database_url=db, **FAST)
    try:
        assert _row(store, sid)["status"] == "running"
        assert httpx.get(f"{node.base_url}/v1/system").json()["running"] >= 1
    finally:
        node.stop()


def test_an_api_node_needs_no_sandbox_and_a_worker_serves_its_metrics(
    db: str, store: Store, tmp_path: Path
) -> None:
    """In the postgres queue the API node never runs a submission: it starts with a sandbox
    layer off (the worker would refuse, see above) and reports no layers of its own. The
    worker's --metrics-port server counts the grade it made and shows the layers it checked."""
    from api_fixtures import free_port
    from prometheus_client.parser import text_string_to_metric_families

    _clear(store)  # an earlier test's jobless row would be re-queued and graded here too
    node = Server(tmp_path / "node", via_cli=True, queue="postgres", database_url=db,
                  sandbox_disable="bwrap", rate_limit_per_minute=0, **FAST)
    port = free_port()
    worker = Worker(tmp_path, db, "metrics", worker_metrics_port=port)
    try:
        system = httpx.get(f"{node.base_url}/v1/system", timeout=10).json()
        assert system["protections"] == {}
        worker.wait_ready()
        with httpx.Client(base_url=node.base_url, timeout=30) as client:
            sid = submit(client, f"{REFERENCE}\n# metrics {time.time_ns()}\n").json()["id"]
            assert wait_done(client, sid)["verdict"] == "accepted"
        samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        text_body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        for family in text_string_to_metric_families(text_body):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        assert samples[("jaxjudge_grades_total", (("mode", "run"), ("verdict", "accepted")))] == 1
        assert samples[("jaxjudge_sandbox_layer_active", (("layer", "bwrap"),))] == 1
        assert samples[("jaxjudge_grade_seconds_count", (("stage", "total"),))] == 1
    finally:
        worker.stop()
        node.stop()


def test_an_unfinished_submission_whose_job_ended_gets_a_new_one(store: Store) -> None:
    """A row left `queued`/`running` with no live job (Procrastinate gave up on it while the
    database was away) is re-queued by the workers' sweep, once; finished rows, rows with a
    live job and young rows are left alone."""
    from jaxjudge.service.worker import sweep_orphans

    _clear(store)
    lost_queued = store.create(PROBLEM, "submit", b"lost", "o").id  # as if its job had failed
    failed_running = store.create(PROBLEM, "run", b"failed", "o").id
    with store.transaction() as session:
        job = defer_in_transaction(session, failed_running, job_priority("run", 0))
        session.execute(text("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = :j"),
                        {"j": job})
    assert store.claim(failed_running, redelivery=True) is not None
    healthy = store.create(PROBLEM, "submit", b"healthy", "o").id
    with store.transaction() as session:
        defer_in_transaction(session, healthy, job_priority("submit", 0))
    done = store.create(PROBLEM, "submit", b"done", "o").id
    assert store.claim(done, redelivery=True) is not None
    assert _finish(store, done, "accepted", 1)

    assert sweep_orphans(store, 3600) == []  # all younger than an hour: left alone
    assert sorted(sweep_orphans(store, 0)) == sorted([lost_queued, failed_running])
    assert sweep_orphans(store, 0) == []  # each got exactly one new job
    with store.engine.connect() as conn:
        todo = dict(conn.execute(text(
            "SELECT queueing_lock, priority FROM procrastinate_jobs WHERE status = 'todo'"
        )).all())
    assert set(todo) == {lost_queued, failed_running, healthy}
    assert todo[failed_running] == job_priority("run", 0)
    _clear(store)


def test_a_post_retried_on_the_other_node_with_its_key_is_one_submission(
    nodes: tuple[Server, Server], store: Store
) -> None:
    """The bench's lost-answer case: a client whose POST answer was lost retries on the
    other node with the same Idempotency-Key and gets the same submission, with one job."""
    _clear(store)
    body = {"problem_id": PROBLEM, "source": BROKEN, "mode": "run"}
    headers = {"Idempotency-Key": f"lost-answer-{time.time_ns()}"}
    with nodes[0].client(TOKEN_A) as one, nodes[1].client(TOKEN_A) as two:
        first = one.post("/v1/submissions", json=body, headers=headers)
        retried = two.post("/v1/submissions", json=body, headers=headers)
    assert first.status_code == 202 and retried.status_code in (200, 202), retried.text
    assert first.json()["id"] == retried.json()["id"]
    with nodes[1].client(TOKEN_B) as other_token:  # keys are per token
        assert other_token.post("/v1/submissions", json=body,
                                headers=headers).json()["id"] != first.json()["id"]
    with store.engine.connect() as conn:
        jobs = conn.execute(text("SELECT queueing_lock FROM procrastinate_jobs")).scalars().all()
    assert sorted(jobs).count(first.json()["id"]) == 1 and len(jobs) == 2
    _clear(store)
