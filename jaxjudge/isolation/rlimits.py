"""The rlimits layer: the resource limits the trampoline sets before it drops privileges. The
floor under the cgroup's exact accounting, and the memory bound (RLIMIT_AS) when there is no
memory cgroup."""

from __future__ import annotations

import math
import resource

from jaxjudge.isolation.limits import SandboxLimits

AS_FALLBACK_EXTRA = 3 << 30  # RLIMIT_AS headroom over memory_bytes: jax reserves ~1.5 GiB virtual


def _rlimits(limits: SandboxLimits, layers: dict[str, bool], cgroup_memory: bool
             ) -> list[tuple[int, int, int]]:
    cpu = max(1, math.ceil(limits.cpu_seconds))
    out = [
        (resource.RLIMIT_CPU, cpu + 1, cpu + 2),  # the cgroup poll is exact; this is the floor
        (resource.RLIMIT_FSIZE, int(limits.output_bytes), int(limits.output_bytes)),
        (resource.RLIMIT_NOFILE, limits.max_open_files, limits.max_open_files),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if not cgroup_memory:
        cap = int(limits.memory_bytes) + AS_FALLBACK_EXTRA
        out.append((resource.RLIMIT_AS, cap, cap))
    if layers["uid_pool"]:
        out.append((resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes))
    return out
