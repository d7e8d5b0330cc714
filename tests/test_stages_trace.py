"""Stage A's spare warm-up (grader/stages/trace.py `warm_spare`): a forked spare pre-pays the
backend, a trace and an export while it waits. It must stop as soon as its run arrives, and it
must not change a single byte of what the submission then exports (the grader's program cache is
keyed by those bytes)."""

from __future__ import annotations

import importlib
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

from grader import load_problem

grade_module = importlib.import_module("grader.grade")
STAGES = Path(grade_module.__file__).resolve().parent / "stages"
PROBLEM = load_problem("rematerialized-mlp-block")


def _job(tmp: Path, name: str) -> Path:
    job = tmp / name
    job.mkdir()
    (job / "submission.py").write_bytes(PROBLEM.reference_path.read_bytes())
    spec = grade_module._symbolic_spec(PROBLEM)
    assert spec is not None
    (job / "job.json").write_text(json.dumps({
        "entry_point": PROBLEM.entry_point,
        "source": "submission.py",
        "signatures": [],
        "symbolic": spec,
    }))
    return job


# Runs in a fresh interpreter shaped like the zygote: warmed, no backend, then one fork per job.
_DRIVER = """
import json, os, runpy, sys
z = runpy.run_path(sys.argv[1] + '/zygote.py', run_name='z')
t = runpy.run_path(sys.argv[1] + '/trace.py', run_name='t')
z['_warm_up']()
t['warm_zygote']()
for job, warm in ((sys.argv[2], True), (sys.argv[3], False)):
    pid = os.fork()
    if pid == 0:
        steps = t['warm_spare'](lambda: False) if warm else []
        with open(os.path.join(job, 'steps.json'), 'w') as f:
            json.dump(steps, f)
        os._exit(t['main'](job))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
from jax._src import xla_bridge
print(z['_contamination'](xla_bridge) or 'clean')
"""


def test_warm_spare_does_not_change_the_exported_bytes(tmp_path: Path) -> None:
    warmed, cold = _job(tmp_path, "warmed"), _job(tmp_path, "cold")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", _DRIVER, str(STAGES), str(warmed), str(cold)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    # The zygote itself stays fork-safe: the warm-up happened in the children only.
    assert out.stdout.strip().splitlines()[-1] == "clean", out.stdout + out.stderr
    assert json.loads((warmed / "steps.json").read_text()) == ["backend", "trace", "export"]
    for job in (warmed, cold):
        assert json.loads((job / "result.json").read_text())["status"] == "ok"
    blob = (warmed / "poly.jaxexport").read_bytes()
    assert len(blob) > 1000
    assert blob == (cold / "poly.jaxexport").read_bytes()


def test_warm_spare_stops_when_the_run_arrives() -> None:
    """`stop()` is asked before every step: a waiting run waits for one step at most."""
    stage = runpy.run_path(str(STAGES / "trace.py"), run_name="t")
    assert stage["warm_spare"](lambda: True) == []
    answers = iter([False, True])
    assert stage["warm_spare"](lambda: next(answers)) == ["backend"]
    answers = iter([False, False, True])
    assert stage["warm_spare"](lambda: next(answers)) == ["backend", "trace"]
