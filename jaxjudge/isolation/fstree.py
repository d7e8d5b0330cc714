"""Walk, chown, copy and remove directory trees that a sandboxed run may have shaped.

A submission controls the shape of everything it leaves in its job dir (and, in the warm pool,
its spool dir): thousands of nested directories, paths far longer than PATH_MAX, symlinks,
FIFOs, very wide directories. `os.walk` and `shutil.rmtree` recurse once per level on Python
3.11 (RecursionError near 1,000 levels) and build full path strings (ENAMETOOLONG past 4,096
bytes), so neither may touch such a tree. Everything here is iterative (an explicit stack),
works on directory file descriptors (`dir_fd=`, `os.scandir(fd)`) so path length never matters,
never follows a symlink and never leaves the tree's file system.

At most KEEP_FDS directory descriptors are open at once: below that depth the walk closes the
parent's descriptor on the way down and reopens it on the way up with `openat(fd, "..")`,
checking that it is the very directory (device and inode) it left, so a tree that changed under
the walk stops it instead of sending it elsewhere. Callers run these on trees whose writers are
dead (killed runs), so that check is a safety net, not a race the walk has to win.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

KEEP_FDS = 16  # directory descriptors kept open along the current path (plus the root's)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

EventKind = Literal["file", "dir", "post"]


class TreeChanged(OSError):
    """A directory was not where the walk left it (the tree changed under the walk)."""


@dataclass
class Event:
    """One step of a walk. `dir_fd` is the descriptor of the directory holding `name`; it is
    only valid until the walk resumes (never close or keep it). `rel` is the path relative to
    the root ("a/b/c"), or None when the walk was asked not to build paths (deep trees would
    make them quadratic in memory)."""

    kind: EventKind  # "file": not a directory; "dir": before its contents; "post": after them
    dir_fd: int
    name: str
    rel: str | None
    st: os.stat_result
    depth: int  # 1 for the root's own entries


@dataclass
class _Frame:
    fd: int | None  # None while closed (deep in the walk); reopened via ".." on the way up
    ident: tuple[int, int]  # (st_dev, st_ino) of this directory
    names: list[str]
    name: str = ""  # this directory's name in its parent ("" for the root)
    rel: str | None = ""
    st: os.stat_result | None = None


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _list(fd: int) -> list[str]:
    with os.scandir(fd) as it:
        names = [e.name for e in it]
    names.reverse()  # popped from the end: visited in directory order
    return names


def _open_dir(name: str, dir_fd: int) -> int:
    """Open a subdirectory without following symlinks. A directory the walk may not read
    (mode 000 left by a run of our own uid) is made readable first: we own or administer
    everything a walk is pointed at."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        try:  # never through a symlink; some platforms cannot promise that, then we give up
            os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
        except (OSError, NotImplementedError) as exc:
            raise PermissionError(errno.EACCES, f"cannot open directory {name!r}") from exc
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def walk(root: str | os.PathLike[str] | int, *, paths: bool = False,
         max_depth: int | None = None) -> Iterator[Event]:
    """Every entry under `root` (not the root itself), depth first, without recursion.

    Directories give a "dir" event before their contents and a "post" event after them (also
    when they were not entered: over `max_depth`, unreadable, or on another file system), so a
    consumer can keep its own stack in step. Everything else (files, symlinks, FIFOs, sockets,
    devices) gives one "file" event. Entries that vanish or cannot be stat'ed are skipped.
    `root` is a path or an open directory descriptor (not closed here). Raises OSError if the
    root cannot be opened, TreeChanged if the tree moved under the walk."""
    own_root = not isinstance(root, int)
    root_fd = os.open(root, _DIR_FLAGS) if own_root else os.dup(root)  # type: ignore[arg-type]
    stack: list[_Frame] = []
    try:
        root_st = os.fstat(root_fd)
        stack.append(_Frame(root_fd, _ident(root_st), _list(root_fd), rel="" if paths else None))
        while stack:
            frame = stack[-1]
            depth = len(stack)
            if frame.names:
                name = frame.names.pop()
                assert frame.fd is not None
                try:
                    st = os.stat(name, dir_fd=frame.fd, follow_symlinks=False)
                except OSError:
                    continue
                rel = (f"{frame.rel}/{name}" if frame.rel else name) if paths else None
                if not stat.S_ISDIR(st.st_mode):
                    yield Event("file", frame.fd, name, rel, st, depth)
                    continue
                yield Event("dir", frame.fd, name, rel, st, depth)
                child = _enter(frame, name, st, root_st.st_dev, depth, max_depth)
                if child is None:
                    yield Event("post", frame.fd, name, rel, st, depth)
                    continue
                child.rel = rel
                stack.append(child)
                if len(stack) > KEEP_FDS + 1 and frame.fd != root_fd:
                    os.close(frame.fd)  # reopened through ".." on the way back up
                    frame.fd = None
                continue
            # This directory is done: back to its parent, then report it.
            stack.pop()
            if not stack:
                break
            parent = stack[-1]
            assert frame.fd is not None and frame.st is not None
            try:
                if parent.fd is None:
                    fd = os.open("..", _DIR_FLAGS, dir_fd=frame.fd)
                    if _ident(os.fstat(fd)) != parent.ident:
                        os.close(fd)
                        raise TreeChanged(errno.ESTALE, "a directory moved during the walk")
                    parent.fd = fd
            finally:
                os.close(frame.fd)
                frame.fd = None
            yield Event("post", parent.fd, frame.name, frame.rel, frame.st, len(stack))
    finally:
        for frame in stack:
            if frame.fd is not None and frame.fd != root_fd:
                with contextlib.suppress(OSError):
                    os.close(frame.fd)
        os.close(root_fd)


def _enter(parent: _Frame, name: str, st: os.stat_result, root_dev: int, depth: int,
           max_depth: int | None) -> _Frame | None:
    """The frame of subdirectory `name`, or None when it is not to be (or cannot be) entered."""
    if st.st_dev != root_dev or (max_depth is not None and depth >= max_depth):
        return None
    assert parent.fd is not None
    try:
        fd = _open_dir(name, parent.fd)
    except OSError:
        return None
    try:
        if _ident(os.fstat(fd)) != _ident(st):  # replaced between stat and open
            raise OSError(errno.ESTALE, "directory replaced")
        names = _list(fd)
    except OSError:
        os.close(fd)
        return None
    return _Frame(fd, _ident(st), names, name=name, st=st)


# `remove_tree` repeats its pass while the tree keeps changing: a writer that was killed may
# still be tearing down (a SIGKILL is pending, not done) and a tree can move under a walk. Each
# pass lists afresh; the bound is in passes and in time, whichever comes first.
REMOVE_PASSES = 64
REMOVE_SECONDS = 30.0


def remove_tree(path: str | os.PathLike[str]) -> bool:
    """Remove `path` and everything under it (a symlink or file at `path` is just unlinked).
    Never raises: returns True when `path` is gone, False otherwise (what stayed is logged).
    A pass that leaves something (entries created after their directory was listed, a tree
    that moved, a directory without write permission) is followed by another, bounded by
    REMOVE_PASSES and REMOVE_SECONDS."""
    path = os.fspath(path)
    deadline = time.monotonic() + REMOVE_SECONDS
    last: OSError | None = None
    for attempt in range(REMOVE_PASSES):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        except OSError as exc:
            log.warning("cannot remove %s: %s", path, exc)
            return False
        try:
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(path)
            else:
                clear_dir(path)
                os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            last = exc
        if not os.path.lexists(path):
            return True
        if time.monotonic() > deadline:
            break
        time.sleep(min(0.001 * 2 ** attempt, 0.1))
    log.warning("cannot remove %s: %s", path, last or "entries keep appearing")
    return not os.path.lexists(path)


def _writable(dir_fd: int) -> bool:
    """Give ourselves write and search permission on the directory at `dir_fd` (a run may
    leave a directory read-only so that its entries cannot be unlinked); False if we cannot."""
    try:
        os.chmod(dir_fd, 0o700)
    except OSError:
        return False
    return True


def _remove_entry(ev: Event) -> None:
    """Unlink a file or remove an emptied directory; once more after making its directory
    writable when permission is what stopped it. Other failures are left to the next pass."""
    remove = os.unlink if ev.kind == "file" else os.rmdir
    try:
        remove(ev.name, dir_fd=ev.dir_fd)
    except FileNotFoundError:
        pass
    except PermissionError:
        if _writable(ev.dir_fd):
            with contextlib.suppress(OSError):
                remove(ev.name, dir_fd=ev.dir_fd)
    except OSError:
        pass


def clear_dir(path: str | os.PathLike[str] | int) -> None:
    """Remove everything inside the directory `path` (kept itself). Entries that cannot be
    removed are skipped; raises OSError only if `path` cannot be opened or the tree moved."""
    for ev in walk(path):
        if ev.kind != "dir":
            _remove_entry(ev)


def chown_tree(root: str | os.PathLike[str], uid: int, gid: int, *, sanitize: bool) -> None:
    """lchown `root` and everything under it; with `sanitize`, unlink whatever is neither a
    regular file nor a directory (symlinks, FIFOs, sockets, devices a run left behind)."""
    os.lchown(root, uid, gid)
    for ev in walk(root):
        if ev.kind == "post":
            continue
        try:
            if sanitize and ev.kind == "file" and not stat.S_ISREG(ev.st.st_mode):
                os.unlink(ev.name, dir_fd=ev.dir_fd)
                continue
            os.chown(ev.name, uid, gid, dir_fd=ev.dir_fd, follow_symlinks=False)
        except OSError:
            continue


def copy_tree(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, cap: int,
              only: set[str] | None = None, max_depth: int = 32,
              max_files: int | None = None) -> int:
    """Copy the regular files under `src` into `dst` (created as needed), at most `max_depth`
    levels deep; `only` limits the copy to those relative paths. Symlinks and special files are
    never copied nor followed, files over `cap` bytes are skipped, and copying stops after
    `max_files` files. Returns the number of files copied."""
    Path(dst).mkdir(parents=True, exist_ok=True)
    dst_fds = [os.open(dst, _DIR_FLAGS)]  # one per directory entered in src; -1: not made
    copied = 0
    events = walk(src, paths=True, max_depth=max_depth)
    try:
        for ev in events:
            assert ev.rel is not None
            if ev.kind == "dir":
                dst_fds.append(_dst_subdir(dst_fds[-1], ev.name))
            elif ev.kind == "post":
                fd = dst_fds.pop()
                if fd >= 0:
                    os.close(fd)
            elif stat.S_ISREG(ev.st.st_mode) and (only is None or ev.rel in only):
                if max_files is not None and copied >= max_files:
                    break
                if dst_fds[-1] >= 0 and _copy_file(ev, dst_fds[-1], cap):
                    copied += 1
    finally:
        events.close()  # closes the walk's descriptors now, also after a break
        for fd in dst_fds:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
    return copied


def _dst_subdir(parent: int, name: str) -> int:
    """Descriptor of dst's subdirectory `name` (made if missing), or -1 if it cannot be."""
    if parent < 0:
        return -1
    with contextlib.suppress(FileExistsError):
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
        except OSError:
            return -1
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError:
        return -1


def _copy_file(ev: Event, dst_dir: int, cap: int) -> bool:
    try:
        fin = os.open(ev.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                      dir_fd=ev.dir_fd)
    except OSError:
        return False
    try:
        st = os.fstat(fin)
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return False
        fout = os.open(ev.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                       | os.O_CLOEXEC, 0o644, dir_fd=dst_dir)
        try:
            left = cap + 1
            while left > 0:
                chunk = os.read(fin, min(1 << 20, left))
                if not chunk:
                    break
                left -= len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fout, view):]
        finally:
            os.close(fout)
        return True
    except OSError:
        return False
    finally:
        os.close(fin)
