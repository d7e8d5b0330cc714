"""Kernel-level isolation for the grading stages: cgroups, a uid pool, bubblewrap, seccomp, rlimits.

`run()` starts `python -I <script> <job_dir>` through a short root-side trampoline that (in this
order) joins a fresh per-run cgroup, optionally hides unreachable host directories behind a
private mount namespace, sets rlimits, drops to a dedicated uid, and execs bubblewrap (or the
interpreter directly when bwrap is missing). Inside, a tiny bootstrap installs the seccomp filter
and then runs the script with `runpy`, so no untrusted byte executes before every layer is up.

Every layer is detected once (`protections()`), used when available and reported. Whoever grades
others' code fails closed: `require_layers()` (the service, `grade-set`, `gradescope`) makes every
run raise `SandboxUnavailable` when a layer is missing, unless JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX
names it. For the library and `jaxjudge grade` a missing layer is a logged warning unless
`JAXJUDGE_SANDBOX_REQUIRE` names it. `JAXJUDGE_SANDBOX_DISABLE` turns layers off (debugging and
layer tests).
See the README section "Sandbox" for the threat model and container flags.

The layers live one per module of jaxjudge.isolation, and this module is their front door: the
grading code, the pool, the commands and the service call the names in `__all__` here.
- `limits`: SandboxLimits, SandboxResult, SandboxUnavailable, Status and the shared constants.
- `bootstrap`: the trampoline and enter scripts that run before the payload.
- `cgroups`: cgroup detection, one run's cgroup (`RunCgroup` for the pool), process_tree.
- `uidpool`: a uid per run, and killing and cleaning up what it left.
- `bwrap`: bubblewrap's candidates and arguments, and the paths a run can see.
- `seccomp`: the syscall filter (built by the parent, installed by the enter script).
- `rlimits`: the resource limits the trampoline sets.
- `support`: what detection found, the record every run starts with.
- `layers`: detecting the layers (protections), and requiring them (require_layers).
- `supervisor`: one cold run: start, watch (LimitWatch), kill, reap; `Pending`.
- `resident`: long-lived sandboxed processes for the warm pool (`spawn`, `Resident`).
- here: `run`, `run_stage` and `prestart`, which pick the layers (`layers`) and start a cold
  run (`supervisor`); they sit above both because detection's probes are cold runs themselves.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jaxjudge.isolation.cgroups import CPU_WEIGHT, RunCgroup, process_tree
from jaxjudge.isolation.layers import (
    LAYERS,
    UNSAFE_ENV,
    _detect,
    _select_layers,
    detect_in_background,
    detected_from_cache,
    layer_list,
    protections,
    require_layers,
)
from jaxjudge.isolation.limits import (
    COLD_START_CPU_SECONDS,
    COLD_START_WALL_SECONDS,
    JOB_MOUNT,
    KILL_GRACE_SECONDS,
    MAX_JOB_ENTRIES,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    Status,
)
from jaxjudge.isolation.resident import Resident, new_run_cgroup, spawn
from jaxjudge.isolation.supervisor import LimitWatch, Pending, _ColdRun, _execute

__all__ = [
    "COLD_START_CPU_SECONDS",
    "COLD_START_WALL_SECONDS",
    "CPU_WEIGHT",
    "JOB_MOUNT",
    "KILL_GRACE_SECONDS",
    "LAYERS",
    "MAX_JOB_ENTRIES",
    "STAGE_WAIT_ENV",
    "UNSAFE_ENV",
    "LimitWatch",
    "Pending",
    "Resident",
    "RunCgroup",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "Status",
    "detect_in_background",
    "detected_from_cache",
    "layer_list",
    "new_run_cgroup",
    "prestart",
    "process_tree",
    "protections",
    "require_layers",
    "run",
    "run_stage",
    "spawn",
]


def run(script: Path, job_dir: Path, limits: SandboxLimits, *, env: dict[str, str] | None = None,
        untrusted: bool = True) -> SandboxResult:
    """Run `python -I <script> <job_dir>` with every available layer (see module docstring)."""
    layers = _select_layers()
    return _execute(_detect(), layers, Path(script), Path(job_dir), limits, env,
                    untrusted=untrusted)


def run_stage(script: Path, job_dir: Path, limits: SandboxLimits, *,
              env: dict[str, str] | None = None, untrusted: bool = True) -> SandboxResult:
    """`run()` for a grading stage in a fresh interpreter: `limits` are the stage's budget for
    its own work, so the jax import it must do first comes on top (COLD_START_*)."""
    cold = replace(limits, cpu_seconds=limits.cpu_seconds + COLD_START_CPU_SECONDS,
                   wall_seconds=limits.wall_seconds + COLD_START_WALL_SECONDS)
    return run(script, job_dir, cold, env=env, untrusted=untrusted)


# The stage scripts' side of `prestart`: with this set to "1" a stage does its trusted start-up
# (imports), then reads one byte from stdin before it reads its job: b"g" go, EOF give up.
STAGE_WAIT_ENV = "JAXJUDGE_STAGE_WAIT"


def prestart(script: Path, job_dir: Path, limits: SandboxLimits, *,
             env: dict[str, str] | None = None, untrusted: bool = True) -> Pending:
    """`run_stage()` started ahead of its job, so that the stage's import of jax overlaps with
    whatever the caller does meanwhile (the one-off grade runs stage A). Every layer is the
    same as `run_stage()`'s and in place before the script starts; the stage runs only its own
    start-up code until `Pending.go()`, then reads the job the caller wrote into `job_dir` and
    runs as usual. Limits: `run_stage()`'s, the wall clock restarting at `go()`. A launch that
    fails is reported by `go()` as `setup_failed`."""
    layers = _select_layers()
    cold = replace(limits, cpu_seconds=limits.cpu_seconds + COLD_START_CPU_SECONDS,
                   wall_seconds=limits.wall_seconds + COLD_START_WALL_SECONDS)
    job_dir.mkdir(exist_ok=True)
    launched = _ColdRun(_detect(), layers, Path(script), Path(job_dir), cold,
                        {**(env or {}), STAGE_WAIT_ENV: "1"}, untrusted, stdin_pipe=True)
    failed = launched.start()
    return Pending(None if failed is not None else launched, failed)
