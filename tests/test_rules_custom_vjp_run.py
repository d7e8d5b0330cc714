"""`custom_vjp_rules_run`: the custom_vjp's rules on their own. Stage A's `rules_function`
on real custom_vjp objects (nondiff arguments, tuple residuals, calls it cannot reproduce),
stage B's comparison (`_part_diff`), the trusted side's record (`rules_run`, which never names
a hidden test's values), the schema of stage B's records, and the rule's messages."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxjudge import load_problem
from jaxjudge.analysis.executed_rules import RuleMismatch, RulesRun
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.grading.plan import plan_for
from jaxjudge.grading.rules_run import rules_programs, rules_request, rules_run
from jaxjudge.grading.stage_results import MalformedResult, parse_stage_a, parse_stage_b
from jaxjudge.rules import PROGRAM_RULES
from jaxjudge.stages import execute, trace

PROBLEM = load_problem("straight-through-estimator")
CHECK = PROGRAM_RULES["custom_vjp_rules_run"]
OPTIONS = {"argument": "x", "cotangent": "g", "primal_output": "y", "gradient_output": "dx",
           "forward_work": "the sign", "backward_work": "the clipping"}


def _sign(x: jax.Array) -> jax.Array:
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def _rules_of(solve: Any, x: jax.Array, g: jax.Array) -> Any:
    """Trace `solve` under stage A's watcher, then ask it for the rules function."""
    calls = trace._CustomRuleCalls(jax)
    with calls:
        calls.closed = jax.make_jaxpr(solve)(x, g)
    return calls.rules_function({"argument": 0, "cotangent": 1})


X = jnp.array([-2.0, -0.5, 0.0, 0.5, 2.0], jnp.float32)
G = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0], jnp.float32)
BAND = np.array([0.0, 2.0, 3.0, 4.0, 0.0], np.float32)


def test_rules_function_runs_the_rules_with_a_nondiff_bound_and_tuple_residuals() -> None:
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def q(x: jax.Array, bound: float) -> jax.Array:
        return _sign(x)

    q.defvjp(lambda x, bound: (q(x, bound), (x,)),
             lambda bound, res, g: (jnp.where(jnp.abs(res[0]) <= bound, g, 0.0),))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": q(x, 1.0), "dx": jax.vjp(lambda v: q(v, 1.0), x)[1](g)[0]}

    rules = _rules_of(solve, X, G)
    assert callable(rules)
    out = jax.jit(rules)(X, G)
    np.testing.assert_array_equal(out["function"], _sign(X))
    np.testing.assert_array_equal(out["forward"], _sign(X))
    np.testing.assert_array_equal(out["backward"], BAND)


def _rank_switching() -> Any:
    """A quantiser honest for 1-D x and an identity (gradient unclipped) for any other rank."""
    @jax.custom_vjp
    def q(x: jax.Array) -> jax.Array:
        return _sign(x) if x.ndim == 1 else x

    q.defvjp(lambda x: (q(x), x),
             lambda x, g: (jnp.where(jnp.abs(x) <= 1.0, g, 0.0) if x.ndim == 1 else g,))
    return q


def test_the_rules_also_run_at_each_other_shape_they_were_called_at() -> None:
    q = _rank_switching()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        _ = jax.vjp(q, x)[1](g)
        v, vjp = jax.vjp(q, jnp.pad(x, (0, 1))[None])  # (1, N + 1): no multiple of N
        return {"y": _sign(v[0, :-1]), "dx": vjp(jnp.pad(g, (0, 1))[None])[0][0, :-1]}

    out = jax.jit(_rules_of(solve, X, G))(X, G)
    np.testing.assert_array_equal(out["function"], _sign(X))  # x's own shape: honest
    np.testing.assert_array_equal(out["backward"], BAND)
    np.testing.assert_array_equal(out["function@1"], X)  # at (1, N + 1): the identity
    np.testing.assert_array_equal(out["backward@1"], G)
    np.testing.assert_array_equal(out["backward@2"], BAND)  # no third shape: x's again


def test_honest_rules_give_the_same_values_at_every_shape_symbolic_too() -> None:
    @jax.custom_vjp
    def q(x: jax.Array) -> jax.Array:
        return _sign(x)

    q.defvjp(lambda x: (q(x), x), lambda x, g: (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y = q(jnp.pad(x, (0, (-x.shape[0]) % 8)))[: x.shape[0]]  # a padded bucket
        return {"y": y + 0 * jax.vmap(q)(x), "dx": jax.vjp(q, x)[1](g)[0]}

    from jax import export  # `jax.export` is not an attribute in jax 0.4.38

    (n,) = export.symbolic_shape("N")
    spec = jax.ShapeDtypeStruct((n,), jnp.float32)
    calls = trace._CustomRuleCalls(jax)
    with calls:
        jax.make_jaxpr(solve)(spec, spec)
    rules = calls.rules_function({"argument": 0, "cotangent": 1})
    assert [shape for shape, _ in calls.call_shapes[0]] == [(n + (-n) % 8,), (), (n,)]
    exported = export.export(jax.jit(rules))(spec, spec)
    out = exported.call(X, G)
    for name in ("", "@1", "@2"):
        np.testing.assert_array_equal(out[f"function{name}"], _sign(X))
        np.testing.assert_array_equal(out[f"backward{name}"], BAND)


def test_the_rules_also_run_at_another_dtype_they_were_called_at() -> None:
    """Rules honest for float32 and an identity for complex64, called only on
    x.astype(complex64) (exact): run at that dtype too, on x cast to it, real part back."""
    @jax.custom_vjp
    def q(x: jax.Array) -> jax.Array:
        return x if jnp.iscomplexobj(x) else _sign(x)

    q.defvjp(lambda x: (q(x), x), lambda x, g: (
        g if jnp.iscomplexobj(x) else jnp.where(jnp.abs(x) <= 1.0, g, 0.0),))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        v, vjp = jax.vjp(q, x.astype(jnp.complex64))
        (d,) = vjp(jnp.where(jnp.abs(x) <= 1.0, g, 0.0).astype(jnp.complex64))
        return {"y": _sign(jnp.real(v)), "dx": jnp.real(d)}

    out = jax.jit(_rules_of(solve, X, G))(X, G)
    np.testing.assert_array_equal(out["function"], _sign(X))  # x's own dtype: honest
    np.testing.assert_array_equal(out["function@1"], X)  # complex64: the identity
    np.testing.assert_array_equal(out["backward@1"], G)


def test_stage_a_exports_exactly_the_parts_the_schema_reads() -> None:
    """Stage A runs the rules at EXTRA_SHAPES other shapes; stage B's schema names each part
    at each of them: the two must not drift apart (a part the schema lacks is refused as
    malformed, one stage A never writes is compared as missing)."""
    from jaxjudge.grading.stage_results import RULE_PARTS

    q = _rank_switching()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": _sign(x), "dx": jax.vjp(q, x)[1](g)[0]}

    out = jax.jit(_rules_of(solve, X, G))(X, G)
    assert sorted(out) == sorted(RULE_PARTS)
    assert len(RULE_PARTS) == 3 * (1 + trace._CustomRuleCalls.EXTRA_SHAPES)


def test_a_function_called_at_more_shapes_than_are_run_is_refused() -> None:
    q = _rank_switching()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        for shaped in (x, x[None], x[:, None], x[None, None]):
            _ = q(shaped)
        return {"y": _sign(x), "dx": jax.vjp(q, x)[1](g)[0]}

    reason = _rules_of(solve, X, G)
    assert isinstance(reason, str) and "more than 3 shapes" in reason


def test_rules_function_says_why_it_cannot_run_the_rules() -> None:
    @jax.custom_vjp
    def scaled(x: jax.Array, s: jax.Array) -> jax.Array:
        return _sign(x) * s

    scaled.defvjp(lambda x, s: (scaled(x, s), (x, s)), lambda r, g: (g * r[1], g * r[0]))

    def scaled_by_x(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": scaled(x, x * x), "dx": g}

    def none(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": _sign(x), "dx": g}

    assert "`s` is computed from solve's arguments" in _rules_of(scaled_by_x, X, G)
    assert "no jax.custom_vjp" in _rules_of(none, X, G)


# -- a custom_vjp of several arguments (issue 41) ------------------------------------------------

def _banded() -> Any:
    """`q(x, lo, hi)`: the sign, and x's gradient clipped to lo <= x <= hi; the bounds'
    cotangents are nonsense (the rules run compares x's only)."""
    @jax.custom_vjp
    def q(x: jax.Array, lo: Any, hi: Any) -> jax.Array:
        return _sign(x)

    def bwd(res: Any, g: jax.Array) -> tuple:
        x, lo, hi = res
        return jnp.where((x >= lo) & (x <= hi), g, 0.0), lo * 7, jax.tree.map(jnp.sin, hi)

    q.defvjp(lambda x, lo, hi: (q(x, lo, hi), (x, lo, hi)), bwd)
    return q


@pytest.mark.parametrize("call", [
    lambda q, x: q(x, -jnp.ones_like(x), jnp.float32(1.0)),  # from no input; a scalar
    lambda q, x: q(x, hi=jnp.full(x.shape, 1.0), lo=-1.0),  # keywords, a Python number
], ids=["arrays", "keywords"])
def test_the_rules_run_with_the_other_arguments_solve_gave(call: Any) -> None:
    _check_banded_run(_banded(), call)


def test_the_other_arguments_may_be_pytrees() -> None:
    @jax.custom_vjp
    def q(x: jax.Array, lo: Any, hi: Any) -> jax.Array:
        return _sign(x)

    q.defvjp(lambda x, lo, hi: (q(x, lo, hi), (x, lo[0], hi["top"])),
             lambda r, g: (jnp.where((r[0] >= r[1]) & (r[0] <= r[2]), g, 0.0),
                           (0.0, jnp.float32(0.0)), {"top": jnp.zeros_like(r[2])}))
    _check_banded_run(q, lambda q, x: q(x, (-1.0, jnp.float32(-2.0)),
                                        {"top": jnp.ones_like(x)}))


def _check_banded_run(q: Any, call: Any) -> None:
    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(lambda v: call(q, v), x)
        return {"y": y, "dx": vjp(g)[0]}

    rules = _rules_of(solve, X, G)
    assert callable(rules), rules
    out = jax.jit(rules)(X, G)
    np.testing.assert_array_equal(out["function"], _sign(X))
    np.testing.assert_array_equal(out["forward"], _sign(X))
    np.testing.assert_array_equal(out["backward"], BAND)
    np.testing.assert_array_equal(out["backward@2"], BAND)  # no other shape: x's own again


def test_solves_own_argument_is_given_to_the_rules_as_each_test_has_it() -> None:
    """`q(x, g)`: g is an input of the rules program, so the rules see each test's g."""
    @jax.custom_vjp
    def q(x: jax.Array, h: jax.Array) -> jax.Array:
        return _sign(x)

    q.defvjp(lambda x, h: (q(x, h), (x, h)),
             lambda r, g: (jnp.where(jnp.abs(r[0]) <= 1.0, r[1], 0.0), g))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(lambda v: q(v, g), x)
        return {"y": y, "dx": vjp(jnp.zeros_like(g))[0]}

    rules = jax.jit(_rules_of(solve, X[:2], G[:2]))
    np.testing.assert_array_equal(rules(X, G)["backward"], BAND)


def test_an_argument_computed_from_solves_arguments_is_refused() -> None:
    """The work carried in: the clipped gradient handed back, a mask multiplied by."""
    @jax.custom_vjp
    def q(x: jax.Array, carried: jax.Array) -> jax.Array:
        return _sign(x)

    q.defvjp(lambda x, c: (q(x, c), c), lambda c, g: (c * (g == g), jnp.zeros_like(c)))

    def carried(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(q, x, jnp.where(jnp.abs(x) <= 1.0, g, 0.0))
        return {"y": y, "dx": vjp(g)[0]}

    def swapped(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:  # x given second
        return {"y": q(jnp.where(jnp.abs(x) <= 1.0, g, 0.0), x), "dx": g}

    assert "`carried` is computed from solve's arguments" in _rules_of(carried, X, G)
    assert "`x` is computed from solve's arguments" in _rules_of(swapped, X, G)


@pytest.mark.parametrize(("where", "phrase"), [
    ("jit", "could not be followed to solve's arguments"),
    ("vmap", "at another shape than solve computed it"),
    ("nox", "none of its array arguments is x itself"),
])
def test_several_arguments_the_run_cannot_follow_are_refused(where: str, phrase: str) -> None:
    q = _banded()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        ones = jnp.ones_like(x)
        if where == "jit":
            y = jax.jit(lambda v: q(v, -ones, ones))(x)
        elif where == "vmap":
            y = jax.vmap(q)(x, -ones, ones)
        else:
            y = q(-ones, -ones, ones)
        return {"y": y, "dx": g}

    reason = _rules_of(solve, X, G)
    assert isinstance(reason, str) and phrase in reason, reason


def test_several_arguments_export_at_a_symbolic_size() -> None:
    """The constants are computed again by solve's own steps, at the rules program's size."""
    from jax import export

    q = _banded()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(q, x, jnp.full_like(x, -1.0), jnp.ones_like(x))
        return {"y": y, "dx": vjp(g)[0]}

    (n,) = export.symbolic_shape("N")
    spec = jax.ShapeDtypeStruct((n,), jnp.float32)
    rules = _rules_of(solve, spec, spec)
    out = export.export(jax.jit(rules))(spec, spec).call(X, G)
    np.testing.assert_array_equal(out["function"], _sign(X))
    np.testing.assert_array_equal(out["backward"], BAND)


def test_a_custom_vjp_called_two_ways_is_not_run_as_one_of_them() -> None:
    """The rules run replays one call (red-team rounds): a quantiser called with two nondiff
    bounds (1.0 for a dropped decoy, 1e30 for the values returned), one whose backward rule
    reads a global changed between calls (the programs print alike: their constants differ),
    and two custom_vjp functions whose backward rules both ran are refused. Called at two
    shapes the same way (vmap for y, vjp for dx: honest) it runs; so does a rank switch
    (a stated limit)."""
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def q(x: jax.Array, bound: float) -> jax.Array:
        return _sign(x)

    q.defvjp(lambda x, bound: (q(x, bound), x),
             lambda bound, x, g: (jnp.where(jnp.abs(x) <= bound, g, 0.0),))

    def two_bounds(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        jax.vjp(lambda v: q(v, 1.0), x)[1](g)
        y, vjp = jax.vjp(lambda v: q(v, 1e30), x)
        return {"y": y, "dx": jnp.where(jnp.abs(x) <= 1.0, vjp(g)[0], 0.0)}

    bound = [1.0]

    @jax.custom_vjp
    def r(x: jax.Array) -> jax.Array:
        return _sign(x)

    r.defvjp(lambda x: (_sign(x), x), lambda x, g: (
        jnp.where(jnp.abs(x) <= np.full((1,), bound[0], np.float32), g, 0.0),))

    def global_changed(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        bound[0] = 1.0
        jax.vjp(r, x)[1](g)
        bound[0] = np.inf
        y, vjp = jax.vjp(r, x)
        return {"y": y, "dx": jnp.where(jnp.abs(x) <= 1.0, vjp(g)[0], 0.0)}

    def two_functions(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        jax.vjp(lambda v: q(v, 1.0), x)[1](g)
        y, vjp = jax.vjp(r, x)
        return {"y": y, "dx": vjp(g)[0]}

    def two_shapes(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": jax.vmap(lambda v: q(v, 1.0))(x),
                "dx": jax.vjp(lambda v: q(v, 1.0), x)[1](g)[0]}

    assert "different values of its other arguments" in _rules_of(two_bounds, X, G)
    assert "different programs on two calls" in _rules_of(global_changed, X, G)
    assert "backward rules of 2 custom_vjp functions" in _rules_of(two_functions, X, G)
    assert callable(_rules_of(two_shapes, X, G))


def test_part_diff_counts_beyond_the_tolerance_only() -> None:
    want = np.array([1.0, 2.0, np.nan, 4.0])
    assert execute._part_diff(want * (1 + 1e-7), want, 1e-6, 0.0, np) is None
    d = execute._part_diff(np.array([1.0, 2.5, np.nan, 0.0]), want, 1e-6, 0.0, np)
    assert d == {"differing": 2, "total": 4, "index": [1], "rule": 2.5, "solve": 2.0}
    assert execute._part_diff(np.zeros(3), want, 1e-6, 0.0, np) == {"differing": 4,
                                                                    "total": 4}


def _stage_b(rule_outputs: dict[str, Any]) -> Any:
    return parse_stage_b(json.dumps({
        "status": "ok", "programs": {}, "outputs": {}, "rule_outputs": rule_outputs}).encode())


def test_rules_run_names_values_of_visible_tests_only() -> None:
    plan = plan_for(PROBLEM, "submit")
    visible = next(c for c in plan.cases if c.visible)
    hidden = next(c for c in plan.cases if not c.visible)
    diff = {"differing": 1, "total": 7, "index": [0], "rule": 1.0, "solve": 0.0}
    stage_a = parse_stage_a(json.dumps({"status": "ok", "exports": {
        "poly": "poly.jaxexport", "rules": "rules.jaxexport"}, "rules_signature": "poly"}
    ).encode())
    run = rules_run(PROBLEM, plan, stage_a, _stage_b({
        hidden.name: {"ok": True, "parts": {"backward": diff}},
        visible.name: {"ok": True, "parts": {}}}))
    assert run is not None and run.tests == 2 and len(run.mismatches) == 1
    m = run.mismatches[0]
    assert not m.visible and m.index == () and m.input_value is None
    text = CHECK([ProgramInfo("N", "", [], [], rules_run=run)], **OPTIONS).message
    assert "a hidden test" in text and hidden.name not in text and "1 of 7" in text
    shown = rules_run(PROBLEM, plan, stage_a, _stage_b({
        visible.name: {"ok": True, "parts": {"backward": diff}}}))
    assert shown is not None and shown.mismatches[0].input_value is not None
    text = CHECK([ProgramInfo("N", "", [], [], rules_run=shown)], **OPTIONS).message
    assert f"test '{visible.name}'" in text and "dx[0]" in text and "the clipping" in text


def test_the_request_and_the_program_follow_the_problem() -> None:
    plan = plan_for(PROBLEM, "run")
    assert rules_request(PROBLEM, plan) == {"argument": 0, "cotangent": 1}
    stage_a = parse_stage_a(json.dumps({"status": "ok", "exports": {
        "poly": "poly.jaxexport", "rules": "rules.jaxexport"}, "rules_signature": "poly"}
    ).encode())
    (prog,) = rules_programs(PROBLEM, stage_a, plan)
    assert prog["signatures"] == [] and prog["runs_on"]
    assert prog["compare"]["backward"][0] == "dx" and prog["compare"]["function"][0] == "y"
    forged = parse_stage_a(json.dumps({"status": "ok", "exports": {
        "poly": "poly.jaxexport", "rules": "../../etc/passwd"}}).encode())
    assert rules_programs(PROBLEM, forged, plan) == []
    missing = rules_run(PROBLEM, plan, forged, _stage_b({}))
    assert missing is not None and missing.tests == 0


@pytest.mark.parametrize("bad", [
    {"t": {"ok": True, "parts": {"sideways": {"differing": 1, "total": 1}}}},
    {"t": {"ok": True, "parts": {"backward": {"differing": -1, "total": 1}}}},
    {"t": {"ok": "yes"}},
    {"t": {"ok": True, "parts": {"backward": {"differing": 1, "total": 1,
                                              "index": list(range(9))}}}},
])
def test_malformed_rule_records_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(MalformedResult):
        _stage_b(bad)


@pytest.mark.parametrize(("run", "passed", "words"), [
    (RulesRun(reason="no jax.custom_vjp function of yours is called."), False,
     ["could not be run on their own", "is called."]),
    (RulesRun(tests=3, errors=(("example-1", "TypeError: boom"),)), False,
     ["failed on test 'example-1'", "boom"]),
    (RulesRun(tests=0), False, ["ran on no test"]),
    (RulesRun(tests=3, mismatches=(RuleMismatch("function", "example-2", 5, 7, (1,), 0.5, 1.0,
                                                0.5),)), False,
     ["your custom_vjp function, given x, returns 0.5 at y[1] where x[1] = 0.5", "the sign",
      "5 of 7"]),
    (RulesRun(tests=3), True, ["Run on their own on 3 tests"]),
])
def test_messages_say_what_was_run_and_what_differed(run: RulesRun, passed: bool,
                                                     words: list[str]) -> None:
    outcome = CHECK([ProgramInfo("N", "", [], [], rules_run=run)], **OPTIONS)
    assert outcome.passed is passed
    for w in words:
        assert w in outcome.message, outcome.message
    assert ".." not in outcome.message


def test_a_problem_naming_an_unknown_argument_is_refused_at_load() -> None:
    data = PROBLEM.model_dump()
    data["requirements"] = [
        {**r, "argument": "z"} if r.get("rule") == "custom_vjp_rules_run" else r
        for r in (req.model_dump() | (req.model_extra or {}) for req in PROBLEM.requirements)]
    with pytest.raises(ValueError, match="option argument = 'z'"):
        type(PROBLEM).model_validate(data)


def test_a_none_static_before_the_array_is_kept_as_none() -> None:
    """The rules get the first call's other arguments as they were, a None among them: the
    array's place is recorded, not guessed from the values."""
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def q(mode: Any, x: jax.Array) -> jax.Array:
        assert mode is None
        return _sign(x)

    q.defvjp(lambda mode, x: (q(mode, x), x),
             lambda mode, x, g: (jnp.where(jnp.abs(x) <= 1.0, g, 0.0),))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": q(None, x), "dx": jax.vjp(lambda v: q(None, v), x)[1](g)[0]}

    rules = _rules_of(solve, X, G)
    assert callable(rules), rules
    out = jax.jit(rules)(X, G)
    np.testing.assert_array_equal(out["function"], _sign(X))
    np.testing.assert_array_equal(out["backward"], BAND)


def test_rules_not_exported_symbolically_run_at_every_signature() -> None:
    """Rules that decide in Python on a shape are exported at each test signature, one
    program each, run on that signature's tests: rules honest at one shape only are run at
    every shape. A signature whose rules stage A did not export leaves none to run."""
    plan = plan_for(PROBLEM, "submit")
    sids = [s["id"] for s in plan.signatures.values()]
    exports = {sid: f"{sid}.jaxexport" for sid in sids}
    exports.update({f"rules-{sid}": f"rules-{sid}.jaxexport" for sid in sids})
    stage_a = parse_stage_a(json.dumps({"status": "ok", "exports": exports,
                                        "rules_signatures": sids}).encode())
    progs = rules_programs(PROBLEM, stage_a, plan)
    assert [p["runs_on"] for p in progs] == [[sid] for sid in sids]
    assert all(p["id"] == f"rules-{p['runs_on'][0]}" for p in progs)
    short = parse_stage_a(json.dumps({"status": "ok", "exports": exports,
                                      "rules_signatures": sids[1:]}).encode())
    assert rules_programs(PROBLEM, short, plan) == []
