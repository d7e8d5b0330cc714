"""One-off grade against a naive judge, side by side in one run on this machine (issue #13).

  (a) naive: a fresh `python -c` that imports jax, loads the problem's reference solution, runs
      `jax.jit(solve)` on the tests and compares with the expected outputs: no sandbox, no
      structural checks. The same tests as (b) by default (all of them: `submit` mode); `--naive-
      tests 16` runs the first 16 only.
  (b) cli:   `.venv/bin/jaxjudge grade --problem rematerialized-mlp-block FILE --json` as a fresh
      process, every sandbox layer on (JAXJUDGE_SANDBOX_REQUIRE=all), on a NEW correct program
      each time: the reference with a unique constant folded into its loss, so neither a report
      nor a program cache (the exported bytes differ) can answer it.
  (d) serve: the same new-program grade through a running local `jaxjudge serve` (the lever
      "reuse a running local server when one is configured"): a fresh `jaxjudge submit --server
      URL ... --json` process per grade, against a server started once by this bench (local
      queue, warm pool, every sandbox layer, a throw-away SQLite). `--no-serve` skips it.
  (c) warm:  the library's warm path, `with Grader(warm_pool=True) as g:` grading 20 distinct
      new programs one by one (issue #13 item 2): pool start and seconds per grade.

(a) and (b) alternate, N repetitions each after one discarded warm-up of each (it fills the
OS page cache, and the parent's state directory with the probed XLA flags and sandbox layers).
What that first grade on a machine costs is timed once, apart: (b) with an empty
JAXJUDGE_STATE_DIR. Prints the machine, the load, medians and minima, and the ratio of the
medians.

    .venv/bin/python bench/oneoff.py            # N=7, ~1 minute on 2 cores
    .venv/bin/python bench/oneoff.py -n 3 --no-warm
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import PROBLEM_ID, REPO, loadavg, machine, new_program

PROBLEM_DIR = REPO / "problems" / PROBLEM_ID
VENV_BIN = Path(sys.executable).parent
JAXJUDGE = VENV_BIN / "jaxjudge"

# The naive judge: everything a grader without a sandbox would do, in one fresh interpreter.
NAIVE = r"""
import json, sys, importlib.util
import numpy as np
import jax
root, n = sys.argv[1], int(sys.argv[2])
spec = importlib.util.spec_from_file_location("reference", root + "/reference.py")
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
solve = jax.jit(ref.solve)
cases = json.load(open(root + "/tests/cases.json"))["cases"]
cases = cases[:n] if n > 0 else cases
def arrays(v):
    if isinstance(v, dict):
        return {k: arrays(x) for k, x in v.items()}
    return np.asarray(v, np.float32)
passed = 0
for case in cases:
    inp = case["inputs"]
    out = solve(arrays(inp["params"]), arrays(inp["x"]), arrays(inp["y"]))
    got, want = jax.tree.leaves(out), jax.tree.leaves(arrays(case["expected"]))
    passed += len(got) == len(want) and all(
        np.allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5) for g, w in zip(got, want))
print(json.dumps({"passed": passed, "tests": len(cases)}))
"""


def run_naive(tests: int) -> float:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", NAIVE, str(PROBLEM_DIR), str(tests)],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"naive judge failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["passed"] != out["tests"]:
        sys.exit(f"naive judge: only {out['passed']} of {out['tests']} tests passed")
    return wall


def run_cli(workdir: Path, env: dict[str, str]) -> tuple[float, dict]:
    path = workdir / f"solution_{uuid.uuid4().hex[:8]}.py"
    path.write_text(new_program(f"{uuid.uuid4().int % 10**6}.5"), encoding="utf-8")
    t = time.perf_counter()
    proc = subprocess.run([str(JAXJUDGE), "grade", "--problem", PROBLEM_ID, str(path), "--json"],
                          capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    return wall, accepted_report(proc, "jaxjudge grade")


def accepted_report(proc: subprocess.CompletedProcess[str], what: str) -> dict:
    """The JSON report `what` printed; exits unless it is a fresh (uncached) accepted grade."""
    try:
        report: dict = json.loads(proc.stdout)
    except ValueError:
        sys.exit(f"{what} printed no report (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    if report["verdict"] != "accepted" or proc.returncode != 0:
        sys.exit(f"{what}: {report['verdict']}: {report['message'][:500]}")
    if any("cached" in k for k in report["timings"]):
        sys.exit(f"{what} was answered from a cache: {report['timings']}")
    return report


class LocalServe:
    """A `jaxjudge serve` on a free loopback port with a throw-away database, for (d)."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "serve.log"
        serve_env = {**env, "JAXJUDGE_DATABASE_URL": f"sqlite:///{workdir}/serve.db",
                     "JAXJUDGE_PORT": str(self.port), "JAXJUDGE_WORKERS": "1",
                     "JAXJUDGE_RATE_LIMIT_PER_MINUTE": "0", "JAXJUDGE_LOG_LEVEL": "warning"}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([str(JAXJUDGE), "serve"], env=serve_env, cwd=workdir,
                                         stdout=log, stderr=subprocess.STDOUT)
        import urllib.request

        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                sys.exit(f"jaxjudge serve exited:\n{self.log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=2)
                return
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("jaxjudge serve did not start in 120 s")
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_submit(workdir: Path, env: dict[str, str], server: str) -> float:
    path = workdir / f"remote_{uuid.uuid4().hex[:8]}.py"
    path.write_text(new_program(f"{uuid.uuid4().int % 10**6}.75"), encoding="utf-8")
    t = time.perf_counter()
    proc = subprocess.run([str(JAXJUDGE), "submit", "--server", server, "--problem", PROBLEM_ID,
                           str(path), "--json"], capture_output=True, text=True, env=env,
                          check=False)
    wall = time.perf_counter() - t
    accepted_report(proc, "jaxjudge submit")
    return wall


def run_warm(workdir: Path, count: int) -> tuple[float, list[float]]:
    sys.path.insert(0, str(REPO))
    from jaxjudge import Grader, load_problem

    problem = load_problem(PROBLEM_ID)
    t = time.perf_counter()
    times: list[float] = []
    with Grader(warm_pool=True) as g:
        started = time.perf_counter() - t
        for i in range(count):
            path = workdir / f"warm_{i}.py"
            path.write_text(new_program(f"{1000 + i}.25"), encoding="utf-8")
            t1 = time.perf_counter()
            report = g.grade(problem, path.read_bytes(), filename=path.name)
            times.append(time.perf_counter() - t1)
            if report.verdict.value != "accepted":
                sys.exit(f"warm grade {i}: {report.verdict.value}: {report.message[:300]}")
    return started, times


def stats(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f} s, min {min(xs):.2f} s, max {max(xs):.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=7, help="repetitions of (a) and (b), interleaved")
    ap.add_argument("--naive-tests", type=int, default=0,
                    help="tests the naive judge runs (0: all, the same as the grade)")
    ap.add_argument("--warm", type=int, default=20, help="grades through the warm pool (c)")
    ap.add_argument("--no-warm", action="store_true", help="skip (c)")
    ap.add_argument("--no-serve", action="store_true", help="skip (d)")
    args = ap.parse_args()
    # This checkout's code, also when the venv's console script was installed (editable) from
    # another one: PYTHONPATH comes before the editable finder.
    env = {**os.environ, "JAXJUDGE_SANDBOX_REQUIRE": "all", "PYTHONPATH": str(REPO)}
    env.pop("JAXJUDGE_SERVER", None)  # never delegate: this times the local one-off grade
    where = subprocess.run([sys.executable, "-c", "import jaxjudge; print(jaxjudge.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not where.startswith(str(REPO)):
        sys.exit(f"jaxjudge would import {where}, not this checkout's grader")
    started = datetime.datetime.now().isoformat(timespec="seconds")
    load_before = loadavg()
    naive: list[float] = []
    cli: list[float] = []
    reports: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="jaxjudge-oneoff-") as tmp:
        work = Path(tmp)
        run_naive(args.naive_tests)  # warm-ups: page cache, on-disk XLA flags and layers
        run_cli(work, env)
        first, _ = run_cli(work, {**env, "JAXJUDGE_STATE_DIR": str(work / "empty-state")})
        for _ in range(args.n):
            naive.append(run_naive(args.naive_tests))
            wall, report = run_cli(work, env)
            cli.append(wall)
            reports.append(report)
        remote: list[float] = []
        if not args.no_serve:
            serve = LocalServe(work, env)
            try:
                run_submit(work, env, serve.url)  # warm-up: the pool's first grade
                remote = [run_submit(work, env, serve.url) for _ in range(args.n)]
            finally:
                serve.stop()
        warm = None if args.no_warm else run_warm(work, args.warm)
    load_after = loadavg()
    tests = reports[0]["tests"]
    ratio = statistics.median(cli) / statistics.median(naive)
    print(f"bench/oneoff.py, {started}, on {machine()}")
    print(f"load average before {load_before}, after {load_after}")
    print(f"problem {PROBLEM_ID}, mode submit, {len(tests)} tests; naive judge runs "
          f"{args.naive_tests or len(tests)}; N={args.n} interleaved after one warm-up each")
    print(f"(a) naive fresh-process judge:  {stats(naive)}")
    print(f"(b) jaxjudge grade (new program, every layer): {stats(cli)}")
    print(f"    ratio of medians (b)/(a) = {ratio:.2f} (target <= 0.45, issue #32)")
    print(f"    the first grade on a machine (empty state dir: probes the XLA flags and the "
          f"sandbox layers): {first:.2f} s")
    keys = sorted({k for r in reports for k in r["timings"]})
    med = {k: statistics.median(r["timings"].get(k, 0.0) for r in reports) for k in keys}
    print("    report timings, medians: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    if remote:
        print(f"(d) jaxjudge submit to a running local serve (new program): {stats(remote)}")
        print(f"    ratio of medians (d)/(a) = "
              f"{statistics.median(remote) / statistics.median(naive):.2f}")
    if warm is not None:
        start, per = warm
        print(f"(c) Grader(warm_pool=True), {len(per)} distinct new programs one by one: pool "
              f"started in {start:.2f} s; per grade median {statistics.median(per):.3f} s, min "
              f"{min(per):.3f} s, max {max(per):.3f} s")


if __name__ == "__main__":
    main()
