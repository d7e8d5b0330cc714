"""The parent's private state files (jaxjudge/isolation/statefile.py) shared by grader
processes: `update` is a read-modify-write no other process interleaves with, and a lock it
cannot take or trust is no write, never a wait without end or an error."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxjudge.isolation import statefile

ROOT = Path(__file__).resolve().parent.parent


def test_updates_from_concurrent_processes_all_land(tmp_path: Path) -> None:
    """Six processes add 1 to one counter 50 times each, all at once: 300 at the end. (The
    wait for the lock is lengthened: on a loaded machine a holder may be off its CPU for
    longer than the 2 s a hint waits, and this is about the lock, not that bound.)"""
    path = tmp_path / "state" / "counter.json"
    add = ("import sys\nfrom pathlib import Path\nfrom jaxjudge.isolation import statefile\n"
           "statefile.LOCK_WAIT_SECONDS = 300\n"
           "for _ in range(50):\n"
           "    assert statefile.update(Path(sys.argv[1]), lambda n: (n or 0) + 1)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", add, str(path)], env=env)
             for _ in range(6)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    assert statefile.read(path) == 300


def test_a_change_that_returns_none_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state" / "x.json"
    assert statefile.update(path, lambda old: None) and not path.exists()
    assert statefile.update(path, lambda old: {"a": 1}) and statefile.read(path) == {"a": 1}
    assert statefile.update(path, lambda old: None) and statefile.read(path) == {"a": 1}


def test_a_held_lock_is_waited_for_only_so_long(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state" / "x.json"
    statefile.write(path, {"a": 1})
    monkeypatch.setattr(statefile, "LOCK_WAIT_SECONDS", 0.2)
    holder = os.open(path.parent / f".{path.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another open file: as another process holds it
        assert not statefile.update(path, lambda old: {"a": 2})
    finally:
        os.close(holder)
    assert statefile.read(path) == {"a": 1}
    assert statefile.update(path, lambda old: {"a": 2}) and statefile.read(path) == {"a": 2}


def test_a_fifo_planted_as_the_lock_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "state" / "x.json"
    path.parent.mkdir(mode=0o700)
    os.mkfifo(path.parent / f".{path.name}.lock", 0o600)
    assert not statefile.update(path, lambda old: {"a": 2})
    assert not path.exists()
