"""XLA compile flags for stage B, probed once per machine and jaxlib version.

Compiling dominates a grade (one XLA compile per input shape). With the CPU fusion emitters off
and backend optimisation at level 0, compiles are ~3-10x faster and results stay equal to float32
rounding (measured <= 2.4e-7). Older jaxlibs abort on flags they do not know, so the flags are
probed in a throwaway process before use. That probe imports jax (~2 s), so its answer is kept
on disk per (jaxlib version, interpreter), in a directory only this user can write
(`$JAXJUDGE_STATE_DIR`, else `$XDG_CACHE_HOME/jaxjudge`, else `~/.cache/jaxjudge`; mode 0700):
no sandboxed process can plant flags there, and a stored value is only believed if it is one of
the candidates below.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import threading
from functools import cache
from importlib import metadata
from pathlib import Path

CANDIDATES = (
    "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0",
    "--xla_backend_optimization_level=0",
)
_lock = threading.Lock()


def _works(flags: str) -> bool:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": flags,
        "HOME": "/tmp",
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", "import jax; jax.numpy.zeros(2).block_until_ready()"],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def state_dir() -> Path:
    """Where the parent keeps what it learned about this machine (never shown to a sandbox)."""
    env = os.environ.get("JAXJUDGE_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jaxjudge"


def _cache_key() -> str:
    try:
        jaxlib = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        jaxlib = "?"
    return "|".join((jaxlib, os.path.realpath(sys.executable), *CANDIDATES))


def _read_cached(path: Path, key: str) -> str | None:
    """The stored answer for `key`, if the file is ours, private, and holds a candidate."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
        try:
            data = json.loads(f.read(64 * 1024))
        except ValueError:
            return None
    flags = data.get(key) if isinstance(data, dict) else None
    return flags if flags in (*CANDIDATES, "") else None


def _write_cached(path: Path, key: str, flags: str) -> None:
    """Best effort: an unwritable home only costs the probe next time. Keeps the answers for
    other jaxlib versions (a test venv beside the main one), up to 16."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        entries: dict[str, str] = {}
        with contextlib.suppress(OSError, ValueError):
            if _read_cached(path, key) is None and path.is_file():
                old = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(old, dict):
                    entries = {k: v for k, v in old.items()
                               if isinstance(k, str) and v in (*CANDIDATES, "")}
        entries = dict(list(entries.items())[-15:])
        entries[key] = flags
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entries, f)
        os.replace(tmp, path)


@cache
def _probe() -> str:
    if os.environ.get("JAXJUDGE_XLA_FLAGS") is not None:
        return os.environ["JAXJUDGE_XLA_FLAGS"]
    path, key = state_dir() / "xla-flags.json", _cache_key()
    cached = _read_cached(path, key)
    if cached is not None:
        return cached
    found = next((flags for flags in CANDIDATES if _works(flags)), "")
    _write_cached(path, key, found)
    return found


def fast_compile_flags() -> str:
    """XLA_FLAGS for the trusted execution stage ('' when none is supported)."""
    with _lock:
        return _probe()
