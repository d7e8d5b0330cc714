"""Stage B started ahead of its job (sandbox.prestart), so a one-off grade's two jax imports
overlap: it gets its job only after stage A's result was validated, and dies with the grade
whatever stage A does. Real sandboxed processes throughout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jaxjudge import Limits, Verdict, load_problem
from jaxjudge.grading import early
from jaxjudge.grading.grader import Grader
from jaxjudge.grading.pipeline import Grading
from jaxjudge.isolation import sandbox

PROBLEM = load_problem("rematerialized-mlp-block")
REFERENCE = PROBLEM.reference_path.read_text()
FAST = Limits(wall_seconds=4, cpu_seconds=2, memory_mb=1024, output_kb=64)
LIMITS = sandbox.SandboxLimits(wall_seconds=10, cpu_seconds=5, memory_bytes=512 << 20,
                               output_bytes=64 * 1024)

# A stage script that behaves like stages/execute.py: start-up first, then (when prestarted)
# one byte on stdin, then the job.
WAITING_STAGE = """\
import json, os, sys, time
job = sys.argv[1]
with open(os.path.join(job, "started"), "w") as f:
    f.write(str(time.time()))
if os.environ.get("JAXJUDGE_STAGE_WAIT") == "1" and os.read(0, 1) != b"g":
    sys.exit(0)
with open(os.path.join(job, "job.json")) as f:
    data = json.load(f)
with open(os.path.join(job, "result.json"), "w") as f:
    json.dump({"n": len(data["blob"]), "uid": os.getuid()}, f)
"""


def _starttime(pid: int) -> str | None:
    """The start time of a live process; None when it is gone or a zombie (it runs nothing
    and waits for init, which reaps bwrap's reparented pid-namespace init)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if len(fields) < 20 or fields[0] in "ZX" else fields[19]


def _snapshot(pid: int | None) -> dict[int, str]:
    """pid -> start time of a process tree (start time tells a reused pid apart)."""
    if pid is None:
        return {}
    return {p: t for p in sandbox.process_tree(pid) if (t := _starttime(p)) is not None}


def _alive(tree: dict[int, str]) -> list[int]:
    return [p for p, t in tree.items() if _starttime(p) == t]


@pytest.fixture
def stage_script() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="overlap-test-"))
    os.chmod(root, 0o755)
    script = root / "stage.py"
    script.write_text(WAITING_STAGE)
    yield script
    for p in root.iterdir():
        p.unlink()
    root.rmdir()


def _job_dir(tmp_path: Path) -> Path:
    os.chmod(tmp_path, 0o711)
    return tmp_path / "job"


def _wait_for(path: Path, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


# -- sandbox.prestart ----------------------------------------------------------------------------


def test_prestarted_stage_reads_the_job_written_after_its_start(stage_script: Path,
                                                                tmp_path: Path) -> None:
    """The job the parent writes after start-up is readable by the run's uid and is the disk
    limit's baseline: a job larger than the run's own output cap is not the run's output."""
    job = _job_dir(tmp_path)
    pending = sandbox.prestart(stage_script, job, LIMITS, untrusted=True)
    try:
        _wait_for(job / "started")
        assert not (job / "result.json").exists()  # it waits: no job yet
        old = os.umask(0o077)  # a private umask in the parent must not matter
        try:
            (job / "job.json").write_text('{"blob": "%s"}' % ("x" * 300_000))
        finally:
            os.umask(old)
        res = pending.go()
    finally:
        pending.cancel()
    assert res.status == "exited" and res.exit_code == 0, res
    assert '"n": 300000' in (job / "result.json").read_text()
    if sandbox.protections()["uid_pool"]["active"]:
        assert f'"uid": {os.getuid()}' not in (job / "result.json").read_text()


def test_cancelled_prestart_leaves_no_process(stage_script: Path, tmp_path: Path) -> None:
    job = _job_dir(tmp_path)
    pending = sandbox.prestart(stage_script, job, LIMITS, untrusted=True)
    _wait_for(job / "started")
    tree = _snapshot(pending.pid)
    assert len(tree) >= 2, tree  # the trampoline (bwrap) and the stage at least
    pending.cancel()
    assert _alive(tree) == []
    assert not (job / "result.json").exists()
    with pytest.raises(RuntimeError):
        pending.go()
    pending.cancel()  # twice: nothing


def test_prestarted_stage_that_overruns_after_go_is_stopped(tmp_path: Path) -> None:
    """After go() the usual limits hold (here the output cap of a run's own files)."""
    script = tmp_path / "hog.py"
    script.write_text(
        "import os, sys\n"
        "if os.read(0, 1) == b'g':\n"
        "    with open(os.path.join(sys.argv[1], 'big'), 'wb') as f:\n"
        "        f.write(b'x' * (1 << 20))\n"
    )
    os.chmod(script, 0o644)
    job = _job_dir(tmp_path)
    pending = sandbox.prestart(script, job, LIMITS, untrusted=True)
    try:
        res = pending.go()
    finally:
        pending.cancel()
    assert res.status == "output_exceeded", res


# -- in a grade ---------------------------------------------------------------------------------


class Observed(Grading):
    """A real grade that remembers stage B's early process tree, sampled once stage A ended."""

    tree: dict[int, str]
    b_dir: Path | None = None

    def _started(self):  # type: ignore[no-untyped-def]
        started = super()._started()
        self.b_dir = started.root / "b" if started is not None else None
        return started

    def _stage_a(self, job: Path):  # type: ignore[no-untyped-def]
        try:
            return super()._stage_a(job)
        finally:
            pending = self.pending_b
            self.tree = _snapshot(pending.pid if pending is not None else None)


def _grade(source: str, grader: Grader | None = None, limits: Limits = FAST) -> Observed:
    g = grader or Grader()
    assert g.overlap
    run = Observed(g, PROBLEM, source, "run", limits)
    run.report = run.run()
    return run


@pytest.mark.parametrize("source,verdict", [
    ("def solve(:\n", Verdict.COMPILE_ERROR),
    ("import sys\nsys.exit(3)\n", Verdict.RUNTIME_ERROR),
    ("def solve(params, x, y):\n    while True:\n        pass\n", Verdict.TIME_LIMIT_EXCEEDED),
    ("import time\ntime.sleep(10**6)\n", Verdict.TIME_LIMIT_EXCEEDED),
])
def test_early_stage_b_dies_with_a_failed_stage_a(source: str, verdict: Verdict) -> None:
    run = _grade(source)
    assert run.report.verdict is verdict, run.report.message
    assert len(run.tree) >= 2, "stage B was not running beside stage A"
    assert _alive(run.tree) == []
    assert run.b_dir is not None and not run.b_dir.exists()
    assert not any(k.startswith("stage_b") for k in run.report.timings)


def test_early_stage_b_runs_the_program_once_stage_a_is_done() -> None:
    run = _grade(REFERENCE + "\n# overlap: a new source\n")
    assert run.report.verdict is Verdict.ACCEPTED, run.report.message
    assert run.report.timings["stage_b.execute"] > 0 and "stage_b.wait" in run.report.timings
    assert _alive(run.tree) == []


def test_early_stage_b_is_cancelled_when_the_program_cache_answers() -> None:
    g = Grader()
    first = _grade(REFERENCE + "\n# one\n", g)
    second = _grade(REFERENCE + "\n# two: same program, other bytes\n", g)
    assert first.report.verdict is second.report.verdict is Verdict.ACCEPTED
    assert second.report.timings.get("stage_b.cached") == 1.0
    assert len(second.tree) >= 2 and _alive(second.tree) == []


def test_stage_a_cannot_reach_the_early_stage_b() -> None:
    """The attacker knows stage B runs beside it: it signals every process it can see that is
    not its own and writes to their stdin (the go pipe). Stage B still runs the exported
    program on its own (pid namespace, other uid), and the verdict is the program's."""
    attack = REFERENCE + (
        "\nimport os, signal\n"
        "for p in os.listdir('/proc'):\n"
        "    if not p.isdigit() or int(p) == os.getpid():\n"
        "        continue\n"
        "    try:\n"
        "        mine = os.stat('/proc/' + p).st_uid == os.getuid()\n"
        "    except OSError:\n"
        "        continue\n"
        "    for fd in ('0', '1', '2'):\n"
        "        try:\n"
        "            with open('/proc/%s/fd/%s' % (p, fd), 'wb') as f:\n"
        "                f.write(b'q')\n"
        "        except OSError:\n"
        "            pass\n"
        "    if not mine:\n"
        "        try:\n"
        "            os.kill(int(p), signal.SIGKILL)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    run = _grade(attack)
    assert run.report.verdict is Verdict.ACCEPTED, run.report.message
    assert "stage_b.execute" in run.report.timings
    assert _alive(run.tree) == []


def test_overlap_is_for_cold_stages_and_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Grader().overlap
    assert not Grader(runner=lambda *a: None).overlap  # type: ignore[arg-type, return-value]
    monkeypatch.setenv("JAXJUDGE_OVERLAP_STAGES", "0")
    g = Grader()
    assert not g.overlap
    report = g.grade(PROBLEM, REFERENCE + "\n# sequential\n", "run")
    assert report.verdict is Verdict.ACCEPTED and "stage_b.wait" not in report.timings


# -- started before the grader is imported (the CLI) ---------------------------------------------


def test_stages_started_early_are_adopted_by_the_grade() -> None:
    started = early.start(PROBLEM.limits, PROBLEM.observed)
    trees = [_snapshot(p.pid) for p in (started.a, started.b) if p is not None]
    assert len(trees) == 2 and all(trees)
    report = Grader().grade(PROBLEM, REFERENCE + "\n# early\n", "run", early=started)
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert "stage_a.wait" in report.timings and "stage_b.wait" in report.timings
    assert started.a is None and started.b is None  # both taken
    assert not started.root.exists()
    assert all(_alive(t) == [] for t in trees)


@pytest.mark.parametrize("case", ["other_limits", "too_large", "compile_error", "no_overlap"])
def test_stages_started_early_never_outlive_the_grade(case: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the grade does with them (other limits: new ones; a file over the size cap: no
    stage at all; stage A fails: B never gets a job), they are gone after it."""
    started = early.start(PROBLEM.limits, PROBLEM.observed)
    trees = [_snapshot(p.pid) for p in (started.a, started.b) if p is not None]
    source, limits = REFERENCE + "\n# early, unused\n", None
    if case == "other_limits":
        limits = FAST
    elif case == "too_large":
        source = "#" * (2 << 20)
    elif case == "compile_error":
        source = "def solve(:\n"
    else:
        monkeypatch.setenv("JAXJUDGE_OVERLAP_STAGES", "0")
    report = Grader().grade(PROBLEM, source, "run", limits=limits, early=started)
    expected = {"other_limits": Verdict.ACCEPTED, "too_large": Verdict.COMPILE_ERROR,
                "compile_error": Verdict.COMPILE_ERROR, "no_overlap": Verdict.ACCEPTED}[case]
    assert report.verdict is expected, report.message
    assert all(_alive(t) == [] for t in trees)
    assert not started.root.exists()


# -- the one-off CLI ------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
JAXJUDGE = Path(sys.executable).parent / "jaxjudge"


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # This checkout's grader, also when the venv's script was installed from another one.
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([str(JAXJUDGE), *args], capture_output=True, text=True, env=full,
                          timeout=300, check=False)


@pytest.mark.parametrize("overlap", ["1", "0"])
def test_cli_grade_starts_both_stages_before_importing_the_grader(overlap: str) -> None:
    proc = _cli("grade", "-p", PROBLEM.id, str(PROBLEM.reference_path), "--mode", "run",
                "--json", JAXJUDGE_OVERLAP_STAGES=overlap)
    assert proc.returncode == 0, proc.stderr
    timings = json.loads(proc.stdout)["timings"]
    early_started = "stage_a.wait" in timings and "stage_b.wait" in timings
    assert early_started is (overlap == "1"), timings


def test_library_import_stays_light() -> None:
    """`import jaxjudge` names the whole public API but imports it on first use; the CLI's
    start-up (before it starts the stages) imports no warm pool, HTTP client or ml_dtypes."""
    code = (
        "import sys, jaxjudge, jaxjudge.cli.service\n"
        "heavy = [m for m in ('jaxjudge.isolation.pool', 'jaxjudge.grading.pipeline', 'httpx',"
        " 'ml_dtypes', 'jax') if m in sys.modules]\n"
        "names = [n for n in jaxjudge.__all__ if getattr(jaxjudge, n, None) is None]\n"
        "print(heavy, names)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.split("\n")[0]
    heavy, missing = out.split("] [")
    assert missing == "]", f"public names that do not resolve: {missing}"
    assert "jaxjudge.isolation.pool" not in heavy and "jaxjudge.grading.pipeline" not in heavy
    assert "ml_dtypes" not in heavy and "'jax'" not in heavy


def test_jaxjudge_grade_is_the_function_after_the_grading_modules_are_imported() -> None:
    code = ("import jaxjudge.batch.folder, jaxjudge.grading.grade\nfrom jaxjudge import grade\n"
            "import jaxjudge\nprint(callable(grade), jaxjudge.grade is grade)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.split()
    assert out == ["True", "True"]
