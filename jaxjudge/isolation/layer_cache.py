"""The sandbox layer probes' last all-good answer, so a one-off grade can skip them.

Detection runs short sandboxed interpreters (bubblewrap with and without `--disable-userns`,
the seccomp filter alone): ~0.07 s of a cold `jaxjudge grade`, spent before its first stage may
start. When every probe passed, the answer is stored in the parent's private state directory
(jaxjudge/isolation/statefile.py) under a key of everything it depends on: the grading code's
version, the kernel and this boot, the user, the interpreter, whether runs get pool uids, and each
bubblewrap candidate's path and inode, size and mtime. Only the CLI's one-off grade reads it;
`serve`,
`worker` and `doctor` always probe, and store what they find.

Why a stale or planted entry cannot weaken a grade: only the answer "everything works" is ever
stored or believed, and the bubblewrap it names must be one of this run's own candidates. Every
layer is still applied to every run, so a layer that stopped working fails that run's launch
(`setup_failed`, reported as the grader's error) instead of being skipped; the CLI then forgets
the entry, and the next grade probes again. A missing layer is never cached: it is re-probed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from jaxjudge.isolation import statefile

FILE = "sandbox-layers.json"


@dataclass(frozen=True)
class Known:
    """Layers the probes found working: the bubblewrap binary to use and how."""

    bwrap: str
    disable_userns: bool


def _path() -> Path:
    return statefile.state_dir() / FILE


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def key(candidates: list[tuple[str, str]], *, uid_pool: bool) -> str:
    """Everything the probes' answer depends on, hashed."""
    bins = []
    for path, origin in candidates:
        try:
            st = os.stat(path)
            bins.append([path, origin, st.st_ino, st.st_size, st.st_mtime_ns])
        except OSError:
            bins.append([path, origin])
    parts = [_isolation_code(), os.uname().release, _boot_id(), os.geteuid(),
             os.path.realpath(sys.executable), uid_pool, bins]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _isolation_code() -> str:
    """A hash of the code the probes run and test: this package (the layers, the trampoline,
    the seccomp filter). Not the whole grader's version: hashing every module costs ~5 ms of
    the one-off grade's start, before its first stage can launch, and no rule or report
    changes whether a layer works."""
    from jaxjudge.version import source_hash

    root = Path(__file__).resolve().parent
    return source_hash(root, root.glob("*.py"))


def load(key: str, candidates: list[tuple[str, str]]) -> Known | None:
    """The stored all-good answer for `key`, if there is one and it names a candidate."""
    data = statefile.read(_path())
    if not isinstance(data, dict) or data.get("key") != key or data.get("seccomp") is not True:
        return None
    bwrap, disable_userns = data.get("bwrap"), data.get("disable_userns")
    if not any(bwrap == path for path, _ in candidates) or not isinstance(disable_userns, bool):
        return None
    return Known(bwrap, disable_userns)  # type: ignore[arg-type]


def store(key: str, known: Known) -> None:
    statefile.write(_path(), {"key": key, "seccomp": True, "bwrap": known.bwrap,
                              "disable_userns": known.disable_userns})


def forget() -> None:
    statefile.remove(_path())
