"""What layer detection found on this machine (`_Support`), the record every run starts with.
It sits below both its writer (jaxjudge.isolation.layers, whose probes are themselves
sandboxed runs) and its reader (jaxjudge.isolation.supervisor), so neither imports the other
back."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxjudge.isolation.cgroups import _CgroupSupport


@dataclass
class _Support:
    cgroup: _CgroupSupport | None = None
    uid_pool: bool = False
    bwrap: str | None = None
    bwrap_disable_userns: bool = True
    seccomp: bool = False
    details: dict[str, str] = field(default_factory=dict)
    from_cache: bool = False  # bwrap and seccomp as an earlier run's probes found them
