"""`programs_per_bucket` on real exported programs (one per length, as stage A exports them
for a static-shape rule): padding to the bucket and masking from the data passes, however the
padding is spelled (a loop that copies rows included); computing per length, a mask from the
static length, slicing the padded array back, padding to the largest bucket, a loop that
computes on the rows it copies, or a bucket computation beside a per-length one fail."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rules_structure import program

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import parse_module
from jaxjudge.rules import RULES
from jaxjudge.rules.programs_per_bucket import (
    bucket_of,
    check_programs_per_bucket,
    reference_extents,
)
from jaxjudge.rules.registry import RuleConfigError, validate

BUCKETS = (4, 8, 12, 16)
LENGTHS = (1, 3, 4, 5, 8, 12, 16)


def bucket(n: int) -> int:
    return next(b for b in BUCKETS if b >= n)


def core(xp: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    mask = jnp.arange(xp.shape[1])[None, :] < lengths[:, None]
    kept = jnp.where(mask[..., None], xp, 0.0)
    w = jax.nn.softmax(jnp.where(mask, kept @ q, -jnp.inf), axis=1)
    return {"mean": kept.sum(1) / lengths[:, None], "pooled": jnp.einsum("bn,bnd->bd", w, kept)}


def padded(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    n = bucket(x.shape[1])
    return core(jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0))), lengths, q)


def concatenated(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    b, length, d = x.shape
    zeros = jnp.full((b, bucket(length) - length, d), 7.0)  # any padding value is masked
    return core(jnp.concatenate([x, zeros], axis=1), lengths, q)


jitted_core = jax.jit(core)


def at_set_nested_jit(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    b, length, d = x.shape
    return jitted_core(jnp.zeros((b, bucket(length), d)).at[:, :length].set(x), lengths, q)


def vmapped(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    n = bucket(x.shape[1])
    xp = jax.lax.pad(x, 0.0, ((0, 0, 0), (0, n - x.shape[1], 0), (0, 0, 0)))
    out = jax.vmap(lambda s, m: core(s[None], m[None], q))(xp, lengths)
    return jax.tree.map(lambda v: v[:, 0], out)


def edge_padded(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Edge padding repeats the last row with a broadcast: still a copy of x."""
    n = bucket(x.shape[1])
    return core(jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0)), mode="edge"), lengths, q)


def taken(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Gathered with clipped constant indices (jnp.take selects with a constant mask)."""
    n = bucket(x.shape[1])
    return core(jnp.take(x, jnp.minimum(jnp.arange(n), x.shape[1] - 1), axis=1), lengths, q)


def unpadded_at_boundary(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    n = bucket(x.shape[1])
    xp = x if n == x.shape[1] else jax.lax.dynamic_update_slice(
        jnp.zeros((x.shape[0], n, x.shape[2])), x, (0, 0, 0))
    return core(xp, lengths, q)


def largest_buffer_sliced_back(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Honest (red team round 8): x written into a buffer of the largest bucket, sliced back
    to its own bucket before any computation."""
    b, length, d = x.shape
    buf = jnp.zeros((b, 16, d)).at[:, :length].set(x)
    return core(buf[:, :bucket(length)], lengths, q)


def fori_at_set_rows(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Honest (red team round 8): the copying loop written with `.at[:, t].set` (a scatter
    whose update region returns the update)."""
    b, length, d = x.shape
    return core(jax.lax.fori_loop(0, length, lambda t, buf: buf.at[:, t].set(x[:, t]),
                                  jnp.zeros((b, bucket(length), d))), lengths, q)


def fori_rows(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """A fori_loop over the L positions copying each into a zero bucket buffer (its trip count
    and index clamps hold L: arithmetic on counters, none on x's values)."""
    b, length, d = x.shape

    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), t, axis=1)

    return core(jax.lax.fori_loop(0, length, row, jnp.zeros((b, bucket(length), d))), lengths, q)


def while_rows_reversed(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """A while_loop counting down, each row transposed twice on its way into the buffer."""
    b, length, d = x.shape

    def body(c: tuple) -> tuple:
        t, buf = c
        row = jax.lax.dynamic_slice_in_dim(x, t - 1, 1, axis=1).transpose(0, 2, 1)
        return t - 1, jax.lax.dynamic_update_slice_in_dim(buf, row.transpose(0, 2, 1), t - 1,
                                                           axis=1)

    _, xp = jax.lax.while_loop(lambda c: c[0] > 0, body,
                               (jnp.int32(length), jnp.zeros((b, bucket(length), d))))
    return core(xp, lengths, q)


def programs(fn: Callable[..., dict], lengths: Sequence[int] = LENGTHS) -> list[ProgramInfo]:
    f32 = np.float32
    return [program(fn, {"B": 2, "L": n, "D": 2}, np.ones((2, n, 2), f32),
                    np.ones(2, np.int32), np.ones(2, f32)) for n in lengths]


@functools.cache
def reference(lengths: tuple[int, ...]) -> dict[str, int]:
    """The reference's figures (padding to the bucket) at the same shapes."""
    return reference_extents(programs(padded, lengths), args=("a0",))


def check(progs: list[ProgramInfo]) -> Any:
    lengths = tuple(n for n in (p.dims.get("L", 0) for p in progs) if 0 < n <= BUCKETS[-1])
    return check_programs_per_bucket(progs, dim="L", buckets=BUCKETS, args=("a0",),
                                     extent_multiple=3.0, reference=reference(lengths))


@pytest.mark.parametrize("fn", [padded, concatenated, at_set_nested_jit, vmapped, edge_padded,
                                taken, unpadded_at_boundary, fori_rows, while_rows_reversed,
                                largest_buffer_sliced_back, fori_at_set_rows],
                         ids=["pad", "concatenate", "at-set-nested-jit", "vmap-lax-pad",
                              "edge-mode", "take-clipped", "dynamic-update-slice",
                              "fori-rows-into-bucket", "while-rows-counting-down",
                              "largest-buffer-sliced-back", "fori-at-set-rows"])
def test_padding_to_the_bucket_passes(fn: Callable) -> None:
    outcome = check(programs(fn))
    assert outcome.passed, outcome.message
    assert "3 pairs of lengths compared" in outcome.message
    assert outcome.region is not None and "L=1, 3, 4 (bucket 4)" in outcome.region.note


def unpadded(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    return core(x, lengths, q)


def mask_from_static_length(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    return padded(x, jnp.minimum(lengths, x.shape[1]), q)


def sliced_back(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    n = bucket(x.shape[1])
    return core(jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0)))[:, : x.shape[1]], lengths, q)


def bucket_beside(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    idle = padded(x, lengths, q)
    own = core(x, lengths, q)
    return jax.tree.map(lambda a, b: a + 0.0 * b, own, idle)


def divides_by_length(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    out = padded(x, lengths, q)
    return {**out, "mean": out["mean"] * lengths[:, None] / x.shape[1]}


def fori_rows_scaled(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """The copying loop also scales each row: arithmetic on x, L times (not a copy)."""
    b, length, d = x.shape

    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1) * 1.0001, t, axis=1)

    return core(jax.lax.fori_loop(0, length, row, jnp.zeros((b, bucket(length), d))), lengths, q)


def fori_rows_until_data(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """The copying loop stops where x's data says (its condition reads x: not a copy)."""
    b, length, d = x.shape

    def body(c: tuple) -> tuple:
        t, buf = c
        return t + 1, jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), t, axis=1)

    _, xp = jax.lax.while_loop(lambda c: (c[0] < length) & (x[0, 0, 0] < 1e30), body,
                               (jnp.int32(0), jnp.zeros((b, bucket(length), d))))
    return core(xp, lengths, q)


@pytest.mark.parametrize("fn, found", [
    (unpadded, "iota"), (mask_from_static_length, "constant"), (sliced_back, "iota"),
    (bucket_beside, ""), (divides_by_length, "constant"), (fori_rows_scaled, "constant"),
    (fori_rows_until_data, "constant"),
], ids=["unpadded", "mask-from-static-length", "sliced-back", "bucket-beside",
        "divides-by-static-length", "fori-rows-scaled", "fori-rows-until-data"])
def test_per_length_programs_fail(fn: Callable, found: str) -> None:
    outcome = check(programs(fn))
    assert not outcome.passed
    assert "differ although both lengths pad to the bucket 4" in outcome.message
    assert f"has `{found}" in outcome.message
    region = outcome.region
    assert region is not None and "bucket 4" in region.note
    if found:  # the op that differs is shown, marked
        assert [region.ops[i].name for i in region.focus] == [f"stablehlo.{found}"]


def largest_bucket(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    return core(jnp.pad(x, ((0, 0), (0, 16 - x.shape[1]), (0, 0))), lengths, q)


def next_but_one(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    n = bucket(x.shape[1] + 4) if x.shape[1] <= 12 else 16
    return core(jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0))), lengths, q)


def computed_then_largest(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Padded to its bucket, masked by the data and scaled (no longer a copy of x), then
    padded to the largest bucket: the values stay x's element for element."""
    n = bucket(x.shape[1])
    xp = jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0)))
    kept = jnp.where((jnp.arange(n)[None, :] < lengths[:, None])[:, :, None], xp, 0.0) * 1.0
    return core(jnp.pad(kept, ((0, 0), (0, 16 - n), (0, 0))), lengths, q)


def fori_rows_largest(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """The copying loop fills a buffer of the largest bucket: a copy of x, too long."""
    b, length, d = x.shape

    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), t, axis=1)

    return core(jax.lax.fori_loop(0, length, row, jnp.zeros((b, 16, d))), lengths, q)


def largest_folded(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Padded to 16 and folded to 4 x 4 positions: no axis as long as the next bucket, but
    the pad it was made from is (red team round 7)."""
    b, length, d = x.shape
    xp = jnp.pad(x, ((0, 0), (0, 16 - length), (0, 0))).reshape(b, 4, 4, d)
    return {"mean": xp.sum((1, 2)), "pooled": (xp * q).sum((1, 2))}


def bitcast_then_largest(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Padded to its bucket, bitcast to int32 and back (not a copy by op name), then padded
    to 16: a bitcast keeps the shape, so the value keeps its extent (red team round 7)."""
    n = bucket(x.shape[1])
    xp = jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0)))
    back = jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(xp, jnp.int32),
                                        jnp.float32)
    return core(jnp.pad(back, ((0, 0), (0, 16 - n), (0, 0))), lengths, q)


def masked(x: jax.Array, lengths: jax.Array) -> jax.Array:
    """x padded to its bucket and masked by the data (computed: no longer a copy)."""
    n = bucket(x.shape[1])
    xp = jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0)))
    return jnp.where((jnp.arange(n)[None, :] < lengths[:, None])[..., None], xp, 0.0)


def widened_by_a_constant_matrix(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """The masked bucket copy times a constant (N, 16) 0/1 matrix: 16 positions (round 8)."""
    kept = masked(x, lengths)
    return core(jnp.einsum("bnd,nm->bmd", kept, jnp.eye(kept.shape[1], 16)), lengths, q)


def widened_by_zeros_from_data(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """The masked bucket copy joined to zeros computed from the data, up to 16 (round 8)."""
    kept = masked(x, lengths)
    b, n, d = kept.shape
    fill = jnp.zeros((b, 16 - n + 1, d)) * lengths[:, None, None].astype(jnp.float32)
    return core(jnp.concatenate([kept, fill], axis=1)[:, :16], lengths, q)


@pytest.mark.parametrize("fn", [largest_bucket, next_but_one, computed_then_largest,
                                fori_rows_largest, largest_folded, bitcast_then_largest,
                                widened_by_a_constant_matrix, widened_by_zeros_from_data],
                         ids=["largest", "next-but-one", "computed-then-largest",
                              "fori-rows-largest", "largest-folded-4x4",
                              "bitcast-then-largest", "widened-by-a-constant-matrix",
                              "widened-by-zeros-from-data"])
def test_padding_past_the_bucket_fails(fn: Callable) -> None:
    """A plain copy padded past the bucket is too long at once; one folded, bitcast, computed
    on or built by a loop holds 4x the reference's elements at a length of 4."""
    outcome = check(programs(fn))
    assert not outcome.passed
    m = outcome.message
    assert "longer than a0 padded to its bucket 4" in m or (
        "For L=1 (bucket 4)" in m and "4.0x the largest the reference computes" in m
        and "the judge allows 3x" in m), m
    assert outcome.region is not None


def test_boundary_off_by_one_fails() -> None:
    """A length equal to a bucket padded to the next one (`>` instead of `>=`)."""
    def strict(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
        n = next((b for b in BUCKETS if b > x.shape[1]), 16)
        return core(jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0))), lengths, q)
    outcome = check(programs(strict, (3, 4)))
    assert not outcome.passed and "bucket 4" in outcome.message


def test_nothing_to_compare_is_a_package_error() -> None:
    outcome = check(programs(padded, (3, 5)))
    assert not outcome.passed and "a problem package error" in outcome.message
    long = program(unpadded, {"B": 2, "L": 20, "D": 2}, np.ones((2, 20, 2), np.float32),
                   np.ones(2, np.int32), np.ones(2, np.float32))
    too_long = check([*programs(padded, (3,)), long])
    assert "longer than every bucket" in too_long.message
    assert not check([]).passed
    assert "could not be analyzed" in check([ProgramInfo("s", "x", [], [], {"L": 3})]).message


def test_options_are_validated_and_documented() -> None:
    rule = RULES["programs_per_bucket"]
    assert rule.static_shapes and rule.summary.startswith("Programs for lengths in one bucket")
    with pytest.raises(RuleConfigError, match="strictly increasing"):
        validate("programs_per_bucket", "program", {"dim": "L", "buckets": [8, 4], "args": ["x"]})
    with pytest.raises(RuleConfigError, match="buckets"):
        validate("programs_per_bucket", "program", {"dim": "L", "buckets": [0], "args": ["x"]})
    assert [bucket_of(n, BUCKETS) for n in (1, 4, 5, 16, 17)] == [4, 4, 8, 16, None]


def test_parser_keeps_where_attributes_lie() -> None:
    text = ('"builtin.module"() ({ "func.func"() <{function_type = () -> (), sym_name = "main"}>'
            ' ({ %0 = "stablehlo.constant"() <{value = dense<1.0> : tensor<f32>}> : () -> '
            'tensor<f32>  "func.return"(%0) : (tensor<f32>) -> () }) : () -> () }) : () -> ()')
    op = parse_module(text).functions()["main"].regions[0][0].ops[0]
    assert [text[a:b] for a, b in op.spans] == ["{value = dense<1.0> : tensor<f32>}"]


def four_slices_of_the_largest(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Padded to 16, then cut into four bucket-long slices, each computed on: no value is
    longer than 4 positions, but the pad is read whole (red team round 8)."""
    _, length, _ = x.shape
    xp = jnp.pad(x, ((0, 0), (0, 16 - length), (0, 0)))
    parts = [xp[:, 4 * k:4 * k + 4] for k in range(4)]
    pos = jnp.arange(16).reshape(4, 4)
    kept = [jnp.where((pos[k][None, :] < lengths[:, None])[..., None], part, 0.0)
            for k, part in enumerate(parts)]
    total = sum(part.sum(1) for part in kept)
    return {"mean": total / lengths[:, None], "pooled": total}


def loop_copy_folded(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """A loop copies x's rows into a buffer of 16, folded to 4 x 4 positions and computed on
    (red team round 8)."""
    b, length, d = x.shape

    def row(t: jax.Array, buf: jax.Array) -> jax.Array:
        return jax.lax.dynamic_update_slice_in_dim(
            buf, jax.lax.dynamic_slice_in_dim(x, t, 1, axis=1), t, axis=1)

    xp = jax.lax.fori_loop(0, length, row, jnp.zeros((b, 16, d))).reshape(b, 4, 4, d)
    return {"mean": xp.sum((1, 2)) / lengths[:, None], "pooled": (xp * q).sum((1, 2))}


@pytest.mark.parametrize("fn", [four_slices_of_the_largest, loop_copy_folded],
                         ids=["four-slices-of-the-largest", "loop-copy-folded"])
def test_a_pad_past_the_bucket_in_pieces_fails(fn: Callable) -> None:
    outcome = check(programs(fn, (1, 3, 4, 13, 16)))
    assert not outcome.passed
    assert "4.0x the largest the reference computes from a0" in outcome.message


def ones_column(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Honest: x padded to its bucket with a column of ones beside it, one product giving the
    sums and the counts (at D = 1, twice the reference's elements)."""
    n = bucket(x.shape[1])
    xp = jnp.pad(x, ((0, 0), (0, n - x.shape[1]), (0, 0)))
    mask = (jnp.arange(n)[None, :] < lengths[:, None]).astype(x.dtype)
    both = jnp.concatenate([xp, jnp.ones((*xp.shape[:2], 1), x.dtype)], axis=2)
    sums = jnp.einsum("bn,bnd->bd", mask, both)
    out = core(xp, lengths, q)
    return {"mean": sums[:, :-1] / sums[:, -1:], "pooled": out["pooled"]}


def test_a_column_beside_x_is_not_padding() -> None:
    """At D = 1 the ones column doubles what is computed from x: within 3x."""
    f32 = np.float32
    progs = [program(ones_column, {"B": 2, "L": n, "D": 1}, np.ones((2, n, 1), f32),
                     np.ones(2, np.int32), np.ones(1, f32)) for n in (1, 3, 4)]
    refs = [program(padded, {"B": 2, "L": n, "D": 1}, np.ones((2, n, 1), f32),
                    np.ones(2, np.int32), np.ones(1, f32)) for n in (1, 3, 4)]
    outcome = check_programs_per_bucket(progs, dim="L", buckets=BUCKETS, args=("a0",),
                                        reference=reference_extents(refs, args=("a0",)))
    assert outcome.passed, outcome.message


def test_without_the_reference_s_figure_it_fails_closed() -> None:
    outcome = check_programs_per_bucket(programs(padded, (1, 3)), dim="L", buckets=BUCKETS,
                                        args=("a0",), reference={})
    assert not outcome.passed
    assert "could not be measured" in outcome.message


def per_sequence_to_largest(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Each sequence padded on its own to 16 and masked (red team round 9): no value holds more
    than twice the reference's at a length of 4, but at 16 each holds half of it: the sizes do
    not shrink with the bucket."""
    rows = []
    for i in range(x.shape[0]):
        row = jnp.pad(x[i] * 2.0, ((0, 16 - x.shape[1]), (0, 0)))  # computed: not a copy
        rows.append(jnp.where((jnp.arange(16) < lengths[i])[:, None], row, 0.0).sum(0))
    sums = jnp.stack(rows) / 2.0
    return {"mean": sums / lengths[:, None], "pooled": sums}


def pairwise_softmax(x: jax.Array, lengths: jax.Array, q: jax.Array) -> dict:
    """Honest: the softmax as 1 / sum(exp(s_u - s_t)), a (B, N, N) table that grows faster
    than the reference's values (red team round 9, rejected by an absolute bound)."""
    kept = masked(x, lengths)
    n = kept.shape[1]
    mask = jnp.arange(n)[None, :] < lengths[:, None]
    s = kept @ q
    pair = jnp.where(mask[:, None, :], jnp.exp(jnp.minimum(s[:, None, :] - s[:, :, None], 80.0)),
                     0.0)
    w = jnp.where(mask, 1.0 / pair.sum(-1), 0.0)
    return {"mean": kept.sum(1) / lengths[:, None], "pooled": jnp.einsum("bn,bnd->bd", w, kept)}


def test_sizes_must_shrink_with_the_bucket_as_the_reference_s() -> None:
    outcome = check(programs(per_sequence_to_largest))
    assert not outcome.passed
    assert "do not shrink with the bucket" in outcome.message, outcome.message
    assert check(programs(pairwise_softmax)).passed


def test_a_slice_of_no_written_size_takes_its_operand_whole() -> None:
    """A value read only by slices counts what they take; a program from stage A (untrusted)
    may declare a slice's result of no static size: the measure then has no figure (the rule
    fails closed) and never raises (it summed None before)."""
    from jaxjudge.analysis.dataflow import Budget
    from jaxjudge.analysis.extent import largest_from

    def sliced(x: jax.Array) -> jax.Array:
        return jax.lax.pad(x, 0.0, ((0, 12, 0), (0, 0, 0)))[:4] * 2.0

    p = program(sliced, {"L": 4}, np.ones((4, 2), np.float32))
    whole = largest_from(p, parse_module(p.text), ("a0",), Budget())
    assert whole is not None and whole.elements == 8  # the pad to 16 is read as its slice
    forged = p.text.replace(": (tensor<16x2xf32>) -> tensor<4x2xf32>",
                            ": (tensor<16x2xf32>) -> tensor<?x2xf32>", 1)
    assert forged != p.text
    # a value of no static size: no figure (the rule fails closed, saying so), no exception
    assert largest_from(p, parse_module(forged), ("a0",), Budget()) is None
