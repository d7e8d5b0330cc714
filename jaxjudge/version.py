"""The grader's version: the package version plus a hash of the grading code."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

BASE_VERSION = "0.1.0"  # the package version (pyproject.toml); grader_version() adds a hash
NOT_GRADING = frozenset({"service"})  # top-level folders left out of the hash


@functools.cache
def grader_version() -> str:
    """BASE_VERSION plus a hash of the grading code, e.g. "0.1.0+3f2a9c1d0b7e".

    It keys the report, program and batch resume caches, so any edit to grading code (a stage
    script, a rule, this file) invalidates results graded by the old code without anyone having
    to remember a version bump. The grading code is every jaxjudge/**/*.py but the service's,
    which decides no verdict. Hashed once per process, on first use (about 1 ms); paths are
    relative to the package, so a copy installed elsewhere gets the same version."""
    root = Path(__file__).resolve().parent
    paths = (p for p in root.rglob("*.py") if p.relative_to(root).parts[0] not in NOT_GRADING)
    return f"{BASE_VERSION}+{source_hash(root, paths)[:12]}"


def source_hash(root: Path, paths: Iterable[Path]) -> str:
    """A hash of these files under `root`: each one's path relative to `root` and content."""
    h = hashlib.sha256()
    for path in sorted(paths, key=lambda p: p.relative_to(root).as_posix()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


