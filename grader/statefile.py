"""What the trusted parent learned about this machine, kept between runs in private files.

Two facts are worth keeping because finding them costs a fresh interpreter each time: the XLA
flags stage B compiles with (grader/xla.py) and which sandbox layers work (grader/layer_cache.py).
They live in `$JAXJUDGE_STATE_DIR`, else `$XDG_CACHE_HOME/jaxjudge`, else `~/.cache/jaxjudge`
(mode 0700), which no sandboxed stage is shown. A file is read only if it is a regular file
owned by this user that nobody else can write, and callers believe a value only if it is one of
the answers they could have found themselves.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024


def state_dir() -> Path:
    """Where the parent keeps what it learned about this machine (never shown to a sandbox)."""
    env = os.environ.get("JAXJUDGE_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxjudge"


def read(path: Path) -> Any:
    """The JSON in `path` if the file is ours, private and small; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def write(path: Path, data: Any) -> None:
    """Replace `path` atomically with `data` (mode 0600, its directory 0700). Best effort: an
    unwritable home only costs finding the answer again next time."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)


def remove(path: Path) -> None:
    """Forget `path` (best effort)."""
    with contextlib.suppress(OSError):
        path.unlink()
