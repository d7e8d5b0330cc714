"""jaxjudge/cli/launch.py: a one-off grade's stages start before the CLI imports, and whatever the
command does with them (adopt, refuse, never get that far), nothing is left behind. Real
`jaxjudge` processes and real sandboxed stages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxjudge.cli.launch import problem_arg

ROOT = Path(__file__).resolve().parent.parent
JAXJUDGE = Path(sys.executable).parent / "jaxjudge"
PROBLEM = "rematerialized-mlp-block"
REFERENCE = ROOT / "problems" / PROBLEM / "reference.py"


@pytest.mark.parametrize(("argv", "expected"), [
    (["-p", "ema-with-scan", "f.py"], "ema-with-scan"),
    (["f.py", "--problem", "x"], "x"),
    (["--problem=y", "f.py"], "y"),
    (["-pz", "f.py"], None),  # a spelling left to the command's own parser
    (["f.py", "--", "-p", "x"], None),
    (["f.py", "-p"], None),
    (["f.py"], None),
])
def test_problem_arg(argv: list[str], expected: str | None) -> None:
    assert problem_arg(argv) == expected


def jaxjudge(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JAXJUDGE_WORK_DIR": str(work), "PYTHONPATH": str(ROOT)}  # this tree
    return subprocess.run([str(JAXJUDGE), *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def assert_nothing_left(work: Path) -> None:
    """No work dir and no process that was given one (the stages' trampolines name theirs)."""
    assert list(work.iterdir()) == []
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert str(work) not in ps.stdout


@pytest.mark.parametrize("args", [
    ["missing.py"],                        # the file cannot be read
    [str(REFERENCE), "--mode", "sideways"],  # a bad option value
    [str(REFERENCE), "--no-such-option"],    # the parser refuses
    [str(REFERENCE), "--help"],
])
def test_stages_started_for_a_command_that_fails_are_cleaned_up(tmp_path: Path,
                                                                 args: list[str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = jaxjudge(work, "grade", "-p", PROBLEM, *args)
    assert proc.returncode == (0 if "--help" in args else 2), proc.stderr
    assert_nothing_left(work)


def test_stages_are_adopted_whichever_problem_the_command_settles_on(tmp_path: Path) -> None:
    # Click keeps the last --problem; the launcher started stages for the first one. The
    # stages know nothing of a problem until their jobs, so equal limits are all that counts.
    work = tmp_path / "work"
    work.mkdir()
    proc = jaxjudge(work, "grade", "--problem=ema-with-scan", "-p", PROBLEM, str(REFERENCE),
                    "--mode", "run", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["problem"], report["verdict"]) == (PROBLEM, "accepted")
    assert_nothing_left(work)


def test_stages_under_other_limits_are_not_adopted(tmp_path: Path) -> None:
    other = tmp_path / "tighter" / PROBLEM  # a package's folder is named after its id
    shutil.copytree(ROOT / "problems" / PROBLEM, other)
    toml = other / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    assert "wall_seconds = 10.0" in text
    toml.write_text(text.replace("wall_seconds = 10.0", "wall_seconds = 9.0", 1),
                    encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    proc = jaxjudge(work, "grade", f"--problem={other}", "-p", PROBLEM, str(REFERENCE),
                    "--mode", "run", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["problem"], report["verdict"]) == (PROBLEM, "accepted")
    assert_nothing_left(work)


@pytest.mark.parametrize(("guessed", "adopted"), [(PROBLEM, True), ("tighter", False)])
def test_the_command_adopts_the_launchers_stages_only_under_equal_limits(
        tmp_path: Path, guessed: str, adopted: bool) -> None:
    """In-process, so that whether the grade took the launcher's stages can be seen: a grade
    that adopts them marks them, one that does not leaves them for the launcher to cancel."""
    from jaxjudge.cli.launch import start_stages
    from jaxjudge.cli.service import cli, register_commands

    if guessed == "tighter":
        other = tmp_path / "tighter" / PROBLEM  # a package's folder is named after its id
        shutil.copytree(ROOT / "problems" / PROBLEM, other)
        toml = other / "problem.toml"
        toml.write_text(toml.read_text(encoding="utf-8").replace(
            "wall_seconds = 10.0", "wall_seconds = 9.0", 1), encoding="utf-8")
        guessed = str(other)
    argv = ["grade", "-p", PROBLEM, str(REFERENCE), "--mode", "run", "--json"]
    started = start_stages(["-p", guessed, *argv[3:]])
    assert started is not None and started.a is not None and started.b is not None
    try:
        register_commands(argv)
        status = cli(argv, obj=started, standalone_mode=False)
    finally:
        started.close()
    assert status == 0
    assert started.adopted is adopted
    assert started.a is None and started.b is None  # taken by the grade, or cancelled
    assert not started.root.exists()


def test_the_launchers_limits_are_the_loaded_problems() -> None:
    """The launcher reads [limits] alone (jaxjudge/problems/limits.py): for every bundled
    problem, the same numbers the full load validates."""
    from jaxjudge.problems.limits import peek_limits
    from jaxjudge.problems.package import list_problems

    problems = list_problems()
    assert problems
    for problem in problems:
        peeked = peek_limits(problem.id)
        assert peeked is not None, problem.id
        assert (peeked.wall_seconds, peeked.cpu_seconds, peeked.memory_mb,
                peeked.output_kb) == (problem.limits.wall_seconds, problem.limits.cpu_seconds,
                                      problem.limits.memory_mb, problem.limits.output_kb)


@pytest.mark.parametrize("table", [
    "[limits]\nwall_seconds = 'ten'\n",
    "[limits]\nmemory_mb = 2048.5\n",
    "[limits]\nwall_clock = 10\n",
    "limits = 3\n",
    "[limits\n",
])
def test_odd_limits_leave_the_start_to_the_command(tmp_path: Path, table: str) -> None:
    from jaxjudge.problems.limits import PeekedLimits, peek_limits

    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "problem.toml").write_text(f"id = 'p'\n{table}", encoding="utf-8")
    assert peek_limits(str(folder)) is None
    (folder / "problem.toml").write_text("id = 'p'\n", encoding="utf-8")
    assert peek_limits(str(folder)) == PeekedLimits(60.0, 60.0, 2048, 256, problem_id="p")
    assert peek_limits("no-such-problem") is None


BLAS_THREADS = """
import os, sys
sys.argv = ["jaxjudge", "--help"]
from jaxjudge.cli import launch
try:
    launch.main()
except SystemExit:
    pass
import numpy
threads = [line for line in open("/proc/self/status") if line.startswith("Threads:")]
print(os.environ.get("OPENBLAS_NUM_THREADS"), threads[0].split()[1], file=sys.stderr)
"""


@pytest.mark.parametrize(("given", "expected"), [(None, ["1", "1"]), ("2", ["2"])])
def test_the_cli_starts_no_blas_thread_pool_unless_asked(given: str | None,
                                                         expected: list[str]) -> None:
    """numpy's OpenBLAS pool spins beside a one-off grade's stages for nothing: the CLI's own
    process keeps one thread, and a count the user set is theirs."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", BLAS_THREADS], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    blas, threads = proc.stderr.strip().splitlines()[-1].split()
    assert [blas, threads][: len(expected)] == expected  # the user's pool size is numpy's call
