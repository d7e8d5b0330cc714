"""Spec-level `custom_vjp_used` on summaries that stage A's own code makes from real traces (the
marks `_CustomRuleCalls` puts on a custom_vjp's result and backward rule, the dataflow `_Reach`
follows to the returned values), and on hostile summaries: it never raises, and a summary that
does not have the documented shape fails with a message saying so."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from jaxjudge.rules import RULES, SPEC_RULES
from jaxjudge.rules.summary import check_custom_vjp_used
from jaxjudge.stages import trace

# -- submissions, in-process ----------------------------------------------------------------------


def _sign(x: jax.Array) -> jax.Array:
    return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def _band(x: jax.Array, g: jax.Array) -> jax.Array:
    return jnp.where(jnp.abs(x) <= 1.0, g, jnp.zeros_like(g))


def _quantize(fwd_calls_itself: bool = True) -> Any:
    """A fresh clipped-STE custom_vjp (fresh: jax caches traces per function object)."""

    @jax.custom_vjp
    def quantize(x: jax.Array) -> jax.Array:
        return _sign(x)

    def fwd(x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return (quantize(x) if fwd_calls_itself else _sign(x)), x

    quantize.defvjp(fwd, lambda x, g: (_band(x, g),))
    return quantize


def _reference() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        _, vjp = jax.vjp(q, x)
        return {"y": q(x), "dx": vjp(g)[0]}

    return solve


def _vjp_only() -> Callable[..., Any]:
    q = _quantize(fwd_calls_itself=False)

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(q, x)
        return {"y": y, "dx": vjp(g)[0]}

    return solve


def _grad_of_sum() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": q(x), "dx": jax.grad(lambda v: jnp.sum(q(v) * g))(x)}

    return solve


def _jit_in_scan() -> Callable[..., Any]:
    """grad of a jitted loss, per element in a scan; y from a jitted call of q."""
    q = _quantize()
    loss = jax.jit(lambda v, gi: jnp.sum(q(v) * gi))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        def step(c: jax.Array, xg: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            return c, jax.grad(loss)(*xg)

        _, dx = jax.lax.scan(step, 0.0, (x.reshape(-1, 1), g.reshape(-1, 1)))
        return {"y": jax.jit(q)(x), "dx": dx.reshape(-1)}

    return solve


def _vmap_checkpoint() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        dx = jax.vmap(jax.grad(lambda v, gi: jax.checkpoint(q)(v) * gi))(x, g)
        return {"y": q(x), "dx": dx}

    return solve


def _while_and_cond() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        def body(c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            return c[0] + 1, c[1] + jax.vjp(q, x)[1](g)[0]

        _, dx = jax.lax.while_loop(lambda c: c[0] < 1, body, (0, jnp.zeros_like(x)))
        return {"y": jax.lax.cond(x[0] > 0, q, q, x), "dx": dx}

    return solve


def _nondiff_argnums() -> Callable[..., Any]:
    @functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
    def quantize(x: jax.Array, bound: float) -> jax.Array:
        return _sign(x)

    quantize.defvjp(lambda x, bound: (_sign(x), x),
                    lambda bound, x, g: (jnp.where(jnp.abs(x) <= bound, g, 0.0),))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(lambda v: quantize(v, 1.0), x)
        return {"y": y, "dx": vjp(g)[0]}

    return solve


def _thrown_away() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        q(x)
        return {"y": _sign(x), "dx": _band(x, g)}

    return solve


def _thrown_away_in_a_helper() -> Callable[..., Any]:
    """A jitted helper returns the custom_vjp's result beside the real one; solve drops it."""
    q = _quantize()
    helper = jax.jit(lambda x: (q(x), _sign(x)))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        _, y = helper(x)
        return {"y": y, "dx": _band(x, g)}

    return solve


def _dropped_carry() -> Callable[..., Any]:
    """The custom_vjp's result is a scan carry that solve never returns."""
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        (_, y), _ = jax.lax.scan(lambda c, _: ((q(x), _sign(x)), None), (x, x), None, length=2)
        return {"y": y, "dx": _band(x, g)}

    return solve


def _identity_wrapper() -> Callable[..., Any]:
    @jax.custom_vjp
    def passthrough(v: jax.Array) -> jax.Array:
        return v

    passthrough.defvjp(lambda v: (v, None), lambda _, g: (g,))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": passthrough(_sign(x)), "dx": _band(x, g)}

    return solve


def _backward_never_reached() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": q(x), "dx": _band(x, g)}

    return solve


def _backward_discarded() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(q, x)
        vjp(g)
        return {"y": y, "dx": _band(x, g)}

    return solve


def _custom_jvp() -> Callable[..., Any]:
    @jax.custom_jvp
    def quantize(x: jax.Array) -> jax.Array:
        return _sign(x)

    quantize.defjvp(lambda p, t: (quantize(p[0]), _band(p[0], t[0])))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, vjp = jax.vjp(quantize, x)
        return {"y": y, "dx": vjp(g)[0]}

    return solve


def _library_custom_jvp_only() -> Callable[..., Any]:
    """jax.nn.relu is a custom_jvp of jax's own: not the learner's, so not named."""

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": _sign(x), "dx": jax.vjp(jax.nn.relu, x)[1](g)[0]}

    return solve


def _times_zero() -> Callable[..., Any]:
    """Both halves kept alive only by a product with 0, beside the formulas."""
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        _, vjp = jax.vjp(q, x)
        return {"y": _sign(x) + 0.0 * q(x),
                "dx": _band(x, g) + jnp.zeros_like(g) * vjp(g)[0]}

    return solve


def _constant_where() -> Callable[..., Any]:
    """Both halves in the case a constant predicate does not choose (inside jnp.where's jit)."""
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        _, vjp = jax.vjp(q, x)
        return {"y": jnp.where(True, _sign(x), q(x)), "dx": jnp.where(False, vjp(g)[0],
                                                                      _band(x, g))}

    return solve


def _identity_with_gradient() -> Callable[..., Any]:
    """An identity custom_vjp on both paths, the quantiser and its clipping written outside."""
    @jax.custom_vjp
    def passthrough(v: jax.Array) -> jax.Array:
        return v

    passthrough.defvjp(lambda v: (v, None), lambda _, ct: (ct,))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        dx = jax.vjp(passthrough, x)[1](g)[0]
        return {"y": _sign(passthrough(x)), "dx": jnp.where(jnp.abs(x) <= 1.0, dx, 0.0)}

    return solve


def _jacrev() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": q(x), "dx": jax.jacrev(q)(x).T @ g}

    return solve


def _has_aux() -> Callable[..., Any]:
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        dx, y = jax.grad(lambda v: (jnp.vdot(q(v), g), q(v)), has_aux=True)(x)
        return {"y": y, "dx": dx}

    return solve


def _multiplied_by_one() -> Callable[..., Any]:
    """A product with a constant 1 (or any non-zero) keeps its operand: honest."""
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        _, vjp = jax.vjp(q, x)
        return {"y": 1.0 * q(x), "dx": jnp.where(True, vjp(g)[0], 0.0)}

    return solve


PASSING = [_reference, _vjp_only, _grad_of_sum, _jit_in_scan, _vmap_checkpoint, _while_and_cond,
           _nondiff_argnums, _jacrev, _has_aux, _multiplied_by_one]
FAILING = [
    (_thrown_away, "`quantize` is called, but its result does not reach the returned values, "
                   "and its backward rule is never used"),
    (_thrown_away_in_a_helper, "its result does not reach the returned values, and its "
                               "backward rule is never used"),
    (_dropped_carry, "its result does not reach the returned values"),
    (_identity_wrapper, "`passthrough` is called, but its backward rule is never used for the "
                        "returned gradient"),
    (_backward_never_reached, "`quantize` is called, but its backward rule is never used"),
    (_backward_discarded, "what its backward rule computes does not reach the returned values"),
    (_custom_jvp, "Found a jax.custom_jvp `quantize`, not a jax.custom_vjp"),
    (_library_custom_jvp_only, "No jax.custom_vjp function is called in solve"),
    (_times_zero, "its result does not reach the returned values, and what its backward rule "
                  "computes does not reach the returned values"),
    (_constant_where, "its result does not reach the returned values, and what its backward "
                      "rule computes does not reach the returned values"),
]


def _decoy_differentiated_first() -> Callable[..., Any]:
    """An honest custom_vjp differentiated and dropped beside a second one whose results are
    returned (a red-team round): the first is a decoy whose rules the rules run would check."""
    real, fake = _quantize(), _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        jax.vjp(real, x)[1](g)
        y, vjp = jax.vjp(fake, x)
        return {"y": y, "dx": vjp(g)[0]}

    return solve


FAILING.append((_decoy_differentiated_first,
                "neither its result nor its backward rule's reaches what solve returns"))


def traced(make: Callable[..., Any], *, symbolic: bool = False) -> dict:
    """Stage A's summary of a fresh `solve` (as its symbolic or per-signature path makes it)."""
    n = export.symbolic_shape("N")[0] if symbolic else 5
    spec = jax.ShapeDtypeStruct((n,), np.float32)
    checkpoint, policies = trace.prepare()
    calls = trace._CustomRuleCalls(jax)
    with calls:
        closed = jax.jit(make()).trace(spec, spec).jaxpr
    return trace._summary(closed.jaxpr, calls, checkpoint, policies)


# -- real traces ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", PASSING, ids=lambda f: f.__name__.strip("_"))
def test_honest_styles_pass(make: Callable[..., Any]) -> None:
    outcome = check_custom_vjp_used(traced(make))
    assert outcome.passed, outcome.message
    assert "its backward rule produces the returned gradient" in outcome.message


@pytest.mark.parametrize(("make", "phrase"), FAILING, ids=lambda v: getattr(v, "__name__", "")
                         .strip("_"))
def test_decoys_fail_saying_what_was_found(make: Callable[..., Any], phrase: str) -> None:
    outcome = check_custom_vjp_used(traced(make), hint="Use @jax.custom_vjp.")
    assert not outcome.passed
    assert phrase in outcome.message, outcome.message


def test_an_identity_wrapper_fails_when_the_rule_must_compute() -> None:
    summary = traced(_identity_with_gradient)
    record = summary["custom_rules"]["functions"][0]
    assert record["fwd_identity"] and record["bwd_identity"]
    assert check_custom_vjp_used(summary).passed  # both halves reach the outputs
    outcome = check_custom_vjp_used(summary, computes=True)
    assert not outcome.passed
    assert "it returns its argument unchanged (an identity wrapper" in outcome.message
    assert "its backward rule returns the incoming gradient unchanged (no gradient rule of its " \
        "own)" in outcome.message
    honest = traced(_reference)["custom_rules"]["functions"][0]
    assert "fwd_identity" not in honest and "bwd_identity" not in honest
    assert check_custom_vjp_used(traced(_reference), computes=True).passed


def test_a_custom_jvp_beside_an_unused_backward_rule_is_named() -> None:
    @jax.custom_jvp
    def q2(x: jax.Array) -> jax.Array:
        return _sign(x)

    q2.defjvp(lambda p, t: (q2(p[0]), _band(p[0], t[0])))
    q = _quantize()

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        return {"y": q(x), "dx": jax.vjp(q2, x)[1](g)[0]}

    outcome = check_custom_vjp_used(traced(lambda: solve))
    assert not outcome.passed and "A jax.custom_jvp `q2` is called too" in outcome.message


@pytest.mark.parametrize("make", [_reference, _vjp_only, _backward_never_reached],
                         ids=lambda f: f.__name__.strip("_"))
def test_symbolic_shapes_trace_the_same(make: Callable[..., Any]) -> None:
    assert traced(make, symbolic=True)["custom_rules"] == traced(make)["custom_rules"]


def test_options_relax_either_half() -> None:
    never_differentiated = traced(_backward_never_reached)
    assert check_custom_vjp_used(never_differentiated, backward=False).passed
    assert not check_custom_vjp_used(never_differentiated, output=False).passed
    discarded_result = traced(_thrown_away_in_a_helper)
    assert not check_custom_vjp_used(discarded_result, output=False).passed
    only_called = check_custom_vjp_used(traced(_thrown_away), output=False, backward=False)
    assert only_called.passed and "is called" in only_called.message
    assert RULES["custom_vjp_used"].level == "spec"
    assert SPEC_RULES["custom_vjp_used"] is check_custom_vjp_used


def test_the_record_is_what_the_rule_reads() -> None:
    summary = traced(_reference)
    record = summary["custom_rules"]["functions"][0]
    # What each rule, traced on its own, computes from its argument into its result (`jnp.where`
    # is a call printed `pjit` or `jit`, by release).
    ops = {k: set(record.pop(k)) - {"jit", "pjit"} for k in ("fwd_ops", "bwd_ops", "res_ops")}
    assert ops == {"fwd_ops": {"convert_element_type", "ge", "select_n"},
                   "bwd_ops": {"abs", "le", "select_n"}, "res_ops": set()}
    assert summary["custom_rules"] == {"functions": [
        {"kind": "custom_vjp", "name": "quantize", "library": False, "output_used": True,
         "bwd_run": True, "bwd_used": True, "bwd_ct_used": True}]}
    names = {e["primitive"] for j in summary["jaxprs"] for e in j["eqns"]}
    assert "jaxjudge_mark" not in names  # the marks are stage A's, not the submission's
    relu = traced(_library_custom_jvp_only)["custom_rules"]["functions"]
    assert [(f["kind"], f["library"]) for f in relu] == [("custom_jvp", True)]


def _program(exported: Any) -> str:
    """The program as stage B reads it: generic form, no debug info."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        module = ir.Module.parse(exported.mlir_module())
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


@pytest.mark.parametrize("make", [_reference, _jit_in_scan, _vmap_checkpoint, _while_and_cond],
                         ids=lambda f: f.__name__.strip("_"))
def test_the_marks_leave_the_exported_program_unchanged(make: Callable[..., Any]) -> None:
    """Stage A exports the very trace it marked: the marks lower to nothing."""
    spec = jax.ShapeDtypeStruct((5,), np.float32)
    marked = jax.jit(make())
    with trace._CustomRuleCalls(jax):
        marked.trace(spec, spec)
    with_marks = export.export(marked)(spec, spec)
    plain = export.export(jax.jit(make()))(spec, spec)
    assert _program(with_marks) == _program(plain)
    x = np.array([-2.0, -1.0, -0.0, 0.5, 1.5], np.float32)
    g = np.arange(1.0, 6.0, dtype=np.float32)
    out = with_marks.call(x, g)
    np.testing.assert_array_equal(out["y"], [-1.0, -1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(out["dx"], [0.0, 2.0, 3.0, 4.0, 0.0])


def test_the_watch_restores_what_it_swapped() -> None:
    q = _quantize()
    bwd, call = q.bwd, jax.custom_vjp.__call__
    calls = trace._CustomRuleCalls(jax)
    with calls:
        jax.make_jaxpr(lambda x: jax.grad(lambda v: q(v).sum())(x))(jnp.ones(3))
    assert q.bwd is bwd and jax.custom_vjp.__call__ is call and not calls._saved
    assert calls.bwd_run == {0}


def test_a_failing_custom_vjp_still_raises_its_own_error() -> None:
    @jax.custom_vjp
    def broken(x: jax.Array) -> jax.Array:
        raise NotImplementedError("not written yet")

    broken.defvjp(lambda x: (x, None), lambda _, g: (g,))
    bwd = broken.bwd
    with trace._CustomRuleCalls(jax), pytest.raises(NotImplementedError, match="not written"):
        jax.make_jaxpr(broken)(jnp.ones(3))
    assert broken.bwd is bwd


def test_a_program_too_large_to_follow_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace._Reach, "MAX_FLOW_STEPS", 3)
    summary = traced(_reference)
    assert set(summary["custom_rules"]) == {"omitted"}
    outcome = check_custom_vjp_used(summary)
    assert not outcome.passed and "too large to follow (more than 3 eqns" in outcome.message
    monkeypatch.setattr(trace._Reach, "MAX_FLOW_STEPS", 2_000_000)
    monkeypatch.setattr(trace._Reach, "MAX_FLOW_DEPTH", 0)
    deep = traced(_jit_in_scan)["custom_rules"]
    assert "nest more than 0 deep" in deep["omitted"]


# -- hostile summaries ----------------------------------------------------------------------------

GOOD = {"kind": "custom_vjp", "name": "quantize", "library": False, "output_used": True,
        "bwd_run": True, "bwd_used": True}


def _with(*functions: Any, **record: Any) -> dict:
    return {"root": 0, "jaxprs": [{"eqns": []}],
            "custom_rules": {"functions": list(functions), **record}}


def test_a_well_formed_summary_passes() -> None:
    assert check_custom_vjp_used(_with(GOOD)).passed
    table_omitted = {"omitted": "too big", "custom_rules": {"functions": [GOOD]}}
    assert check_custom_vjp_used(table_omitted).passed  # the record is kept without the table


@pytest.mark.parametrize(
    ("summary", "phrase"),
    [
        (None, "could not be traced"),
        ("summary", "the summary is not an object"),
        ([], "the summary is not an object"),
        ({"root": 0, "jaxprs": []}, "no record of the custom-derivative functions"),
        ({"omitted": "x" * 10_000}, "too large to summarize"),
        ({"custom_rules": []}, "is not an object"),
        ({"custom_rules": {"omitted": "big"}}, "too large to follow (big)"),
        ({"custom_rules": {"omitted": 7}}, "too large to follow, so"),
        ({"custom_rules": {"functions": "quantize"}}, "not a list of at most 64"),
        ({"custom_rules": {"functions": [GOOD] * 65}}, "not a list of at most 64"),
        (_with(GOOD, dropped=-1), "dropped custom-derivative functions is not a count"),
        (_with(GOOD, dropped=True), "dropped custom-derivative functions is not a count"),
        (_with(GOOD, dropped="1"), "dropped custom-derivative functions is not a count"),
        (_with("quantize"), "has no valid kind"),
        (_with({**GOOD, "kind": "custom_vjp_call"}), "has no valid kind"),
        (_with({**GOOD, "kind": ["custom_vjp"]}), "has no valid kind"),
        (_with({**GOOD, "name": 3}), "name is not a short string"),
        (_with({**GOOD, "name": "q" * 65}), "name is not a short string"),
        (_with({**GOOD, "output_used": 1}), "flags are not booleans"),
        (_with({**GOOD, "bwd_used": "true"}), "flags are not booleans"),
        (_with({**GOOD, "library": None}), "flags are not booleans"),
        (_with(), "No jax.custom_vjp function is called in solve"),
        (_with({**GOOD, "library": True}), "No jax.custom_vjp function is called in solve"),
        (_with({**GOOD, "kind": "custom_jvp"}), "Found a jax.custom_jvp `quantize`"),
        (_with({"kind": "custom_vjp"}), "its result does not reach the returned values"),
        (_with({**GOOD, "output_used": False}, dropped=40),
         "only the first 1 custom-derivative functions called were recorded"),
    ],
)
def test_hostile_summaries_fail_with_a_message(summary: object, phrase: str) -> None:
    outcome = check_custom_vjp_used(summary)
    assert not outcome.passed
    assert phrase in outcome.message, outcome.message
    assert len(outcome.message) < 1000


def test_a_submitted_name_is_shown_only_when_it_is_an_identifier() -> None:
    for name in ("<lambda>", "`x`; see [here](http://evil)", "", "a b", "q\n", "9lives"):
        outcome = check_custom_vjp_used(_with({**GOOD, "name": name, "bwd_used": False}))
        assert not outcome.passed
        assert outcome.message.startswith("Your jax.custom_vjp function is called"), name
        assert "evil" not in outcome.message and "<lambda>" not in outcome.message


def test_the_closest_of_several_functions_is_described() -> None:
    outcome = check_custom_vjp_used(_with(
        {**GOOD, "name": "a", "output_used": False, "bwd_used": False, "bwd_run": False},
        {**GOOD, "name": "b", "bwd_used": False}))
    assert "`b` (the closest of 2 jax.custom_vjp functions) is called" in outcome.message
    assert check_custom_vjp_used(_with({**GOOD, "name": "a", "bwd_used": False}, GOOD)).passed


def test_the_rule_never_raises_on_random_json() -> None:
    rng = np.random.default_rng(0)
    leaves: list[Any] = [None, True, 0, -1, 1.5, "custom_vjp", "x" * 100, [], {}]
    keys = ["kind", "name", "library", "output_used", "bwd_run", "bwd_used", "functions",
            "dropped", "omitted", "custom_rules"]

    def value(depth: int) -> Any:
        if depth > 3 or rng.random() < 0.3:
            return leaves[rng.integers(len(leaves))]
        if rng.random() < 0.5:
            return [value(depth + 1) for _ in range(rng.integers(3))]
        return {keys[rng.integers(len(keys))]: value(depth + 1) for _ in range(rng.integers(4))}

    for _ in range(2000):
        outcome = check_custom_vjp_used({"custom_rules": value(0)})
        assert isinstance(outcome.passed, bool) and outcome.message


# -- the rules do the work themselves (issue #30) -------------------------------------------------

WORK: dict[str, Any] = {"forward_ops": ["sign", "ge", "gt", "le", "lt"],
                        "backward_ops": ["ge", "gt", "le", "lt", "eq", "ne"],
                        "forward_work": "the quantisation", "backward_work": "the clipping"}


@pytest.mark.parametrize("make", PASSING, ids=lambda f: f.__name__.strip("_"))
def test_honest_rules_do_the_work(make: Callable[..., Any]) -> None:
    for symbolic in (False, True):
        summary = traced(make, symbolic=symbolic)
        outcome = check_custom_vjp_used(summary, computes=True, **WORK)
        assert outcome.passed, outcome.message
        assert not any(f.get("probe_failed") for f in summary["custom_rules"]["functions"])


def _with_rules(fun: Callable[..., Any], bwd: Callable[..., Any], *,
                band_outside: bool = False) -> Callable[..., Any]:
    def make() -> Callable[..., Any]:
        q = jax.custom_vjp(fun)
        q.defvjp(lambda x: (q(x), x), bwd)

        def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
            _, vjp = jax.vjp(q, x)
            return {"y": q(x), "dx": vjp(_band(x, g) if band_outside else g)[0]}

        return solve

    return make


def _honest_bwd(x: jax.Array, g: jax.Array) -> tuple[jax.Array]:
    return (_band(x, g),)


@pytest.mark.parametrize(("make", "phrase"), [
    (_with_rules(_sign, lambda x, g: (jnp.negative(-g),), band_outside=True),
     "its backward rule does not apply the clipping"),
    (_with_rules(_sign, lambda x, g: (0.0 * _band(x, g) + g,), band_outside=True),
     "its backward rule does not apply the clipping"),
    (_with_rules(lambda x: jnp.clip(x, -jnp.inf, jnp.inf), _honest_bwd),
     "its function does not compute the quantisation"),
    (_with_rules(lambda x: jnp.ones_like(x) + 0.0 * x, _honest_bwd),
     "its function does not compute the quantisation"),
], ids=["double_negation", "mask_times_zero", "clip_to_infinity", "beside_plus_zero"])
def test_rules_that_leave_the_work_outside_fail(make: Callable[..., Any], phrase: str) -> None:
    summary = traced(make)
    assert check_custom_vjp_used(summary, computes=True).passed  # the older check let it by
    outcome = check_custom_vjp_used(summary, computes=True, **WORK)
    assert not outcome.passed and phrase in outcome.message, outcome.message


def test_a_mask_saved_by_the_forward_rule_counts() -> None:
    def make() -> Callable[..., Any]:
        q = jax.custom_vjp(_sign)
        q.defvjp(lambda x: (q(x), jnp.abs(x) <= 1.0), lambda m, g: (g * m.astype(g.dtype),))
        return lambda x, g: {"y": q(x), "dx": jax.vjp(q, x)[1](g)[0]}

    record = traced(make)["custom_rules"]["functions"][0]
    assert "le" in record["res_ops"] and record["bwd_ct_used"]
    assert check_custom_vjp_used(traced(make), computes=True, **WORK).passed


@pytest.mark.parametrize("bad", [{"fwd_ops": "ge"}, {"bwd_ops": [1]}, {"res_ops": ["x"] * 65},
                                 {"bwd_ct_used": "yes"}, {"probe_failed": 1}])
def test_malformed_work_records_fail(bad: dict[str, Any]) -> None:
    entry = {"kind": "custom_vjp", "name": "q", "output_used": True, "bwd_run": True,
             "bwd_used": True, "fwd_ops": ["ge"], "bwd_ops": ["le"], "bwd_ct_used": True}
    summary = {"custom_rules": {"functions": [{**entry, **bad}]}}
    assert check_custom_vjp_used({"custom_rules": {"functions": [entry]}}, **WORK).passed
    outcome = check_custom_vjp_used(summary, **WORK)
    assert not outcome.passed and "could not be read" in outcome.message


def test_a_quantiser_of_several_arguments_passes() -> None:
    """Issue 41: a custom_vjp of x and a bound array (its cotangent a zero) is read as one of
    x: the function quantises, the backward rule clips by a comparison of its residuals."""
    def make() -> Callable[..., Any]:
        @jax.custom_vjp
        def q(x: jax.Array, bound: jax.Array) -> jax.Array:
            return _sign(x)

        q.defvjp(lambda x, b: (q(x, b), (x, b)), lambda r, g: (
            jnp.where(jnp.abs(r[0]) <= r[1], g, 0.0), jnp.zeros_like(r[1])))

        def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
            y, vjp = jax.vjp(q, x, jnp.ones_like(x))
            return {"y": y, "dx": vjp(g)[0]}

        return solve

    for symbolic in (False, True):
        outcome = check_custom_vjp_used(traced(make, symbolic=symbolic), computes=True, **WORK)
        assert outcome.passed, outcome.message
