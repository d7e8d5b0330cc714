"""The warm pool where /proc says nothing of pid namespaces (gVisor, Linux < 4.1: no `NSpid:`
line), with real zygotes: without bwrap (no pid namespace) it runs warm, finding each spare by
its pid; under bwrap it cannot map pids and says so, and grades on fresh processes instead.

The /proc view is the collaborator `Resident.read_status`, here the real one minus its
`NSpid:` lines; which layers run is chosen as an operator would, with JAXJUDGE_SANDBOX_DISABLE.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from jaxjudge import Grader, Verdict, load_problem
from jaxjudge.isolation import layers, pool, resident, sandbox
from jaxjudge.problems.package import Limits

PROBLEM = load_problem("rematerialized-mlp-block")
REFERENCE = (PROBLEM.submissions_dir / "accepted_reference_style.py").read_text(encoding="utf-8")
LOOP = (PROBLEM.submissions_dir / "tle_infinite_loop.py").read_text(encoding="utf-8")
FAST = Limits(wall_seconds=8, cpu_seconds=3, memory_mb=1024, output_kb=256)
FALLBACK = "using fresh processes"  # what the pool logs when a zygote cannot start

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the pool needs fork")


def _without_nspid(pid: int) -> str:
    """/proc/<pid>/status as gVisor shows it: no NSpid: line."""
    return "".join(line for line in resident.read_status(pid).splitlines(keepends=True)
                   if not line.startswith("NSpid:"))


class _NoNSpidPool(pool.WarmPool):
    """A warm pool whose zygotes are started, and read /proc, without NSpid: lines (on the
    pool's one spawning thread, as WarmPool.spawn does)."""

    def spawn(self, script: Path, spool: Path, *, env: dict[str, str],
              rw_binds: tuple[tuple[str, str], ...], gid: int | None) -> sandbox.Resident:
        return self._spawner.submit(sandbox.spawn, script, spool, pool.ZYGOTE_LIMITS, env=env,
                                    rw_binds=rw_binds, gid=gid,
                                    read_status=_without_nspid).result()


def _ppid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise AssertionError(f"no PPid: line for {pid}")


@pytest.mark.parametrize("disabled", [
    "bwrap,cgroup",  # the host: the child is killed by its pid
    pytest.param("bwrap", marks=pytest.mark.slow),  # the spare found by pid, moved by cgroup
])
def test_pool_runs_warm_without_pid_namespaces_or_nspid(
        disabled: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """As on the gVisor host of issue 42 (no user namespaces, so no bwrap; with and without
    writable cgroups): the zygotes come up, grades run on their children, a limit kills the
    child (by pid when there is no cgroup) and not the zygote."""
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", disabled)
    assert not sandbox.protections()["bwrap"]["active"]
    caplog.set_level(logging.WARNING, logger="jaxjudge.isolation.pool")
    with _NoNSpidPool(1, compile_cache=False) as p:
        for z in p._zygotes:
            assert z.res is not None and not z.res.pid_namespace
            assert "NSpid:" not in z.res.read_status(z.res.proc.pid)
            assert z.host_pid == z.res.proc.pid  # the zygote is the resident's own process
            assert z.spare is not None and _ppid(z.spare[0]) == z.host_pid
        zygotes = {z.name: z.host_pid for z in p._zygotes}
        grader = Grader(runner=p.runner)
        accepted = grader.grade(PROBLEM, REFERENCE, "run")
        looped = grader.grade(PROBLEM, LOOP, "run", limits=FAST)
        assert accepted.verdict is Verdict.ACCEPTED, accepted.message
        assert looped.verdict is Verdict.TIME_LIMIT_EXCEEDED, looped.message
        assert p.stats.cold_runs == 0 and p.stats.failures == [], p.stats
        assert p.stats.runs >= 3  # both stages of the first grade, stage A of the loop
        p.settle()
        assert {z.name: z.host_pid for z in p._zygotes} == zygotes  # none was replaced
        assert all(z.alive for z in p._zygotes)
    assert FALLBACK not in caplog.text


def test_pid_namespace_without_nspid_falls_back_and_says_why(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Under bwrap a zygote's pids are its namespace's; with no NSpid: line to translate them
    there is nothing to match by, so the pool says so instead of guessing a process to kill."""
    monkeypatch.delenv("JAXJUDGE_SANDBOX_DISABLE", raising=False)
    if not layers.protections()["bwrap"]["active"]:
        pytest.skip("needs the bwrap layer (user namespaces)")
    caplog.set_level(logging.WARNING, logger="jaxjudge.isolation.pool")
    started = time.monotonic()
    with _NoNSpidPool(1, compile_cache=False) as p:
        assert not any(z.alive for z in p._zygotes)
        assert len(p.stats.failures) == 2, p.stats.failures
        assert all("no NSpid: line" in f for f in p.stats.failures), p.stats.failures
        assert p.stats.respawns == 0
    # Refused before any zygote started importing jax (seconds), not found out after.
    assert time.monotonic() - started < 1.0
    assert FALLBACK in caplog.text and "no NSpid: line" in caplog.text


def test_host_pid_without_nspid_under_bwrap_says_so() -> None:
    """A resident in a pid namespace whose /proc view loses NSpid: later (the check at spawn
    passed) refuses to guess which process a pid names."""
    if not layers.protections()["bwrap"]["active"]:
        pytest.skip("needs the bwrap layer (user namespaces)")
    top = Path(tempfile.mkdtemp(prefix="jaxjudge-test-resident-"))  # a pool uid reaches it
    os.chmod(top, 0o755)
    script = top / "wait.py"
    script.write_text("import sys\nsys.stdin.read()\n")
    res = sandbox.spawn(script, top, pool.ZYGOTE_LIMITS)
    try:
        assert res.pid_namespace and res.host_pid(1) is not None  # bwrap's init, via NSpid:
        res.read_status = _without_nspid
        with pytest.raises(OSError, match="no NSpid: line"):
            res.host_pid(1)
    finally:
        res.close()
        shutil.rmtree(top)


def test_doctor_facts_follow_the_proc_view() -> None:
    """What `jaxjudge doctor` says of the pool rests on the same facts as host_pid: bwrap on a
    kernel without NSpid: cannot work; without bwrap NSpid: does not matter."""
    prot = layers.protections()
    with_bwrap = {**prot, "bwrap": {"active": True, "detail": ""}}
    without = {**prot, "bwrap": {"active": False, "detail": ""}}
    if os.geteuid() == 0 and not prot["uid_pool"]["active"]:
        pytest.skip("as root the pool needs the uid pool")
    blind = resident.pool_support(with_bwrap, _without_nspid)
    assert not blind["active"] and blind["nspid"] is False
    assert resident.NO_NSPID in blind["detail"]
    gvisor = resident.pool_support(without, _without_nspid)
    assert gvisor["active"] and gvisor["pid_namespaces"] is False
    assert "found by their pid" in gvisor["detail"]
    if "NSpid:" in resident.read_status(os.getpid()):
        assert resident.pool_support(with_bwrap)["active"]
