"""Stage A (jaxjudge/stages/trace.py).

The spare warm-up (`warm_spare`): a forked spare pre-pays the backend, a trace and an export
while it waits. It must stop as soon as its run arrives, and it must not change a single byte of
what the submission then exports (the grader's program cache is keyed by those bytes).

Decisions on symbolic dimensions (`_ShapeDecisions`): a submission that asks something jax
cannot decide about a symbolic size is exported per concrete signature; everything jax decides
soundly keeps the one shape-polymorphic export.

The jaxpr summary (`summarize_jaxpr`): each distinct sub-jaxpr once, bounded in size."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from jaxjudge import load_problem
from jaxjudge.grading.stage_common import STAGES_DIR

grade_module = importlib.import_module("jaxjudge.grading.grade")
plan_module = importlib.import_module("jaxjudge.grading.plan")
STAGES = STAGES_DIR
PROBLEM = load_problem("rematerialized-mlp-block")


def _job(tmp: Path, name: str) -> Path:
    job = tmp / name
    job.mkdir()
    (job / "submission.py").write_bytes(PROBLEM.reference_path.read_bytes())
    spec = plan_module._symbolic_spec(PROBLEM)
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


# -- decisions on symbolic dimensions -------------------------------------------------------------

SAMPLES = PROBLEM.submissions_dir
# accepted_* samples that decide something on a symbolic dimension (or need concrete shapes), so
# they are exported per signature; every other accepted sample keeps the shape-polymorphic path.
NEEDS_CONCRETE = {
    "accepted_concrete_shapes.py": "int(",
    "accepted_batch_of_one_special_case.py": "`B == 1` (answered False)",
    "accepted_batch_parity.py": "`mod(B, 2) == 0` (answered False)",
    "wrong_nan_for_even_batch.py": "line 21: `mod(B, 2) == 0` (answered False)",
}

# Runs stage A (trace.py main) on each job, one fork each, in one interpreter that imported jax.
_STAGE_A_DRIVER = """
import os, runpy, sys
t = runpy.run_path(sys.argv[1] + '/trace.py', run_name='t')
t['prepare']()
for job in sys.argv[2:]:
    pid = os.fork()
    if pid == 0:
        os._exit(t['main'](job))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, (job, status)
"""


def _stage_a(tmp: Path, sources: dict[str, bytes], problem=PROBLEM,  # type: ignore[no-untyped-def]
             **extra: object) -> dict[str, dict]:
    """Stage A's result.json for each source (the job is shaped as jaxjudge/grading/grade.py shapes
    it, plus `extra`)."""
    plan = plan_module.plan_for(problem, "submit")
    jobs = []
    for name, source in sources.items():
        job = tmp / name.removesuffix(".py")
        job.mkdir()
        (job / "submission.py").write_bytes(source)
        (job / "job.json").write_text(json.dumps({
            "entry_point": problem.entry_point,
            "source": "submission.py",
            "display_name": name,
            "signatures": list(plan.signatures.values()),
            "symbolic": plan.symbolic,
            **extra,
        }))
        jobs.append(job)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", _STAGE_A_DRIVER, str(STAGES), *map(str, jobs)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    results = {}
    for name, job in zip(sources, jobs, strict=True):
        raw = (job / "result.json").read_bytes()
        results[name] = {**json.loads(raw), "_bytes": len(raw)}
    return results


def test_accepted_samples_keep_the_poly_path_unless_they_decide_on_a_shape(tmp_path: Path) -> None:
    """The reference and every accepted sample that asks nothing undecidable about a symbolic
    dimension is exported once, shape-polymorphically; the samples that decide (B == 1,
    B % 2 == 0, int(B)) fall back to one export per signature, naming the question."""
    names = [*sorted(p.name for p in SAMPLES.glob("accepted_*.py")), "wrong_nan_for_even_batch.py"]
    sources = {n: (SAMPLES / n).read_bytes() for n in names}
    sources["reference.py"] = PROBLEM.reference_path.read_bytes()
    results = _stage_a(tmp_path, sources)
    n_sigs = len(plan_module.plan_for(PROBLEM, "submit").signatures)
    assert "accepted_shape_checks.py" in results and "accepted_nested_jit_tree.py" in results
    for name, result in results.items():
        assert result["status"] == "ok", (name, result.get("message"))
        if name in NEEDS_CONCRETE:
            assert len(result["exports"]) == n_sigs > 1, name
            assert "poly" not in result["exports"], name
            assert NEEDS_CONCRETE[name] in result["poly_fallback"], (name, result["poly_fallback"])
        else:
            assert result["exports"] == {"poly": "poly.jaxexport"}, (name, result)
            assert "poly_fallback" not in result, (name, result["poly_fallback"])
            assert result["jaxpr"]["jaxprs"], name


# Functions traced with symbolic (B, D); `base` is what they all compute around the decision.
_CASES_SOURCE = '''
import functools
import jax
import jax.numpy as jnp
import numpy as np


def base(x):
    return jnp.sum(jnp.tanh(x))


@functools.lru_cache
def _scale(n):
    return 2.0


@jax.jit
def _inner(x):
    return x * (2.0 if x.shape[0] == 1 else 1.0)


def _try_int(x):
    try:
        return int(x.shape[0])
    except Exception:
        return 3


def _try_gt(x):
    try:
        return x.shape[0] > 1
    except Exception:
        return True


DECIDES = {
    "eq": lambda x: base(x) * (2.0 if x.shape[0] == 1 else 1.0),
    "eq-reflected": lambda x: base(x) * (2.0 if 1 == x.shape[0] else 1.0),
    "ne": lambda x: base(x) * (2.0 if x.shape[0] != 1 else 1.0),
    "mod": lambda x: base(x) * (2.0 if x.shape[0] % 2 == 0 else 1.0),
    "tuple-eq": lambda x: base(x) * (2.0 if x.shape == (1, 3) else 1.0),
    "in-tuple": lambda x: base(x) * (2.0 if x.shape[0] in (1, 2) else 1.0),
    "in-set": lambda x: base(x) * (2.0 if x.shape[0] in {1, 2} else 1.0),
    "dict-get": lambda x: base(x) * {1: 2.0}.get(x.shape[0], 1.0),
    "lru-cache": lambda x: base(x) * _scale(x.shape[0]),
    "bool-of-difference": lambda x: base(x) * (2.0 if x.shape[0] - 1 else 1.0),
    "bool-of-mod": lambda x: base(x) * (2.0 if x.shape[0] % 2 else 1.0),
    "int-caught": lambda x: base(x) * _try_int(x),
    "gt-caught": lambda x: base(x) * (2.0 if _try_gt(x) else 1.0),
    "eq-float": lambda x: base(x) * (2.0 if x.shape[0] == 1.0 else 1.0),
    "eq-array": lambda x: base(x) * jnp.where(x.shape[0] == jnp.int32(1), 2.0, 1.0),
    "b-eq-d": lambda x: base(x) * (2.0 if x.shape[0] == x.shape[1] else 1.0),
    "numpy-equal": lambda x: base(x) * (2.0 if np.equal(x.shape[0], 1) else 1.0),
    "in-jitted-helper": lambda x: base(_inner(x)),
    "in-cond-branch": lambda x: jax.lax.cond(
        True, lambda v: base(v) * (2.0 if v.shape[0] == 1 else 1.0), base, x),
    "in-tree-map": lambda x: base(x) * jax.tree.map(lambda a: 2.0 if a.shape[0] == 1 else 1.0,
                                                    {"x": x})["x"],
    "in-checkpoint": lambda x: base(jax.checkpoint(
        lambda v: v * (2.0 if v.shape[0] == 1 else 1.0))(x)),
    "in-grad": lambda x: jax.grad(lambda v: base(v) * (2.0 if v.shape[0] == 1 else 1.0))(x).sum(),
}

DECIDES_NOTHING = {
    "same-shapes": lambda x: base(x) if x.shape == x.T.T.shape and x.shape[1] == x.shape[1]
    else None,
    "bool": lambda x: base(x) * (2.0 if x.shape[0] else 1.0),
    "bounds": lambda x: base(x) * (2.0 if x.shape[0] >= 1 and x.shape[0] > 0 else 1.0),
    "ne-zero": lambda x: base(x) * (2.0 if x.shape[0] != 0 and x.shape[0] != -3 else 1.0),
    "arithmetic": lambda x: base(x) / (x.shape[0] * x.shape[1]) + (x.shape[0] // 2) * 0.0,
    "print": lambda x: print(f"{x.shape} {x.shape[0]!r} {x.shape[0] * 2}") or base(x),
    "string-and-none": lambda x: base(x) * (2.0 if x.shape[0] == "B" or x.shape[0] == None
                                            or x.shape[0] is None else 1.0),  # noqa: E711
    "einsum": lambda x: jnp.einsum("bd,bd->b", x, x).sum() + base(x),
    "zeros-broadcast-reshape": lambda x: base(
        x + jnp.zeros(x.shape) + jnp.broadcast_to(x[0], x.shape).reshape(x.shape[0], -1)),
    "random": lambda x: base(x + 0 * jax.random.normal(jax.random.key(0), x.shape)),
    "arange-mean-var": lambda x: base(x) + jnp.arange(x.shape[0]).sum() * 0 + jnp.var(x) * 0,
    "traced-dimension": lambda x: base(x) * jnp.where(jnp.asarray(x.shape[0]) % 2 == 0, 2.0, 1.0),
    "grad": lambda x: jax.grad(base)(x).sum(),
    "slicing": lambda x: base(x[: x.shape[0]]) + x[-1].sum() * 0,
}
'''


@cache
def _cases() -> tuple[dict, dict]:
    module: dict = {"__name__": "submission"}
    exec(compile(_CASES_SOURCE, "submission.py", "exec"), module)
    return module["DECIDES"], module["DECIDES_NOTHING"]


def _watch(fn) -> list[str]:
    """The decisions `fn` makes when traced at symbolic (B, D), as stage A watches them."""
    import jax
    import numpy as np
    from jax import export

    stage = runpy.run_path(str(STAGES / "trace.py"), run_name="t")
    b, d = export.symbolic_shape("B, D")
    watch = stage["_ShapeDecisions"](type(b), "submission.py", stage["_trusted_files"](jax))
    with watch, contextlib.suppress(Exception):  # a raised decision ends the trace: fine
        jax.jit(fn).trace(jax.ShapeDtypeStruct((b, d), np.float32))
    return watch.found


@pytest.mark.parametrize("case", sorted(_cases()[0]))
def test_a_decision_on_a_symbolic_dimension_is_seen(case: str) -> None:
    found = _watch(_cases()[0][case])
    assert found and all(f.startswith("line ") for f in found), found


@pytest.mark.parametrize("case", sorted(_cases()[1]))
def test_what_jax_decides_soundly_is_not_a_decision(case: str) -> None:
    assert _watch(_cases()[1][case]) == []


def test_a_decision_in_another_file_is_not_the_submissions() -> None:
    """jax's own questions (and those of code that is neither the submission nor jax, asked on
    jax's behalf) never count: the frame that decides is the nearest one of either."""
    module: dict = {"__name__": "other"}
    exec(compile(_CASES_SOURCE, "elsewhere.py", "exec"), module)
    assert _watch(module["DECIDES"]["eq"]) == []


def test_watching_changes_no_answer_and_restores_the_type() -> None:
    from jax import export

    stage = runpy.run_path(str(STAGES / "trace.py"), run_name="t")
    (b,) = export.symbolic_shape("B")
    cls = type(b)
    before = dict(cls.__dict__)
    assert "__bool__" not in before
    watch = stage["_ShapeDecisions"](cls, "submission.py", ("/nowhere/",))
    with watch:
        assert "__bool__" in cls.__dict__
        answers = (b == 1, b != 1, b == b, b >= 1, bool(b - 1), hash(b) == hash(b + 0), b % 2 == 0)
        with pytest.raises(Exception, match="inconclusive"):
            _ = b > 1
    assert answers == (False, True, True, True, True, True, False)
    assert {k: cls.__dict__.get(k) for k in before} == before and "__bool__" not in cls.__dict__
    # Asked from this test file, which is neither "submission.py" nor trusted: not recorded.
    assert watch.found == []


def test_not_seen_questions_python_answers_without_the_dimension() -> None:
    """Documented limit: `isinstance(B, int)` is answered by the type, not asked of B. Only code
    that inspects how it is traced can branch on it, and it is then graded on the program that
    trace produced, which it could have written directly (the module docstring's argument)."""
    module: dict = {"__name__": "submission"}
    exec(compile("def f(x):\n    return x * (2.0 if isinstance(x.shape[0], int) else 1.0)\n",
                 "submission.py", "exec"), module)
    assert _watch(module["f"]) == []


# -- the jaxpr summary ----------------------------------------------------------------------------


def _summarize(fn, *shapes: tuple[int, ...]) -> dict:
    import jax
    import numpy as np

    stage = runpy.run_path(str(STAGES / "trace.py"), run_name="t")
    checkpoint_prim, policies = stage["prepare"]()
    specs = [jax.ShapeDtypeStruct(s, np.float32) for s in shapes]
    return stage["summarize_jaxpr"](jax.make_jaxpr(fn)(*specs).jaxpr, checkpoint_prim, policies)


def test_a_shared_sub_jaxpr_is_summarized_once() -> None:
    """2,000 calls of one jitted helper: one table entry, 2,000 references folded in one run."""
    import jax

    keep = jax.jit(lambda v: v * 1.0)

    def chain(x):
        for _ in range(2000):
            x = keep(x)
        return x

    summary = _summarize(chain, (3,))
    assert summary["root"] == 0 and len(summary["jaxprs"]) == 2
    (call,) = summary["jaxprs"][0]["eqns"]
    assert call["count"] == 2000 and call["jaxprs"] == [1]
    assert [e["primitive"] for e in summary["jaxprs"][1]["eqns"]] == ["mul"]
    assert len(json.dumps(summary)) < 300


def test_checkpoint_eqns_carry_their_policy_and_body() -> None:
    import jax
    import jax.numpy as jnp

    def f(x):
        policy = jax.checkpoint_policies.dots_saveable
        return jax.grad(lambda v: jax.checkpoint(jnp.tanh, policy=policy)(v).sum())(x)

    summary = _summarize(f, (3,))
    regions = [e for j in summary["jaxprs"] for e in j["eqns"] if e.get("checkpoint")]
    assert regions and all(r["policy"] == "dots_saveable" for r in regions)
    assert any(r["differentiated"] for r in regions)
    bodies = [summary["jaxprs"][k] for r in regions for k in r["jaxprs"]]
    assert any(e["primitive"] == "tanh" for b in bodies for e in b["eqns"])


def test_a_summary_too_large_is_left_out_not_an_error() -> None:
    """10,000 alternating eqns (nothing to fold): over the size bound, so {"omitted": why}."""
    def f(x):
        for _ in range(5000):
            x = (x + 1.0) * 1.0
        return x

    summary = _summarize(f, (3,))
    assert set(summary) == {"omitted"} and "bytes" in summary["omitted"]


def test_the_nested_jit_sample_has_a_small_result(tmp_path: Path) -> None:
    """The sample with 2 x 1,023 nested jit calls: the old summary (one copy per reference) was
    ~390 KB, over the sandbox's 256 KB file cap; the table is a few KB."""
    name = "accepted_nested_jit_tree.py"
    result = _stage_a(tmp_path, {name: (SAMPLES / name).read_bytes()})[name]
    assert result["status"] == "ok" and result["exports"] == {"poly": "poly.jaxexport"}
    assert result["_bytes"] < 10_000
    assert 5 < len(result["jaxpr"]["jaxprs"]) < 100


# -- what the grader says when stage A writes too much --------------------------------------------

_REFERENCE_BODY = PROBLEM.reference_path.read_text().replace(
    "from __future__ import annotations\n", "")


def test_the_submission_runs_with_the_garbage_collector_on(tmp_path: Path) -> None:
    """Stage A turns cyclic collection off while jax imports, and on again before the job,
    with what the imports made frozen (collections during the trace skip it)."""
    source = ("import gc\nif not gc.isenabled():\n    raise RuntimeError('gc is off')\n"
              "if gc.get_freeze_count() < 10_000:\n    raise RuntimeError('nothing frozen')\n"
              + _REFERENCE_BODY)
    result = _stage_a(tmp_path, {"gc_on.py": source.encode()})["gc_on.py"]
    assert result["status"] == "ok", result.get("message")



@pytest.mark.parametrize(
    ("prefix", "phrase"),
    [
        ('import sys\nsys.stdout.write("x" * 300_000)\nsys.stdout.flush()\n',
         "printed more than the limit of 256 KB; remove large prints"),
        ('with open("scratch.bin", "wb") as f:\n    f.write(b"x" * 300_000)\n',
         "wrote a file larger than the limit of 256 KB"),
    ],
    ids=["prints", "writes-a-file"],
)
def test_output_caps_name_what_overflowed(prefix: str, phrase: str) -> None:
    report = grade_module.grade(PROBLEM, prefix + _REFERENCE_BODY, "submit", filename="big.py")
    assert report.verdict.value == "runtime_error", report.message
    assert phrase in report.message, report.message


def test_a_huge_exception_name_stays_a_trace_error() -> None:
    """The exception's type name reaches result.json (error_type): bounded, so a 1 MB name is
    still the submission's error, not an overflow of the file cap."""
    source = _REFERENCE_BODY + (
        '\n\ndef solve(params, x, y):  # noqa: F811\n'
        '    raise type("E" * 1_000_000, (ValueError,), {})("boom")\n')
    report = grade_module.grade(PROBLEM, source, "submit", filename="huge_name.py")
    assert report.verdict.value == "runtime_error", report.message
    assert "raised an error while" in report.message and "boom" in report.message
    assert len(report.message) < 10_000


def test_summary_facts_survive_a_symbolic_scan_length() -> None:
    """A scan over a symbolic batch has a symbolic length: the summary leaves the length out
    instead of failing (which would send every such solution to per-shape exports)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import export as jax_export

    from jaxjudge.stages import trace

    checkpoint, policies = trace.prepare()
    (b,) = jax_export.symbolic_shape("B")
    spec = jax.ShapeDtypeStruct((b, 3), np.float32)
    closed = jax.jit(lambda x: jax.lax.map(jnp.sum, x)).trace(spec).jaxpr
    summary = trace.summarize_jaxpr(closed.jaxpr, checkpoint, policies)
    scans = [e for j in summary["jaxprs"] for e in j["eqns"] if e["primitive"] == "scan"]
    assert scans and "length" not in scans[0]
    concrete = jax.make_jaxpr(lambda x: jax.lax.map(jnp.sum, x))(np.ones((4, 3), np.float32))
    fixed = trace.summarize_jaxpr(concrete.jaxpr, checkpoint, policies)
    lengths = [e["length"] for j in fixed["jaxprs"] for e in j["eqns"] if e["primitive"] == "scan"]
    assert lengths == [4]


# -- every program that runs, and a traced argument misused in Python -----------------------------

_COUNTER = b"""
import jax.numpy as jnp

CALLS = [0]


def solve(params, x, y):
    CALLS[0] += 1
    n = int(x.shape[0])  # concrete shapes: one trace per signature
    f = jnp.sin if CALLS[0] % 2 else jnp.cos
    return {"loss": jnp.sum(f(x)) + n, "grads": params}
"""


def test_each_signature_reports_the_program_it_exports(tmp_path: Path) -> None:
    """On the per-signature path each test signature's summary is its own trace's, and the
    export reuses that trace: solve runs once per shape (a call counter alternating sin and cos
    shows a summary and an export of different calls), so the report reads the program that
    runs."""
    from jax import export as jax_export

    result = _stage_a(tmp_path, {"counter.py": _COUNTER})["counter.py"]
    assert result["status"] == "ok", result.get("message")
    sigs = [s["id"] for s in plan_module.plan_for(PROBLEM, "submit").signatures.values()]
    assert sorted(result["jaxpr_at"]) == sorted(sigs) and len(result["jaxprs"]) == 2
    seen = []
    for sig, k in result["jaxpr_at"].items():
        prims = {e["primitive"] for j in result["jaxprs"][k]["jaxprs"] for e in j["eqns"]}
        blob = bytearray((tmp_path / "counter" / result["exports"][sig]).read_bytes())
        text = jax_export.deserialize(blob).mlir_module()
        assert ("sin" in prims) == ("stablehlo.sine" in text) != ("cos" in prims), sig
        seen.append("sin" in prims)
    assert seen == [k % 2 == 1 for k in range(len(sigs))]  # call 1 was the symbolic attempt


TRACED = load_problem("traced-learning-rate-schedule")
_TRACED_ARGS = {"traced_arguments": [{"argument": "step", "path": [0], "value": 0}]}


@pytest.mark.parametrize(("body", "cause"), [
    ("lr = jnp.float32(0.1) * int(f'{step}')", True),  # a ValueError, not one of JAX's
    ("lr = jnp.asarray([0.1, 0.2], jnp.float32)[: step + 1][-1]", True),  # an IndexError
    ("lr = jax.jit(lambda t: jnp.float32(0.1 if t < 9 else 0.2))(step)", True),  # in a jit
    ("lr = jnp.float32(float(w[0]))", False),  # w, not step: still fails with step concrete
], ids=["fstring", "slice", "jitted-helper", "other-argument"])
def test_a_failed_trace_is_tried_again_with_the_argument_concrete(
        tmp_path: Path, body: str, cause: bool) -> None:
    source = f"import jax\nimport jax.numpy as jnp\n\ndef solve(step, w, g):\n    {body}\n" \
             "    return {'lr': lr, 'w': w - lr * g}\n"
    result = _stage_a(tmp_path, {"s.py": source.encode()}, TRACED, **_TRACED_ARGS)["s.py"]
    assert result["status"] == "trace_error", result
    assert [c["argument"] for c in result["traced_cause"]] == ["step"]
    assert result["traced_cause"][0]["concrete_ok"] is cause


def test_the_retry_has_its_own_time(tmp_path: Path) -> None:
    """A retry that never ends is cut by its own alarm: the failure stands, undecided."""
    source = (b"import jax.numpy as jnp\n\ndef solve(step, w, g):\n"
              b"    if not isinstance(step, int) and hasattr(step, 'aval'):\n"
              b"        raise ValueError('traced')\n"
              b"    while True:\n        pass\n")
    result = _stage_a(tmp_path, {"s.py": source}, TRACED, **_TRACED_ARGS)["s.py"]
    assert result["status"] == "trace_error" and "traced" in result["message"]
    assert result["traced_cause"] == [{"argument": "step"}]


STE = load_problem("straight-through-estimator")


def test_the_rules_of_a_custom_vjp_of_several_arrays_are_exported(tmp_path: Path) -> None:
    """Issue 41: a quantiser of x and a bound made from no input is exported as one
    shape-polymorphic rules program; one whose second argument solve computed from x and g
    (the clipped gradient carried in) is not, and the reason names the argument."""
    from jaxjudge.grading.rules_run import rules_request

    subs = STE.submissions_dir
    names = ("accepted_two_argument_quantiser.py", "req_second_argument_carries_the_gradient.py")
    results = _stage_a(tmp_path, {n: (subs / n).read_bytes() for n in names}, STE,
                       rules_run=rules_request(STE, plan_module.plan_for(STE, "submit")))
    honest, cheat = (results[n] for n in names)
    assert honest["status"] == cheat["status"] == "ok"
    assert honest.get("rules_signature") == "poly" and "rules_error" not in honest, honest
    assert "`carried` is computed from solve's arguments" in cheat["rules_error"]
