"""Spec-level `forbidden_primitives` (jaxjudge.rules.forbidden) on summaries made by stage A's own
summarizer from real jaxprs: every spelling of a decomposition found at any depth, honest power
iterations passing, typed options, and hostile summaries failing cleanly."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

from jaxjudge.rules import RULES
from jaxjudge.rules.forbidden import FAMILIES, check_forbidden_primitives
from jaxjudge.rules.registry import RuleConfigError, validate
from jaxjudge.stages import trace

W = jnp.arange(12.0).reshape(4, 3) / 7.0
NO_DECOMPOSITION: dict[str, Any] = {"families": ("decomposition",),
                                    "hint": "Use power iteration."}


def summary(fn, *args):  # type: ignore[no-untyped-def]
    checkpoint, policies = trace.prepare()
    return trace.summarize_jaxpr(jax.make_jaxpr(fn)(*args).jaxpr, checkpoint, policies)


def power_iteration(w: jax.Array) -> jax.Array:
    def body(_: Any, u: jax.Array) -> jax.Array:
        v = w.T @ u
        v = v / jnp.maximum(jnp.linalg.norm(v), 1e-12)
        u = w @ v
        return u / jnp.maximum(jnp.linalg.norm(u), 1e-12)

    u = jax.lax.fori_loop(0, 8, body, jnp.ones(w.shape[0]))
    return jnp.linalg.norm(w.T @ u)


@jax.custom_jvp
def hidden_norm(w: jax.Array) -> jax.Array:
    return jnp.linalg.norm(w, 2)


hidden_norm.defjvp(lambda p, t: (hidden_norm(p[0]), 0.0))

DECOMPOSITIONS = {
    "svd": lambda w: jnp.linalg.svd(w, compute_uv=False)[0],
    "norm(w, 2)": lambda w: jnp.linalg.norm(w, 2),
    "eigvalsh": lambda w: jnp.linalg.eigvalsh(w.T @ w)[-1],
    "eigh in a cond branch": lambda w: jax.lax.cond(
        w[0, 0] > 0, lambda m: jnp.linalg.eigh(m)[0][-1], lambda m: m[0, 0], w.T @ w),
    "eigvals": lambda w: jnp.abs(jnp.linalg.eigvals(w.T @ w)).max(),
    "qr in a scan": lambda w: jax.lax.scan(
        lambda c, _: (jnp.linalg.qr(w)[1][0, 0] + c, None), 0.0, None, length=2)[0],
    "cholesky under stop_gradient": lambda w: jax.lax.stop_gradient(
        jnp.linalg.cholesky(w.T @ w + jnp.eye(3)))[0, 0],
    "svd inside a custom_jvp": hidden_norm,
    "svd beside a power iteration": lambda w: power_iteration(w) + 0.0 * jnp.linalg.norm(w, 2),
}


@pytest.mark.parametrize("name", sorted(DECOMPOSITIONS))
def test_a_decomposition_is_found_at_any_depth(name: str) -> None:
    outcome = check_forbidden_primitives(summary(DECOMPOSITIONS[name], W), **NO_DECOMPOSITION)
    assert not outcome.passed
    assert "which this problem forbids. Use power iteration." in outcome.message
    assert "(primitive " in outcome.message


def test_the_message_names_the_jnp_functions() -> None:
    outcome = check_forbidden_primitives(summary(DECOMPOSITIONS["norm(w, 2)"], W),
                                         **NO_DECOMPOSITION)
    assert outcome.message.startswith("Your traced program uses an SVD (jnp.linalg.svd, "
                                      "jnp.linalg.norm(w, 2)")
    assert "(primitive svd)" in outcome.message


def test_honest_iterations_pass() -> None:
    for fn in (power_iteration, lambda w: jnp.sqrt(jnp.sum(w * w)), jax.grad(power_iteration)):
        outcome = check_forbidden_primitives(summary(fn, W), **NO_DECOMPOSITION)
        assert outcome.passed and "no forbidden primitive (decomposition)" in outcome.message


def test_other_families_and_named_primitives() -> None:
    s = summary(lambda w: jnp.sort(w, axis=0)[0] + jnp.cumsum(w)[:3], W)
    assert not check_forbidden_primitives(s, families=("sort",)).passed
    assert not check_forbidden_primitives(s, primitives=("cumsum",)).passed
    assert check_forbidden_primitives(s, families=("fft", "random")).passed


def test_options_are_typed() -> None:
    assert RULES["forbidden_primitives"].level == "spec"
    assert set(FAMILIES) == {"decomposition", "sort", "fft", "random"}
    opts = validate("forbidden_primitives", "spec", {"families": ["decomposition"]})
    assert opts.families == ("decomposition",)  # type: ignore[attr-defined]
    for bad in ({}, {"families": ["svd"]}, {"primitives": ["Not A Name"]},
                {"families": "decomposition"}, {"families": ["sort"], "extra": 1}):
        with pytest.raises(RuleConfigError):
            validate("forbidden_primitives", "spec", bad)
    with pytest.raises(RuleConfigError, match="reads the jaxpr summary"):
        validate("forbidden_primitives", "program", {"families": ["sort"]})


def test_missing_or_hostile_summaries_fail_cleanly() -> None:
    for bad in (None, {"eqns": "x"}, {"root": 0, "jaxprs": [{"eqns": [{"primitive": 3}]}]},
                {"root": 5, "jaxprs": []}, [], "summary", {"omitted": "too big"}):
        outcome = check_forbidden_primitives(bad, **NO_DECOMPOSITION)
        assert not outcome.passed and "could not be checked" in outcome.message
