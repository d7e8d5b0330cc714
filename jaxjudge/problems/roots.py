"""Where problem sets live: the folders ("roots") that hold one `<id>/problem.toml` per problem.

- `$JAXJUDGE_PROBLEMS_DIR`: one or more folders separated by `os.pathsep`. When set, only these
  are used, in order.
- Otherwise the bundled `problems/` beside the `jaxjudge` package (a source checkout or an
  editable install), when it exists, then the folders that installed distributions register
  under the entry-point group `jaxjudge.problems` (a course shipping its own problem set):

      [project.entry-points."jaxjudge.problems"]
      my-course = "my_course:PROBLEMS"      # a path, or a zero-argument callable returning one

The first root holding an id wins, so every id names one package. Looking up one id reads the
entry points only when the env or bundled folders do not have it: `importlib.metadata` costs
milliseconds per process (more with many installed distributions) that a one-off
`jaxjudge grade -p ID` need not pay. A broken entry point (it fails to import, gives something
that is not a path, or names a missing folder) is logged and skipped, never fatal.

An id is one folder name matching `ID_RE`, so a lookup never leaves its root.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

log = logging.getLogger(__name__)

ENV = "JAXJUDGE_PROBLEMS_DIR"
GROUP = "jaxjudge.problems"
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
BUNDLED = Path(__file__).resolve().parent.parent.parent / "problems"


def env_roots() -> list[Path] | None:
    """The folders named by $JAXJUDGE_PROBLEMS_DIR, in order; None when it is unset or empty."""
    raw = os.environ.get(ENV, "")
    roots = [Path(part) for part in raw.split(os.pathsep) if part]
    return roots or None


def bundled_root() -> Path | None:
    """`problems/` beside the package, when it exists (not in a wheel install)."""
    return BUNDLED if BUNDLED.is_dir() else None


def local_roots() -> list[Path]:
    """The roots that cost no entry-point lookup: the env folders, else the bundled one."""
    env = env_roots()
    if env is not None:
        return env
    bundled = bundled_root()
    return [bundled] if bundled is not None else []


@cache
def entry_point_roots() -> tuple[Path, ...]:
    """The folders registered under the `jaxjudge.problems` entry-point group, once per
    process, in the order importlib.metadata finds the distributions (sys.path order)."""
    from importlib.metadata import entry_points

    roots: list[Path] = []
    for ep in entry_points(group=GROUP):
        root = _load_entry_point(ep)
        if root is not None and root not in roots:
            roots.append(root)
    return tuple(roots)


def _load_entry_point(ep: EntryPoint) -> Path | None:
    dist = ep.dist.name if ep.dist is not None else None
    where = f"problem set entry point {ep.name!r} = {ep.value!r}" + (
        f" (from {dist})" if dist else "")
    try:
        value = ep.load()
        if callable(value) and not isinstance(value, str | os.PathLike):
            value = value()
    except Exception as exc:
        log.warning("skipping %s: it raised %r", where, exc)
        return None
    if not isinstance(value, str | os.PathLike):
        log.warning("skipping %s: it gives a value of type %s, not a path", where,
                    type(value).__name__)
        return None
    root = Path(value).resolve()
    if not root.is_dir():
        log.warning("skipping %s: %s is not a folder", where, root)
        return None
    return root


def problem_roots() -> list[Path]:
    """Every root, in the order that decides which one wins an id."""
    env = env_roots()
    if env is not None:
        return env
    roots = local_roots()
    roots += [r for r in entry_point_roots() if r not in roots]
    return roots


def problems_dir() -> Path:
    """The first root (kept for callers that want one folder); the bundled path when there is
    none, as before."""
    roots = local_roots() or list(entry_point_roots())
    return roots[0] if roots else BUNDLED


def _holding(roots: list[Path] | tuple[Path, ...], problem_id: str) -> Path | None:
    for root in roots:
        if (root / problem_id / "problem.toml").is_file():
            return root / problem_id
    return None


def find_problem_dir(problem_id: str) -> Path | None:
    """The folder of problem `problem_id` in the first root that has it, or None. Entry points
    are read only when the env or bundled folders do not have it."""
    if not ID_RE.match(problem_id):
        return None
    found = _holding(local_roots(), problem_id)
    if found is None and env_roots() is None:
        found = _holding(entry_point_roots(), problem_id)
    return found


def iter_problem_dirs() -> Iterator[Path]:
    """One folder per id across every root (the first root wins), in id order."""
    seen: dict[str, Path] = {}
    for root in problem_roots():
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            if folder.name not in seen and (folder / "problem.toml").is_file():
                seen[folder.name] = folder
    for name in sorted(seen):
        yield seen[name]
