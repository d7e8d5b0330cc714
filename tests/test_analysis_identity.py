"""Steps that give an operand back (jaxjudge.analysis.identity) on real exported programs, on both
export paths: a product with the identity matrix however it is built (`jnp.eye`, shifted or
scaled, a `where` on index comparisons, a numpy literal, a closed-over loop constant, even one
masked out of another argument), `x * 1`, `x + 0`; and what is not one (a triangular matrix, a
diagonal of data, an identity that a loop changes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export, lax
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from jaxjudge.analysis.dataflow import Budget, Graph, TooComplex, build_graph
from jaxjudge.analysis.folding import fold_constants
from jaxjudge.analysis.identity import copies_of, passes
from jaxjudge.analysis.stablehlo import parse_module


def exported(fn: Callable[..., Any], symbolic: bool = False, rows: int = 5, cols: int = 3
             ) -> tuple[Graph, str]:
    """`fn(x, y)` with x and y (M, N) symbolic or at rows x cols: its graph and its text."""
    shape = export.symbolic_shape("M, N") if symbolic else (rows, cols)
    spec = jax.ShapeDtypeStruct(shape, jnp.float32)
    exp = export.export(jax.jit(fn))(spec, spec)
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    return build_graph(parse_module(text)), text


def given(fn: Callable[..., Any], symbolic: bool, rows: int = 5, cols: int = 3
          ) -> list[tuple[str, float, int]]:
    """(op name, scale, which argument) of each step of `fn(x, y)` that gives back a value
    computed from an argument."""
    g, text = exported(fn, symbolic, rows, cols)
    values = fold_constants(g)
    found = passes(g, values, text)
    args = {a: i for i, a in enumerate(g.main_args)}
    producers = g.producers()
    out = []
    for s in g.steps:
        if id(s) not in found:
            continue
        node = found[id(s)].node
        while node not in args and producers[node]:  # back to the argument, through copies
            i, pos = producers[node][0]
            operands = g.steps[i].operands
            if not operands:
                break
            node = operands[max(pos, 0)]
        if node in args:
            out.append((s.name.removeprefix("stablehlo."), found[id(s)].scale, args[node]))
    return out


def eye_bf16(x, y):  # type: ignore[no-untyped-def]
    return (x.astype(jnp.bfloat16) @ jnp.eye(x.shape[1], dtype=jnp.bfloat16)).astype(x.dtype)


def eye_left(x, y):  # type: ignore[no-untyped-def]
    return jnp.eye(x.shape[0]).T @ x


def shifted_eye(x, y):  # type: ignore[no-untyped-def]
    return x @ jnp.eye(x.shape[1], k=1)


def where_eye(x, y):  # type: ignore[no-untyped-def]
    n = x.shape[1]
    return x @ jnp.where(jnp.arange(n)[:, None] == jnp.arange(n)[None, :], 1.0, 0.0)


def masked_out_of_y(x, y):  # type: ignore[no-untyped-def]
    n = x.shape[1]
    i = lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = lax.broadcasted_iota(jnp.int32, (n, n), 1)
    y00 = jnp.broadcast_to(y[:1, :1], (n, n))
    return x @ jnp.where(i == j, 1.0, jnp.where(i != j, 0.0, y00))


def closed_over_in_loop(x, y):  # type: ignore[no-untyped-def]
    eye = jnp.eye(x.shape[1])
    return lax.fori_loop(0, 3, lambda i, c: c @ eye, x)


def times_one(x, y):  # type: ignore[no-untyped-def]
    return (x.astype(jnp.bfloat16) * jnp.bfloat16(1)).astype(x.dtype)


def plus_zero(x, y):  # type: ignore[no-untyped-def]
    return (x + 0.0) - 0.0


def divided_by_one(x, y):  # type: ignore[no-untyped-def]
    return x / 1.0


@pytest.mark.parametrize("symbolic", [False, True], ids=["per_shape", "symbolic"])
@pytest.mark.parametrize(("fn", "want"), [
    (eye_bf16, [("dot_general", 1, 0)]),
    (eye_left, [("dot_general", 1, 0)]),
    (shifted_eye, [("dot_general", 1, 0)]),
    (where_eye, [("dot_general", 1, 0)]),
    (masked_out_of_y, [("dot_general", 1, 0)]),
    (closed_over_in_loop, [("dot_general", 1, 0)]),
    (lambda x, y: x @ (2 * jnp.eye(x.shape[1])), [("dot_general", 2, 0)]),
    (times_one, [("multiply", 1, 0)]),
    (plus_zero, [("add", 1, 0), ("subtract", 1, 0)]),
    (divided_by_one, [("divide", 1, 0)]),
], ids=["eye-bf16", "eye-left-transposed", "shifted-eye", "where-eye", "masked-out-of-y",
        "closed-over-in-loop", "twice-eye", "times-one", "plus-zero", "divided-by-one"])
def test_a_step_that_gives_its_operand_back(fn: Callable[..., Any], want: list,
                                            symbolic: bool) -> None:
    assert given(fn, symbolic) == want


def numpy_eye(x, y):  # type: ignore[no-untyped-def]
    return jnp.asarray(np.eye(x.shape[0], dtype=np.float32)) @ x


@pytest.mark.parametrize("rows", [3, 16], ids=["listed-literal", "hex-literal"])
def test_a_numpy_identity_literal_gives_back(rows: int) -> None:
    assert given(numpy_eye, False, rows=rows) == [("dot_general", 1, 0)]


def changed_in_loop(x, y):  # type: ignore[no-untyped-def]
    eye = jnp.eye(x.shape[1])
    return lax.fori_loop(0, 3, lambda i, c: (c[0] @ c[1], c[1] * 2), (x, eye))[0]


def stretched_row(x, y):  # type: ignore[no-untyped-def]
    n = x.shape[1]  # iota over a size-1 dimension, broadcast: every row is row 0
    i = jnp.broadcast_to(lax.broadcasted_iota(jnp.int32, (1, n), 0), (n, n))
    return x @ (i == lax.broadcasted_iota(jnp.int32, (n, n), 1)).astype(x.dtype)


@pytest.mark.parametrize("symbolic", [False, True], ids=["per_shape", "symbolic"])
@pytest.mark.parametrize("fn", [
    lambda x, y: x @ jnp.tri(x.shape[1]),
    lambda x, y: x @ jnp.diag(y[0]),
    lambda x, y: x @ (jnp.eye(x.shape[1]) * y[0, 0]),
    lambda x, y: x * 2.0 + 1.0,
    changed_in_loop,
    stretched_row,
], ids=["triangular", "diagonal-of-data", "eye-times-data", "scaled-shifted", "changed-in-loop",
        "stretched-row"])
def test_what_does_not_give_its_operand_back(fn: Callable[..., Any], symbolic: bool) -> None:
    assert given(fn, symbolic) == []


def test_copies_keep_only_the_unscaled_steps() -> None:
    g, text = exported(lambda x, y: (x @ (2 * jnp.eye(x.shape[1]))) * 1.0)
    found = passes(g, fold_constants(g), text)
    assert sorted(p.scale for p in found.values()) == [1, 1, 2]  # iota + 0, * 1, 2 * eye
    assert len(copies_of(found)) == 2


def test_forms_spend_from_the_budget() -> None:
    g, text = exported(eye_left)
    values = fold_constants(g)
    g.budget = Budget(len(g.steps))  # one evaluation per step is not enough for the forms too
    with pytest.raises(TooComplex):
        passes(g, values, text)
