"""The uid pool layer: one throw-away uid per concurrent run, held with a flock in a private
lock directory (`_uid_slot`), and everything a run's uid may leave behind found and removed:
its processes (`_kill_uid`), its SysV IPC objects and its files in the shared temporary
directories (`_clean_uid_leftovers`)."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import logging
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from jaxjudge.isolation import fstree
from jaxjudge.isolation.limits import KILL_GRACE_SECONDS

# The sandbox's one logger, whichever layer logs (operators filter on its name).
log = logging.getLogger("jaxjudge.isolation.sandbox")


def _uid_range() -> tuple[int, int]:
    base = int(os.environ.get("JAXJUDGE_SANDBOX_UID_BASE", "64000"))
    count = int(os.environ.get("JAXJUDGE_SANDBOX_UID_COUNT", "64"))
    return base, count


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
                        # Iterative: a run may leave a tree of any depth (shutil.rmtree's
                        # recursion raises RecursionError past ~1,000 levels).
                        fstree.remove_tree(entry.path)
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
