"""Spec-level `uses_primitive` on summaries made by stage A's own summarizer (real jaxprs, both
spellings of the custom_vjp primitive across JAX releases), and on hostile summaries."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from grader.rules.summary import check_uses_primitive
from grader.stages import trace

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
