"""The cgroup layer: finding a writable hierarchy with the memory and pids controllers
(`_detect_cgroup`), one run's cgroup (`_RunCgroup`: limits in, counters out, every member
killed), the warm pool's view of one (`RunCgroup`), and measuring a run's processes when no
cgroup can (`process_tree`, `resident_memory`)."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jaxjudge.isolation.limits import KILL_GRACE_SECONDS, SandboxLimits

# The sandbox's one logger, whichever layer logs (operators filter on its name).
log = logging.getLogger("jaxjudge.isolation.sandbox")

MEMORY_FULL_MARGIN = 16 << 20  # see _RunCgroup.memory_full

# "cpu" (optional) only weighs a pool's spare children down while they warm up; it is often
# co-mounted with cpuacct, so two controllers may share one directory.
_V1_CONTROLLERS = ("memory", "pids", "cpuacct", "freezer", "cpu")
CPU_WEIGHT = {1: ("cpu.shares", "1024", "2"), 2: ("cpu.weight", "100", "1")}  # file, run, spare
# The most each version takes for a group's weight (v1 cpu.shares, v2 cpu.weight).
MAX_GROUP_WEIGHT = {1: 262144, 2: 10000}


@dataclass
class _CgroupSupport:
    version: int  # 1 or 2
    bases: dict[str, Path]  # controller ("unified" for v2) -> our jaxjudge/ directory
    controllers: tuple[str, ...]


def _own_cgroup_paths() -> dict[str, str]:
    """Controller name (or "" for v2) -> our cgroup path relative to the hierarchy root."""
    out: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            out[c] = path
    return out


def _cgroup_mounts() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount point, mount root, super options) for every cgroup mount."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        parts, rparts = left.split(), right.split()
        if len(rparts) < 3 or rparts[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append((rparts[0], parts[4], parts[3], set(rparts[2].split(","))))
    return mounts


def _under_mount(mount_point: str, mount_root: str, path: str) -> Path:
    """Host directory of cgroup `path` (relative to the hierarchy) in a mount of `mount_root`."""
    root = mount_root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return Path(mount_point, *[p for p in path.split("/") if p and p != ".."])


def _probe_dir(base: Path) -> None:
    base.mkdir(exist_ok=True)
    probe = base / f"probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    probe.mkdir()
    probe.rmdir()


def _detect_cgroup() -> tuple[_CgroupSupport | None, str]:
    try:
        own = _own_cgroup_paths()
        mounts = _cgroup_mounts()
    except OSError as exc:
        return None, f"cannot read cgroup information: {exc}"
    v1 = {}
    for fstype, point, root, opts in mounts:
        if fstype != "cgroup":
            continue
        for ctrl in _V1_CONTROLLERS:
            if ctrl in opts and ctrl in own and ctrl not in v1:
                v1[ctrl] = _under_mount(point, root, own[ctrl]) / "jaxjudge"
    if "memory" in v1 and "pids" in v1:
        bases: dict[str, Path] = {}
        problems = []
        for ctrl, base in v1.items():
            try:
                _probe_dir(base)
                bases[ctrl] = base
            except OSError as exc:
                problems.append(f"{ctrl}: {exc.strerror or exc}")
        if "memory" in bases and "pids" in bases:
            extra = f" (unusable: {'; '.join(problems)})" if problems else ""
            return (
                _CgroupSupport(1, bases, tuple(bases)),
                f"cgroup v1 per-run groups in {bases['memory']} (and likewise for "
                f"{', '.join(c for c in bases if c != 'memory')}){extra}",
            )
        return None, "cgroup v1 memory/pids not writable: " + "; ".join(problems)
    for fstype, point, root, _ in mounts:
        if fstype != "cgroup2" or "" not in own:
            continue
        here = _under_mount(point, root, own[""])
        try:
            available = (here / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        if not {"memory", "pids"} <= set(available):
            continue
        base = here / "jaxjudge"
        try:
            subtree = (here / "cgroup.subtree_control").read_text().split()
            missing = [c for c in ("memory", "pids", "cpu") if c not in subtree and c in available]
            if missing:
                (here / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))
            _probe_dir(base)
            (base / "cgroup.subtree_control").write_text(
                " ".join("+" + c for c in ("memory", "pids", "cpu") if c in available)
            )
        except OSError as exc:
            return None, (
                f"cgroup v2 at {here} not delegated ({exc.strerror or exc}); run the service in "
                "a leaf cgroup with memory+pids enabled for its parent"
            )
        return _CgroupSupport(2, {"unified": base}, ("memory", "pids", "cpu")), (
            f"cgroup v2 per-run groups under {base}"
        )
    return None, "no writable cgroup hierarchy with memory and pids controllers"


def _swap_total() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("SwapTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def process_tree(root: int) -> list[int]:
    """`root` and its live descendants (host pids), from /proc/<pid>/task/*/children."""
    out: list[int] = []
    todo, seen = [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        out.append(pid)
        for task in tasks:
            with contextlib.suppress(OSError, ValueError):
                todo += [int(k) for k in
                         Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return out


def resident_memory(pids: list[int]) -> int:
    """Bytes the processes hold that only freeing or killing gives back: anonymous and shared
    resident memory plus what was swapped out (per process; a page shared by two processes
    counts twice, which only errs towards the limit)."""
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(("RssAnon:", "RssShmem:", "VmSwap:")):
                with contextlib.suppress(ValueError, IndexError):
                    total += int(line.split()[1]) * 1024
    return total


class _RunCgroup:
    """One run's cgroup directories: limits in, counters out, everything killed and removed."""

    def __init__(self, support: _CgroupSupport, run_id: str) -> None:
        self.support = support
        self.swap_limited = False
        self.dirs: dict[str, Path] = {}
        made: dict[Path, Path] = {}  # co-mounted controllers (cpu,cpuacct) share a directory
        for ctrl, base in support.bases.items():
            if base not in made:
                made[base] = base / run_id
                made[base].mkdir()
            self.dirs[ctrl] = made[base]

    def _write(self, ctrl: str, name: str, value: str, *, optional: bool = False) -> bool:
        try:
            (self.dirs[ctrl] / name).write_text(value)
        except OSError:
            if not optional:
                raise
            return False
        return True

    def _read(self, ctrl: str, name: str) -> str | None:
        d = self.dirs.get(ctrl)
        if d is None:
            return None
        try:
            return (d / name).read_text()
        except OSError:
            return None

    def configure(self, limits: SandboxLimits, background: bool = False) -> None:
        """Write the limits; `background`: a CPU weight that only takes idle CPU (a spare
        warming up), else the default weight."""
        name, normal, low = CPU_WEIGHT[self.support.version]
        ctrl = "cpu" if self.support.version == 1 else "unified"
        if ctrl in self.dirs:
            self._write(ctrl, name, low if background else normal, optional=True)
        mem = str(int(limits.memory_bytes))
        if self.support.version == 1:
            # memsw (memory+swap) may never be below the memory limit: when raising, memsw
            # first; when lowering, memory first. Writing memsw both times covers both cases.
            self._write("memory", "memory.memsw.limit_in_bytes", mem, optional=True)
            self._write("memory", "memory.limit_in_bytes", mem)
            no_swap = self._write("memory", "memory.memsw.limit_in_bytes", mem, optional=True)
            self._write("memory", "memory.swappiness", "0", optional=True)
            # Peak from here on (a pool spare's warm-up before its run is not the run's peak).
            self._write("memory", "memory.max_usage_in_bytes", "0", optional=True)
            self._write("memory", "memory.failcnt", "0", optional=True)
            self._write("pids", "pids.max", str(limits.max_processes))
        else:
            self._write("unified", "memory.max", mem)
            no_swap = self._write("unified", "memory.swap.max", "0", optional=True)
            self._write("unified", "pids.max", str(limits.max_processes))
        # Without a swap limit a memory bomb pages out (slowly: a time limit, not a memory
        # one) instead of being OOM-killed; the caller then also watches the run's processes.
        self.swap_limited = no_swap or _swap_total() == 0
        rebalance(self.support)

    def memory_full(self, limit: int) -> bool:
        """Anonymous + shared memory (what only freeing gives back) within MEMORY_FULL_MARGIN
        of the limit: the run is at its limit whatever its page cache. The kernel would keep
        such a run alive by evicting and re-reading its own code pages (thrashing, burning
        CPU until a time limit) rather than OOM-kill it; it is a memory limit exceeded."""
        ctrl = "memory" if self.support.version == 1 else "unified"
        floor = limit - max(MEMORY_FULL_MARGIN, limit // 100)
        usage = self._read(ctrl, "memory.usage_in_bytes" if self.support.version == 1
                           else "memory.current")
        if not usage or int(usage) < floor:  # cheap first: usage >= anonymous + shared
            return False
        return self.pinned_bytes() >= floor

    def usage_bytes(self) -> int:
        """Everything charged to the group, page cache included (one cheap read)."""
        ctrl = "memory" if self.support.version == 1 else "unified"
        usage = self._read(ctrl, "memory.usage_in_bytes" if self.support.version == 1
                           else "memory.current")
        return int(usage) if usage else 0

    def pinned_bytes(self) -> int:
        """Anonymous + shared memory: what only the run freeing memory gives back."""
        ctrl = "memory" if self.support.version == 1 else "unified"
        text = self._read(ctrl, "memory.stat") or ""
        stat_ = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        keys = ("rss", "shmem") if self.support.version == 1 else ("anon", "shmem")
        return sum(int(stat_.get(k, "0")) for k in keys if stat_.get(k, "0").isdigit())

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in dict.fromkeys(self.dirs.values())]

    def pids(self) -> list[int]:
        seen: set[int] = set()
        for ctrl in self.dirs:
            text = self._read(ctrl, "cgroup.procs") or ""
            seen.update(int(x) for x in text.split())
        return sorted(seen)

    def cpu_seconds(self) -> float | None:
        if self.support.version == 1:
            text = self._read("cpuacct", "cpuacct.usage")
            return int(text) / 1e9 if text else None
        text = self._read("unified", "cpu.stat") or ""
        for line in text.splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) / 1e6
        return None

    def oom_kills(self) -> int:
        """OOM kills inside this group (falls back to hitting the limit on old kernels)."""
        if self.support.version == 1:
            text = self._read("memory", "memory.oom_control") or ""
        else:
            text = self._read("unified", "memory.events") or ""
        fields = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        if "oom_kill" in fields:
            return int(fields["oom_kill"])
        return int(fields.get("oom", fields.get("under_oom", "0")))

    def limit_hits(self) -> int:
        """How often the group's memory reached its limit (v1 memory.failcnt, v2 the "max"
        count of memory.events)."""
        if self.support.version == 1:
            text = self._read("memory", "memory.failcnt") or "0"
            return int(text) if text.strip().isdigit() else 0
        text = self._read("unified", "memory.events") or ""
        fields = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        return int(fields.get("max", "0"))

    def peak_memory(self) -> int | None:
        name = "memory.max_usage_in_bytes" if self.support.version == 1 else "memory.peak"
        text = self._read("memory" if self.support.version == 1 else "unified", name)
        return int(text) if text else None

    def pids_limited(self) -> bool:
        ctrl = "pids" if self.support.version == 1 else "unified"
        text = self._read(ctrl, "pids.events") or ""
        return any(line.split()[:1] == ["max"] and line.split()[1] != "0"
                   for line in text.splitlines())

    def kill_all(self, wait: bool = True) -> None:
        """Freeze (when possible), SIGKILL every member, thaw, repeat until empty. With
        `wait=False`, one pass: every member has a pending SIGKILL and runs no more user code,
        but may still be tearing down."""
        frozen = False
        if self.support.version == 1 and "freezer" in self.dirs:
            with contextlib.suppress(OSError):
                self._write("freezer", "freezer.state", "FROZEN")
                frozen = True
        elif self.support.version == 2:
            with contextlib.suppress(OSError):
                self._write("unified", "cgroup.kill", "1")
        deadline = time.monotonic() + KILL_GRACE_SECONDS
        while True:
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if frozen:
                with contextlib.suppress(OSError):
                    self._write("freezer", "freezer.state", "THAWED")
                frozen = False
            if not wait:
                return
            if not pids or time.monotonic() > deadline:
                if pids:
                    log.error("sandbox: processes %s survive SIGKILL in %s", pids, self.dirs)
                return
            time.sleep(0.005)

    def remove(self) -> None:
        for d in dict.fromkeys(self.dirs.values()):
            for attempt in range(200):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or attempt == 199:
                        log.error("sandbox: cannot remove cgroup %s: %s", d, exc)
                        break
                    time.sleep(0.01)
        rebalance(self.support)


def rebalance(support: _CgroupSupport) -> None:
    """Weigh the folder of every run (`jaxjudge/`) as the runs in it: one run's weight per run,
    up to one per CPU.

    The CPU scheduler shares a CPU between the entities of one level: each other process (or,
    with autogroup, each other session) beside `jaxjudge/`, and `jaxjudge/` as one. At the
    default weight every run of every grader on the machine (the stages of three one-off grades
    at once, a warm pool's children) shared one process's share: beside six busy loops in their
    own sessions, the observer of an ema sample took 40-69 s instead of 4-9 s (issue 42). Counted
    again at every run's start and end, by whichever process starts or ends one (the last
    count written wins, and the next start or end corrects it); a spare warming up at the
    lowest weight is not a run yet."""
    ctrl = "cpu" if support.version == 1 else "unified"
    base = support.bases.get(ctrl)
    if base is None:
        return
    name, normal, _ = CPU_WEIGHT[support.version]
    try:
        runs = sum(1 for entry in os.scandir(base) if _running(entry, name, normal))
        # At most one per CPU: an idle run (a warm pool's zygote waiting for work) counts as
        # much as a busy one, and the folder cannot use more CPUs than there are anyway.
        runs = min(runs, os.cpu_count() or 1)
        weight = min(MAX_GROUP_WEIGHT[support.version], max(1, runs) * int(normal))
        (base / name).write_text(str(weight))
    except OSError as exc:  # a weight not written only costs CPU share under load
        log.debug("sandbox: cannot weigh %s: %s", base, exc)


def _running(entry: os.DirEntry[str], name: str, normal: str) -> bool:
    """Whether `entry` is a run's cgroup at the run weight: a pool spare warming up at the
    lowest weight does not count, or an idle pool's spares would take CPU from everything else
    as the group's weight."""
    if not entry.name.startswith("run-") or not entry.is_dir(follow_symlinks=False):
        return False
    try:
        with open(os.path.join(entry.path, name), encoding="ascii") as f:
            return f.read().strip() == normal
    except OSError:
        return False


class RunCgroup:
    """A per-run cgroup for a process that already exists (a zygote's forked child): the pool
    moves the child in before it is given any user code or data, so its memory and CPU are
    accounted per run. CPU time and (v1) peak memory count from the last `configure()`: what a
    spare did before its run (trusted warm-up) is not the run's."""

    def __init__(self, inner: _RunCgroup) -> None:
        self._cg = inner
        self._cpu_base = 0.0

    def configure(self, limits: SandboxLimits, background: bool = False) -> None:
        """(Re)write the memory and pids limits, e.g. of a cgroup created ahead of its run, and
        its CPU weight (`background`: only idle CPU, for a spare warming up)."""
        self._cg.configure(limits, background)
        self._cpu_base = self._cg.cpu_seconds() or 0.0

    def add(self, host_pid: int) -> None:
        for path in self._cg.procs_files():
            with open(path, "w") as f:
                f.write(str(host_pid))

    def cpu_seconds(self) -> float | None:
        used = self._cg.cpu_seconds()
        return None if used is None else max(0.0, used - self._cpu_base)

    def oom_kills(self) -> int:
        return self._cg.oom_kills()

    def memory_full(self, limit: int) -> bool:
        return self._cg.memory_full(limit)

    def usage_bytes(self) -> int:
        return self._cg.usage_bytes()

    def limit_hits(self) -> int:
        return self._cg.limit_hits()

    def pinned_bytes(self) -> int:
        return self._cg.pinned_bytes()

    @property
    def swap_limited(self) -> bool:
        return self._cg.swap_limited

    def peak_memory(self) -> int | None:
        return self._cg.peak_memory()

    def pids(self) -> list[int]:
        return self._cg.pids()

    def kill_all(self, wait: bool = True) -> None:
        self._cg.kill_all(wait)

    def remove(self) -> None:
        self._cg.kill_all()
        self._cg.remove()
