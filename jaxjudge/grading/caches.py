"""The grader's caches: reports by source, stage B results by exported program, and what
follows from them (program-rule outcomes, compared tests). Each is a bounded thread-safe LRU
that hands out private copies; a `Grader` owns one of each."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Any

from jaxjudge.grading.reference_work import Reference
from jaxjudge.grading.report import Mode, Report, Verdict
from jaxjudge.grading.stage_results import (
    StageBResult,
)
from jaxjudge.problems.package import Limits, Problem
from jaxjudge.version import grader_version

PROGRAM_CACHE_SIZE = 256  # stage B results of distinct exported programs kept in memory


class LRU:
    """A thread-safe bounded map; subclasses say what a stored value is (`_freeze`/`_thaw`:
    callers get private copies, never the cached object)."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Any] = OrderedDict()
        self.size = size

    def _freeze(self, value: Any) -> Any:
        return value

    def _thaw(self, stored: Any) -> Any:
        return stored

    def get(self, key: str) -> Any | None:
        with self._lock:
            stored = self._items.get(key)
            if stored is None:
                return None
            self._items.move_to_end(key)
        return self._thaw(stored)

    def put(self, key: str, value: Any) -> None:
        if self.size <= 0:
            return
        stored = self._freeze(value)
        with self._lock:
            self._items[key] = stored
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def resize(self, size: int) -> None:
        with self._lock:
            self.size = max(0, size)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class ReportCache(LRU):
    """Identical source, problem, mode and limits -> the same report, without re-running.

    Off by default (size 0); the service turns it on. Verdicts that depend on the machine's
    load or health (time/memory limits, internal errors) are never cached.
    """

    UNCACHED = (
        Verdict.TIME_LIMIT_EXCEEDED,
        Verdict.MEMORY_LIMIT_EXCEEDED,
        Verdict.INTERNAL_ERROR,
    )

    def __init__(self, size: int = 0) -> None:
        super().__init__(size)

    def _freeze(self, value: Report) -> Report:
        return value.model_copy(deep=True)

    def _thaw(self, stored: Report) -> Report:
        return stored.model_copy(deep=True)

    def put(self, key: str, value: Report) -> None:
        if value.verdict not in self.UNCACHED:
            super().put(key, value)

    def lookup(self, problem: Problem, source: str | bytes, mode: Mode, limits: Limits,
               engine: str, started: float) -> tuple[str, Report | None]:
        """This grade's key ('' while the cache is off) and the report kept for it, if any,
        timed from `started` and marked cached. One lookup for the Grader and the
        ProcessGrader, whose cache is the parent's."""
        if not self.size:
            return "", None
        key = report_key(problem, source, mode, limits, engine)
        cached = self.get(key)
        if cached is not None:
            cached.timings = {"total": round(time.perf_counter() - started, 4), "cached": 1.0}
        return key, cached




class ProgramCache(LRU):
    """Stage B's result for exactly these exported bytes and this job, kept in memory.

    Stage B is a function of (exported program bytes, job, engine, XLA flags, grader version),
    so a hit is the result of running exactly those bytes in the trusted stage: as good as a
    fresh run, minus the whole stage. The exports carry one source location per op (the report's
    source lines), so sources that differ only in layout or comments get entries of their own;
    stage B's results cache (keyed by the verified text, without locations) still spares them
    the run of the tests."""

    def __init__(self, size: int = PROGRAM_CACHE_SIZE) -> None:
        super().__init__(size)

    @staticmethod
    def key(job_text: str, flags: str, blobs: dict[str, bytes]) -> str:
        h = hashlib.sha256()
        for part in (grader_version(), flags, job_text):
            h.update(part.encode() + b"\0")
        for pid in sorted(blobs):
            h.update(pid.encode() + b"\0" + hashlib.sha256(blobs[pid]).digest())
        return h.hexdigest()

    # The validated result is a frozen model whose output trees are only ever read (decoded),
    # so entries share it; the texts dict is copied.
    def _freeze(self, value: tuple[StageBResult, dict[str, str]]
                ) -> tuple[StageBResult, dict[str, str]]:
        return value[0], dict(value[1])

    def _thaw(self, stored: tuple[StageBResult, dict[str, str]]
              ) -> tuple[StageBResult, dict[str, str]]:
        return stored[0], dict(stored[1])




class ModelsCache(LRU):
    """Lists of report models (requirement or test results) derived from a cached program."""

    def _freeze(self, value: list[Any]) -> list[Any]:
        return [r.model_copy(deep=True) for r in value]

    def _thaw(self, stored: list[Any]) -> list[Any]:
        return [r.model_copy(deep=True) for r in stored]





class FiguresCache(LRU):
    """The reference's observed work per run and its answers step by step
    (jaxjudge.grading.reference_work), per problem version and mode, copied in and out (the
    rows themselves are never changed)."""

    def _freeze(self, value: Reference) -> Reference:
        return Reference(dict(value.figures), dict(value.trajectories), dict(value.rules))

    def _thaw(self, stored: Reference) -> Reference:
        return Reference(dict(stored.figures), dict(stored.trajectories), dict(stored.rules))


def report_key(
    problem: Problem, source: str | bytes, mode: Mode, limits: Limits, engine: str
) -> str:
    """What a report depends on besides the grader's code: the bytes, problem, mode, limits
    and engine."""
    raw = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
    h = hashlib.sha256(raw)
    for part in (problem.id, problem.fingerprint(), mode, limits.model_dump_json(),
                 grader_version(), engine):
        h.update(b"\0" + part.encode())
    return h.hexdigest()


