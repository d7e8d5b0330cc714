"""Fuzzing the stages' result files through the grader's real reading and deciding code.

Stage A's result.json is written beside user code (anything at all can be in it); stage B's
comes from trusted code that read attacker-made bytes. Whatever the file holds (random JSON,
wrong types, huge or non-finite numbers, deep nesting, unknown keys, not JSON at all), the
grader must answer with a verdict, never raise and never say `internal_error`. Hypothesis
writes the files; the grader's own methods read them (no sandbox per example, so this takes
seconds). tests/test_hardening.py has the end-to-end cases with real submissions.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jaxjudge import Grader, Limits, Verdict, load_problem
from jaxjudge.grading.pipeline import Grading as _Grading
from jaxjudge.grading.stage_common import MALFORMED_A, MALFORMED_B, MAX_RESULT_BYTES
from jaxjudge.grading.stage_common import Decided as _Decided
from jaxjudge.grading.stage_results import (
    MAX_JSON_DEPTH,
    MalformedResult,
    ResultTooDeep,
    parse_stage_a,
    parse_stage_b,
)
from jaxjudge.isolation import sandbox

PROBLEM = load_problem("rematerialized-mlp-block")
LIMITS = Limits(wall_seconds=6, cpu_seconds=3, memory_mb=1024, output_kb=64)
EXITED = sandbox.SandboxResult("exited", 0, None, 0.1, 0.1, None, "exit code 0", "", "")
TESTS = [c.name for c in PROBLEM.cases("run")]
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**400), max_value=10**400)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=30,
)
seconds = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**400), 10**400)
timings = st.dictionaries(st.text(max_size=80), seconds | json_values, max_size=40) | json_values


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=True).encode()


def _grading() -> _Grading:
    return _Grading(Grader(), PROBLEM, "def solve(params, x, y): pass\n", "run", LIMITS)


def _wrap_deep(inner: bytes, depth: int, opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    return opener * depth + inner + closer * depth


raw_files = st.one_of(
    st.binary(max_size=200),
    st.integers(1, 200_000).map(lambda n: _wrap_deep(b"1", n)),
    st.integers(1, 5000).map(lambda n: b'{"status": "ok", "timings": ' + b"9" * n + b"}"),
    json_values.map(_dumps),
)

@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A well-formed result with at most two fields replaced, dropped or added: most examples
    get past the schema and deep into the decision code."""
    obj = dict(draw(base))
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(sorted(obj)) | st.text(max_size=8))
        if draw(st.booleans()):
            obj[key] = draw(json_values)
        else:
            obj.pop(key, None)
    return obj



# -- stage A ---------------------------------------------------------------------------------

stage_a_objects = st.fixed_dictionaries(
    {"status": st.sampled_from(["ok", "compile_error", "runtime_error", "trace_error",
                                "export_error", "internal", "accepted"]) | json_values},
    optional={
        "message": st.text(max_size=50) | json_values | st.just("x" * 20_000),
        "timings": timings,
        "exports": st.dictionaries(st.text(max_size=12), st.text(max_size=20) | json_values,
                                   max_size=3) | json_values,
        "jaxpr": json_values,
        "jaxprs": st.lists(json_values, max_size=3) | json_values,
        "jaxpr_at": st.dictionaries(st.sampled_from(["s0", "s1", "x"]), st.integers(-1, 3),
                                    max_size=3) | json_values,
        "traced_cause": st.lists(st.fixed_dictionaries(
            {"argument": st.sampled_from(["step", "x"])},
            optional={"concrete_ok": st.booleans() | json_values}), max_size=2) | json_values,
        "jax_version": st.text(max_size=200) | json_values,
        "error_type": st.sampled_from(["MemoryError", "ConcretizationTypeError", "X"])
        | json_values,
        "signature": json_values,
        "verdict": st.just("accepted"),
    },
)


def _judge_stage_a(data: bytes, tmp: Path) -> Verdict | None:
    """What the grader makes of stage A's file: a verdict, or None when it lets grading go on
    (then the spec rule also has to cope with the jaxpr summary)."""
    path = tmp / "result.json"
    path.write_bytes(data)
    g = _grading()
    try:
        result = g._stage_a_result(path, EXITED)
    except _Decided as d:
        assert d.message.strip()
        return d.verdict
    g._check_requirements("spec", g._spec_summaries(result))
    assert result.status == "ok" and result.exports
    return None


well_formed_a = st.fixed_dictionaries({
    "status": st.just("ok"),
    "exports": st.just({"poly": "poly.jaxexport"}),
    "timings": st.dictionaries(st.sampled_from(["import_jax", "trace", "export"]),
                               st.floats(0, 100), max_size=3),
    "jaxpr": json_values,
    "jax_version": st.just("0.4.38"),
    "message": st.just(""),
})


@FUZZ
@given(data=(mutated(well_formed_a) | stage_a_objects).map(_dumps) | raw_files)
@example(data=b'{"status":"trace_error","error_type":"MemoryError"}')  # found: no message
def test_fuzzed_stage_a_results_get_verdicts(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        verdict = _judge_stage_a(data, Path(d))
    assert verdict is not Verdict.INTERNAL_ERROR


# -- stage B ---------------------------------------------------------------------------------

dtypes = st.sampled_from(["float32", "float64", "bfloat16", "float8_e4m3fn", "int4", "int32",
                          "bool", "complex64", "object", "<U3", "f4,f4", "nonsense"]) | st.text(
    max_size=12)
numbers = (st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**40), 10**40)
           | st.sampled_from(["nan", "inf", "-inf", "x"]) | st.booleans())


def sometimes_junk(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`strategy` nine times in ten, any JSON value otherwise."""
    return st.integers(0, 9).flatmap(lambda n: json_values if n == 0 else strategy)


@st.composite
def arrays(draw: st.DrawFn) -> dict[str, Any]:
    shape = draw(sometimes_junk(st.lists(st.integers(0, 3), max_size=3)))
    # A junk shape (any JSON value) may be a list of 40-digit ints: size the data only by a
    # shape the strategy above could draw.
    size = math.prod(shape) if isinstance(shape, list) and all(
        type(d) is int and 0 <= d <= 3 for d in shape) else 1
    data = draw(sometimes_junk(st.lists(numbers, min_size=size, max_size=size)))
    return {"t": "array", "dtype": draw(sometimes_junk(dtypes)), "shape": shape, "data": data}


tagged = st.recursive(
    arrays() | st.just({"t": "none"}) | sometimes_junk(arrays()),
    lambda inner: st.fixed_dictionaries({"t": st.just("list"), "v": st.lists(inner, max_size=3)})
    | st.fixed_dictionaries({"t": st.just("dict"),
                             "v": st.dictionaries(st.sampled_from(["loss", "grads", "w1", "b1",
                                                                   "w2", "b2"]), inner,
                                                  max_size=4)})
    | st.fixed_dictionaries({"t": st.sampled_from(["pickle", "dict", "list"]), "v": inner}),
    max_leaves=12,
)
outputs = sometimes_junk(
    st.fixed_dictionaries({"ok": st.just(True), "value": tagged})
    | st.fixed_dictionaries({"ok": st.just(False), "error": st.text(max_size=30)})
)


stage_b_objects = st.fixed_dictionaries(
    {"status": st.sampled_from(["ok", "rejected", "internal"]) | json_values},
    optional={
        "message": st.text(max_size=40) | json_values,
        "timings": timings,
        "programs": st.fixed_dictionaries(
            {"poly": st.fixed_dictionaries(
                {"text_file": st.just("poly.mlir") | json_values,
                 "args": st.lists(st.text(max_size=10), max_size=4) | json_values})})
        | json_values,
        "engines": st.lists(st.sampled_from(["xla", "interpret", "gpu"]), max_size=3)
        | json_values,
        "outputs": st.dictionaries(st.sampled_from([*TESTS, "other"]), outputs, max_size=5)
        | st.fixed_dictionaries({name: outputs for name in TESTS})
        | json_values,
        "cached": st.booleans() | json_values,
        "program": json_values,
    },
)


def _judge_stage_b(data: bytes, tmp: Path, text: bool = True) -> Verdict:
    """Stage B's file (and program text) through the grader: result, outcome, comparison and
    the final decision, as after a real stage B run."""
    (tmp / "result.json").write_bytes(data)
    if text:
        (tmp / "poly.mlir").write_text("module {}\n")
    g = _grading()
    progs = [{"id": "poly", "args": [], "signatures": []}]
    try:
        result, texts = g._stage_b_result(tmp, EXITED, ["poly"])
        outputs, _ = g._stage_b_outcome(result, texts, progs)
        g._compare(outputs)
    except _Decided as d:
        assert d.message.strip()
        return d.verdict
    report = g._decide()
    assert report.message.strip()
    return report.verdict


well_formed_b = st.fixed_dictionaries({
    "status": st.just("ok"),
    "programs": st.just({"poly": {"text_file": "poly.mlir", "args": ["params.w1"]}}),
    "engines": st.lists(st.sampled_from(["xla", "interpret"]), max_size=2),
    "timings": st.dictionaries(st.sampled_from(["verify", "execute"]),
                               st.floats(0, 100), max_size=2),
    "outputs": st.fixed_dictionaries({name: outputs for name in TESTS}),
})


@FUZZ
@given(data=(mutated(well_formed_b) | stage_b_objects).map(_dumps) | raw_files,
       text=st.booleans())
def test_fuzzed_stage_b_results_get_verdicts(data: bytes, text: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        verdict = _judge_stage_b(data, Path(d), text)
    assert verdict is not Verdict.INTERNAL_ERROR


# -- the cases the review found, by name -----------------------------------------------------

OK_A = {"status": "ok", "exports": {"poly": "poly.jaxexport"}, "jaxpr": {"eqns": []}}


@pytest.mark.parametrize(("patch", "verdict", "message"), [
    ({"timings": [1, 2]}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"timings": {"trace": 10**400}}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"timings": {"trace": math.inf}}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"timings": {"trace": True}}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"exports": ["poly"]}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"exports": {}}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"status": "accepted"}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"message": "x" * 100_000}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"status": "compile_error", "message": ["a"]}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"status": "trace_error", "error_type": 5}, Verdict.RUNTIME_ERROR, MALFORMED_A),
    ({"status": "compile_error", "message": "bad file"}, Verdict.COMPILE_ERROR, "bad file"),
    ({"status": "trace_error", "error_type": "TracerBoolConversionError", "message": "m"},
     Verdict.RUNTIME_ERROR, "cannot be traced"),
])
def test_named_stage_a_results(tmp_path: Path, patch: dict[str, Any], verdict: Verdict,
                               message: str) -> None:
    data = json.dumps({**OK_A, **patch}, allow_nan=True).encode()
    g = _grading()
    (tmp_path / "result.json").write_bytes(data)
    with pytest.raises(_Decided) as info:
        g._stage_a_result(tmp_path / "result.json", EXITED)
    assert info.value.verdict is verdict and message in info.value.message


def test_honest_stage_a_results_pass(tmp_path: Path) -> None:
    """What trace.py really writes, including unknown future keys and a deep (but readable)
    jaxpr summary: accepted as is."""
    summary: dict[str, Any] = {"eqns": [{"primitive": "tanh", "checkpoint": False,
                                         "policy": None, "differentiated": None,
                                         "prevent_cse": None, "jaxprs": []}]}
    for _ in range(150):  # 150 nested jits: 600 JSON levels
        summary = {"eqns": [{"primitive": "pjit", "checkpoint": False, "policy": None,
                             "differentiated": None, "prevent_cse": None,
                             "jaxprs": [summary]}]}
    obj = {**OK_A, "jaxpr": summary, "timings": {"import_jax": 1.2, "trace": 0},
           "jax_version": "0.4.38", "message": "", "new_key": [1, 2, 3]}
    (tmp_path / "result.json").write_bytes(json.dumps(obj).encode())
    result = _grading()._stage_a_result(tmp_path / "result.json", EXITED)
    assert result.exports == {"poly": "poly.jaxexport"} and result.timings["trace"] == 0.0


def test_too_deep_results_have_their_own_message(tmp_path: Path) -> None:
    deep = b'{"status": "ok", "exports": {"p": "p"}, "jaxpr": ' + _wrap_deep(b"1", 50_000) + b"}"
    with pytest.raises(ResultTooDeep):
        parse_stage_a(deep)
    deep_but_parsed = {**OK_A, "jaxpr": json.loads(_wrap_deep(b"1", MAX_JSON_DEPTH // 2))}
    parse_stage_a(json.dumps(deep_but_parsed).encode())  # honest depth: fine
    (tmp_path / "result.json").write_bytes(deep)
    with pytest.raises(_Decided) as info:
        _grading()._stage_a_result(tmp_path / "result.json", EXITED)
    assert info.value.verdict is Verdict.RUNTIME_ERROR and "nested too deeply" in info.value.message


def test_oversized_result_is_malformed_not_missing(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_bytes(b" " * (MAX_RESULT_BYTES + 1))
    with pytest.raises(_Decided) as info:
        _grading()._stage_a_result(path, EXITED)
    assert info.value.message == MALFORMED_A


def _ok_b(value: Any) -> dict[str, Any]:
    return {"status": "ok", "programs": {"poly": {"text_file": "poly.mlir", "args": []}},
            "engines": ["xla"], "outputs": {n: {"ok": True, "value": value} for n in TESTS}}


def test_stage_b_deep_output_is_a_wrong_answer(tmp_path: Path) -> None:
    node: dict[str, Any] = {"t": "none"}
    for _ in range(40):
        node = {"t": "list", "v": [node]}
    assert _judge_stage_b(_dumps(_ok_b(node)), tmp_path) is Verdict.WRONG_ANSWER


@pytest.mark.parametrize("obj", [
    {"status": "internal"},
    {"status": "ok", "outputs": {}},
    {**_ok_b({"t": "none"}), "outputs": {}},  # tests missing
    {**_ok_b({"t": "pickle", "v": "x"})},
    {**_ok_b({"t": "array", "dtype": "float32", "shape": [3], "data": [1]})},
    {**_ok_b({"t": "none"}), "timings": {"execute": -1}},
    {**_ok_b({"t": "none"}), "engines": "xla"},
])
def test_malformed_stage_b_results(tmp_path: Path, obj: dict[str, Any]) -> None:
    data = _dumps(obj)
    (tmp_path / "result.json").write_bytes(data)
    (tmp_path / "poly.mlir").write_text("module {}\n")
    g = _grading()
    with pytest.raises(_Decided) as info:
        result, texts = g._stage_b_result(tmp_path, EXITED, ["poly"])
        outputs, _ = g._stage_b_outcome(result, texts, [{"id": "poly", "args": []}])
        g._compare(outputs)
    assert info.value.verdict is Verdict.RUNTIME_ERROR and info.value.message == MALFORMED_B


def test_stage_b_parser_accepts_what_execute_writes() -> None:
    honest = {"status": "ok", "message": "", "timings": {"import_jax": 0.8, "verify": 0.05},
              "jax_version": "0.10.2", "programs": {"poly": {"text_file": "poly.mlir",
                                                             "args": ["params.w1", "x"]}},
              "engines": ["interpret"], "outputs": {"a": {"ok": False, "error": "boom"},
                                                    "b": {"ok": True, "value": {"t": "none"}}},
              "cached": True}
    result = parse_stage_b(_dumps(honest))
    assert result.outputs is not None and set(result.outputs) == {"a", "b"}
    with pytest.raises(MalformedResult):
        parse_stage_b(_dumps({**honest, "outputs": {"a": {"ok": 1, "value": None}}}))


@pytest.mark.parametrize(("error", "verdict"), [
    ("it depends on the value of the argument step.", Verdict.REQUIREMENT_FAILED),
    ("Abstract tracer value encountered", Verdict.REQUIREMENT_FAILED),
    ("it depends on the value of the argument w.", Verdict.RUNTIME_ERROR),
])
def test_a_trace_that_needs_a_traced_step_fails_its_requirement(
        tmp_path: Path, error: str, verdict: Verdict) -> None:
    """A problem with a `traced_input` requirement: concretizing that argument while tracing is
    that requirement's failure, with the reason; concretizing another stays a runtime error."""
    problem = load_problem("traced-learning-rate-schedule")
    g = _Grading(Grader(), problem, "def solve(step, w, g): pass\n", "run", LIMITS)
    patch = {"status": "trace_error", "error_type": "TracerBoolConversionError",
             "message": error}
    (tmp_path / "result.json").write_bytes(json.dumps({**OK_A, **patch}).encode())
    with pytest.raises(_Decided) as info:
        g._stage_a_result(tmp_path / "result.json", EXITED)
    assert info.value.verdict is verdict
    failed = [r.name for r in g.requirements if not r.passed]
    if verdict is Verdict.REQUIREMENT_FAILED:
        assert failed == ["step-is-traced"]
        assert "[step-is-traced] solve uses the value of step in Python" in info.value.message
    else:
        assert failed == [] and "cannot be traced by JAX" in info.value.message


def test_a_traced_static_argument_fails_a_traced_input_requirement(tmp_path: Path) -> None:
    """A tracer as a static argument of an inner jax.jit (a compile per value) is JAX's
    ValueError: a traced_input requirement's failure; elsewhere, a runtime error as before."""
    patch = {"status": "trace_error", "error_type": "ValueError",
             "message": "ValueError: Non-hashable static arguments are not supported."}
    (tmp_path / "result.json").write_bytes(json.dumps({**OK_A, **patch}).encode())
    traced = _Grading(Grader(), load_problem("traced-learning-rate-schedule"),
                      "def solve(step, w, g): pass\n", "run", LIMITS)
    with pytest.raises(_Decided) as info:
        traced._stage_a_result(tmp_path / "result.json", EXITED)
    assert info.value.verdict is Verdict.REQUIREMENT_FAILED
    assert "or a static argument of jax.jit" in info.value.message
    other = _grading()
    with pytest.raises(_Decided) as info:
        other._stage_a_result(tmp_path / "result.json", EXITED)
    assert info.value.verdict is Verdict.RUNTIME_ERROR
    assert "raised an error while tracing" in info.value.message and not other.requirements


_PASSING = {"root": 0, "jaxprs": [
    {"eqns": [{"primitive": "checkpoint", "checkpoint": True, "policy": "dots_saveable",
               "differentiated": True, "prevent_cse": True, "jaxprs": [1]}]},
    {"eqns": [{"primitive": "tanh"}]}]}
_NO_CHECKPOINT = {"root": 0, "jaxprs": [{"eqns": [{"primitive": "tanh"}]}]}


def test_a_spec_requirement_holds_only_at_every_signature(tmp_path: Path) -> None:
    """Per-signature summaries: a spec-level rule is applied to every test signature's own
    program, and a failure at one names its shapes."""
    g = _grading()
    sigs = {s["id"]: g.plan.sig_dims[s["id"]] for s in g.plan.signatures.values()}
    first, *rest = sigs
    at = {sig: (1 if sig == rest[-1] else 0) for sig in sigs}
    obj = {**OK_A, "exports": {s: f"{s}.jaxexport" for s in sigs},
           "jaxprs": [_PASSING, _NO_CHECKPOINT], "jaxpr_at": at}
    (tmp_path / "result.json").write_bytes(json.dumps(obj).encode())
    result = g._stage_a_result(tmp_path / "result.json", EXITED)
    g._check_requirements("spec", g._spec_summaries(result))
    (req,) = g.requirements
    where = ", ".join(f"{k}={v}" for k, v in sigs[rest[-1]].items())
    assert not req.passed and req.message.startswith(f"At {where}: No jax.checkpoint region")
    assert "It holds at " + ", ".join(f"{k}={v}" for k, v in sigs[first].items()) in req.message
    g.requirements = []
    g._check_requirements("spec", g._spec_summaries(result.model_copy(
        update={"jaxpr_at": dict.fromkeys(sigs, 0)})))
    assert [r.passed for r in g.requirements] == [True]


@pytest.mark.parametrize("patch", [
    {"jaxprs": [_PASSING], "jaxpr_at": {"s0": 1}},
    {"jaxprs": {"s0": _PASSING}, "jaxpr_at": {"s0": 0}},
    {"traced_cause": [{"argument": "step", "concrete_ok": 1}]},
])
def test_malformed_per_signature_fields(tmp_path: Path, patch: dict[str, Any]) -> None:
    with pytest.raises(MalformedResult):
        parse_stage_a(_dumps({**OK_A, **patch}))


@pytest.mark.parametrize(("cause", "error_type", "verdict", "phrase"), [
    ({"concrete_ok": True}, "ValueError", Verdict.REQUIREMENT_FAILED,
     "raised ValueError with step traced, and traces and exports once step is a concrete"),
    ({"concrete_ok": False}, "TracerBoolConversionError", Verdict.RUNTIME_ERROR,
     "cannot be traced by JAX"),
    ({"concrete_ok": False}, "IndexError", Verdict.RUNTIME_ERROR, "raised an error while"),
    ({}, "IndexError", Verdict.RUNTIME_ERROR, "raised an error while"),  # undecided: by name
])
def test_the_retry_with_a_concrete_step_decides(tmp_path: Path, cause: dict[str, Any],
                                                error_type: str, verdict: Verdict,
                                                phrase: str) -> None:
    """Whether the failure comes from the traced argument is decided by stage A's retry with
    it concrete, whatever Python raised: a forged answer only changes the submission's own
    runtime error into a failed requirement, and no points are paid either way."""
    problem = load_problem("traced-learning-rate-schedule")
    g = _Grading(Grader(), problem, "def solve(step, w, g): pass\n", "run", LIMITS)
    patch = {"status": "trace_error", "error_type": error_type, "message": "m",
             "traced_cause": [{"argument": "step", **cause}]}
    (tmp_path / "result.json").write_bytes(json.dumps({**OK_A, **patch}).encode())
    with pytest.raises(_Decided) as info:
        g._stage_a_result(tmp_path / "result.json", EXITED)
    assert info.value.verdict is verdict and phrase in info.value.message
    failed = [r.name for r in g.requirements if not r.passed]
    assert failed == (["step-is-traced"] if verdict is Verdict.REQUIREMENT_FAILED else [])
    report = g._report(info.value.verdict, info.value.message)
    assert report.score == 0.0


@pytest.mark.parametrize(("seconds", "ok"), [
    (0.25, True), (None, True), (-1.0, False), (1e9, False), ("1", False), (True, False),
])
def test_a_tests_time_is_a_bounded_number(seconds: Any, ok: bool) -> None:
    """Stage B's per-test time reaches the report's Time column: a bounded float or nothing."""
    from pydantic import ValidationError

    from jaxjudge.grading.stage_results import OutputFailed, OutputOk

    for model, body in ((OutputOk, {"ok": True, "value": 1}),
                        (OutputFailed, {"ok": False, "error": "boom"})):
        raw = {**body, **({} if seconds is None else {"seconds": seconds})}
        if ok:
            assert model.model_validate(raw).seconds == seconds
        else:
            with pytest.raises(ValidationError):
                model.model_validate(raw)


def test_a_trajectory_says_after_which_steps_its_rows_were_taken() -> None:
    """The rule reads row i as the outputs after at[i] steps: rows that do not match their
    steps (one missing, out of order, not from 0 to the end) are refused, not misread."""
    from pydantic import ValidationError

    from jaxjudge.grading.stage_results import TrajectoryLoop

    rows = [[0.0], [1.0], [2.0]]
    assert TrajectoryLoop(index=3, steps=2, rows=rows).at == []
    assert TrajectoryLoop(index=3, steps=8, rows=rows, at=[0, 4, 8]).at == [0, 4, 8]
    for steps, at in ((8, []), (8, [0, 4]), (8, [0, 8, 4]), (8, [1, 4, 8]), (4, [0, 4, 8])):
        with pytest.raises(ValidationError):
            TrajectoryLoop(index=3, steps=steps, rows=rows, at=at)
