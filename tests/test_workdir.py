"""jaxjudge/isolation/workdir.py: a grade's work dir is named after its owner process, and the next
grader process removes those whose owner died (real processes, real /proc, a real SIGKILLed
grade)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxjudge.isolation import workdir

ROOT = Path(__file__).resolve().parent.parent
JAXJUDGE = Path(sys.executable).parent / "jaxjudge"
PROBLEM = "rematerialized-mlp-block"
REFERENCE = ROOT / "problems" / PROBLEM / "reference.py"


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def named(base: Path, ns: int, pid: int, started: int) -> Path:
    path = base / f"jaxjudge-w{ns}-{pid}-{started}-abc_123"
    (path / "a").mkdir(parents=True)
    (path / "a" / "submission.py").write_text("secret = 1\n")
    return path


def test_only_orphans_of_this_namespace_and_user_are_swept(tmp_path: Path) -> None:
    ns, me = workdir._pid_namespace(), os.getpid()
    mine = workdir._start_time(me)
    assert ns and mine is not None
    live = named(tmp_path, ns, me, mine)                      # a grade still running
    dead = named(tmp_path, ns, dead_pid(), 12345)            # its owner is gone
    reused = named(tmp_path, ns, me, mine - 1)               # same pid, another process
    elsewhere = named(tmp_path, ns + 1, dead_pid(), 12345)   # another pid namespace
    unrelated = tmp_path / "jaxjudge-oneoff-xyz"             # not a work dir at all
    unrelated.mkdir()
    others = named(tmp_path, ns, dead_pid(), 12345)
    others = others.rename(others.with_name(others.name.replace("abc_123", "other")))
    if os.geteuid() == 0:
        os.chown(others, 65533, 65533)  # another user's: never ours to remove
    assert workdir.sweep_orphans(tmp_path) == (2 if os.geteuid() == 0 else 3)
    assert not dead.exists() and not reused.exists()
    assert live.exists() and elsewhere.exists() and unrelated.exists()
    assert others.exists() is (os.geteuid() == 0)


def test_new_work_dirs_carry_their_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setenv("JAXJUDGE_WORK_DIR", str(tmp_path))
    root = workdir.work_root()
    try:
        assert root.parent == tmp_path and root.stat().st_mode & 0o777 == 0o711
        assert workdir.sweep_orphans(tmp_path) == 0  # ours, and we are alive
        assert root.exists()
    finally:
        root.rmdir()


def processes_naming(path: Path) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in ps.stdout.splitlines() if str(path) in line]


def test_the_work_dir_of_a_killed_grade_is_removed_by_the_next(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "JAXJUDGE_WORK_DIR": str(work), "PYTHONPATH": str(ROOT)}
    args = [str(JAXJUDGE), "grade", "-p", PROBLEM, str(REFERENCE), "--mode", "run", "--json"]
    victim = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(work.glob("jaxjudge-w*/a")):
        assert victim.poll() is None and time.monotonic() < deadline, "no work dir appeared"
        time.sleep(0.02)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(30)
    orphans = list(work.iterdir())
    assert len(orphans) == 1  # what SIGKILL leaves: nobody ran the cleanup
    deadline = time.monotonic() + 30
    while processes_naming(work):  # its stages die with it
        assert time.monotonic() < deadline, processes_naming(work)
        time.sleep(0.1)

    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "accepted"
    assert list(work.iterdir()) == []  # the orphan swept, its own work dir removed
