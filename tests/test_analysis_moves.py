"""`loop_copies`: a loop that only moves one argument's values returns copies of it, whatever
its spelling; one that computes on them, steers by them, mixes two arguments or reads its data
in its condition does not."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rules_structure import program

from jaxjudge.analysis.moves import CONST, loop_copies
from jaxjudge.analysis.stablehlo import Op, parse_module
from jaxjudge.rules.programs_per_bucket import _COPIES

X = np.ones((2, 3, 2), np.float32)
LENGTHS = np.ones(2, np.int32)


def _verdict(fn: Callable) -> list[int | None] | None:
    """loop_copies of the first while in main, its operands read as main's arguments or
    constants (as programs_per_bucket's canonical form names them)."""
    text = program(fn, {}, X, LENGTHS).text
    functions = parse_module(text).functions()
    main = functions["main"]
    args = main.regions[0][0].args
    loop = next(o for o in main.regions[0][0].ops if o.name == "stablehlo.while")
    kinds = [args.index(v) if v in args else CONST for v in loop.operands]
    spent: list[int] = []
    return loop_copies(loop, kinds, functions, _COPIES, lambda: spent.append(1),
                       lambda name: args.index(name) if name in args else CONST)


def _rows(x: jax.Array, lengths: jax.Array) -> jax.Array:
    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), t, axis=1)
    return jax.lax.fori_loop(0, x.shape[1], row, jnp.zeros((2, 4, 2)))


def _rows_at_lengths(x: jax.Array, lengths: jax.Array) -> jax.Array:
    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), lengths[0] - 1, axis=1)
    return jax.lax.fori_loop(0, x.shape[1], row, jnp.zeros((2, 4, 2)))


def _rows_and_lengths(x: jax.Array, lengths: jax.Array) -> jax.Array:
    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        buf = jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), t, axis=1)
        return buf.at[0, 3, :].set(lengths.astype(jnp.float32))
    return jax.lax.fori_loop(0, x.shape[1], row, jnp.zeros((2, 4, 2)))


def _rows_summed(x: jax.Array, lengths: jax.Array) -> jax.Array:
    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return buf + jnp.pad(jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1),
                             ((0, 0), (0, 3), (0, 0)))
    return jax.lax.fori_loop(0, x.shape[1], row, jnp.zeros((2, 4, 2)))


def _rows_nested(x: jax.Array, lengths: jax.Array) -> jax.Array:
    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        inner = jax.lax.fori_loop(0, 2, lambda i, r: r * 2.0, x[:, :1])
        return jax.lax.dynamic_update_slice_in_dim(buf, inner, t, axis=1)
    return jax.lax.fori_loop(0, x.shape[1], row, jnp.zeros((2, 4, 2)))


def test_a_loop_moving_rows_returns_a_copy_of_its_argument() -> None:
    got = _verdict(_rows)
    assert got is not None and 0 in got and 1 not in got


@pytest.mark.parametrize("fn", [_rows_at_lengths, _rows_and_lengths, _rows_summed,
                                _rows_nested],
                         ids=["index-from-data", "two-arguments", "arithmetic",
                              "nested-loop-computes"])
def test_a_loop_that_does_more_than_move_values_is_not_a_copy(fn: Callable) -> None:
    assert _verdict(fn) is None


def test_a_loop_that_reads_computed_values_is_not_a_copy() -> None:
    loop = Op("stablehlo.while", ["%r"], ["%v"], regions=[[], []])
    assert loop_copies(loop, [-2], {}, _COPIES, lambda: None, lambda name: None) is None
