"""The inlined dataflow (jaxjudge.analysis.dataflow) on real exported programs: a value depends on
an argument through its data only, never through its shape, on both export paths (symbolic
dimensions, where sizes are computed from the arguments, and concrete shapes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from jaxjudge.analysis.dataflow import (
    Graph,
    ancestors,
    build_graph,
    elementwise_transfer,
    full_transfer,
    pass_transfer,
    propagate,
)
from jaxjudge.analysis.stablehlo import parse_module


def graph(fn: Callable[..., Any], symbolic: bool) -> tuple[Graph, dict[int, int]]:
    """`fn(a, a_scale, b, b_scale, x)` exported as stage A does: with M, K, N symbolic, or at
    M, K, N = 3, 5, 4; inlined from the generic-form text stage B writes. Also: argument
    index -> main's argument node, for the arguments the program kept."""
    if symbolic:
        m, k, n = export.symbolic_shape("M, K, N")
    else:
        m, k, n = 3, 5, 4
    shapes = [((m, k), jnp.int8), ((m,), jnp.float32), ((k, n), jnp.int8), ((n,), jnp.float32),
              ((m, n), jnp.float32)]
    args = [jax.ShapeDtypeStruct(s, d) for s, d in shapes]
    exp = export.deserialize(export.export(jax.jit(fn))(*args).serialize())
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    assert ("get_dimension_size" in text) == symbolic
    g = build_graph(parse_module(text))
    return g, dict(zip(sorted(exp.module_kept_var_idx), g.main_args, strict=True))


def outer_scales(a, a_scale, b, b_scale, x):
    """A scale grid shaped by a's and b's sizes: (M, 1) @ (1, N)."""
    return x * (a_scale[:, None] @ b_scale[None, :])


def diag_scales(a, a_scale, b, b_scale, x):
    """diag(a_scale) @ x @ diag(b_scale): eye and iota sized by M and N."""
    return jnp.diag(a_scale) @ x @ jnp.diag(b_scale)


def zeros_shaped_like(a, a_scale, b, b_scale, x):
    """Arrays built from a's and b's shapes only: zeros, ones, iota."""
    m, k = a.shape
    grid = jnp.zeros_like(a, jnp.float32).sum(1)[:, None] + jnp.ones((1, b.shape[1]))
    return x + grid + jnp.arange(k).sum() * jnp.eye(m, b.shape[1])


def uses_data(a, a_scale, b, b_scale, x):
    """Control: a's and b's values really are read."""
    return x * a.astype(jnp.float32).sum() + b.astype(jnp.float32).sum()


A, B = 1, 2  # bits of a and b


def output_bits(g: Graph, arg: dict[int, int], transfer: Callable[..., Any]) -> int:
    seeds = {arg[i]: bit for i, bit in ((0, A), (2, B)) if i in arg}
    bits = propagate(g, seeds, transfer)
    return bits[g.main_results[0]]


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
@pytest.mark.parametrize("fn", [outer_scales, diag_scales, zeros_shaped_like])
def test_shapes_carry_no_dependence(fn: Callable[..., Any], symbolic: bool) -> None:
    g, arg = graph(fn, symbolic)
    # Per shape, jax drops the unread a and b from the program; with symbolic dims it keeps
    # them for their sizes, and they must carry nothing.
    assert (0 in arg and 2 in arg) == symbolic
    assert output_bits(g, arg, full_transfer) == 0
    assert output_bits(g, arg, elementwise_transfer) == 0
    live = ancestors(g, g.main_results)
    assert not {arg.get(0), arg.get(2)} & live
    assert arg[4] in live  # x is read


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_data_still_carries_dependence(symbolic: bool) -> None:
    g, arg = graph(uses_data, symbolic)
    assert output_bits(g, arg, full_transfer) == A | B
    live = ancestors(g, g.main_results)
    assert arg[0] in live and arg[2] in live


def test_size_steps_have_no_operands() -> None:
    g, arg = graph(outer_scales, symbolic=True)
    sizes = [s for s in g.steps if s.name == "stablehlo.get_dimension_size"]
    assert len(sizes) >= 3 and all(s.operands == () and len(s.results) == 1 for s in sizes)
    assert not ancestors(g, [s.results[0] for s in sizes]) & {arg[0], arg[2]}


def scatter_set(a, a_scale, b, b_scale, x):
    """x written by `.at[rows].set` into a zero buffer at rows chosen by a's values."""
    rows = jnp.argsort(a[:, 0].astype(jnp.float32))
    return jnp.zeros_like(x).at[rows].set(x)


def scatter_add(a, a_scale, b, b_scale, x):
    """x added by `.at[rows].add` into a zero buffer: sums, not x's values."""
    rows = jnp.argsort(a[:, 0].astype(jnp.float32))
    return jnp.zeros_like(x).at[rows].add(x)


def _bits_with_x(g: Graph, arg: dict[int, int], transfer: Callable[..., Any]) -> int:
    seeds = {arg[i]: bit for i, bit in ((0, A), (2, B), (4, X)) if i in arg}
    return propagate(g, seeds, transfer)[g.main_results[0]]


X = 4  # x's bit


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_a_scatter_holds_what_it_sets_never_its_indices(symbolic: bool) -> None:
    """Same values (`pass_transfer`): a scatter that sets its updates holds them; one that
    adds them computes; neither holds its indices' values (they only say where)."""
    g, arg = graph(scatter_set, symbolic)
    assert _bits_with_x(g, arg, pass_transfer) == X
    assert _bits_with_x(g, arg, full_transfer) == A | X  # where it wrote depends on a
    g, arg = graph(scatter_add, symbolic)
    assert _bits_with_x(g, arg, pass_transfer) == 0
    assert _bits_with_x(g, arg, full_transfer) == A | X
