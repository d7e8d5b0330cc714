"""`loop_over_dim`'s `sliced` (jaxjudge.analysis.stepslices) on real exported programs: the honest
loops a learner writes read the input one step's slice at a time and pass; the decoys that
compute the result from all of it at once (at one step, before the loop, after it) fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from test_rules_structure import f32, program

from jaxjudge.analysis.dataflow import build_graph
from jaxjudge.analysis.expr import Expr
from jaxjudge.analysis.folding import fold_constants
from jaxjudge.analysis.loops import analyze_loops
from jaxjudge.analysis.stablehlo import parse_module
from jaxjudge.analysis.stepslices import reads_whole, whole_reads
from jaxjudge.rules.registry import RuleConfigError, validate
from jaxjudge.rules.structure import check_loop_over_dim

T, D = 8, 3


def works(fn: Callable[..., Any], *args: Any, want: int = T,
          sliced: tuple[str, ...] = ("a0",)) -> list[tuple[bool, str]]:
    """(does the work, why) of the loops of `want` steps, with `sliced`."""
    p = program(fn, {"T": T}, *(args or (f32(T, D),)))
    g = build_graph(parse_module(p.text))
    found = analyze_loops(g, p.args, ("a0",), want, True, sliced, p.text)
    return [(f.works, f.why) for f in found if f.count == want]


def weights(t: int) -> jax.Array:
    """The EMA's T x T weight matrix (alpha = 0.5): the closed form is weights @ x."""
    s = jnp.arange(t)
    lag = s[:, None] - s[None, :]
    w = jnp.where(lag >= 0, 0.5 * 0.5 ** jnp.maximum(lag, 0).astype(jnp.float32), 0.0)
    return w.at[:, 0].set(0.5 ** s.astype(jnp.float32))


# -- honest: one step's slice at a time --------------------------------------------------------

def scan_rows(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (0.5 * c + 0.5 * r, 0.5 * c + 0.5 * r), x[0], x)[1]


def fori_first_row(x: jax.Array) -> jax.Array:
    def body(t: jax.Array, s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        out, c = s
        c = jnp.where(t == 0, x[0], 0.5 * x[t] + 0.5 * c)
        return out.at[t].set(c), c

    return jax.lax.fori_loop(0, x.shape[0], body, (jnp.zeros_like(x), jnp.zeros_like(x[0])))[0]


def fori_transposed(x: jax.Array) -> jax.Array:
    xt = x.T
    return jax.lax.fori_loop(0, x.shape[0], lambda t, c: 0.5 * c + xt[:, t], xt[:, 0])


def scan_scaled(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (r[0] + 0.5 * c, c), x[0], 0.5 * x.reshape(T, 1, D))[1]


def buffer_from_x(x: jax.Array) -> jax.Array:
    def body(t: jax.Array, out: jax.Array) -> jax.Array:
        prev = jax.lax.dynamic_slice(out, (jnp.maximum(t - 1, 0), 0), (1, D))
        row = jax.lax.dynamic_slice(x, (t, 0), (1, D))
        return jax.lax.dynamic_update_slice(out, 0.5 * row + 0.5 * prev, (t, 0))

    return jax.lax.fori_loop(0, x.shape[0], body, x)


def scan_from_nan(x: jax.Array) -> jax.Array:
    # "No average yet" is a NaN carry: a where on the carried average, element by element.
    def step(c: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array]:
        c = jnp.where(jnp.isnan(c), r, 0.5 * r + 0.5 * c)
        return c, c

    return jax.lax.scan(step, jnp.full((D,), jnp.nan), x)[1]


@pytest.mark.parametrize("fn", [scan_rows, fori_first_row, fori_transposed, scan_scaled,
                                buffer_from_x, scan_from_nan])
def test_a_loop_reading_a_row_per_step_passes(fn: Callable[..., Any]) -> None:
    assert works(fn) == [(True, "")]


def stacked_blocks(q: jax.Array, k: jax.Array) -> jax.Array:
    both = jnp.stack([q, k])
    qs, kb = both[0], both[1].reshape(T // 4, 4, D)
    return jax.lax.fori_loop(0, T // 4, lambda j, c: c + qs @ kb[j].T @ kb[j], jnp.zeros((T, D)))


def test_a_static_slice_of_a_stack_copies_only_its_part() -> None:
    # q (not sliced) read whole from a stack with k: only kb[j], a block of k, is read of k.
    assert works(stacked_blocks, f32(T, D), f32(T, D), want=T // 4, sliced=("a1",)) == [
        (True, "")]


# -- decoys: all of x at once ------------------------------------------------------------------

def closed_form_at_first_step(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, x.shape[0], lambda t, c: jnp.where(t == 0, weights(T) @ x, c)
                             * 1.0, jnp.zeros_like(x))


def closed_form_as_start(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, x.shape[0], lambda t, c: c + 1e-30 * x[t], weights(T) @ x)


def closed_form_after(x: jax.Array) -> jax.Array:
    return weights(T) @ jax.lax.fori_loop(0, x.shape[0], lambda t, c: x + 1e-30 * c,
                                          jnp.zeros_like(x))


def cumsum_rows_scanned(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (r + 1e-30 * c, c), x[0], jnp.cumsum(x, axis=0))[1]


def broadcast_rows(x: jax.Array) -> jax.Array:
    # Each "row" of the broadcast holds all of x: more than one step's share, still a copy,
    # and the product with it is computed from all of x.
    xb = jnp.broadcast_to(x, (T, T, D))
    return jax.lax.fori_loop(0, T, lambda t, c: 0.5 * c + (weights(T) @ xb[t])[0],
                             jnp.zeros(D))


def closed_form_in_a_where(x: jax.Array) -> jax.Array:
    # Only the predicate is computed from all of x: each row kept by the closed form's sign.
    def step(c: jax.Array, tr: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        c = 0.5 * c + jnp.where((weights(T) @ x)[tr[0]] > 0, 0.5 * tr[1], 0.0)
        return c, c

    return jax.lax.scan(step, jnp.zeros(D), (jnp.arange(T), x))[1]


@pytest.mark.parametrize("fn", [closed_form_at_first_step, closed_form_as_start,
                                closed_form_after, cumsum_rows_scanned, broadcast_rows,
                                closed_form_in_a_where])
def test_a_result_computed_from_all_of_x_fails(fn: Callable[..., Any]) -> None:
    assert works(fn) == [(False, "unsliced")]
    assert works(fn, sliced=()) == [(True, "")]  # what `sliced` adds


def test_the_message_says_what_was_read_whole() -> None:
    p = program(closed_form_at_first_step, {"T": T}, f32(T, D))
    outcome = check_loop_over_dim([p], trip_count=Expr("8"), depends_on=["a0"],
                                  only_through_loop=True, sliced=["a0"])
    assert not outcome.passed
    assert "computed from all of a0 at once" in outcome.message


def test_bits_mark_copies_and_whole_reads() -> None:
    p = program(closed_form_after, {"T": T}, f32(T, D))
    g = build_graph(parse_module(p.text))
    assert g.main_arg_types == [f"tensor<{T}x{D}xf32>"]  # what one step's share is taken of
    bits = whole_reads(g, fold_constants(g), p.args, ["a0"], T, p.text)
    assert bits[g.main_args[0]] == 1  # the argument itself: a copy
    assert reads_whole(bits, g.main_results)


def test_sliced_is_validated() -> None:
    opts = validate("loop_over_dim", "program", {"dim": "T", "sliced": ["x", "params.k"]})
    assert opts.sliced == ("x", "params.k")  # type: ignore[attr-defined]
    with pytest.raises(RuleConfigError):
        validate("loop_over_dim", "program", {"dim": "T", "sliced": ["1x"]})


def fori_written(x: jax.Array, write: str = "set") -> jax.Array:
    """The honest loop writing the average into zeros with `.at[t].set` (or `.add`)."""
    def body(t: jax.Array, s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        out, c = s
        c = 0.5 * c + 0.5 * x[t]
        return getattr(out.at[t], write)(c), c

    return jax.lax.fori_loop(0, x.shape[0], body, (jnp.zeros_like(x), x[0]))[0]


def test_a_single_row_is_a_copy_and_a_scatter_keeps_it_one() -> None:
    # At T = 1, x[0] is a reshape of all of x (one step's share), written with .at[t].set.
    p = program(fori_written, {"T": 1}, f32(1, D))
    g = build_graph(parse_module(p.text))
    found = analyze_loops(g, p.args, ("a0",), 1, True, ("a0",), p.text)
    assert [(f.works, f.why) for f in found] == [(True, "")]


def rows_one_by_one(x: jax.Array) -> jax.Array:
    # A fixed number of single rows (12, the largest T here), combined at the first step.
    rows = jnp.stack([x[min(i, x.shape[0] - 1)] for i in range(12)])
    closed = (weights(12) @ rows)[: x.shape[0]]
    return jax.lax.fori_loop(0, x.shape[0], lambda t, c: jnp.where(t == 0, closed, c) * 1.0
                             + 1e-30 * x[t], jnp.zeros_like(x))


def test_more_single_rows_than_a_loop_takes_are_a_whole_read() -> None:
    p = program(rows_one_by_one, {"T": 12}, f32(12, D))
    g = build_graph(parse_module(p.text))
    found = analyze_loops(g, p.args, ("a0",), 12, True, ("a0",), p.text)
    assert [(f.works, f.why) for f in found] == [(False, "unsliced")]
    found = analyze_loops(g, p.args, ("a0",), 12, True, (), p.text)
    assert [(f.works, f.why) for f in found] == [(True, "")]


# -- an input rebuilt by the loop, then read whole after it -------------------------------------

def rebuilt_then_product(x: jax.Array) -> jax.Array:
    # Row t copied into a buffer at step t (mixing in 1e-30 of the row before), then the weight
    # matrix applied to the buffer after the loop: x reassembled, then read whole.
    buf = jax.lax.fori_loop(0, T, lambda t, b: b.at[t].set(x[t] + 1e-30 * b[t - 1]),
                            jnp.zeros_like(x))
    return weights(T) @ buf


def rebuilt_through_identity(x: jax.Array) -> jax.Array:
    # Each row passed through a product with the identity (which gives it back: a copy).
    eye = jnp.eye(D)
    buf = jax.lax.fori_loop(0, T, lambda t, b: b.at[t].set(x[t] @ eye + 1e-30 * b[t - 1]),
                            jnp.zeros_like(x))
    return weights(T) @ buf


def rebuilt_through_scaled_identity(x: jax.Array) -> jax.Array:
    # Twice the identity, halved after the loop: the row scaled, like `2 * x[t]`.
    def body(t: jax.Array, b: jax.Array) -> jax.Array:
        return b.at[t].set(x[t] @ (2 * jnp.eye(D)) + 1e-30 * b[t - 1])

    return weights(T) @ jax.lax.fori_loop(0, T, body, jnp.zeros_like(x)) / 2


def rebuilt_through_inner_scan(x: jax.Array) -> jax.Array:
    # Each row copied element by element by a scan of its own: its pieces reassembled, a copy.
    def copy_row(r: jax.Array) -> jax.Array:
        return jax.lax.scan(lambda c, e: (c, e), 0.0, r)[1]

    buf = jax.lax.fori_loop(0, T, lambda t, b: b.at[t].set(copy_row(x[t]) + 1e-30 * b[t - 1]),
                            jnp.zeros_like(x))
    return weights(T) @ buf


def rebuilt_then_product_at_last_step(x: jax.Array) -> jax.Array:
    def body(t: jax.Array, s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        b, out = s
        b = b.at[t].set(jnp.exp(x[t]) + 1e-30 * b[t - 1])  # elementwise: still x's values
        return b, jnp.where(t == T - 1, weights(T) @ jnp.log(b), out)

    return jax.lax.fori_loop(0, T, body, (jnp.zeros_like(x), jnp.zeros_like(x)))[1]


def blocks_copied_then_softmax(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    # [k | v] copied into a buffer one block of 4 rows per step, a plain softmax after it.
    kv = jnp.concatenate([k, v], axis=1)
    t = q.shape[0]

    def body(j: jax.Array, b: jax.Array) -> jax.Array:
        old = jax.lax.dynamic_slice_in_dim(b, j * 4, 4)
        mix = jax.lax.dynamic_slice_in_dim(q, j * 4, 4)[:, :1]
        new = jax.lax.dynamic_slice_in_dim(kv, j * 4, 4) + 1e-30 * old * mix
        return jax.lax.dynamic_update_slice_in_dim(b, new, j * 4, 0)

    buf = jax.lax.fori_loop(0, t // 4, body, jnp.zeros_like(kv))
    return jax.nn.softmax(q @ buf[:, :D].T) @ buf[:, D:]


def blocks_online_softmax(q: jax.Array, k: jax.Array, v: jax.Array,
                          read: Callable[[jax.Array], jax.Array] = lambda b: b) -> jax.Array:
    # The honest loop: acc is a product with v's block, divided by l after the loop.
    t = q.shape[0]
    kb, vb = k.reshape(t // 4, 4, D), v.reshape(t // 4, 4, D)

    def step(c: tuple[jax.Array, ...], kv: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
        m, total, acc = c
        s = q @ read(kv[0]).T
        mn = jnp.maximum(m, s.max(1))
        p, a = jnp.exp(s - mn[:, None]), jnp.exp(m - mn)
        return (mn, a * total + p.sum(1), a[:, None] * acc + p @ read(kv[1])), None

    init = (jnp.full((t,), -jnp.inf), jnp.zeros(t), jnp.zeros((t, D)))
    _, total, acc = jax.lax.scan(step, init, (kb, vb))[0]
    return acc / total[:, None]


def blocks_through_identity_then_softmax(q: jax.Array, k: jax.Array, v: jax.Array
                                         ) -> jax.Array:
    # The blocks of k and v copied through the 4 x 4 identity (jnp.eye(4) @ block), mixing in
    # 1e-30 times the old block times v's.
    t, eye = q.shape[0], jnp.eye(4)

    def body(j: jax.Array, b: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        vj = eye @ jax.lax.dynamic_slice_in_dim(v, j * 4, 4)
        old = jax.lax.dynamic_slice_in_dim(b[0], j * 4, 4)
        kj = eye @ jax.lax.dynamic_slice_in_dim(k, j * 4, 4) + 1e-30 * old * vj
        return (jax.lax.dynamic_update_slice_in_dim(b[0], kj, j * 4, 0),
                jax.lax.dynamic_update_slice_in_dim(b[1], vj, j * 4, 0))

    kk, vv = jax.lax.fori_loop(0, t // 4, body, (jnp.zeros_like(k), jnp.zeros_like(v)))
    return jax.nn.softmax(q @ kk.T) @ vv


def blocks_online_softmax_through_identity(q: jax.Array, k: jax.Array, v: jax.Array
                                           ) -> jax.Array:
    # Honest: the same loop, each block passed through the identity first (a copy of it).
    eye = jnp.eye(4)
    return blocks_online_softmax(q, k, v, lambda block: eye @ block)


def scan_transposed_back(x: jax.Array) -> jax.Array:
    # The average stacked, re-laid-out and shifted after the loop: still one row per step.
    last, ys = jax.lax.scan(lambda c, r: (0.5 * c + 0.5 * r, c), x[0], x)
    return jnp.concatenate([ys[1:], last[None]]).T.reshape(D, T).T * 1.0


def map_over_channels(x: jax.Array) -> jax.Array:
    def one(col: jax.Array) -> jax.Array:
        return jax.lax.scan(lambda c, r: (0.5 * c + 0.5 * r,) * 2, col[0], col)[1]

    return jax.lax.map(one, x.T).T


def rebuilt_then_segment_sum(x: jax.Array) -> jax.Array:
    # The weight matrix applied after the loop as a scatter-add over every (t, s) pair.
    buf = jax.lax.fori_loop(0, T, lambda t, b: b.at[t].set(x[t] + 1e-30 * b[t - 1]),
                            jnp.zeros_like(x))
    t_idx, s_idx = jnp.repeat(jnp.arange(T), T), jnp.tile(jnp.arange(T), T)
    terms = weights(T)[t_idx, s_idx][:, None] * buf[s_idx]
    return jax.ops.segment_sum(terms, t_idx, num_segments=T)


def rebuilt_by_adds_then_product(x: jax.Array) -> jax.Array:
    # Row t added into a zero buffer at step t (`.at[t].add`): still x rebuilt.
    buf = jax.lax.fori_loop(0, T, lambda t, b: b.at[t].add(x[t] + 1e-30 * b[t - 1]),
                            jnp.zeros_like(x))
    return weights(T) @ buf


def test_a_scatter_adding_one_average_per_step_passes() -> None:
    # `.at[t].add(c)` into zeros: a D-element update, no more than one step's share of x.
    assert works(lambda x: fori_written(x, "add")) == [(True, "")]


@pytest.mark.parametrize("fn", [rebuilt_then_product, rebuilt_through_identity,
                                rebuilt_through_scaled_identity, rebuilt_through_inner_scan,
                                rebuilt_then_product_at_last_step, rebuilt_then_segment_sum,
                                rebuilt_by_adds_then_product])
def test_an_input_rebuilt_by_the_loop_then_read_whole_fails(fn: Callable[..., Any]) -> None:
    assert works(fn) == [(False, "unsliced")]
    assert works(fn, sliced=()) == [(True, "")]


def blocks(fn: Callable[..., Any]) -> list[tuple[bool, str]]:
    """(does the work, why) of the loops of 4 steps over q, k, v at T = 16, k and v sliced."""
    p = program(fn, {"T": 16}, f32(16, D), f32(16, D), f32(16, D))
    g = build_graph(parse_module(p.text))
    found = analyze_loops(g, p.args, ("a1", "a2"), 4, True, ("a1", "a2"), p.text)
    return [(f.works, f.why) for f in found]


def test_blocks_copied_by_the_loop_then_a_plain_softmax_fail() -> None:
    # At T = 16, 4 steps: half of the buffer is more than a step's share of k and v.
    assert blocks(blocks_copied_then_softmax) == [(False, "unsliced")]
    assert blocks(blocks_through_identity_then_softmax) == [(False, "unsliced")]
    assert blocks(blocks_online_softmax) == [(True, "")]
    assert blocks(blocks_online_softmax_through_identity) == [(True, "")]


@pytest.mark.parametrize("fn", [scan_transposed_back, map_over_channels])
def test_the_loop_result_re_laid_out_after_it_passes(fn: Callable[..., Any]) -> None:
    assert works(fn) == [(True, "")]


# -- a block of v joined with constants (flash attention's column of ones) ----------------------

def online_softmax_over(q: jax.Array, k: jax.Array, v1: jax.Array, width: int) -> jax.Array:
    """The online softmax over blocks of 4 keys, each `p @ v1[block]` giving the weighted
    values and, past column D, the row sums (v1 is v with columns of ones, `width` in all)."""
    def body(j: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m, acc = c
        s = q @ jax.lax.dynamic_slice_in_dim(k, j * 4, 4).T
        mn = jnp.maximum(m, s.max(1))
        p = jnp.exp(s - mn[:, None])
        return mn, jnp.exp(m - mn)[:, None] * acc + p @ jax.lax.dynamic_slice_in_dim(v1, j * 4, 4)

    init = (jnp.full((q.shape[0],), -jnp.inf), jnp.zeros((q.shape[0], width)))
    acc = jax.lax.fori_loop(0, q.shape[0] // 4, body, init)[1]
    return acc[:, :D] / acc[:, D:D + 1]


def ones_column(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    return online_softmax_over(q, k, jnp.concatenate([v, jnp.ones((v.shape[0], 1))], 1), D + 1)


def ones_column_padded(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    return online_softmax_over(q, k, jnp.pad(v, ((0, 0), (0, 2)), constant_values=1.0), D + 2)


def ones_column_scanned_blocks(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    # [v | 1] transposed and back, cut into (T/4, 4, D + 1) blocks a scan runs over.
    t = q.shape[0]
    v1 = jnp.concatenate([v.T, jnp.ones((1, t))]).T.reshape(t // 4, 4, D + 1)

    def step(c: tuple[jax.Array, jax.Array], kv: tuple[jax.Array, jax.Array]) -> tuple[Any, None]:
        m, acc = c
        s = q @ kv[0].T
        mn = jnp.maximum(m, s.max(1))
        return (mn, jnp.exp(m - mn)[:, None] * acc + jnp.exp(s - mn[:, None]) @ kv[1]), None

    init = (jnp.full((t,), -jnp.inf), jnp.zeros((t, D + 1)))
    acc = jax.lax.scan(step, init, (k.reshape(t // 4, 4, D), v1))[0][1]
    return acc[:, :D] / acc[:, D:]


def zeros_column_flattened(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    # [v | 0 0 0] transposed and flattened: its first T * D elements are all of v, and the
    # "block" the first step takes, 4 * 4D elements, is exactly them (the ones only at the end).
    t = q.shape[0]
    flat = jnp.concatenate([v, jnp.zeros((t, 3 * D))], 1).T.reshape(-1)

    def body(j: jax.Array, acc: jax.Array) -> jax.Array:
        s = q @ jax.lax.dynamic_slice_in_dim(k, j * 4, 4).T
        vj = jax.lax.dynamic_slice_in_dim(flat, j * 16 * D, 16 * D).reshape(4, 4 * D)
        return acc + jnp.exp(s) @ vj

    return jax.lax.fori_loop(0, t // 4, body, jnp.zeros((t, 4 * D)))[:, :D]


@pytest.mark.parametrize("fn", [ones_column, ones_column_padded, ones_column_scanned_blocks])
def test_a_block_of_v_joined_with_ones_is_one_steps_share(fn: Callable[..., Any]) -> None:
    assert blocks(fn) == [(True, "")]


def test_constants_laid_out_away_from_the_block_do_not_shrink_it() -> None:
    assert blocks(zeros_column_flattened) == [(False, "unsliced")]
