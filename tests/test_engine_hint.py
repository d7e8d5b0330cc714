"""The parent's guess whether a problem's stage B needs jax (jaxjudge/grading/engine_hint.py):
remembered per problem in the private state directory, only a speed hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaxjudge.grading import engine_hint


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state" / engine_hint.FILE


def test_what_the_last_run_used_is_remembered_per_problem(state: Path) -> None:
    assert not engine_hint.needs_xla("ema") and not engine_hint.needs_xla(None)
    engine_hint.remember("ema", ["xla"])
    engine_hint.remember("remat", ["interpret"])
    assert engine_hint.needs_xla("ema") and not engine_hint.needs_xla("remat")
    engine_hint.remember("ema", ["interpret", "xla"])
    assert engine_hint.needs_xla("ema")
    engine_hint.remember("ema", ["interpret"])
    assert not engine_hint.needs_xla("ema")
    assert json.loads(state.read_text()) == {"ema": False, "remat": False}


def test_it_is_written_only_when_it_changes(state: Path) -> None:
    engine_hint.remember("ema", ["xla"])
    before = state.stat().st_mtime_ns, state.stat().st_ino
    engine_hint.remember("ema", ["xla"])
    assert (state.stat().st_mtime_ns, state.stat().st_ino) == before


def test_it_stays_bounded(state: Path) -> None:
    for i in range(engine_hint.MAX_PROBLEMS + 10):
        engine_hint.remember(f"p{i}", ["xla"])
        if i == 20:
            engine_hint.remember("p0", ["interpret"])  # changed lately: kept
    kept = json.loads(state.read_text())
    assert len(kept) == engine_hint.MAX_PROBLEMS and "p1" not in kept and "p0" in kept
    assert engine_hint.needs_xla(f"p{engine_hint.MAX_PROBLEMS + 9}")


@pytest.mark.parametrize("planted", ['["xla"]', '{"ema": "yes"}', "not json"])
def test_a_malformed_file_is_no_guess(state: Path, planted: str) -> None:
    state.parent.mkdir(mode=0o700, parents=True)
    state.write_text(planted)
    state.chmod(0o600)
    assert not engine_hint.needs_xla("ema")
    engine_hint.remember("ema", ["xla"])
    assert engine_hint.needs_xla("ema")


def test_the_grader_and_stage_b_name_one_variable() -> None:
    """Stage B is self-contained (it cannot import the grader), so each spells the name: the
    two must agree, or the hint never reaches stage B (and its wait switch likewise)."""
    import importlib.util

    from jaxjudge.grading.stage_common import STAGES_DIR
    from jaxjudge.isolation import sandbox

    spec = importlib.util.spec_from_file_location("jaxjudge_test_execute_env",
                                                  STAGES_DIR / "execute.py")
    assert spec and spec.loader
    execute = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(execute)
    assert execute.JAX_ENV == engine_hint.STAGE_B_JAX_ENV
    assert execute.WAIT_ENV == sandbox.STAGE_WAIT_ENV


def test_processes_remembering_other_problems_at_once_lose_nothing(tmp_path: Path) -> None:
    """Issue 42: grades of several problems run in separate processes at once. Each process
    here flips its own problem's hint 150 times and ends on XLA; a plain read-modify-write
    wrote back the others' old values (every run of this test lost some on the old code).
    The wait for the lock is lengthened: what is tested is the lock, not the 2 s bound."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    state = tmp_path / "state"
    flip = ("import sys\nfrom jaxjudge.grading import engine_hint as h\n"
            "from jaxjudge.isolation import statefile\n"
            "statefile.LOCK_WAIT_SECONDS = 300\n"  # a loaded machine: the lock, not its bound
            "for j in range(150):\n"
            "    h.remember(sys.argv[1], ['xla'] if j % 2 else ['interpret'])\n"
            "h.remember(sys.argv[1], ['xla'])\n")
    env = {**os.environ, "JAXJUDGE_STATE_DIR": str(state), "PYTHONPATH": str(root)}
    names = [f"problem-{i}" for i in range(6)]
    procs = [subprocess.Popen([sys.executable, "-c", flip, name], env=env) for name in names]
    assert [p.wait(timeout=120) for p in procs] == [0] * len(names)
    assert json.loads((state / engine_hint.FILE).read_text()) == dict.fromkeys(names, True)
