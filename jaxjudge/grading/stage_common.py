"""What both sandboxed stages share: their scripts and size caps, the runner hook, the
early-verdict exception, reading a file a sandbox wrote, and mapping sandbox outcomes."""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxjudge.grading.report import Verdict
from jaxjudge.grading.stage_paths import (  # noqa: F401  (their home for the other modules)
    EXECUTE_SCRIPT,
    MAX_RESULT_BYTES,
    STAGES_DIR,
    TRACE_SCRIPT,
    sandbox_limits,
    stage_b_limits,
)
from jaxjudge.grading.stage_results import (
    MalformedResult,
)
from jaxjudge.isolation import sandbox
from jaxjudge.problems.package import Limits

MAX_SOURCE_BYTES = 1024 * 1024
MAX_PROGRAM_TEXT = 8 * 1024 * 1024
MAX_EXPORT_BYTES = 64 * 1024 * 1024
# How stage B runs the verified programs: "interpret" (default) evaluates each shape on the
# StableHLO reference interpreter bundled with jaxlib when the program is small and made of
# supported ops, else compiles it with XLA; "xla" always compiles. See stages/execute.py.
ENGINES = ("interpret", "xla")
# What a learner is told when a stage's result file fails its schema
# (jaxjudge.grading.stage_results); the precise reason goes to the log.
MALFORMED_A = "the tracing process returned a malformed result (its output was tampered with)"
TOO_DEEP_A = (
    "the trace of your program is nested too deeply for the grader to read (hundreds of levels "
    "of jit or other function calls inside one another?); flatten your program"
)
MALFORMED_B = (
    "the process that ran your exported program returned a malformed result (the program may "
    "have been crafted to break the grader)"
)
log = logging.getLogger("grader")
# Pauses before each new launch of a stage whose sandbox did not start: a moment's shortage on a
# loaded machine (every sandbox uid busy, a cgroup not yet released) passes; a failure that
# persists through all of them is the grader's.
SETUP_RETRY_PAUSES = (0.5, 2.0, 5.0)
# A hook so a warm worker pool can replace how sandboxed stages are launched
# (jaxjudge.isolation.pool).
StageRunner = Callable[
    [Path, Path, "sandbox.SandboxLimits", bool, dict[str, str]], "sandbox.SandboxResult"
]


def default_runner(
    script: Path, job_dir: Path, limits: sandbox.SandboxLimits, untrusted: bool,
    env: dict[str, str],
) -> sandbox.SandboxResult:
    """A fresh sandboxed interpreter per stage (jaxjudge.isolation.sandbox.run_stage)."""
    return sandbox.run_stage(script, job_dir, limits, env=env, untrusted=untrusted)



class Decided(Exception):
    """Internal control flow: a stage decided the verdict early."""

    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


def read_regular(path: Path, limit: int) -> bytes | None:
    """A file a sandbox wrote, or None if missing, over `limit` bytes or not a regular file (a
    symlink planted to make us read a host file, a FIFO to make us block)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(limit + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return data if len(data) <= limit else None


def read_result(path: Path, parse: Callable[[bytes], Any]) -> Any | None:
    """A sandbox's result file, schema-checked by `parse` (jaxjudge.grading.stage_results): None
    when it is missing or not a regular file (see `_read_regular`); MalformedResult when it is over
    MAX_RESULT_BYTES or does not fit its schema."""
    data = read_regular(path, MAX_RESULT_BYTES)
    if data is None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISREG(st.st_mode) and st.st_size > MAX_RESULT_BYTES:
            raise MalformedResult(f"{st.st_size} bytes, over {MAX_RESULT_BYTES}")
        return None
    return parse(data)




class StageBase:
    """What both stage protocols need from a grade: its limits and the mapping of an
    abnormal sandbox outcome to a verdict."""

    limits: Limits

    def _sandbox_limits(self) -> sandbox.SandboxLimits:
        return sandbox_limits(self.limits)

    def _launched(self, launch: Callable[[], sandbox.SandboxResult], job: Path,
                  timings: dict[str, float], stage: str) -> sandbox.SandboxResult:
        """`launch()`'s result, launched again (after SETUP_RETRY_PAUSES) while the sandbox did
        not start: `setup_failed`, or the runner's own OSError (the warm pool's files). Neither
        says anything about the submission, so neither may become its verdict; a failure that
        outlasts every pause is returned (and becomes internal_error)."""
        (job / "result.json").unlink(missing_ok=True)  # nothing of a failed launch is read
        res = self._launch_once(launch)
        for pause in SETUP_RETRY_PAUSES:
            if res.status != "setup_failed":
                break
            log.warning("%s: the sandbox did not start (%s); launching it again in %g s",
                        stage, res.detail[:300], pause)
            timings[f"{stage}.setup_retries"] = timings.get(f"{stage}.setup_retries", 0) + 1
            time.sleep(pause)
            (job / "result.json").unlink(missing_ok=True)  # nothing of a failed launch is read
            res = self._launch_once(launch)
        return res

    @staticmethod
    def _launch_once(launch: Callable[[], sandbox.SandboxResult]) -> sandbox.SandboxResult:
        try:
            return launch()
        except OSError as exc:
            log.warning("the stage's runner failed", exc_info=True)
            return sandbox.SandboxResult("setup_failed", None, None, 0.0, None, None,
                                         f"runner: {exc}", "", "")

    def _stage_failure(self, res: sandbox.SandboxResult, what: str,
                       limits: sandbox.SandboxLimits | None = None) -> Decided | None:
        """Map a sandbox outcome that ended the stage abnormally to a verdict."""
        lim = self.limits
        if res.status in ("wall_timeout", "cpu_timeout"):
            kind = "wall-clock" if res.status == "wall_timeout" else "CPU"
            secs = lim.wall_seconds if res.status == "wall_timeout" else lim.cpu_seconds
            return Decided(
                Verdict.TIME_LIMIT_EXCEEDED,
                f"{what} exceeded the {kind} time limit of {secs:g} s. Look for infinite loops, "
                "sleeps or huge computations.",
            )
        if res.status == "memory_exceeded":
            return Decided(
                Verdict.MEMORY_LIMIT_EXCEEDED,
                f"{what} used more than the memory limit of {lim.memory_mb} MB.",
            )
        if res.status == "output_exceeded":
            # The cap is the sandbox's (output_bytes: prints, and every file the stage writes:
            # result.json, the exported program, its StableHLO text), not output_kb alone.
            cap_kb = (limits or self._sandbox_limits()).output_bytes // 1024
            if res.detail.startswith("stdout/stderr"):
                return Decided(
                    Verdict.RUNTIME_ERROR,
                    f"{what} printed more than the limit of {cap_kb} KB; remove large prints.",
                )
            return Decided(
                Verdict.RUNTIME_ERROR,
                f"{what} wrote a file larger than the limit of {cap_kb} KB (or too many files): "
                "the program traced from solve is too large to export or verify (look for "
                "long Python loops unrolled into the program), or your code writes files.",
            )
        if res.status == "setup_failed":
            raise RuntimeError(f"sandbox setup failed: {res.detail}")
        return None

    # -- the pipeline ----------------------------------------------------------------------
