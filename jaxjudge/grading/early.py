"""Both stages of one cold grade, started before the rest of the grader is even imported.

A one-off `jaxjudge grade` spends ~0.8 s of its life in each stage's `import jax`. The CLI
starts both sandboxed interpreters (`sandbox.prestart`: every layer in place, the stage's own
start-up code only) as soon as it knows the problem's limits, then imports the grading code,
reads the file and writes the jobs while they import jax. Stage A gets its job and the
submission when the grade runs it; stage B gets its job only after stage A's result was
validated. This module imports only the sandbox and the stage paths, so that starting costs
nothing but the launch itself.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from jaxjudge.grading.engine_hint import STAGE_B_JAX_ENV
from jaxjudge.grading.stage_paths import (
    EXECUTE_SCRIPT,
    TRACE_SCRIPT,
    StageLimits,
    sandbox_limits,
    stage_b_limits,
)
from jaxjudge.isolation import fstree, sandbox
from jaxjudge.isolation.workdir import work_root
from jaxjudge.isolation.xla import fast_compile_flags

log = logging.getLogger("grader")


def overlap_enabled() -> bool:
    """JAXJUDGE_OVERLAP_STAGES (default on): start stage B while stage A runs."""
    return os.environ.get("JAXJUDGE_OVERLAP_STAGES", "1").strip().lower() not in (
        "0", "false", "no")


def stage_b_env() -> dict[str, str]:
    flags = fast_compile_flags()
    return {"XLA_FLAGS": flags} if flags else {}


@dataclass
class Started:
    """Stage processes waiting for their jobs in `root/a` and `root/b`. The grade that adopts
    them takes them (`take_a`, `take_b`), and whoever owns this calls `close()` in a
    `finally`: what was not taken is cancelled (killed, its uid and cgroup released) and the
    work directory removed unless a grade adopted it."""

    root: Path
    limits: sandbox.SandboxLimits
    observed: bool  # stage B was given the observer's time (stage_paths.stage_b_limits)
    a: sandbox.Pending | None = None
    b: sandbox.Pending | None = None
    adopted: bool = field(default=False)

    def take_a(self) -> sandbox.Pending | None:
        pending, self.a = self.a, None
        return pending

    def take_b(self) -> sandbox.Pending | None:
        pending, self.b = self.b, None
        return pending

    def cancel(self) -> None:
        for pending in (self.take_a(), self.take_b()):
            if pending is not None:
                pending.cancel()

    def close(self) -> None:
        try:
            self.cancel()
        finally:
            if not self.adopted and self.root.exists() and not fstree.remove_tree(self.root):
                log.error("could not remove the grade's work dir %s", self.root)


def start(limits: StageLimits, observed: bool, *, root: Path | None = None,
          b: bool = True, jax: bool = False) -> Started:
    """Start stage A (then B, if `b`) for a grade under `limits`, in `root` (default: a new
    work directory); `observed`: the problem's programs are observed in stage B; `jax`: stage
    B imports jax while it waits (jaxjudge.grading.engine_hint). Stage A goes first: it is on
    the grade's critical path."""
    started = Started(root or work_root(), sandbox_limits(limits), observed)
    try:
        started.a = sandbox.prestart(TRACE_SCRIPT, started.root / "a", started.limits,
                                     untrusted=True)
        if b:
            started.b = sandbox.prestart(EXECUTE_SCRIPT, started.root / "b",
                                         stage_b_limits(limits, observed),
                                         env={**stage_b_env(),
                                              **({STAGE_B_JAX_ENV: "1"} if jax else {})},
                                         untrusted=False)
    except BaseException:
        started.close()
        raise
    return started


def try_start(limits: StageLimits, observed: bool, *, jax: bool = False) -> Started | None:
    """`start`, for a caller that grades either way: None when overlapping is off or the
    stages cannot start (a required layer missing, say: the grade then reports it)."""
    if not overlap_enabled():
        return None
    try:
        return start(limits, observed, jax=jax)
    except Exception:
        log.debug("stages not started early", exc_info=True)
        return None
