"""`ProcessGrader`: grades in N worker processes, each a whole `Grader` with a GIL of its own.

Why: a grade's trusted side runs in the parent, in Python: stage B's texts parsed, the program
rules, the memory profile, the comparison, the pool's bookkeeping. A `Grader` shared by N threads
runs all of it under one GIL: 0.08 s of GIL time per new seed-problem program on a 2-core
machine (py-spy --gil), so N threads of one process stop gaining long before N cores do, and
sooner where syscalls cost more (gVisor). Here each worker process owns a `Grader` with a warm
pool of one zygote per stage kind (N workers: the same N zygotes of each kind as
`Grader(warm_pool=N)`), its caches and its GIL; `grade()` is the Grader's, callable from many
threads, each call served by an idle worker.

The workers are our own trusted processes (nothing of a submission runs in them: that stays in
the pool's sandboxed children), so requests and reports cross as pickles. A worker that dies or
stops answering is a bug of ours: that grade is `internal_error`, the worker is replaced, and
the next grades go on.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from jaxjudge.grading.caches import ReportCache, report_key
from jaxjudge.grading.grader import Grader, engine_from_env, internal_error
from jaxjudge.grading.report import Mode, Report
from jaxjudge.problems.package import Limits, Problem, load_problem

log = logging.getLogger("grader")

START_SECONDS = 300.0  # a worker's import and its zygotes' `import jax`, on a loaded machine
GRADE_SECONDS = 1800.0  # one grade, every stage's own limit inside it: only our hang trips it
STOP_SECONDS = 30.0


def _serve(requests: Connection, replies: Connection, options: dict[str, Any],
           parent: int | None = None) -> None:
    """A worker's life: one Grader, then (problem, source, mode, kwargs) -> Report until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    with contextlib.suppress(OSError, AttributeError):  # never outlive the parent (Linux)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:
        return  # the parent died before the prctl: nobody would signal us
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        grader = Grader(**options)
    except Exception as exc:
        replies.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    replies.send(("ready", None))
    with grader:
        while True:
            try:
                request = requests.recv()
            except (EOFError, OSError):
                return
            if request is None:
                return
            problem, source, mode, kwargs = request
            try:
                reply: tuple[str, Any] = ("report", grader.grade(problem, source, mode, **kwargs))
            except Exception as exc:  # a caller's error (bad mode, custom input): raised there
                reply = ("raise", exc)
            try:
                replies.send(reply)
            except Exception as exc:  # an exception that does not pickle: its text does
                replies.send(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))


class _Worker:
    """One worker process (`python -m jaxjudge.grading.processes`, so that no caller's
    `__main__` is imported again) and a pipe each way."""

    def __init__(self, options: dict[str, Any]) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(down_r), str(up_w), json.dumps(options),
                 str(os.getpid())],
                pass_fds=(down_r, up_w), stdin=subprocess.DEVNULL, env=env)
        finally:
            os.close(down_r)
            os.close(up_w)
        self.requests = Connection(down_w, readable=False)
        self.replies = Connection(up_r, writable=False)
        self.name = f"grading worker {self.proc.pid}"

    def ready(self, timeout: float) -> str | None:
        """None once the worker's Grader is up, else why it is not."""
        try:
            if not self.replies.poll(timeout):
                return f"no answer in {timeout:.0f} s"
            tag, detail = self.replies.recv()
        except (EOFError, OSError) as exc:
            return f"it exited while starting ({type(exc).__name__})"
        return None if tag == "ready" else str(detail)

    def call(self, request: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
        self.requests.send(request)
        if not self.replies.poll(timeout):
            raise TimeoutError(f"no report in {timeout:.0f} s")
        return self.replies.recv()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.requests.send(None)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.requests.close()
        self.replies.close()


class ProcessGrader:
    """`workers` processes, each with `Grader(**options)` (default: a warm pool of one);
    `grade()` as `Grader.grade`, safe to call from as many threads as there are workers."""

    def __init__(self, workers: int, *, warm_pool: bool = True, engine: str | None = None,
                 report_cache: int = 0) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.engine = engine or engine_from_env()
        self._options = {"warm_pool": 1 if warm_pool else False, "engine": self.engine}
        # Kept here, not per worker: an identical source is answered whichever worker graded
        # it first.
        self.reports = ReportCache(report_cache)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        # One long-lived thread starts every worker: PR_SET_PDEATHSIG fires when the *thread*
        # that started a worker ends, and callers' threads come and go (`jaxjudge worker` grades
        # each job in a thread of its own; asyncio.to_thread's pool shrinks). Measured before:
        # workers started from a thread that then returned were dead (zombies) 1 s later.
        self._spawner = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="jj-grading-workers")

    def start(self) -> ProcessGrader:
        """Start every worker at once and wait until each is ready; RuntimeError if one
        cannot start (the others are stopped)."""
        started = [self._spawn() for _ in range(self.workers)]
        failed = [f"worker {i}: {why}" for i, w in enumerate(started)
                  if (why := w.ready(START_SECONDS)) is not None]
        if failed:
            for w in started:
                w.stop(timeout=5.0)
            raise RuntimeError("grading workers could not start: " + "; ".join(failed))
        for w in started:
            self._idle.put(w)
        return self

    def grade(self, problem: Problem | str, source: str | bytes, mode: Mode = "submit", *,
              filename: str = "submission.py", limits: Limits | None = None,
              custom_inputs: list[dict[str, Any]] | None = None) -> Report:
        """`Grader.grade` in an idle worker (waits for one). Raises what the Grader raises for
        a caller's error; a worker that breaks gives `internal_error` and is replaced."""
        if self._closed:
            raise RuntimeError("this ProcessGrader is closed")
        started = time.perf_counter()
        key = ""
        if self.reports.size and not custom_inputs and mode in ("run", "submit"):
            prob = load_problem(problem) if isinstance(problem, str) else problem
            key = report_key(prob, source, mode, limits or prob.limits, self.engine)
            cached = self.reports.get(key)
            if cached is not None:
                cached.timings = {"total": round(time.perf_counter() - started, 4),
                                  "cached": 1.0}
                return cached
        kwargs = {"filename": filename, "limits": limits, "custom_inputs": custom_inputs}
        worker = self._idle.get()
        try:
            tag, value = worker.call((problem, source, mode, kwargs), GRADE_SECONDS)
        except (EOFError, OSError, TimeoutError) as exc:
            log.error("%s broke (%s: %s); starting another", worker.name,
                      type(exc).__name__, exc)
            worker.stop(timeout=1.0)
            worker = self._replacement(worker)
            return _broken_report(problem, mode)
        finally:
            self._idle.put(worker)
        if tag == "raise":
            raise value
        if key:
            self.reports.put(key, value)  # never a load-dependent verdict (ReportCache)
        return value

    def pids(self) -> list[int]:
        """The workers' process ids (for tests and operators)."""
        with self._lock:
            return [w.proc.pid for w in self._all]

    def close(self) -> None:
        """Stop every worker, after the grades in progress."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for _ in range(len(self._all)):
            self._idle.get().stop()
        self._spawner.shutdown(wait=False)

    def __enter__(self) -> ProcessGrader:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self) -> _Worker:
        w = self._spawner.submit(_Worker, self._options).result()
        with self._lock:
            self._all.append(w)
        return w

    def _replacement(self, dead: _Worker) -> _Worker:
        """A new worker in the dead one's place (ready before it takes a grade)."""
        with self._lock:
            self._all.remove(dead)
        fresh = self._spawn()
        why = fresh.ready(START_SECONDS)
        if why is not None:
            log.error("a replacement grading worker did not start: %s", why)
        return fresh


def grader_for(workers: int, *, warm_pool: bool = True, engine: str | None = None,
               report_cache: int = 0) -> Grader | ProcessGrader:
    """A grader for `workers` concurrent grades: one process each when there are several (the
    service's local queue, `jaxjudge worker`, grade-set), else this process's own Grader."""
    if workers > 1:
        return ProcessGrader(workers, warm_pool=warm_pool, engine=engine,
                             report_cache=report_cache).start()
    return Grader(warm_pool=1 if warm_pool else False, engine=engine, report_cache=report_cache)


def _broken_report(problem: Problem | str, mode: Mode) -> Report:
    prob = load_problem(problem) if isinstance(problem, str) else problem
    return internal_error(prob, mode)


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1]), writable=False),
           Connection(int(sys.argv[2]), readable=False), json.loads(sys.argv[3]),
           int(sys.argv[4]) if len(sys.argv) > 4 else None)
