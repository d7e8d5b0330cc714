"""Stage B's engines (jaxjudge/stages/execute.py): the StableHLO reference interpreter and XLA.

The interpreter path must give the numbers XLA gives (to well within the grading tolerance),
refuse every program it is not safe or cheap for, and a grade must survive the interpreter
dying under it. The stage module is self-contained, so it is imported here directly.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import jax
import numpy as np
import pytest
from helpers import grade_through
from jax import export

from jaxjudge import Grader, Report, Verdict, load_problem
from jaxjudge.grading.grader import engine_from_env
from jaxjudge.grading.stage_common import STAGES_DIR
from jaxjudge.isolation import sandbox

PROBLEM = load_problem("rematerialized-mlp-block")
REFERENCE = PROBLEM.reference_path.read_text()
STAGES = STAGES_DIR


def _load_stage(name: str):
    spec = importlib.util.spec_from_file_location(f"jaxjudge_test_{name}", STAGES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


execute = _load_stage("execute")


def _reference_solve():
    spec = importlib.util.spec_from_file_location("jaxjudge_test_reference",
                                                  PROBLEM.reference_path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solve


def _poly_export(fn):
    b, d, h = export.symbolic_shape("B, D, H")

    def s(*shape):
        return jax.ShapeDtypeStruct(shape, np.float32)

    exp = export.export(jax.jit(fn))({"w1": s(d, h), "b1": s(h), "w2": s(h, d), "b2": s(d)},
                                     s(b, d), s(b, d))
    return exp.serialize()


def _symbolic_spec() -> list:
    def leaf(*shape):
        return {"shape": list(shape), "dtype": "float32"}

    return [{"b1": leaf("H"), "b2": leaf("D"), "w1": leaf("D", "H"), "w2": leaf("H", "D")},
            leaf("B", "D"), leaf("B", "D")]


def _spec(case_inputs) -> list:
    def leaf(a):
        return {"shape": list(np.shape(a)), "dtype": "float32"}

    return [{k: leaf(v) for k, v in case_inputs["params"].items()},
            leaf(case_inputs["x"]), leaf(case_inputs["y"])]


def _arrays(case_inputs):
    p = {k: np.asarray(v, np.float32) for k, v in case_inputs["params"].items()}
    return p, np.asarray(case_inputs["x"], np.float32), np.asarray(case_inputs["y"], np.float32)


def test_interpreter_matches_xla_on_every_hidden_case() -> None:
    blob = _poly_export(_reference_solve())
    reader = execute._reader()
    exp, context = reader.read(blob), reader.make_context()
    checked = execute._check_program(exp, _symbolic_spec(), ["params", "x", "y"],
                                     {"shape_assertion"}, 8_000_000, context)
    spec = execute._specializer(exp, checked["text"], np, context)
    if spec is None:
        pytest.skip("this jaxlib has no StableHLO interpreter")
    xla = jax.jit(export.deserialize(bytearray(blob)).call)
    rtol, atol = PROBLEM.tolerance.rtol, PROBLEM.tolerance.atol
    by_shape: dict = {}
    for case in PROBLEM.cases("submit"):
        key = str(_spec(case.inputs))
        if key not in by_shape:
            by_shape[key] = spec.at(_spec(case.inputs))
        fn = by_shape[key]
        assert fn is not None, f"{case.name}: the reference was not interpretable"
        got = jax.tree_util.tree_leaves(fn(*_arrays(case.inputs)))
        want = jax.tree_util.tree_leaves(xla(*_arrays(case.inputs)))
        assert len(got) == len(want) == 5
        for g, w in zip(got, want, strict=True):
            w = np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape
            # A quarter of the tolerance: the two engines round differently, never by much.
            assert np.all(np.abs(g - w) <= 0.25 * (atol + rtol * np.abs(w))), case.name


def _refined_text(fn, *args) -> str:
    from jax._src.interpreters import mlir

    lowered = jax.jit(fn).lower(*args)
    module = mlir.refine_polymorphic_shapes(lowered.compiler_ir("stablehlo"))
    with module.context:
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


def test_interpretable_accepts_small_elementwise_programs() -> None:
    x = np.ones((3, 4), np.float32)
    assert execute._interpretable(_refined_text(lambda a: jax.numpy.tanh(a @ a.T).sum(), x))


@pytest.mark.parametrize(
    "why, fn, args",
    [
        ("a loop", lambda a: jax.lax.fori_loop(0, 3, lambda i, c: c * 2.0, a),
         (np.ones(3, np.float32),)),
        ("integer division", lambda a: a // 3, (np.arange(6, dtype=np.int32),)),
        ("a big tensor", lambda a: a * 2.0, (np.ones((200, 200), np.float32),)),
        ("a sort", lambda a: jax.numpy.sort(a), (np.ones(5, np.float32),)),
        ("too much work", lambda a: (a[:, None] * a[None, :]).sum(),
         (np.ones(4000, np.float32),)),
        ("big matmuls", lambda a: (a @ a @ a @ a).sum(), (np.ones((128, 128), np.float32),)),
    ],
)
def test_interpretable_refuses(why: str, fn, args) -> None:
    assert not execute._interpretable(_refined_text(fn, *args)), why


def test_interpretable_refuses_dynamic_shapes_and_empty_text() -> None:
    assert not execute._interpretable("")
    text = '%0 = "stablehlo.tanh"(%arg0) : (tensor<?x3xf32>) -> tensor<?x3xf32>'
    assert not execute._interpretable(text)


@pytest.mark.parametrize("engine", ["interpret", "xla"])
def test_both_engines_accept_the_reference(engine: str) -> None:
    report = Grader(engine=engine).grade(PROBLEM, REFERENCE, "submit")
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.versions.get("engine") == engine


def test_loops_run_on_xla_under_the_interpret_engine() -> None:
    looped = REFERENCE.replace(
        "    return jnp.mean((out - y) ** 2)",
        "    sq = jax.lax.fori_loop(0, 1, lambda i, acc: acc + (out - y) ** 2, jnp.zeros_like(y))\n"
        "    return jnp.mean(sq)",
    )
    assert looped != REFERENCE
    report = Grader(engine="interpret").grade(PROBLEM, looped, "run")
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.versions.get("engine") == "xla"


def test_a_dying_interpreter_falls_back_to_xla() -> None:
    """The interpreter aborts the process on what it cannot do; the grade reruns on XLA."""
    calls: list[str] = []

    def runner(script, job_dir, limits, untrusted, env):
        if script.name == "execute.py":
            engine = __import__("json").loads((job_dir / "job.json").read_text())["engine"]
            calls.append(engine)
            if engine == "interpret":  # what an LLVM fatal error looks like from outside
                crash = job_dir / "crash.py"
                crash.write_text("import os\nos.abort()\n")
                return sandbox.run(crash, job_dir, limits, env=env, untrusted=False)
        return sandbox.run_stage(script, job_dir, limits, env=env, untrusted=untrusted)

    # Stage B must really run: no program cache.
    g = Grader(runner=runner, engine="interpret", program_cache=0)
    report = g.grade(PROBLEM, REFERENCE + "\n# crash test\n", "run")
    assert calls == ["interpret", "xla"]
    assert report.verdict is Verdict.ACCEPTED, report.message
    assert report.timings.get("stage_b.interpret_crash") == 1.0
    assert report.versions.get("engine") == "xla"


def test_a_bad_engine_setting_is_a_caller_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError):
        Grader(engine="gpu")
    monkeypatch.setenv("JAXJUDGE_ENGINE", "fast")
    with pytest.raises(ValueError, match="JAXJUDGE_ENGINE"):
        Grader()
    monkeypatch.setenv("JAXJUDGE_ENGINE", "XLA")
    assert engine_from_env() == "xla"


def test_zygote_warm_up_leaves_the_process_fork_safe() -> None:
    """The pool's zygote warms jax and MLIR before forking; it must stay single-threaded with
    no backend, or every fork would hang at its first compile."""
    code = (
        "import os, runpy, sys\n"
        f"z = runpy.run_path({str(STAGES / 'zygote.py')!r}, run_name='z')\n"
        "z['_warm_up']()\n"
        f"t = runpy.run_path({str(STAGES / 'trace.py')!r}, run_name='t')\n"
        "t['warm_zygote']()\n"
        "assert t['prepare']()[1]\n"
        "from jax._src import xla_bridge\n"
        "print(z['_contamination'](xla_bridge) or 'clean')\n"
    )
    import subprocess

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-1] == "clean", out.stdout + out.stderr


def test_one_program_from_different_sources_runs_stage_b_once() -> None:
    """The parent's cache of stage B results is keyed by the exported bytes, which carry one
    source location per op: the same code with other comments after it shares one stage B run;
    moved code (renamed helpers, lines added above) runs its own, so its report names its own
    lines, never those of the source that filled the cache."""
    unique = f"** 2 + jnp.float32({os.getpid()}{len(REFERENCE)}.0) * 0)"
    source = REFERENCE.replace("** 2)", unique)
    assert source != REFERENCE
    commented = source + "\n# checked against the statement's examples\n"
    moved = "# my own solution\n\n\n" + source.replace("_block", "_my_block").replace(
        "_loss", "_objective")
    wrong = source.replace("** 2 +", "** 3 +")
    runs: list[str] = []

    def runner(script, job_dir, limits, untrusted, env):
        runs.append(script.name)
        return sandbox.run_stage(script, job_dir, limits, env=env, untrusted=untrusted)

    first, again, elsewhere, other = grade_through(runner, PROBLEM,
                                                   [source, commented, moved, wrong])
    assert first.verdict is again.verdict is elsewhere.verdict is Verdict.ACCEPTED, (
        first.message, again.message, elsewhere.message)
    assert runs == ["trace.py", "execute.py", "trace.py", "trace.py", "execute.py",
                    "trace.py", "execute.py"]
    assert "stage_b.cached" in again.timings and "stage_b.cached" not in first.timings
    assert [t.model_dump() for t in again.tests] == [t.model_dump() for t in first.tests]
    assert again.requirements == first.requirements

    def lines(report: Report) -> list[int]:
        return [n for r in report.requirements if r.evidence for n in r.evidence.source_lines]

    assert lines(first) and lines(elsewhere) == [n + 3 for n in lines(first)]
    assert other.verdict is Verdict.WRONG_ANSWER  # a different program runs for real



def _chain(depth: int, calls_each: int = 2, back: bool = False) -> str:
    """A generic-form module whose main calls f0, each f_i calls f_{i+1} `calls_each` times
    (and the last one calls f0 again when `back`): a few lines that run 2**depth calls."""
    ty = "tensor<2xf32>"
    fns = []
    for i in range(depth + 1):
        name = "main" if i == 0 else f"f{i - 1}"
        callee = f"f{i}" if i < depth else ("f0" if back else None)
        body = [f'    %0 = "stablehlo.tanh"(%arg0) : ({ty}) -> {ty}']
        if callee is not None:
            body += [f'    %{k + 1} = "func.call"(%{k}) <{{callee = @{callee}}}> : ({ty}) -> {ty}'
                     for k in range(calls_each if name != "main" else 1)]
        last = len(body) - 1
        head = f'"func.func"() <{{function_type = ({ty}) -> {ty}, sym_name = "{name}"}}>'
        fns.append(f"  {head} ({{\n  ^bb0(%arg0: {ty}):\n" + "\n".join(body) + "\n"
                   f'    "func.return"(%{last}) : ({ty}) -> ()\n  }}) : () -> ()')
    return '"builtin.module"() ({\n' + "\n".join(fns) + "\n}) : () -> ()\n"


def test_calls_are_counted_as_often_as_they_run() -> None:
    graph = execute._calls(_chain(3))
    assert graph == {"main": ["f0"], "f0": ["f1", "f1"], "f1": ["f2", "f2"], "f2": []}
    order = execute._call_order(graph)
    assert order is not None and order.index("f2") < order.index("f1") < order.index("f0")
    assert execute._runs(graph, order, 100) == {"main": 1, "f0": 1, "f1": 2, "f2": 4}
    deep = execute._calls(_chain(40))
    assert execute._runs(deep, execute._call_order(deep), execute.MAX_CALLS) is None
    assert execute._call_order(execute._calls(_chain(3, back=True))) is None
    quoted = _chain(2, back=True).replace("callee = @f0", 'callee = @"f0"')
    assert execute._call_order(execute._calls(quoted)) is None  # a quoted name is one symbol


def test_a_tree_of_calls_is_interpreted_only_while_its_runs_are_few() -> None:
    assert execute._interpretable(_chain(3))
    assert not execute._interpretable(_chain(20))  # a million calls: XLA (or the limits)
    assert not execute._interpretable(_chain(3, back=True))  # recursion: never interpreted
