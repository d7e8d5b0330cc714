"""Problem-author tools, with the real CLI and the real sandboxed grader: `new-problem` makes a
package that `check-problem` passes, `check-problem` names what is wrong with a broken one, and
every shipped problem passes it (its samples are graded by tests/test_samples.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxjudge import list_problems
from jaxjudge.authoring.check import check_problem

JAXJUDGE = [sys.executable, "-c", "from jaxjudge.cli.service import main; main()"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*JAXJUDGE, *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    into = tmp_path_factory.mktemp("problems")
    proc = run("new-problem", "unit-rows", "--dir", str(into), "--title", "Unit rows")
    assert proc.returncode == 0, proc.stderr
    return into / "unit-rows"


def test_new_problem_passes_check_problem(scaffolded: Path) -> None:
    assert "Unit rows" in (scaffolded / "statement.md").read_text(encoding="utf-8")
    proc = run("check-problem", str(scaffolded))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 failed" in proc.stdout
    assert "req_python_loop.py" in proc.stdout


def test_new_problem_refuses_a_bad_or_taken_id(scaffolded: Path) -> None:
    taken = run("new-problem", "unit-rows", "--dir", str(scaffolded.parent))
    assert taken.returncode == 2 and "already exists" in taken.stderr
    bad = run("new-problem", "Bad_Id", "--dir", str(scaffolded.parent))
    assert bad.returncode == 2 and "lowercase" in bad.stderr


def test_check_problem_names_what_is_broken(scaffolded: Path, tmp_path: Path) -> None:
    broken = tmp_path / "unit-rows"
    shutil.copytree(scaffolded, broken)
    toml = broken / "problem.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('dim = "B"', 'dim = "Q"'),
                    encoding="utf-8")
    results = check_problem(broken, samples=False)
    assert [r.passed for r in results] == [False]
    assert "uses ['Q'], which are not dimensions" in results[0].detail
    toml.write_text(toml.read_text(encoding="utf-8").replace('dim = "Q"', 'dim = "B"'),
                    encoding="utf-8")
    cases = broken / "tests" / "cases.json"
    cases.write_text(cases.read_text(encoding="utf-8").replace('"hidden-30"', '"hidden-3x"'),
                     encoding="utf-8")
    (broken / "reference.py").write_text("def solve(x):\n    return {'y': x}\n")
    by_name = {r.name: r for r in check_problem(broken, samples=False)}
    assert not by_name["tests/generate.py --check"].passed
    assert not by_name["reference is accepted with full marks"].passed
    assert by_name["statement"].passed


def test_a_generated_case_must_have_dimensions_the_constraints_allow() -> None:
    """T is a multiple of 4 in blockwise attention: a generator writing T = 18 is stopped,
    naming the case and the constraint, before the reference runs."""
    import numpy as np

    from jaxjudge.authoring.testgen import Case, build_cases

    problem = next(p for p in list_problems() if p.id == "blockwise-attention-online-softmax")
    qkv = {n: np.ones((18, 2)) for n in "qkv"}
    with pytest.raises(SystemExit, match=r"off-block: T = 18 is not a multiple of 4"):
        build_cases(problem, [Case("off-block", qkv)], seed=0, truth=None)


@pytest.mark.parametrize("problem", list_problems(), ids=lambda p: p.id)
def test_every_problem_passes_check_problem(problem) -> None:  # type: ignore[no-untyped-def]
    failed = [r for r in check_problem(problem.root, samples=False) if not r.passed]
    assert not failed, failed
