"""Prometheus metrics (issue #15): GET /metrics on a real server after real grades, the
database collector's cache, multiprocess aggregation across real processes, and the Grafana
dashboard kept true to what /metrics serves."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from api_fixtures import BROKEN, PROBLEM, REFERENCE, Server, service_env, submit
from conftest import empty_postgres
from prometheus_client.parser import text_string_to_metric_families

from jaxjudge import Report, Verdict
from jaxjudge.service.config import Settings
from jaxjudge.service.main import create_app
from jaxjudge.service.metrics import STAGES, Metrics
from jaxjudge.service.store import Store

REPO = Path(__file__).resolve().parent.parent
DASHBOARD = REPO / "deploy" / "grafana" / "jaxjudge.json"
ALERTS = REPO / "deploy" / "prometheus" / "jaxjudge-alerts.yml"
TOKEN = "metrics-scrape-token"

# A submission that reaches into the trace script's frame while it is imported and adds its
# own timing keys: they come back in stage A's result as "stage_a.evil_N" (the report shows
# them). As metric labels they would let every submission mint new series.
EVIL_TIMINGS = REFERENCE + """
import sys as _sys

_f = _sys._getframe(0)
while _f is not None and not isinstance(_f.f_locals.get("timings"), dict):
    _f = _f.f_back
if _f is not None:
    for _i in range(24):
        _f.f_locals["timings"][f"evil_{_i}"] = 99999.0
"""

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> tuple[Samples, set[str]]:
    """Every sample by (name, labels), and every family and sample name, via the official
    parser (so the text is valid exposition format)."""
    samples: Samples = {}
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        for s in family.samples:
            names.add(s.name)
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples, names


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def series(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (n, labels) in samples if n == name]


def scrape(client: httpx.Client) -> tuple[Samples, set[str]]:
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(r.text)


# -- a real server, auth on ------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("metrics")
    srv = Server(workdir, database_url=f"sqlite:///{workdir}/judge.db", workers=1,
                 queue_size=20, wait_timeout_seconds=240, auth_tokens=TOKEN,
                 rate_limit_per_minute=0)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def graded(server: Server) -> dict[str, tuple[Samples, set[str]]]:
    """Scrapes before and after three real grades: a compile error, an accepted reference and
    an accepted submission that forges stage A timing keys."""
    with server.client(TOKEN) as c:
        before = scrape(c)
        for source in (BROKEN, REFERENCE, EVIL_TIMINGS):
            r = submit(c, source, wait="true")
            assert r.status_code == 200 and r.json()["status"] == "done", r.text
        time.sleep(2.1)  # past the database collector's cache
        after = scrape(c)
    return {"before": before, "after": after}


@pytest.mark.slow
def test_metrics_need_the_bearer_token_when_auth_is_on(server: Server) -> None:
    with server.client() as anonymous:
        r = anonymous.get("/metrics")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    with server.client("not-the-token") as wrong:
        assert wrong.get("/metrics").status_code == 401
    with server.client(TOKEN) as c:
        samples, _ = scrape(c)
    info = series(samples, "jaxjudge_info")
    assert len(info) == 1 and value(samples, "jaxjudge_info", **info[0]) == 1
    assert info[0]["database"] == "sqlite" and info[0]["queue"] == "local"
    assert info[0]["version"] and info[0]["jax"] and info[0]["python"]


@pytest.mark.slow
def test_grades_move_the_counter_and_the_stage_histogram(
    graded: dict[str, tuple[Samples, set[str]]],
) -> None:
    (before, _), (after, _) = graded["before"], graded["after"]

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("jaxjudge_grades_total", verdict="compile_error", mode="run") == 1
    assert moved("jaxjudge_grades_total", verdict="accepted", mode="run") == 2
    assert moved("jaxjudge_grades_total", verdict="wrong_answer", mode="run") == 0
    assert moved("jaxjudge_grade_seconds_count", stage="total") == 3
    assert moved("jaxjudge_grade_seconds_count", stage="stage_a") == 3
    # Stage B ran once: not for the compile error, and the forging submission exports the
    # reference's very program, which the grader's program cache answers without stage B.
    assert moved("jaxjudge_grade_seconds_count", stage="stage_b") == 1
    assert moved("jaxjudge_grade_seconds_sum", stage="total") > 0.05
    # Histogram buckets are cumulative and end with every observation.
    assert value(after, "jaxjudge_grade_seconds_bucket", stage="total", le="+Inf") == value(
        after, "jaxjudge_grade_seconds_count", stage="total")
    assert value(after, "jaxjudge_grade_seconds_bucket", stage="total", le="0.05") <= value(
        after, "jaxjudge_grade_seconds_bucket", stage="total", le="120.0")


@pytest.mark.slow
def test_forged_timing_keys_never_become_series(
    graded: dict[str, tuple[Samples, set[str]]],
) -> None:
    after, _ = graded["after"]
    stages = {lab["stage"] for lab in series(after, "jaxjudge_grade_seconds_count")}
    assert stages == set(STAGES)
    assert not [key for key in after if any("evil" in v for _, v in key[1])]
    # The forged 99999 s values were not observed either: the largest total is a real one.
    assert value(after, "jaxjudge_grade_seconds_sum", stage="stage_a") < 600


@pytest.mark.slow
def test_database_gauges_match_v1_system(server: Server,
                                         graded: dict[str, tuple[Samples, set[str]]]) -> None:
    with server.client(TOKEN) as c:
        time.sleep(2.1)
        samples, _ = scrape(c)
        system = c.get("/v1/system").json()
    by_status: dict[str, float] = {}
    for labels in series(samples, "jaxjudge_submissions"):
        n = value(samples, "jaxjudge_submissions", **labels)
        by_status[labels["status"]] = by_status.get(labels["status"], 0) + n
    assert by_status == {k: float(v) for k, v in system["submissions"].items()}
    assert system["submissions"]["done"] >= 3
    assert value(samples, "jaxjudge_submissions", status="done", verdict="accepted") >= 2
    assert value(samples, "jaxjudge_submissions", status="queued", verdict="none") == (
        system["submissions"]["queued"])
    depth = sum(value(samples, "jaxjudge_queue_depth", mode=m) for m in ("run", "submit"))
    assert depth == system["submissions"]["queued"] == system["queue_depth"]
    assert value(samples, "jaxjudge_workers") == system["workers"] == 1
    assert value(samples, "jaxjudge_database_up") == 1
    layers = {lab["layer"]: value(samples, "jaxjudge_sandbox_layer_active", **lab)
              for lab in series(samples, "jaxjudge_sandbox_layer_active")}
    assert layers == {name: float(p["active"]) for name, p in system["protections"].items()}
    assert layers and set(layers) == set(system["sandbox_required"])


@pytest.mark.slow
def test_dashboard_queries_only_served_metrics(
    graded: dict[str, tuple[Samples, set[str]]],
) -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    _, served = graded["after"]
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    used = {m for e in exprs for m in re.findall(r"\bjaxjudge_[a-z0-9_]+", e)}
    assert used, "the dashboard queries no jaxjudge metric"
    assert used <= served, sorted(used - served)
    # Every family the brief asks for is on the dashboard.
    assert {"jaxjudge_queue_depth", "jaxjudge_grades_total", "jaxjudge_submissions",
            "jaxjudge_grade_seconds_bucket", "jaxjudge_workers",
            "jaxjudge_sandbox_layer_active"} <= used
    titles = " ".join(p["title"] for p in dashboard["panels"])
    assert "p50" in titles and "p95" in titles


# -- the app without a lifespan (no grader): routing and the setting --------------------------
def _get(app: object, path: str, token: str | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.get(path, headers=headers)

    return asyncio.run(go())


def test_metrics_enabled_false_removes_the_route() -> None:
    off = create_app(Settings(metrics_enabled=False))
    assert _get(off, "/metrics").status_code == 404
    on = create_app(Settings())
    # Registered, but before the lifespan has built the store there is nothing to serve.
    r = _get(on, "/metrics")
    assert r.status_code == 503 and r.json()["error"] == "unavailable"
    authed = create_app(Settings(auth_tokens="abc"))
    assert _get(authed, "/metrics").status_code == 401
    assert _get(authed, "/metrics", "abc").status_code == 503


# -- observe_report and the database collector, in process ------------------------------------
def _report(verdict: Verdict, **timings: float) -> Report:
    return Report(verdict=verdict, problem=PROBLEM, mode="submit", message="",
                  timings=timings)


def test_two_metrics_objects_do_not_collide() -> None:
    a, b = Metrics(), Metrics()
    a.observe_report(_report(Verdict.ACCEPTED, total=1.0))
    sa, _ = parse(a.render().decode())
    sb, _ = parse(b.render().decode())
    assert value(sa, "jaxjudge_grades_total", verdict="accepted", mode="submit") == 1
    assert value(sb, "jaxjudge_grades_total", verdict="accepted", mode="submit") == 0


def test_unusual_reports_count_without_inventing_durations() -> None:
    m = Metrics()
    # A report-cache hit: a grade the learner got, but nothing ran.
    m.observe_report(_report(Verdict.ACCEPTED, total=0.001, cached=1.0))
    # The queue's internal_error after too many interruptions has no timings at all.
    m.observe_report(_report(Verdict.INTERNAL_ERROR))
    # Values no clock gives are dropped, not observed; a legitimately slow stage is kept.
    m.observe_report(_report(Verdict.TIME_LIMIT_EXCEEDED, total=float("nan"), stage_a=-1.0,
                             stage_b=300.0))
    s, _ = parse(m.render().decode())
    assert value(s, "jaxjudge_grades_total", verdict="accepted", mode="submit") == 1
    assert value(s, "jaxjudge_grades_total", verdict="internal_error", mode="submit") == 1
    assert value(s, "jaxjudge_grades_total", verdict="time_limit_exceeded", mode="submit") == 1
    assert value(s, "jaxjudge_grade_seconds_count", stage="total") == 0
    assert value(s, "jaxjudge_grade_seconds_count", stage="stage_a") == 0
    assert value(s, "jaxjudge_grade_seconds_count", stage="stage_b") == 1
    assert value(s, "jaxjudge_grade_seconds_bucket", stage="stage_b", le="120.0") == 0
    assert value(s, "jaxjudge_grade_seconds_bucket", stage="stage_b", le="+Inf") == 1


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/c.db"
    else:
        url = request.getfixturevalue("postgres_url")
        empty_postgres(url)
    s = Store(url)
    yield s
    s.close()


def test_database_reads_are_cached_and_shared_by_concurrent_scrapes(store: Store) -> None:
    store.create(PROBLEM, "run", b"x")
    done = store.create(PROBLEM, "submit", b"graded")
    assert store.claim(done.id) is not None
    assert store.finish(done.id, verdict="wrong_answer", score=0, max_score=1, report_json="{}")
    m = Metrics()
    db = m.watch_database(store.engine, workers=lambda: 4, protections=dict, ttl=1.0)
    assert db.reads == 0  # registering reads nothing

    results: list[bytes] = []

    def scrape_once() -> None:
        results.append(m.render())

    threads = [threading.Thread(target=scrape_once) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert db.reads == 1 and len(results) == 20 and len(set(results)) == 1
    store.create(PROBLEM, "submit", b"y")
    s, _ = parse(m.render().decode())
    assert value(s, "jaxjudge_queue_depth", mode="submit") == 0  # cached: not seen yet
    time.sleep(1.05)
    s, _ = parse(m.render().decode())
    assert db.reads == 2
    assert value(s, "jaxjudge_queue_depth", mode="submit") == 1
    assert value(s, "jaxjudge_queue_depth", mode="run") == 1
    assert value(s, "jaxjudge_submissions", status="queued", verdict="none") == 2
    assert value(s, "jaxjudge_submissions", status="done", verdict="wrong_answer") == 1
    assert value(s, "jaxjudge_submissions", status="done", verdict="accepted") == 0
    assert value(s, "jaxjudge_workers") == 4


def test_an_unreachable_database_still_answers_the_scrape(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path}/gone.db")
    store.create(PROBLEM, "run", b"x")
    m = Metrics()
    db = m.watch_database(store.engine, workers=lambda: 1,
                          protections=lambda: {"bwrap": {"active": True}}, ttl=0.0)
    with store.engine.begin() as conn:  # the table disappears (a broken or wrong database)
        conn.exec_driver_sql("DROP TABLE submissions")
    s, names = parse(m.render().decode())
    assert value(s, "jaxjudge_database_up") == 0
    assert not series(s, "jaxjudge_submissions") and not series(s, "jaxjudge_queue_depth")
    assert value(s, "jaxjudge_sandbox_layer_active", layer="bwrap") == 1
    assert "jaxjudge_grades_total" in names and db.reads == 1
    store.close()


# -- multiprocess mode: real processes, one directory -----------------------------------------
WRITER = f"""
import sys
from jaxjudge.service.metrics import Metrics
from jaxjudge import grade
m = Metrics()
report = grade({PROBLEM!r}, {BROKEN!r}.encode(), "run")
m.observe_report(report)
print(report.verdict)
"""

READER = """
import sys
from jaxjudge.service.metrics import Metrics, serve_metrics
server = serve_metrics(0, Metrics(info={"role": "reader"}))
print(server.server_port, flush=True)
sys.stdin.read()  # serve until the test closes our stdin
server.shutdown()
"""


def _env(multiproc: Path | None) -> dict[str, str]:
    env = service_env()
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if multiproc is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(multiproc)
    return env


@pytest.mark.slow
def test_multiprocess_mode_sums_two_grading_processes(tmp_path: Path) -> None:
    shared = tmp_path / "prom"
    shared.mkdir()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER], cwd=REPO, env=_env(shared),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        assert out.strip() == "compile_error"
    assert len(list(shared.glob("counter_*.db"))) == 2  # one file per writing process
    reader = subprocess.Popen([sys.executable, "-c", READER], cwd=REPO, env=_env(shared),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        port = int(reader.stdout.readline())
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    finally:
        reader.communicate(input="", timeout=30)
    s, _ = parse(text)
    assert value(s, "jaxjudge_grades_total", verdict="compile_error", mode="run") == 2
    assert value(s, "jaxjudge_grade_seconds_count", stage="total") == 2
    assert value(s, "jaxjudge_grade_seconds_count", stage="stage_a") == 2
    assert value(s, "jaxjudge_grade_seconds_count", stage="stage_b") == 0
    assert value(s, "jaxjudge_info", role="reader") == 1
    # Without the directory, the same reader sees only its own (empty) counters.
    alone = subprocess.run(
        [sys.executable, "-c", "from jaxjudge.service.metrics import Metrics; import sys; "
         "sys.stdout.write(Metrics().render().decode())"],
        cwd=REPO, env=_env(None), capture_output=True, text=True, timeout=120, check=True)
    s, _ = parse(alone.stdout)
    assert value(s, "jaxjudge_grades_total", verdict="compile_error", mode="run") == 0


def test_multiprocess_dir_set_too_late_is_refused(tmp_path: Path) -> None:
    """prometheus-client chooses file-backed values at import; a process that sets the
    variable afterwards would report the directory but count in memory: refuse that."""
    script = (
        "import os, prometheus_client\n"
        f"os.environ['PROMETHEUS_MULTIPROC_DIR'] = {str(tmp_path)!r}\n"
        "from jaxjudge.service.metrics import Metrics\n"
        "try:\n    Metrics()\nexcept RuntimeError as exc:\n    print('refused:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=_env(None),
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.startswith("refused: PROMETHEUS_MULTIPROC_DIR must be set before")
    assert not os.listdir(tmp_path)


@pytest.mark.slow
def test_alert_rules_query_only_served_metrics(
    graded: dict[str, tuple[Samples, set[str]]],
) -> None:
    """deploy/prometheus/jaxjudge-alerts.yml: every jaxjudge_* name it queries is served (by an
    API node's /metrics, or a worker's: the same Metrics families)."""
    rules = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    _, served = graded["after"]
    used = {m for r in alerts for m in re.findall(r"\bjaxjudge_[a-z0-9_]+", r["expr"])}
    assert used <= served, sorted(used - served)
    assert {"JaxjudgeNoLiveWorker", "JaxjudgeWorkersBelowProcesses", "JaxjudgeQueueStuck",
            "JaxjudgeSubmissionsAtLastAttempt", "JaxjudgeWebhookFailures"} <= {
        r["alert"] for r in alerts}
    assert all(r["labels"]["severity"] in ("warning", "critical") for r in alerts)
