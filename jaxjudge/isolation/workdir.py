"""Each grade's work directory, named after the process that owns it, so that one whose owner
died without cleaning up (SIGKILL, OOM) is removed by the next grader process to start.

A name is `jaxjudge-w<pid namespace>-<pid>-<start time>-<random>`. A directory is an orphan
when its pid namespace is ours (a process elsewhere, say another container sharing the folder,
cannot be judged from here) and no process with that pid and start time is alive (a reused pid
has another start time). Only directories this user owns are removed. The submission's source
and the stages' results are in there, so they should not outlive the grade.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from pathlib import Path

from jaxjudge.isolation import fstree

log = logging.getLogger("grader")

_NAME = re.compile(r"^jaxjudge-w(\d+)-(\d+)-(\d+)-[A-Za-z0-9_]+$")
_swept: set[str] = set()
_lock = threading.Lock()


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return int(stat[stat.rindex(")") + 2:].split()[19])


def _prefix() -> str:
    pid = os.getpid()
    return f"jaxjudge-w{_pid_namespace()}-{pid}-{_start_time(pid) or 0}-"


def sweep_orphans(base: Path) -> int:
    """Remove the work directories in `base` whose owner is gone; how many were removed."""
    ns, uid, removed = _pid_namespace(), os.geteuid(), 0
    try:
        entries = list(os.scandir(base))
    except OSError:
        return 0
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or int(match[1]) != ns or not ns:
            continue
        pid, started = int(match[2]), int(match[3])
        if _start_time(pid) == started:
            continue  # its grade may still be running
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid or not entry.is_dir(
                    follow_symlinks=False):
                continue
        except OSError:
            continue
        if fstree.remove_tree(entry.path):
            removed += 1
            log.info("removed the work dir of a grader process that died: %s", entry.path)
    return removed


def work_root() -> Path:
    """A fresh, private work directory for one grade (JAXJUDGE_WORK_DIR, else the temp dir);
    mode 0711 so each stage's uid reaches only its own subdirectory. The first call in a
    process for a folder removes the orphans in it."""
    base = os.environ.get("JAXJUDGE_WORK_DIR") or None
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
    folder = base or tempfile.gettempdir()
    with _lock:
        first = folder not in _swept
        _swept.add(folder)
    if first:
        sweep_orphans(Path(folder))
    root = Path(tempfile.mkdtemp(prefix=_prefix(), dir=base))
    os.chmod(root, 0o711)
    return root
