"""Several problems' corpora graded at once by separate `jaxjudge grade --json` processes, with
busy loops beside them (issue 42: two wrong answers became `internal_error` under load 7-9).

One worker per problem grades that problem's samples (problems/<id>/submissions/*.py) one
after another, each by a fresh `jaxjudge grade` process, so the processes share only what sits
on disk: the state directory (the engine hint, the probed sandbox layers and XLA flags) and the
sandbox's uid locks. `--hog N` runs N busy loops meanwhile. Every verdict is checked against the
folder's expected.toml; an `internal_error` is printed with its message and the tail of its
process's stderr (the logged traceback). Bounded by `--rounds` and `--max-seconds`.

    .venv/bin/python bench/concurrent_grades.py                      # 3 problems, 6 hogs
    .venv/bin/python bench/concurrent_grades.py --hog 0 --max-seconds 120
    .venv/bin/python bench/concurrent_grades.py --fresh-state         # an empty state dir

Exit status 1 when any grade got `internal_error` or a verdict other than expected.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections import Counter
from pathlib import Path

from common import REPO, loadavg, machine

JAXJUDGE = Path(sys.executable).parent / "jaxjudge"
DEFAULT_PROBLEMS = ("straight-through-estimator", "traced-learning-rate-schedule",
                    "ema-with-scan")


def corpus(problem: str, pattern: str) -> list[tuple[Path, str | None]]:
    """The problem's samples matching `pattern`, with the verdict expected.toml gives each."""
    folder = REPO / "problems" / problem / "submissions"
    expected = tomllib.loads((folder / "expected.toml").read_text(encoding="utf-8"))
    files = expected.get("files", {})
    return [(p, files.get(p.name, {}).get("verdict")) for p in sorted(folder.glob(pattern))]


class Tally:
    """What the workers saw, shared under a lock."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.lock = threading.Lock()
        self.verdicts: Counter[str] = Counter()
        self.internal: list[str] = []
        self.mismatches: list[str] = []
        self.seconds: list[float] = []

    def add(self, problem: str, path: Path, expected: str | None, verdict: str,
            seconds: float, detail: str) -> None:
        with self.lock:
            self.verdicts[verdict] += 1
            self.seconds.append(seconds)
            where = f"{problem}/{path.name}"
            if self.verbose:
                print(f"{sum(self.verdicts.values()):4d} {seconds:5.1f} s {verdict:22} {where}",
                      flush=True)
            if verdict == "internal_error":
                self.internal.append(f"{where} ({seconds:.1f} s): {detail}")
                print(f"INTERNAL_ERROR {where}\n{detail}\n", flush=True)
            elif expected is not None and verdict != expected:
                self.mismatches.append(f"{where}: {verdict}, expected {expected}")
                print(f"MISMATCH {where}: {verdict}, expected {expected}", flush=True)


def grade_one(problem: str, path: Path, env: dict[str, str], timeout: float
              ) -> tuple[str, str]:
    """(verdict, detail) of one fresh `jaxjudge grade` process; a process that prints no
    report counts as `internal_error` with its stderr as the detail."""
    try:
        proc = subprocess.run([str(JAXJUDGE), "grade", "-p", problem, "--json", str(path)],
                              capture_output=True, text=True, env=env, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return "internal_error", f"no answer in {timeout:g} s"
    try:
        report = json.loads(proc.stdout)
        verdict, message = report["verdict"], report.get("message", "")
    except (ValueError, KeyError, TypeError):
        return "internal_error", f"rc {proc.returncode}, no report; stderr:\n{proc.stderr[-3000:]}"
    return verdict, f"{message}\nstderr:\n{proc.stderr[-3000:]}" if verdict == "internal_error" \
        else message


def worker(problem: str, files: list[tuple[Path, str | None]], rounds: int, deadline: float,
           env: dict[str, str], tally: Tally) -> None:
    for _ in range(rounds):
        for path, expected in files:
            if time.monotonic() > deadline:
                return
            started = time.monotonic()
            verdict, detail = grade_one(problem, path, env, timeout=300)
            tally.add(problem, path, expected, verdict, time.monotonic() - started, detail)


def start_hogs(n: int) -> list[subprocess.Popen]:
    """N busy loops in their own session (killed by pid at the end)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             start_new_session=True) for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=list(DEFAULT_PROBLEMS))
    ap.add_argument("--workers", type=int, default=1, help="grade processes per problem")
    ap.add_argument("--files", default="*.py", help="glob of samples in each corpus")
    ap.add_argument("--rounds", type=int, default=1, help="passes over each corpus")
    ap.add_argument("--hog", type=int, default=6, help="busy loops beside the grades")
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per grade")
    ap.add_argument("--fresh-state", action="store_true",
                    help="an empty JAXJUDGE_STATE_DIR shared by every process")
    args = ap.parse_args()

    env = dict(os.environ)
    tmp = tempfile.TemporaryDirectory(prefix="jaxjudge-state-") if args.fresh_state else None
    if tmp is not None:
        os.chmod(tmp.name, 0o700)
        env["JAXJUDGE_STATE_DIR"] = tmp.name
    print(f"Machine: {machine()}\nLoad before: {loadavg()}", flush=True)
    hogs = start_hogs(args.hog)
    tally = Tally(args.verbose)
    started = time.monotonic()
    deadline = started + args.max_seconds
    threads = []
    try:
        for problem in args.problems:
            files = corpus(problem, args.files)
            for i in range(args.workers):
                mine = files[i::args.workers]
                t = threading.Thread(target=worker, daemon=True,
                                     args=(problem, mine, args.rounds, deadline, env, tally))
                t.start()
                threads.append(t)
        time.sleep(min(30.0, args.max_seconds / 2))
        print(f"Load with the grades and {args.hog} hogs: {loadavg()}", flush=True)
        for t in threads:
            t.join()
    finally:
        for h in hogs:
            os.killpg(h.pid, signal.SIGKILL)
            h.wait()
        if tmp is not None:
            tmp.cleanup()
    wall = time.monotonic() - started
    n = sum(tally.verdicts.values())
    secs = sorted(tally.seconds)
    print(f"\n{n} grades of {', '.join(args.problems)} in {wall:.0f} s "
          f"({len(threads)} grade processes at a time, {args.hog} hogs)")
    if secs:
        print(f"seconds per grade: median {secs[len(secs) // 2]:.1f}, max {secs[-1]:.1f}")
    print("verdicts:", dict(sorted(tally.verdicts.items())))
    print(f"internal_error: {len(tally.internal)}; other mismatches: {len(tally.mismatches)}")
    for line in tally.internal + tally.mismatches:
        print("  " + line.splitlines()[0])
    return 1 if tally.internal or tally.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
