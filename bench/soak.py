"""The soak under load (not the unit suite): mixed honest and hostile grades at concurrency 2
for a while, beside a CPU hog this script starts and stops itself.

The submissions are every problem's samples (problems/*/submissions/, each with the verdict its
expected.toml declares) and the hostile ones of bench/data/hostile/ (deep directory trees, some
still being built when the run ends, one cut short by the CPU limit; a memory bomb at import;
the integer-division schedule that once got internal_error under load), in a shuffled cycle.
Two threads grade them through one Grader (a warm pool of two zygotes per stage, or fresh
processes per stage with --cold) with the caches off, so that every grade runs both stages.

It fails (exit 1) unless: no grade is internal_error, every verdict (and the requirements that
failed, where expected.toml lists them) is the declared one, nothing is left in the grades'
temporary directory (a private TMPDIR: work dirs and the pool's spool dirs), and no process of
ours or of an idle sandbox uid survives.

    .venv/bin/python bench/soak.py                   # 10 minutes, warm pool, 4 busy loops
    .venv/bin/python bench/soak.py --minutes 3 --hog 6 --cold
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import fcntl
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from common import loadavg, machine  # noqa: E402

HOSTILE = REPO / "bench" / "data" / "hostile"
HOSTILE_PROBLEM = "traced-learning-rate-schedule"
# bench/data/hostile/: the verdict of an idle machine, which a loaded one must give too.
HOSTILE_EXPECTED = {
    "wrong_integer_division.py": "wrong_answer",
    "memory_bomb_at_import.py": "memory_limit_exceeded",
    "deep_trees.py": "wrong_answer",
    "deep_trees_until_killed.py": "time_limit_exceeded",
}


@dataclass(frozen=True)
class Case:
    problem: str
    path: Path
    verdict: str
    mode: str = "submit"
    failed: tuple[str, ...] | None = None  # exactly these requirements fail, when declared

    @property
    def name(self) -> str:
        return f"{self.problem}/{self.path.name}"


@dataclass
class Graded:
    case: Case
    verdict: str
    failed: tuple[str, ...]
    seconds: float
    message: str

    @property
    def as_expected(self) -> bool:
        return self.verdict == self.case.verdict and (
            self.case.failed is None or self.failed == self.case.failed)


def cases(only: str | None) -> list[Case]:
    out = []
    for expected in sorted(REPO.glob("problems/*/submissions/expected.toml")):
        problem = expected.parent.parent.name
        if only and problem != only:
            continue
        table = tomllib.loads(expected.read_text(encoding="utf-8")).get("files", {})
        for name, spec in sorted(table.items()):
            failed = tuple(sorted(spec["failed"])) if "failed" in spec else None
            out.append(Case(problem, expected.parent / name, spec["verdict"],
                            spec.get("mode", "submit"), failed))
    for name, verdict in sorted(HOSTILE_EXPECTED.items()):
        out.append(Case(HOSTILE_PROBLEM, HOSTILE / name, verdict))
    return out


class Hog:
    """`count` busy loops (stress-ng when installed, else Python), each ending by itself after
    `seconds` at the latest, killed by `stop()`."""

    def __init__(self, count: int, seconds: float) -> None:
        self.count, self.seconds = count, seconds
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        if not self.count:
            return
        stress = subprocess.run(["which", "stress-ng"], capture_output=True, check=False)
        if stress.returncode == 0:
            argv = ["stress-ng", "--cpu", str(self.count), "--timeout", f"{int(self.seconds)}s",
                    "--quiet"]
            self.procs.append(subprocess.Popen(argv, start_new_session=True))
            return
        loop = (f"import time\nend = time.monotonic() + {self.seconds}\n"
                "while time.monotonic() < end:\n    pass\n")
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", loop],
                                               start_new_session=True))

    def stop(self) -> None:
        for p in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, 9)
        for p in self.procs:
            p.wait()
        self.procs.clear()


def our_descendants() -> list[str]:
    """Live processes below this one (pid and command), from /proc."""
    parent: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        close = text.rindex(")")
        fields = text[close + 2:].split()
        if fields[0] == "Z":
            continue
        parent[int(entry.name)] = int(fields[1])
        names[int(entry.name)] = text[text.index("(") + 1:close]
    me, found = os.getpid(), []
    for pid in parent:
        p = parent.get(pid, 0)
        while p > 1:
            if p == me:
                found.append(f"{pid} ({names[pid]})")
                break
            p = parent.get(p, 0)
    return found


def idle_uid_processes() -> list[int]:
    """Processes of sandbox uids nobody holds (another grader on this machine may hold some)."""
    from jaxjudge.isolation import sandbox, uidpool

    if not sandbox.protections()["uid_pool"]["active"]:
        return []
    base, count = uidpool._uid_range()
    wanted = {f"uid-{uid}.lock": uid for uid in range(base, base + count)}
    left = []
    for lock in sorted(uidpool._lock_dir().glob("uid-*.lock")):
        uid = wanted.get(lock.name)
        if uid is None:
            continue
        with open(lock, "rb+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use right now
            left.extend(uidpool._uid_processes(uid))
    return left


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to grade (default 10)")
    ap.add_argument("--hog", type=int, default=4, help="busy loops beside the grades (default 4)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--cold", action="store_true", help="fresh processes per stage, no pool")
    ap.add_argument("--problem", help="only this problem's samples (and the hostile ones)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    # Everything the grades leave in temporary directories lands here, so it can be counted.
    private_tmp = Path(tempfile.mkdtemp(prefix="jaxjudge-soak-"))
    os.environ["TMPDIR"] = str(private_tmp)
    os.environ.pop("JAXJUDGE_WORK_DIR", None)
    tempfile.tempdir = str(private_tmp)

    from jaxjudge import Grader, load_problem

    all_cases = cases(args.problem)
    problems = {c.problem: load_problem(c.problem) for c in all_cases}
    rng = random.Random(args.seed)
    order: collections.deque[Case] = collections.deque()
    lock = threading.Lock()

    def next_case() -> Case:
        with lock:
            if not order:
                batch = list(all_cases)
                rng.shuffle(batch)
                order.extend(batch)
            return order.popleft()

    print(machine())
    print(f"{len(all_cases)} submissions in the cycle; {args.concurrency} at a time; "
          f"{'cold stages' if args.cold else 'warm pool'}; caches off; {args.hog} busy loops; "
          f"{args.minutes:g} min; load before: {loadavg()}", flush=True)
    hog = Hog(args.hog, args.minutes * 60 + 600)
    results: list[Graded] = []
    loads: list[float] = []
    grader = Grader(warm_pool=False if args.cold else args.concurrency, program_cache=0)
    started = time.monotonic()
    deadline = started + args.minutes * 60
    try:
        hog.start()

        def worker() -> None:
            while time.monotonic() < deadline:
                case = next_case()
                t = time.monotonic()
                report = grader.grade(problems[case.problem], case.path.read_bytes(), case.mode,
                                      filename=case.path.name)  # type: ignore[arg-type]
                failed = tuple(sorted(r.name for r in report.requirements if not r.passed))
                g = Graded(case, report.verdict.value, failed, time.monotonic() - t,
                           report.message[:300].replace("\n", " "))
                with lock:
                    results.append(g)
                    loads.append(os.getloadavg()[0])
                    n = len(results)
                mark = "" if g.as_expected else f"   <-- expected {case.verdict}"
                print(f"{n:4d} {time.monotonic() - started:7.1f}s {case.name:70s} "
                      f"{g.verdict:22s} {g.seconds:6.2f}s{mark}", flush=True)

        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as ex:
            for f in [ex.submit(worker) for _ in range(args.concurrency)]:
                f.result()
    finally:
        hog.stop()
        grader.close()
    elapsed = time.monotonic() - started
    time.sleep(1.0)  # killed processes are reaped by their parents
    left_paths = sorted(p.name for p in private_tmp.iterdir())
    left_procs = our_descendants()
    left_uids = idle_uid_processes()

    internal = [r for r in results if r.verdict == "internal_error"]
    wrong = [r for r in results if not r.as_expected]
    secs = sorted(r.seconds for r in results)
    by_verdict = collections.Counter(r.verdict for r in results)
    print()
    print(f"ran {elapsed / 60:.1f} min: {len(results)} grades "
          f"({len({r.case for r in results})} distinct submissions), "
          f"{len(results) / elapsed * 60:.1f} grades/min")
    print(f"load average during the grades: median {statistics.median(loads):.1f}, "
          f"max {max(loads):.1f}" if loads else "no grade finished")
    if secs:
        q = statistics.quantiles(secs, n=100, method="inclusive") if len(secs) > 1 else secs * 99
        print(f"grade seconds: median {statistics.median(secs):.2f}, p90 {q[89]:.2f}, "
              f"max {secs[-1]:.2f}")
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(by_verdict.items())))
    print(f"internal_error: {len(internal)}; not as expected: {len(wrong)}; "
          f"left in the temporary directory: {len(left_paths)}; processes left: "
          f"{len(left_procs)} of ours, {len(left_uids)} of idle sandbox uids")
    for r in wrong:
        print(f"  {r.case.name}: {r.verdict} (expected {r.case.verdict}"
              f"{', failed ' + str(list(r.case.failed)) if r.case.failed is not None else ''}"
              f"; got failed {list(r.failed)}): {r.message}")
    for name in left_paths[:20]:
        print(f"  left: {private_tmp / name}")
    for p in left_procs[:20]:
        print(f"  process left: {p}")
    ok = not internal and not wrong and not left_paths and not left_procs and not left_uids
    if not left_paths:
        private_tmp.rmdir()
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
