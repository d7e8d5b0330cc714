"""A bounded load run against the HTTP service (not part of the unit suite).

Starts its own server on loopback with a fresh SQLite database, sends N submissions (mode run)
at a fixed concurrency, polls each to completion and prints what happened: how many were
accepted (202), rejected (503), lost (accepted but never finished), errored, the verdicts, and
p50/p95/p99 latencies of the POST and of submit-to-done.

    .venv/bin/python bench/load_http.py                 # 200 submissions, concurrency 20
    .venv/bin/python bench/load_http.py -n 40 --source broken --workers 2

Exit status 0 when nothing was lost or errored.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
PROBLEM = "rematerialized-mlp-block"
SOURCES = {
    "reference": (REPO / "problems" / PROBLEM / "reference.py").read_text(encoding="utf-8"),
    "broken": "def solve(:\n",
}


@dataclass
class Tally:
    accepted: int = 0
    rejected: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    post_latency: list[float] = field(default_factory=list)
    done_latency: list[float] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentiles(values: list[float]) -> str:
    if len(values) < 2:
        return "n/a" if not values else f"{values[0] * 1000:.0f} ms (single sample)"
    q = statistics.quantiles(values, n=100, method="inclusive")
    return f"p50 {q[49] * 1000:.0f} ms  p95 {q[94] * 1000:.0f} ms  p99 {q[98] * 1000:.0f} ms"


async def one(
    client: httpx.AsyncClient, source: str, sem: asyncio.Semaphore, tally: Tally, deadline: float
) -> None:
    async with sem:
        started = time.monotonic()
        try:
            r = await client.post(
                "/v1/submissions", json={"problem_id": PROBLEM, "source": source, "mode": "run"}
            )
        except httpx.HTTPError as exc:
            tally.errors[type(exc).__name__] += 1
            return
        tally.post_latency.append(time.monotonic() - started)
        if r.status_code == 503:
            tally.rejected += 1
            return
        if r.status_code != 202:
            tally.errors[f"HTTP {r.status_code}"] += 1
            return
        tally.accepted += 1
        sid = r.json()["id"]
        # Each of the `concurrency` clients waits for its grade before submitting again,
        # polling at 50 ms, backing off to 0.5 s (a fixed 0.5 s hid sub-second grades).
        pause = 0.05
        while time.monotonic() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 1.5, 0.5)
            try:
                g = await client.get(f"/v1/submissions/{sid}")
            except httpx.HTTPError as exc:
                tally.errors[f"poll {type(exc).__name__}"] += 1
                continue
            body = g.json()
            if g.status_code == 200 and body["status"] == "done":
                tally.verdicts[body["verdict"]] += 1
                tally.done_latency.append(time.monotonic() - started)
                return
        tally.lost += 1


async def run_load(base_url: str, args: argparse.Namespace) -> Tally:
    tally = Tally()
    sem = asyncio.Semaphore(args.concurrency)
    deadline = time.monotonic() + args.timeout
    limits = httpx.Limits(max_connections=args.concurrency * 2)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        # Every submission is a distinct source (a numbered comment), so the service's report
        # cache for resubmitted identical sources never answers: each one is really graded.
        base = SOURCES[args.source]
        sources = [f"{base}\n# load test {i}\n" for i in range(args.n)]
        await asyncio.gather(*(one(client, s, sem, tally, deadline) for s in sources))
    return tally


def start_server(
    workdir: Path, port: int, args: argparse.Namespace, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`jaxjudge serve` on loopback with a fresh SQLite database in workdir; waits for /healthz."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["JAXJUDGE_DATABASE_URL"] = f"sqlite:///{workdir}/bench.db"
    env["JAXJUDGE_QUEUE_SIZE"] = str(args.queue_size)
    env["JAXJUDGE_LOG_LEVEL"] = "warning"
    if args.workers:
        env["JAXJUDGE_WORKERS"] = str(args.workers)
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "jaxjudge.cli.service", "serve", "--host", "127.0.0.1",
           "--port", str(port)]
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"server exited:\n{(workdir / 'server.log').read_text(errors='replace')}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    sys.exit("server did not start within 120 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (graceful: the pool's zygotes are shut down), SIGKILL the session if stuck."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200, help="submissions (default 200)")
    parser.add_argument("--concurrency", type=int, default=20, help="in flight (default 20)")
    parser.add_argument("--source", choices=sorted(SOURCES), default="reference")
    parser.add_argument("--workers", type=int, default=0, help="server workers (default: cores)")
    parser.add_argument("--queue-size", type=int, default=1000, help="server queue bound")
    parser.add_argument("--timeout", type=float, default=3600, help="give up after (seconds)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="jaxjudge-bench-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        proc = start_server(workdir, port, args)
        started = time.monotonic()
        try:
            tally = asyncio.run(run_load(f"http://127.0.0.1:{port}", args))
            with contextlib.suppress(httpx.HTTPError):
                info = httpx.get(f"http://127.0.0.1:{port}/v1/system", timeout=10).json()
                print(f"server: {info['workers']} workers, {info['database']}, "
                      f"stored {info['submissions']}")
        finally:
            stop_server(proc)
        elapsed = time.monotonic() - started

    print(f"{args.n} submissions ({args.source}, mode run) at concurrency {args.concurrency} "
          f"in {elapsed:.1f} s")
    print(f"accepted (202): {tally.accepted}  rejected (503): {tally.rejected}  "
          f"lost: {tally.lost}  errors: {sum(tally.errors.values())} {dict(tally.errors) or ''}")
    print(f"verdicts: {dict(tally.verdicts)}")
    print(f"POST latency:           {percentiles(tally.post_latency)}")
    print(f"submit-to-done latency: {percentiles(tally.done_latency)}")
    if tally.done_latency:
        print(f"throughput: {len(tally.done_latency) / elapsed:.2f} grades/s")
    return 0 if not tally.lost and not tally.errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
