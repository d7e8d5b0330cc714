"""A warm, fork-safe worker pool for the sandboxed stages (zygotes behind every sandbox layer).

Why: a fresh interpreter per stage spends ~1.5-2.6 s importing jax before doing ~0.1-1 s of work.
Each pool slot keeps one *zygote* (jaxjudge/stages/zygote.py) that imported jax once, started
through `sandbox.spawn()` (its own cgroup, rlimits, pool uid, bubblewrap with a per-slot spool dir
at /job and a private /tmp). Per stage run the zygote forks a child ahead of time; the pool
moves that child into a fresh per-run cgroup (memory, pids, CPU accounted per run) before it is
given any user code or data (until then it runs only trusted warm-up code); the child sets
per-run rlimits, installs the seccomp filter and runs the stage's `main()`. So every child still
has every layer `sandbox.run()` gives a fresh process.

Stage A (untrusted) and stage B (trusted) use separate zygotes. Stage B zygotes get a persistent
XLA compilation cache (jax's own, keyed by the program with debug info stripped, so the same
program from two submissions compiles once); only those trusted processes can reach it.

A `jaxjudge.Grader(warm_pool=True)` starts and owns one (the service, the batch grader, library
users); or use `WarmPool` as a context manager and pass `Grader(runner=pool.runner)`. If zygotes
cannot start (no fork, a required layer missing, ...) every call falls back to `sandbox.run()`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import json
import logging
import math
import os
import queue
import select
import signal
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxjudge.isolation import fstree, sandbox, seccomp, supervisor
from jaxjudge.isolation.xla import fast_compile_flags

log = logging.getLogger(__name__)

ZYGOTE_SCRIPT = Path(__file__).resolve().parent.parent / "stages" / "zygote.py"
STAGE_NAMES = {"trace.py": "trace", "execute.py": "execute"}
JOBS_PER_ZYGOTE = 200  # recycle: bounds any slow leak in the zygote (see bench's 1,000-run check)
HELLO_SECONDS = 120.0  # importing jax on a loaded 2-core machine
REPLY_SECONDS = 15.0  # fork + reply; a zygote slower than this is treated as broken
COLD_RETRY_SECONDS = 60.0  # after a zygote failed to start, use the cold path this long
CACHE_GID_DEFAULT = 63999  # group of the trusted zygotes: the only ones that may write the cache
CACHE_MOUNT = "/xla-cache"
COPY_CAP = 64 << 20  # per file copied in or out (exports; RLIMIT_FSIZE bounds outputs anyway)
# The zygote's own limits: generous hard caps that each child lowers to its run's limits.
ZYGOTE_LIMITS = sandbox.SandboxLimits(
    wall_seconds=float("inf"), cpu_seconds=3600, memory_bytes=4 << 30, output_bytes=64 << 20,
)
# A spare child's cgroup until its run's limits are written. It runs no user code before that,
# only its stage's warm-up (an XLA CPU client, whose thread pools grow with the cores, a trace
# and an export: ~20 MB); as many tasks as a run may have.
SPARE_LIMITS = sandbox.SandboxLimits(
    wall_seconds=float("inf"), cpu_seconds=3600, memory_bytes=512 << 20, output_bytes=1 << 20,
    max_processes=sandbox.SandboxLimits.max_processes,
)


class _Broken(Exception):
    """The zygote did not behave (died, timed out, protocol error); it must be replaced."""


class _NotRun(_Broken):
    """The zygote says the run's child never got its request: safe to retry elsewhere."""


def _cache_dir() -> Path | None:
    """The trusted compile cache's host dir (root:CACHE_GID 2770), or None when unusable."""
    raw = os.environ.get("JAXJUDGE_COMPILE_CACHE_DIR")
    if raw == "":
        return None
    prot = sandbox.protections()
    if not (prot["uid_pool"]["active"] and prot["bwrap"]["active"]):
        return None  # without a separate uid and private mounts, untrusted code could reach it
    path = Path(raw or "/var/cache/jaxjudge/xla")
    gid = _cache_gid()
    try:
        path.mkdir(parents=True, exist_ok=True)
        st = path.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise OSError(errno.EPERM, f"{path} is not a directory owned by us")
        os.chown(path, os.geteuid(), gid)
        os.chmod(path, 0o2770)
    except OSError as exc:
        log.warning("warm pool: compile cache disabled: %s", exc)
        return None
    return path


def _cache_gid() -> int:
    return int(os.environ.get("JAXJUDGE_COMPILE_CACHE_GID", str(CACHE_GID_DEFAULT)))


def _copy_tree(src: Path, dst: Path, *, cap: int, only: set[str] | None = None) -> None:
    """Copy regular files (no symlinks, nothing special) from src to dst; `only` limits to those
    relative paths; files over `cap` bytes are skipped (RLIMIT_FSIZE already bounds them). A
    run shapes its tree: the copy is iterative and bounded (see jaxjudge.isolation.fstree)."""
    fstree.copy_tree(src, dst, cap=cap, only=only, max_files=sandbox.MAX_JOB_ENTRIES)


def _clear_dir(path: Path) -> None:
    """Empty a spool dir, however deep or wide the last run left it."""
    fstree.clear_dir(path)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _memory_of(pid: int) -> dict[str, int]:
    """rss and pss (bytes) of one host process, from smaps_rollup."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                out[key.lower()] = int(rest.split()[0]) * 1024
    return out


@dataclass
class PoolStats:
    runs: int = 0
    cold_runs: int = 0
    respawns: int = 0
    failures: list[str] = field(default_factory=list)


class _Zygote:
    """One slot: a resident zygote plus its spool dir. Used by one thread at a time."""

    def __init__(self, pool: WarmPool, trusted: bool, index: int) -> None:
        self.pool = pool
        self.trusted = trusted
        self.name = f"{'trusted' if trusted else 'untrusted'}-{index}"
        self.res: sandbox.Resident | None = None
        self.spool: Path | None = None
        self.host_pid: int | None = None
        self.jobs = 0
        self.seq = 0
        self.cold_until = 0.0
        self.broken = False
        self._buf = b""
        # The next child, forked ahead and already in its own cgroup: (host pid, cgroup).
        self.spare: tuple[int, sandbox.RunCgroup | None] | None = None
        self._prep: threading.Thread | None = None
        self._prep_error = ""
        # The last child said it was finished before it was gone: the zygote's "exit" for it
        # is still to be read (by the prep thread, before the next spare is asked for).
        self._exit_pending = False

    # -- life cycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start (or restart) the zygote and wait for its hello; raises on failure."""
        self.stop()
        self.spool = Path(tempfile.mkdtemp(prefix=f"jaxjudge-sbx-{os.getpid()}-pool-",
                                           dir=self.pool.base_dir))
        os.chmod(self.spool, 0o711)  # root-owned: a child can only write in its own subdirs
        binds: tuple[tuple[str, str], ...] = ()
        prot = sandbox.protections()
        env = {"JAXJUDGE_ZYGOTE_PRIVATE_TMP": "1" if prot["bwrap"]["active"] else "0",
               # The zygote's uid (or its whole IPC namespace) is its children's alone: it may
               # remove whatever that uid left between two children (zygote.py).
               "JAXJUDGE_ZYGOTE_OWN_UID": "1" if prot["uid_pool"]["active"]
               or prot["bwrap"]["active"] else "0",
               # Untrusted spares warm up stage A while they wait (zygote.py); trusted ones get
               # their XLA flags only with the request, so they cannot start a backend early.
               "JAXJUDGE_ZYGOTE_SPARE_WARMUP": "trace" if not self.trusted
               and self.pool.spare_warmup else ""}
        gid = None
        if self.trusted and self.pool.cache_dir is not None:
            binds = ((str(self.pool.cache_dir), CACHE_MOUNT),)
            gid = _cache_gid()
        self.res = self.pool.spawn(ZYGOTE_SCRIPT, self.spool, env=env, rw_binds=binds, gid=gid)
        self._buf = b""
        hello = self._recv(HELLO_SECONDS)
        if not hello or "hello" not in hello:
            tail = self.res.stderr_tail()
            self.stop()
            raise _Broken(f"zygote {self.name} did not start: {hello} {tail[-800:]}")
        self.host_pid = self.res.script_pid(int(hello["hello"]))
        if self.host_pid is None:
            raise _Broken(f"zygote {self.name}: its pid {hello['hello']} not found")
        self.jobs = 0
        self._take_spare()

    def stop(self) -> None:
        if self._prep is not None:
            self._prep.join()  # every step of it is bounded (kill grace, reply timeouts)
            self._prep = None
        self._prep_error = ""  # about this zygote only; the next one starts clean
        self._exit_pending = False
        self._drop_spare()
        if self.res is not None:
            with contextlib.suppress(OSError, _Broken):
                self._send({"op": "quit"})
            self.res.close()
            self.res = None
        if self.spool is not None:
            fstree.remove_tree(self.spool)
            self.spool = None
        self.host_pid = None

    def _take_spare(self) -> None:
        """Have the zygote fork the next child and move it into a fresh cgroup (the slow part
        of starting a run, done here while no grade waits on it). Only called once the last
        run's cgroup is gone, so nothing of that run can reach the new child."""
        assert self.res is not None
        self._send({"op": "spare"})
        msg = self._recv(REPLY_SECONDS)
        if not msg or "forked" not in msg:
            raise _Broken(f"zygote {self.name} did not fork a spare: {msg}")
        host = self.res.host_pid(int(msg["forked"]))
        if host is None:
            raise _Broken(f"zygote {self.name}: spare {msg['forked']} not found")
        # Background CPU weight: the spare's warm-up takes only idle CPU, never a run's.
        cg = sandbox.new_run_cgroup(SPARE_LIMITS, background=True)
        self.spare = (host, cg)  # before add(): _drop_spare kills it whatever happens next
        if cg is not None:
            try:
                cg.add(host)
            except OSError as exc:
                raise _Broken(f"cannot move the spare into its cgroup: {exc}") from exc

    def _prepare_spare(self, last: sandbox.RunCgroup | None, spool: Path) -> None:
        """After a run, off its grade's clock: wait for the last child to be gone (its
        cgroup removed, its files cleared, the zygote's "exit" read), then take a spare."""
        try:
            self._finish_last(last, spool)
            self._take_spare()
        except Exception as exc:  # reported to the slot's next run, which restarts the zygote
            self._prep_error = str(exc)[:300] or type(exc).__name__

    def _finish_last(self, last: sandbox.RunCgroup | None, spool: Path) -> None:
        try:
            if last is not None:
                last.remove()
        finally:
            with contextlib.suppress(OSError):
                _clear_dir(spool)
        if self._exit_pending:
            self._exit_pending = False
            msg = self._recv(REPLY_SECONDS)
            if not msg or "exit" not in msg:
                raise _Broken(f"zygote {self.name} did not report its last child's exit: {msg}")

    def _await_spare(self) -> None:
        if self._prep is not None:
            self._prep.join()
            self._prep = None
        if self._prep_error:
            why, self._prep_error = self._prep_error, ""
            raise _Broken(why)

    def _drop_spare(self) -> None:
        if self.spare is None:
            return
        host, cg = self.spare
        self.spare = None
        if cg is not None:
            cg.remove()  # kills it
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(host, signal.SIGKILL)

    @property
    def alive(self) -> bool:
        return self.res is not None and self.res.proc.poll() is None

    def memory(self) -> dict[str, int]:
        return _memory_of(self.host_pid) if self.host_pid else {}

    # -- protocol ------------------------------------------------------------------------
    def _send(self, obj: dict[str, Any]) -> None:
        assert self.res is not None and self.res.proc.stdin is not None
        try:
            self.res.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.res.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise _Broken(f"zygote {self.name} closed its input") from exc

    def _recv(self, timeout: float) -> dict[str, Any] | None:
        """The next message; None on timeout; raises _Broken on EOF or garbage."""
        assert self.res is not None and self.res.proc.stdout is not None
        fd = self.res.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _Broken(f"zygote {self.name} exited: {self.res.stderr_tail()[-500:]}")
            self._buf += chunk
            if len(self._buf) > 1 << 20:
                raise _Broken(f"zygote {self.name} sent an oversized message")
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise _Broken(f"zygote {self.name} sent garbage") from exc
        if not isinstance(msg, dict) or "error" in msg:
            if isinstance(msg, dict) and msg.get("not_run") is True:
                raise _NotRun(f"zygote {self.name}: {msg['error']}")
            raise _Broken(f"zygote {self.name}: {msg}")
        return msg

    # -- one run -------------------------------------------------------------------------
    def run(self, stage: str, job_dir: Path, limits: sandbox.SandboxLimits, untrusted: bool,
            env: dict[str, str]) -> sandbox.SandboxResult:
        """Run one stage in a forked child. Raises _Broken before the child ran (safe to retry
        elsewhere); after that, a zygote failure is the run's result (SIGKILL)."""
        if not self.alive or self.spool is None:
            raise _Broken(f"zygote {self.name} is not running")
        assert self.res is not None
        self._await_spare()
        if self.spare is None:
            raise _Broken(f"zygote {self.name} has no spare child")
        self.seq += 1
        self.jobs += 1
        self.broken = False
        jid = f"j{self.seq}"
        spool = self.spool
        work = spool / jid
        _clear_dir(spool)
        (spool / ".io").mkdir()
        work.mkdir()
        _copy_tree(job_dir, work, cap=COPY_CAP)
        out_path, err_path = spool / ".io" / f"{jid}.out", spool / ".io" / f"{jid}.err"
        out_path.touch()
        err_path.touch()
        if self.res.uid is not None:
            for d in (work, spool / ".io"):
                supervisor._chown_tree(d, self.res.uid, self.res.uid, sanitize=False)
        before = supervisor._job_files(work)
        host, cg = self.spare
        self.spare = None
        try:
            if cg is not None:
                try:
                    cg.configure(limits)  # its CPU and peak memory count from here
                except OSError as exc:
                    self.broken = True
                    raise _Broken(f"cannot set the run's cgroup limits: {exc}") from exc
            return self._run_child(stage, jid, job_dir, work, out_path, err_path, before, cg,
                                   host, limits, untrusted, env)
        finally:
            if self.broken or self.jobs >= self.pool.jobs_per_zygote:
                self._exit_pending = False  # the zygote is stopped next (here or by the pool)
                self._finish_last(cg, spool)
                if self.broken:
                    self.stop()  # the slot's next run starts a fresh zygote
            else:
                # Off this grade's clock: the child's teardown, then the next spare's fork and
                # its move into a fresh cgroup.
                self._prep = threading.Thread(target=self._prepare_spare, args=(cg, spool),
                                              daemon=True)
                self._prep.start()

    def _run_child(self, stage: str, jid: str, job_dir: Path, work: Path, out_path: Path,
                   err_path: Path, before: dict[str, tuple[int, int]],
                   cg: sandbox.RunCgroup | None, host: int, limits: sandbox.SandboxLimits,
                   untrusted: bool, env: dict[str, str]) -> sandbox.SandboxResult:
        assert self.res is not None
        layers = self.res.layers
        bpf = seccomp.build_filter(allow_exec=not untrusted).hex() if layers["seccomp"] else "-"
        cache = CACHE_MOUNT if (self.trusted and self.pool.cache_dir is not None) else None
        self._send({"op": "run", "stage": stage, "job": jid, "env": supervisor._base_env(env),
                    "cpu": math.ceil(limits.cpu_seconds), "fsize": int(limits.output_bytes),
                    "bpf": bpf, "cache_dir": cache})
        started = time.monotonic()
        watch = sandbox.LimitWatch(limits, cg, work, before,
                                   lambda: sandbox.process_tree(host), started)
        reason: sandbox.Status | None = None
        detail = ""
        kill_deadline = math.inf
        pause = 0.002
        done: dict[str, Any] | None = None
        zygote_died = False
        while done is None:
            try:
                done = self._recv(pause)
            except _NotRun:
                self.broken = True
                raise  # out of run(): the runner retries on a fresh zygote
            except _Broken as exc:
                log.warning("warm pool: %s", exc)
                zygote_died = True
                break
            if done is not None:
                break
            pause = min(pause * 2, 0.05)
            now = time.monotonic()
            if reason is None:
                crossed = watch.check(now)  # the same checks as the cold path's supervisor
                if crossed:
                    reason, detail = crossed
                if reason is not None:
                    self._kill_child(cg, host)
                    kill_deadline = now + sandbox.KILL_GRACE_SECONDS
            elif now > kill_deadline:
                log.error("warm pool: zygote %s did not report a killed child", self.name)
                zygote_died = True
                break
        wall = time.monotonic() - started
        # "finished": the child's outputs are complete. It gets SIGKILL now, so it runs nothing
        # more, but its teardown (~5-9 ms) is waited for off the grade's clock.
        early = done is not None and "finished" in done
        self._exit_pending = early
        # After its "exit" the zygote has reaped it: its pid may be another process's by now.
        self._kill_child(cg, host, wait=not early, reaped=done is not None and not early)
        self.broken = zygote_died  # run() stops it once the outputs are copied out
        cpu = cg.cpu_seconds() if cg is not None else None
        if cpu is None and done is not None and isinstance(done.get("cpu"), (int, float)):
            cpu = float(done["cpu"])
        peak = cg.peak_memory() if cg is not None else None
        oom = cg.oom_kills() if cg is not None else 0
        if early:
            assert done is not None
            code = done["finished"]
            exit_code, sig = (code if isinstance(code, int) else 1), None
        elif done is not None:
            status = int(done["exit"])
            if os.WIFSIGNALED(status):
                exit_code, sig = None, os.WTERMSIG(status)
            else:
                exit_code, sig = os.waitstatus_to_exitcode(status), None
        else:
            exit_code, sig = None, int(signal.SIGKILL)
        stdout = supervisor._read_capped(out_path, limits.output_bytes)
        stderr = supervisor._read_capped(err_path, limits.output_bytes)
        out_full = any(_size(p) >= limits.output_bytes for p in (out_path, err_path))
        after = supervisor._job_files(work)
        file_full = any(s >= limits.output_bytes for s in supervisor._grown(before, after))
        changed = {k for k, v in after.items() if before.get(k) != v}
        _copy_tree(work, job_dir, cap=COPY_CAP, only=changed)
        cpu_cap = max(1, math.ceil(limits.cpu_seconds)) + 1

        def result(st: sandbox.Status, why: str) -> sandbox.SandboxResult:
            return sandbox.SandboxResult(st, exit_code, sig, wall, cpu, peak, why, stdout, stderr)

        if oom and reason != "memory_exceeded":  # an OOM kill explains a time limit too
            return result("memory_exceeded", f"killed after {oom} OOM kill(s) in the run's cgroup")
        if reason is not None:
            return result(reason, detail)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu is not None and cpu >= cpu_cap):
            return result("cpu_timeout", f"CPU time limit of {limits.cpu_seconds:g} s (RLIMIT_CPU)")
        if sig == signal.SIGXFSZ or out_full or file_full:
            what = "stdout/stderr" if out_full else "a file"
            return result("output_exceeded", f"{what} reached the {limits.output_bytes} byte cap")
        if zygote_died:
            return result("signaled", "killed by SIGKILL (its warm-pool zygote died)")
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
            return result("signaled", f"killed by {name}")
        return result("exited", f"exit code {exit_code}")

    def _kill_child(self, cg: sandbox.RunCgroup | None, host: int, wait: bool = True,
                    reaped: bool = False) -> None:
        if cg is not None:
            cg.kill_all(wait)  # whatever the run left in its group, reaped child or not
            return
        if reaped:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(host, signal.SIGKILL)


def spare_warmup_fits(concurrent_grades: int) -> bool:
    """Whether stage-A spares should warm up while they wait: speculative work for idle
    cores, at the lowest CPU weight. It saves ~30 ms of a grade's export when a core is
    free, but where the grades that run at once take most of the cores it only competes with
    them (the weight did not keep it out of their way on a 13-core gVisor host: 12 grades at
    once went from 10.1 to 12.0 grades/s with it off, docs/performance.md). So: only while
    at most half the cores are taken by grades."""
    return 2 * concurrent_grades <= (os.cpu_count() or 1)


class WarmPool:
    """`workers` untrusted + `workers` trusted zygotes; `runner` is a grade.StageRunner.
    `spare_warmup`: see `spare_warmup_fits` (the default decides from `workers`; a caller
    that runs several pools at once passes the decision for all of them)."""

    def __init__(self, workers: int | None = None, *, jobs_per_zygote: int = JOBS_PER_ZYGOTE,
                 compile_cache: bool = True, base_dir: Path | None = None,
                 spare_warmup: bool | None = None) -> None:
        env_workers = os.environ.get("JAXJUDGE_POOL_WORKERS")
        self.workers = max(1, workers or int(env_workers or 0) or os.cpu_count() or 1)
        self.spare_warmup = (spare_warmup_fits(self.workers) if spare_warmup is None
                             else spare_warmup)
        self.jobs_per_zygote = jobs_per_zygote
        self.compile_cache = compile_cache
        self.base_dir = base_dir
        self.cache_dir: Path | None = None
        self.stats = PoolStats()
        self._queues: dict[bool, queue.Queue[_Zygote]] = {}
        self._zygotes: list[_Zygote] = []
        self._lock = threading.Lock()
        self._closed = False
        self._started = False
        # One long-lived thread starts every zygote: the sandbox's trampoline and bwrap die with
        # the *thread* that started them (PR_SET_PDEATHSIG), and grading threads come and go.
        self._spawner = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jj-spawn")

    # -- public --------------------------------------------------------------------------
    def start(self) -> WarmPool:
        """Start every zygote (in parallel); slots that fail fall back to the cold path."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        if not hasattr(os, "fork"):
            log.warning("warm pool: no fork on this platform; using fresh processes")
        elif self.compile_cache:
            self.cache_dir = _cache_dir()
        for trusted in (False, True):
            q: queue.Queue[_Zygote] = queue.Queue()
            for i in range(self.workers):
                z = _Zygote(self, trusted, i)
                self._zygotes.append(z)
                q.put(z)
            self._queues[trusted] = q
        if hasattr(os, "fork"):
            threads = [threading.Thread(target=self._try_start, args=(z,), daemon=True)
                       for z in self._zygotes]
            # grade() probes the XLA flags once per process; do it now, not in the first grade.
            threads.append(threading.Thread(target=fast_compile_flags, daemon=True))
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return self

    def close(self) -> None:
        """Stop every zygote; waits for runs in progress (each slot is taken back first)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for q in self._queues.values():
            taken = []
            for _ in range(self.workers):
                taken.append(q.get())
            for z in taken:
                z.stop()
        self._spawner.shutdown(wait=True)

    def settle(self) -> None:
        """Wait until no run is in progress and every replacement zygote has started."""
        for q in self._queues.values():
            taken = [q.get() for _ in range(self.workers)]
            for z in taken:
                q.put(z)

    def __enter__(self) -> WarmPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def zygote_memory(self) -> list[dict[str, Any]]:
        """Per zygote: name, host pid, rss and pss in bytes (for the benchmark and doctor)."""
        return [{"name": z.name, "pid": z.host_pid, **z.memory()} for z in self._zygotes]

    def runner(self, script: Path, job_dir: Path, limits: sandbox.SandboxLimits,
               untrusted: bool, env: dict[str, str]) -> sandbox.SandboxResult:
        """grade.StageRunner: a warm zygote when one is available, else `sandbox.run`."""
        stage = STAGE_NAMES.get(Path(script).name)
        known = stage is not None and Path(script).resolve().parent == ZYGOTE_SCRIPT.parent
        if not known or self._closed or not self._started or not hasattr(os, "fork"):
            return self._cold(script, job_dir, limits, untrusted, env)
        assert stage is not None
        q = self._queues[not untrusted]
        z = q.get()
        give_back = True
        try:
            for attempt in (1, 2):
                if self._closed:
                    break
                if not z.alive and (time.monotonic() < z.cold_until or not self._try_start(z)):
                    break
                try:
                    res = z.run(stage, Path(job_dir), limits, untrusted, env)
                except _Broken as exc:  # the child never ran: retry on a fresh zygote
                    log.warning("warm pool: %s (attempt %d)", exc, attempt)
                    self.stats.failures.append(str(exc)[:300])
                    z.stop()
                    continue
                with self._lock:
                    self.stats.runs += 1
                if z.jobs >= self.jobs_per_zygote:
                    z.stop()
                if not z.alive and not self._closed:
                    # Replace it off the caller's clock; the slot returns once it is warm.
                    give_back = False
                    threading.Thread(target=self._revive, args=(z, q), daemon=True).start()
                return res
        finally:
            if give_back:
                q.put(z)
        return self._cold(script, job_dir, limits, untrusted, env)

    # -- internals -----------------------------------------------------------------------
    def spawn(self, script: Path, spool: Path, *, env: dict[str, str],
              rw_binds: tuple[tuple[str, str], ...], gid: int | None) -> sandbox.Resident:
        fut = self._spawner.submit(sandbox.spawn, script, spool, ZYGOTE_LIMITS, env=env,
                                   rw_binds=rw_binds, gid=gid)
        return fut.result()

    def _try_start(self, z: _Zygote) -> bool:
        try:
            z.start()
        except (_Broken, OSError, sandbox.SandboxUnavailable, RuntimeError) as exc:
            z.stop()
            z.cold_until = time.monotonic() + COLD_RETRY_SECONDS
            log.warning("warm pool: zygote %s unavailable, using fresh processes: %s", z.name,
                        exc)
            self.stats.failures.append(str(exc)[:300])
            return False
        with self._lock:
            self.stats.respawns += 1
        return True

    def _revive(self, z: _Zygote, q: queue.Queue[_Zygote]) -> None:
        try:
            if not self._closed:
                self._try_start(z)
        finally:
            q.put(z)

    def _cold(self, script: Path, job_dir: Path, limits: sandbox.SandboxLimits,
              untrusted: bool, env: dict[str, str]) -> sandbox.SandboxResult:
        with self._lock:
            self.stats.cold_runs += 1
        return sandbox.run_stage(script, job_dir, limits, env=env, untrusted=untrusted)
