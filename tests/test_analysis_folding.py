"""Constant folding over the inlined dataflow (jaxjudge.analysis.folding) on real exported programs:
the same folds on both export paths (symbolic dimensions, where a broadcast zero takes its shape
from sizes, and concrete shapes), and `exact` folds only what is 0 for every input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from jaxjudge.analysis.dataflow import Graph, build_graph, propagate
from jaxjudge.analysis.folding import (
    fold_constants,
    live_nodes,
    make_transfer,
    make_value_transfer,
)
from jaxjudge.analysis.identity import copies_of, passes
from jaxjudge.analysis.stablehlo import parse_module


def graph(fn: Callable[..., Any], symbolic: bool, dtype: Any = jnp.float32) -> Graph:
    """`fn(x, y)`, both (M, N), exported with M, N symbolic or at 3 x 4."""
    return graph_and_text(fn, symbolic, dtype)[0]


def graph_and_text(fn: Callable[..., Any], symbolic: bool, dtype: Any = jnp.float32
                   ) -> tuple[Graph, str]:
    """The graph of `graph`, and the program's text (its ops' attributes)."""
    shape = export.symbolic_shape("M, N") if symbolic else (3, 4)
    specs = [jax.ShapeDtypeStruct(shape, dtype)] * 2
    exp = export.export(jax.jit(fn))(*specs)
    assert exp.module_kept_var_idx == (0, 1)
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    return build_graph(parse_module(text)), text


def reads(g: Graph, exact: bool = False) -> set[int]:
    """Which arguments (0: x, 1: y) the output depends on, through what folding leaves."""
    live = live_nodes(g, fold_constants(g, exact=exact), g.main_results)
    return {i for i, a in enumerate(g.main_args) if a in live}


def times_zero(x, y):
    return x + 0 * y


def where_false(x, y):
    return jnp.where(jnp.zeros_like(x) > 1, y, x)


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
@pytest.mark.parametrize("fn", [times_zero, where_false])
def test_folds_the_same_on_both_export_paths(fn: Callable[..., Any], symbolic: bool) -> None:
    g = graph(fn, symbolic, jnp.int32)
    assert reads(g) == {0}
    assert reads(g, exact=True) == {0}  # integers: 0 * y is 0 for every y


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_exact_keeps_a_float_times_zero(symbolic: bool) -> None:
    g = graph(times_zero, symbolic)
    assert reads(g) == {0}  # a decoy times 0.0 does not count as reaching the output
    assert reads(g, exact=True) == {0, 1}  # but 0.0 * inf is NaN: y can still reach it


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_values_pass_only_the_branch_a_constant_select_takes(symbolic: bool) -> None:
    g = graph(where_false, symbolic)
    held = propagate(g, {g.main_args[0]: 1, g.main_args[1]: 2},
                     make_value_transfer(fold_constants(g)))
    assert held[g.main_results[0]] == 1


def through_identity_masked_out_of_y(x, y):  # type: ignore[no-untyped-def]
    """x times an identity matrix built from y with every entry of y masked out, plus 0."""
    n = x.shape[1]
    i = jax.lax.broadcasted_iota(jnp.int32, (n, n), 0)
    j = jax.lax.broadcasted_iota(jnp.int32, (n, n), 1)
    y00 = jnp.broadcast_to(y[:1, :1], (n, n))
    return x @ jnp.where(i == j, 1.0, jnp.where(i != j, 0.0, y00)) + 0.0


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_a_step_that_gives_its_operand_back_depends_only_on_it(symbolic: bool) -> None:
    g, text = graph_and_text(through_identity_masked_out_of_y, symbolic)
    values = fold_constants(g)
    seeds = {g.main_args[0]: 1, g.main_args[1]: 2}
    out = g.main_results[0]
    assert reads(g) == {0, 1}  # without it, the identity's where reads y
    gives = copies_of(passes(g, values, text))
    assert {i for i, a in enumerate(g.main_args) if a in live_nodes(g, values, [out], gives)
            } == {0}
    assert propagate(g, seeds, make_transfer(values, gives))[out] == 1
    assert propagate(g, seeds, make_value_transfer(values))[out] == 0  # a product, no copy
    assert propagate(g, seeds, make_value_transfer(values, gives))[out] == 1  # x's values


def _int8_wraps(x, y):
    """int8 200 is -56 at run time: the condition is false, y is what the program returns."""
    k = ((x[0, 0] * 0).astype(jnp.int32) + 200).astype(jnp.int8)
    return jnp.where(k > 0, x, y)


def _float32_rounds(x, y):
    """1 + 1e-8 is 1 in float32: the condition is false, y is what the program returns."""
    return jnp.where((x[0, 0] * 0 + 1.0) + 1e-8 > 1.0, x, y)


def _total_order(x, y):
    """Under the total order -0.0 < 0.0: the condition is true, x is what the program returns
    (a barrier keeps XLA's own folding, which reads it as false, out of the way)."""
    zero = jax.lax.optimization_barrier(x[0, 0] * 0.0)
    return jnp.where(jax.lax.lt_to_p.bind(-zero, zero), x, y)


def test_a_total_order_comparison_is_not_folded() -> None:
    assert jax.jit(_total_order)(jnp.ones((3, 4)), jnp.zeros((3, 4)))[0, 0] == 1
    for symbolic in (True, False):
        assert reads(graph(_total_order, symbolic)) == {0, 1}


@pytest.mark.parametrize("fn", [_int8_wraps, _float32_rounds])
@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_a_folded_condition_is_the_one_the_program_computes(fn: Callable[..., Any],
                                                           symbolic: bool) -> None:
    assert jax.jit(fn)(jnp.ones((3, 4)), jnp.zeros((3, 4)))[0, 0] == 0  # y, at run time
    assert reads(graph(fn, symbolic)) == {1}


@pytest.mark.parametrize(("value", "element", "literal", "held"), [
    (200, "i8", False, -56), (-1, "ui32", False, 4294967295), (1 << 40, "i32", False, 0),
    (300.7, "i8", False, None), (-3.5, "i32", False, -3), (1 + 1e-8, "f32", False, 1.0),
    (1e39, "f32", False, float("inf")), (0.1, "bf16", True, 0.10009765625),
    (0.1, "bf16", False, None), (0.5, "bf16", False, 0.5), (0.1, "f16", True, 0.0999755859375),
    (float("nan"), "f32", False, None), (1.0, "f8E4M3FN", False, None),
])
def test_cast_holds_a_value_as_the_type_does_at_run_time(value: float, element: str,
                                                         literal: bool, held: Any) -> None:
    from jaxjudge.analysis.folding import _cast

    assert _cast(value, element, literal) == held
