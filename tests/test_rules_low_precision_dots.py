"""`low_precision_dots` on real exported programs: a bfloat16 training step with float32
master weights passes; float32 products, products cast down afterwards, values rounded through
bfloat16 before a float32 product, and matmuls written as multiply-and-sum fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.rules import RULES
from jaxjudge.rules.low_precision_dots import check_low_precision_dots
from jaxjudge.rules.registry import RuleConfigError, validate

BF = jnp.bfloat16
ARGS = ["params.b1", "params.w1", "params.w2", "scale", "x", "y"]
OUTS = ["grads.b1", "grads.w1", "grads.w2", "loss"]


def program(fn: Callable[..., Any], symbolic: bool = False, outs: list[str] = OUTS
            ) -> ProgramInfo:
    """Export `fn(params, scale, x, y)` as stage B describes it (generic form, no debug info)."""
    s = jax.ShapeDtypeStruct
    if symbolic:
        b, d, h = export.symbolic_shape("B, D, H")
    else:
        b, d, h = 4, 3, 5
    params = {"b1": s((h,), jnp.float32), "w1": s((d, h), jnp.float32),
              "w2": s((h,), jnp.float32)}
    args = (params, s((), jnp.float32), s((b, d), jnp.float32), s((b,), jnp.float32))
    exp = export.deserialize(export.export(jax.jit(fn))(*args).serialize())
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    return ProgramInfo("B=4,D=3,H=5", text, ARGS, outs, {} if symbolic else
                       {"B": 4, "D": 3, "H": 5}, ("B", "D", "H") if symbolic else ())


def mlp(p: dict, x: jax.Array, low: Any) -> jax.Array:
    h = jnp.tanh(x.astype(low) @ p["w1"].astype(low) + p["b1"].astype(low))
    return h @ p["w2"].astype(low)


def step(forward: Callable[[dict, jax.Array], jax.Array]) -> Callable[..., dict]:
    def fn(params: dict, scale: jax.Array, x: jax.Array, y: jax.Array) -> dict:
        def loss(p: dict) -> jax.Array:
            r = forward(p, x).astype(jnp.float32) - y
            return jnp.mean(r * r)
        g = jax.grad(lambda p: loss(p) * scale)(params)
        return {"grads": jax.tree.map(lambda v: v / scale, g), "loss": loss(params)}
    return fn


def check(fn: Callable[..., dict], symbolic: bool = False) -> Any:
    return check_low_precision_dots([program(fn, symbolic)], operands=("bf16", "f16"),
                                    inputs=("x", "params.w1", "params.w2"), outputs=("grads",))


def f16_forward(p: dict, x: jax.Array) -> jax.Array:
    return mlp(p, x, jnp.float16)


def accumulate_f32(p: dict, x: jax.Array) -> jax.Array:
    pre = jax.lax.dot_general(x.astype(BF), p["w1"].astype(BF), (((1,), (0,)), ((), ())),
                              preferred_element_type=jnp.float32)
    h = jnp.tanh(pre + p["b1"]).astype(BF)
    return jnp.einsum("bh,h->b", h, p["w2"].astype(BF), preferred_element_type=jnp.float32)


def f32_loss_dot(p: dict, x: jax.Array) -> jax.Array:
    pred = mlp(p, x, BF).astype(jnp.float32)
    return pred + 0.0 * (pred @ pred)  # a float32 product of values, not of the inputs


def through_identity_then_bf16(p: dict, x: jax.Array) -> jax.Array:
    # Copies of x through the identity and * 1, then bfloat16 products: still bfloat16 ones.
    return mlp(p, x.astype(BF) @ jnp.eye(x.shape[1], dtype=BF) * BF(1), BF)


def permuted_features_bf16(p: dict, x: jax.Array) -> jax.Array:
    # Honest: x's features and w1's rows permuted alike by a constant matrix in bfloat16,
    # (x P)(P^T w1) = x w1; no product reads x or w1 as given.
    perm = jnp.eye(x.shape[1], dtype=BF)[::-1]
    h = jnp.tanh((x.astype(BF) @ perm) @ (perm.T @ p["w1"].astype(BF)) + p["b1"].astype(BF))
    return h @ p["w2"].astype(BF)


def permuted_in_f32_then_bf16(p: dict, x: jax.Array) -> jax.Array:
    # Honest: the same permutation done in float32 before the cast: a product with a constant
    # matrix is not a product of the inputs, in whatever precision (round 9).
    perm = jnp.eye(x.shape[1])[::-1]
    q = {**p, "w1": perm.T @ p["w1"]}
    return mlp(q, x @ perm, BF)


@pytest.mark.parametrize("forward", [lambda p, x: mlp(p, x, BF), f16_forward, f32_loss_dot,
                                     through_identity_then_bf16, permuted_features_bf16,
                                     permuted_in_f32_then_bf16],
                         ids=["bf16", "f16", "f32-product-of-values", "identity-then-bf16",
                              "permuted-features-bf16", "permuted-in-f32-then-bf16"])
@pytest.mark.parametrize("symbolic", [False, True], ids=["static", "symbolic"])
def test_low_precision_steps_pass(forward: Callable, symbolic: bool) -> None:
    outcome = check(step(forward), symbolic)
    assert outcome.passed, outcome.message
    region = outcome.region
    assert region is not None and region.focus
    assert all(region.ops[i].name == "stablehlo.dot_general" for i in region.focus)


def cast_down_after(p: dict, x: jax.Array) -> jax.Array:
    h = jnp.tanh((x @ p["w1"]).astype(BF) + p["b1"].astype(BF))
    return (h.astype(jnp.float32) @ p["w2"]).astype(BF)


def rounded_then_f32(p: dict, x: jax.Array) -> jax.Array:
    r = jax.tree.map(lambda a: a.astype(BF).astype(jnp.float32), p)
    return mlp(r, x.astype(BF).astype(jnp.float32), jnp.float32)


def multiply_and_sum(p: dict, x: jax.Array) -> jax.Array:
    h = jnp.tanh((x[:, :, None] * p["w1"][None]).sum(1) + p["b1"])
    return (h * p["w2"]).sum(1)


def rounded_then_multiply_and_sum(p: dict, x: jax.Array) -> jax.Array:
    r = jax.tree.map(lambda a: a.astype(BF).astype(jnp.float32), p)
    return multiply_and_sum(r, x.astype(BF).astype(jnp.float32))


def multiply_and_sum_beside_idle_bf16(p: dict, x: jax.Array) -> jax.Array:
    idle = mlp(p, x, BF).astype(jnp.float32)
    return multiply_and_sum(p, x) + 0.0 * idle  # folded away: no product reaches the outputs


def multiply_and_sum_beside_live_bf16(p: dict, x: jax.Array) -> jax.Array:
    return multiply_and_sum(p, x) + 1e-30 * mlp(p, x, BF).astype(jnp.float32)


def through_identity_then_f32(p: dict, x: jax.Array) -> jax.Array:
    # A bfloat16 product with the identity gives its operand back: a copy, not a product.
    def copy(a: jax.Array) -> jax.Array:
        return (a.astype(BF) @ jnp.eye(a.shape[-1], dtype=BF)).astype(jnp.float32)

    return mlp(jax.tree.map(copy, p), copy(x), jnp.float32)


def times_one_then_f32(p: dict, x: jax.Array) -> jax.Array:
    # A bfloat16 multiplication by 1 is a copy too, not bfloat16 arithmetic.
    r = jax.tree.map(lambda a: (a.astype(BF) * BF(1)).astype(jnp.float32), p)
    return mlp(r, (x.astype(BF) * BF(1)).astype(jnp.float32), jnp.float32)


def negated_twice_beside_bf16(p: dict, x: jax.Array) -> jax.Array:
    # bfloat16 arithmetic that gives the value back is an elementwise image of the input: the
    # float32 products read x, w1 and w2 even beside a real bfloat16 product.
    def image(a: jax.Array) -> jax.Array:
        return jnp.negative(-a.astype(BF)).astype(jnp.float32)

    decoy = 1e-30 * mlp(p, x, BF).astype(jnp.float32)
    return mlp(jax.tree.map(image, p), image(x), jnp.float32) + decoy


def doubled_halved_beside_bf16(p: dict, x: jax.Array) -> jax.Array:
    def image(a: jax.Array) -> jax.Array:
        return (a.astype(BF) * BF(2) / BF(2)).astype(jnp.float32)

    decoy = 1e-30 * mlp(p, x, BF).astype(jnp.float32)
    return mlp(jax.tree.map(image, p), image(x), jnp.float32) + decoy


def through_a_constant_matrix_then_f32(p: dict, x: jax.Array) -> jax.Array:
    # A bfloat16 product with a constant matrix (here the reversal, which no identity test
    # names) is a fixed rearrangement of its operand, undone in float32: the float32 products
    # read x, w1 and w2 all the same, beside a real bfloat16 product.
    def moved(a: jax.Array) -> jax.Array:
        r = jnp.eye(a.shape[-1], dtype=BF)[::-1]
        return (a.astype(BF) @ r).astype(jnp.float32)[..., ::-1]

    decoy = 1e-30 * mlp(p, x, BF).astype(jnp.float32)
    return mlp(jax.tree.map(moved, p), moved(x), jnp.float32) + decoy


def scattered_then_f32(p: dict, x: jax.Array) -> jax.Array:
    # `.at[rows].set` of a bfloat16 image into a zero buffer holds its values.
    def moved(a: jax.Array) -> jax.Array:
        a16 = a.astype(BF) * BF(2)
        out = jnp.zeros_like(a16).at[jnp.arange(a.shape[0])].set(a16)
        return out.astype(jnp.float32) / 2

    decoy = 1e-30 * mlp(p, x, BF).astype(jnp.float32)
    return mlp(jax.tree.map(moved, p), moved(x), jnp.float32) + decoy


def doubled_then_multiply_and_sum(p: dict, x: jax.Array) -> jax.Array:
    # bfloat16 arithmetic that only gives an image back (doubled, halved in float32) is not
    # low-precision work: the float32 multiply-and-sum after it reads x, w1, w2 (round 9).
    def image(a: jax.Array) -> jax.Array:
        return (a.astype(BF) * BF(2)).astype(jnp.float32) / 2

    decoy = 1e-30 * mlp(p, x, BF).astype(jnp.float32)
    return multiply_and_sum(jax.tree.map(image, p), image(x)) + decoy


def mixed_second_layer(p: dict, x: jax.Array) -> jax.Array:
    h = jnp.tanh(x.astype(BF) @ p["w1"].astype(BF) + p["b1"].astype(BF))
    return h.astype(jnp.float32) @ p["w2"]


@pytest.mark.parametrize("forward, message", [
    (lambda p, x: mlp(p, x, jnp.float32), "takes (float32, float32) operands"),
    (cast_down_after, "(float32, float32)"),
    (rounded_then_f32, "(float32, float32)"),
    (through_identity_then_f32, "(float32, float32)"),
    (times_one_then_f32, "(float32, float32)"),
    (negated_twice_beside_bf16, "(float32, float32)"),
    (doubled_halved_beside_bf16, "(float32, float32)"),
    (mixed_second_layer, "(float32, float32)"),
    (through_a_constant_matrix_then_f32, "(float32, float32)"),
    (scattered_then_f32, "(float32, float32)"),
    # jax.grad transposes a product with preferred_element_type=float32 into float32 products
    (accumulate_f32, "(float32, float32)"),
    (multiply_and_sum, "No matrix product"),
    (rounded_then_multiply_and_sum, "No matrix product"),
    (multiply_and_sum_beside_idle_bf16, "No matrix product"),
    (multiply_and_sum_beside_live_bf16, "without a bfloat16 or float16 matrix product or"),
], ids=["all-f32", "cast-down-after", "rounded-then-f32", "through-identity-then-f32",
        "times-one-then-f32", "negated-twice-beside-bf16", "doubled-halved-beside-bf16",
        "f32-second-layer", "through-a-constant-matrix-then-f32", "scattered-then-f32",
        "f32-accumulation-backward", "multiply-and-sum", "rounded-then-multiply-and-sum",
        "multiply-and-sum-beside-zeroed-bf16",
        "multiply-and-sum-beside-live-bf16"])
def test_float32_products_fail(forward: Callable, message: str) -> None:
    outcome = check(step(forward))
    assert not outcome.passed
    assert message in outcome.message, outcome.message
    region = outcome.region
    assert region is not None
    if "float32" in message:  # the float32 product is shown, marked
        assert region.ops[min(region.focus)].name == "stablehlo.dot_general"
        assert "f32" in region.ops[min(region.focus)].type
    else:
        assert not region.ops and region.note


def test_options_are_validated_at_load() -> None:
    assert RULES["low_precision_dots"].summary.startswith("The inputs reach the outputs")
    assert not RULES["low_precision_dots"].static_shapes
    with pytest.raises(RuleConfigError, match="operands"):
        validate("low_precision_dots", "program", {"operands": ["bfloat16"], "inputs": ["x"]})
    with pytest.raises(RuleConfigError, match="inputs"):
        validate("low_precision_dots", "program", {"operands": ["bf16"], "inputs": []})


def test_malformed_programs_fail_without_raising() -> None:
    kw: dict[str, Any] = {"operands": ("bf16",), "inputs": ("x",)}
    assert not check_low_precision_dots([], **kw).passed
    bad = ProgramInfo("s", "not mlir", ["x"], ["y"])
    assert "could not be analyzed" in check_low_precision_dots([bad], **kw).message
    np.testing.assert_equal(len(RULES["low_precision_dots"].options.model_fields), 3)


def manual_backward(params: dict, scale: jax.Array, x: jax.Array, y: jax.Array) -> dict:
    """The backward pass by hand: outer products as bfloat16 multiplications, not products."""
    x16, w1, b1, w2 = (a.astype(BF) for a in (x, params["w1"], params["b1"], params["w2"]))
    h = jnp.tanh(x16 @ w1 + b1)
    dpred = (scale * 2.0 * ((h @ w2).astype(jnp.float32) - y) / y.shape[0]).astype(BF)
    dz = jnp.outer(dpred, w2) * (1 - h * h)
    g = {"b1": dz.sum(0), "w1": x16.T @ dz, "w2": h.T @ dpred}
    return {"grads": {k: v.astype(jnp.float32) / scale for k, v in g.items()}, "loss": scale}


def raveled(params: dict, scale: jax.Array, x: jax.Array, y: jax.Array) -> dict:
    """One flat parameter vector: every leaf is a slice of one concatenation."""
    from jax.flatten_util import ravel_pytree

    flat, unravel = ravel_pytree(params)

    def loss(v: jax.Array) -> jax.Array:
        r = mlp(unravel(v.astype(BF)), x, BF).astype(jnp.float32) - y
        return jnp.mean(r * r) * scale

    return {"grads": unravel(jax.grad(loss)(flat) / scale), "loss": scale}


@pytest.mark.parametrize("fn", [manual_backward, raveled], ids=["by-hand", "ravel-pytree"])
def test_other_honest_styles_pass(fn: Callable) -> None:
    outcome = check(fn)
    assert outcome.passed, outcome.message


def params_from_float32_step(params: dict, scale: jax.Array, x: jax.Array, y: jax.Array
                             ) -> dict:
    """The named gradients come from a bf16 pass; the returned step from a float32 one."""
    out = step(lambda p, x: mlp(p, x, BF))(params, scale, x, y)
    g32 = jax.grad(lambda p: jnp.mean((mlp(p, x, jnp.float32) - y) ** 2))(params)
    return {**out, "params": jax.tree.map(lambda w, g: w - 1e-3 * g, params, g32)}


def params_from_bf16_step(params: dict, scale: jax.Array, x: jax.Array, y: jax.Array) -> dict:
    """The step's update reads the float32 master weights directly: no product."""
    out = step(lambda p, x: mlp(p, x, BF))(params, scale, x, y)
    return {**out, "params": jax.tree.map(lambda w, g: w - 1e-3 * g, params, out["grads"])}


def test_every_product_is_checked_whichever_output_it_reaches() -> None:
    """`outputs` names where the inputs may arrive only through low-precision products; a
    float32 product of them is wrong wherever it goes (here: only the returned step)."""
    outs = [*OUTS, "params.b1", "params.w1", "params.w2"]
    for fn, passes in ((params_from_float32_step, False), (params_from_bf16_step, True)):
        outcome = check_low_precision_dots(
            [program(fn, outs=outs)], operands=("bf16",), inputs=("x", "params.w1", "params.w2"),
            outputs=("grads",))
        assert outcome.passed is passes, outcome.message
        assert passes or "(float32, float32)" in outcome.message


def params_from_float32_multiply_and_sum(params: dict, scale: jax.Array, x: jax.Array,
                                         y: jax.Array) -> dict:
    """Red team round 8: the returned step from a float32 backward pass written as multiply
    and sum (no product op at all), beside bf16 grads."""
    out = step(lambda p, x: mlp(p, x, BF))(params, scale, x, y)
    h = jnp.tanh((x[:, :, None] * params["w1"][None]).sum(1) + params["b1"])
    r = (h * params["w2"]).sum(1) - y
    dh = (2 * r / r.shape[0])[:, None] * params["w2"] * (1 - h * h)
    g32 = {"b1": dh.sum(0), "w1": (x[:, :, None] * dh[:, None, :]).sum(0),
           "w2": ((2 * r / r.shape[0])[:, None] * h).sum(0)}
    return {**out, "params": jax.tree.map(lambda w, g: w - 1e-3 * g, params, g32)}


def test_a_step_summed_over_the_inputs_in_float32_fails() -> None:
    """Outputs `outputs` does not name take the inputs elementwise (the update), never summed
    over them outside the low-precision products."""
    outs = [*OUTS, "params.b1", "params.w1", "params.w2"]
    outcome = check_low_precision_dots(
        [program(params_from_float32_multiply_and_sum, outs=outs)], operands=("bf16",),
        inputs=("x", "params.w1", "params.w2"), outputs=("grads",))
    assert not outcome.passed
    assert "by float32 arithmetic that sums over them" in outcome.message


def test_bf16_arithmetic_that_gives_an_image_back_is_not_low_precision_work() -> None:
    """Round 9: values doubled in bfloat16 and halved in float32, then a float32
    multiply-and-sum beside a bfloat16 decoy: the doubling cut the inputs' routes before."""
    outcome = check(step(doubled_then_multiply_and_sum))
    assert not outcome.passed
    assert "float32" in outcome.message and "x, params.w1 and params.w2" in outcome.message
