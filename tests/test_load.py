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
