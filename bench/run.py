"""The performance benchmark (not the unit suite): cold processes vs the warm pool vs the floor.

In one run, side by side, grades the same mixed set of submissions (correct, wrong,
requirement-failing, a timeout) with
  (a) cold:  a fresh sandboxed interpreter per stage (`sandbox.run`, the default runner),
  (b) pool:  the warm zygote pool (`jaxjudge.isolation.pool`), first with empty caches (on-disk
  compile
             and results caches, in-memory program cache: "new program"), then again ("already
             seen": stage B and the program rules are answered from the caches; stage A, the
             submission's own code, always runs),
  (c) floor: both stages' `main()` called in this already-warm process (no sandbox; the timeout
             submission is left out since nothing could stop it), with the in-memory caches
             off (new programs) and on (seen),
at concurrency 1 and 2; then a soak of consecutive grades through one pool (zygote RSS first vs
last), and an HTTP load run (bench/load_http.py's client) against the real service, cold and
with the pool enabled in the server process. Prints a table and writes bench/RESULTS.md.

    .venv/bin/python bench/run.py              # ~2 minutes on 2 cores
    .venv/bin/python bench/run.py --quick      # fewer repetitions, no HTTP
    .venv/bin/python bench/run.py --soak 1000  # the 1,000-grade leak check
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import datetime
import os
import runpy
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from common import machine  # noqa: E402

from jaxjudge import Grader, load_problem  # noqa: E402
from jaxjudge.grading.caches import PROGRAM_CACHE_SIZE  # noqa: E402
from jaxjudge.isolation import pool, sandbox  # noqa: E402
from jaxjudge.isolation.xla import fast_compile_flags  # noqa: E402
from jaxjudge.problems.package import Limits  # noqa: E402

PROBLEM_ID = "rematerialized-mlp-block"
PROBLEM = load_problem(PROBLEM_ID)
SUBS = PROBLEM.submissions_dir
# The mixed set: two correct, one wrong, one requirement failure, one timeout.
MIXED = [
    "accepted_reference_style.py",
    "accepted_einsum_dot.py",
    "wrong_forgets_b2.py",
    "req_no_checkpoint.py",
    "tle_infinite_loop.py",
]
# A timeout costs its CPU limit. Limits count the submission's own work (cold starts get the jax
# import on top, sandbox.COLD_START_*); a correct solution needs ~0.1 s of CPU per stage warm.
LIMITS = Limits(wall_seconds=4, cpu_seconds=1, memory_mb=2048, output_kb=256)


@dataclass
class Sample:
    name: str
    seconds: float
    verdict: str


@dataclass
class Series:
    label: str
    samples: list[Sample] = field(default_factory=list)
    wall: float = 0.0
    concurrency: int = 1
    peaks: list[int] = field(default_factory=list)  # per-run peak memory of the stage runs

    def lat(self, q: int, names: set[str] | None = None) -> float:
        vals = sorted(s.seconds for s in self.samples if names is None or s.name in names)
        if not vals:
            return float("nan")
        if len(vals) == 1:
            return vals[0]
        return statistics.quantiles(vals, n=100, method="inclusive")[q - 1]

    @property
    def throughput(self) -> float:
        return len(self.samples) / self.wall if self.wall else float("nan")


def _recording(runner: Any, peaks: list[int]) -> Any:
    def wrapped(script: Path, job: Path, limits: sandbox.SandboxLimits, untrusted: bool,
                env: dict[str, str]) -> sandbox.SandboxResult:
        res = runner(script, job, limits, untrusted, env)
        if res.peak_memory_bytes:
            peaks.append(res.peak_memory_bytes)
        return res
    return wrapped


def _cold_runner(script: Path, job: Path, limits: sandbox.SandboxLimits, untrusted: bool,
                 env: dict[str, str]) -> sandbox.SandboxResult:
    return sandbox.run_stage(script, job, limits, env=env, untrusted=untrusted)


# The in-memory caches of stage B results and program-rule outcomes, kept across series the
# way a long-running service or grade-set keeps them.
_CACHES = Grader(program_cache=PROGRAM_CACHE_SIZE)
_CACHES_ON = [True]


def caches(on: bool) -> None:
    """Off: a process that has seen nothing (every series grader starts empty); on: the
    shared caches."""
    _CACHES_ON[0] = on


def _grader(runner: Any) -> Grader:
    g = Grader(runner=runner, program_cache=PROGRAM_CACHE_SIZE if _CACHES_ON[0] else 0)
    if _CACHES_ON[0]:
        g.programs, g.rules, g.tests = _CACHES.programs, _CACHES.rules, _CACHES.tests
    return g


_MAINS: dict[Path, Any] = {}


def _inprocess_runner(script: Path, job: Path, limits: sandbox.SandboxLimits, untrusted: bool,
                      env: dict[str, str]) -> sandbox.SandboxResult:
    """The floor: the stage's main() in this process, no isolation at all."""
    main = _MAINS.setdefault(script, runpy.run_path(str(script), run_name="jaxjudge_stage")["main"])
    t = time.perf_counter()
    rc = main(str(job))
    return sandbox.SandboxResult("exited", rc, None, time.perf_counter() - t, None, None,
                                 f"exit code {rc}", "", "")


def _source(name: str) -> bytes:
    return (SUBS / name).read_bytes()


def measure(label: str, runner: Any, names: list[str], *, concurrency: int = 1,
            mode: str = "submit") -> Series:
    series = Series(label, concurrency=concurrency)
    g = _grader(_recording(runner, series.peaks))

    def one(name: str) -> Sample:
        t = time.perf_counter()
        report = g.grade(PROBLEM, _source(name), mode, filename=name, limits=LIMITS)
        return Sample(name, time.perf_counter() - t, report.verdict.value)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as ex:
        series.samples = list(ex.map(one, names))
    series.wall = time.perf_counter() - t0
    return series


def mb(n: float | None) -> str:
    return "-" if not n else f"{n / 2**20:.0f} MB"


def ms(s: float) -> str:
    return f"{s * 1000:.0f} ms"


def http_load(n: int, with_pool: bool) -> str:
    """bench/load_http.py's client against a real server (cold, or with the pool enabled)."""
    import load_http

    workdir = Path(tempfile.mkdtemp(prefix="jaxjudge-bench-http-"))
    port = load_http.free_port()
    args = argparse.Namespace(concurrency=2, timeout=1200, n=n, source="reference",
                              workers=2, queue_size=1000)
    env = {"JAXJUDGE_WARM_POOL": "true" if with_pool else "false"}
    try:
        proc = load_http.start_server(workdir, port, args, extra_env=env)
        try:
            t0 = time.monotonic()
            tally = asyncio.run(load_http.run_load(f"http://127.0.0.1:{port}", args))
            elapsed = time.monotonic() - t0
        finally:
            load_http.stop_server(proc)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return (f"{n} x reference (mode run) at concurrency 2, {'warm pool' if with_pool else 'cold'}"
            f": {len(tally.done_latency) / elapsed:.2f} grades/s; submit-to-done "
            f"{load_http.percentiles(tally.done_latency)} (the client polls from 50 ms, backing "
            "off to 0.5 s); "
            f"verdicts {dict(tally.verdicts)}, lost {tally.lost}, errors {dict(tally.errors)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=4, help="passes over the mixed set (pool/floor)")
    ap.add_argument("--soak", type=int, default=60, help="consecutive grades for the leak check")
    ap.add_argument("--http", type=int, default=16, help="HTTP submissions per server (0: skip)")
    ap.add_argument("--quick", action="store_true", help="1 rep, short soak, no HTTP")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.soak, args.http = 1, 20, 0
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    started = time.monotonic()
    flags = fast_compile_flags()
    if flags:
        os.environ["XLA_FLAGS"] = flags  # for the in-process floor, before any backend exists
    say(f"# jaxjudge benchmark, {datetime.datetime.now().isoformat(timespec='seconds')}")
    say()
    say(f"Machine: {machine()}")
    prot = sandbox.protections()
    say("Sandbox layers: " + ", ".join(n for n, i in prot.items() if i["active"]))
    say(f"Problem {PROBLEM_ID}, mode submit ({len(PROBLEM.cases('submit'))} tests); mixed set: "
        + ", ".join(MIXED) + f"; limits cpu {LIMITS.cpu_seconds:g} s")
    say()
    correct = {"accepted_reference_style.py", "accepted_einsum_dot.py"}
    no_tle = [n for n in MIXED if not n.startswith("tle_")]

    # (a) cold: a fresh interpreter per stage and a grader that remembers nothing
    caches(False)
    cold1 = measure("cold c=1", _cold_runner, MIXED)
    cold2 = measure("cold c=2", _cold_runner, MIXED, concurrency=2)
    caches(True)

    # (b) pool, on an empty private compile cache
    cache = Path(tempfile.mkdtemp(prefix="jaxjudge-bench-cache-"))
    os.environ["JAXJUDGE_COMPILE_CACHE_DIR"] = str(cache)
    t = time.perf_counter()
    p = pool.WarmPool(2).start()
    pool_start = time.perf_counter() - t
    try:
        pool_new = measure("pool c=1 new programs", p.runner, MIXED)
        pool_seen = measure("pool c=1 seen programs", p.runner, MIXED * args.reps)
        pool2 = measure("pool c=2 (mixed, seen)", p.runner, MIXED * max(2, args.reps),
                        concurrency=2)
        p.settle()
        zmem = p.zygote_memory()
        stats = p.stats
    finally:
        p.close()
        os.environ.pop("JAXJUDGE_COMPILE_CACHE_DIR", None)
        shutil.rmtree(cache, ignore_errors=True)

    # (c) floor: the stages' code in this process, no isolation (no timeout submission:
    #     nothing could stop it); new programs with the caches off, then seen ones.
    caches(False)
    measure("floor warm-up", _inprocess_runner, no_tle[:1])
    floor1 = measure("floor c=1 new programs", _inprocess_runner, no_tle * args.reps)
    caches(True)
    measure("floor warm-up", _inprocess_runner, no_tle)
    floor_seen = measure("floor c=1 seen programs", _inprocess_runner, no_tle * args.reps)

    series = [cold1, cold2, pool_new, pool_seen, pool2, floor1, floor_seen]
    say("| series | grades | p50 all | p95 all | p50 correct | throughput | peak run memory |")
    say("|---|---|---|---|---|---|---|")
    for s in series:
        say(f"| {s.label} | {len(s.samples)} | {ms(s.lat(50))} | {ms(s.lat(95))} | "
            f"{ms(s.lat(50, correct))} | {s.throughput:.2f}/s | "
            f"{mb(max(s.peaks) if s.peaks else None)} |")
    say()
    verdicts = {s.label: sorted({(x.name, x.verdict) for x in s.samples}) for s in series}
    same = all(v == verdicts[cold1.label] for k, v in verdicts.items()
               if not k.startswith("floor"))
    if not same:
        for k, v in verdicts.items():
            say(f"  {k}: {v}")
    say(f"Verdicts identical across cold and pool series: {same} "
        f"({', '.join(f'{n}={v}' for n, v in verdicts[cold1.label])})")
    say(f"Pool: start {pool_start:.1f} s; {stats.runs} warm runs, {stats.cold_runs} cold "
        f"fallbacks, {stats.respawns} zygote starts, failures {stats.failures[:2]}")
    say("Zygotes: " + "; ".join(f"{z['name']} rss {mb(z.get('rss'))} pss {mb(z.get('pss'))}"
                                for z in zmem))
    say()
    r_ab = cold1.lat(50, correct) / pool_new.lat(50, correct)
    r_ab_seen = cold1.lat(50, correct) / pool_seen.lat(50, correct)
    r_bc = pool_new.lat(50, correct) / floor1.lat(50, correct)
    r_bc_seen = pool_seen.lat(50, correct) / floor_seen.lat(50, correct)
    say(f"Ratios (p50, correct submissions): (a)/(b) = {r_ab:.1f}x new programs, "
        f"{r_ab_seen:.1f}x seen; (b)/(c) = {r_bc:.2f}x new, {r_bc_seen:.2f}x seen")
    say(f"Throughput at concurrency 2 on the mixed set: cold {cold2.throughput:.2f}/s, "
        f"pool {pool2.throughput:.2f}/s")
    say()

    if args.soak:
        say(f"Soak: {args.soak} consecutive grades (mode run, reference and wrong alternating) "
            "through one pool, 1 worker, no recycling, in-memory caches off")
        caches(False)  # every grade runs both stages: both zygotes do the work they would
        with pool.WarmPool(1, jobs_per_zygote=10**9, compile_cache=False) as sp:
            first = sp.zygote_memory()
            names = ["accepted_reference_style.py", "wrong_forgets_b2.py"] * (args.soak // 2)
            soak = measure("soak", sp.runner, names, mode="run")
            sp.settle()
            last = sp.zygote_memory()
            say(f"  {len(soak.samples)} grades in {soak.wall:.1f} s, p50 {ms(soak.lat(50))}, "
                f"p95 {ms(soak.lat(95))}, max {ms(max(x.seconds for x in soak.samples))}; "
                f"zygote starts {sp.stats.respawns}, failures {len(sp.stats.failures)}")
            for a, b in zip(first, last, strict=True):
                say(f"  {a['name']}: rss {mb(a.get('rss'))} -> {mb(b.get('rss'))}, "
                    f"pss {mb(a.get('pss'))} -> {mb(b.get('pss'))}")
        say()

    if args.http:
        say("HTTP (bench/load_http.py client, real service, 2 server workers):")
        say("  " + http_load(args.http, with_pool=False))
        say("  " + http_load(args.http, with_pool=True))
        say()
    say(f"Benchmark wall time: {time.monotonic() - started:.0f} s")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
