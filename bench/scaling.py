"""How grading scales with the cores (issue 42's goals; a benchmark, not the unit suite).

Part 1, `grade-set`: N new programs (bench.common.new_program: each a distinct exported program,
so no cache can answer) graded by the real CLI, `jaxjudge grade-set --jobs J`, once per J, each
run with its own empty state and cache folders. Per run: wall time, speed-up against the first
J, every verdict (all must be `accepted`), whether the warm pool came up (the CLI logs each
zygote that falls back to fresh processes), the parent process's own CPU time (sampled from
/proc: a parent that holds one core while the wall grows is the bottleneck), and the median of
each phase of the reports' time split (docs/performance.md#a-grades-time): the phase that
grows with J is where it stops scaling.

Part 2, the local pool through the library (`--pool`): one `Grader(warm_pool=W)` shared by C
grading threads, as the service's local dispatcher runs it (the device host refuses TCP, so
no HTTP): new programs per second at each C.

    .venv/bin/python bench/scaling.py --programs 16 --jobs 1,2          # a 2-core machine
    .venv/bin/python bench/scaling.py --programs 60 --jobs 1,2,4,8,12 --pool 1,12
    .venv/bin/python bench/scaling.py ... --unsafe   # JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=1
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import PROBLEM_ID, loadavg, machine, new_program

CLI = Path(sys.executable).with_name("jaxjudge")
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process (all its threads), from /proc/PID/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS


def _tags(n: int) -> list[str]:
    """n distinct numbers (new_program takes one; each run has empty caches of its own, and
    float32 holds every integer below 2**24 exactly, so no two programs fold alike)."""
    base = random.randrange(1, 2**23)
    return [str(base + i) for i in range(n)]


def _corpus(root: Path, n: int) -> Path:
    folder = root / "submissions"
    folder.mkdir(parents=True)
    for i, tag in enumerate(_tags(n)):
        (folder / f"s{i:03d}.py").write_text(new_program(tag), encoding="utf-8")
    return folder


def _env(root: Path, unsafe: bool) -> dict[str, str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(root / "cache"),
               JAXJUDGE_STATE_DIR=str(root / "state"),
               JAXJUDGE_COMPILE_CACHE_DIR=str(root / "xla"))
    if unsafe:
        env["JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX"] = "1"
    return env


def grade_set(n: int, jobs: int, unsafe: bool, keep_log: Path | None, state: Path) -> dict:
    """One `jaxjudge grade-set --jobs J` over n new programs. `state`: the run's state and
    cache folders, shared by every run of the benchmark (a machine's probes are made once, as
    on a real host; no program is seen twice, so no cache answers a grade)."""
    with tempfile.TemporaryDirectory(prefix="jj-scale-") as tmp:
        root = Path(tmp)
        subs = _corpus(root, n)
        cmd = [str(CLI), "grade-set", str(subs), "--problem", PROBLEM_ID, "--jobs", str(jobs),
               "--out", str(root / "out"), "--force"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=_env(state, unsafe), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        cpu: list[float] = [0.0]

        def sample() -> None:
            while proc.poll() is None:
                got = _cpu_seconds(proc.pid)
                if got is not None:
                    cpu[0] = got
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = proc.communicate()
        wall = time.perf_counter() - t0
        sampler.join()
        if keep_log is not None:
            keep_log.write_text(err, encoding="utf-8")
        results, scores = root / "out" / "results.json", root / "out" / "scores.csv"
        reports = list(json.loads(results.read_text()).values()) if results.exists() else []
        rows = list(csv.DictReader(scores.open())) if scores.exists() else []
    verdicts: dict[str, int] = {}
    phases: dict[str, list[float]] = {}
    seconds = [float(row["seconds"]) for row in rows]
    for rep in reports:
        verdicts[rep["verdict"]] = verdicts.get(rep["verdict"], 0) + 1
        for k, v in (rep.get("timings") or {}).items():
            phases.setdefault(k, []).append(float(v))
    return {
        "jobs": jobs, "wall": wall, "rc": proc.returncode, "verdicts": verdicts,
        "cold_fallbacks": err.count("using fresh processes"),
        "parent_cpu": cpu[0], "grade_median": statistics.median(seconds) if seconds else 0.0,
        "phases": {k: statistics.median(v) for k, v in phases.items()},
        "stderr_tail": err[-600:] if proc.returncode else "",
    }


def _cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of the whole machine, from /proc/stat's first line."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _busy_cores(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float:
    """How many cores were busy on average between two `_cpu_ticks` readings: near the core
    count, the grades are CPU-bound; well below it, something serialises them."""
    if before is None or after is None or after[1] <= before[1]:
        return float("nan")
    return (after[0] - before[0]) / (after[1] - before[1]) * (os.cpu_count() or 1)


def pool_throughput(n: int, concurrency: list[int], unsafe: bool, state: Path) -> list[dict]:
    """New programs per second through the service's grader (`workers` = max C, made as the
    service makes it: jaxjudge.grading.processes.grader_for), C threads at a time."""
    os.environ.update(_env(state, unsafe))
    from jaxjudge import load_problem  # after the env: the state dir is read once
    from jaxjudge.grading.processes import grader_for

    problem = load_problem(PROBLEM_ID)
    rows = []
    with contextlib.closing(grader_for(max(concurrency))) as grader:
        grader.grade(problem, new_program(_tags(1)[0]).encode(), mode="submit")  # warm
        for c in concurrency:
            sources = [new_program(tag).encode() for tag in _tags(n)]
            t0, ticks = time.perf_counter(), _cpu_ticks()
            with ThreadPoolExecutor(c) as ex:
                reports = list(ex.map(
                    lambda src: grader.grade(problem, src, mode="submit"), sources))
            wall = time.perf_counter() - t0
            busy = _busy_cores(ticks, _cpu_ticks())
            ok = sum(r.verdict == "accepted" for r in reports)
            rows.append({"concurrency": c, "wall": wall, "per_second": n / wall,
                         "accepted": ok, "n": n, "busy_cores": busy,
                         "grade_median": statistics.median(
                             float(r.timings.get("total", 0.0)) for r in reports)})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=16)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--pool", default="", help="concurrencies for part 2, e.g. 1,12")
    ap.add_argument("--unsafe", action="store_true",
                    help="grade with JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX=1")
    ap.add_argument("--log-dir", type=Path, default=None, help="keep each run's stderr here")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()
    print(machine())
    print(f"load {loadavg()}")
    state = Path(tempfile.mkdtemp(prefix="jj-scale-state-"))
    jobs = [int(x) for x in args.jobs.split(",") if x]
    if jobs:  # the host's one-time probes (sandbox layers, XLA flags): not timed
        grade_set(2, 1, args.unsafe, None, state)
    runs = []
    for j in jobs:
        log = args.log_dir / f"grade-set-j{j}.log" if args.log_dir else None
        r = grade_set(args.programs, j, args.unsafe, log, state)
        base = runs[0]["wall"] if runs else r["wall"]
        print(f"grade-set --jobs {j:>2}: {r['wall']:7.1f} s  x{base / r['wall']:.2f}  "
              f"median grade {r['grade_median']:.2f} s  parent cpu {r['parent_cpu']:.1f} s  "
              f"verdicts {r['verdicts']}  cold fallbacks {r['cold_fallbacks']}  rc {r['rc']}",
              flush=True)
        if r["stderr_tail"]:
            print(r["stderr_tail"])
        runs.append(r)
    if runs:
        names = sorted({k for r in runs for k in r["phases"]})
        print("phase medians (s): " + " | ".join(f"j={r['jobs']}" for r in runs))
        for k in names:
            print(f"  {k:32s} " + " ".join(f"{r['phases'].get(k, 0.0):8.4f}" for r in runs))
    pool = []
    if args.pool:
        pool = pool_throughput(args.programs, [int(x) for x in args.pool.split(",")],
                               args.unsafe, state)
        base = pool[0]["per_second"]
        for p in pool:
            print(f"pool concurrency {p['concurrency']:>2}: {p['per_second']:.2f} grades/s "
                  f"x{p['per_second'] / base:.2f} ({p['accepted']}/{p['n']} accepted)  "
                  f"median grade {p['grade_median']:.2f} s  busy cores {p['busy_cores']:.1f}",
                  flush=True)
    kept = state / "state" / "reference-work"
    print(f"reference-work entries in the state folder: "
          f"{len(list(kept.iterdir())) if kept.is_dir() else 0} (one per problem and mode)")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "grade_set": runs,
                                         "pool": pool}, indent=1))
    shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
