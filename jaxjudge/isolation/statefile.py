"""What the trusted parent learned about this machine, kept between runs in private files.

Two facts are worth keeping because finding them costs a fresh interpreter each time: the XLA
flags stage B compiles with (jaxjudge/isolation/xla.py) and which sandbox layers work
(jaxjudge/isolation/layer_cache.py). They live in `$JAXJUDGE_STATE_DIR`, else
`$XDG_CACHE_HOME/jaxjudge`, else `~/.cache/jaxjudge` (mode 0700), which no sandboxed stage is shown.
A file is read only if it is a regular file owned by this user that nobody else can write, in a
folder likewise (never blocking on whatever else sits there), and callers believe a value only if it
is one of the answers they could have found themselves.

Several grader processes share the folder (a `jaxjudge grade` per submission, the service's
workers), so a file that holds several entries (the engine hint's problems) is changed only
through `update`: its read-modify-write runs under an flock on a lock file beside it, or two
processes that change different entries at once would each write back the other's old value.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024
LOCK_WAIT_SECONDS = 2.0  # an update that cannot take the lock in this long is dropped


def state_dir() -> Path:
    """Where the parent keeps what it learned about this machine (never shown to a sandbox)."""
    env = os.environ.get("JAXJUDGE_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxjudge"


def _open_dir(folder: Path) -> int | None:
    """An fd of `folder` if it is ours and nobody else can write in it (else None): in a folder
    another user can write, they could swap our files for a FIFO, a directory or an older copy,
    or, as a symlink in their control, point our writes elsewhere."""
    try:
        link = os.lstat(folder)
        if stat.S_ISLNK(link.st_mode) and link.st_uid != os.geteuid():
            return None
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def read(path: Path, limit: int = MAX_BYTES) -> Any:
    """The JSON in `path` if the file is ours, private and at most `limit` bytes; else None.
    Never blocks: a FIFO or device put in its place is opened non-blocking and refused."""
    dfd = _open_dir(path.parent)
    if dfd is None:
        return None
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        raw = f.read(limit + 1)
    if len(raw) > limit:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def update(path: Path, change: Callable[[Any], Any]) -> bool:
    """Replace `path` with `change(current)` while no other process updates it: `current` is
    what `read` gives (None when absent or not believed); `change` returns the new data, or
    None to leave the file as it is. Best effort like `write`: False when the lock could not
    be taken within LOCK_WAIT_SECONDS or the folder is not ours (nothing is written then)."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _locked(path) as held:
        if not held:
            return False
        new = change(read(path))
        if new is not None:
            write(path, new)
        return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[bool]:
    """An exclusive flock on `.<name>.lock` beside `path`, held for the block; yields whether
    it was taken (closing the file releases it)."""
    fd = _open_lock(path)
    if fd is None:
        yield False
        return
    try:
        yield _flock(fd)
    finally:
        os.close(fd)


def _flock(fd: int) -> bool:
    """Take an exclusive flock on `fd`, waiting at most LOCK_WAIT_SECONDS."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        except OSError:
            return False


def _open_lock(path: Path) -> int | None:
    """The lock file of `path`, opened like `read` opens its files: in a folder of ours, never
    following a link or blocking on a FIFO, and refused unless a private regular file of ours."""
    dfd = _open_dir(path.parent)
    if dfd is None:
        return None
    try:
        fd = os.open(f".{path.name}.lock",
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o600, dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def write(path: Path, data: Any) -> None:
    """Replace `path` atomically with `data` (mode 0600, its directory 0700), through a new
    temporary file of a random name (O_EXCL: nothing put there beforehand is opened). Best
    effort: an unwritable home only costs finding the answer again next time."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    dfd = _open_dir(path.parent)
    if dfd is None:
        return
    tmp = f".{path.name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dfd)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
    finally:
        os.close(dfd)


def remove(path: Path) -> None:
    """Forget `path` (best effort; only in a folder that is ours)."""
    dfd = _open_dir(path.parent)
    if dfd is None:
        return
    try:
        with contextlib.suppress(OSError):
            os.unlink(path.name, dir_fd=dfd)
    finally:
        os.close(dfd)
