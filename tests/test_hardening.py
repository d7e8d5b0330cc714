"""Inputs a submission controls that once reached `internal_error`, end to end with real
sandboxed processes: each gets a real verdict with a clear message, leaves nothing behind, and
the grader (cold path and warm pool) keeps serving.

- a forged stage A result.json (jaxjudge.grading.stage_results validates every field);
- an exported program whose serialized StableHLO is garbage, or whose list of used inputs
  points outside its inputs (stage B refuses it: requirement_failed, "pure-jax-program");
- stage B dying by a signal: interpreter -> XLA fast flags -> XLA default flags, then a verdict;
- thousands of nested directories left in the job dir, past PATH_MAX (jaxjudge.isolation.fstree).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Routed, grade_through

from jaxjudge import Limits, Verdict, load_problem
from jaxjudge.grading.caches import PROGRAM_CACHE_SIZE
from jaxjudge.grading.stage_common import EXECUTE_SCRIPT, MALFORMED_A
from jaxjudge.isolation import pool, sandbox
from jaxjudge.isolation import xla as xla_flags

PROBLEM = load_problem("rematerialized-mlp-block")
ROUTE = Routed()
grade = ROUTE.grade
SUBMISSIONS = PROBLEM.submissions_dir
REFERENCE = (SUBMISSIONS / "accepted_reference_style.py").read_text(encoding="utf-8")
FAST = Limits(wall_seconds=8, cpu_seconds=4, memory_mb=1024, output_kb=64)
# Room for 5,000 directories (4 KB each on ext4) under the job dir's disk cap (8 x output).
ROOMY = Limits(wall_seconds=20, cpu_seconds=8, memory_mb=1024, output_kb=8192)


@pytest.fixture
def work_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Grades of this test make their work dirs here, so 'nothing left' is checkable."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("JAXJUDGE_WORK_DIR", str(work))
    yield work
    assert list(work.iterdir()) == [], "a grade left files behind"


@pytest.fixture
def no_program_cache() -> Iterator[None]:
    ROUTE.use(program_cache=0)
    yield
    ROUTE.use(program_cache=PROGRAM_CACHE_SIZE)


# -- stage A's result.json forged by the submission ---------------------------------------------

# The stages exit through the os._exit they captured before the submission ran, so the forger
# rebinds the tracing stage's own result writer, found up the stack while solve is traced.
FORGE = REFERENCE + """
import os as _os
import sys as _sys
_solve = solve
def _forged_write(job_dir, result):
    with open(_os.path.join(job_dir, "result.json"), "wb") as f:
        f.write(CONTENT)
def solve(*args):
    frame = _sys._getframe()
    while frame is not None:
        if callable(frame.f_globals.get("_write_result")):
            frame.f_globals["_write_result"] = _forged_write
        frame = frame.f_back
    return _solve(*args)
"""

FORGED = {
    "timings_list": b'{"status": "ok", "exports": {"poly": "poly.jaxexport"}, "timings": [1]}',
    "huge_int": b'{"status": "ok", "exports": {"poly": "poly.jaxexport"}, "timings": {"t": '
    + b"9" * 400 + b"}}",
    "infinity": b'{"status": "ok", "exports": {"poly": "poly.jaxexport"}, '
    b'"timings": {"t": Infinity}}',
    "exports_list": b'{"status": "ok", "exports": ["poly.jaxexport"]}',
    "status_accepted": b'{"status": "accepted", "score": 100}',
    "not_json": b"\xff\xfe{",
}


@pytest.mark.parametrize("name", sorted(FORGED))
def test_forged_stage_a_result_is_a_runtime_error(name: str, work_dir: Path) -> None:
    report = grade(PROBLEM, FORGE.replace("CONTENT", repr(FORGED[name])), "run", limits=FAST)
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message
    assert report.message == MALFORMED_A
    assert report.score == 0


def test_deeply_nested_forged_result_has_the_nesting_message(work_dir: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    content = b'{"status": "ok", "exports": {"p": "p"}, "jaxpr": ' + deep + b"}"
    report = grade(PROBLEM, FORGE.replace("CONTENT", repr(content)), "run", limits=FAST)
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message
    assert "nested too deeply" in report.message


# -- stage B: exported programs with garbage inside a valid flatbuffer ---------------------------

BAD_EXPORT = """
import dataclasses
from jax import export as _export
_serialize = _export.Exported.serialize
def _tampered(self, *args, **kwargs):
    return _serialize(dataclasses.replace(self, **CHANGES), *args, **kwargs)
_export.Exported.serialize = _tampered
""" + REFERENCE

BAD_EXPORTS = {
    "garbage_stablehlo": ('{"mlir_module_serialized": b"ML\\xefR" + b"\\x00garbage" * 64}',
                          "could not be checked"),
    "not_bytecode": ('{"mlir_module_serialized": b"module { ??? }"}', "could not be checked"),
    "kept_idx_out_of_range": ('{"module_kept_var_idx": (0, 1, 99)}', "list of used inputs"),
    "kept_idx_repeated": ('{"module_kept_var_idx": (0, 0)}', "list of used inputs"),
}


@pytest.mark.parametrize("name", sorted(BAD_EXPORTS))
def test_garbage_inside_an_export_is_refused(name: str, work_dir: Path,
                                             no_program_cache: None) -> None:
    changes, needle = BAD_EXPORTS[name]
    report = grade(PROBLEM, BAD_EXPORT.replace("CHANGES", changes), "run", limits=FAST)
    assert report.verdict is Verdict.REQUIREMENT_FAILED, report.message
    pure = next(r for r in report.requirements if r.name == "pure-jax-program")
    assert not pure.passed and needle in pure.message, pure.message
    assert "refused to run your exported program" in report.message


def test_untampered_serialize_patch_is_accepted(work_dir: Path) -> None:
    """The honest twin: wrapping Exported.serialize without changing anything is fine."""
    report = grade(PROBLEM, BAD_EXPORT.replace("CHANGES", "{}"), "run", limits=FAST)
    assert report.verdict is Verdict.ACCEPTED, report.message


# -- stage B dying by a signal: retried with XLA's default flags, then judged --------------------

@pytest.fixture
def crashing_fast_flags(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """'Fast' XLA flags that kill every process that starts XLA with them: jaxlib aborts on an
    unknown flag (SIGABRT on 0.4.x, a fatal exit on later releases)."""
    monkeypatch.setenv("JAXJUDGE_XLA_FLAGS", "--xla_jaxjudge_no_such_flag=1")
    xla_flags._probe.cache_clear()
    ROUTE.use(engine="xla")
    yield
    ROUTE.use(engine=None)
    monkeypatch.delenv("JAXJUDGE_XLA_FLAGS")
    xla_flags._probe.cache_clear()


def test_xla_crash_with_fast_flags_is_retried_with_default_flags(
        work_dir: Path, no_program_cache: None, crashing_fast_flags: None) -> None:
    assert xla_flags.fast_compile_flags() == "--xla_jaxjudge_no_such_flag=1"
    report = grade(PROBLEM, REFERENCE, "run", limits=FAST)
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.timings.get("stage_b.xla_fast_flags_crash") == 1.0


SEGFAULT_STAGE = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"


def test_a_program_that_always_crashes_gets_a_runtime_error(
        tmp_path: Path, work_dir: Path, no_program_cache: None) -> None:
    """Stage B replaced by a real process that dies by SIGSEGV every time: three attempts
    (interpreter, XLA with fast flags, XLA with default flags), then a verdict."""
    script = tmp_path / "stages" / "execute.py"
    script.parent.mkdir()
    script.write_text(SEGFAULT_STAGE)
    seen: list[tuple[str, str]] = []

    def runner(stage: Path, job: Path, limits: sandbox.SandboxLimits, untrusted: bool,
               env: dict[str, str]) -> sandbox.SandboxResult:
        if stage != EXECUTE_SCRIPT:
            return sandbox.run_stage(stage, job, limits, env=env, untrusted=untrusted)
        import json
        seen.append((json.loads((job / "job.json").read_text())["engine"],
                     env.get("XLA_FLAGS", "")))
        return sandbox.run_stage(script, job, limits, env=env, untrusted=untrusted)

    ROUTE.use(engine="interpret")
    try:
        [report] = grade_through(runner, PROBLEM, [REFERENCE])
    finally:
        ROUTE.use(engine=None)
    assert report.verdict is Verdict.RUNTIME_ERROR, report.message
    assert "crashed the XLA compiler" in report.message and "SIGSEGV" in report.message
    flags = xla_flags.fast_compile_flags()
    expected = [("interpret", flags), ("xla", flags)] + ([("xla", "")] if flags else [])
    assert seen == expected


# -- thousands of nested directories ------------------------------------------------------------

DEEP_DIRS = """
import os
_home = os.open(".", os.O_RDONLY)
for _ in range(DEPTH):
    os.makedirs("d/d", exist_ok=True)
    os.chdir("d/d")
os.fchdir(_home)
os.close(_home)
""" + REFERENCE


def _deep(levels: int) -> str:
    return DEEP_DIRS.replace("DEPTH", str(levels // 2))


def test_deep_directories_cold(work_dir: Path) -> None:
    assert sys.getrecursionlimit() < 5000 and os.pathconf("/", "PC_PATH_MAX") < 5000 * 2
    report = grade(PROBLEM, _deep(5000), "run", limits=ROOMY)
    assert report.verdict is Verdict.ACCEPTED, report.message
    # work_dir's teardown asserts the tree (sandbox uid and all) is gone.
    hostile = grade(PROBLEM, (SUBMISSIONS / "runtime_deep_directories.py").read_text(), "run")
    assert hostile.verdict is Verdict.RUNTIME_ERROR, hostile.message
    assert "too many files" in hostile.message


def test_deep_directories_through_the_pool(tmp_path: Path, work_dir: Path,
                                           no_program_cache: None) -> None:
    base = tmp_path / "pool"
    base.mkdir()
    with pool.WarmPool(1, compile_cache=False, base_dir=base) as p:
        hostile = (SUBMISSIONS / "runtime_deep_directories.py").read_text()
        ROUTE.use(runner=p.runner)
        try:
            deep = grade(PROBLEM, _deep(5000), "run", limits=ROOMY)
            after = grade(PROBLEM, REFERENCE, "run", limits=FAST)
            bad = grade(PROBLEM, hostile, "run")
            again = grade(PROBLEM, REFERENCE, "run", limits=FAST)
        finally:
            ROUTE.use(runner=None)
        assert deep.verdict is after.verdict is Verdict.ACCEPTED, (deep.message, after.message)
        assert bad.verdict is Verdict.RUNTIME_ERROR, bad.message
        assert again.verdict is Verdict.ACCEPTED, again.message
        p.settle()
        # Every run was served warm: no zygote broke, nothing fell back to fresh processes.
        assert p.stats.cold_runs == 0 and p.stats.runs == 2 + 2 + 1 + 2, p.stats
        assert p.stats.respawns == 2 and not p.stats.failures, p.stats
        spools = [d for d in base.iterdir()]
        assert spools and all(
            sum(1 for _ in os.scandir(s)) <= 3 for s in spools  # .io and the last job only
        )
    assert list(base.iterdir()) == []  # stop() removed the spools
