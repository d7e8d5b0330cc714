"""Nothing a run leaves in SysV IPC (shared memory, semaphores, message queues) or in shared
temporary directories reaches the next run: real submissions, graded cold and through a warm
pool, with every layer and with layers forced off.

The writer creates a 1 MB shared memory segment, a semaphore set and a message queue under
fixed keys (and files in /dev/shm and /tmp); the reader, graded next, looks them up. With the
seccomp layer on, creating them is refused outright; with it off, the run's own IPC namespace
(bubblewrap's or the trampoline's) or the cleanup between two pool children must hide them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import grade_through

from jaxjudge import Verdict, load_problem
from jaxjudge.grading.stage_common import default_runner as _default_runner
from jaxjudge.isolation import pool, sandbox, uidpool

PROBLEM = load_problem("rematerialized-mlp-block")
KEY = 0x4A4A5F01

WRITER = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
made = []
shm = libc.shmget({KEY}, 1 << 20, 0o1666)  # IPC_CREAT | 0666
if shm >= 0:
    addr = libc.shmat(shm, None, 0)
    ctypes.memmove(addr, b"SECRET-FROM-AN-EARLIER-RUN", 26)
    made.append("shm")
else:
    made.append("shm-errno-%d" % ctypes.get_errno())
if libc.semget({KEY}, 1, 0o1666) >= 0:
    made.append("sem")
if libc.msgget({KEY}, 0o1666) >= 0:
    made.append("msg")
for path in ("/dev/shm/jaxjudge-left-behind", "/tmp/jaxjudge-left-behind"):
    try:
        with open(path, "w") as f:
            f.write("x")
        os.chmod(path, 0o666)
        made.append(path)
    except OSError:
        pass
raise ValueError("MADE " + " ".join(made))


def solve(params, x, y):
    return None
"""

READER = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
found = []
if libc.shmget({KEY}, 0, 0) >= 0:
    found.append("shm")
if libc.semget({KEY}, 0, 0) >= 0:
    found.append("sem")
if libc.msgget({KEY}, 0) >= 0:
    found.append("msg")
found += [p for p in ("/dev/shm/jaxjudge-left-behind", "/tmp/jaxjudge-left-behind")
          if os.path.exists(p)]
raise ValueError("FOUND " + (" ".join(found) or "nothing"))


def solve(params, x, y):
    return None
"""

CONFIGS = {
    "all-layers": "",
    "no-seccomp": "seccomp",  # creating works: the namespace or the cleanup must hide it
    "no-seccomp-no-bwrap": "seccomp,bwrap",  # the host's IPC namespace and /tmp
}


def _host_leftovers() -> list[str]:
    """SysV objects under our key, and the files, in the host's namespace and directories."""
    out = []
    for kind in ("shm", "sem", "msg"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        out += [f"{kind}:{line.split()[1]}" for line in lines if int(line.split()[0]) == KEY]
    out += [p for p in ("/dev/shm/jaxjudge-left-behind", "/tmp/jaxjudge-left-behind")
            if os.path.exists(p)]
    return out


@pytest.fixture(autouse=True)
def _clean_host() -> Iterator[None]:
    yield
    for p in ("/dev/shm/jaxjudge-left-behind", "/tmp/jaxjudge-left-behind"):
        Path(p).unlink(missing_ok=True)


def _layers_or_skip(disable: str) -> None:
    prot = sandbox.protections()
    if not prot["uid_pool"]["active"] and "bwrap" in disable.split(","):
        pytest.skip("without the uid pool and bwrap, runs share the service's uid and its IPC "
                    "namespace: nothing separates them (refused unless explicitly unsafe)")
    for layer in {"seccomp", "bwrap"} - set(disable.split(",")):
        if not prot[layer]["active"]:
            pytest.skip(f"sandbox layer {layer} inactive: {prot[layer]['detail']}")


def _write_then_read(runner, disable: str) -> tuple[str, str]:
    writer, reader = grade_through(runner, PROBLEM, [WRITER, READER])
    assert writer.verdict is Verdict.RUNTIME_ERROR and "MADE" in writer.message, writer.message
    assert reader.verdict is Verdict.RUNTIME_ERROR and "FOUND" in reader.message, reader.message
    made = writer.message.rsplit("ValueError: MADE", 1)[1].split("\n")[0] + " "
    if "seccomp" in disable:
        assert "shm " in made and "sem" in made and "msg" in made, made  # really created
    else:
        assert "shm-errno-1" in made and "sem" not in made, made  # EPERM from the filter
    return made, reader.message.rsplit("ValueError: FOUND", 1)[1].split("\n")[0]


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_cold_runs_do_not_share_ipc(config: str, monkeypatch: pytest.MonkeyPatch) -> None:
    disable = CONFIGS[config]
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", disable)
    _layers_or_skip(disable)
    _, found = _write_then_read(_default_runner, disable)
    assert found.strip() == "nothing"
    assert _host_leftovers() == []


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_warm_pool_children_do_not_share_ipc(config: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One zygote serves both runs, so its IPC namespace and /tmp are the same for both."""
    disable = CONFIGS[config]
    monkeypatch.setenv("JAXJUDGE_SANDBOX_DISABLE", disable)
    _layers_or_skip(disable)
    with pool.WarmPool(1, compile_cache=False) as p:
        _, found = _write_then_read(p.runner, disable)
        assert p.stats.runs >= 2 and p.stats.cold_runs == 0
    assert found.strip() == "nothing"
    assert _host_leftovers() == []


def test_leftovers_of_a_pool_uid_are_removed() -> None:
    """What a run's uid left in the host's IPC namespace and /tmp (a run without bwrap whose
    trampoline could not get a private namespace) is removed as that uid at teardown."""
    if not sandbox.protections()["uid_pool"]["active"]:
        pytest.skip("needs the uid pool (root)")
    python = "/usr/bin/python3"  # one a pool uid may run (ours may sit under a 0700 home)
    if not os.access(python, os.X_OK):
        pytest.skip(f"no {python}")
    base, count = uidpool._uid_range()
    with uidpool._uid_slot(30) as uid:
        code = WRITER.split("raise ValueError")[0]
        done = subprocess.run([python, "-I", "-c", code], user=uid, group=uid,
                              extra_groups=[], cwd="/", capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert sorted(k for k, _ in uidpool._ipc_objects(uid)) == ["msg", "sem", "shm"]
        assert len(_host_leftovers()) == 5
        uidpool._clean_uid_leftovers(uid, files=True)
        assert uidpool._ipc_objects(uid) == [] and _host_leftovers() == []
    assert base <= uid < base + count
