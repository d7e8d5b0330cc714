"""Small integer arrays run exactly (jaxjudge.analysis.indexarrays): what a gate built from an
index vector evaluates to, as XLA computes it, or unknown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from test_rules_structure import program

from jaxjudge.analysis.dataflow import Kind, build_graph
from jaxjudge.analysis.folding import evaluate, fold_constants
from jaxjudge.analysis.indexarrays import small
from jaxjudge.analysis.stablehlo import parse_module


def run(fn: Callable[[jax.Array], jax.Array], t: int) -> int | None:
    """fn's scalar result at the integer argument t, evaluated step by step by `small` (None:
    some step was not one it runs exactly)."""
    p = program(fn, {}, np.int32(0))
    g = build_graph(parse_module(p.text))
    values = fold_constants(g)
    env: dict[int, Any] = {g.main_args[0]: t}
    arrays: dict[int, np.ndarray] = {}
    for i, step in enumerate(g.steps):
        if step.kind is Kind.TUPLE:  # links pass values along
            for o, r in zip(step.operands, step.results, strict=False):
                if o in env:
                    env[r] = env[o]
                if o in arrays:
                    arrays[r] = arrays[o]
            continue
        got = small(g, i, step, env, values, arrays)
        if got is not None:
            if got.ndim:
                arrays[step.results[0]] = got
            else:
                env[step.results[0]] = int(got)
            continue
        op = g.ops[i] if i < len(g.ops) else None
        if op is not None and len(step.results) == 1:  # scalars: as stepgates folds them
            v = evaluate(op, [env.get(o, values[o]) for o in step.operands], True)
            if isinstance(v, int):
                env[step.results[0]] = v
    return env.get(g.main_results[0])


def test_a_reduce_by_or_on_integers_is_bitwise() -> None:
    """jnp.bitwise_or.reduce(2t + [0, 1]) is 2t + 1 (a red-team round: read as any(), it was 1
    at every step, and an honest first-step guard was rejected)."""
    def fn(t: jax.Array) -> jax.Array:
        return jnp.bitwise_or.reduce(2 * t + jnp.arange(2, dtype=jnp.int32))

    assert [run(fn, t) for t in (0, 1, 3)] == [1, 3, 7]


def test_a_reduce_by_and_on_integers_is_bitwise() -> None:
    def fn(t: jax.Array) -> jax.Array:
        return jnp.bitwise_and.reduce(1 + jnp.arange(2, dtype=jnp.int32) * (t > 0))

    assert [run(fn, t) for t in (0, 2)] == [1, 0]


def test_any_of_an_index_vector_against_a_bound() -> None:
    def fn(t: jax.Array) -> jax.Array:
        return jnp.any(4 * t + jnp.arange(4, dtype=jnp.int32) < 10).astype(jnp.int32)

    assert [run(fn, t) for t in (0, 2, 3)] == [1, 1, 0]


def test_a_reducer_that_returns_its_init_is_not_read_as_a_maximum() -> None:
    def fn(t: jax.Array) -> jax.Array:
        v = t + jnp.arange(3, dtype=jnp.int32)
        return jax.lax.reduce(v, jnp.int32(0), lambda a, b: jnp.maximum(a, a), (0,))

    assert run(fn, 5) is None


def test_an_int32_value_past_its_type_is_unknown() -> None:
    def fn(t: jax.Array) -> jax.Array:
        return jnp.max((t + jnp.arange(2, dtype=jnp.int32)) * jnp.int32(2**30))

    assert run(fn, 0) == 2**30  # [0, 2**30] fits int32
    assert run(fn, 2) is None  # 2**31 and 3 * 2**30 wrap in int32: not exact
