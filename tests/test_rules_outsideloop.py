"""loop_over_dim's outside_loop_products (jaxjudge/rules/outsideloop.py): work outside the loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rules_structure import program

from jaxjudge.rules.dataflow import Budget, TooComplex, build_graph
from jaxjudge.rules.expr import Expr
from jaxjudge.rules.folding import fold_constants
from jaxjudge.rules.loops import analyze_loops
from jaxjudge.rules.outsideloop import MAX_COUNTED, Outside, products_outside
from jaxjudge.rules.registry import RuleConfigError, validate
from jaxjudge.rules.stablehlo import parse_module
from jaxjudge.rules.structure import check_loop_over_dim

W = np.arange(12, dtype=np.float32).reshape(4, 3) / 7 - 0.5
U = np.ones(4, np.float32)


def normalize(x: jax.Array) -> jax.Array:
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def iterate(w: jax.Array, uv: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    v = normalize(w.T @ uv[0])
    return normalize(w @ v), v


def in_loop(w: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jax.lax.fori_loop(0, 8, lambda _, uv: iterate(w, uv), (u, jnp.zeros_like(w[0])))


def token_loop(w: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """An 8-step loop that mixes w in at every step and changes nothing."""
    u = jax.lax.fori_loop(0, 8, lambda _, c: c + 1e-30 * (w @ (w.T @ c)), u)
    return u, jnp.zeros_like(w[0])


def honest(w: jax.Array, u: jax.Array) -> jax.Array:
    u, v = in_loop(w, u)
    return u @ (w @ v)  # w @ v, then u @ (w v): 2


def gram_form(w: jax.Array, u: jax.Array) -> jax.Array:
    u, v = in_loop(w, u)
    return jnp.sqrt(v @ (w.T @ (w @ v)))  # 3


def norm_of_product(w: jax.Array, u: jax.Array) -> jax.Array:
    u, v = in_loop(w, u)
    return jnp.linalg.norm(w @ v)  # the norm's sum holds no element of w: 1


def carried_copy_of_w(w: jax.Array, u: jax.Array) -> jax.Array:
    """A token loop that carries a nudged copy of w, the iterations unrolled after it on it."""
    def body(_: Any, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        return c[0] + 1e-30 * (w @ (w.T @ c[0])), c[1] - 1e-30 * c[1]

    u, w2 = jax.lax.fori_loop(0, 8, body, (u, w))
    uv = (u, jnp.zeros_like(w[0]))
    for _ in range(8):
        uv = iterate(w2, uv)
    return uv[0] @ (w2 @ uv[1])


def unrolled_after(iterations: int, loop: Callable[..., Any] = token_loop,
                   spelled: bool = False) -> Callable[..., jax.Array]:
    def fn(w: jax.Array, u: jax.Array) -> jax.Array:
        uv = loop(w, u)
        for _ in range(iterations):
            if spelled:  # the products as multiply-and-sum
                v = normalize(jnp.sum(w * uv[0][:, None], axis=0))
                uv = normalize(jnp.sum(w * v[None, :], axis=1)), v
            else:
                uv = iterate(w, uv)
        return uv[0] @ (w @ uv[1])

    return fn


def segment_sums_after(w: jax.Array, u: jax.Array) -> jax.Array:
    """The token loop, then the iterations with every product and norm a `segment_sum` (a
    scatter that adds)."""
    u, v = token_loop(w, u)
    m, n = w.shape
    rows, cols = jnp.repeat(jnp.arange(m), n), jnp.tile(jnp.arange(n), m)

    def norm(x: jax.Array) -> jax.Array:
        total = jax.ops.segment_sum(x * x, jnp.zeros(x.shape[0], jnp.int32), num_segments=1)
        return x / jnp.maximum(jnp.sqrt(total[0]), 1e-12)

    for _ in range(8):
        v = norm(jax.ops.segment_sum((w * u[:, None]).reshape(-1), cols, num_segments=n))
        u = norm(jax.ops.segment_sum((w * v[None, :]).reshape(-1), rows, num_segments=m))
    return u @ (w @ v)


def fft_sums_after(w: jax.Array, u: jax.Array) -> jax.Array:
    """A token loop, then the iterations with every product and norm an FFT's first entry."""
    u = jax.lax.fori_loop(0, 8, lambda _, c: c + 1e-30 * (w @ (w.T @ c)), u)

    def total(a: jax.Array, axis: int) -> jax.Array:
        return jnp.fft.fft(a, axis=axis)[(slice(None),) * axis + (0,)].real

    def fnorm(x: jax.Array) -> jax.Array:
        return x / jnp.sqrt(total(x * x, 0))

    v = jnp.zeros_like(w[0])
    for _ in range(8):
        v = fnorm(total(w * u[:, None], 0))
        u = fnorm(total(w * v[None, :], 1))
    return total(u * total(w * v[None, :], 1), 0)


def half_steps(w: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """8 steps updating u and v at once from each other: 4 power iterations."""
    return jax.lax.fori_loop(0, 8, lambda _, uv: (normalize(w @ uv[1]), normalize(w.T @ uv[0])),
                             (u, jnp.zeros_like(w[0])))


def second_loop(w: jax.Array, u: jax.Array) -> jax.Array:
    uv = jax.lax.fori_loop(0, 4, lambda _, uv: iterate(w, uv), half_steps(w, u))
    return uv[0] @ (w @ uv[1])


def unrolled_before(w: jax.Array, u: jax.Array) -> jax.Array:
    """The 8 iterations unrolled from u, then a loop that nudges u and v and changes nothing."""
    uv = (u, jnp.zeros_like(w[0]))
    for _ in range(8):
        uv = iterate(w, uv)
    uv = jax.lax.fori_loop(0, 8, lambda _, c: (c[0] + 1e-30 * (w @ c[1]),
                                               c[1] + 1e-30 * (w.T @ c[0])), uv)
    return uv[0] @ (w @ uv[1])


def outside(fn: Callable[..., Any]) -> Outside:
    """The products outside the working loop, as analyze_loops finds them."""
    p = program(fn, {"M": 4, "N": 3}, W, U)
    g = build_graph(parse_module(p.text))
    found = analyze_loops(g, p.args, ("a0",), 8, ("a1",), every_step=True,
                          outside_loop_products=MAX_COUNTED - 1)
    return max((f.outside for f in found if f.count == 8), key=lambda o: o.total)


@pytest.mark.parametrize(("fn", "before", "after"), [
    (honest, 0, 2), (gram_form, 0, 3), (norm_of_product, 0, 1),
    (unrolled_after(8), 0, 17), (unrolled_after(8, spelled=True), 0, 17),
    (unrolled_after(4, half_steps), 0, 9), (second_loop, 0, MAX_COUNTED),
    (unrolled_before, 16, 2), (carried_copy_of_w, 0, 17), (segment_sums_after, 0, 17),
    (fft_sums_after, 0, 16),
])
def test_successive_products_with_the_inputs_are_counted(fn: Callable[..., Any], before: int,
                                                        after: int) -> None:
    assert outside(fn) == Outside(before, after)


def check(fn: Callable[..., Any]) -> Any:
    p = program(fn, {"M": 4, "N": 3}, W, U)
    return check_loop_over_dim([p], trip_count=Expr("8"), depends_on=("a0",),
                               only_through_loop=("a1",), every_step=True,
                               outside_loop_products=5)


def test_an_honest_loop_passes_and_the_iterations_outside_a_token_loop_fail() -> None:
    assert check(gram_form).passed
    cheat = check(unrolled_after(8))
    assert not cheat.passed
    assert ("after it, your outputs are computed from what it carries through 17 successive "
            "products with a0 (at most 5 in all, to compute the result from what the loop "
            "returns): the iterations run outside the loop, not in it. Run them in the "
            "loop.") in cheat.message
    before = check(unrolled_before)
    assert not before.passed and "before it and after it, your outputs are computed through " \
        "16 and 2 successive products with a0" in before.message
    many = check(second_loop)
    assert not many.passed and f"through {MAX_COUNTED} or more successive" in many.message


def test_the_count_is_bounded_by_the_budget() -> None:
    p = program(unrolled_after(8), {"M": 4, "N": 3}, W, U)
    g = build_graph(parse_module(p.text))
    values = fold_constants(g)
    g.budget = Budget(len(g.steps) // 2)
    with pytest.raises(TooComplex):
        products_outside(g, values, [g.main_args[0]], [(g.loops[0], [0])])


def test_outside_loop_products_is_a_typed_option() -> None:
    opts = validate("loop_over_dim", "program", {"trip_count": "8", "outside_loop_products": 5})
    assert opts.outside_loop_products == 5  # type: ignore[attr-defined]
    for bad in (-1, MAX_COUNTED, "five", 2.5):
        with pytest.raises(RuleConfigError):
            validate("loop_over_dim", "program", {"trip_count": "8", "outside_loop_products": bad})
