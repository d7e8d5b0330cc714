"""The warm pool (jaxjudge.isolation.pool) with real zygotes: same verdicts as fresh processes,
every layer per child, a dead or poisoned zygote is replaced, nothing outlives the pool.

Expected verdicts come from problems/<id>/submissions/expected.toml, which tests/test_samples.py
checks on the cold path (a fresh sandboxed process per stage), so equal verdicts here mean the
pool and the cold path agree.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Routed, grade_through

from jaxjudge import Grader, Verdict, load_problem
from jaxjudge.isolation import layers, pool, uidpool
from jaxjudge.problems.package import Limits

PROBLEM = load_problem("rematerialized-mlp-block")
SUBMISSIONS = PROBLEM.submissions_dir
EXPECTED = tomllib.loads((SUBMISSIONS / "expected.toml").read_text(encoding="utf-8"))["files"]
REFERENCE = (SUBMISSIONS / "accepted_reference_style.py").read_text(encoding="utf-8")
# Small CPU/wall budget so the timeout case is quick (the verdict does not depend on it).
FAST = Limits(wall_seconds=8, cpu_seconds=3, memory_mb=1024, output_kb=256)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the pool needs fork")


# These tests count zygote runs: the program cache (which would skip repeated stage Bs) is off.
ROUTE = Routed(program_cache=0)
grade = ROUTE.grade


def _own_cgroups() -> set[str]:
    """Per-run/slot cgroup directories this process created and has not removed."""
    found: set[str] = set()
    sup = layers._detect().cgroup
    if sup is None:
        return found
    for base in sup.bases.values():
        if base.is_dir():
            found |= {d.name for d in base.iterdir() if d.name.startswith(f"run-{os.getpid()}-")}
    return found


def _accepted_through(p: pool.WarmPool) -> None:
    """Grade the reference through `p` (not the module pool) and expect it accepted."""
    [report] = grade_through(p.runner, PROBLEM, [REFERENCE])
    assert report.verdict is Verdict.ACCEPTED, report.message


@pytest.fixture(scope="module")
def warm() -> Iterator[pool.WarmPool]:
    p = pool.WarmPool(2, compile_cache=False).start()
    ROUTE.use(runner=p.runner)
    try:
        yield p
    finally:
        ROUTE.use(runner=None)
        p.close()


def _grade(name: str, limits: Limits | None = None, mode: str | None = None):
    spec = EXPECTED[name]
    source = (SUBMISSIONS / name).read_bytes()
    return grade(PROBLEM, source, mode or spec.get("mode", "submit"), filename=name, limits=limits)


def test_pool_really_started(warm: pool.WarmPool) -> None:
    mem = warm.zygote_memory()
    assert len(mem) == 4
    assert all(m["pid"] and m["rss"] > 0 for m in mem), mem


@pytest.mark.parametrize(
    "name",
    [
        "accepted_reference_style.py",
        "wrong_forgets_b2.py",
        "req_no_checkpoint.py",
        "forge_patch_allclose.py",
        "runtime_sys_exit_at_import.py",
        "compile_error_syntax.py",
    ],
)
def test_same_verdict_as_cold_path(warm: pool.WarmPool, name: str) -> None:
    before = warm.stats.runs
    report = _grade(name)
    assert report.verdict is Verdict(EXPECTED[name]["verdict"]), report.message
    if "failed" in EXPECTED[name]:
        failed = sorted(r.name for r in report.requirements if not r.passed)
        assert failed == sorted(EXPECTED[name]["failed"])
    assert warm.stats.runs > before  # it went through the zygotes, not the cold path


@pytest.mark.parametrize("name", ["tle_infinite_loop.py", "mle_list_bomb_at_import.py",
                                  "mle_bytearray_loop.py"])
def test_limits_kill_the_child_not_the_zygote(warm: pool.WarmPool, name: str) -> None:
    pids = {m["name"]: m["pid"] for m in warm.zygote_memory()}
    # The list bomb gets CPU headroom: on a fresh VM the first touch of 1 GB of guest memory
    # alone took 3 s of CPU (measured), which would turn the MLE into a TLE. The bytearray bomb
    # gets the problem's own CPU and memory limits; only the wall clock is longer, because on
    # a machine shared by several test runs (load 10 on 2 cores, seen) it got 2 s of CPU in 10 s.
    limits = {
        "tle_infinite_loop.py": FAST,
        "mle_bytearray_loop.py": PROBLEM.limits.model_copy(
            update={"wall_seconds": 30, "cpu_seconds": 8}),
    }.get(name, FAST.model_copy(update={"cpu_seconds": 8, "wall_seconds": 15}))
    report = _grade(name, limits)
    assert report.verdict is Verdict(EXPECTED[name]["verdict"]), report.message
    assert {m["name"]: m["pid"] for m in warm.zygote_memory()} == pids


def test_fork_is_denied_in_the_child(warm: pool.WarmPool) -> None:
    source = "import os\nos.fork()\n\ndef solve(params, x, y):\n    return None\n"
    report = grade(PROBLEM, source, "run")
    assert report.verdict is Verdict.RUNTIME_ERROR
    assert "PermissionError" in report.message or "not permitted" in report.message


def test_zygote_killer_is_a_runtime_error_and_the_pool_recovers(warm: pool.WarmPool) -> None:
    source = (
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n\n"
        "def solve(params, x, y):\n    return None\n"
    )
    respawns = warm.stats.respawns
    report = grade(PROBLEM, source, "run")
    # Its run ends with its zygote (a runtime error), or, under load, writes its result before
    # the zygote is gone: then its own solve, which returns None, is judged (seen in CI).
    assert report.verdict in (Verdict.RUNTIME_ERROR, Verdict.COMPILE_ERROR,
                              Verdict.WRONG_ANSWER), report.message
    # The dead zygote is replaced once the pool notices: right after the run, or at its next
    # use. Within this test either way, so that no later test counts its respawn.
    deadline = time.monotonic() + 60
    while True:
        warm.settle()
        if warm.stats.respawns > respawns:
            break
        assert time.monotonic() < deadline, "the killed zygote was never replaced"
        assert grade(PROBLEM, REFERENCE, "run").verdict is Verdict.ACCEPTED
    assert all(m["pid"] for m in warm.zygote_memory())
    again = grade(PROBLEM, REFERENCE, "run")
    assert again.verdict is Verdict.ACCEPTED, again.message
    assert warm.stats.cold_runs == 0


def test_a_child_that_says_finished_early_is_killed_and_judged(warm: pool.WarmPool) -> None:
    """The "finished" byte lets the pool skip waiting for a child's teardown. A submission that
    finds the pipe and writes it early, then keeps going, only ends its own run: it is killed
    at once (no result: a runtime error) and the zygote goes on serving."""
    source = (
        "import os, time\n"
        "for fd in range(3, 256):\n"
        "    try:\n        os.write(fd, b'\\0')\n    except OSError:\n        pass\n"
        "time.sleep(30)\n\n"
        "def solve(params, x, y):\n    return None\n"
    )
    respawns = warm.stats.respawns
    t = time.monotonic()
    report = grade(PROBLEM, source, "run", limits=FAST)
    assert time.monotonic() - t < FAST.wall_seconds  # ended by its own byte, not by the limit
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message
    warm.settle()
    for _ in range(2):  # both untrusted zygotes still serve, without a respawn
        again = grade(PROBLEM, REFERENCE, "run")
        assert again.verdict is Verdict.ACCEPTED, again.message
    assert warm.stats.respawns == respawns
    assert warm.stats.cold_runs == 0


def test_a_spare_that_died_warming_up_is_retried_not_judged(warm: pool.WarmPool) -> None:
    """Spares run trusted warm-up code before their request; if one dies there (a native abort),
    the submission that would have got it is retried on a fresh zygote, not judged."""
    warm.settle()
    killed = []
    for z in warm._zygotes:
        if z.trusted:
            continue
        z._await_spare()
        assert z.spare is not None
        host = z.spare[0]
        os.kill(host, signal.SIGKILL)
        killed.append(host)
    for host in killed:  # wholly dead (a zombie, all its threads gone) before the grade starts
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                status = Path(f"/proc/{host}/status").read_text()
            except OSError:
                break
            if "State:\tZ" in status and "Threads:\t1\n" in status:
                break
            time.sleep(0.01)
    respawns = warm.stats.respawns
    report = grade(PROBLEM, REFERENCE, "run")
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert warm.stats.respawns > respawns
    assert any("died before its run" in f for f in warm.stats.failures)
    assert warm.stats.cold_runs == 0


def test_jobs_do_not_see_each_other(warm: pool.WarmPool) -> None:
    writer = (
        "import os\nopen('/tmp/secret-from-earlier-job', 'w').write('x')\n"
        "open('planted-in-job-dir', 'w').write('x')\n"
        "try:\n    open('/job/planted-in-spool', 'w').write('x')\nexcept OSError:\n    pass\n"
        "def solve(params, x, y):\n    raise ValueError('first')\n"
    )
    reader = (
        "import os\nseen = sorted(os.listdir('/tmp')) + sorted(os.listdir('.'))\n"
        "try:\n    seen += os.listdir('/job')\nexcept OSError:\n    seen.append('no-list')\n"
        "def solve(params, x, y):\n    raise ValueError('SEEN ' + repr(seen))\n"
    )
    for _ in range(2):  # both untrusted zygotes get the writer at least once
        grade(PROBLEM, writer, "run")
    reports = [grade(PROBLEM, reader, "run") for _ in range(2)]
    for r in reports:
        assert "SEEN" in r.message and "no-list" in r.message, r.message  # /job is not listable
        assert "secret-from-earlier-job" not in r.message
        assert "planted-in" not in r.message


def test_concurrent_grades(warm: pool.WarmPool) -> None:
    out: list[Verdict] = []
    names = ["accepted_reference_style.py", "wrong_forgets_b2.py"] * 2

    def work(n: str) -> None:
        out.append(_grade(n, mode="run").verdict)

    threads = [threading.Thread(target=work, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(v.value for v in out) == sorted(
        [Verdict.ACCEPTED.value] * 2 + [Verdict.WRONG_ANSWER.value] * 2
    )


def test_recycled_after_n_jobs(tmp_path: Path) -> None:
    with pool.WarmPool(1, jobs_per_zygote=1, compile_cache=False) as p:
        ROUTE.use(runner=p.runner)
        try:
            first = {m["name"]: m["pid"] for m in p.zygote_memory()}
            assert grade(PROBLEM, REFERENCE, "run").verdict is Verdict.ACCEPTED
            assert grade(PROBLEM, REFERENCE, "run").verdict is Verdict.ACCEPTED
        finally:
            ROUTE.use(runner=None)
        assert p.stats.cold_runs == 0
        assert p.stats.respawns >= 4
        assert {m["name"]: m["pid"] for m in p.zygote_memory()} != first


def test_cold_fallback_when_zygotes_cannot_start(tmp_path: Path) -> None:
    with pool.WarmPool(1, compile_cache=False, base_dir=tmp_path / "missing") as p:
        ROUTE.use(runner=p.runner)
        try:
            report = grade(PROBLEM, REFERENCE, "run")
        finally:
            ROUTE.use(runner=None)
        assert report.verdict is Verdict.ACCEPTED, report.message
        assert p.stats.runs == 0 and p.stats.cold_runs == 2


def test_close_leaves_nothing(warm: pool.WarmPool) -> None:
    warm.settle()
    cgroups_before = _own_cgroups()  # the module pool's slot groups
    p = pool.WarmPool(1, compile_cache=False).start()
    uids = [z.res.uid for z in p._zygotes if z.res is not None and z.res.uid is not None]
    spools = [z.spool for z in p._zygotes if z.spool is not None]
    hosts = [m["pid"] for m in p.zygote_memory()]
    assert spools and hosts
    _accepted_through(p)
    p.close()
    assert not any(os.path.exists(f"/proc/{pid}") for pid in hosts)
    assert all(not uidpool._uid_processes(u) for u in uids)
    assert all(not s.exists() for s in spools)
    assert _own_cgroups() == cgroups_before


def test_spare_children_wait_in_their_own_cgroup_and_die_with_the_zygote() -> None:
    """Each zygote forks its next child ahead of time and the pool moves it into a fresh
    cgroup off the grade's clock; a spare must never outlive its zygote."""
    with pool.WarmPool(1, compile_cache=False) as p:
        z = p._zygotes[0]
        assert z.spare is not None
        spare_pid, cg = z.spare
        assert os.path.exists(f"/proc/{spare_pid}")
        if cg is not None:
            assert cg.pids() == [spare_pid]  # alone in its own group, not the zygote's
        _accepted_through(p)
        z._await_spare()
        assert z.spare is not None and z.spare[0] != spare_pid  # used, and replaced
        assert not os.path.exists(f"/proc/{spare_pid}")
        orphan = z.spare[0]
        assert z.host_pid is not None
        os.kill(z.host_pid, signal.SIGKILL)  # the zygote dies without a word
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{orphan}") and time.monotonic() < deadline:
            time.sleep(0.05)
        status = Path(f"/proc/{orphan}/status")
        alive = status.exists() and "State:\tZ" not in status.read_text()
        assert not alive, "the spare outlived its zygote"


def test_identical_program_from_a_different_source_is_not_executed_again() -> None:
    """Stage B's trusted results cache: same verified program + same inputs -> same outputs."""
    # A constant unique to this run makes the programs new to the (persistent) cache; it does
    # not change the numbers.
    unique = f"** 2 + jnp.float32({time.time_ns() % 10**9}.0) * 0)"
    source = REFERENCE.replace("** 2)", unique)
    # Other local names, comments and layout: the same program.
    renamed = "# my solution\n\n" + source.replace("out", "pred").replace(
        " h ", " hidden "
    ).replace("(h ", "(hidden ").replace("h @", "hidden @")
    wrong = source.replace("** 2 +", "** 3 +")
    with pool.WarmPool(1) as p:
        if p.cache_dir is None:
            pytest.skip("no trusted cache dir (needs the uid_pool and bwrap layers)")
        # (the program cache is off here: see the fixture)
        first, again, other = grade_through(p.runner, PROBLEM, [source, renamed, wrong])
    assert first.verdict is again.verdict is Verdict.ACCEPTED
    assert "stage_b.execute" in first.timings  # executed for real
    assert "stage_b.execute" not in again.timings  # served from the results cache
    # A different program is executed for real and gets its own (wrong) numbers.
    assert other.verdict is Verdict.WRONG_ANSWER
    assert "stage_b.execute" in other.timings


POISON = REFERENCE + '''
# Poisoning attempt: export the reference's very program, but with its output keys renamed, so
# that stage B's results cache would hold renamed outputs under the reference program's entry.
import dataclasses

from jax import export as _export

_serialize = _export.Exported.serialize


def _renamed(self, *args, **kwargs):
    tree = jax.tree_util.tree_structure(
        {"grads_": {"b1": 0, "b2": 0, "w1": 0, "w2": 0}, "loss_": 0})
    return _serialize(dataclasses.replace(self, out_tree=tree), *args, **kwargs)


_export.Exported.serialize = _renamed
'''


def test_results_cache_cannot_be_poisoned_by_a_renamed_export(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The on-disk results cache is keyed by everything in the export that gives the outputs
    their meaning (output tree, kept inputs, ...), not only the program text."""
    monkeypatch.setenv("JAXJUDGE_COMPILE_CACHE_DIR", str(tmp_path / "cache"))
    with pool.WarmPool(1) as p:
        if p.cache_dir is None:
            pytest.skip("no trusted cache dir (needs the uid_pool and bwrap layers)")
        poison, honest, again = grade_through(p.runner, PROBLEM, [POISON, REFERENCE, REFERENCE])
    assert poison.verdict is Verdict.WRONG_ANSWER, poison.message
    assert "grads_" in poison.message  # its renamed outputs were really produced and cached
    assert "stage_b.execute" in poison.timings
    assert honest.verdict is Verdict.ACCEPTED, honest.message
    assert "stage_b.execute" in honest.timings  # not served the planted entry
    assert again.verdict is Verdict.ACCEPTED and "stage_b.execute" not in again.timings
    assert len(list((tmp_path / "cache").glob("results-*.json"))) == 2


def test_memory_bomb_without_a_memory_cgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the cgroup layer the pool measures the child's own memory: the bomb is stopped
    at the memory limit, not after filling RLIMIT_AS's headroom until a time limit."""
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", "cgroup")
    name = "mle_bytearray_loop.py"
    # CPU headroom, as in test_limits_kill_the_child_not_the_zygote: on a loaded VM touching the
    # pages alone spent the problem's 4 s (seen at load 10), and this checks memory detection.
    limits = PROBLEM.limits.model_copy(update={"wall_seconds": 30, "cpu_seconds": 8})
    with pool.WarmPool(1, compile_cache=False) as p:
        report = Grader(runner=p.runner).grade(
            PROBLEM, (SUBMISSIONS / name).read_text(), "submit", limits=limits)
        assert p.stats.runs >= 1 and p.stats.cold_runs == 0
    assert report.verdict is Verdict.MEMORY_LIMIT_EXCEEDED, report.message


def test_spares_warm_up_only_while_grades_leave_half_the_cores_idle() -> None:
    """The spare warm-up is speculative work for idle cores: on where at most half the cores
    are taken by grades at once, off beyond (it competed with the grades on a 13-core host)."""
    cores = os.cpu_count() or 1
    assert pool.spare_warmup_fits(max(1, cores // 2)) == (cores >= 2)
    assert not pool.spare_warmup_fits(cores // 2 + 1)
    assert pool.WarmPool(cores).spare_warmup is False  # the default decides from `workers`
    with pool.WarmPool(1, compile_cache=False, spare_warmup=False) as p:
        z = next(z for z in p._zygotes if not z.trusted)
        assert z.host_pid is not None
        try:
            environ = Path(f"/proc/{z.host_pid}/environ").read_bytes().split(b"\0")
        except OSError:
            pytest.skip("the zygote's environment is not readable here (not root)")
        assert b"JAXJUDGE_ZYGOTE_SPARE_WARMUP=" in environ  # set, and empty: no warm-up
        _accepted_through(p)  # a cold spare grades as well
