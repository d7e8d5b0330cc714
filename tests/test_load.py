"""Grades on a loaded machine (a CPU hog beside them), with the hostile submissions of
bench/data/hostile/: a loaded machine may make a grade slower, never give another verdict,
an internal_error, or leave a work tree or a process behind.

Each grade runs in a child process whose temporary directory (TMPDIR: the grades' work dirs and
the warm pool's spool dirs) is the test's own, so that what is left there is this test's alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CpuHog

from jaxjudge.isolation import sandbox

REPO = Path(__file__).resolve().parent.parent
HOSTILE = REPO / "bench" / "data" / "hostile"
PROBLEM = "traced-learning-rate-schedule"

GRADE_ALL = r"""
import json, sys
from pathlib import Path
from jaxjudge import Grader, load_problem

problem = load_problem(sys.argv[1])
pool = sys.argv[2] == "pool"
out = {}
with Grader(warm_pool=1 if pool else False, program_cache=0) as g:
    for path in sys.argv[3:]:
        r = g.grade(problem, Path(path).read_bytes())
        out[Path(path).name] = [r.verdict.value, r.message[:300]]
print(json.dumps(out))
"""


def grade_in_child(tmp: Path, mode: str, files: list[Path]) -> dict[str, list[str]]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("JAXJUDGE_WORK_DIR", None)
    proc = subprocess.run([sys.executable, "-c", GRADE_ALL, PROBLEM, mode, *map(str, files)],
                          env=env, cwd=tmp, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["cold", "pool"])
def test_deep_trees_leave_nothing_whatever_the_timing(tmp_path: Path, mode: str) -> None:
    """Deep trees (past PATH_MAX, read-only and unsearchable levels) in the job dir and in /tmp,
    one still being built by a thread when the grade goes on, one cut short by the CPU limit,
    graded beside a CPU hog: the verdicts are those of an idle machine and the temporary
    directory is empty afterwards."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    files = [HOSTILE / "deep_trees.py", HOSTILE / "deep_trees_until_killed.py"]
    with CpuHog(4, seconds=300):
        got = grade_in_child(tmp, mode, files)
    assert got["deep_trees.py"][0] == "wrong_answer", got
    assert got["deep_trees_until_killed.py"][0] == "time_limit_exceeded", got
    assert sorted(os.listdir(tmp)) == []


@pytest.mark.slow
def test_the_int_division_schedule_is_a_wrong_answer_under_load(tmp_path: Path) -> None:
    """The submission that once got internal_error under load: graded cold and through the
    pool beside a CPU hog, it is a wrong answer every time."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    files = [HOSTILE / "wrong_integer_division.py", HOSTILE / "memory_bomb_at_import.py"]
    with CpuHog(6, seconds=300):
        for mode in ("cold", "pool"):
            got = grade_in_child(tmp, mode, files)
            assert got["wrong_integer_division.py"][0] == "wrong_answer", got
            assert got["memory_bomb_at_import.py"][0] == "memory_limit_exceeded", got
    assert sorted(os.listdir(tmp)) == []


LOCKS_GONE_FOR_A_MOMENT = r"""
import json, sys, threading, time
from pathlib import Path
from jaxjudge import Grader, load_problem
from jaxjudge.isolation import sandbox

state, source, mode = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), sys.argv[3]
problem = load_problem("traced-learning-rate-schedule")
with Grader(warm_pool=1 if mode == "pool" else False, program_cache=0) as g:
    assert sandbox.protections()["uid_pool"]["active"]  # detected with the lock dir in place
    away = state.with_name("state-away")
    state.rename(away)
    state.write_text("not a directory")  # every sandbox uid is out of reach until restored

    def restore():
        time.sleep(1.5)
        state.unlink()
        away.rename(state)

    threading.Thread(target=restore).start()
    r = g.grade(problem, source)
print(json.dumps([r.verdict.value, r.message, r.timings]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["cold", "pool"])
def test_a_sandbox_that_cannot_start_for_a_moment_is_no_internal_error(
        tmp_path: Path, mode: str) -> None:
    """A stage's sandbox that cannot start (here: no sandbox uid can be locked for 1.5 s, as
    when every uid is busy on a loaded machine) says nothing about the submission. It is
    launched again after a pause; the grade is slower, and still a wrong answer."""
    if not sandbox.protections()["uid_pool"]["active"]:
        pytest.skip("the uid pool layer is inactive: no uid locks to take away")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    # Locks of its own, so uids of its own: a uid is locked before it is used, and its holder
    # kills whatever of it still runs (other graders on this machine use the default range).
    env = {**os.environ, "JAXJUDGE_SANDBOX_STATE_DIR": str(state), "TMPDIR": str(tmp_path),
           "JAXJUDGE_SANDBOX_UID_BASE": "65200", "JAXJUDGE_SANDBOX_UID_COUNT": "8"}
    proc = subprocess.run(
        [sys.executable, "-c", LOCKS_GONE_FOR_A_MOMENT, str(state),
         str(HOSTILE / "wrong_integer_division.py"), mode],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdict, message, timings = json.loads(proc.stdout.strip().splitlines()[-1])
    assert verdict == "wrong_answer", message
    if mode == "cold":  # the pool's zygotes hold their uids already: its stages need none
        assert timings.get("stage_a.setup_retries", 0) >= 1, timings
