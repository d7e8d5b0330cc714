"""Run on my own input (#23 item 4): the learner's inputs are checked against the problem's
arguments and constraints, run beside the examples, compared with what the reference computes
on them, and worth no points."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxjudge import grade, list_problems, load_problem
from jaxjudge.grading.custom import _LARGEST, MAX_ELEMENTS, CustomInputError, custom_cases
from jaxjudge.grading.report import Verdict
from jaxjudge.problems.package import Problem

EMA = load_problem("ema-with-scan")
MLP = load_problem("rematerialized-mlp-block")
BLOCKS = load_problem("blockwise-attention-online-softmax")
GOOD = {"x": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "alpha": 0.5}
PARAMS = {"w1": [[0.5, -0.3], [0.1, 0.4]], "b1": [0.0, 0.1],
          "w2": [[0.2, -0.5], [0.7, 0.3]], "b2": [0.05, -0.05]}


@pytest.mark.parametrize(("problem", "given", "why"), [
    (EMA, {"x": [[1.0]]}, "exactly the arguments"),
    (EMA, {**GOOD, "extra": 1}, "exactly the arguments"),
    (EMA, {**GOOD, "x": [1.0, 2.0]}, "expected 2 dimensions"),
    (EMA, {**GOOD, "x": [[1.0, 2.0], [3.0]]}, "not rectangular"),
    (EMA, {**GOOD, "x": [[1.0, "2"]]}, "str is not a number"),
    (EMA, {**GOOD, "x": [[1.0, True]]}, "bool is not a number"),
    (EMA, {**GOOD, "x": [[float("nan")]]}, "finite"),
    (EMA, {**GOOD, "x": [[0.0] * 7]}, "D = 7 is outside the constraints"),
    (EMA, {**GOOD, "x": [[0.0]] * 49}, "T = 49 is outside the constraints"),
    (BLOCKS, {"q": [[0.0]] * 18, "k": [[0.0]] * 18, "v": [[0.0]] * 18},
     r"T = 18 is not a multiple of 4, as the constraints require \(16 <= T <= 32, T a multiple "
     r"of 4\)"),
    (MLP, {"params": {**PARAMS, "w2": [[0.2, -0.5, 1.0], [0.7, 0.3, 1.0]]},
           "x": [[1.0, 2.0]], "y": [[0.0, 0.0]]}, "D is 3 here but 2 elsewhere"),
    (MLP, {"params": {"w1": [[1.0]]}, "x": [[1.0]], "y": [[1.0]]}, "must be a dict with keys"),
])
def test_inputs_the_problem_does_not_promise_are_refused(problem, given, why) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CustomInputError, match=why):
        custom_cases(problem, [given])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_the_largest_finite_values_are_the_dtypes_own(dtype: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert _LARGEST[dtype] == float(ml_dtypes.finfo(dtype).max)


def test_counts_and_sizes_are_bounded() -> None:
    with pytest.raises(CustomInputError, match="between 1 and 3"):
        custom_cases(EMA, [GOOD] * 4)
    with pytest.raises(CustomInputError, match="between 1 and 3"):
        custom_cases(EMA, [])
    big = {"x": [[0.0] * 6] * 48, "alpha": 0.5}  # within the constraints: 288 numbers
    assert custom_cases(EMA, [big])[0].name == "custom-1"
    assert MAX_ELEMENTS >= 288


def test_a_custom_input_is_compared_with_the_reference_and_worth_nothing() -> None:
    wrong = (EMA.submissions_dir / "wrong_zero_init.py").read_bytes()
    report = grade(EMA, wrong, "run", custom_inputs=[GOOD])
    mine = [t for t in report.tests if t.custom]
    assert [t.name for t in mine] == ["custom-1"]
    t = mine[0]
    assert t.visible and t.details is not None and t.details.inputs == GOOD
    # The reference's EMA of the rows, x_0 first: 1, then 0.5*3 + 0.5*1 = 2, then 3.5.
    assert t.details.expected == {"ema": [[1.0, 2.0], [2.0, 3.0], [3.5, 4.5]]}
    assert t.verdict is Verdict.WRONG_ANSWER and t.score == t.max_score == 0.0
    examples = [x for x in report.tests if not x.custom]
    assert sum(x.max_score for x in examples) == EMA.scoring.visible_tests
    # Per-test time, measured by stage B around each test's run.
    assert all(x.seconds is not None and 0 <= x.seconds < 600 for x in report.tests)
    with pytest.raises(ValueError, match="mode 'run'"):
        grade(EMA, wrong, "submit", custom_inputs=[GOOD])


def test_the_cli_refuses_a_bad_input_before_grading(tmp_path: Path) -> None:
    given = tmp_path / "mine.json"
    given.write_text(json.dumps({"x": [[1.0]]}))
    proc = subprocess.run(
        [sys.executable, "-m", "jaxjudge", "grade", "-p", "ema-with-scan", "--mode", "run",
         "--input", str(given), str(EMA.reference_path)],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "exactly the arguments" in proc.stderr


def test_custom_inputs_through_the_http_api(tmp_path: Path) -> None:
    from api_fixtures import Server, wait_done

    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/c.db", workers=1)
    try:
        with srv.client() as c:
            body = {"problem_id": "ema-with-scan", "mode": "run",
                    "source": EMA.reference_path.read_text(), "custom_inputs": [GOOD]}
            bad = c.post("/v1/submissions", json={**body, "custom_inputs": [{"x": [[1.0]]}]})
            assert bad.status_code == 422 and "exactly the arguments" in bad.json()["message"]
            assert c.post("/v1/submissions", json={**body, "mode": "submit"}).status_code == 422
            made = c.post("/v1/submissions", json=body)
            assert made.status_code == 202, made.text
            report = wait_done(c, made.json()["id"])["report"]
            mine = [t for t in report["tests"] if t["custom"]]
            assert [t["name"] for t in mine] == ["custom-1"]
            assert mine[0]["verdict"] == "accepted"
            assert mine[0]["details"]["expected"] == {"ema": [[1.0, 2.0], [2.0, 3.0], [3.5, 4.5]]}
    finally:
        srv.stop()


def _hidden_input(problem: Problem) -> dict:
    """The smallest hidden test's inputs: valid by construction, never shown as an example."""
    shown = {c.name for c in problem.cases("run")}
    hidden = [c for c in problem.cases("submit") if c.name not in shown]
    return min(hidden, key=lambda c: len(json.dumps(c.inputs))).inputs


@pytest.mark.parametrize("problem_id", sorted(p.id for p in list_problems()))
def test_every_problem_runs_a_learners_input_against_its_reference(problem_id: str) -> None:
    """Item 4 on every problem: the reference computes the expected output of an input the
    learner gives (here a hidden test's, which the examples never show), and the reference
    itself, graded on it, gets it right, worth no points."""
    problem = load_problem(problem_id)
    given = _hidden_input(problem)
    report = grade(problem, problem.reference_path.read_bytes(), "run", custom_inputs=[given])
    assert report.verdict is Verdict.ACCEPTED, report.summary
    mine = [t for t in report.tests if t.custom]
    assert [t.name for t in mine] == ["custom-1"]
    t = mine[0]
    assert t.details is not None and t.details.expected is not None
    assert t.verdict is Verdict.ACCEPTED and t.max_score == 0.0


def test_every_test_of_every_problem_is_within_its_declared_constraints() -> None:
    """The tests keep the promises a learner's own inputs are held to (shapes, ranges, the
    values `constraints.values` declares): ema-with-scan's prices test once reached 1013.7
    where the statement says |x| <= 1e3, and an honest program that clips to the bound failed
    it. Tests with more numbers than a custom input may hold are left out (few)."""
    checked = 0
    for info in list_problems():
        problem = load_problem(info.id)
        for case in problem.cases("submit"):
            try:
                custom_cases(problem, [case.inputs])
            except CustomInputError as exc:
                assert f"more than {MAX_ELEMENTS} numbers" in str(exc), (info.id, case.name, exc)
                continue
            checked += 1
    assert checked > 300
