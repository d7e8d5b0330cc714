"""`dot_types` (jaxjudge.rules.products) on real exported programs: the product of a and b is an
int8 dot accumulating in int32, and nothing else mixes them; on both export paths (symbolic
dimensions and concrete shapes), honest variants and the decoys a cheater writes."""

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
from pydantic import ValidationError

from jaxjudge.analysis.dataflow import Budget, TooComplex, build_graph
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import parse_module
from jaxjudge.rules import RULES
from jaxjudge.rules.products import DotTypesOptions, _holds_identity, check_dot_types

PATHS = ["a", "a_scale", "b", "b_scale"]
OPTS: dict[str, Any] = {"args": ("a", "b"), "operands": ("i8", "i8"), "result": "i32"}


def program(fn: Callable[..., Any], symbolic: bool, m: int = 3, k: int = 8,
            n: int = 4) -> ProgramInfo:
    """`fn(a, a_scale, b, b_scale)` exported as stage A does (symbolic M, K, N, or concrete),
    described as stage B does (generic form, no debug info)."""
    if symbolic:
        m, k, n = export.symbolic_shape("M, K, N")  # type: ignore[assignment]
    specs = [jax.ShapeDtypeStruct(s, d) for s, d in (
        ((m, k), jnp.int8), ((m,), jnp.float32), ((k, n), jnp.int8), ((n,), jnp.float32))]
    exp = export.deserialize(export.export(jax.jit(fn))(*specs).serialize())
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    dims = {} if symbolic else {"M": m, "K": k, "N": n}
    return ProgramInfo(",".join(f"{d}={v}" for d, v in dims.items()) or "poly", text,
                       [PATHS[i] for i in sorted(exp.module_kept_var_idx)],
                       [f"o{i}" for i in range(len(exp.out_avals))], dims,
                       ("M", "K", "N") if symbolic else ())


def check(fn: Callable[..., Any], symbolic: bool) -> Any:
    return check_dot_types([program(fn, symbolic)], **OPTS)


def int8_dot(a: jax.Array, b: jax.Array) -> jax.Array:
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)


# -- honest ------------------------------------------------------------------------------------

def broadcast_scales(a, a_scale, b, b_scale):
    return int8_dot(a, b).astype(jnp.float32) * a_scale[:, None] * b_scale[None, :]


def outer_scales_matmul(a, a_scale, b, b_scale):
    """The scale grid as a float matmul of the two vectors, shaped by a's and b's sizes."""
    return int8_dot(a, b).astype(jnp.float32) * (a_scale[:, None] @ b_scale[None, :])


def diag_scales(a, a_scale, b, b_scale):
    return jnp.diag(a_scale) @ int8_dot(a, b).astype(jnp.float32) @ jnp.diag(b_scale)


def split_cast(a, a_scale, b, b_scale):
    """An unusual but exact cast: the int32 accumulator as high and low parts."""
    acc = int8_dot(a, b)
    hi, lo = acc >> 12, acc & 0xFFF
    c = hi.astype(jnp.float32) * 4096.0 + lo.astype(jnp.float32)
    return c * jnp.outer(a_scale, b_scale)


def swapped_operands(a, a_scale, b, b_scale):
    """(b^T a^T)^T through einsum: the same product, operands the other way round."""
    acc = jnp.einsum("kn,mk->nm", b, a, preferred_element_type=jnp.int32).T
    return acc.astype(jnp.float32) * a_scale[:, None] * b_scale


def k_blocks(a, a_scale, b, b_scale):
    """A fori_loop over K blocks of 4 accumulating int8 dots (K a multiple of 4)."""
    def body(i, acc):
        ab = lax.dynamic_slice_in_dim(a, 4 * i, 4, axis=1)
        bb = lax.dynamic_slice_in_dim(b, 4 * i, 4, axis=0)
        return acc + int8_dot(ab, bb)

    acc = lax.fori_loop(0, a.shape[1] // 4, body,
                        jnp.zeros((a.shape[0], b.shape[1]), jnp.int32))
    return acc.astype(jnp.float32) * a_scale[:, None] * b_scale


def masked_tail(a, a_scale, b, b_scale):
    """Operands masked by a where (a K tail zeroed and added back): still a's and b's values."""
    keep = jnp.arange(a.shape[1]) < a.shape[1] - 1
    head = int8_dot(jnp.where(keep[None, :], a, 0).astype(jnp.int8), b)
    tail = int8_dot(a[:, -1:], b[-1:, :])
    return (head + tail).astype(jnp.float32) * a_scale[:, None] * b_scale


def rows_map(a, a_scale, b, b_scale):
    """One row of a at a time with lax.map (a while loop stacking the rows' dots)."""
    acc = lax.map(lambda row: jnp.dot(row, b, preferred_element_type=jnp.int32), a)
    return acc.astype(jnp.float32) * a_scale[:, None] * b_scale


def rows_vmap(a, a_scale, b, b_scale):
    acc = jax.vmap(lambda row: jnp.dot(row, b, preferred_element_type=jnp.int32))(a)
    return acc.astype(jnp.float32) * a_scale[:, None] * b_scale


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
@pytest.mark.parametrize("fn", [broadcast_scales, outer_scales_matmul, diag_scales, split_cast,
                                swapped_operands, masked_tail, rows_map, rows_vmap])
def test_honest_variants_pass(fn: Callable[..., Any], symbolic: bool) -> None:
    outcome = check(fn, symbolic)
    assert outcome.passed, outcome.message
    assert "i8 x i8 operands accumulating in i32" in outcome.message


def test_a_loop_over_k_blocks_passes() -> None:
    outcome = check(k_blocks, symbolic=False)
    assert outcome.passed, outcome.message


# -- violations --------------------------------------------------------------------------------

def float_matmul(a, a_scale, b, b_scale):
    return (a.astype(jnp.float32) @ b.astype(jnp.float32)) * jnp.outer(a_scale, b_scale)


def int32_operands(a, a_scale, b, b_scale):
    acc = a.astype(jnp.int32) @ b.astype(jnp.int32)
    return acc.astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def elementwise_beside_zeroed_dot(a, a_scale, b, b_scale):
    """int32 broadcast-multiply-and-sum; the int8 dot is there, times 0."""
    acc = jnp.sum(a.astype(jnp.int32)[:, :, None] * b.astype(jnp.int32)[None, :, :], axis=1)
    return (acc + 0 * int8_dot(a, b)).astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def elementwise_beside_live_dot(a, a_scale, b, b_scale):
    """The same, the int8 dot live but cancelled (acc - acc is not folded)."""
    dot = int8_dot(a, b)
    acc = jnp.sum(a.astype(jnp.int32)[:, :, None] * b.astype(jnp.int32)[None, :, :], axis=1)
    return (acc + dot - dot).astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def float_beside_unused_dot(a, a_scale, b, b_scale):
    int8_dot(a, b)
    return float_matmul(a, a_scale, b, b_scale)


def float_beside_zeroed_dot(a, a_scale, b, b_scale):
    return float_matmul(a, a_scale, b, b_scale) + 0.0 * int8_dot(a, b).astype(jnp.float32)


def laundered_through_the_dot(a, a_scale, b, b_scale):
    """A zero computed from the int8 dot added to a, then a float matmul: what meets b there
    is a's data, whatever else it carries."""
    dot = int8_dot(a, b)
    zero = jnp.sum(dot - dot, axis=1, keepdims=True).astype(jnp.float32)
    return ((a.astype(jnp.float32) + zero) @ b.astype(jnp.float32)) * jnp.outer(a_scale,
                                                                                  b_scale)


def identity_dot(a, a_scale, b, b_scale):
    """An int8 dot of a with an identity computed from b (not b's values), then an elementwise
    product with b."""
    eye = (b[:, :1] - b[:, :1] + jnp.eye(b.shape[0], a.shape[1], dtype=jnp.int8)).T
    a_again = int8_dot(a, eye.astype(jnp.int8))  # (M, K) == a
    acc = jnp.sum(a_again[:, :, None] * b.astype(jnp.int32)[None, :, :], axis=1)
    return acc.astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def float_laundered_through_a_sum(a, a_scale, b, b_scale):
    """a's values through a size-1 sum (which ends value tracking) beside a zeroed int8 dot:
    dependence, not value flow, decides what mixes a and b."""
    af = jnp.sum(a.astype(jnp.float32)[None], axis=0)
    return (af @ b.astype(jnp.float32)) * jnp.outer(a_scale, b_scale) + 0 * int8_dot(a, b)


def masked_identity(x, rows, cols):
    """An identity matrix built from x by masking every entry of it out with a where: the
    identity all the same (jaxjudge.analysis.identity), so a dot with it copies the other side."""
    i = lax.broadcasted_iota(jnp.int32, (rows, cols), 0)
    j = lax.broadcasted_iota(jnp.int32, (rows, cols), 1)
    x = jnp.broadcast_to(x.reshape(-1)[:1].reshape(1, 1), (rows, cols))
    return jnp.where(i == j, jnp.int8(1), jnp.where(i != j, jnp.int8(0), x))


def masked_identity_dot(a, a_scale, b, b_scale):
    """a copied through an int8 dot with an identity masked out of b, then multiplied with b
    elementwise: a copy of a meets b (the dot is no product of a and b)."""
    a_again = int8_dot(a, masked_identity(b, a.shape[1], a.shape[1]))
    acc = jnp.sum(a_again[:, :, None] * b.astype(jnp.int32)[None, :, :], axis=1)
    return acc.astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def stacked_identity(x, n):
    """An identity matrix that "holds x's values": constant rows and a last row with every
    entry of x masked out, concatenated (which the forms do not evaluate)."""
    j = lax.broadcasted_iota(jnp.int32, (1, n), 1)
    x00 = jnp.broadcast_to(x.reshape(-1)[:1].reshape(1, 1), (1, n))
    last = jnp.where(j == n - 1, jnp.int8(1), jnp.where(j != n - 1, jnp.int8(0), x00))
    return jnp.concatenate([jnp.eye(n - 1, n, dtype=jnp.int8), last])


def two_masked_identity_dots(a, a_scale, b, b_scale):
    """Copies of a and of b through two such dots, multiplied together elementwise."""
    a_again = int8_dot(a, stacked_identity(b, a.shape[1]))
    b_again = int8_dot(stacked_identity(a, b.shape[0]), b)
    acc = jnp.sum(a_again[:, :, None] * b_again[None, :, :], axis=1)
    return acc.astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def quarter_squares(a, a_scale, b, b_scale):
    """Copies of a and b through two stacked-identity dots, multiplied as ((x+y)^2 - (x-y)^2)/4
    with a power (no multiply of the two; exact in float32 for small K)."""
    a_again = int8_dot(a, stacked_identity(b, a.shape[1])).astype(jnp.float32)
    b_again = int8_dot(stacked_identity(a, b.shape[0]), b).astype(jnp.float32)
    s = a_again[:, :, None] + b_again[None, :, :]
    d = a_again[:, :, None] - b_again[None, :, :]
    acc = jnp.sum(lax.pow(s, 2.0) - lax.pow(d, 2.0), axis=1) / 4
    return acc * jnp.outer(a_scale, b_scale)


def bordered_b(a, a_scale, b, b_scale):
    """Red team round 7: a @ [b | I] and [a ; I] @ b are real int8 dots of a and b whose extra
    columns (rows) are copies of a (b); those copies multiplied by a reduce (`jnp.prod` over a
    stacked axis, no multiply op) and summed in float32."""
    m, k = a.shape
    n = b.shape[1]
    eye = jnp.eye(k, dtype=jnp.int8)
    af = int8_dot(a, jnp.concatenate([b, eye], axis=1))[:, n:].astype(jnp.float32)
    bf = int8_dot(jnp.concatenate([a, eye], axis=0), b)[m:, :].astype(jnp.float32)
    pair = jnp.stack([jnp.broadcast_to(af[:, :, None], (m, k, n)),
                      jnp.broadcast_to(bf[None, :, :], (m, k, n))])
    return jnp.prod(pair, axis=0).sum(axis=1) * jnp.outer(a_scale, b_scale)


def both_bordered_shift_and_add(a, a_scale, b, b_scale):
    """Red team round 7: one dot of [a ; I] and [b | I]; a * b rebuilt from its copies with
    shifts and selects (no multiply op)."""
    m, k = a.shape
    n = b.shape[1]
    eye = jnp.eye(k, dtype=jnp.int8)
    r = int8_dot(jnp.concatenate([a, eye], axis=0), jnp.concatenate([b, eye], axis=1))
    big_a, u = r[:m, n:][:, :, None], r[m:, :n][None, :, :] + 128
    total = jnp.zeros((m, k, n), jnp.int32)
    for t in range(8):
        total = total + jnp.where((jnp.right_shift(u, t) & 1) == 1, jnp.left_shift(big_a, t), 0)
    acc = total.sum(axis=1) - jnp.left_shift(big_a[:, :, 0], 7).sum(axis=1)[:, None]
    return acc.astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def product_plus_a(a, a_scale, b, b_scale):
    return (int8_dot(a, b) + a.sum(1, keepdims=True)).astype(jnp.float32) * a_scale[:, None]


def float_product_times_zero(a, a_scale, b, b_scale):
    """A float product of a and b multiplied by 0.0 and added in: 0 * inf is NaN, so it still
    reaches the output (a bit at a time), unlike an integer product times 0."""
    return broadcast_scales(a, a_scale, b, b_scale) + 0.0 * float_matmul(a, a_scale, b, b_scale)


def nan_bits(a, a_scale, b, b_scale):
    """The float product's bits smuggled through NaN: inf * 0.0 for a set bit, 0 * 0.0 else."""
    prod = (a.astype(jnp.float32) @ b.astype(jnp.float32)).astype(jnp.int32) + (1 << 20)
    acc = int8_dot(a, b)
    out = (acc - acc).astype(jnp.float32)
    for k in range(21):
        bit = (prod >> k) & 1
        zero = jnp.where(bit == 1, jnp.inf, 0.0).astype(jnp.float32) * 0.0
        out = out + jnp.where(jnp.isnan(zero), float(1 << k), 0.0)
    return (out - (1 << 20)) * jnp.outer(a_scale, b_scale)


def int_product_times_zero(a, a_scale, b, b_scale):
    """An int32 elementwise product times the integer 0 is 0 for every input: it does not reach
    the output."""
    elem = jnp.sum(a.astype(jnp.int32)[:, :, None] * b.astype(jnp.int32)[None, :, :], axis=1)
    acc = int8_dot(a, b) + 0 * elem
    return acc.astype(jnp.float32) * jnp.outer(a_scale, b_scale)


def scales_only(a, a_scale, b, b_scale):
    int8_dot(a, b)
    return jnp.outer(a_scale, b_scale)


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
@pytest.mark.parametrize(("fn", "says"), [
    (float_matmul, "A matrix product of a and b takes and returns (f32, f32) -> f32"),
    (int32_operands, "(i32, i32) -> i32"),
    (elementwise_beside_zeroed_dot, "A multiply ((i32, i32) -> i32) combines values computed "
                                    "from a and from b"),
    (elementwise_beside_live_dot, "A multiply ((i32, i32) -> i32)"),
    (float_beside_unused_dot, "(f32, f32) -> f32"),
    (float_beside_zeroed_dot, "(f32, f32) -> f32"),
    (laundered_through_the_dot, "(f32, f32) -> f32"),
    (float_laundered_through_a_sum, "(f32, f32) -> f32"),
    (identity_dot, "A matrix product (i8, i8) -> i32 multiplies values computed from a and b "
                   "(not the matrices themselves"),
    (masked_identity_dot, "A multiply ((i32, i32) -> i32) combines values computed from a and "
                          "from b"),
    (two_masked_identity_dots, "also returns copies of a or b (one operand holds an identity "
                               "matrix beside the matrix"),
    (product_plus_a, "combines the product"),
    (bordered_b, "also returns copies of a or b"),
    (both_bordered_shift_and_add, "also returns copies of a or b"),
    (quarter_squares, "also returns copies of a or b"),
    (float_product_times_zero, "(f32, f32) -> f32"),
    (nan_bits, "(f32, f32) -> f32"),
    (scales_only, "No matrix product of a and b with i8 x i8 operands accumulating in i32 "
                  "reaches your outputs"),
])
def test_violations_fail(fn: Callable[..., Any], says: str, symbolic: bool) -> None:
    outcome = check(fn, symbolic)
    assert not outcome.passed
    assert says in outcome.message, outcome.message
    assert "preferred_element_type=jnp.int32" in outcome.message


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "per_shape"])
def test_an_integer_product_times_zero_does_not_reach_the_output(symbolic: bool) -> None:
    outcome = check(int_product_times_zero, symbolic)
    assert outcome.passed, outcome.message


@pytest.mark.parametrize(("fn", "passed", "marked"), [
    (broadcast_scales, True, "stablehlo.dot_general"),  # the product
    (float_matmul, False, "stablehlo.dot_general"),  # the float one
    (elementwise_beside_zeroed_dot, False, "stablehlo.multiply"),  # where a and b meet
    (scales_only, False, None),  # a remark: no such dot
])
def test_the_region_marks_the_op_decided_on(fn: Callable[..., Any], passed: bool,
                                            marked: str | None) -> None:
    outcome = check(fn, symbolic=True)
    assert outcome.passed is passed and outcome.region is not None
    focus = [outcome.region.ops[i] for i in sorted(outcome.region.focus)]
    if marked is None:
        assert outcome.region.ops == () and "no i8 x i8 -> i32 dot" in outcome.region.note
    else:
        assert focus and all(op.name == marked for op in focus)
        if not passed and marked == "stablehlo.dot_general":
            assert all("xf32>" in op.type for op in focus)


def test_a_dot_of_other_arguments_does_not_count() -> None:
    def unscaled(a, a_scale, b, b_scale):
        return int8_dot(a, b).astype(jnp.float32)

    outcome = check_dot_types([program(unscaled, False)], **{**OPTS, "args": ("a", "a_scale")})
    assert not outcome.passed and "No matrix product of a and a_scale" in outcome.message


def test_options_are_validated() -> None:
    assert RULES["dot_types"].options is DotTypesOptions
    assert not RULES["dot_types"].static_shapes
    DotTypesOptions(**OPTS)
    for bad in ({"args": ("a", "a")}, {"operands": ("i8", "int8")}, {"result": "f"},
                {"args": ("a", "b c")}):
        with pytest.raises(ValidationError):
            DotTypesOptions(**{**OPTS, **bad})


def test_hostile_text_fails_cleanly() -> None:
    junk = ProgramInfo("s", "not mlir {", ["a", "b"], ["o"])
    for programs in ([junk], [], "text", [object()]):
        outcome = check_dot_types(programs, **OPTS)  # type: ignore[arg-type]
        assert not outcome.passed and outcome.message


def test_numbers_of_the_samples_agree() -> None:
    """The honest variants compute the reference's numbers (they are meant as learner code)."""
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (3, 8), dtype=np.int8)
    b = rng.integers(-128, 128, (8, 4), dtype=np.int8)
    sa, sb = rng.uniform(0.5, 2, 3).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    want = np.asarray(broadcast_scales(a, sa, b, sb))
    for fn in (outer_scales_matmul, diag_scales, split_cast, swapped_operands, k_blocks,
               masked_tail, rows_map, rows_vmap, int_product_times_zero, nan_bits,
               quarter_squares,
               masked_identity_dot, two_masked_identity_dots):
        np.testing.assert_allclose(np.asarray(fn(a, sa, b, sb)), want, rtol=1e-6)


def test_the_walk_to_an_identity_block_spends_the_grades_budget() -> None:
    """Each product's walk up its operand (to find an identity block) is paid from the
    grade's analysis budget: a program of many products with long chains ends as too complex
    (a requirement that fails closed), never as unbounded trusted-side time."""
    g = build_graph(parse_module(program(bordered_b, False).text))
    dot = next(s for s in g.steps if s.name == "stablehlo.dot_general")
    g.budget = Budget(2)
    with pytest.raises(TooComplex):
        _holds_identity(g, dot.operands[1], [])
