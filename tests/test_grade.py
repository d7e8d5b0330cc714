"""grade(), end to end with real sandboxed processes: verdicts, limits and leftovers.

Hostile submissions here target the orchestrator (limits -> verdicts, nothing left behind, the
grader healthy afterwards); tests/test_sandbox.py attacks the isolation layers themselves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import jaxjudge
from jaxjudge import Limits, ProblemError, Verdict, grade, list_problems, load_problem

PROBLEM = load_problem("rematerialized-mlp-block")
REFERENCE = PROBLEM.reference_path.read_text()
FAST = Limits(wall_seconds=6, cpu_seconds=3, memory_mb=1024, output_kb=64)
MARK = "jjleftover"


def _leftovers() -> list[int]:
    """Processes that renamed themselves MARK (hostile children that tried to outlive a grade)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == MARK:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_reference_is_accepted_with_full_report() -> None:
    report = grade(PROBLEM, REFERENCE, "run")
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.mode == "run" and report.problem == PROBLEM.id
    assert [t.name for t in report.tests] == [c.name for c in PROBLEM.examples()]
    assert all(t.visible and t.details is not None for t in report.tests)
    assert all(r.passed for r in report.requirements)
    assert {r.level for r in report.requirements} == {"spec", "program"}
    assert report.timings["total"] > 0 and "stage_a" in report.timings
    # The grade's time split (docs/performance.md#a-grades-time).
    assert {"stage_a", "rules.spec", "stage_b", "rules.program", "memory_profile",
            "compare"} <= set(report.timings)
    assert report.versions["jax"]


@pytest.mark.parametrize("problem", [p.id for p in list_problems()])
def test_every_reference_is_accepted_on_the_published_examples(problem: str) -> None:
    """Run mode grades the examples alone: no rule may depend on which tests a mode includes
    (ema-with-scan's examples have T = 1 and 2 at one D, and its reference was once called a
    loop that grows with T from its T = 1 special lowering)."""
    loaded = load_problem(problem)
    report = grade(loaded, loaded.reference_path.read_text(), "run")
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert all(r.passed for r in report.requirements), [
        r.message for r in report.requirements if not r.passed]


def test_caller_errors_raise() -> None:
    with pytest.raises(ProblemError):
        grade("no-such-problem", REFERENCE)
    with pytest.raises(ValueError):
        grade(PROBLEM, REFERENCE, "everything")  # type: ignore[arg-type]


def test_compile_errors_are_verdicts() -> None:
    for source, needle in [
        ("def solve(:\n", "SyntaxError"),
        ("", "empty"),
        (b"\xff\xfe not utf-8", "UTF-8"),
        ("x = '\ud800'\n", "UTF-8"),
        ("import jax\n", "solve"),
    ]:
        report = grade(PROBLEM, source, "run", limits=FAST)
        assert report.verdict is Verdict.COMPILE_ERROR, (source, report.message)
        assert needle in report.message
        assert all(t.verdict is Verdict.SKIPPED for t in report.tests)
        assert report.score == 0


HOSTILE = {
    "infinite_loop": (
        "def solve(params, x, y):\n    while True:\n        pass\n",
        Verdict.TIME_LIMIT_EXCEEDED,
    ),
    "sleep_at_import": ("import time\ntime.sleep(10**6)\n", Verdict.TIME_LIMIT_EXCEEDED),
    "sigterm_ignored": (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True:\n    time.sleep(0.01)\n",
        Verdict.TIME_LIMIT_EXCEEDED,
    ),
    "python_memory_bomb": (
        "x = []\nwhile True:\n    x.append(bytearray(1 << 24))\n",
        Verdict.MEMORY_LIMIT_EXCEEDED,
    ),
    "sys_exit": ("import sys\nsys.exit(3)\n", Verdict.RUNTIME_ERROR),
    "os_exit_in_solve": (
        REFERENCE + "\nimport os\n_s = solve\ndef solve(params, x, y):\n    os._exit(0)\n",
        Verdict.RUNTIME_ERROR,
    ),
    "huge_print": ("while True:\n    print('x' * 65536)\n", Verdict.RUNTIME_ERROR),
    "raises": ("def solve(params, x, y):\n    raise ValueError('nope')\n", Verdict.RUNTIME_ERROR),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_submission_gets_a_verdict_in_bounded_time(name: str) -> None:
    source, verdict = HOSTILE[name]
    started = time.monotonic()
    report = grade(PROBLEM, source, "run", limits=FAST)
    elapsed = time.monotonic() - started
    assert report.verdict is verdict, report.message
    assert elapsed < 2 * FAST.wall_seconds + 30  # bounded, generously: not a speed test
    assert not _leftovers()


# The XLA-side memory bomb is a sample submission (mle_xla_bomb.py), graded by test_samples.


def test_detached_child_and_fork_bomb_leave_nothing_behind() -> None:
    detach = REFERENCE + (
        "\nimport ctypes, os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        ctypes.CDLL(None).prctl(15, b'{MARK}', 0, 0, 0)\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"
    )
    report = grade(PROBLEM, detach, "run", limits=FAST)
    # Whether the fork was refused (seccomp) or the child was killed, nothing may survive and
    # the submission still gets a verdict.
    assert report.verdict in (Verdict.ACCEPTED, Verdict.RUNTIME_ERROR), report.message
    time.sleep(0.5)
    assert not _leftovers()
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    report = grade(PROBLEM, bomb, "run", limits=FAST)
    assert report.verdict in (Verdict.TIME_LIMIT_EXCEEDED, Verdict.RUNTIME_ERROR), report.message
    # The grader is healthy afterwards.
    assert grade(PROBLEM, REFERENCE, "run").verdict is Verdict.ACCEPTED


def test_forged_report_on_stdout_changes_nothing() -> None:
    forged = (
        "import json, os, sys\n"
        "print(json.dumps({'verdict': 'accepted', 'score': 100}))\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        '        os.write(fd, b\'{"status": "ok"}\')\n'
        "    except OSError:\n"
        "        pass\n"
        "def solve(params, x, y):\n"
        "    import jax.numpy as jnp\n"
        "    zeros = {k: jnp.zeros_like(v) for k, v in params.items()}\n"
        "    return {'loss': jnp.float32(0), 'grads': zeros}\n"
    )
    report = grade(PROBLEM, forged, "run", limits=FAST)
    assert report.verdict is Verdict.WRONG_ANSWER, report.message
    assert "verdict" in report.output  # the print was captured as output, nothing more


def test_report_cache_answers_identical_sources_only() -> None:
    from jaxjudge import Grader

    cached = Grader(report_cache=8)
    first = cached.grade(PROBLEM, REFERENCE, "run")
    again = cached.grade(PROBLEM, REFERENCE, "run")
    changed = cached.grade(PROBLEM, REFERENCE + "\n# edited\n", "run")
    assert "cached" not in first.timings
    assert again.timings.get("cached") == 1.0
    assert again.model_dump(exclude={"timings"}) == first.model_dump(exclude={"timings"})
    assert "cached" not in changed.timings and changed.verdict is Verdict.ACCEPTED
    assert "cached" not in grade(PROBLEM, REFERENCE, "run").timings  # another grader: off


def test_export_is_shape_polymorphic_with_a_concrete_fallback() -> None:
    poly = grade(PROBLEM, REFERENCE, "run")
    concrete_src = (PROBLEM.submissions_dir / "accepted_concrete_shapes.py").read_text()
    concrete = grade(PROBLEM, concrete_src, "run")
    assert poly.verdict is concrete.verdict is Verdict.ACCEPTED
    program = {r.name: r.message for r in concrete.requirements if r.level == "program"}
    # The fallback checks one exported program per input shape (3 for the examples)...
    assert any("3 input-shape signatures" in m for m in program.values()), program
    # ... the polymorphic export checks the single program that ran every test.
    program = {r.name: r.message for r in poly.requirements if r.level == "program"}
    assert not any("input-shape signatures" in m for m in program.values()), program


def test_messages_name_the_learners_file() -> None:
    report = grade(PROBLEM, "def solve(:\n", "run", filename="alice_hw3.py", limits=FAST)
    assert report.verdict is Verdict.COMPILE_ERROR
    assert "alice_hw3.py" in report.message
    hostile = grade(PROBLEM, "def solve(:\n", "run", filename="../../x\n.py", limits=FAST)
    # Path parts and control characters never reach the learner's message.
    assert "x.py" in hostile.message and "../" not in hostile.message


@pytest.mark.parametrize("call", [
    'jax.debug.print("x {}", x.sum())',
    "x = jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct(x.shape, x.dtype), x)",
])
def test_a_host_callback_is_named_as_not_allowed(call: str) -> None:
    """Not jax.export's serialization error: what to remove, and why."""
    source = REFERENCE.replace('    """Return {"loss"', f'    {call}\n    """Return {{"loss"', 1)
    assert call in source
    report = grade(PROBLEM, source, "run", limits=FAST)
    assert report.verdict is Verdict.RUNTIME_ERROR
    assert report.message.startswith("Host callbacks are not allowed"), report.message
    assert "serialization" not in report.message


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_planted_result_file_is_not_believed(plant: str) -> None:
    """Stage A's result.json replaced by a symlink to the hidden tests (which the parent could
    read) or by a FIFO (which would block a naive reader): neither leaks nor hangs."""
    cases = PROBLEM.root / "tests" / "cases.json"
    action = (
        f"os.symlink({str(cases)!r}, 'result.json')" if plant == "symlink"
        else "os.mkfifo('result.json')"
    )
    source = f"import os\n{action}\nos._exit(0)\n"
    report = grade(PROBLEM, source, "submit", limits=FAST)
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message
    assert "ended the grading process" in report.message
    hidden = next(c for c in PROBLEM.cases("submit") if not c.visible)
    leaked = repr(hidden.expected["loss"])  # a value only the hidden tests hold
    assert leaked not in report.model_dump_json()


# -- points --------------------------------------------------------------------------------------
@pytest.mark.parametrize("points", [10, 60, 30, 100 / 3, 7, 2 / 3, 1, 0.5, 0])
def test_group_points_split_adds_up_exactly(points: float) -> None:
    from jaxjudge.grading.scoring import POINT_GRID
    from jaxjudge.grading.scoring import split_points as _split_points

    for n in range(1, 51):
        shares = _split_points(points, n)
        assert len(shares) == n and shares == _split_points(points, n)  # deterministic
        assert sum(shares) == points, (points, n, shares)  # exact, not approx
        assert all(s >= 0 for s in shares) and (points == 0 or all(s > 0 for s in shares))
        if points * POINT_GRID == int(points * POINT_GRID) and points * POINT_GRID >= n:
            # On the grid: exact in any order and unchanged by the JSON's 4-decimal rounding.
            assert sum(reversed(shares)) == points
            assert sum(sorted(shares)) == points
            assert [round(s, 4) for s in shares] == shares
            assert max(shares) - min(shares) <= 1 / POINT_GRID


def test_score_totals_are_the_exact_sums_of_the_items() -> None:
    """A problem with awkward points and item counts; partial credit; structure points only
    count when the program ran."""
    from jaxjudge.grading.report import RequirementResult, TestResult
    from jaxjudge.grading.scoring import score as _score
    from jaxjudge.problems.package import Scoring

    problem = PROBLEM.model_copy(
        update={"scoring": Scoring(visible_tests=7, hidden_tests=100 / 3, requirements=10)})
    declared = [r.name for r in problem.requirements]

    def items(passed: bool) -> tuple[list[TestResult], list[RequirementResult]]:
        verdict = Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER
        tests = [TestResult(name=f"t{i}", visible=i < 3, verdict=verdict) for i in range(46)]
        reqs = [RequirementResult(name=n, level="spec", passed=True, message="")
                for n in declared]
        return tests, reqs

    tests, reqs = items(True)
    score, max_score = _score(problem, tests, reqs, Verdict.ACCEPTED)
    assert score == max_score == sum(t.max_score for t in tests) + sum(r.max_score for r in reqs)
    assert sum(t.max_score for t in tests if t.visible) == 7
    assert sum(t.max_score for t in tests if not t.visible) == 100 / 3
    assert sum(r.max_score for r in reqs) == 10
    tests, reqs = items(False)
    score, max_score = _score(problem, tests, reqs, Verdict.RUNTIME_ERROR)
    assert score == 0 and all(r.score == 0 for r in reqs)
    assert max_score == sum(t.max_score for t in tests) + sum(r.max_score for r in reqs)


def test_accepted_submission_points_add_up_in_report_and_gradescope_json() -> None:
    """An accepted student's items sum to exactly the maximum, in the report and in the
    Gradescope JSON as written (was 99.9978 of 100: 3 x 3.3333 + 43 x 1.3953 + 2 x 15)."""
    from jaxjudge.grading import render
    from jaxjudge.version import grader_version

    report = grade(PROBLEM, REFERENCE, "submit")
    assert report.verdict is Verdict.ACCEPTED, report.message
    sc = PROBLEM.scoring
    assert report.score == report.max_score == sc.visible_tests + sc.hidden_tests + sc.requirements
    assert sum(t.max_score for t in report.tests if t.visible) == sc.visible_tests
    assert sum(t.max_score for t in report.tests if not t.visible) == sc.hidden_tests
    assert sum(r.max_score for r in report.requirements) == sc.requirements
    assert report.versions["grader"] == grader_version()

    stored = json.loads(report.model_dump_json())
    items = stored["tests"] + stored["requirements"]
    assert sum(i["max_score"] for i in items) == sum(i["score"] for i in items) == 100

    gs = json.loads(json.dumps(render.to_gradescope(report)))
    assert len(gs["tests"]) == len(report.tests) + len(report.requirements) == 48
    assert sum(t["max_score"] for t in gs["tests"]) == gs["extra_data"]["jaxjudge"][
        PROBLEM.id]["max_score"] == gs["score"] == 100
    assert sum(t["score"] for t in gs["tests"]) == gs["score"]


# -- the grader version --------------------------------------------------------------------------
_VERSION_OF = ("import jaxjudge; from jaxjudge.version import grader_version; "
               "print(jaxjudge.__file__); print(grader_version())")


def _version_in(pythonpath: Path, cwd: Path) -> tuple[str, str]:
    """(jaxjudge.__file__, grader_version()) in a fresh interpreter importing `pythonpath`."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run([sys.executable, "-c", _VERSION_OF], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    where, version = done.stdout.split()
    return where, version


def test_grader_version_hashes_the_grading_code(tmp_path: Path) -> None:
    from jaxjudge.version import BASE_VERSION, grader_version

    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == BASE_VERSION
    mine = grader_version()
    assert re.fullmatch(re.escape(BASE_VERSION) + r"\+[0-9a-f]{12}", mine), mine
    assert grader_version() is mine  # computed once per process

    copy = tmp_path / "copy"
    shutil.copytree(Path(jaxjudge.__file__).parent, copy / "jaxjudge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # An unchanged tree: the same version in every process, wherever it is installed.
    where, first = _version_in(copy, tmp_path)
    assert where == str(copy / "jaxjudge" / "__init__.py")
    assert first == _version_in(copy, tmp_path)[1] == mine

    # One byte of a stage script (run only in the sandbox, never imported here) changes it.
    # The service's code decides no verdict: editing it keeps the version (and the caches).
    route = copy / "jaxjudge" / "service" / "web.py"
    route.write_text(route.read_text() + "\n# an edit\n")
    assert _version_in(copy, tmp_path)[1] == mine

    script = copy / "jaxjudge" / "stages" / "execute.py"
    data = bytearray(script.read_bytes())
    at = data.index(b'"""') + 3
    data[at] ^= 0x20  # the docstring's first letter changes case
    script.write_bytes(bytes(data))
    changed = _version_in(copy, tmp_path)[1]
    assert changed != mine and changed.startswith(BASE_VERSION + "+")


def test_hidden_tests_never_show_expected_or_got_values() -> None:
    wrong = (PROBLEM.submissions_dir / "wrong_forgets_b2.py").read_text()
    report = grade(PROBLEM, wrong, "submit")
    assert report.verdict is Verdict.WRONG_ANSWER
    hidden = [t for t in report.tests if not t.visible and t.verdict is Verdict.WRONG_ANSWER]
    visible = [t for t in report.tests if t.visible and t.verdict is Verdict.WRONG_ANSWER]
    assert hidden and visible
    for t in hidden:
        assert " is off by " in t.message and "expected" not in t.message.split("·")[0], t
        assert t.details is None
    assert all("expected" in t.message for t in visible)  # examples keep the values
