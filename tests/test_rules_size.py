"""`max_intermediate_elements` (jaxjudge.rules.size) on real exported programs: bounds written
as expressions of the dims, with room for honest programs and none for blocks of a matrix that
must never be formed (the Hessian of an HVP, the score matrix of attention)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from test_rules_structure import f32, program

from jaxjudge.analysis.expr import Expr
from jaxjudge.rules import RULES
from jaxjudge.rules.registry import RuleConfigError, validate
from jaxjudge.rules.size import DEFAULT_HINT, check_max_intermediate_elements

# -- Hessian-vector products: below 4*n ----------------------------------------------------------


def loss(w: jax.Array) -> jax.Array:
    return jnp.sum(jnp.tanh(w) ** 2) * jnp.sum(w)


def hvp(w: jax.Array, v: jax.Array) -> jax.Array:
    return jax.jvp(jax.grad(loss), (w,), (v,))[1]


def hvp_reverse(w: jax.Array, v: jax.Array) -> jax.Array:
    return jax.grad(lambda u: jnp.vdot(jax.grad(loss)(u), v))(w)


def hvp_dense(w: jax.Array, v: jax.Array) -> jax.Array:
    return jax.hessian(loss)(w) @ v


def _rows(w: jax.Array, e: jax.Array) -> jax.Array:
    return jax.vmap(lambda d: hvp(w, d))(e)  # rows of H (H = H^T), one per unit vector


def hvp_all_rows_but_one(w: jax.Array, v: jax.Array) -> jax.Array:
    n = w.shape[0]
    return jnp.concatenate([_rows(w, jnp.eye(n - 1, n)) @ v, hvp(w, v)[-1:]])


def hvp_two_halves(w: jax.Array, v: jax.Array) -> jax.Array:
    n, h = w.shape[0], w.shape[0] // 2
    return jnp.concatenate([_rows(w, jnp.eye(h, n)) @ v, _rows(w, jnp.eye(n - h, n, k=h)) @ v])


def hvp_programs(fn, sizes=(8, 64)):  # type: ignore[no-untyped-def]
    return [program(fn, {"n": n}, f32(n), f32(n)) for n in sizes]


@pytest.mark.parametrize("fn", [hvp, hvp_reverse])
def test_honest_hvps_stay_inside_4n(fn) -> None:  # type: ignore[no-untyped-def]
    outcome = check_max_intermediate_elements(hvp_programs(fn), below=Expr("4*n"))
    assert outcome.passed, outcome.message
    assert "The largest intermediate has 64 elements: fewer than 4*n" in outcome.message


@pytest.mark.parametrize(("fn", "shape"), [
    (hvp_dense, "8x8"), (hvp_all_rows_but_one, "7x8"), (hvp_two_halves, "4x8"),
])
def test_any_block_of_the_hessian_fails(fn, shape: str) -> None:  # type: ignore[no-untyped-def]
    """n*n - 1 let an (n - 1) x n block through, and two halves; 4*n lets neither."""
    outcome = check_max_intermediate_elements(hvp_programs(fn, (8,)), below=Expr("4*n"))
    assert not outcome.passed
    assert f"a {shape} f32 value" in outcome.message
    assert "fewer than 4*n = 32" in outcome.message


def test_the_old_bound_let_a_block_through() -> None:
    assert check_max_intermediate_elements(hvp_programs(hvp_all_rows_but_one, (8,)),
                                           below=Expr("n*n")).passed


# -- attention: below 2*T*(d + 4) ---------------------------------------------------------------

def blockwise(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    t, d = q.shape
    kb, vb = k.reshape(t // 4, 4, d), v.reshape(t // 4, 4, d)

    def step(c, kv):  # type: ignore[no-untyped-def]
        m, total, acc = c
        s = q @ kv[0].T                                       # (T, 4)
        m2 = jnp.maximum(m, s.max(1))
        p, a = jnp.exp(s - m2[:, None]), jnp.exp(m - m2)
        return (m2, a * total + p.sum(1), a[:, None] * acc + p @ kv[1]), None

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t,)), jnp.zeros((t, d)))
    (_, total, acc), _ = jax.lax.scan(step, init, (kb, vb))
    return acc / total[:, None]


def halves(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    h = q.shape[0] // 2
    s1, s2 = q @ k[:h].T, q @ k[h:].T                         # (T, T/2) each
    m = jnp.maximum(s1.max(1), s2.max(1))[:, None]
    p1, p2 = jnp.exp(s1 - m), jnp.exp(s2 - m)
    return (p1 @ v[:h] + p2 @ v[h:]) / (p1.sum(1) + p2.sum(1))[:, None]


def all_keys_but_one(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    s1, s2 = q @ k[:-1].T, q @ k[-1]                          # (T, T - 1) and (T,)
    m = jnp.maximum(s1.max(1), s2)
    p1, p2 = jnp.exp(s1 - m[:, None]), jnp.exp(s2 - m)
    return (p1 @ v[:-1] + p2[:, None] * v[-1]) / (p1.sum(1) + p2)[:, None]


def attention_programs(fn, shapes):  # type: ignore[no-untyped-def]
    return [program(fn, {"T": t, "d": d}, f32(t, d), f32(t, d), f32(t, d)) for t, d in shapes]


SHAPES = [(16, 1), (16, 4), (32, 1), (32, 4)]


def test_blockwise_attention_stays_inside() -> None:
    outcome = check_max_intermediate_elements(attention_programs(blockwise, SHAPES),
                                              below=Expr("2*T*(d + 4)"))
    assert outcome.passed, outcome.message
    assert "The largest intermediate has 128 elements" in outcome.message  # (T, 4) at T = 32


@pytest.mark.parametrize(("fn", "shape"), [(halves, "32x16"), (all_keys_but_one, "32x31")])
def test_large_parts_of_the_score_matrix_fail(fn, shape: str) -> None:  # type: ignore[no-untyped-def]
    """T*T let both through; 2*T*(d + 4) fails them at T = 32 for every d <= 4."""
    for d in (1, 4):
        progs = attention_programs(fn, [(32, d)])
        assert check_max_intermediate_elements(progs, below=Expr("T*T")).passed
        outcome = check_max_intermediate_elements(progs, below=Expr("2*T*(d + 4)"))
        assert not outcome.passed
        assert f"For input shapes T=32, d={d}" in outcome.message
        assert f"a {shape} f32 value" in outcome.message
        assert f"fewer than 2*T*(d + 4) = {2 * 32 * (d + 4)}" in outcome.message


# -- the hint, and the rule's contract -----------------------------------------------------------

def test_the_hint_says_what_to_do_instead() -> None:
    progs = hvp_programs(hvp_dense, (8,))
    hint = "Use jax.jvp(jax.grad(f), (w,), (v,))."
    with_hint = check_max_intermediate_elements(progs, below=Expr("4*n"), hint=hint)
    assert with_hint.message.endswith(hint)
    assert "loop over blocks" not in with_hint.message
    default = check_max_intermediate_elements(progs, below=Expr("4*n"))
    assert default.message.endswith(DEFAULT_HINT)


def test_options_are_typed() -> None:
    opts = validate("max_intermediate_elements", "program", {"below": "2*T*(d + 4)", "hint": "x"})
    assert opts.below == Expr("2*T*(d + 4)")  # type: ignore[attr-defined]
    with pytest.raises(RuleConfigError, match="hint"):
        validate("max_intermediate_elements", "program", {"below": "n", "hint": "x" * 401})
    with pytest.raises(RuleConfigError, match="below"):
        validate("max_intermediate_elements", "program", {"below": "n**2"})


def test_sizes_need_static_shapes() -> None:
    assert RULES["max_intermediate_elements"].static_shapes
    unsized = program(hvp, {}, f32(3), f32(3))
    outcome = check_max_intermediate_elements([unsized], below=Expr("n*n"))
    assert not outcome.passed and "cannot be evaluated" in outcome.message
