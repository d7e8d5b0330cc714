"""Running one sandboxed interpreter cold, from its uid and cgroup to its teardown
(`_ColdRun`, `_execute`; `Pending` for a stage started before its job): the trampoline is
launched with every selected layer, `_supervise` polls the run against its limits
(`LimitWatch`, `memory_check`, also used by the warm pool), and the result is built from how it
ended (`_reap`, `_decode_wait`) and what it wrote (job-file accounting)."""

from __future__ import annotations

import collections
import contextlib
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxjudge.isolation import fstree, seccomp
from jaxjudge.isolation.bootstrap import _ENTER, _TRAMPOLINE
from jaxjudge.isolation.bwrap import (
    _bwrap_args,
    _bwrap_sources,
    _overlay_plan,
    _python_roots,
    stage_env,
)
from jaxjudge.isolation.cgroups import RunCgroup, _RunCgroup, process_tree, resident_memory
from jaxjudge.isolation.limits import (
    _PRIVATE_PREFIX,
    DISK_FACTOR,
    JOB_MOUNT,
    KILL_GRACE_SECONDS,
    MAX_JOB_ENTRIES,
    SandboxLimits,
    SandboxResult,
    Status,
)
from jaxjudge.isolation.rlimits import _rlimits
from jaxjudge.isolation.support import _Support
from jaxjudge.isolation.uidpool import _clean_uid_leftovers, _kill_uid, _uid_slot

# The sandbox's one logger, whichever layer logs (operators filter on its name).
log = logging.getLogger("jaxjudge.isolation.sandbox")


def _base_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "JAX_PLATFORMS": "cpu",
        "MALLOC_ARENA_MAX": "2",
        "OPENBLAS_NUM_THREADS": "1",
        **stage_env(),
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


def _decode_wait(status: int, via_bwrap: bool) -> tuple[int | None, int | None]:
    """(exit_code, signal). bwrap turns a child's death by signal N into exit code 128+N."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.waitstatus_to_exitcode(status)
    if via_bwrap and 128 < code <= 128 + 64:
        return None, code - 128
    return code, None


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


class MemoryGrowth:
    """Whether a run that ran out of time was a memory bomb all the same.

    A bomb whose growth is bound by CPU (Python building objects) or by slow page faults on a
    loaded machine can reach its time limit before its memory limit. When time runs out while
    the run holds most of its limit in memory only freeing gives back and is still allocating,
    the memory is what the learner must fix, so that is the verdict. An honest slow run holding
    much memory but no longer growing stays a time limit. The growth is measured against the
    run's own CPU time (the wall clock when the cgroup does not count it): on a loaded machine
    a bomb grows as much per CPU second as on an idle one, far less per wall-clock second.

    Half the limit is enough: a Python bomb slows as it grows (an int list reached 1.49 GiB
    after 4 s of CPU time on an idle machine, 0.39 GiB per CPU second at first, 0.2 at the end),
    so at 3/4 of a 2 GiB limit the verdict flipped with the machine's speed. Honest runs that
    grow at the time limit (tracing a long unrolled loop) hold far less: ~0.1-0.4 GiB."""

    HIGH = 0.5  # of the limit, pinned (anonymous + shared)
    RISE = 0.05  # of the limit, gained over the last WINDOW seconds
    WINDOW = 1.0
    EVERY = 0.1  # seconds between samples (memory.stat is read only above half the limit)

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.samples: collections.deque[tuple[float, int]] = collections.deque()
        self.next = 0.0

    def sample(self, cg: Any, now: float) -> None:
        if now < self.next:
            return
        self.next = now + self.EVERY
        clock = self._clock(cg, now)
        pinned = cg.pinned_bytes() if cg.usage_bytes() >= self.limit // 2 else 0
        self.samples.append((clock, pinned))
        while self.samples and self.samples[0][0] < clock - 2 * self.WINDOW:
            self.samples.popleft()

    @staticmethod
    def _clock(cg: Any, now: float) -> float:
        cpu = cg.cpu_seconds()
        return now if cpu is None else cpu

    def bomb(self, cg: Any, now: float) -> str:
        """The detail of a memory verdict, or '' when the time verdict stands."""
        clock = self._clock(cg, now)
        pinned = cg.pinned_bytes()
        earlier = [p for t, p in self.samples if t <= clock - self.WINDOW]
        if not earlier or pinned < self.HIGH * self.limit:
            return ""
        rise = pinned - earlier[-1]
        halfway = [p for t, p in self.samples if t <= clock - self.WINDOW / 2]
        # Still rising over the second half of the window too: one burst then a spin is not a
        # run that is still allocating.
        if rise < self.RISE * self.limit or pinned <= halfway[-1]:
            return ""
        return (f"ran out of time holding {pinned >> 20} MiB of its {self.limit >> 20} MiB "
                f"memory limit and still allocating ({rise >> 20} MiB in its last "
                f"{self.WINDOW:g} s of CPU time)")


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
        self.started = started
        self.deadline = started + limits.wall_seconds
        self.disk_cap = DISK_FACTOR * int(limits.output_bytes)
        self.next_disk = 0.0
        self.growth = MemoryGrowth(int(limits.memory_bytes))
        # What the run's threads had waited for a CPU before its clock started (a pool spare's
        # warm-up at background weight, a prestarted stage's import): not the run's.
        self.waited_before = run_queue_waits(processes())

    def check(self, now: float) -> tuple[Status, str] | None:
        """The first limit crossed, as (status, detail), or None."""
        limits = self.limits
        why = memory_check(self.cg, limits, self.processes)
        if why:
            return "memory_exceeded", why
        if self.cg is not None:
            self.growth.sample(self.cg, now)
        crossed: tuple[Status, str] | None = None
        if now >= self.deadline and not self._kept_waiting(now):
            crossed = "wall_timeout", f"wall-clock limit of {limits.wall_seconds:g} s"
        elif self.cg is not None:
            cpu = self.cg.cpu_seconds()
            if cpu is not None and cpu > limits.cpu_seconds:
                crossed = "cpu_timeout", (
                    f"CPU time {cpu:.2f} s over the limit of {limits.cpu_seconds:g} s (cgroup)")
        if crossed is not None:
            bomb = self.growth.bomb(self.cg, now) if self.cg is not None else ""
            if not bomb and self.cg is not None:
                bomb = limit_reached(self.cg, int(limits.memory_bytes))
            return ("memory_exceeded", bomb) if bomb else crossed
        if now >= self.next_disk:
            self.next_disk = now + 0.25
            files = _job_files(self.job_dir)
            if sum(_grown(self.before, files)) > self.disk_cap or len(files) > MAX_JOB_ENTRIES:
                return "output_exceeded", (
                    f"the run wrote more than {self.disk_cap} bytes or {MAX_JOB_ENTRIES} "
                    "entries into its job directory")
        return None

    def _kept_waiting(self, now: float) -> bool:
        """Past the wall deadline: whether the run's time was the machine's, not its own. The
        time its threads spent runnable but waiting for a CPU (other processes' load) does not
        count against the wall limit, so a loaded machine makes a grade slower, never another
        verdict; the deadline moves by that wait, up to WAIT_CAP times the limit in all."""
        wall = self.limits.wall_seconds
        hard = self.started + WAIT_CAP * wall
        if now >= hard or not math.isfinite(wall):
            return False
        waits = run_queue_waits(self.processes())
        # Summed over threads (a compile's worker threads wait side by side), and never more
        # than the time that has passed: a run that keeps a thread runnable ends at its CPU
        # limit whatever this allows; a sleeping one has nothing runnable and gets nothing.
        waited = sum(max(0.0, w - self.waited_before.get(tid, 0.0)) for tid, w in waits.items())
        due = min(self.started + wall + min(waited, now - self.started), hard)
        if now >= due:
            return False
        self.deadline = due
        return True


# A run kept waiting for a CPU gets its wall limit back, up to this many times the limit (a
# bound for a machine loaded without end; at load 18 on 2 cores a run gets ~1/9 of a CPU).
WAIT_CAP = 10.0


def run_queue_waits(pids: list[int]) -> dict[int, float]:
    """Seconds each thread of `pids` has spent runnable but not running (the second field of
    /proc/<pid>/task/<tid>/schedstat), by thread id; threads that cannot be read are left out."""
    waits: dict[int, float] = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    fields = f.read().split()
                waits[int(tid)] = int(fields[1]) / 1e9
            except (OSError, IndexError, ValueError):
                continue
    return waits


def limit_reached(cg: Any, limit: int) -> str:
    """On a time limit: the detail of a memory verdict when the run's memory cgroup reached
    its limit and the run still holds most of it (what only freeing gives back), else ''. Time
    spent reclaiming at the limit is the memory's fault, whatever the machine's load."""
    hits = cg.limit_hits() if hasattr(cg, "limit_hits") else 0
    if not hits:
        return ""
    pinned = cg.pinned_bytes()
    if pinned < MemoryGrowth.HIGH * limit:
        return ""
    return (f"ran out of time at its {limit >> 20} MiB memory limit (reached {hits} time(s); "
            f"{pinned >> 20} MiB held)")


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
