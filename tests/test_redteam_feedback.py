"""Red team of the learner feedback of #23, as a hostile learner: custom inputs built to crash
the checks (500s, tracebacks) or slip a non-finite value past them, through the library, the
CLI and HTTP on a real server."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from api_fixtures import PROBLEM, Server, wait_done

from jaxjudge import Grader, grade, load_problem
from jaxjudge.grading.compare import non_finite_output
from jaxjudge.grading.custom import CustomInputError, custom_cases
from jaxjudge.grading.report import Verdict
from jaxjudge.service.owner_view import HIDDEN, without_source
from jaxjudge.service.queue import grading_function, run_grade

MLP = load_problem(PROBLEM)
PARAMS = {"w1": [[0.5, -0.3], [0.1, 0.4]], "b1": [0.0, 0.1],
          "w2": [[0.2, -0.5], [0.7, 0.3]], "b2": [0.05, -0.05]}
GOOD = {"params": PARAMS, "x": [[1.0, 2.0]], "y": [[0.0, 1.0]]}


def nested(depth: int) -> Any:
    value: Any = 1.0
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("redteam23")
    srv = Server(tmp, database_url=f"sqlite:///{tmp}/r.db", workers=1,
                 auth_tokens="tok-a, tok-b", rate_limit_per_minute=1000)
    try:
        yield srv
    finally:
        srv.stop()


# -- Run on my own input ----------------------------------------------------------------------
@pytest.mark.parametrize(("given", "why"), [
    # An integer too large for a float: math.isfinite raised OverflowError (a 500 over HTTP).
    ({**GOOD, "x": [[10**400, 1.0]]}, "finite"),
    # Finite as a Python float, inf as float32.
    ({**GOOD, "x": [[1e39, 1.0]]}, "finite in float32"),
    ({**GOOD, "params": {**PARAMS, "b2": [-3.5e38, 0.0]}}, "finite in float32"),
    # Nested past the recursion limit: RecursionError (a 500 over HTTP).
    ({**GOOD, "x": nested(3000)}, "expected 2 dimensions \\(B, D\\), got more"),
    ({**GOOD, "x": [[[1.0], [2.0]]]}, "expected 2 dimensions \\(B, D\\), got more"),
    # Keys that are not names (the library takes any dict): TypeError from sorted().
    ({**GOOD, 1: 2}, "exactly the arguments"),
    ({**GOOD, "params": {**PARAMS, 0: [1.0]}}, "must be a dict with keys"),
])
def test_hostile_custom_inputs_are_refused_with_a_reason(given: Any, why: str) -> None:
    with pytest.raises(CustomInputError, match=why):
        custom_cases(MLP, [given])


def test_library_callers_may_pass_numpy_and_jax_arrays() -> None:
    """grade(custom_inputs=) from Python: arrays were refused as "ndarray is not a number" (and
    np.float32 scalars as "float32 is not a number"); they are taken as the lists they hold."""
    import jax.numpy as jnp

    given = {"params": {**PARAMS, "b1": np.asarray([0.0, 0.5], np.float32)},
             "x": jnp.asarray([[1.0, 2.0]]), "y": np.float32(0.5) * np.ones((1, 2), np.float32)}
    (case,) = custom_cases(MLP, [given])
    assert case.inputs == {"params": {**PARAMS, "b1": [0.0, 0.5]}, "x": [[1.0, 2.0]],
                           "y": [[0.5, 0.5]]}
    assert json.dumps(case.inputs)  # what the plan hands stage B
    with pytest.raises(CustomInputError, match="bool is not a number"):
        custom_cases(MLP, [{**GOOD, "x": np.ones((1, 2), bool)}])


def test_the_largest_finite_float32_is_still_accepted() -> None:
    edge = {**GOOD, "x": [[3.4028234663852886e38, -3.4028234663852886e38]]}
    assert custom_cases(MLP, [edge])[0].inputs["x"] == edge["x"]


def test_an_input_the_reference_overflows_on_is_not_compared() -> None:
    """3e38 is a finite float32, but the reference's squared error on it is inf and its
    gradients NaN: compared, the reference itself was a wrong answer on its own output."""
    huge = {**GOOD, "x": [[3e38, -3e38]]}
    report = grade(MLP, MLP.reference_path.read_bytes(), "run", custom_inputs=[GOOD, huge])
    fine, overflowed = (t for t in report.tests if t.custom)
    assert fine.verdict is Verdict.ACCEPTED
    assert overflowed.verdict is Verdict.SKIPPED, overflowed.message
    assert "is not finite" in overflowed.message and "not compared" in overflowed.message
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert non_finite_output({"a": [[1.0, 2.0]], "b": {"c": [0.0, float("nan")]}}) == "b.c"
    assert non_finite_output({"a": [1.0], "b": None}) is None


def test_an_input_at_a_probe_shape_leaves_the_growth_check_as_it_was() -> None:
    """The judge exports per-example clipping at B = 1 to 6 (D = 3) to see whether the
    program grows with B; a learner's input at B = 5 made that shape "only the learner's", and
    its program was dropped from the check ("80 and 180 operations for B=3 and 7")."""
    clip = load_problem("per-example-gradient-clipping")
    at_probe = {"params": {"w": [0.1, -0.2, 0.3], "b": 0.5}, "x": [[1.0, 2.0, 3.0]] * 5,
                "y": [0.5] * 5, "max_norm": 1.0}
    looped = (clip.submissions_dir / "req_python_loop.py").read_bytes()
    report = grade(clip, looped, "run", custom_inputs=[at_probe])
    (req,) = report.requirements
    assert not req.passed and "for B=1, 2, 3, 4, 5 and 6" in req.message, req.message
    assert [t.verdict for t in report.tests if t.custom] == [Verdict.ACCEPTED]


@pytest.mark.parametrize(("given", "why"), [
    ("deep.json", "nested too deeply"),  # RecursionError in json.loads: a traceback
    ("/dev/zero", "larger than 1 MiB"),  # read whole: memory until killed
])
def test_the_cli_refuses_a_hostile_input_file_with_exit_2(tmp_path: Path, given: str,
                                                          why: str) -> None:
    path = tmp_path / given if given == "deep.json" else Path(given)
    if given == "deep.json":
        path.write_text("[" * 100_000 + "]" * 100_000)
    proc = subprocess.run(
        [sys.executable, "-m", "jaxjudge", "grade", "-p", PROBLEM, "--mode", "run",
         "--input", str(path), str(MLP.reference_path)],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert why in proc.stderr and "Traceback" not in proc.stderr


def test_http_refuses_what_crashed_the_checks_with_422(server: Server) -> None:
    body = {"problem_id": PROBLEM, "source": "def solve(:\n", "mode": "run"}
    with server.client("tok-a") as c:
        before = c.get("/v1/submissions").json()["items"]
        # Raw JSON: an integer literal with 400 digits, and lists 900 deep (under the JSON
        # decoder's own limit, over the recursion left for the checks).
        raw = json.dumps({**body, "custom_inputs": [{**GOOD, "x": "X"}]})
        for x in ("[[1" + "0" * 400 + ", 2.0]]", "[" * 900 + "1.0" + "]" * 900):
            r = c.post("/v1/submissions", content=raw.replace('"X"', x),
                       headers={"content-type": "application/json"})
            assert r.status_code == 422, r.text
            assert "custom input 1: x:" in r.json()["message"]
        r = c.post("/v1/submissions", json={**body, "custom_inputs": [{**GOOD, "x": [[1e39, 1]]}]})
        assert r.status_code == 422 and "finite in float32" in r.json()["message"]
        assert c.get("/v1/submissions").json()["items"] == before  # nothing was stored


# -- Ownership: another owner never reads the source, not even the lines a traceback quotes -------
LEAKY = '''import warnings
print("printed SECRET_PRINT")
warnings.warn("careful")  # SECRET_WARN
def solve(params, x, y):
    return params["nope"] @ x  # SECRET_TRACE
'''


def test_traceback_source_lines_are_the_owners_only() -> None:
    text = ('solve raised an error while tracing:\nFile "submission.py", line 5, in solve\n'
            '    return params["nope"] @ x  # SECRET\n           ~~~~~~^^^^^^^^\n'
            "KeyError: 'nope'\n"
            'File "submission.py", line 2\n    def f(:\n          ^\nSyntaxError: invalid syntax')
    shown = without_source(text)
    assert "SECRET" not in shown and "def f(:" not in shown
    assert shown.splitlines() == [
        "solve raised an error while tracing:", 'File "submission.py", line 5, in solve', HIDDEN,
        "KeyError: 'nope'", 'File "submission.py", line 2', HIDDEN, "SyntaxError: invalid syntax"]
    assert without_source("no traceback\n    indented") == "no traceback\n    indented"


def test_another_owner_reads_no_source_line_nor_output(server: Server) -> None:
    with server.client("tok-a") as a, server.client("tok-b") as b:
        made = a.post("/v1/submissions", json={"problem_id": PROBLEM, "source": LEAKY,
                                               "mode": "run"})
        assert made.status_code == 202, made.text
        own = wait_done(a, made.json()["id"])
        assert own["verdict"] == "runtime_error", own["report"]["message"]
        # The owner gets every line back: the quoted source and what the program printed.
        assert "SECRET_TRACE" in own["report"]["message"]
        assert "SECRET_PRINT" in own["report"]["output"]
        theirs = b.get(f"/v1/submissions/{made.json()['id']}")
        assert theirs.status_code == 200 and "SECRET" not in theirs.text, theirs.text
        report = theirs.json()["report"]
        assert report["verdict"] == own["report"]["verdict"] and report["output"] == ""
        assert 'File "submission.py", line 5' in report["message"] and HIDDEN in report["message"]
        assert "SECRET" not in b.get("/v1/submissions", params={"problem_id": PROBLEM}).text
        # Each reader's answer is its own: no shared cache may hand a's (source and all) to b.
        for reader, path in ((a, f"/v1/submissions/{made.json()['id']}"),
                             (b, "/v1/submissions?mine=true")):
            headers = reader.get(path).headers
            assert headers["cache-control"] == "private, no-store"
            assert headers["vary"] == "Authorization, Cookie"
    assert "SECRET" not in server.log()


def test_an_idempotency_key_replayed_with_other_custom_inputs_is_422(server: Server) -> None:
    """A retried POST returns the first submission only if it is the same request: another
    input under the same key was answered with the first input's submission."""
    body = {"problem_id": PROBLEM, "source": "def solve(:\n", "mode": "run",
            "custom_inputs": [GOOD]}
    other = {**GOOD, "x": [[3.0, 4.0]]}
    with server.client("tok-a") as a:
        key = {"Idempotency-Key": "redteam23-replay"}
        first = a.post("/v1/submissions", json=body, headers=key)
        assert first.status_code == 202, first.text
        again = a.post("/v1/submissions", json=body, headers=key)
        assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
        changed = a.post("/v1/submissions", json={**body, "custom_inputs": [other]},
                         headers=key)
        assert changed.status_code == 422, changed.text
        assert first.json()["id"] in changed.json()["message"]
        dropped = a.post("/v1/submissions", json={**body, "custom_inputs": None}, headers=key)
        assert dropped.status_code == 422, dropped.text


def test_stored_inputs_the_judge_no_longer_accepts_are_not_an_internal_error() -> None:
    """Inputs are checked when submitted; one accepted then (1e39 before this round's float32
    check, or before a package narrowed its constraints) reached the worker's grade as a
    CustomInputError: internal_error, "a bug in the judge"."""
    stored = json.dumps([{**GOOD, "x": [[1e39, 1.0]]}])
    report = run_grade(grading_function(Grader()), PROBLEM, b"def solve(:\n", "run", stored)
    assert report.verdict is Verdict.COMPILE_ERROR, report.message
    refused = [t for t in report.tests if t.custom]
    assert [t.verdict for t in refused] == [Verdict.SKIPPED]
    assert "not run" in refused[0].message and "finite in float32" in refused[0].message


# -- Value constraints: the statement's bounds as data, checked on a learner's own inputs --------
@pytest.mark.parametrize(("problem", "change", "why"), [
    ("ema-with-scan", {"alpha": 0.99},
     r"alpha holds 0.99, outside the constraints \(0.05 <= alpha <= 0.95\)"),
    ("pad-and-mask-to-bucket", {"lengths": "L+1"}, r"lengths <= L\)"),
    ("per-example-gradient-clipping", {"max_norm": 0.0}, r"0.0001 <= max_norm <= 1000"),
    ("traced-learning-rate-schedule", {"step": -1}, r"0 <= step <= 2000"),
])
def test_values_outside_the_statements_bounds_are_refused(problem: str, change: dict[str, Any],
                                                          why: str) -> None:
    """Out of contract, the reference computes what the statement does not promise (a NaN for
    max_norm = 0), and a correct program may differ from it: such an input is refused."""
    prob = load_problem(problem)
    example = {k: (v.tolist() if hasattr(v, "tolist") else v)
               for k, v in prob.cases("run")[0].inputs.items()}
    assert custom_cases(prob, [example])  # the example itself is within every bound
    if change.get("lengths") == "L+1":
        change = {"lengths": [len(example["x"][0]) + 1] * len(example["lengths"])}
    with pytest.raises(CustomInputError, match=why):
        custom_cases(prob, [{**example, **change}])


def test_every_test_input_is_within_its_problems_declared_values() -> None:
    """The bounds are the statements' own: every test of every problem satisfies them (the
    ones over the 4,096 numbers a custom input may hold are not checked here)."""
    checked = 0
    for root in sorted(p for p in (Path(MLP.root).parent).iterdir() if p.is_dir()):
        prob = load_problem(root.name)
        for case in prob.cases("submit"):
            given = {k: (v.tolist() if hasattr(v, "tolist") else v)
                     for k, v in case.inputs.items()}
            try:
                custom_cases(prob, [given])
            except CustomInputError as exc:
                assert "more than" in str(exc), (prob.id, case.name, str(exc))
            else:
                checked += 1
    assert checked > 400


def test_declared_values_must_name_inputs_and_dimensions(tmp_path: Path) -> None:
    import shutil

    from jaxjudge.problems.package import ProblemError

    src = Path(MLP.root).parent / "ema-with-scan"
    for values, why in (("nope = [0, 1]", "'nope' is not an input"),
                        ('x = [0, "Q"]', "'Q' is not a declared dimension"),
                        ("alpha = [1, 0]", "low 1.0 > high 0.0")):
        dst = tmp_path / str(len(list(tmp_path.iterdir()))) / src.name
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("submissions"))
        toml = dst / "problem.toml"
        declared = "alpha = [0.05, 0.95]\nx = [-1000.0, 1000.0]"  # ema's values table
        assert declared in toml.read_text()
        toml.write_text(toml.read_text().replace(declared, values))
        with pytest.raises(ProblemError, match=why):
            load_problem(dst)


def test_a_nul_in_an_id_or_a_filter_is_a_4xx_on_postgresql(tmp_path: Path) -> None:
    """PostgreSQL refuses NUL in any text parameter: `GET /v1/submissions/%00x` and
    `?mine=true&problem_id=a%00b` were 500s there (SQLite simply found nothing)."""
    from api_fixtures import postgres_server

    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_server())
        except LookupError as exc:
            pytest.skip(str(exc))
        srv = Server(tmp_path, database_url=url, workers=1)
        stack.callback(srv.stop)
        with srv.client() as c:
            assert c.get("/v1/submissions/%00x").status_code == 404
            for query in ("problem_id=%00", "mine=true&problem_id=a%00b"):
                r = c.get(f"/v1/submissions?{query}")
                assert r.status_code == 422 and "problem_id" in r.json()["message"], r.text
    assert "Traceback" not in srv.log()
