"""Spec-level `uses_primitive` on summaries made by stage A's own summarizer (real jaxprs, both
spellings of the custom_vjp primitive across JAX releases), and on hostile summaries."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxjudge.rules.summary import check_uses_primitive
from jaxjudge.stages import trace

CUSTOM_VJP = {"any_of": ["custom_vjp_call", "custom_vjp_call_jaxpr"], "what": "jax.custom_vjp",
              "hint": "Define the quantizer with @jax.custom_vjp."}


@jax.custom_vjp
def ste(x: jax.Array) -> jax.Array:
    return jnp.sign(x)


ste.defvjp(lambda x: (jnp.sign(x), None), lambda _, g: (g,))


def summary(fn, *args):  # type: ignore[no-untyped-def]
    checkpoint, policies = trace.prepare()
    return trace.summarize_jaxpr(jax.make_jaxpr(fn)(*args).jaxpr, checkpoint, policies)


def test_a_custom_vjp_call_is_found() -> None:
    x = jnp.ones(3)
    outcome = check_uses_primitive(summary(lambda x: ste(x) * 2, x), **CUSTOM_VJP)
    assert outcome.passed and "jax.custom_vjp" in outcome.message
    plain = check_uses_primitive(summary(lambda x: jnp.sign(x) * 2, x), **CUSTOM_VJP)
    assert not plain.passed and "Define the quantizer" in plain.message


def test_nested_primitives_are_found() -> None:
    def scanned(x: jax.Array) -> jax.Array:
        return jax.lax.scan(lambda c, a: (c + ste(a), c), 0.0, x)[1]

    assert check_uses_primitive(summary(scanned, jnp.ones(3)), **CUSTOM_VJP).passed
    uses_scan = check_uses_primitive(summary(scanned, jnp.ones(3)), any_of=["scan"],
                                     what="jax.lax.scan")
    assert uses_scan.passed


def test_missing_or_hostile_summaries_fail_cleanly() -> None:
    bad_cases = (None, {"eqns": "x"}, {"root": 0, "jaxprs": [{"eqns": [{"primitive": 3}]}]},
                 {"root": 5, "jaxprs": []}, [], "summary", {"omitted": "too big"})
    for bad in bad_cases:
        outcome = check_uses_primitive(bad, **CUSTOM_VJP)
        assert not outcome.passed and outcome.message


def test_a_custom_vjp_only_differentiated_is_recorded_by_stage_a() -> None:
    """jax.vjp applies the rule and leaves no custom_vjp eqn; stage A records the call."""

    @jax.custom_vjp
    def q(x: jax.Array) -> jax.Array:
        return jnp.where(x >= 0, 1.0, -1.0)

    q.defvjp(lambda x: (jnp.where(x >= 0, 1.0, -1.0), x),
             lambda x, g: (g * (jnp.abs(x) <= 1),))

    def solve(x: jax.Array, g: jax.Array) -> dict[str, jax.Array]:
        y, back = jax.vjp(q, x)
        return {"y": y, "dx": back(g)[0]}

    x = jnp.ones(3)
    calls = trace._CustomRuleCalls(jax)
    with calls:  # first: jax caches the trace of `solve`, and a cached trace calls nothing
        jax.make_jaxpr(solve)(x, x)
    assert calls.found == {"custom_vjp_call"}
    plain = summary(solve, x, x)
    assert not check_uses_primitive(plain, **CUSTOM_VJP).passed  # the jaxpr alone loses it
    assert jax.custom_vjp.__call__ is not None and not calls._saved  # restored
    recorded = {**plain, "called": sorted(calls.found)}
    assert check_uses_primitive(recorded, **CUSTOM_VJP).passed
    forged = {**plain, "called": "custom_vjp_call"}
    assert not check_uses_primitive(forged, **CUSTOM_VJP).passed
