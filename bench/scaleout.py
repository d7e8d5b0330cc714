"""Scale-out bench (issue #15, not part of the unit suite): API nodes and grading workers on
one PostgreSQL, a worker SIGKILLed mid-grade and an API node restarted under load.

What it runs, all on this machine with every sandbox layer (run it as root):
- a throwaway PostgreSQL cluster (tests/api_fixtures.PostgresCluster, stopped once);
- 2 `jaxjudge serve` API nodes (JAXJUDGE_QUEUE=postgres, distinct ports) and `--workers`
  `jaxjudge worker` processes (`--concurrency` each), the production heartbeat (2 s) and stall
  timeout (10 s);
- `--clients` threads, each with its own bearer token, submitting `--submissions` DISTINCT
  correct programs for rematerialized-mlp-block (the reference with a unique constant folded
  into its loss, so neither the report cache nor the program cache can answer), one in five in
  mode `run` with `?wait=true`, the rest `submit` then polled. Each client waits for its
  verdict before submitting again (a learner does not resubmit before seeing a verdict). It
  alternates between the two nodes and, like a load balancer, fails over to the other one on
  a connection error. It never resubmits after a 202; it retries only when no answer came, and
  a POST whose answer was lost in transit may then be stored twice: such POSTs are counted and
  the duplicates are looked for in the database (every source is distinct, so a source stored
  twice is a duplicate), never hidden.
- meanwhile: one worker is SIGKILLed while it grades (the victim is picked from the database,
  a row `running` on its first attempt, and its worker from the job it logged), and one API
  node is restarted (SIGTERM, then started again on the same port).
- then a database outage (issue #24): with `--outage-submissions` more in flight from the
  same clients, PostgreSQL is stopped as by a crash (`pg_ctl -m immediate`) for
  `--outage-seconds` and started again. Clients meet 503 `database_unavailable` (retried after
  its Retry-After, same Idempotency-Key) or lost answers; it reports lost and doubled
  submissions (doubled: a job started more than once), the highest attempt number, the
  recovery time (PostgreSQL back to the last grade of the phase stored) and the
  submit-to-start latency of single submissions before and after the outage.

Then, from the database: every accepted id has exactly one row, `done`, with verdict
`accepted`; no duplicate; no Procrastinate job left todo/doing/failed; the distribution of
`attempts`; from the workers' logs, every job execution and its result (a grade stored twice,
or graded into two different results, would show there). It prints the redelivery delay
(the second claim's started_at minus the kill time), p50/p95 of finished_at - created_at,
throughput, and throughput with 1 and 2 worker processes (`--scaling-submissions` each).

    .venv/bin/python bench/scaleout.py                  # the full run: 500 from 20 clients
    .venv/bin/python bench/scaleout.py --submissions 60 --scaling-submissions 20   # quick

Exit status 0 when every check passed; the summary says which did not.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import queue
import random
import re
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import psycopg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from api_fixtures import (  # noqa: E402
    GRADING_WORKER_STARTED,
    PostgresCluster,
    SessionProcess,
    find_pg_bin,
    free_port,
    service_env,
)
from common import PROBLEM_ID, loadavg, machine, new_program  # noqa: E402

STARTUP_SECONDS = 180.0  # a guard against hanging (3 workers start their pools on 2 cores)
VERDICT_SECONDS = 900.0  # a client gives up on a submission after this (then: lost)
RUN_EVERY = 5  # every 5th submission is mode=run with ?wait=true
# "Job jaxjudge.grade_submission[12](submission_id='ab..') ended with status: Success,
# lasted 0.512 s - Result: accepted" (Procrastinate's worker log at level info).
JOB_START = re.compile(r"Starting job \S+\[(\d+)\]\(submission_id='([0-9a-f]+)'\)")
JOB_END = re.compile(r"Job \S+\[(\d+)\]\(submission_id='([0-9a-f]+)'\) ended with status: "
                     r"([^,]+),(?: lasted [0-9.]+ s)?(?: - Result: (.*))?$")


def machine_line() -> str:
    pg = find_pg_bin()
    return machine(f"procrastinate {metadata.version('procrastinate')}",
                   f"PostgreSQL {pg.parent.name if pg else '?'}")


def pct(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


# -- CPU accounting ----------------------------------------------------------------------------
def process_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds of the process and of its children it has reaped)."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        table[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / tick)
    return table


def tree_cpu(table: dict[int, tuple[int, float]], roots: list[int]) -> float:
    """CPU seconds of the process trees under `roots`: a tree's total grows by exactly the
    CPU its processes used, as long as its root lives (exited processes are reaped inside it:
    a grade's sandboxed stages by their worker's processes, backends by the postmaster)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, todo, seen = 0.0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in table:
            continue
        seen.add(pid)
        total += table[pid][1]
        todo.extend(children.get(pid, []))
    return total


def postmaster_pid(url: str) -> int | None:
    """The throwaway cluster's postmaster: the parent of a backend."""
    with db(url) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        with contextlib.suppress(OSError, ValueError):
            stat = Path(f"/proc/{backend}/stat").read_text()
            return int(stat[stat.rindex(")") + 2:].split()[1])
    return None


def cpu_by_role(cluster: Cluster) -> dict[str, float]:
    table = process_table()
    pg = postmaster_pid(cluster.database_url)
    return {
        "workers": tree_cpu(table, [w.proc.pid for w in cluster.live_workers()]),
        "api_nodes": tree_cpu(table, [n.proc.pid for n in cluster.nodes if n.alive()]),
        "postgres": tree_cpu(table, [pg]) if pg is not None else float("nan"),
        "bench_clients": time.process_time(),
    }


# -- processes ---------------------------------------------------------------------------------
class Proc(SessionProcess):
    """A jaxjudge process of the bench, named in its messages."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], workdir: Path) -> None:
        self.name = name
        super().__init__(cmd, env, workdir, workdir / f"{name}.log")

    def wait_for(self, ready: Any, what: str, seconds: float = STARTUP_SECONDS) -> None:
        super().wait_for(ready, f"{self.name}: {what}", seconds)


@dataclass
class Cluster:
    """The PostgreSQL URL, the shared settings, and the processes on it."""

    database_url: str
    workdir: Path
    tokens: list[str]
    concurrency: int
    ports: list[int] = field(default_factory=lambda: [free_port(), free_port()])
    nodes: list[Proc] = field(default_factory=list)
    workers: list[Proc] = field(default_factory=list)
    spawned: int = 0

    def env(self, **extra: Any) -> dict[str, str]:
        return service_env(queue="postgres", database_url=self.database_url,
                           auth_tokens=",".join(self.tokens), rate_limit_per_minute=0,
                           queue_size=1000, **extra)

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.ports]

    def start_node(self, index: int) -> Proc:
        port = self.ports[index]
        node = Proc(f"node{index + 1}-{len(self.nodes)}",
                    [sys.executable, "-m", "jaxjudge.cli.service", "serve", "--host", "127.0.0.1",
                     "--port", str(port)], self.env(log_level="warning"), self.workdir)

        def ready() -> bool:
            with contextlib.suppress(httpx.TransportError):
                return httpx.get(f"{self.urls[index]}/healthz", timeout=2).status_code == 200
            return False

        node.wait_for(ready, "/healthz")
        self.nodes.append(node)
        return node

    def start_workers(self, count: int) -> list[Proc]:
        started = []
        for _ in range(count):
            self.spawned += 1
            started.append(Proc(f"worker{self.spawned}",
                                [sys.executable, "-m", "jaxjudge.cli.service", "worker",
                                 "--concurrency", str(self.concurrency)],
                                self.env(log_level="info"), self.workdir))
        for w in started:
            w.wait_for(lambda w=w: GRADING_WORKER_STARTED in w.log(), "worker start")
        self.workers.extend(started)
        return started

    def live_workers(self) -> list[Proc]:
        return [w for w in self.workers if w.alive()]

    def stop_all(self) -> None:
        for p in [*self.nodes, *self.workers]:
            if p.alive():
                p.stop(60)


def db(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"),
                           autocommit=True)


# -- clients -----------------------------------------------------------------------------------
@dataclass
class Accepted:
    index: int
    id: str
    mode: str
    node: int  # the node whose 202/200 we got
    first_try: float  # wall clock of the first POST attempt for this source
    verdict_seen: float | None = None  # wall clock the client saw `done`
    verdict: str | None = None
    posts: int = 1  # POST attempts for this source (1 unless a retry happened)


@dataclass
class Tally:
    accepted: list[Accepted] = field(default_factory=list)
    failovers: int = 0  # connection refused/unreachable: nothing sent, tried the other node
    lost_answers: list[int] = field(default_factory=list)  # source index: POST sent, no answer
    rejected_503: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    poll_errors: int = 0
    gave_up: list[str] = field(default_factory=list)  # accepted ids never seen done
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count_accepted(self) -> int:
        with self.lock:
            return len(self.accepted)


def client_loop(k: int, token: str, urls: list[str], work: queue.Queue[tuple[int, str]],
                tally: Tally) -> None:
    """One learner: submit, wait for the verdict, submit the next; spread over both nodes."""
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.Client(base_url=u, headers=headers, timeout=60) for u in urls]
    turn = k
    try:
        while True:
            try:
                index, source = work.get_nowait()
            except queue.Empty:
                return
            mode = "run" if index % RUN_EVERY == 0 else "submit"
            node = turn % 2
            turn += 1
            first_try = time.time()
            posts = 0
            body: dict[str, Any] | None = None
            # One key for every try of this submission: a retry after a lost answer gets the
            # submission the first try stored, on either node.
            key = {"Idempotency-Key": f"bench-{index}-{first_try}"}
            while body is None:
                posts += 1
                try:
                    r = clients[node].post(
                        "/v1/submissions",
                        json={"problem_id": PROBLEM_ID, "source": source, "mode": mode},
                        params={"wait": "true"} if mode == "run" else {},
                        headers=key,
                    )
                except (httpx.ConnectError, httpx.ConnectTimeout):
                    # Nothing reached the node: the load balancer's failover.
                    with tally.lock:
                        tally.failovers += 1
                    node = 1 - node
                    time.sleep(0.05)
                    continue
                except httpx.TransportError as exc:
                    # Sent, no answer: it may be stored. The retry carries the same
                    # Idempotency-Key; the database check would still find any duplicate.
                    with tally.lock:
                        tally.lost_answers.append(index)
                        tally.errors[f"POST {type(exc).__name__}"] += 1
                    node = 1 - node
                    time.sleep(0.05)
                    continue
                if r.status_code == 503:
                    with tally.lock:
                        tally.rejected_503 += 1
                    time.sleep(min(5.0, float(r.headers.get("Retry-After", "1"))))
                    continue
                if r.status_code not in (200, 202):
                    with tally.lock:
                        tally.errors[f"POST HTTP {r.status_code}"] += 1
                    break
                body = r.json()
            if body is None:
                continue
            rec = Accepted(index, body["id"], mode, node, first_try, posts=posts)
            with tally.lock:
                tally.accepted.append(rec)
            if body["status"] == "done":
                rec.verdict_seen, rec.verdict = time.time(), body["verdict"]
                continue
            pause = 0.1
            deadline = time.monotonic() + VERDICT_SECONDS
            while time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(1.0, pause * 1.5)
                try:
                    g = clients[node].get(f"/v1/submissions/{rec.id}")
                except httpx.TransportError:
                    with tally.lock:
                        tally.poll_errors += 1
                    node = 1 - node
                    continue
                if g.status_code == 200 and g.json()["status"] == "done":
                    rec.verdict_seen, rec.verdict = time.time(), g.json()["verdict"]
                    break
            else:
                with tally.lock:
                    tally.gave_up.append(rec.id)
    finally:
        for c in clients:
            c.close()


def run_clients(cluster: Cluster, sources: list[tuple[int, str]], clients: int,
                tally: Tally) -> list[threading.Thread]:
    work: queue.Queue[tuple[int, str]] = queue.Queue()
    for item in sources:
        work.put(item)
    threads = [threading.Thread(target=client_loop, name=f"client{k}",
                                args=(k, cluster.tokens[k % len(cluster.tokens)], cluster.urls,
                                      work, tally), daemon=True)
               for k in range(clients)]
    for t in threads:
        t.start()
    return threads


# -- the faults --------------------------------------------------------------------------------
@dataclass
class Kill:
    worker: str = ""
    submission_id: str = ""
    at: float = 0.0  # wall clock of the SIGKILL
    grade_age: float = 0.0  # seconds the grade had been running at the kill
    mid_grade: bool = False  # the row was still running on attempt 1 after the kill
    redelivery_seconds: float | None = None
    attempts: int | None = None
    verdict: str | None = None


def kill_a_grading_worker(cluster: Cluster, url: str, limit: float = 120.0) -> Kill:
    """SIGKILL the worker grading a freshly claimed submission (found in the database, its
    worker found by the job it logged as started and not ended)."""
    kill = Kill()
    deadline = time.monotonic() + limit
    with db(url) as conn:
        while time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT id, extract(epoch FROM clock_timestamp() - started_at) FROM submissions "
                "WHERE status = 'running' AND attempts = 1 ORDER BY started_at DESC LIMIT 3"
            ).fetchall()
            for sid, age in rows:
                if age > 0.15:  # too late in its grade to be sure the kill lands inside it
                    continue
                owners = [w for w in cluster.live_workers()
                          if f"submission_id='{sid}')" in (text := w.log())
                          and f"submission_id='{sid}') ended" not in text]
                if len(owners) != 1:
                    continue
                victim = owners[0]
                victim.kill()
                kill.at = time.time()
                kill.worker, kill.submission_id, kill.grade_age = victim.name, sid, float(age)
                time.sleep(0.5)
                status, attempts = conn.execute(
                    "SELECT status, attempts FROM submissions WHERE id = %s", (sid,)).fetchone()
                kill.mid_grade = (status, attempts) == ("running", 1)
                return kill
            time.sleep(0.01)
    raise RuntimeError(f"found no freshly claimed grade to interrupt in {limit} s")


@dataclass
class Restart:
    node: str = ""
    at: float = 0.0
    stop_seconds: float = 0.0  # SIGTERM to exit (in-flight requests finish first)
    down_seconds: float = 0.0  # SIGTERM to /healthz answering again


def restart_node(cluster: Cluster, index: int) -> Restart:
    node = next(n for n in reversed(cluster.nodes) if n.name.startswith(f"node{index + 1}-"))
    restart = Restart(node=f"node{index + 1}", at=time.time())
    t0 = time.monotonic()
    restart.stop_seconds = node.stop(60)
    cluster.start_node(index)
    restart.down_seconds = time.monotonic() - t0
    return restart


# -- the database's account --------------------------------------------------------------------
def executions(cluster: Cluster) -> dict[str, list[tuple[str, str | None]]]:
    """Per submission, every job execution the workers logged: (status, result)."""
    out: dict[str, list[tuple[str, str | None]]] = {}
    for w in cluster.workers:
        for line in w.log().splitlines():
            m = JOB_END.search(line)
            if m:
                out.setdefault(m.group(2), []).append((m.group(3), m.group(4)))
    return out


def started_jobs(cluster: Cluster) -> Counter[str]:
    c: Counter[str] = Counter()
    for w in cluster.workers:
        for m in JOB_START.finditer(w.log()):
            c[m.group(2)] += 1
    return c


def account(url: str, tally: Tally, expected: int) -> dict[str, Any]:
    """Check every accepted submission in the database; returns the figures and problems."""
    with db(url) as conn:
        rows = {r[0]: r for r in conn.execute(
            "SELECT id, status, verdict, attempts, created_at, started_at, finished_at, "
            "source_sha256, report_json FROM submissions").fetchall()}
        jobs = dict(conn.execute(
            "SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1").fetchall())
        by_source = conn.execute(
            "SELECT source_sha256, count(*) FROM submissions GROUP BY 1 HAVING count(*) > 1"
        ).fetchall()
    ids = [a.id for a in tally.accepted]
    problems: list[str] = []
    missing = [i for i in ids if i not in rows]
    not_done = [i for i in ids if i in rows and rows[i][1] != "done"]
    wrong = {i: (rows[i][2], json.loads(rows[i][8] or "{}").get("message", "")[:300])
             for i in ids if i in rows and rows[i][1] == "done" and rows[i][2] != "accepted"}
    seen_mismatch = [a.id for a in tally.accepted
                     if a.verdict is not None and a.id in rows and a.verdict != rows[a.id][2]]
    if len(set(ids)) != len(ids):
        problems.append(f"the service gave the same id twice: {len(ids) - len(set(ids))}")
    if len(ids) != expected:
        problems.append(f"{expected - len(ids)} sources never got a 202/200")
    if missing:
        problems.append(f"LOST: {len(missing)} accepted ids have no row: {missing[:5]}")
    if not_done:
        problems.append(f"UNFINISHED: {len(not_done)} rows not done: "
                        f"{[(i, rows[i][1], rows[i][3]) for i in not_done[:5]]}")
    if wrong:
        problems.append(f"WRONG VERDICT: {len(wrong)}: {list(wrong.items())[:5]}")
    if seen_mismatch:
        problems.append(f"the client saw another verdict than stored: {seen_mismatch[:5]}")
    if by_source:
        problems.append(f"DUPLICATE: {len(by_source)} sources stored more than once "
                        f"(lost POST answers: {len(tally.lost_answers)})")
    if tally.gave_up:
        problems.append(f"clients gave up waiting on {len(tally.gave_up)}: {tally.gave_up[:5]}")
    if any(jobs.get(s) for s in ("todo", "doing", "failed")):
        problems.append(f"jobs left behind: {jobs}")
    done = [rows[i] for i in ids if i in rows and rows[i][1] == "done"]
    latency = [(r[6] - r[4]).total_seconds() for r in done]
    client_latency = [a.verdict_seen - a.first_try for a in tally.accepted if a.verdict_seen]
    span = (max(r[6] for r in done) - min(r[4] for r in done)).total_seconds() if done else 0.0
    return {
        "accepted": len(ids),
        "rows": len(rows),
        "done_accepted": sum(1 for r in done if r[2] == "accepted"),
        "lost": len(missing),
        "duplicates": len(by_source),
        "wrong_verdicts": {k: list(v) for k, v in wrong.items()},
        "jobs_left": jobs,
        "attempts": dict(sorted(Counter(r[3] for r in done).items())),
        "latency_p50": pct(latency, 50),
        "latency_p95": pct(latency, 95),
        "latency_max": max(latency) if latency else float("nan"),
        "client_p50": pct(client_latency, 50),
        "client_p95": pct(client_latency, 95),
        "span_seconds": span,
        "throughput": len(done) / span if span else 0.0,
        "rows_by_id": rows,
        "problems": problems,
    }


def check_executions(cluster: Cluster, ids: list[str]) -> tuple[dict[str, Any], list[str]]:
    """From the workers' logs: each accepted submission was stored by exactly one execution;
    any other execution stored nothing (fenced or already done)."""
    ex = executions(cluster)
    starts = started_jobs(cluster)
    problems: list[str] = []
    stored_twice = [i for i in ids if sum(1 for s, r in ex.get(i, []) if s == "Success"
                                          and r not in (None, "nothing stored")) > 1]
    never = [i for i in ids if not any(s == "Success" and r not in (None, "nothing stored")
                                       for s, r in ex.get(i, []))]
    results = {i: {r for s, r in ex.get(i, []) if s == "Success" and r != "nothing stored"}
               for i in ids}
    different = [i for i, rs in results.items() if len(rs) > 1]
    nothing_stored = sum(1 for i in ids for s, r in ex.get(i, []) if r == "nothing stored")
    not_success = Counter(s for i in ids for s, _ in ex.get(i, []) if s != "Success")
    unended = sum(max(0, starts[i] - len(ex.get(i, []))) for i in ids)
    if stored_twice:
        problems.append(f"STORED TWICE (by the logs): {stored_twice[:5]}")
    if different:
        problems.append(f"GRADED INTO DIFFERENT RESULTS: {[(i, results[i]) for i in different]}")
    if never:
        problems.append(f"no logged execution stored {len(never)}: {never[:5]}")
    figures = {
        "executions": sum(starts[i] for i in ids),
        "ended_without_storing": nothing_stored,
        "not_success": dict(not_success),
        "started_never_ended": unended,  # the SIGKILLed grade
    }
    return figures, problems


# -- the phases --------------------------------------------------------------------------------
def sources(count: int, nonce: str, start: int = 0) -> list[tuple[int, str]]:
    return [(i, new_program(f"{i + 1}.{nonce}") + f"# scaleout bench {nonce} {i}\n")
            for i in range(start, start + count)]


def main_phase(cluster: Cluster, args: argparse.Namespace, nonce: str,
               say: Any) -> dict[str, Any]:
    tally = Tally()
    started = time.time()
    threads = run_clients(cluster, sources(args.submissions, nonce), args.clients, tally)
    kill_after = int(args.submissions * 0.3)
    restart_after = int(args.submissions * 0.55)
    while tally.count_accepted() < kill_after and any(t.is_alive() for t in threads):
        time.sleep(0.05)
    kill = kill_a_grading_worker(cluster, args.database_url)
    say(f"  SIGKILLed {kill.worker} at +{kill.at - started:.1f} s while it graded "
        f"{kill.submission_id} ({kill.grade_age * 1000:.0f} ms into it); "
        f"still running on attempt 1 after the kill: {kill.mid_grade}")
    while tally.count_accepted() < restart_after and any(t.is_alive() for t in threads):
        time.sleep(0.05)
    restart = restart_node(cluster, 1)
    say(f"  restarted {restart.node} at +{restart.at - started:.1f} s: SIGTERM to exit "
        f"{restart.stop_seconds:.1f} s, to /healthz again {restart.down_seconds:.1f} s")
    for t in threads:
        t.join()
    wall = time.time() - started
    say(f"  all verdicts in after {wall:.1f} s; load average {loadavg()}")
    acc = account(args.database_url, tally, args.submissions)
    ex, ex_problems = check_executions(cluster, [a.id for a in tally.accepted])
    victim = acc["rows_by_id"].get(kill.submission_id)
    if victim is not None:
        kill.attempts, kill.verdict = victim[3], victim[2]
        if victim[3] == 2 and victim[5] is not None:
            kill.redelivery_seconds = victim[5].timestamp() - kill.at
    problems = acc["problems"] + ex_problems
    if not kill.mid_grade:
        problems.append("the SIGKILL did not land mid-grade (the grade had finished): "
                        "no redelivery was exercised")
    elif kill.attempts != 2:
        problems.append(f"the interrupted submission ended with attempts={kill.attempts}")
    acc.pop("rows_by_id")
    return {"wall_seconds": wall, **acc, **ex, "problems": problems,
            "kill": asdict(kill), "restart": asdict(restart),
            "failovers": tally.failovers, "lost_post_answers": len(tally.lost_answers),
            "lost_post_answer_indexes": tally.lost_answers, "rejected_503": tally.rejected_503,
            "retried_posts": sum(1 for a in tally.accepted if a.posts > 1),
            "poll_errors": tally.poll_errors, "client_errors": dict(tally.errors),
            "modes": dict(Counter(a.mode for a in tally.accepted))}


def scaling_phase(cluster: Cluster, args: argparse.Namespace, nonce: str, workers: int,
                  offset: int) -> dict[str, Any]:
    """`workers` processes alone on the queue: a warm-up (2 per worker, not counted), then
    `--scaling-submissions` from the same clients; throughput from the database."""
    for w in cluster.live_workers():
        w.stop(60)
    cluster.start_workers(workers)
    warm = Tally()
    for t in run_clients(cluster, sources(2 * workers, nonce, offset), 2 * workers, warm):
        t.join()
    tally = Tally()
    before = cpu_by_role(cluster)
    for t in run_clients(cluster, sources(args.scaling_submissions, nonce,
                                          offset + 2 * workers),
                         args.clients, tally):
        t.join()
    after = cpu_by_role(cluster)
    acc = account(args.database_url, tally, args.scaling_submissions)
    acc.pop("rows_by_id")
    acc["cpu_per_grade"] = {k: (after[k] - before[k]) / max(1, acc["accepted"]) for k in after}
    if warm.gave_up or any(a.verdict != "accepted" for a in warm.accepted):
        acc["problems"].append("warm-up submissions did not all end accepted")
    return {"workers": workers, "load": loadavg(), **acc}


def start_latency(cluster: Cluster, nonce: str, offset: int, count: int = 5) -> float:
    """Median seconds from a lone submission's commit to its grade starting (idle workers:
    the job's NOTIFY wakes one, or else its next poll)."""
    waits = []
    for index, source in sources(count, nonce, offset):
        tally = Tally()
        for t in run_clients(cluster, [(index, source)], 1, tally):
            t.join()
        with db(cluster.database_url) as conn:
            for a in tally.accepted:
                created, started = conn.execute(
                    "SELECT created_at, started_at FROM submissions WHERE id = %s",
                    (a.id,)).fetchone()
                waits.append((started - created).total_seconds())
    return statistics.median(waits) if waits else float("nan")


def outage_phase(cluster: Cluster, pg: PostgresCluster, args: argparse.Namespace, nonce: str,
                 offset: int, say: Any) -> dict[str, Any]:
    """PostgreSQL stopped for `--outage-seconds` with grades in flight (see the docstring)."""
    before = start_latency(cluster, nonce, offset)
    offset += 5
    tally = Tally()
    threads = run_clients(cluster, sources(args.outage_submissions, nonce, offset),
                          args.clients, tally)
    offset += args.outage_submissions
    deadline = time.monotonic() + 300
    with db(cluster.database_url) as conn:
        while time.monotonic() < deadline:
            running = conn.execute(
                "SELECT count(*) FROM submissions WHERE status = 'running'").fetchone()[0]
            if running >= len(cluster.live_workers()) * args.concurrency:
                break
            time.sleep(0.05)
    in_flight = running
    stopped = time.time()
    pg.stop("immediate")
    time.sleep(args.outage_seconds)
    pg.start()
    back = time.time()
    say(f"  PostgreSQL stopped (immediate) at {in_flight} grades running, for "
        f"{back - stopped:.1f} s")
    for t in threads:
        t.join()
    acc = account(cluster.database_url, tally, args.outage_submissions)
    starts = started_jobs(cluster)
    ids = [a.id for a in tally.accepted]
    doubled = [i for i in ids if starts[i] > 1]
    done = [acc["rows_by_id"][i] for i in ids if i in acc["rows_by_id"]]
    finished = [r[6].timestamp() for r in done if r[6] is not None]
    recovery = max(finished) - back if finished else float("nan")
    first_after = min((f for f in finished if f > back), default=float("nan")) - back
    after = start_latency(cluster, nonce, offset)
    acc.pop("rows_by_id")
    problems = list(acc["problems"])
    if doubled:
        problems.append(f"DOUBLED by the outage: {len(doubled)} jobs started more than once: "
                        f"{doubled[:5]}")
    max_attempts = max((r[3] for r in done), default=0)
    if max_attempts > 2:
        problems.append(f"the outage raised attempts to {max_attempts}")
    return {**acc, "problems": problems, "in_flight": in_flight,
            "outage_seconds": back - stopped, "doubled": len(doubled),
            "max_attempts": max_attempts, "recovery_seconds": recovery,
            "first_grade_after_seconds": first_after,
            "start_latency_before": before, "start_latency_after": after,
            "rejected_503": tally.rejected_503, "lost_post_answers": len(tally.lost_answers),
            "poll_errors": tally.poll_errors, "load": loadavg()}


def fmt_s(x: float | None) -> str:
    return "-" if x is None or x != x else f"{x:.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=500, help="main run (default 500)")
    parser.add_argument("--clients", type=int, default=20, help="client threads (default 20)")
    parser.add_argument("--workers", type=int, default=3, help="worker processes (default 3)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="grades at once per worker process (default 1)")
    parser.add_argument("--scaling-submissions", type=int, default=60,
                        help="submissions for each of the 1- and 2-worker runs (0: skip)")
    parser.add_argument("--outage-submissions", type=int, default=60,
                        help="submissions in flight around the database outage (0: skip)")
    parser.add_argument("--outage-seconds", type=float, default=10.0,
                        help="how long PostgreSQL stays stopped (default 10)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep-logs", type=Path, help="copy the process logs here")
    args = parser.parse_args()
    if args.submissions < 20 or args.clients < 1 or args.workers < 2:
        parser.error("needs --submissions >= 20, --clients >= 1, --workers >= 2 (one is killed)")

    out: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        out.append(text)

    date = datetime.datetime.now().isoformat(timespec="seconds")
    say(f"jaxjudge scale-out bench, {date}")
    say(f"Machine: {machine_line()}; load average {loadavg()}")
    nonce = secrets.token_hex(3)
    nonce = str(int(nonce, 16))  # digits only: it is part of a float literal
    random.seed(nonce)
    tokens = [f"bench-client-{k:02d}-{secrets.token_hex(8)}" for k in range(args.clients)]
    result: dict[str, Any] = {"date": date, "machine": machine_line(), "args": {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    pg = PostgresCluster()
    url = pg.url
    with tempfile.TemporaryDirectory(prefix="jaxjudge-scaleout-") as tmp:
        workdir = Path(tmp)
        args.database_url = url
        cluster = Cluster(url, workdir, tokens, args.concurrency)
        try:
            t0 = time.monotonic()
            cluster.start_node(0)  # migrates the empty database first, alone
            cluster.start_node(1)
            cluster.start_workers(args.workers)
            say(f"2 API nodes ({', '.join(cluster.urls)}) and {args.workers} workers "
                f"(concurrency {args.concurrency}) up in {time.monotonic() - t0:.1f} s")
            say(f"Main run: {args.submissions} distinct correct sources of {PROBLEM_ID} from "
                f"{args.clients} clients (1 in {RUN_EVERY} mode=run with ?wait=true)")
            main = main_phase(cluster, args, nonce, say)
            result["main"] = main
            if args.outage_submissions:
                say(f"Database outage: {args.outage_submissions} submissions from "
                    f"{args.clients} clients, PostgreSQL stopped {args.outage_seconds:.0f} s "
                    "with grades in flight")
                result["outage"] = outage_phase(cluster, pg, args, nonce,
                                                args.submissions + 10_000, say)
            scaling = []
            if args.scaling_submissions:
                offset = args.submissions
                for n in (1, 2):
                    say(f"Scaling run: {n} worker process(es), "
                        f"{args.scaling_submissions} submissions from {args.clients} clients")
                    s = scaling_phase(cluster, args, nonce, n, offset)
                    offset += args.scaling_submissions + 2 * n
                    say(f"  {s['throughput']:.2f} grades/s, p50 {fmt_s(s['latency_p50'])}, "
                        f"p95 {fmt_s(s['latency_p95'])}; load average {s['load']}")
                    scaling.append(s)
            result["scaling"] = scaling
        finally:
            cluster.stop_all()
            pg.close()
            if args.keep_logs:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for p in [*cluster.nodes, *cluster.workers]:
                    with contextlib.suppress(OSError):
                        (args.keep_logs / p.log_path.name).write_bytes(p.log_path.read_bytes())
    result["load_after"] = loadavg()

    m, kill, rs = result["main"], result["main"]["kill"], result["main"]["restart"]
    rows = [
        ("submissions accepted (202/200) / stored rows", f"{m['accepted']} / {m['rows']}"),
        ("modes", ", ".join(f"{k} {v}" for k, v in sorted(m["modes"].items()))),
        ("done with verdict accepted", f"{m['done_accepted']}"),
        ("other verdicts", f"{len(m['wrong_verdicts'])}"),
        ("lost (accepted, no done row)", f"{m['lost']}"),
        ("sources stored twice", f"{m['duplicates']} (POSTs whose answer was lost: "
                                 f"{m['lost_post_answers']})"),
        ("job executions / stored by more than one", f"{m['executions']} / 0"
         if not any("STORED TWICE" in p for p in m["problems"]) else "see problems"),
        ("executions that stored nothing (fenced)", f"{m['ended_without_storing']}"),
        ("jobs left todo/doing/failed",
         f"{sum(m['jobs_left'].get(s, 0) for s in ('todo', 'doing', 'failed'))}"),
        ("attempts distribution", ", ".join(f"{k}: {v}" for k, v in m["attempts"].items())),
        ("worker SIGKILL", f"{kill['worker']}, {kill['grade_age'] * 1000:.0f} ms into a grade;"
                           f" mid-grade {kill['mid_grade']}, ended attempts {kill['attempts']},"
                           f" {kill['verdict']}"),
        ("redelivery delay (2nd claim - kill)", fmt_s(kill["redelivery_seconds"])),
        ("API node restart", f"{rs['node']}: exit {rs['stop_seconds']:.1f} s, back "
                             f"{rs['down_seconds']:.1f} s; failovers {m['failovers']}, "
                             f"503s {m['rejected_503']}, poll errors {m['poll_errors']}"),
        ("submit-to-verdict p50 / p95 / max (DB)",
         f"{fmt_s(m['latency_p50'])} / {fmt_s(m['latency_p95'])} / {fmt_s(m['latency_max'])}"),
        ("submit-to-verdict p50 / p95 (client saw)",
         f"{fmt_s(m['client_p50'])} / {fmt_s(m['client_p95'])}"),
        (f"throughput, {args.workers} workers then {args.workers - 1}",
         f"{m['throughput']:.2f} grades/s ({m['accepted']} in {m['span_seconds']:.1f} s)"),
    ]
    if "outage" in result:
        o = result["outage"]
        rows += [
            (f"DB outage: {o['outage_seconds']:.1f} s, {o['in_flight']} grades running",
             f"{o['accepted']} accepted, lost {o['lost']}, doubled {o['doubled']}, "
             f"duplicates {o['duplicates']}, max attempts {o['max_attempts']} "
             f"({', '.join(f'{k}: {v}' for k, v in o['attempts'].items())})"),
            ("DB outage: recovery (back to first / last grade stored)",
             f"{fmt_s(o['first_grade_after_seconds'])} / {fmt_s(o['recovery_seconds'])}; "
             f"503s {o['rejected_503']}, lost POST answers {o['lost_post_answers']}, "
             f"poll errors {o['poll_errors']}"),
            ("submit-to-start, lone submission: before / after the outage",
             f"{fmt_s(o['start_latency_before'])} / {fmt_s(o['start_latency_after'])}"),
        ]
    for s in result["scaling"]:
        rows.append((f"throughput, {s['workers']} worker process(es)",
                     f"{s['throughput']:.2f} grades/s ({s['accepted']} in "
                     f"{s['span_seconds']:.1f} s), p50 {fmt_s(s['latency_p50'])}"))
    for s in result["scaling"]:
        c = s["cpu_per_grade"]
        rows.append((f"CPU s per grade, {s['workers']} worker(s): workers / API / PostgreSQL",
                     f"{c['workers']:.3f} / {c['api_nodes']:.3f} / {c['postgres']:.3f} "
                     f"(bench clients {c['bench_clients']:.3f})"))
    say()
    say("| measure | value |")
    say("|---|---|")
    for k, v in rows:
        say(f"| {k} | {v} |")
    say()
    if len(result["scaling"]) == 2:
        one, two = (s["throughput"] for s in result["scaling"])
        c = result["scaling"][1]["cpu_per_grade"]
        per_core = 1 / c["workers"] if c["workers"] else float("nan")
        db_rate = 1 / c["postgres"] if c["postgres"] else float("inf")
        say(f"1 -> 2 worker processes: {one:.2f} -> {two:.2f} grades/s ({two / one:.2f}x) on "
            f"{os.cpu_count()} cores shared with the API nodes, PostgreSQL and the clients. "
            f"A grade costs {c['workers']:.2f} CPU s in its worker (sandboxed stages "
            f"included), so one core grades at most ~{per_core:.1f}/s; workers share nothing "
            f"but the database, so N machines of c cores each grade ~{per_core:.1f} x N x c "
            f"per second, until PostgreSQL's {c['postgres'] * 1000:.0f} ms of CPU per "
            f"submission saturates its cores (~{db_rate:.0f} submissions/s per database "
            f"core) and the API nodes' {c['api_nodes'] * 1000:.0f} ms (plus polling) theirs. "
            f"More worker processes than cores (like {args.workers} here) only share cores.")
    problems = (m["problems"] + result.get("outage", {}).get("problems", [])
                + [p for s in result["scaling"] for p in s["problems"]])
    say(f"Problems: {len(problems)}")
    for p in problems:
        say(f"  - {p}")
    say(f"Load average after: {result['load_after']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
