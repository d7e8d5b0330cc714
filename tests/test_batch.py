"""Batch grading end to end: real folders, real grades (sandboxed subprocesses), real CLI runs.

One module-scoped folder grade covers every kind of broken submission at once (syntax error,
time-out, empty file, non-UTF-8 bytes, no file at all) next to a correct one, so the expensive
part runs once; the other tests read its outputs or re-run it to check resuming. Everything is
graded in mode "run" (examples only) to keep the suite short.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jaxjudge.batch.folder import (
    SCORES_HEADER,
    BatchError,
    BatchResult,
    discover,
    grade_file,
    grade_folder,
)
from jaxjudge.grading.report import Report, Verdict
from jaxjudge.problems.package import Limits, load_problem

REPO = Path(__file__).resolve().parent.parent
PROBLEM = "rematerialized-mlp-block"
PY = sys.executable

CORRECT = '''\
import jax
import jax.numpy as jnp


def _block(p, x):
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def solve(params, x, y):
    def loss_fn(p):
        block = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)
        return jnp.mean((block(p, x) - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    return {"loss": loss, "grads": grads}
'''
SYNTAX_ERROR = "def solve(params, x, y)\n    return params\n"
# Spins at import time, so stage A never finishes and the wall/CPU limit has to stop it.
FOREVER = "import jax\nwhile True:\n    pass\n"
NOT_UTF8 = b"# caf\xe9 cr\xe8me\ndef solve(params, x, y):\n    return params\n"

# Short limits keep the time-out student cheap; a correct grade needs far less than this.
LIMITS = Limits(wall_seconds=40, cpu_seconds=12, memory_mb=2048, output_kb=64)

pytestmark = pytest.mark.slow


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("subs")
    _write(root / "alice.py", CORRECT)
    _write(root / "bob" / "solution.py", SYNTAX_ERROR)
    _write(root / "bob" / "notes.txt", "not graded")
    _write(root / "carol.py", "")
    _write(root / "dave.py", NOT_UTF8)
    _write(root / "erin.py", FOREVER)
    _write(root / "frank" / "README.md", "I forgot to upload my code")
    _write(root / ".hidden.py", SYNTAX_ERROR)  # dotfiles are never students
    return root


@pytest.fixture(scope="module")
def first_run(class_folder: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[BatchResult, Path]:
    out = tmp_path_factory.mktemp("out")
    seen: list[str] = []
    result = grade_folder(class_folder, PROBLEM, mode="run", jobs=2, out_dir=out,
                          limits=LIMITS, on_result=lambda e: seen.append(e.student))
    assert sorted(seen) == sorted(e.student for e in result.entries)
    return result, out


def _verdicts(result: BatchResult) -> dict[str, Verdict]:
    return {e.student: e.report.verdict for e in result.entries}


def test_every_student_gets_a_verdict(first_run: tuple[BatchResult, Path]) -> None:
    result, _ = first_run
    verdicts = _verdicts(result)
    assert verdicts == {
        "alice": Verdict.ACCEPTED,
        "bob": Verdict.COMPILE_ERROR,
        "carol": Verdict.COMPILE_ERROR,
        "dave": Verdict.COMPILE_ERROR,
        "erin": Verdict.TIME_LIMIT_EXCEEDED,
        "frank": Verdict.COMPILE_ERROR,
    }
    dave = next(e for e in result.entries if e.student == "dave")
    assert "UTF-8" in dave.report.message
    frank = next(e for e in result.entries if e.student == "frank")
    assert frank.path is None and "no Python file" in frank.report.message
    alice = next(e for e in result.entries if e.student == "alice")
    sc = load_problem(PROBLEM).scoring
    assert alice.report.score == alice.report.max_score == sc.visible_tests + sc.requirements
    assert frank.report.max_score == alice.report.max_score  # out of the same, not of 0
    assert {e.student for e in result.graded} == {"alice", "bob", "carol", "dave", "erin"}


def test_output_files(first_run: tuple[BatchResult, Path]) -> None:
    _, out = first_run
    with open(out / "scores.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == list(SCORES_HEADER)
    assert rows[0] == ["student", "problem", "verdict", "score", "max_score", "seconds"]
    by_student = {r[0]: r for r in rows[1:]}
    assert sorted(by_student) == ["alice", "bob", "carol", "dave", "erin", "frank"]
    assert by_student["alice"][1:3] == [PROBLEM, "accepted"]
    assert by_student["alice"][3] == by_student["alice"][4] != "0"
    assert by_student["erin"][2:4] == ["time_limit_exceeded", "0"]

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert sorted(results) == sorted(by_student)
    for student, data in results.items():
        report = Report.model_validate(data)
        assert str(report.verdict) == by_student[student][2]

    for student in by_student:
        gs = json.loads((out / "gradescope" / f"{student}.json").read_text(encoding="utf-8"))
        assert gs["score"] == pytest.approx(float(by_student[student][3]), abs=0.01)
        assert all(t["status"] in ("passed", "failed") for t in gs["tests"])
    alice_gs = json.loads((out / "gradescope" / "alice.json").read_text(encoding="utf-8"))
    assert alice_gs["tests"] and all(t["status"] == "passed" for t in alice_gs["tests"])
    # Exactly, as written: per-test points are split so that they add up to the maximum.
    assert sum(t["max_score"] for t in alice_gs["tests"]) == alice_gs["score"] == float(
        by_student["alice"][4])


def test_resume_skips_graded_and_regrades_changed(
    class_folder: Path, first_run: tuple[BatchResult, Path], tmp_path: Path
) -> None:
    first, out = first_run
    again = grade_folder(class_folder, PROBLEM, mode="run", out_dir=out, limits=LIMITS)
    assert again.graded == []
    assert _verdicts(again) == _verdicts(first)
    assert {e.student for e in again.reused} == {"alice", "bob", "carol", "dave", "erin"}

    # A changed file (and only it) is graded again; the copy keeps the module fixture intact.
    folder, out2 = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(class_folder, folder)
    shutil.copytree(out, out2)
    (folder / "carol.py").write_text(SYNTAX_ERROR, encoding="utf-8")
    changed = grade_folder(folder, PROBLEM, mode="run", out_dir=out2, limits=LIMITS)
    assert [e.student for e in changed.graded] == ["carol"]
    carol = next(e for e in changed.entries if e.student == "carol")
    assert carol.report.verdict is Verdict.COMPILE_ERROR and "empty" not in carol.report.message
    assert "SyntaxError" in (out2 / "results.json").read_text()

    # force regrades even what is unchanged (here limited to the cheap, fast-failing students).
    for student in ("alice.py", "carol.py", "erin.py"):
        (folder / student).unlink()
    forced = grade_folder(folder, PROBLEM, mode="run", out_dir=out2, limits=LIMITS, force=True)
    assert {e.student for e in forced.graded} == {"bob", "dave"}


_BATCH_IN_COPY = """\
import json, sys
from jaxjudge.batch.folder import grade_folder
from jaxjudge.version import grader_version
result = grade_folder(sys.argv[1], sys.argv[2], mode="run", out_dir=sys.argv[3])
print(json.dumps({"graded": [e.student for e in result.graded], "version": grader_version()}))
"""


def test_resume_regrades_when_the_grader_changes(tmp_path: Path) -> None:
    """Stored results are keyed by the grader's code: a copy of the same code reuses them (in
    another process, from another place), a copy with one byte changed regrades them."""
    from jaxjudge.version import grader_version

    subs, out, copy = tmp_path / "subs", tmp_path / "out", tmp_path / "copy"
    _write(subs / "zoe.py", SYNTAX_ERROR)
    stored = _cache_path(out, "zoe")
    first = grade_folder(subs, PROBLEM, mode="run", out_dir=out)
    assert [e.student for e in first.graded] == ["zoe"]
    assert _stored_version(stored) == grader_version()

    shutil.copytree(REPO / "jaxjudge", copy / "jaxjudge",
                    ignore=shutil.ignore_patterns("__pycache__"))

    def batch_in_copy() -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": str(copy),
               "JAXJUDGE_PROBLEMS_DIR": str(REPO / "problems")}
        done = subprocess.run([PY, "-c", _BATCH_IN_COPY, str(subs), PROBLEM, str(out)],
                              cwd=tmp_path, env=env, text=True, capture_output=True,
                              timeout=600, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    same = batch_in_copy()
    assert same == {"graded": [], "version": grader_version()}

    rule = copy / "jaxjudge" / "rules" / "jaxpr.py"
    data = bytearray(rule.read_bytes())
    data[data.index(b'"""') + 3] ^= 0x20  # one byte: the docstring's first letter's case
    rule.write_bytes(bytes(data))
    changed = batch_in_copy()
    assert changed["graded"] == ["zoe"] and changed["version"] != grader_version()
    assert _stored_version(stored) == changed["version"]

    # And back: results of the other grader are not reused by this one either.
    again = grade_folder(subs, PROBLEM, mode="run", out_dir=out)
    assert [e.student for e in again.graded] == ["zoe"]
    assert _stored_version(stored) == grader_version()


def _cache_path(out: Path, student: str) -> Path:
    return out / "reports" / PROBLEM / f"{student}.json"


def _stored_version(path: Path) -> str:
    return json.loads(path.read_text(encoding="utf-8"))["report"]["versions"]["grader"]


def test_grade_file_matches_batch(first_run: tuple[BatchResult, Path],
                                  class_folder: Path) -> None:
    report = grade_file(PROBLEM, class_folder / "bob" / "solution.py", "run")
    assert report.verdict is Verdict.COMPILE_ERROR
    assert report.problem == PROBLEM and report.mode == "run"


def _cli(*args: str, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120", "NO_COLOR": "1", **env_extra}
    return subprocess.run([PY, "-m", "jaxjudge.cli.main", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600, check=False)


def test_grade_set_cli_resume_and_force(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    _write(subs / "zoe.py", SYNTAX_ERROR)
    # Run from inside the submissions folder: the default --out lands among the students.
    first = _cli("grade-set", ".", "--problem", PROBLEM, "--mode", "run", cwd=subs)
    assert first.returncode == 0, first.stderr
    assert "compile_error" in first.stdout and "graded now: 1, reused: 0" in first.stdout
    out = subs / "jaxjudge-results"  # the default --out, relative to the working directory
    rows = (out / "scores.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].startswith(f"zoe,{PROBLEM},compile_error,0,")

    second = _cli("grade-set", ".", "-p", PROBLEM, "--mode", "run", cwd=subs)
    assert second.returncode == 0, second.stderr
    assert "graded now: 0, reused: 1" in second.stdout
    assert "nothing to grade" not in second.stdout  # the results folder is not a student

    forced = _cli("grade-set", ".", "-p", PROBLEM, "--mode", "run", "--force", cwd=subs)
    assert forced.returncode == 0, forced.stderr
    assert "graded now: 1, reused: 0" in forced.stdout


def test_grade_set_refuses_without_a_sandbox_layer(tmp_path: Path) -> None:
    """Grading a class is grading untrusted code: a missing layer (forced off here) stops it
    before anything runs, unless the unsafe opt-out says otherwise, which is then logged."""
    subs = tmp_path / "subs"
    _write(subs / "zoe.py", SYNTAX_ERROR)
    refused = _cli("grade-set", ".", "-p", PROBLEM, "--mode", "run", "--cold", cwd=subs,
                   JAXJUDGE_SANDBOX_DISABLE="bwrap")
    assert refused.returncode == 2, refused.stderr
    err = " ".join(refused.stderr.split())  # rich wraps long lines
    assert "refusing to grade untrusted code" in err and "bwrap" in err
    assert "--unsafe-allow-missing-sandbox" in err
    assert not (subs / "jaxjudge-results").exists()
    allowed = _cli("grade-set", ".", "-p", PROBLEM, "--mode", "run", "--cold",
                   "--unsafe-allow-missing-sandbox", cwd=subs, JAXJUDGE_SANDBOX_DISABLE="bwrap")
    assert allowed.returncode == 0, allowed.stderr
    assert "UNSAFE" in allowed.stderr and "compile_error" in allowed.stdout


def test_grade_set_cli_usage_errors(tmp_path: Path) -> None:
    missing = _cli("grade-set", str(tmp_path / "nope"), "-p", PROBLEM, cwd=tmp_path)
    assert missing.returncode == 2 and "not a folder" in missing.stderr
    unknown = _cli("grade-set", str(tmp_path), "-p", "no-such-problem", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown problem" in unknown.stderr


# -- problem sets --------------------------------------------------------------------------------
@pytest.fixture
def problems_root(tmp_path: Path) -> Path:
    """The real problem, plus one whose tests file its author broke."""
    root = tmp_path / "problems"
    shutil.copytree(REPO / "problems" / PROBLEM, root / PROBLEM)
    broken = root / "broken-problem"
    shutil.copytree(REPO / "problems" / PROBLEM, broken)
    toml = (broken / "problem.toml").read_text(encoding="utf-8")
    (broken / "problem.toml").write_text(toml.replace(f'id = "{PROBLEM}"',
                                                      'id = "broken-problem"'), encoding="utf-8")
    (broken / "tests" / "cases.json").write_text("{ this is not json", encoding="utf-8")
    return root


def test_problem_set_layout_survives_a_broken_problem(problems_root: Path,
                                                      tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    _write(subs / "gina" / f"{PROBLEM}.py", SYNTAX_ERROR)
    _write(subs / "gina" / "broken-problem.py", SYNTAX_ERROR)
    _write(subs / "gina" / "helpers.py", "X = 1\n")  # not a problem id: ignored
    _write(subs / "hank" / f"{PROBLEM}.py", "")
    found, problem_set = discover(subs, None, ["broken-problem", PROBLEM])
    assert problem_set
    assert [(s.student, s.problem) for s in found] == [
        ("gina", "broken-problem"), ("gina", PROBLEM), ("hank", PROBLEM)]

    out = tmp_path / "out"
    result = grade_folder(subs, None, mode="run", out_dir=out, problems_root=problems_root)
    verdicts = {(e.student, e.problem): e.report.verdict for e in result.entries}
    assert verdicts == {
        ("gina", "broken-problem"): Verdict.INTERNAL_ERROR,
        ("gina", PROBLEM): Verdict.COMPILE_ERROR,
        ("hank", PROBLEM): Verdict.COMPILE_ERROR,
    }
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert sorted(results) == ["gina", "hank"]
    assert sorted(results["gina"]) == ["broken-problem", PROBLEM]
    gina = json.loads((out / "gradescope" / "gina.json").read_text(encoding="utf-8"))
    assert {t["name"].split(":")[0] for t in gina["tests"]} <= {"broken-problem", PROBLEM}
    assert any(t["name"].startswith(f"{PROBLEM}: ") for t in gina["tests"])

    # The internal error is retried on the next run; the real verdicts are reused.
    again = grade_folder(subs, None, mode="run", out_dir=out, problems_root=problems_root)
    assert [(e.student, e.problem) for e in again.graded] == [("gina", "broken-problem")]


def test_layout_errors_are_batch_errors(tmp_path: Path) -> None:
    _write(tmp_path / "alice.py", "")
    with pytest.raises(BatchError, match="pass --problem"):
        discover(tmp_path, None, [PROBLEM])
    _write(tmp_path / "alice" / "solution.py", "")
    with pytest.raises(BatchError, match="alice"):
        discover(tmp_path, PROBLEM)
    with pytest.raises(BatchError, match="not a folder"):
        discover(tmp_path / "missing", PROBLEM)
    with pytest.raises(BatchError, match="mode"):
        grade_folder(tmp_path, PROBLEM, mode="exam")  # type: ignore[arg-type]
    with pytest.raises(BatchError, match="unknown problem"):
        grade_folder(tmp_path, "no-such-problem")


def test_folder_with_several_files_needs_solution_py(tmp_path: Path) -> None:
    _write(tmp_path / "ivy" / "a.py", "")
    _write(tmp_path / "ivy" / "b.py", "")
    _write(tmp_path / "jon" / "work.py", "")
    _write(tmp_path / "kim" / "helper.py", "")
    _write(tmp_path / "kim" / f"{PROBLEM}.py", "")
    found = {s.student: s for s in discover(tmp_path, PROBLEM)[0]}
    assert found["ivy"].path is None and "a.py, b.py" in found["ivy"].problem_note
    assert found["jon"].path == tmp_path / "jon" / "work.py"
    assert found["kim"].path == tmp_path / "kim" / f"{PROBLEM}.py"


# -- Gradescope run_autograder -------------------------------------------------------------------
def _autograder(tmp_path: Path, config: str | None) -> tuple[Path, Path, Path]:
    sub, src, res = tmp_path / "submission", tmp_path / "source", tmp_path / "results"
    sub.mkdir()
    src.mkdir()
    if config is not None:
        _write(src / "jaxjudge.toml", config)
    return sub, src, res / "results.json"


def _gradescope(sub: Path, src: Path, res: Path, *extra: str,
                **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "JAXJUDGE_PROBLEM"}
    env.update(PYTHONPATH=str(REPO), COLUMNS="120", **env_extra)
    return subprocess.run(
        [PY, "-m", "jaxjudge.cli.main", "gradescope", "--submission-dir", str(sub),
         "--source-dir", str(src), "--results", str(res), *extra],
        cwd=sub.parent, env=env, text=True, capture_output=True, timeout=600, check=False,
    )


def test_gradescope_grades_the_uploaded_file(tmp_path: Path) -> None:
    sub, src, res = _autograder(tmp_path, f'problem = "{PROBLEM}"\nmode = "run"\n')
    _write(sub / "my-upload" / "solution.py", CORRECT)
    _write(sub / "my-upload" / "scratch.py", SYNTAX_ERROR)
    done = _gradescope(sub, src, res)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(res.read_text(encoding="utf-8"))
    problem = load_problem(PROBLEM)
    expected_max = problem.scoring.visible_tests + problem.scoring.requirements
    assert data["score"] == pytest.approx(expected_max)
    assert data["tests"] and all(t["status"] == "passed" for t in data["tests"])
    assert {t["visibility"] for t in data["tests"]} == {"visible"}  # run mode: examples only


def test_gradescope_without_a_python_file_scores_zero(tmp_path: Path) -> None:
    sub, src, res = _autograder(tmp_path, None)
    _write(sub / "answer.txt", "42")
    done = _gradescope(sub, src, res, "--problem", PROBLEM)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(res.read_text(encoding="utf-8"))
    assert data["score"] == 0 and "no Python file" in data["output"]
    sc = load_problem(PROBLEM).scoring  # zero out of the problem's points, not out of 0
    assert data["extra_data"]["jaxjudge"][PROBLEM]["max_score"] == (
        sc.visible_tests + sc.hidden_tests + sc.requirements)


def test_gradescope_misconfigured_still_writes_results(tmp_path: Path) -> None:
    sub, src, res = _autograder(tmp_path, "mode = 'run'\n")
    _write(sub / "solution.py", CORRECT)
    done = _gradescope(sub, src, res)
    assert done.returncode == 1
    data = json.loads(res.read_text(encoding="utf-8"))
    assert data["score"] == 0 and "misconfigured" in data["output"]


def test_gradescope_refuses_without_a_sandbox_layer(tmp_path: Path) -> None:
    """On Gradescope the hidden tests sit beside the submission: no grade without the sandbox
    (the student gets no score rather than a grade from an unconfined run)."""
    sub, src, res = _autograder(tmp_path, f'problem = "{PROBLEM}"\nmode = "run"\n')
    _write(sub / "solution.py", CORRECT)
    done = _gradescope(sub, src, res, JAXJUDGE_SANDBOX_DISABLE="seccomp")
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(res.read_text(encoding="utf-8"))
    assert data["score"] == 0 and "sandbox layer(s) missing: seccomp" in data["output"]
    allowed = _gradescope(sub, src, res, "--unsafe-allow-missing-sandbox",
                          JAXJUDGE_SANDBOX_DISABLE="seccomp")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert json.loads(res.read_text(encoding="utf-8"))["score"] > 0
    assert "UNSAFE" in allowed.stderr
