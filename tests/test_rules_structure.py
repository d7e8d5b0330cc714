"""Program-level rules on sizes, element types, loops and growth, on real exported programs
(exported in this process, once per input shape, as stage A does for static-shape problems)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.expr import Expr
from jaxjudge.rules.growth import check_independent_of_dim
from jaxjudge.rules.size import check_max_intermediate_elements
from jaxjudge.rules.structure import (
    check_loop_over_dim,
)


def program(fn: Callable[..., Any], dims: dict[str, int], *args: Any,
            symbolic: tuple[str, ...] = (), probe: bool = True) -> ProgramInfo:
    """Export `fn` at `args` and describe it as stage B does (generic form, no debug info);
    `probe`: at a probe shape the judge chose for the growth check, or at a test's own."""
    exp = export.deserialize(export.export(jax.jit(fn))(*args).serialize())
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    sig = ",".join(f"{k}={v}" for k, v in dims.items())
    return ProgramInfo(sig, text, [f"a{i}" for i in sorted(exp.module_kept_var_idx)],
                       [f"o{i}" for i in range(len(exp.out_avals))], dims, symbolic, probe)


def f32(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


# -- loop_over_dim: an exponential moving average over T --------------------------------------

def ema_scan(x: jax.Array) -> jax.Array:
    def step(c: jax.Array, xt: jax.Array) -> tuple[jax.Array, jax.Array]:
        c = 0.9 * c + 0.1 * xt
        return c, c

    return jax.lax.scan(step, jnp.zeros(x.shape[1], x.dtype), x)[1]


def ema_unrolled(x: jax.Array) -> jax.Array:
    c, out = jnp.zeros(x.shape[1], x.dtype), []
    for t in range(x.shape[0]):
        c = 0.9 * c + 0.1 * x[t]
        out.append(c)
    return jnp.stack(out)


def ema_closed_form(x: jax.Array) -> jax.Array:
    t = jnp.arange(x.shape[0])
    w = 0.1 * 0.9 ** (t[:, None] - t[None, :]) * (t[:, None] >= t[None, :])
    return w @ x


def ema_programs(fn: Callable[..., Any]) -> list[ProgramInfo]:
    return [program(fn, {"T": t, "D": d}, f32(t, d)) for t, d in [(3, 2), (5, 2), (5, 3)]]


def test_one_loop_over_time() -> None:
    assert check_loop_over_dim(ema_programs(ema_scan), dim="T").passed
    unrolled = check_loop_over_dim(ema_programs(ema_unrolled), dim="T")
    assert not unrolled.passed and "no loop runs T = " in unrolled.message
    closed = check_loop_over_dim(ema_programs(ema_closed_form), dim="T")
    assert not closed.passed and "jax.lax.scan" in closed.message


def test_trip_count_expression() -> None:
    def blocks(x: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, x.shape[0] // 2, lambda i, c: c + x[2 * i], x[0] * 0)

    progs = [program(blocks, {"T": t, "D": 3}, f32(t, 3)) for t in (2, 8)]
    assert check_loop_over_dim(progs, dim="T", trip_count=Expr("T // 2")).passed
    assert not check_loop_over_dim(progs, dim="T").passed


def block_sums(blocks: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, b: (c + b.sum(0), None), blocks[0, 0] * 0, blocks)[0]


def test_growth_is_counted_in_steps_of_the_trip_count() -> None:
    """A scan over blocks of 4 rows, fed by a Python loop slicing them out, adds a few ops per
    block: fewer than T grew by, but at least one per step of T // 4, at every probe size."""
    def reshaped(x: jax.Array) -> jax.Array:
        return block_sums(x.reshape(-1, 4, x.shape[1]))

    def sliced(x: jax.Array) -> jax.Array:
        return block_sums(jnp.stack([x[j:j + 4] for j in range(0, x.shape[0], 4)]))

    def graded(fn: Callable[..., Any]) -> Any:
        progs = [program(fn, {"T": t, "D": 3}, f32(t, 3)) for t in (16, 20, 24)]
        return check_loop_over_dim(progs, dim="T", trip_count=Expr("T // 4"))

    assert graded(reshaped).passed, graded(reshaped).message
    outcome = graded(sliced)
    assert not outcome.passed and "grows with T" in outcome.message, outcome.message
    assert "for T=16, 20 and 24" in outcome.message


def test_the_tests_shapes_alone_decide_no_growth() -> None:
    progs = [program(ema_scan, {"T": t, "D": 2}, f32(t, 2), probe=False) for t in (2, 4)]
    outcome = check_loop_over_dim(progs, dim="T")
    assert not outcome.passed and "probe sizes of T" in outcome.message


def test_hostile_text_fails_cleanly() -> None:
    junk = ProgramInfo("s", "not mlir {", [], [], {"n": 2, "B": 1, "T": 1})
    for outcome in (
        check_max_intermediate_elements([junk], below=Expr("n")),
        check_independent_of_dim([junk], dim="B"),
        check_loop_over_dim([junk], dim="T"),
        check_independent_of_dim([], dim="B"),
    ):
        assert not outcome.passed and outcome.message


# -- the second red-team round ------------------------------------------------------------------

def test_a_loop_bound_given_as_an_array_is_read() -> None:
    def counted(x: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, jnp.int32(x.shape[0]), lambda i, c: c + x[i], x[0] * 0)

    progs = [program(counted, {"T": t, "D": 3}, f32(t, 3)) for t in (2, 8)]
    assert check_loop_over_dim(progs, dim="T").passed


def test_unreadable_types_count_as_unknown_sizes() -> None:
    from jaxjudge.analysis.stablehlo import TYPE_TOO_LONG, Op, tensor_types

    assert tensor_types("(tensor<8x8xcomplex<f32>>) -> tensor<8x8xcomplex<f32>>")[1].dims == (8, 8)
    assert Op("stablehlo.add", [], [], type=TYPE_TOO_LONG).result_types()[0].elements() is None


def test_a_grade_reads_at_most_its_text_budget() -> None:
    """Twelve near-cap programs must not make the trusted side parse ~100 MB: refused up front."""
    from jaxjudge.analysis.parsed import MAX_TOTAL_CHARS

    huge = ProgramInfo("s", " " * (MAX_TOTAL_CHARS // 2 + 1), [], [], {"B": 1, "n": 2})
    for outcome in (
        check_max_intermediate_elements([huge, huge], below=Expr("n")),
        check_independent_of_dim([huge, huge], dim="B"),
    ):
        assert not outcome.passed and "too large to verify" in outcome.message


def test_the_text_decides_sliced_only_where_no_step_was_watched() -> None:
    """Where stage B watched the loop's steps take up their shares on a test, that decides
    `sliced` (a one-hot product that picks one block reads every block in the text); at a
    probe shape no test runs, nothing does; at a tested shape the observer does not follow,
    the text decides (evidence that could not be gathered fails closed)."""
    from jaxjudge.analysis.observed import Observation
    from jaxjudge.rules.structure import _read_sliced

    base = ProgramInfo(signature="T=16", text="", args=["x"], outs=["y"], dims={"T": 16})
    watched = Observation(count=16, sliced=("x",), test="t1")
    assert _read_sliced(base, ("x",), 16) == ("x",)
    assert _read_sliced(ProgramInfo(**{**vars(base), "observed": (watched,)}), ("x",), 16) == ()
    assert _read_sliced(ProgramInfo(**{**vars(base), "observed": (watched,)}), ("x",), 8) == (
        "x",)  # watched for another trip count
    assert _read_sliced(ProgramInfo(**{**vars(base), "tested": False}), ("x",), 16) == ()
    assert _read_sliced(base, (), 16) == ()
