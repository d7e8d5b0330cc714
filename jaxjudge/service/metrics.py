"""Prometheus metrics: what was graded (observed in the grading process) and what the database
holds (read at scrape time).

A `Metrics` object owns its `CollectorRegistry`: nothing is registered in prometheus-client's
module-global registry, so tests and several apps in one process never collide. It is handed
to whoever needs it (the app, a grading worker), never imported as a singleton.

Two kinds of metrics:

- process-local: `jaxjudge_grades_total{verdict,mode}` and `jaxjudge_grade_seconds{stage}`,
  moved by `Metrics.observe_report(report)` in the process that grades (the local
  `GradingQueue`'s `on_graded` callback, or a grading worker's). With PROMETHEUS_MULTIPROC_DIR
  set, their values live in that directory and every process serving `/metrics` reports the
  sum over all processes that wrote there (prometheus-client's `MultiProcessCollector`).
- scrape-time, from the database (`Metrics.watch_database`): submissions by status and verdict,
  queued rows by mode, workers, sandbox layers. One GROUP BY per `ttl` seconds at most, however
  many scrapes arrive, so a scrape storm cannot load the database.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    start_http_server,
    values,
)
from prometheus_client.metrics_core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from jaxjudge.grading.report import Report, Verdict

log = logging.getLogger("jaxjudge.metrics")

# The classic text format, which is what generate_latest writes (legacy metric names): every
# Prometheus version reads it. (prometheus-client >= 0.22 labels it 1.0.0 by default.)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Durations the grading service itself measured around each sandboxed stage, never the
# sub-timings a stage reports from inside its sandbox (stage A's are written next to the
# submission's code, so their keys and values are the submission's to choose: as labels they
# would let one submission create series without bound).
STAGES: tuple[str, ...] = ("total", "stage_a", "stage_b")
# 0.05 s (a cache hit, a compile error) .. 120 s (the longest time limits); roughly x1.5-2 steps.
GRADE_BUCKETS: tuple[float, ...] = (
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0,
    120.0,
)
MODES: tuple[str, ...] = ("run", "submit")
_VERDICTS = frozenset(v.value for v in Verdict)
NO_VERDICT = "none"  # the verdict label of queued and running rows
NO_WORKER = "none"  # the worker label of running rows of the local queue
CALLBACK_STATES: tuple[str, ...] = ("pending", "delivered", "failed")


def multiprocess_dir() -> str | None:
    """The PROMETHEUS_MULTIPROC_DIR of this process (None when unset or empty)."""
    return os.environ.get(MULTIPROC_ENV) or None


def _values_are_shared() -> bool:
    # prometheus-client picks file-backed values when it is first imported with the variable
    # set; a process that set it later would count in memory while reporting the directory.
    return values.ValueClass is not values.MutexValue


ATTEMPT_BUCKETS: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0)  # MAX_ATTEMPTS is 3; 4: given up


@dataclass(frozen=True)
class _Snapshot:
    """One database read: (status, verdict, mode) -> rows, the worker count, running rows by
    the worker holding them, unfinished rows on their last attempt, the oldest queued age."""

    ok: bool
    rows: dict[tuple[str, str, str], int]
    workers: int | None
    taken: float
    running_by_worker: dict[str, int] = field(default_factory=dict)
    last_attempt: int = 0
    oldest_queued_seconds: float = 0.0
    callbacks: dict[str, int] = field(default_factory=dict)


class DatabaseCollector:
    """Scrape-time gauges read from the database, cached for `ttl` seconds.

    Concurrent scrapes share one read: the first takes the lock and queries, the others wait
    for it and reuse its result. A failed read is cached too (as `jaxjudge_database_up 0`), so
    a broken database is not hammered either."""

    def __init__(
        self,
        engine: Engine,
        *,
        workers: Callable[[], int | None],
        protections: Callable[[], Mapping[str, Mapping[str, Any]]],
        ttl: float = 2.0,
    ) -> None:
        self._engine = engine
        self._workers = workers
        self._protections = protections
        self._ttl = ttl
        self._lock = threading.Lock()
        self._snapshot: _Snapshot | None = None
        self.reads = 0  # database reads so far (the cache's effect is testable)

    def _read(self) -> _Snapshot:
        from jaxjudge.service.queue import MAX_ATTEMPTS
        from jaxjudge.service.store import (
            SubmissionRow,  # the store imports nothing of ours; keep it so
        )

        self.reads += 1
        rows: dict[tuple[str, str, str], int] = {}
        running: dict[str, int] = {}
        callbacks: dict[str, int] = {}
        last_attempt, oldest = 0, 0.0
        ok = True
        unfinished = SubmissionRow.status.in_(("queued", "running"))
        try:
            query = select(
                SubmissionRow.status, SubmissionRow.verdict, SubmissionRow.mode, func.count()
            ).group_by(SubmissionRow.status, SubmissionRow.verdict, SubmissionRow.mode)
            with self._engine.connect() as conn:
                for status, verdict, mode, n in conn.execute(query):
                    key = (str(status), str(verdict) if verdict else NO_VERDICT, str(mode))
                    rows[key] = rows.get(key, 0) + int(n)
                for worker, n in conn.execute(
                    select(SubmissionRow.worker, func.count())
                    .where(SubmissionRow.status == "running").group_by(SubmissionRow.worker)
                ):
                    running[str(worker) if worker else NO_WORKER] = int(n)
                last_attempt = int(conn.execute(
                    select(func.count()).where(unfinished,
                                               SubmissionRow.attempts >= MAX_ATTEMPTS)
                ).scalar_one())
                first = conn.execute(select(func.min(SubmissionRow.created_at))
                                     .where(SubmissionRow.status == "queued")).scalar_one()
                if first is not None:
                    first = first if first.tzinfo else first.replace(tzinfo=UTC)
                    oldest = max(0.0, (datetime.now(UTC) - first).total_seconds())
                for state, n in conn.execute(
                    select(SubmissionRow.callback_state, func.count())
                    .where(SubmissionRow.callback_state.is_not(None))
                    .group_by(SubmissionRow.callback_state)
                ):
                    callbacks[str(state)] = int(n)
        except Exception as exc:  # a scrape must answer even when the database does not
            log.warning("metrics: cannot read submission counts: %s", exc)
            ok, rows, running = False, {}, {}
        try:
            workers = self._workers()
        except Exception as exc:
            log.warning("metrics: cannot count workers: %s", exc)
            workers = None
        return _Snapshot(ok, rows, workers, time.monotonic(), running, last_attempt, oldest,
                         callbacks)

    def snapshot(self) -> _Snapshot:
        with self._lock:
            snap = self._snapshot
            if snap is None or time.monotonic() - snap.taken >= self._ttl:
                snap = self._snapshot = self._read()
            return snap

    def describe(self) -> Iterable[Metric]:
        """The families without reading anything (registration must not query)."""
        return self._families(_Snapshot(True, {}, None, 0.0), {}, zeros=False)

    def collect(self) -> Iterable[Metric]:
        snap = self.snapshot()
        try:
            layers = dict(self._protections())
        except Exception as exc:
            log.warning("metrics: cannot read sandbox protections: %s", exc)
            layers = {}
        return self._families(snap, layers, zeros=snap.ok)

    @staticmethod
    def _families(
        snap: _Snapshot, layers: Mapping[str, Mapping[str, Any]], *, zeros: bool
    ) -> list[Metric]:
        up = GaugeMetricFamily(
            "jaxjudge_database_up",
            "1 if the last read of submission counts succeeded (the gauges below are from it).",
        )
        up.add_metric([], 1.0 if snap.ok else 0.0)
        subs = GaugeMetricFamily(
            "jaxjudge_submissions",
            "Stored submissions by status and verdict (verdict 'none' until done).",
            labels=["status", "verdict"],
        )
        depth = GaugeMetricFamily(
            "jaxjudge_queue_depth", "Submissions waiting for a worker (queued rows), by mode.",
            labels=["mode"],
        )
        if zeros:  # stable series: every status and mode is there even at zero
            by_status: dict[tuple[str, str], int] = {
                ("queued", NO_VERDICT): 0, ("running", NO_VERDICT): 0,
                **{("done", v): 0 for v in sorted(_VERDICTS - {Verdict.SKIPPED.value})},
            }
            queued = dict.fromkeys(MODES, 0)
            for (status, verdict, mode), n in snap.rows.items():
                by_status[(status, verdict)] = by_status.get((status, verdict), 0) + n
                if status == "queued":
                    queued[mode] = queued.get(mode, 0) + n
            for (status, verdict), n in sorted(by_status.items()):
                subs.add_metric([status, verdict], float(n))
            for mode, n in sorted(queued.items()):
                depth.add_metric([mode], float(n))
        workers = GaugeMetricFamily(
            "jaxjudge_workers",
            "Grading workers: the pool size (local queue) or live workers (postgres queue).",
        )
        if snap.workers is not None:
            workers.add_metric([], float(snap.workers))
        by_worker = GaugeMetricFamily(
            "jaxjudge_running_submissions",
            "Running submissions by the worker holding their attempt (name@host:pid; 'none' "
            "with the local queue).", labels=["worker"],
        )
        for worker, n in sorted(snap.running_by_worker.items()):
            by_worker.add_metric([worker], float(n))
        last = GaugeMetricFamily(
            "jaxjudge_submissions_at_last_attempt",
            "Unfinished submissions on their last attempt: one more interruption ends them "
            "as internal_error.",
        )
        oldest = GaugeMetricFamily(
            "jaxjudge_oldest_queued_seconds",
            "Age of the oldest submission waiting for a worker (0 when none waits).",
        )
        callbacks = GaugeMetricFamily(
            "jaxjudge_callbacks", "Submissions with a callback, by delivery state (pending, "
            "delivered, failed: given up).", labels=["state"],
        )
        if snap.ok:
            last.add_metric([], float(snap.last_attempt))
            oldest.add_metric([], snap.oldest_queued_seconds)
            for state in CALLBACK_STATES:
                callbacks.add_metric([state], float(snap.callbacks.get(state, 0)))
        return [up, subs, depth, workers, by_worker, last, oldest, callbacks,
                layer_family(layers)]


def layer_family(layers: Mapping[str, Mapping[str, Any]]) -> Metric:
    """`jaxjudge_sandbox_layer_active{layer}` from a `jaxjudge.protections()`-shaped mapping."""
    active = GaugeMetricFamily(
        "jaxjudge_sandbox_layer_active", "1 if the sandbox layer is active, else 0.",
        labels=["layer"],
    )
    for name, info in sorted(layers.items()):
        active.add_metric([str(name)], 1.0 if info.get("active") else 0.0)
    return active


class _LayerCollector:
    """The sandbox layers of a grading worker (which has no database gauges of its own)."""

    def __init__(self, layers: Mapping[str, Mapping[str, Any]]) -> None:
        self._layers = {k: dict(v) for k, v in layers.items()}

    def collect(self) -> Iterable[Metric]:
        yield layer_family(self._layers)


def worker_metrics(info: Mapping[str, str], layers: Mapping[str, Mapping[str, Any]]) -> Metrics:
    """The metrics a `jaxjudge worker` serves: its grades and grade seconds, its versions and
    the sandbox layers it checked at start-up. Queue and submission gauges come from the API
    nodes' /metrics (they read the shared database), so they are not repeated here."""
    metrics = Metrics(info=info)
    metrics.registry.register(_LayerCollector(layers))
    return metrics


class _InfoCollector:
    def __init__(self, info: Mapping[str, str]) -> None:
        self._info = {k: str(v) for k, v in info.items()}

    def collect(self) -> Iterable[Metric]:
        yield InfoMetricFamily("jaxjudge", "Versions and configuration of this process.",
                               value=self._info)


class Metrics:
    """The metrics of one app or one grading worker, in a registry of its own.

    `multiproc_dir` (default: PROMETHEUS_MULTIPROC_DIR) switches to multiprocess mode: the
    process-local metrics are written to files there and `registry` reports the sum over every
    process that writes to that directory. That needs the variable set before prometheus-client
    is first imported (as a process manager's environment does); otherwise this raises."""

    def __init__(
        self, *, info: Mapping[str, str] | None = None, multiproc_dir: str | None = None
    ) -> None:
        self.multiproc_dir = multiproc_dir or multiprocess_dir()
        # What is exposed at /metrics.
        self.registry = CollectorRegistry(auto_describe=True)
        if self.multiproc_dir:
            if not _values_are_shared():
                raise RuntimeError(
                    f"{MULTIPROC_ENV} must be set before prometheus_client is imported: this "
                    "process would count in memory and its grades would be missing from "
                    "/metrics"
                )
            # Local metrics go to the files only; the collector reads every process's files.
            local = CollectorRegistry()
            MultiProcessCollector(self.registry, path=self.multiproc_dir)
        else:
            local = self.registry
        self.grades = Counter(
            "jaxjudge_grades", "Grades stored, by verdict and mode.", ["verdict", "mode"],
            registry=local,
        )
        self.grade_seconds = Histogram(
            "jaxjudge_grade_seconds",
            "Grade duration by stage (total, stage_a, stage_b), as measured by the grader "
            "around each sandboxed stage. Report-cache hits are not observed.",
            ["stage"], buckets=GRADE_BUCKETS, registry=local,
        )
        self.attempts = Histogram(
            "jaxjudge_grade_attempts",
            "The attempt number of each stored grade (1: graded first time; more: after "
            "interruptions, redeliveries; 4: given up as internal_error).",
            buckets=ATTEMPT_BUCKETS, registry=local,
        )
        self.redeliveries = Counter(
            "jaxjudge_redeliveries",
            "Jobs of presumed-dead workers put back in the queue by this process's sweep, by "
            "queue (grading, callbacks).", ["queue"], registry=local,
        )
        for verdict in sorted(_VERDICTS - {Verdict.SKIPPED.value}):
            for mode in MODES:
                self.grades.labels(verdict, mode)  # series exist from the start at 0
        for stage in STAGES:
            self.grade_seconds.labels(stage)
        for queue in ("grading", "callbacks"):
            self.redeliveries.labels(queue)
        self.registry.register(_InfoCollector(info or {}))
        self.database: DatabaseCollector | None = None

    def observe_report(self, report: Report, attempts: int = 1) -> None:
        """Count one stored grade (stored on attempt `attempts`) and observe its stage
        durations. Never raises: a metrics problem must not fail the grade it describes."""
        try:
            verdict = report.verdict.value if report.verdict.value in _VERDICTS else "other"
            mode = report.mode if report.mode in MODES else "other"
            self.grades.labels(verdict, mode).inc()
            self.attempts.observe(float(attempts))
            if report.timings.get("cached"):  # a report-cache hit: nothing was graded
                return
            for stage in STAGES:
                if report.timings.get(f"{stage}.cached"):  # answered by the program cache:
                    continue  # its lookup is in the report's split, but the stage never ran
                seconds = report.timings.get(stage)
                if isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0:
                    self.grade_seconds.labels(stage).observe(float(seconds))
        except Exception:
            log.exception("metrics: cannot observe a report")

    def watch_database(
        self,
        engine: Engine,
        *,
        workers: Callable[[], int | None],
        protections: Callable[[], Mapping[str, Mapping[str, Any]]],
        ttl: float = 2.0,
    ) -> DatabaseCollector:
        """Add the scrape-time database gauges (once per registry)."""
        if self.database is not None:
            raise RuntimeError("this Metrics already watches a database")
        self.database = DatabaseCollector(
            engine, workers=workers, protections=protections, ttl=ttl
        )
        self.registry.register(self.database)
        return self.database

    def render(self) -> bytes:
        """The Prometheus text exposition of `registry`."""
        return generate_latest(self.registry)


def serve_metrics(port: int, metrics: Metrics, addr: str = "127.0.0.1") -> Any:
    """Serve `metrics` at http://addr:port/metrics from a daemon thread (for a grading worker,
    which has no HTTP server of its own). No authentication: bind to loopback (the default) or
    a network only Prometheus reaches. Returns the server (call `.shutdown()` to stop it)."""
    server, _thread = start_http_server(port, addr=addr, registry=metrics.registry)
    return server
