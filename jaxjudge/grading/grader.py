"""`Grader`: the grading machinery as one object, passed to whoever grades.

It holds its collaborators instead of process globals: how sandboxed stages are launched (the
cold `sandbox.run_stage`, or a warm pool's runner), stage B's engine, and the caches (reports by
source, stage B results and what follows from them by exported program). A course script that
grades many files keeps one, as a context manager when it owns a warm pool:

    with Grader(warm_pool=True) as g:
        for path in files:
            report = g.grade(problem, path.read_bytes())
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from jaxjudge.grading.caches import (
    PROGRAM_CACHE_SIZE,
    FiguresCache,
    ModelsCache,
    ProgramCache,
    ReportCache,
)
from jaxjudge.grading.custom import custom_cases
from jaxjudge.grading.early import Started, overlap_enabled
from jaxjudge.grading.exposure import require_hidden
from jaxjudge.grading.observer_seed import observer_seed
from jaxjudge.grading.pipeline import Grading, display_name
from jaxjudge.grading.report import Mode, Report, Verdict
from jaxjudge.grading.scoring import max_score
from jaxjudge.grading.stage_common import ENGINES, StageRunner, default_runner
from jaxjudge.problems.package import Limits, Problem, load_problem
from jaxjudge.version import grader_version

log = logging.getLogger("grader")


def engine_from_env() -> str:
    """JAXJUDGE_ENGINE (default interpret); a bad value is the caller's error."""
    value = os.environ.get("JAXJUDGE_ENGINE", "interpret").strip().lower() or "interpret"
    if value not in ENGINES:
        raise ValueError(f"JAXJUDGE_ENGINE must be one of {ENGINES}, not {value!r}")
    return value


INTERNAL_ERROR_MESSAGE = ("The grader failed on its own (not your fault); the error was logged. "
                          "Please resubmit later.")


def internal_error(problem: Problem, mode: Mode, message: str = INTERNAL_ERROR_MESSAGE
                   ) -> Report:
    """The report of a grade our own code could not finish (the cause is logged, not shown)."""
    return Report(verdict=Verdict.INTERNAL_ERROR, problem=problem.id, mode=mode,
                  message=message, max_score=max_score(problem, mode))


class Grader:
    """Grades submissions with one runner, engine and set of caches.

    `runner`: how sandboxed stages start (default: a fresh interpreter per stage). `warm_pool`:
    True (or a worker count) starts a `jaxjudge.isolation.pool.WarmPool` owned by this grader, whose
    runner is used; `close()` (or leaving the `with` block) stops it. `engine`: "interpret" or "xla"
    (default: JAXJUDGE_ENGINE). `report_cache`: identical sources answered from memory (0 off).
    `program_cache`: stage B results per exported program (0 off). `spare_warmup`: the warm
    pool's (None: its own choice). `kick_seed`: the secret the observer's kicks are drawn from
    (None: this installation's, `jaxjudge.grading.observer_seed`)."""

    def __init__(
        self,
        *,
        runner: StageRunner | None = None,
        warm_pool: bool | int = False,
        engine: str | None = None,
        report_cache: int = 0,
        program_cache: int = PROGRAM_CACHE_SIZE,
        spare_warmup: bool | None = None,
        kick_seed: int | None = None,
    ) -> None:
        if engine is not None and engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if runner is not None and warm_pool:
            raise ValueError("give a runner or warm_pool, not both")
        self.engine = engine or engine_from_env()
        self.pool: Any = None
        if warm_pool:
            from jaxjudge.isolation.pool import WarmPool

            workers = None if warm_pool is True else int(warm_pool)
            self.pool = WarmPool(workers, spare_warmup=spare_warmup).start()
            runner = self.pool.runner
        self.runner: StageRunner = runner or default_runner
        # Cold stages: start stage B's interpreter while stage A runs (sandbox.prestart), so
        # the two jax imports overlap on two cores. JAXJUDGE_OVERLAP_STAGES=0 turns it off.
        self.overlap = self.runner is default_runner and overlap_enabled()
        # A cold run writes in the job dir itself, so the parent can parse stage B's texts
        # while it runs; the warm pool copies them back only with the result, and a prefetch
        # thread would poll for them all along (500 polls/s, holding the GIL the other grades'
        # threads need: ~35% of the parent's GIL time per grade, by py-spy --gil).
        self.live_job_dir = self.runner is default_runner
        self.reports = ReportCache(report_cache)
        self.programs = ProgramCache(program_cache)
        self.rules = ModelsCache(program_cache)  # program-rule outcomes per verified program
        self.tests = ModelsCache(program_cache)  # compared tests per program and package
        self.memory = ModelsCache(64)  # the reference's memory profile per package and shapes
        self.figures = FiguresCache(64)  # the reference's observed work per package and mode
        self.kick_seed = observer_seed() if kick_seed is None else int(kick_seed)

    def grade(
        self,
        problem: Problem | str,
        source: str | bytes,
        mode: Mode = "submit",
        *,
        filename: str = "submission.py",
        limits: Limits | None = None,
        early: Started | None = None,
        custom_inputs: list[dict[str, Any]] | None = None,
    ) -> Report:
        """Grade one submission. Never raises for anything the submission does; an unknown
        problem raises `ProblemError`, a bad `mode` raises `ValueError` (caller errors).
        `custom_inputs` (run mode): the learner's own inputs, also run, with expected outputs
        from the reference and no points; a bad one raises `CustomInputError`.
        `early`: stage processes `jaxjudge.grading.early.start` launched for this grade (the CLI
        does, before importing the grader); whatever this grade does not use is closed."""
        try:
            return self._grade(problem, source, mode, filename, limits, early, custom_inputs)
        finally:
            if early is not None:
                early.close()

    def _grade(self, problem: Problem | str, source: str | bytes, mode: Mode, filename: str,
               limits: Limits | None, early: Started | None,
               custom_inputs: list[dict[str, Any]] | None = None) -> Report:
        if mode not in ("run", "submit"):
            raise ValueError(f"mode must be 'run' or 'submit', not {mode!r}")
        if custom_inputs and mode != "run":
            raise ValueError("custom_inputs are for mode 'run'")
        prob = load_problem(problem) if isinstance(problem, str) else problem
        require_hidden(prob)
        custom = custom_cases(prob, custom_inputs) if custom_inputs else None
        started = time.perf_counter()
        lim = limits or prob.limits
        key, cached = ("", None) if custom else self.reports.lookup(
            prob, source, mode, lim, self.engine, started)
        if cached is not None:
            return cached
        try:
            report = Grading(self, prob, source, mode, lim, display_name(filename),
                             early, custom=custom).run()
        except Exception:
            log.exception("internal error while grading a %s submission", prob.id)
            report = internal_error(prob, mode)
        report.timings["total"] = round(time.perf_counter() - started, 4)
        report.versions.setdefault("grader", grader_version())
        if key:
            self.reports.put(key, report)
        return report

    def close(self) -> None:
        """Stop the warm pool this grader started (if any)."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
            self.runner = default_runner
            self.overlap = overlap_enabled()
            self.live_job_dir = True

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
