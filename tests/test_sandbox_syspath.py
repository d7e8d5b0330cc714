"""The stages see the packages of the command that started them (issue #32, other hosts).

On a host whose JAX is preinstalled, a venv made with --system-site-packages finds jax outside
the venv (the base site, a user site, a folder a .pth adds). Stages run `python -I` in a mount
namespace; `isolation.bwrap.package_dirs` finds the parent's folders holding the stages'
packages, the sandbox mounts them read-only and bootstrap's _ENTER appends them to sys.path.
Here a package that only the parent's sys.path reaches (under /tmp, which every sandboxed run
sees as an empty tmpfs) stands for that jax: a real sandboxed run must import it."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jaxjudge.isolation import bwrap, sandbox

LIMITS = sandbox.SandboxLimits(wall_seconds=60, cpu_seconds=30, memory_bytes=512 << 20,
                               output_bytes=64 * 1024)
PKG = "jaxjudge_hostpkg_for_test"
SCRIPT = f"""
import sys
try:
    import {PKG}
except ModuleNotFoundError as exc:
    print("MISSING", exc)
else:
    print("FOUND", {PKG}.WHERE)
"""


@pytest.fixture
def host_site() -> Iterator[Path]:
    """A folder outside every mounted prefix holding a package, on this process's sys.path."""
    root = Path(tempfile.mkdtemp(prefix="jaxjudge-hostsite-"))
    site = root / "site-packages"
    (site / PKG).mkdir(parents=True)
    (site / PKG / "__init__.py").write_text("WHERE = __file__\n")
    for d in (root, site, site / PKG):
        os.chmod(d, 0o755)
    os.chmod(site / PKG / "__init__.py", 0o644)
    sys.path.append(str(site))
    bwrap.package_dirs.cache_clear()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        bwrap.package_dirs.cache_clear()
        shutil.rmtree(root, ignore_errors=True)


def _run(tmp: Path) -> str:
    scripts = tmp / "scripts"
    scripts.mkdir()
    (scripts / "probe.py").write_text(SCRIPT)
    job = tmp / "job"
    job.mkdir()
    for d in (tmp, scripts, job):
        os.chmod(d, 0o755)
    os.chmod(scripts / "probe.py", 0o644)
    res = sandbox.run(scripts / "probe.py", job, LIMITS)
    return res.stdout + res.stderr


def test_package_dirs_names_the_folders_of_jax_and_numpy() -> None:
    import numpy  # the parent's own (the grader never imports jax)

    dirs = bwrap.package_dirs()
    assert os.path.realpath(Path(numpy.__file__).parent.parent) in dirs
    assert all(os.path.isabs(d) for d in dirs)


def test_a_package_only_the_parents_sys_path_reaches_is_seen_by_a_stage(
        host_site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="jaxjudge-syspath-run-"))
    try:
        monkeypatch.setattr(bwrap, "STAGE_PACKAGES", (*bwrap.STAGE_PACKAGES, PKG))
        bwrap.package_dirs.cache_clear()
        assert os.path.realpath(host_site) in bwrap.package_dirs()
        (tmp / "with").mkdir()
        out = _run(tmp / "with")
        assert "FOUND " + os.path.realpath(host_site) in out, out
    finally:
        bwrap.package_dirs.cache_clear()
        shutil.rmtree(tmp, ignore_errors=True)


def test_without_it_the_stage_does_not_see_the_folder(host_site: Path) -> None:
    """The failure the issue saw as "No module named 'jax'": a folder that holds none of the
    stages' packages stays out of sight."""
    tmp = Path(tempfile.mkdtemp(prefix="jaxjudge-syspath-run-"))
    try:
        (tmp / "without").mkdir()
        out = _run(tmp / "without")
        assert "MISSING" in out, out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
