"""Loop analysis for `loop_over_dim` (jaxjudge.analysis.loops) on real exported programs: trip
counts worked out from each loop's counter for every loop form, and whether the loop does the
work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rules_structure import f32, program

from jaxjudge.analysis.dataflow import Budget, TooComplex, build_graph
from jaxjudge.analysis.expr import Expr
from jaxjudge.analysis.folding import fold_constants
from jaxjudge.analysis.loops import analyze_loops
from jaxjudge.analysis.stablehlo import parse_module
from jaxjudge.rules import RULES
from jaxjudge.rules.registry import RuleConfigError, validate
from jaxjudge.rules.structure import check_loop_over_dim


def loops(fn: Callable[..., Any], t: int, d: int = 3, depends_on: tuple[str, ...] = ("a0",)):
    """(trip count, does the work, why) of every loop of fn exported at x of shape (t, d)."""
    p = program(fn, {"T": t, "D": d}, f32(t, d))
    g = build_graph(parse_module(p.text))
    return [(f.count, f.works, f.why) for f in analyze_loops(g, p.args, depends_on)]


def counts(fn: Callable[..., Any], t: int) -> list[int | None]:
    return [c for c, _, _ in loops(fn, t)]


def step(c: jax.Array, row: jax.Array) -> jax.Array:
    return 0.5 * c + row


# -- trip counts: every loop form --------------------------------------------------------------

def scan_rows(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (step(c, r), step(c, r)), x[0], x)[1]


def scan_pairs(x: jax.Array) -> jax.Array:
    pairs = x[: x.shape[0] // 2 * 2].reshape(-1, 2, x.shape[1])
    return jax.lax.scan(lambda c, r: (step(c, r.sum(0)), None), x[0], pairs)[0]


def fori_static(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(2, x.shape[0], lambda i, c: step(c, x[i]), x[0])


def fori_ceil_int32(x: jax.Array) -> jax.Array:
    n = (jnp.int32(x.shape[0]) + 3) // 4  # an int32 value: the loop carries it as its bound
    return jax.lax.fori_loop(0, n, lambda i, c: step(c, x[4 * i]), x[0])


def while_block_start(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 4, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (0, x[0]))[1]


def while_le(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] <= x.shape[0] - 1, body, (0, x[0]))[1]


def while_swapped(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: x.shape[0] > s[0], body, (0, x[0]))[1]


def while_countdown(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        left, c = s
        return left - 1, step(c, x[x.shape[0] - left])

    return jax.lax.while_loop(lambda s: s[0] > 0, body, (x.shape[0], x[0]))[1]


def while_not_equal(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] != x.shape[0], body, (0, x[0]))[1]


def while_from_one(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (1, x[0]))[1]


def counter_loop(cond: Callable[[jax.Array, int], jax.Array], start: int = 0,
                 inc: int = 1) -> Callable[[jax.Array], jax.Array]:
    """A while_loop over a counter from `start` by `inc` while `cond(counter, T)`."""
    def fn(x: jax.Array) -> jax.Array:
        def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            i, c = s
            return i + inc, step(c, x[i % x.shape[0]])

        return jax.lax.while_loop(lambda s: cond(s[0], x.shape[0]), body, (start, x[0]))[1]

    return fn


# Conditions with no closed form: their counts come from running the condition on the counter.
while_and_true = counter_loop(lambda i, t: (i < t) & True)
while_and_bound = counter_loop(lambda i, t: (i < t) & (i < 100))
while_block_index = counter_loop(lambda i, t: i // 4 < t // 4, inc=4)
while_times_four = counter_loop(lambda i, t: i * 4 < t)
while_wraps = counter_loop(lambda i, t: i * 1073741824 >= 0)  # 2 steps in int32: 2**31 wraps
while_forever = counter_loop(lambda i, t: i * 2 >= 0)  # ~2**30 steps: too many to run


def counter_loop_of(start: Any, advance: Callable[[Any], Any],
                    cond: Callable[[Any, int], Any]) -> Callable[[jax.Array], jax.Array]:
    """A while_loop whose counter starts at `start` and becomes `advance(counter)`."""
    def fn(x: jax.Array) -> jax.Array:
        def body(s: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[Any, ...]:
            i, k, c = s
            return advance(i), k + 1, step(c, x[k % x.shape[0]])

        return jax.lax.while_loop(lambda s: cond(s[0], x.shape[0]), body,
                                  (start, 0, x[0]))[2]

    return fn


# Counters a learner writes that are not `i + constant` in an integer: run exactly as the
# program runs them (a float rounded as float32 rounds it).
while_float_counter = counter_loop_of(jnp.float32(0.0), lambda c: c + 1.0,
                                      lambda c, t: c < t)
while_float_halves = counter_loop_of(jnp.float32(0.0), lambda c: c + 0.5,
                                     lambda c, t: c < t / 2)
while_doubling = counter_loop_of(1, lambda i: i * 2, lambda i, t: i < 2 ** t)
while_float_stuck = counter_loop_of(jnp.float32(2.0 ** 24), lambda c: c + 1.0,
                                    lambda c, t: c < 2.0 ** 24 + t)  # c + 1 rounds to c


def fori_negated_ceil(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, -(-x.shape[0] // 4), lambda i, c: step(c, x[4 * i]), x[0])


def countdown_quarter(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        left, c = s
        return left - 1, step(c, x[left])

    return jax.lax.while_loop(lambda s: s[0] > 0, body, (x.shape[0] // 4, x[0]))[1]


def map_rows(x: jax.Array) -> jax.Array:
    return jax.lax.map(lambda r: r * 2.0, x)


def map_over_inner_scan(x: jax.Array) -> jax.Array:
    return jax.lax.map(lambda r: jax.lax.scan(lambda c, v: (c * 0.5 + v, None), 0.0, r)[0], x)


@pytest.mark.parametrize(("fn", "expected"), [
    (scan_rows, lambda t: [t]),
    (scan_pairs, lambda t: [t // 2]),
    (fori_static, lambda t: [t - 2]),
    (fori_ceil_int32, lambda t: [(t + 3) // 4]),
    (while_block_start, lambda t: [(t + 3) // 4]),
    (while_le, lambda t: [t]),
    (while_swapped, lambda t: [t]),
    (while_countdown, lambda t: [t]),
    (while_not_equal, lambda t: [t]),
    (while_from_one, lambda t: [t - 1]),
    (while_and_true, lambda t: [t]),
    (while_and_bound, lambda t: [t]),
    (while_block_index, lambda t: [t // 4]),
    (while_times_four, lambda t: [(t + 3) // 4]),
    (fori_negated_ceil, lambda t: [(t + 3) // 4]),
    (countdown_quarter, lambda t: [t // 4]),
    (while_float_counter, lambda t: [t]),
    (while_float_halves, lambda t: [t]),
    (while_doubling, lambda t: [t]),
    (while_float_stuck, lambda t: [None]),  # float32 never gets there: too many to run
    (while_wraps, lambda t: [2]),  # the counter wraps at its third value, as it runs
    (while_forever, lambda t: [None]),
    (map_rows, lambda t: [t]),
    (map_over_inner_scan, lambda t: [t, 3]),
])
@pytest.mark.parametrize("t", [5, 8])
def test_trip_counts_are_worked_out(fn: Callable[..., Any],
                                    expected: Callable[[int], list[int | None]], t: int) -> None:
    assert counts(fn, t) == expected(t)


def data_dependent(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1, step(c, x[i])

    return jax.lax.while_loop(lambda s: (s[0] < x.shape[0]) & (s[1].sum() < 1e6), body,
                              (0, x[0]))[1]


def data_step(x: jax.Array) -> jax.Array:
    def body(s: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        i, c = s
        return i + 1 + (c[0] > 1e9).astype(jnp.int32), step(c, x[i])

    return jax.lax.while_loop(lambda s: s[0] < x.shape[0], body, (0, x[0]))[1]


@pytest.mark.parametrize("fn", [data_dependent, data_step])
def test_a_count_that_cannot_be_proven_is_unknown(fn: Callable[..., Any]) -> None:
    assert counts(fn, 8) == [None]
    outcome = check_loop_over_dim([program(fn, {"T": 8, "D": 3}, f32(8, 3))], dim="T")
    assert not outcome.passed
    assert "a loop whose trip count could not be determined" in outcome.message
    assert "jax.lax.while_loop whose condition reads only an integer counter" in outcome.message


def test_constants_fold_through_calls_and_integer_division() -> None:
    p = program(fori_ceil_int32, {"T": 9, "D": 3}, f32(9, 3))
    g = build_graph(parse_module(p.text))
    values = fold_constants(g)
    assert 3 in values  # (9 + 3) // 4 through jnp's floor_divide helper
    assert all(values[a] is None for a in g.main_args)


def test_the_parser_reads_compare_directions() -> None:
    module = parse_module(program(while_le, {"T": 4, "D": 3}, f32(4, 3)).text)
    found = []
    stack = list(module.ops)
    while stack:
        op = stack.pop()
        if op.name == "stablehlo.compare":
            found.append(op.attrs.get("comparison_direction"))
        stack += [o for region in op.regions for block in region for o in block.ops]
    assert "LE" in found


# -- does the loop do the work ----------------------------------------------------------------

def idle_counter(x: jax.Array) -> jax.Array:
    n = jax.lax.fori_loop(0, x.shape[0], lambda i, c: c + 1, 0)
    _, rest = jax.lax.scan(lambda c, r: (step(c, r), step(c, r)), x[0], x[1:])
    return jnp.concatenate([x[:1], rest]) * (n // x.shape[0])


def zero_times_scan(x: jax.Array) -> jax.Array:
    return jnp.cumsum(x, axis=0) + 0 * scan_rows(x)


def where_false_scan(x: jax.Array) -> jax.Array:
    return jnp.where(False, scan_rows(x), jnp.cumsum(x, axis=0))


def stack_rows(x: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, x.shape[0], lambda i, out: out.at[i].set(x[i] * 2.0), x * 0)


def carry_times_one(x: jax.Array) -> jax.Array:
    c = jax.lax.fori_loop(0, x.shape[0], lambda i, c: c * 1.0, x[0])
    return jnp.cumsum(x, axis=0) + c


def ys_of_previous_carry(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (step(c, r), c), x[0], x)[1]


@pytest.mark.parametrize(("fn", "why"), [
    (idle_counter, "counts"),
    (zero_times_scan, "not_live"),
    (where_false_scan, "not_live"),
    (stack_rows, "no_data"),
    (carry_times_one, "no_data"),
])
def test_a_loop_of_the_right_count_that_does_not_do_the_work(fn: Callable[..., Any],
                                                            why: str) -> None:
    right = [(w, y) for c, w, y in loops(fn, 6) if c == 6]
    assert right == [(False, why)]


def in_place_from_x(x: jax.Array) -> jax.Array:
    """An EMA written in place: the buffer starts as x, row t becomes the average of row t
    and row t - 1 (a red-team round's honest form, rejected while x counted only when read
    as a value passed along)."""
    def body(t: jax.Array, out: jax.Array) -> jax.Array:
        prev = out[jnp.maximum(t - 1, 0)]
        return out.at[t].set(jnp.where(t == 0, out[t], 0.5 * out[t] + 0.5 * prev))

    return jax.lax.fori_loop(0, x.shape[0], body, x)


@pytest.mark.parametrize("fn", [scan_rows, ys_of_previous_carry, while_countdown,
                                map_over_inner_scan, in_place_from_x])
def test_a_recurrence_does_the_work(fn: Callable[..., Any]) -> None:
    assert any(works for _, works, _ in loops(fn, 6))


def attention_like(q: jax.Array, k: jax.Array) -> jax.Array:
    def body(c: jax.Array, kj: jax.Array) -> tuple[jax.Array, None]:
        return c * 0.5 + q @ kj.T, None

    return jax.lax.scan(body, jnp.zeros((q.shape[0], 2)), k.reshape(-1, 2, k.shape[1]))[0]


def keys_only(q: jax.Array, k: jax.Array) -> jax.Array:
    total = jax.lax.scan(lambda c, kj: (c + kj.sum(), None), 0.0, k.reshape(-1, 2, k.shape[1]))[0]
    return q * total


def test_the_carried_value_must_depend_on_every_named_input() -> None:
    def run(fn: Callable[..., Any], depends_on: tuple[str, ...]) -> list[tuple[Any, ...]]:
        p = program(fn, {"T": 4}, f32(4, 3), f32(4, 3))
        g = build_graph(parse_module(p.text))
        return [(f.count, f.works) for f in analyze_loops(g, p.args, depends_on)]

    assert run(attention_like, ("a0", "a1")) == [(2, True)]
    assert run(keys_only, ("a1",)) == [(2, True)]
    assert run(keys_only, ("a0", "a1")) == [(2, False)]  # the loop never reads q
    assert run(keys_only, ()) == [(2, True)]  # default: any input


# -- the rule's messages ----------------------------------------------------------------------

def per_t(fn: Callable[..., Any], ts: tuple[int, ...] = (4, 6)) -> list[Any]:
    return [program(fn, {"T": t, "D": 3}, f32(t, 3)) for t in ts]


def test_messages_name_the_trip_count_found() -> None:
    short = check_loop_over_dim(per_t(while_from_one), dim="T", depends_on=("a0",))
    assert not short.passed
    # The longest program that has a loop is the one described.
    assert "For input shapes D=3, T=6 no loop runs T = 6 steps" in short.message
    assert "(found: a loop of 5 steps (T - 1))" in short.message
    idle = check_loop_over_dim(per_t(idle_counter), dim="T", depends_on=("a0",))
    assert not idle.passed and "a loop runs T = 6 steps, but it does not carry" in idle.message
    assert "it carries nothing but its counter" in idle.message
    assert "Other loops found: a loop of 5 steps (T - 1)" in idle.message
    zero = check_loop_over_dim(per_t(zero_times_scan), dim="T", depends_on=("a0",))
    assert not zero.passed and "multiplied by 0" in zero.message
    stacked = check_loop_over_dim(per_t(stack_rows), dim="T", depends_on=("a0",))
    assert not stacked.passed and "no value it carries is computed" in stacked.message
    half = check_loop_over_dim(per_t(scan_pairs, (8, 12)), dim="T", trip_count=Expr("T // 4"))
    assert not half.passed and "found: a loop of 6 steps (2 * (T // 4))" in half.message
    none = check_loop_over_dim(per_t(jnp.cumsum), dim="T")
    assert not none.passed and "no loop runs T = 6 steps (the program has no loop)" in none.message


def test_the_pass_message_states_the_worked_out_count() -> None:
    ok = check_loop_over_dim(per_t(fori_ceil_int32, (4, 8)), dim="T",
                             trip_count=Expr("T // 4"), depends_on=("a0",))
    assert ok.passed and ok.message.startswith("A loop runs T // 4 steps")


def test_the_analysis_is_bounded() -> None:
    p = program(scan_rows, {"T": 6, "D": 3}, f32(6, 3))
    g = build_graph(parse_module(p.text))
    g.budget = Budget(20)
    with pytest.raises(TooComplex):
        analyze_loops(g, p.args, ("a0",))


def test_depends_on_is_a_typed_option() -> None:
    assert RULES["loop_over_dim"].static_shapes
    opts = validate("loop_over_dim", "program", {"dim": "T", "depends_on": ["x", "params.w"]})
    assert opts.depends_on == ("x", "params.w")  # type: ignore[attr-defined]
    for bad in ({"dim": "T", "depends_on": "x"}, {"dim": "T", "depends_on": ["1x"]},
                {"dim": "T", "depends_on": [f"a{i}" for i in range(40)]}):
        with pytest.raises(RuleConfigError):
            validate("loop_over_dim", "program", bad)


# -- a fixed count (no dimension): a stated number of iterations ---------------------------------

def power_iteration(steps: int, unroll: bool = False) -> Callable[..., Any]:
    def fn(w: jax.Array, u: jax.Array) -> jax.Array:
        def body(_: Any, u: jax.Array) -> jax.Array:
            v = w.T @ u
            return w @ (v / jnp.linalg.norm(v))

        if unroll:
            for _ in range(steps):
                u = body(0, u)
            return u
        return jax.lax.fori_loop(0, steps, body, u)

    return fn


def fixed(fn: Callable[..., Any], **options: Any) -> Any:
    programs = [program(fn, {"M": m, "N": 3}, f32(m, 3), f32(m)) for m in (2, 5)]
    return check_loop_over_dim(programs, **options)


def test_a_fixed_trip_count_needs_no_dimension() -> None:
    # The start vector (a1) is only the loop's initial value: the body reads w (a0).
    ok = fixed(power_iteration(8), trip_count=Expr("8"), depends_on=("a0",))
    assert ok.passed and ok.message == (
        "A loop runs 8 steps for every input shape and carries the computation (a value updated "
        "at every step from its previous value and a0, reaching your outputs).")
    short = fixed(power_iteration(7), trip_count=Expr("8"))
    assert not short.passed and "found: a loop of 7 steps (8 - 1)" in short.message
    half = fixed(power_iteration(4), trip_count=Expr("8"))  # scan(..., unroll=2)'s count
    assert not half.passed and "found: a loop of 4 steps (8 / 2)" in half.message
    assert "run the 8 steps with jax.lax.scan or jax.lax.fori_loop" in short.message
    unrolled = fixed(power_iteration(8, unroll=True), trip_count=Expr("8"))
    assert not unrolled.passed and "(the program has no loop). Run the 8 steps" in unrolled.message


def test_dim_or_trip_count_is_required() -> None:
    opts = validate("loop_over_dim", "program", {"trip_count": "8", "depends_on": ["w", "u"]})
    assert opts.dim is None and str(opts.trip_count) == "8"  # type: ignore[attr-defined]
    with pytest.raises(RuleConfigError, match="give dim, trip_count, or both"):
        validate("loop_over_dim", "program", {"depends_on": ["w"]})


# -- the loop must carry all of the work -------------------------------------------------------

def closed_form(x: jax.Array) -> jax.Array:
    """step's recurrence without a loop: x's rows weighted by powers of 0.5 (a (T, T) matrix)."""
    t = jnp.arange(x.shape[0])
    lag = t[:, None] - t[None, :]
    w = jnp.where(lag >= 0, 0.5 ** jnp.maximum(lag, 0).astype(x.dtype), 0.0)
    return w @ x


def running_sum(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (c + r, None), jnp.zeros_like(x[0]), x)[0]


def closed_form_beside_token_scan(x: jax.Array) -> jax.Array:
    return closed_form(x) + 1e-30 * running_sum(x)


def closed_form_through_scan(x: jax.Array) -> jax.Array:
    def body(c: Any, r: jax.Array) -> Any:
        return (c[0] + r, c[1]), None

    (total, out), _ = jax.lax.scan(body, (jnp.zeros_like(x[0]), closed_form(x)), x)
    return out + 1e-30 * total


def first_row_copied(x: jax.Array) -> jax.Array:
    return jnp.concatenate([x[:1], scan_rows(x)[1:]])


def scan_then_scaled(x: jax.Array) -> jax.Array:
    return jnp.tanh(scan_rows(x)) * 2.0  # work after the loop, on what it returns: fine


@pytest.mark.parametrize("fn", [closed_form_beside_token_scan, closed_form_through_scan,
                                first_row_copied])
def test_inputs_reaching_the_outputs_beside_the_loop_fail(fn: Callable[..., Any]) -> None:
    """Before: a T-step loop mixing x into its state and reaching the output passed, whatever
    computed the output beside it. Now x may reach the outputs only through its state."""
    p = program(fn, {"T": 6, "D": 3}, f32(6, 3))
    g = build_graph(parse_module(p.text))
    assert [f.why for f in analyze_loops(g, p.args, ("a0",), 6, only_through_loop=True)] == [
        "bypass"]
    assert check_loop_over_dim(per_t(fn), dim="T", depends_on=("a0",)).passed  # not asked
    outcome = check_loop_over_dim(per_t(fn), dim="T", depends_on=("a0",), only_through_loop=True)
    assert not outcome.passed
    assert "your outputs also depend on a0 outside it" in outcome.message


@pytest.mark.parametrize("fn", [scan_rows, scan_then_scaled])
def test_work_on_what_the_loop_returns_passes(fn: Callable[..., Any]) -> None:
    assert check_loop_over_dim(per_t(fn), dim="T", depends_on=("a0",),
                               only_through_loop=True).passed


def test_a_second_working_loop_is_not_a_bypass() -> None:
    def twice(x: jax.Array) -> jax.Array:
        return 0.5 * (scan_rows(x) + scan_rows(2.0 * x) / 2.0)

    assert check_loop_over_dim(per_t(twice), dim="T", depends_on=("a0",),
                               only_through_loop=True).passed


def test_only_through_loop_is_a_typed_option() -> None:
    opts = validate("loop_over_dim", "program",
                    {"dim": "T", "depends_on": ["x"], "only_through_loop": True})
    assert opts.only_through_loop  # type: ignore[attr-defined]
    with pytest.raises(RuleConfigError):
        validate("loop_over_dim", "program", {"dim": "T", "only_through_loop": "maybe"})


# -- a condition on the counter shifted by a constant -------------------------------------------

def block_starts(cond: Callable[[Any, int], Any]) -> Callable[..., Any]:
    def fn(x: jax.Array) -> jax.Array:
        t = x.shape[0]

        def body(c: Any) -> Any:
            s, acc = c
            return s + 2, 0.5 * acc + jax.lax.dynamic_slice_in_dim(x, s, 2).sum(0)

        return jax.lax.while_loop(lambda c: cond(c[0], t), body, (0, x[0] * 0))[1]

    return fn


@pytest.mark.parametrize("cond", [
    lambda s, t: s + 2 <= t,      # the next block fits
    lambda s, t: t - s > 0,       # keys left
    lambda s, t: 2 + s <= t,
    lambda s, t: t - 2 - s >= 0,
])
def test_a_counter_shifted_by_a_constant_is_still_counted(cond: Callable[..., Any]) -> None:
    """Before: `start + 2 <= T` had no known trip count ("could not be determined")."""
    assert counts(block_starts(cond), 6) == [3]
    assert counts(block_starts(cond), 8) == [4]


def test_a_shifted_counter_still_counts_the_real_steps() -> None:
    assert counts(block_starts(lambda s, t: s + 4 <= t), 8) == [3]  # starts 0, 2, 4


def test_the_hint_ends_the_message_and_the_fix_names_the_trip_count() -> None:
    hint = "Iterate over the T // 4 key blocks."
    out = check_loop_over_dim(per_t(jnp.cumsum, (4, 8)), dim="T", trip_count=Expr("T // 4"),
                              hint=hint)
    assert not out.passed and out.message.endswith(hint)
    assert "Run a loop of T // 4 steps with jax.lax.scan" in out.message
    assert "Iterate over T with" not in out.message
    plain = check_loop_over_dim(per_t(jnp.cumsum), dim="T")
    assert "Iterate over T with jax.lax.scan" in plain.message
    with pytest.raises(RuleConfigError):
        validate("loop_over_dim", "program", {"dim": "T", "hint": "x" * 401})


def token_beside_unrolled(w: jax.Array, u: jax.Array) -> jax.Array:
    """A decoy: the iteration unrolled from u, beside an 8-step loop that mixes w into a 0."""
    token = jax.lax.fori_loop(
        0, 8, lambda i, c: c + jnp.minimum(jnp.abs(jnp.sum(w)), 0.0) + jnp.minimum(c, 0.0),
        jnp.float32(0.0))
    return power_iteration(8, unroll=True)(w, u) + token


def test_only_through_loop_may_name_a_start_vector() -> None:
    """A power iteration reads w after its loop (sigma, w / sigma), so w cannot be required to
    reach the outputs only through the loop; the start vector u can."""
    opts = {"trip_count": Expr("8"), "depends_on": ("a0",)}
    assert fixed(token_beside_unrolled, **opts).passed  # the loop mixes w in: not enough
    decoy = fixed(token_beside_unrolled, **opts, only_through_loop=("a1",))
    assert not decoy.passed
    assert "your outputs also depend on a1 outside it" in decoy.message
    honest = fixed(power_iteration(8), **opts, only_through_loop=("a1",))
    assert honest.passed, honest.message
    opts_ok = validate("loop_over_dim", "program", {"trip_count": "8", "depends_on": ["w"],
                                                   "only_through_loop": ["u"]})
    assert opts_ok.only_through_loop == ("u",)  # type: ignore[attr-defined]
    for bad in ([], ["1u"], "u"):
        with pytest.raises(RuleConfigError):
            validate("loop_over_dim", "program", {"trip_count": "8", "only_through_loop": bad})


# -- every_step: the update runs at every step ---------------------------------------------------

def iteration(w: jax.Array, u: jax.Array) -> jax.Array:
    v = w.T @ u
    return w @ (v / jnp.linalg.norm(v))


def all_at_first_step(w: jax.Array, u: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, 8, lambda i, u: jax.lax.cond(
        i == 0, lambda: power_iteration(8, unroll=True)(w, u), lambda: u), u)


def one_at_last_step(w: jax.Array, u: jax.Array) -> jax.Array:
    return jax.lax.fori_loop(0, 8, lambda i, u: jnp.where(i == 7, iteration(w, u), u), u)


def masked_by_counter(w: jax.Array, u: jax.Array) -> jax.Array:
    def body(i: jax.Array, u: jax.Array) -> jax.Array:
        first = (i == 0).astype(u.dtype)
        return first * power_iteration(8, unroll=True)(w, u) + (1 - first) * u

    return jax.lax.fori_loop(0, 8, body, u)


def guarded_on_data(w: jax.Array, u: jax.Array) -> jax.Array:
    def body(i: jax.Array, u: jax.Array) -> jax.Array:
        v = w.T @ u
        norm = jnp.linalg.norm(v)
        return w @ jnp.where(norm > 0, v / jnp.where(norm > 0, norm, 1.0), v)

    return jax.lax.fori_loop(0, 8, body, u)


def alternating(w: jax.Array, u: jax.Array) -> jax.Array:
    # Both branches of the counter's where run an update: it runs at every step.
    return jax.lax.fori_loop(0, 8, lambda i, u: jnp.where(i % 2 == 0, iteration(w, u),
                                                          iteration(w, -u)), u)


@pytest.mark.parametrize("fn", [all_at_first_step, one_at_last_step, masked_by_counter])
def test_an_update_at_some_steps_only_is_skipped(fn: Callable[..., Any]) -> None:
    opts = {"trip_count": Expr("8"), "depends_on": ("a0",)}
    assert fixed(fn, **opts).passed  # what every_step adds
    outcome = fixed(fn, **opts, every_step=True)
    assert not outcome.passed
    assert "is left out at 7 of its 8 steps" in outcome.message


@pytest.mark.parametrize("fn", [power_iteration(8), guarded_on_data, alternating])
def test_an_update_at_every_step_passes(fn: Callable[..., Any]) -> None:
    outcome = fixed(fn, trip_count=Expr("8"), depends_on=("a0",), every_step=True)
    assert outcome.passed, outcome.message


def test_running_a_condition_spends_the_budget() -> None:
    # 16,384 runs of a 3-op condition with no closed form: a bounded, charged amount of work.
    p = program(while_forever, {"T": 8, "D": 3}, f32(8, 3))
    g = build_graph(parse_module(p.text))
    g.budget = Budget(50_000)
    with pytest.raises(TooComplex):
        analyze_loops(g, p.args, ("a0",))


# -- every_step: gates run step by step (jaxjudge.analysis.stepgates) -----------------------------

def at_every_step(fn: Callable[..., Any], t: int = 12) -> list[tuple[int | None, bool, str, int]]:
    """(trip count, does the work, why, steps left out) of fn's loops, with every_step."""
    p = program(fn, {"T": t, "D": 3}, f32(t, 3))
    g = build_graph(parse_module(p.text))
    return [(f.count, f.works, f.why, f.idle)
            for f in analyze_loops(g, p.args, ("a0",), want=t, every_step=True)]


def ema_where_first_row(x: jax.Array) -> jax.Array:
    def body(t: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m = jnp.where(t == 0, x[t], 0.5 * x[t] + 0.5 * c[0])
        return m, c[1].at[t].set(m)

    return jax.lax.fori_loop(0, x.shape[0], body, (x[0] * 0, jnp.zeros_like(x)))[1]


def pass_first_step(arange: Callable[[int], Any]) -> Callable[[jax.Array], jax.Array]:
    """Starts from x[0] and leaves step 0 out (one step passes the carry along, honestly),
    the step index read from `arange(T)` (jnp's iota, or np's literal table)."""
    def fn(x: jax.Array) -> jax.Array:
        def body(c: jax.Array, t_row: tuple[jax.Array, jax.Array]
                 ) -> tuple[jax.Array, jax.Array]:
            t, row = t_row
            m = jnp.where(t == 0, c, 0.5 * row + 0.5 * c)
            return m, m

        return jax.lax.scan(body, x[0], (arange(x.shape[0]), x))[1]

    return fn


ema_pass_first_step = pass_first_step(jnp.arange)
ema_pass_first_np_arange = pass_first_step(np.arange)


def ema_records_previous(x: jax.Array) -> jax.Array:
    # ys records the carry before the update: the work reaches it one step later.
    return jax.lax.scan(lambda c, row: (step(c, row), c), x[0], x)[1]


def ema_masked_block(x: jax.Array) -> jax.Array:
    # A mask computed from the counter that does not pass the carry along: not a gate.
    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        keep = (jnp.arange(x.shape[1]) + t) >= 0
        return jnp.where(keep, 0.5 * x[t] + 0.5 * c, -c)

    return jax.lax.fori_loop(0, x.shape[0], body, x[0])


def two_rows_then_idle(x: jax.Array) -> jax.Array:
    n = x.shape[0]

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        two = step(step(c, x[(2 * t) % n]), x[(2 * t + 1) % n])
        return jnp.where(2 * t < n, two, c)

    return jax.lax.fori_loop(0, n, body, x[0])


def under_carried_flag(x: jax.Array) -> jax.Array:
    def body(t: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m, done = c
        return jnp.where(done, m, step(m, x.sum(0))), jnp.array(True)

    return jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.array(False)))[0]


def under_counted_flag(x: jax.Array) -> jax.Array:
    # A flag counting down beside the counter: idle once it reaches 0.
    def body(t: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m, left = c
        return jnp.where(left > 0, step(m, x[t]), m), left - 1

    return jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.int32(3)))[0]


def cond_at_first_step(x: jax.Array) -> jax.Array:
    def all_rows(m: jax.Array) -> jax.Array:  # T - 1 steps: not itself the loop over T
        return jax.lax.scan(lambda c, r: (step(c, r), None), m, x[1:])[0]

    return jax.lax.fori_loop(0, x.shape[0], lambda t, m: jax.lax.cond(
        t == 0, all_rows, lambda m: m, m), x[0])


def under_unrunnable_mask(x: jax.Array) -> jax.Array:
    # A data-free mask array the analysis does not run: read conservatively, it gates.
    def body(t: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m, mask = c
        return jnp.where(mask[0] > 0, m, step(m, x[t])), mask.at[t].set(1.0)

    return jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.zeros(x.shape[0])))[0]


def counter_or_nan_check(x: jax.Array) -> jax.Array:
    # A gate on the counter that also reads data (never true) is read conservatively.
    n = x.shape[0]

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        two = step(step(c, x[(2 * t) % n]), x[(2 * t + 1) % n])
        return jnp.where((2 * t < n) | jnp.isnan(x[0, 0]), two, c)

    return jax.lax.fori_loop(0, n, body, x[0])


def stack_index_select(x: jax.Array) -> jax.Array:
    n = x.shape[0]

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        two = step(step(c, x[(2 * t) % n]), x[(2 * t + 1) % n])
        return jnp.stack([c, two])[(2 * t < n) * 1]

    return jax.lax.fori_loop(0, n, body, x[0])


def table_gate_copy_branch(x: jax.Array) -> jax.Array:
    # A float table read at the counter; the idle branch passes along c * 1.0.
    n = x.shape[0]
    table = jnp.asarray(np.arange(n) < n // 2, jnp.float32)

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        two = step(step(c, x[(2 * t) % n]), x[(2 * t + 1) % n])
        return jnp.where(table[t] > 0.5, two, c * 1.0)

    return jax.lax.fori_loop(0, n, body, x[0])


def inner_loop_at_first_step(x: jax.Array) -> jax.Array:
    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, jnp.where(t == 0, 12, 0), lambda k, m: step(m, x[k]), c)

    return jax.lax.fori_loop(0, x.shape[0], body, x[0])


def zero_times_inf_gate(x: jax.Array) -> jax.Array:
    # f * 0.0 == 0.0 holds at step 0 only: f overflows to inf after it (0 * inf is NaN).
    def body(t: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m, f = c
        return jnp.where(f * 0.0 == 0.0, step(m, x.sum(0)), m), f * jnp.float32(1e20)

    return jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.float32(1e20)))[0]


def f32_rounding_gate(x: jax.Array) -> jax.Array:
    # 1 + 1e-8 is 1 in float32: the gate is t == 0.
    def body(t: jax.Array, c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        m, f = c
        on = (t == 0) | (f > 1.0)
        return jnp.where(on, step(m, x.sum(0)), m), f + jnp.float32(1e-8)

    return jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.float32(1.0)))[0]


def guard_on_index_vector(x: jax.Array) -> jax.Array:
    # Honest: a guard built from an index vector that holds at every step (no row past T).
    n = x.shape[0]

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        return jnp.where(jnp.any(t + jnp.arange(3) < n + 2), step(c, x[t]), c)

    return jax.lax.fori_loop(0, n, body, x[0])


def first_step_on_index_vector(x: jax.Array) -> jax.Array:
    # Honest: the first step found as "no row before this one", counted on an index vector.
    rows = jnp.arange(x.shape[0])

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        return jnp.where(jnp.sum(rows < t) == 0, x[0], step(c, x[t]))

    return jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x[0]))


def first_step_bitwise_or(x: jax.Array) -> jax.Array:
    # Honest: the first step found by a bitwise OR of an index vector (2t | 2t + 1 is 1 only at
    # t == 0): a reduce by `or` on integers is bitwise, not any() (red-team finding).
    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        first = jnp.bitwise_or.reduce(2 * t + jnp.arange(2)) == 1
        return jnp.where(first, x[0], step(c, x[t]))

    return jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x[0]))


def two_rows_index_vector_gate(x: jax.Array) -> jax.Array:
    # Two rows per step, then idle steps, the gate on the two rows' index vector (read as
    # updating at every step until small index arrays were run: stage B's observer caught it).
    n = x.shape[0]

    def body(t: jax.Array, c: jax.Array) -> jax.Array:
        two = step(step(c, x[(2 * t) % n]), x[(2 * t + 1) % n])
        return jnp.where(jnp.any(2 * t + jnp.arange(2) < n), two, c)

    return jax.lax.fori_loop(0, n, body, x[0])


@pytest.mark.parametrize("fn", [scan_rows, ema_where_first_row, ema_pass_first_step,
                                ema_records_previous, ema_masked_block,
                                ema_pass_first_np_arange, guard_on_index_vector,
                                first_step_on_index_vector, first_step_bitwise_or])
def test_an_update_left_out_at_most_at_the_first_step_passes(fn: Callable[..., Any]) -> None:
    found = at_every_step(fn)
    assert [w for c, w, _, _ in found if c == 12] == [True], found


@pytest.mark.parametrize(("fn", "idle"), [(two_rows_then_idle, 6), (under_carried_flag, 11),
                                          (under_counted_flag, 9), (cond_at_first_step, 11),
                                          (under_unrunnable_mask, 12),
                                          (counter_or_nan_check, 6),
                                          (stack_index_select, 12),
                                          (table_gate_copy_branch, 6),
                                          (inner_loop_at_first_step, 11),
                                          (zero_times_inf_gate, 11),
                                          (f32_rounding_gate, 11),
                                          (two_rows_index_vector_gate, 6)])
def test_an_update_left_out_at_more_steps_fails(fn: Callable[..., Any], idle: int) -> None:
    outer = [f for f in at_every_step(fn) if f[0] == 12]
    assert outer and not any(w for _, w, _, _ in outer)
    assert outer[0][2:] == ("skipped", idle), outer
    assert [w for c, w, _ in loops(fn, 12) if c == 12] == [True]  # what every_step adds


def test_gates_decided_at_every_step_spend_the_budget() -> None:
    # A switch on the counter: one branch, so one group of steps, per step.
    def switch(x: jax.Array) -> jax.Array:
        branches = [lambda m, k=k: step(m, x[k]) for k in range(12)]
        return jax.lax.fori_loop(0, 12, lambda t, m: jax.lax.switch(t, branches, m), x[0])

    assert [w for c, w, _, _ in at_every_step(switch) if c == 12] == [True]
    p = program(switch, {"T": 12, "D": 3}, f32(12, 3))
    g = build_graph(parse_module(p.text))
    g.budget = Budget(2_000)
    with pytest.raises(TooComplex):
        analyze_loops(g, p.args, ("a0",), want=12, every_step=True)
