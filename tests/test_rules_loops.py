"""Loop analysis for `loop_over_dim` (jaxjudge.rules.loops) on real exported programs: trip counts
worked out from each loop's counter for every loop form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from test_rules_structure import f32, program

from jaxjudge.rules.dataflow import Budget, TooComplex, build_graph
from jaxjudge.rules.expr import Expr
from jaxjudge.rules.loops import analyze_loops, fold_constants
from jaxjudge.rules.stablehlo import parse_module
from jaxjudge.rules.structure import check_loop_over_dim


def counts(fn: Callable[..., Any], t: int, d: int = 3) -> list[int | None]:
    """The trip count of every loop of fn exported at x of shape (t, d)."""
    p = program(fn, {"T": t, "D": d}, f32(t, d))
    return [f.count for f in analyze_loops(build_graph(parse_module(p.text)))]


def step(c: jax.Array, row: jax.Array) -> jax.Array:
    return 0.5 * c + row


# -- trip counts: every loop form --------------------------------------------------------------

def scan_rows(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (step(c, r), step(c, r)), x[0], x)[1]


def scan_pairs(x: jax.Array) -> jax.Array:
    pairs = x[: x.shape[0] // 2 * 2].reshape(-1, 2, x.shape[1])
    return jax.lax.scan(lambda c, r: (step(c, r.sum(0)), None), x[0], pairs)[0]


def fori_static(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(2, x.shape[0], lambda i, c: step(c, x[i]), x[0])


def fori_ceil_int32(x: jax.Array) -> jax.Array:
    n = (jnp.int32(x.shape[0]) + 3) // 4  # an int32 value: the loop carries it as its bound
    return jax.lax.fori_loop(0, n, lambda i, c: step(c, x[4 * i]), x[0])


def while_block_start(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 4, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (0, x[0]))[1]


def while_le(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] <= x.shape[0] - 1, body, (0, x[0]))[1]


def while_swapped(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: x.shape[0] > s[0], body, (0, x[0]))[1]


def while_countdown(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        left, c = s
        return left - 1, step(c, x[x.shape[0] - left])

    return jax.lax.while_loop(lambda s: s[0] > 0, body, (x.shape[0], x[0]))[1]


def while_not_equal(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] != x.shape[0], body, (0, x[0]))[1]


def while_from_one(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (1, x[0]))[1]


def map_rows(x: jax.Array) -> jax.Array:
    return jax.lax.map(lambda r: r * 2.0, x)


def map_over_inner_scan(x: jax.Array) -> jax.Array:
    return jax.lax.map(lambda r: jax.lax.scan(lambda c, v: (c * 0.5 + v, None), 0.0, r)[0], x)


@pytest.mark.parametrize(("fn", "expected"), [
    (scan_rows, lambda t: [t]),
    (scan_pairs, lambda t: [t // 2]),
    (fori_static, lambda t: [t - 2]),
    (fori_ceil_int32, lambda t: [(t + 3) // 4]),
    (while_block_start, lambda t: [(t + 3) // 4]),
    (while_le, lambda t: [t]),
    (while_swapped, lambda t: [t]),
    (while_countdown, lambda t: [t]),
    (while_not_equal, lambda t: [t]),
    (while_from_one, lambda t: [t - 1]),
    (map_rows, lambda t: [t]),
    (map_over_inner_scan, lambda t: [t, 3]),
])
@pytest.mark.parametrize("t", [5, 8])
def test_trip_counts_are_worked_out(fn: Callable[..., Any], expected: Callable[[int], list[int]],
                                    t: int) -> None:
    assert counts(fn, t) == expected(t)


def data_dependent(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: (s[0] < x.shape[0]) & (s[1].sum() < 1e6), body,
                              (0, x[0]))[1]


def data_step(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1 + (c[0] > 1e9).astype(jnp.int32), step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (0, x[0]))[1]


@pytest.mark.parametrize("fn", [data_dependent, data_step])
def test_a_count_that_cannot_be_proven_is_unknown(fn: Callable[..., Any]) -> None:
    assert counts(fn, 8) == [None]
    outcome = check_loop_over_dim([program(fn, {"T": 8, "D": 3}, f32(8, 3))], dim="T")
    assert not outcome.passed
    assert "a loop whose trip count could not be determined" in outcome.message
    assert "jax.lax.while_loop whose condition is only `i < n`" in outcome.message


def test_constants_fold_through_calls_and_integer_division() -> None:
    p = program(fori_ceil_int32, {"T": 9, "D": 3}, f32(9, 3))
    g = build_graph(parse_module(p.text))
    values = fold_constants(g)
    assert 3 in values  # (9 + 3) // 4 through jnp's floor_divide helper
    assert all(values[a] is None for a in g.main_args)


def test_the_parser_reads_compare_directions() -> None:
    module = parse_module(program(while_le, {"T": 4, "D": 3}, f32(4, 3)).text)
    found = []
    stack = list(module.ops)
    while stack:
        op = stack.pop()
        if op.name == "stablehlo.compare":
            found.append(op.attrs.get("comparison_direction"))
        stack += [o for region in op.regions for block in region for o in block.ops]
    assert "LE" in found


# -- the rule's messages ----------------------------------------------------------------------

def per_t(fn: Callable[..., Any], ts: tuple[int, ...] = (4, 6)) -> list[Any]:
    return [program(fn, {"T": t, "D": 3}, f32(t, 3)) for t in ts]


def test_messages_name_the_trip_count_found() -> None:
    short = check_loop_over_dim(per_t(while_from_one), dim="T")
    assert not short.passed
    # The longest program that has a loop is the one described.
    assert "For input shapes D=3, T=6 no loop runs T = 6 steps" in short.message
    assert "(found: a loop of 5 steps (T - 1))" in short.message
    half = check_loop_over_dim(per_t(scan_pairs, (8, 12)), dim="T", trip_count=Expr("T // 4"))
    assert not half.passed and "found: a loop of 6 steps (2 * (T // 4))" in half.message
    none = check_loop_over_dim(per_t(jnp.cumsum), dim="T")
    assert not none.passed and "no loop runs T = 6 steps (the program has no loop)" in none.message


def test_the_pass_message_states_the_worked_out_count() -> None:
    ok = check_loop_over_dim(per_t(fori_ceil_int32, (4, 8)), dim="T", trip_count=Expr("T // 4"))
    assert ok.passed and ok.message.startswith("A loop runs T // 4 steps")


def test_the_analysis_is_bounded() -> None:
    p = program(scan_rows, {"T": 6, "D": 3}, f32(6, 3))
    g = build_graph(parse_module(p.text))
    g.budget = Budget(20)
    with pytest.raises(TooComplex):
        analyze_loops(g)
