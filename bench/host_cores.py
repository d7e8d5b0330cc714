"""How far this host's cores scale, before any grading: the ceiling for bench/scaling.py.

A grade is pure CPU in a few processes plus forks of a large zygote (copy-on-write faults), so
three workloads are timed at P processes at once, each doing the same fixed work:
  cpu   a pure-Python loop (no syscalls, no memory traffic);
  fork  a process with a large touched heap (like a zygote after `import jax`) forking
        children that each write to part of it and exit (fork, COW faults, exit, wait);
  start a fresh `python -c "import numpy"` (exec, imports, page faults of a new process).
Speed-up at P is P x (time of one alone) / (time of P at once); P cores that really run in
parallel give P. Under gVisor, faults and forks go through its kernel, which may not scale.

    python bench/host_cores.py --procs 1,4,12 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from pathlib import Path

PAGE = 4096
HEAP_MB = 300  # about a zygote's resident heap
TOUCH_MB = 30  # what a child writes of it
FORKS = 20


def _cpu(_: int) -> None:
    total = 0
    for i in range(15_000_000):
        total += i * i
    assert total > 0


def _fork(_: int) -> None:
    heap = bytearray(HEAP_MB << 20)
    for off in range(0, len(heap), PAGE):
        heap[off] = 1
    for _k in range(FORKS):
        pid = os.fork()
        if pid == 0:
            for off in range(0, TOUCH_MB << 20, PAGE):
                heap[off] = 2
            os._exit(0)
        os.waitpid(pid, 0)


def _start(_: int) -> None:
    for _k in range(3):
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)


WORKLOADS = {"cpu": _cpu, "fork": _fork, "start": _start}


def _timed(work, procs: int) -> float:
    """Wall time of `procs` processes each doing `work` once, started together."""
    ctx = mp.get_context("fork")
    ps = [ctx.Process(target=work, args=(i,)) for i in range(procs)]
    t0 = time.perf_counter()
    for p in ps:
        p.start()
    for p in ps:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a {work.__name__} process failed ({p.exitcode})")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--procs", default="1,4,12")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    counts = [int(p) for p in args.procs.split(",")]
    print(f"{os.cpu_count()} cores (os.cpu_count), sched affinity "
          f"{len(os.sched_getaffinity(0))}, {os.uname().sysname} {os.uname().release}")
    out: dict[str, dict[str, float]] = {}
    for name, work in WORKLOADS.items():
        alone = _timed(work, 1)
        row = {"1": alone}
        for p in counts:
            if p == 1:
                continue
            row[str(p)] = _timed(work, p)
        out[name] = row
        figures = "  ".join(f"P={p}: {t:6.2f} s x{int(p) * alone / t:5.2f}"
                            for p, t in row.items())
        print(f"{name:5s}  {figures}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
