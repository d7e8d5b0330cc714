"""A problem set inside the sandbox's view (the Python prefix every run reads) is refused before
anything runs: by a grade, and by `serve` at start. A folder beside the prefix is graded."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_fixtures import free_port, service_env

from jaxjudge import ProblemError, Verdict, grade, load_problem
from jaxjudge.grading.exposure import visible_to_runs

SEED = load_problem("rematerialized-mlp-block")
PREFIX = Path(sys.prefix)


@pytest.fixture
def inside_prefix() -> Iterator[Path]:
    """A problem set installed inside the venv, as `pip install` of a course package would."""
    top = Path(tempfile.mkdtemp(prefix="jaxjudge-test-problems-", dir=PREFIX))
    try:
        shutil.copytree(SEED.root, top / SEED.id)
        yield top
    finally:
        shutil.rmtree(top)


def test_a_problem_inside_the_prefix_is_refused_before_any_run(inside_prefix: Path) -> None:
    problem = load_problem(inside_prefix / SEED.id)
    with pytest.raises(ProblemError, match="readable by submissions") as caught:
        grade(problem, SEED.reference_path.read_text(), "run")
    assert str(PREFIX.resolve()) in str(caught.value)
    assert "JAXJUDGE_PROBLEMS_DIR" in str(caught.value)  # the way out


def test_a_symlink_does_not_hide_where_the_problem_is(inside_prefix: Path,
                                                      tmp_path: Path) -> None:
    link = tmp_path / "looks-private"
    link.symlink_to(inside_prefix, target_is_directory=True)
    assert visible_to_runs(link / SEED.id) == str(PREFIX.resolve())


def test_a_folder_beside_the_prefix_is_graded() -> None:
    """Honest but unusual: a sibling whose name starts with the prefix's is not inside it."""
    sibling = Path(tempfile.mkdtemp(prefix=PREFIX.resolve().name + "-problems-",
                                    dir=PREFIX.resolve().parent))
    try:
        shutil.copytree(SEED.root, sibling / SEED.id)
        assert visible_to_runs(sibling / SEED.id) is None
        report = grade(load_problem(sibling / SEED.id), SEED.reference_path.read_text(), "run")
        assert report.verdict == Verdict.ACCEPTED, report.message
    finally:
        shutil.rmtree(sibling)


def test_serve_refuses_a_problem_set_in_the_prefix(inside_prefix: Path, tmp_path: Path) -> None:
    env = {**service_env(), "JAXJUDGE_PROBLEMS_DIR": str(inside_prefix)}
    proc = subprocess.run(
        [sys.executable, "-m", "jaxjudge.cli.service", "serve", "--port", str(free_port())],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 3, proc.stderr
    assert "refusing to grade" in proc.stderr and SEED.id in proc.stderr
    assert not (tmp_path / "var").exists()  # refused before opening the database
