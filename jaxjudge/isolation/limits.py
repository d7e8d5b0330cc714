"""What every sandbox layer shares: a run's limits, its result, the refusal raised when a
required layer is missing, and the constants more than one layer reads. It imports nothing of
the other layers, so each of them can import it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

JOB_MOUNT = "/job"  # where the job dir appears inside bubblewrap
DISK_FACTOR = 8  # total new bytes in job_dir may be DISK_FACTOR * output_bytes
MAX_JOB_ENTRIES = 10_000
KILL_GRACE_SECONDS = 5.0
SETUP_EXIT = 125  # trampoline/bootstrap exit code after reporting a setup failure
_PRIVATE_PREFIX = "jaxjudge-sbx-"  # private temp dirs of runs (swept by pid when stale)

Status = Literal[
    "exited", "signaled", "wall_timeout", "cpu_timeout", "memory_exceeded", "output_exceeded",
    "setup_failed",
]


@dataclass(frozen=True)
class SandboxLimits:
    wall_seconds: float
    cpu_seconds: float
    memory_bytes: int  # resident memory of the whole run (cgroup), fallback RLIMIT_AS ~ +3 GiB
    output_bytes: int  # cap for stdout/stderr files and RLIMIT_FSIZE (files the run writes)
    max_processes: int = 128  # tasks (threads count! jax starts ~20 threads)
    max_open_files: int = 256


# A stage started in a fresh interpreter first imports jax: ~1.5-2.5 s of CPU here and more wall
# time on a busy machine. The warm pool's forked children start with that done. So that a
# problem's limits are the same budget for the submission's own work either way, a cold start
# gets this much on top (`run_stage`).
COLD_START_CPU_SECONDS = 5.0
COLD_START_WALL_SECONDS = 10.0


@dataclass
class SandboxResult:
    status: Status
    exit_code: int | None
    signal: int | None
    wall_seconds: float
    cpu_seconds: float | None
    peak_memory_bytes: int | None
    detail: str
    stdout: str
    stderr: str


class SandboxUnavailable(Exception):
    """A required sandbox layer is not active here (see `require_layers`); the message names
    each missing layer, what it protects and the ways out."""
