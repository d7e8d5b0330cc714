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
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from jaxjudge.grading.caches import ReportCache
from jaxjudge.grading.grader import Grader, engine_from_env, internal_error
from jaxjudge.grading.report import Mode, Report
from jaxjudge.problems.package import Limits, Problem, load_problem

log = logging.getLogger("grader")

START_SECONDS = 300.0  # a worker's import and its zygotes' `import jax`, on a loaded machine
GRADE_SECONDS = 1800.0  # one grade, every stage's own limit inside it: only our hang trips it
STOP_SECONDS = 30.0
RETRY_SECONDS = 10.0  # a replacement that could not start is tried again after this


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
                reply = ("raise", _portable(exc))
            try:
                replies.send(reply)
            except Exception as exc:  # a report that does not pickle (a bug): its text does
                replies.send(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))


def _portable(exc: Exception) -> Exception:
    """`exc` if it survives a pickle round trip, else a RuntimeError with its text. Checked
    here: an exception whose __init__ takes other arguments than its args pickles fine and
    then fails to unpickle in the parent, which would raise that TypeError instead."""
    try:
        pickle.loads(pickle.dumps(exc, pickle.HIGHEST_PROTOCOL))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class _Worker:
    """One worker process (`python -m jaxjudge.grading.processes`, so that no caller's
    `__main__` is imported again) and a pipe each way."""

    def __init__(self, options: dict[str, Any]) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            self.proc = subprocess.Popen(
                # -P: the caller's folder is not put first on sys.path (a `jaxjudge/` there,
                # a checkout or a hostile folder, would be the package the worker runs).
                [sys.executable, "-P", "-m", __name__, str(down_r), str(up_w),
                 json.dumps(options), str(os.getpid())],
                pass_fds=(down_r, up_w), stdin=subprocess.DEVNULL, env=env)
        finally:
            os.close(down_r)
            os.close(up_w)
        self.requests = Connection(down_w, readable=False)
        self.replies = Connection(up_r, writable=False)
        self.name = f"grading worker {self.proc.pid}"
        self.in_sync = True

    def ready(self, timeout: float, give_up: Callable[[], bool] = lambda: False) -> str | None:
        """None once the worker's Grader is up, else why it is not (`give_up()`: stop waiting,
        asked every second)."""
        deadline = time.monotonic() + timeout
        try:
            while not self.replies.poll(min(1.0, max(0.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    return f"no answer in {timeout:.0f} s"
                if give_up():
                    return "closed while starting"
            tag, detail = self.replies.recv()
        except (EOFError, OSError) as exc:
            return f"it exited while starting ({type(exc).__name__})"
        return None if tag == "ready" else str(detail)

    def call(self, request: tuple[Any, ...], timeout: float) -> tuple[str, Any]:
        """One request, one reply. `in_sync` is False from the first byte written until the
        whole reply is read: a caller interrupted in between leaves a reply in the pipe that
        would answer the next request, so the worker must not be used again."""
        data = pickle.dumps(request, pickle.HIGHEST_PROTOCOL)  # a pickling error: still in sync
        self.in_sync = False
        self.requests.send_bytes(data)
        if not self.replies.poll(timeout):
            raise TimeoutError(f"no report in {timeout:.0f} s")
        raw = self.replies.recv_bytes()
        self.in_sync = True
        return pickle.loads(raw)

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Ask it to exit (then kill it after `timeout`); a worker out of sync is killed."""
        if self.in_sync:
            with contextlib.suppress(OSError, ValueError):
                self.requests.send(None)
        else:
            timeout = 0.0
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.requests.close()
        self.replies.close()


class ProcessGrader:
    """`workers` processes, each with `Grader(**options)` (default: a warm pool of one);
    `grade()` as `Grader.grade`, safe to call from any number of threads (each waits for an
    idle worker).

    Each of the `workers` slots is idle, busy (a grade), starting (a replacement) or failed (a
    replacement that could not start; retried every RETRY_SECONDS). A grade waits for an idle
    worker while one may come, and is `internal_error` at once when every slot has failed: it
    never hangs on workers that cannot start."""

    def __init__(self, workers: int, *, warm_pool: bool = True, engine: str | None = None,
                 report_cache: int = 0, program_cache: int | None = None,
                 kick_seed: int | None = None) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.engine = engine or engine_from_env()
        self._options: dict[str, Any] = {"warm_pool": 1 if warm_pool else False,
                                         "engine": self.engine}
        if warm_pool:  # each worker's pool is one of `workers` running at once
            from jaxjudge.isolation.pool import spare_warmup_fits

            self._options["spare_warmup"] = spare_warmup_fits(workers)
        if program_cache is not None:  # each worker's own (the sample suite turns it off)
            self._options["program_cache"] = program_cache
        if kick_seed is not None:  # the installation's secret otherwise (observer_seed)
            self._options["kick_seed"] = int(kick_seed)
        # Kept here, not per worker: an identical source is answered whichever worker graded
        # it first.
        self.reports = ReportCache(report_cache)
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._busy = 0
        self._starting = 0
        self._failed = 0
        self._all: list[_Worker] = []  # every live worker process, whatever its slot's state
        self._started = False
        self._closed = False
        # One long-lived thread starts every worker: PR_SET_PDEATHSIG fires when the *thread*
        # that started a worker ends, and callers' threads come and go (`jaxjudge worker` grades
        # each job in a thread of its own; asyncio.to_thread's pool shrinks). Measured before:
        # workers started from a thread that then returned were dead (zombies) 1 s later.
        self._spawner = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="jj-grading-workers")

    def start(self) -> ProcessGrader:
        """Start every worker at once and wait until each is ready; RuntimeError if one
        cannot start (every worker is then stopped and this grader is closed)."""
        with self._cond:
            if self._started or self._closed:
                raise RuntimeError("this ProcessGrader was already started")
            self._started = True
        started: list[_Worker] = []
        ok = False
        try:
            for _ in range(self.workers):
                started.append(self._spawn())
            failed = [f"worker {i}: {why}" for i, w in enumerate(started)
                      if (why := w.ready(START_SECONDS)) is not None]
            if failed:
                raise RuntimeError("grading workers could not start: " + "; ".join(failed))
            ok = True
        finally:
            if not ok:  # a failed start, or the caller interrupted: no process left behind
                for w in started:
                    w.stop(timeout=5.0)
                with self._cond:
                    self._all.clear()
                    self._closed = True
                self._spawner.shutdown(wait=False)
        with self._cond:
            self._idle.extend(started)
            self._cond.notify_all()
        return self

    def grade(self, problem: Problem | str, source: str | bytes, mode: Mode = "submit", *,
              filename: str = "submission.py", limits: Limits | None = None,
              custom_inputs: list[dict[str, Any]] | None = None) -> Report:
        """`Grader.grade` in an idle worker (waits for one). Raises what the Grader raises for
        a caller's error, RuntimeError once closed (also to callers waiting for a worker); a
        worker that breaks gives `internal_error` and is replaced."""
        if self._closed:
            raise RuntimeError("this ProcessGrader is closed")
        if not self._started:  # no worker would ever come: waiting would hang for good
            raise RuntimeError("this ProcessGrader was not started: call start() first")
        started = time.perf_counter()
        key = ""
        if self.reports.size and not custom_inputs and mode in ("run", "submit"):
            prob = load_problem(problem) if isinstance(problem, str) else problem
            key, cached = self.reports.lookup(prob, source, mode, limits or prob.limits,
                                              self.engine, started)
            if cached is not None:
                return cached
        kwargs = {"filename": filename, "limits": limits, "custom_inputs": custom_inputs}
        worker = self._take()
        if worker is None:
            log.error("no grading worker could start: internal_error")
            return _broken_report(problem, mode)
        try:
            tag, value = worker.call((problem, source, mode, kwargs), GRADE_SECONDS)
        except (EOFError, OSError, TimeoutError) as exc:
            log.error("%s broke (%s: %s); starting another", worker.name,
                      type(exc).__name__, exc)
            worker.in_sync = False
            self._replace(worker)
            return _broken_report(problem, mode)
        except BaseException:
            if worker.in_sync:  # nothing sent, or the whole reply read (it did not unpickle)
                self._give_back(worker)
            else:  # the caller was interrupted mid-exchange (a signal's exception)
                log.error("%s: its grade was interrupted; starting another", worker.name)
                self._replace(worker)
            raise
        self._give_back(worker)
        if tag == "raise":
            raise value
        if key:
            self.reports.put(key, value)  # never a load-dependent verdict (ReportCache)
        return value

    def pids(self) -> list[int]:
        """The workers' process ids (for tests and operators)."""
        with self._cond:
            return [w.proc.pid for w in self._all]

    def close(self) -> None:
        """Stop every worker, after the grades in progress; callers still waiting for a worker
        get RuntimeError."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            while self._busy or self._starting:
                self._cond.wait()
            idle, self._idle = self._idle, []
        for w in idle:
            w.stop()
        with self._cond:
            self._all.clear()
        self._spawner.shutdown(wait=True)

    def __enter__(self) -> ProcessGrader:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- slots ----------------------------------------------------------------------------
    def _take(self) -> _Worker | None:
        """An idle worker (waiting while one may come), None when every slot has failed. One
        that died while idle (the OOM killer, an operator) is replaced, not handed out: its
        grade would be internal_error for nothing."""
        with self._cond:
            while True:
                while not self._idle and not self._closed and self._failed < self.workers:
                    self._cond.wait()
                if self._closed:
                    raise RuntimeError("this ProcessGrader is closed")
                if not self._idle:
                    return None
                worker = self._idle.pop(0)  # the longest idle: every worker takes turns
                if worker.proc.poll() is None:
                    self._busy += 1
                    return worker
                log.error("%s died while idle (exit %s); starting another", worker.name,
                          worker.proc.returncode)
                self._all.remove(worker)
                self._starting += 1
                self._spawner.submit(self._restart, worker)

    def _give_back(self, worker: _Worker) -> None:
        with self._cond:
            self._busy -= 1
            self._idle.append(worker)
            self._cond.notify_all()

    def _replace(self, dead: _Worker) -> None:
        """Stop a busy slot's broken worker and start another in the background: the grade
        that found it broken is answered now, not after the new worker's start-up."""
        with self._cond:
            self._busy -= 1
            if dead in self._all:
                self._all.remove(dead)
            closed = self._closed
            if not closed:
                self._starting += 1
            self._cond.notify_all()
        if closed:
            dead.stop(timeout=1.0)
            return
        self._spawner.submit(self._restart, dead)

    def _restart(self, dead: _Worker | None, failing: bool = False) -> None:
        """In the spawner thread: a fresh worker for a starting slot. One that cannot start
        counts the slot failed (grades stop waiting for it) and is tried again every
        RETRY_SECONDS until it starts or we close."""
        if dead is not None:
            dead.stop(timeout=1.0)
        why, fresh = "closed", None
        if not self._closed:
            try:
                fresh = self._track(_Worker(self._options))
                why = fresh.ready(START_SECONDS, lambda: self._closed) or ""
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"
        with self._cond:
            if not why and not self._closed and fresh is not None:
                self._starting -= 1
                self._failed -= failing
                self._idle.append(fresh)
                self._cond.notify_all()
                return
        if fresh is not None:
            fresh.stop(timeout=1.0)
            with self._cond:
                if fresh in self._all:
                    self._all.remove(fresh)
        with self._cond:
            self._starting -= 1
            if not self._closed and not failing:
                log.error("a replacement grading worker did not start: %s (tried again "
                          "every %.0f s; grades are internal_error while none is up)",
                          why, RETRY_SECONDS)
                self._failed += 1
            self._cond.notify_all()
        if not self._closed:
            retry = threading.Timer(RETRY_SECONDS, self._retry)
            retry.daemon = True
            retry.start()

    def _retry(self) -> None:
        with self._cond:  # under the lock: close() cannot shut the spawner down in between
            if self._closed:
                return
            self._starting += 1
            self._spawner.submit(self._restart, None, True)

    def _spawn(self) -> _Worker:
        """A new worker, started by the spawner thread (see __init__)."""
        return self._track(self._spawner.submit(_Worker, self._options).result())

    def _track(self, w: _Worker) -> _Worker:
        with self._cond:
            self._all.append(w)
        return w


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
