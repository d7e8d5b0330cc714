"""`no_loop_over_dim` (jaxjudge.rules.absence) on real exported programs, one per input shape:
honest vectorized code and loops over other dimensions pass; Python loops, lax.map, scan,
fori_loop and chunked loops over the dimension fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from test_rules_structure import f32, program

from jaxjudge.problems.package import ProblemError, load_problem
from jaxjudge.rules import RULES
from jaxjudge.rules.absence import check_no_loop_over_dim
from jaxjudge.rules.registry import RuleConfigError, validate

SHAPES = [(1, 4), (3, 4), (8, 4), (8, 2)]  # (N, D): N varies at D = 4, D varies at N = 8


def programs(fn: Callable[..., Any], shapes: list[tuple[int, int]] = SHAPES,
             probe: bool = True) -> list:
    return [program(fn, {"N": n, "D": d}, f32(n, d), probe=probe) for n, d in shapes]


def norms_vmap(x: jax.Array) -> jax.Array:
    return jax.vmap(lambda r: jnp.dot(r, r))(x)


def norms_fori_over_features(x: jax.Array) -> jax.Array:
    def add(k: jax.Array, acc: jax.Array) -> jax.Array:
        col = jax.lax.dynamic_index_in_dim(x, k, axis=1, keepdims=False)
        return acc + col * col
    return jax.lax.fori_loop(0, x.shape[1], add, jnp.zeros(x.shape[0], x.dtype))


def norms_special_case(x: jax.Array) -> jax.Array:
    if x.shape[0] == 1:
        return jnp.sum(x * x, axis=1)
    return norms_vmap(x)


def norms_special_case_with_a_loop(x: jax.Array) -> jax.Array:
    """A single point is summed feature by feature: a loop at N = 1 only, over D."""
    return norms_fori_over_features(x) if x.shape[0] == 1 else norms_vmap(x)


def norms_python_loop(x: jax.Array) -> jax.Array:
    return jnp.stack([jnp.dot(x[i], x[i]) for i in range(x.shape[0])])


def norms_lax_map(x: jax.Array) -> jax.Array:
    return jax.lax.map(lambda r: jnp.dot(r, r), x)


def norms_scan(x: jax.Array) -> jax.Array:
    return jax.lax.scan(lambda c, r: (c, jnp.dot(r, r)), 0.0, x)[1]


def norms_fori_over_rows(x: jax.Array) -> jax.Array:
    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jax.lax.dynamic_index_in_dim(x, i, keepdims=False)
        return acc.at[i].set(jnp.dot(r, r))
    return jax.lax.fori_loop(0, x.shape[0], one, jnp.zeros(x.shape[0], x.dtype))


def norms_while_data_dependent(x: jax.Array) -> jax.Array:
    def cond(c: tuple[jax.Array, jax.Array]) -> jax.Array:
        return jnp.sum(c[1]) < 1e9 + x[0, 0] * 0  # a condition on values: no provable count
    def body(c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        return c[0] + 1, c[1] + 1e9
    return jax.lax.while_loop(cond, body, (0, norms_vmap(x)))[1]


@pytest.mark.parametrize("fn", [norms_vmap, norms_fori_over_features, norms_special_case,
                                norms_special_case_with_a_loop])
def test_vectorized_code_and_loops_over_other_dims_pass(fn: Callable[..., Any]) -> None:
    outcome = check_no_loop_over_dim(programs(fn), dims=("N",))
    assert outcome.passed, outcome.message


@pytest.mark.parametrize(("fn", "says"), [
    (norms_python_loop, "grows with N"),
    (norms_lax_map, "for N=3 it has 1 loop of 3 steps, for N=8 1 loop of 8 steps"),
    (norms_scan, "loops over N"),
    (norms_fori_over_rows, "loops over N"),
    (norms_while_data_dependent, "cannot be worked out"),
])
def test_loops_over_the_dim_fail(fn: Callable[..., Any], says: str) -> None:
    outcome = check_no_loop_over_dim(programs(fn), dims=("N",))
    assert not outcome.passed and says in outcome.message, outcome.message
    assert outcome.region is not None  # the report shows the op decided on
    if fn is not norms_python_loop:
        assert "stablehlo.while" in {op.name for op in outcome.region.ops}


def test_a_loop_over_the_other_dim_fails_only_that_dim() -> None:
    ps = programs(norms_fori_over_features)
    assert check_no_loop_over_dim(ps, dims=("N",)).passed
    outcome = check_no_loop_over_dim(ps, dims=("N", "D"))
    assert not outcome.passed and "loops over D" in outcome.message


def test_chunks_of_the_dim_are_a_loop_over_it() -> None:
    def chunked(x: jax.Array) -> jax.Array:
        n = x.shape[0]
        pad = jnp.zeros((-n % 2, x.shape[1]), x.dtype)
        pairs = jnp.concatenate([x, pad]).reshape(-1, 2, x.shape[1])
        return jax.lax.map(lambda p: jnp.sum(p * p, axis=1), pairs).reshape(-1)[:n]
    outcome = check_no_loop_over_dim(programs(chunked, [(4, 4), (8, 4)]), dims=("N",))
    assert not outcome.passed and "2 steps" in outcome.message and "4 steps" in outcome.message


def test_the_tests_shapes_alone_decide_no_growth() -> None:
    """Growth is compared at the judge's probe shapes only (run mode's examples may have no two
    sizes that differ only in N): without them the rule cannot pass."""
    outcome = check_no_loop_over_dim(programs(norms_vmap, [(1, 4), (3, 4)], probe=False),
                                     dims=("N",))
    assert not outcome.passed and "probe sizes of N" in outcome.message


def test_a_special_case_at_a_tested_size_is_not_a_loop() -> None:
    """A special case at N = 1 (a test's shape, no loop there) decides nothing: growth is
    compared at the probe sizes and trip counts at sizes >= 2, where a lax.map still shows."""
    def special(x: jax.Array) -> jax.Array:
        return jnp.sum(x * x, axis=1) if x.shape[0] == 1 else norms_vmap(x)

    def mapped(x: jax.Array) -> jax.Array:
        if x.shape[0] == 1:
            return jnp.sum(x * x, axis=1)
        return jax.lax.map(lambda r: jnp.sum(r * r), x)

    def graded(fn: Callable[..., Any]) -> Any:
        tests = programs(fn, [(1, 4), (2, 4)], probe=False)
        return check_no_loop_over_dim(tests + programs(fn, [(3, 4), (5, 4)]), dims=("N",))

    assert graded(special).passed, graded(special).message
    outcome = graded(mapped)
    assert not outcome.passed and "for N=2 it has 1 loop of 2 steps" in outcome.message


# -- a loop of a constant number of steps that indexes the dimension (jaxjudge.analysis.dimindex) --

N_MAX = 8  # the largest N of SHAPES: a loop padded to it keeps its trip count


def norms_fixed_fori_over_rows(x: jax.Array) -> jax.Array:
    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        return acc.at[r].set(jnp.dot(x[r], x[r]))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_fixed_scan_over_padded_rows(x: jax.Array) -> jax.Array:
    padded = jnp.pad(x, ((0, N_MAX - x.shape[0]), (0, 0)))
    return jax.lax.scan(lambda c, r: (c, jnp.dot(r, r)), 0.0, padded)[1][:x.shape[0]]


def norms_fixed_take_of_transposed(x: jax.Array) -> jax.Array:
    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        col = jnp.take(x.T, jnp.minimum(i, x.shape[0] - 1), axis=1)  # a gather along N
        return acc + jnp.where(jnp.arange(x.shape[0]) == i, jnp.dot(col, col), 0.0)
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_fixed_write_into_a_copy(x: jax.Array) -> jax.Array:
    """Rows picked by a one-hot product (no indexing op), written one per step into a buffer
    computed from x: the write at the counter shows the loop."""
    def one(i: jax.Array, buf: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        row = (jnp.arange(x.shape[0]) == r).astype(x.dtype) @ x
        return jax.lax.dynamic_update_slice(buf, (row * row)[None, :], (r, 0))
    return jnp.sum(jax.lax.fori_loop(0, N_MAX, one, 0.0 * x), axis=1)


def norms_fixed_scatter_into_a_copy(x: jax.Array) -> jax.Array:
    """The same write as `.at[r].set` (a scatter, an op with a region)."""
    def one(i: jax.Array, buf: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        row = (jnp.arange(x.shape[0]) == r).astype(x.dtype) @ x
        return buf.at[r].set(row * row)
    return jnp.sum(jax.lax.fori_loop(0, N_MAX, one, 0.0 * x), axis=1)


def norms_fixed_after_a_reduction(x: jax.Array) -> jax.Array:
    """Rows read from a sum over a new axis (a reduce keeps the others) at the counter."""
    same = jnp.sum(jnp.stack([x, 0.0 * x]), axis=0)

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        return acc.at[r].set(jnp.dot(same[r], same[r]))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_fixed_carried_row(x: jax.Array) -> jax.Array:
    """The row number carried beside the counter, advanced by a clamp (no constant step)."""
    def one(c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        r, acc = c
        acc = acc.at[r].set(jnp.dot(x[r], x[r]))
        return jnp.minimum(r + 1, x.shape[0] - 1), acc
    return jax.lax.fori_loop(0, N_MAX, lambda i, c: one(c), (0, jnp.zeros(x.shape[0])))[1]


def norms_fixed_one_hot(x: jax.Array) -> jax.Array:
    """The stated limit: a row picked by a one-hot product, summed under a mask."""
    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        pick = (jnp.arange(x.shape[0]) == i).astype(x.dtype)
        row = pick @ x
        return acc + pick * jnp.dot(row, row)
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_map_over_features(x: jax.Array) -> jax.Array:
    return jnp.sum(jax.lax.map(lambda col: col * col, x.T), axis=0)


def norms_fori_take_constant_rows(x: jax.Array) -> jax.Array:
    order = jnp.arange(x.shape[0])[::-1]

    def add(k: jax.Array, acc: jax.Array) -> jax.Array:
        col = jnp.take(jnp.take(x, order, axis=0), k, axis=1)  # every row, one feature
        return acc + col * col
    return jax.lax.fori_loop(0, x.shape[1], add, jnp.zeros(x.shape[0], x.dtype))[::-1]


def norms_vmap_of_a_feature_loop(x: jax.Array) -> jax.Array:
    """vmap over the rows of a loop over the features that reads each row at an index of its
    own moving with the counter (`r[(argmax + k) % D]`): batched, one step indexes all N rows
    at once (a gather batched over N, or of N index vectors on jax 0.4), never one row."""
    def one(r: jax.Array) -> jax.Array:
        top = jnp.argmax(r)

        def add(k: jax.Array, acc: jax.Array) -> jax.Array:
            return acc + r[k] * r[(top + k) % r.shape[0]]
        return jax.lax.fori_loop(0, r.shape[0], add, 0.0)
    return jax.vmap(one)(x)


def norms_fori_features_from_flat(x: jax.Array) -> jax.Array:
    """Feature k of every point as one chunk of N of `x.T.reshape(-1)` (N is its inner part):
    each step takes a whole copy of N."""
    n, flat = x.shape[0], x.T.reshape(-1)

    def add(k: jax.Array, acc: jax.Array) -> jax.Array:
        col = jax.lax.dynamic_slice(flat, (k * n,), (n,))
        return acc + col * col
    return jax.lax.fori_loop(0, x.shape[1], add, jnp.zeros(n, x.dtype))


def norms_fixed_rows_from_flat(x: jax.Array) -> jax.Array:
    """Row r as a chunk of D of `x.reshape(-1)` (N its outer part): a slice along N."""
    n, d = x.shape
    flat = x.reshape(-1)

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, n - 1)
        row = jax.lax.dynamic_slice(flat, (r * d,), (d,))
        return acc.at[r].set(jnp.dot(row, row))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(n, x.dtype))


def norms_fixed_points_from_flat_transpose(x: jax.Array) -> jax.Array:
    """Point r of each feature, one element of `x.T.reshape(-1)` at `k * N + r`: less than
    a copy of the inner part N."""
    n, d = x.shape
    flat = x.T.reshape(-1)

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, n - 1)
        cols = [jax.lax.dynamic_slice(flat, (k * n + r,), (1,))[0] for k in range(d)]
        return acc.at[r].set(sum(c * c for c in cols))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(n, x.dtype))


def norms_map_over_reshaped_stack(x: jax.Array) -> jax.Array:
    """A 2-step map over `concatenate([x, -x]).reshape(2, N, D)`: N is the split's inner part
    (the one of N's size), the map runs over the outer one, all N rows per step."""
    stack = jnp.concatenate([x, -x]).reshape(2, *x.shape)
    return jnp.sum(jax.lax.map(lambda s: jnp.sum(s * s, axis=1), stack), axis=0) / 2


def norms_fixed_rows_of_reshaped_stack(x: jax.Array) -> jax.Array:
    """The same stack read at `[0, r]`: one row per step along its part of N's size."""
    stack = jnp.concatenate([x, 2.0 * x]).reshape(2, *x.shape)

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        return acc.at[r].set(jnp.dot(stack[0, r], stack[0, r]))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_fixed_row_of_tiled_window(x: jax.Array) -> jax.Array:
    """A window of N rows of `jnp.tile(x, (2, 1))` (a whole copy of N, the merged axis's
    inner part) at r, of which only row 0 is read: row r."""
    tiled = jnp.tile(x, (2, 1))

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        row = jax.lax.dynamic_slice_in_dim(tiled, r, x.shape[0])[0]
        return acc.at[r].set(jnp.dot(row, row))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


@pytest.mark.parametrize("fn", [norms_fixed_row_of_tiled_window, norms_fixed_rows_from_flat,
                                norms_fixed_points_from_flat_transpose,
                                norms_fixed_rows_of_reshaped_stack])
def test_a_slice_of_a_merged_or_split_axis_fails(fn: Callable[..., Any]) -> None:
    """A window of a merged (N*D or D*N) axis is a slice along N unless it spans whole copies
    of every inner part N is (with) in it; a split axis's part of N's size runs along N."""
    outcome = check_no_loop_over_dim(programs(fn), dims=("N",))
    assert not outcome.passed, outcome.message
    assert "(a dynamic_slice)" in outcome.message


def norms_fixed_wide_window(x: jax.Array) -> jax.Array:
    """Row r as row 0 of a window of N + 1 rows of `[x; x]` (more than half of its 2N): only
    the window's first row is read."""
    twice = jnp.concatenate([x, x])

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        row = jax.lax.dynamic_slice_in_dim(twice, r, x.shape[0] + 1)[0]
        return acc.at[r].set(jnp.dot(row, row))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_fixed_repeated_index(x: jax.Array) -> jax.Array:
    """Row r gathered N times (`x[jnp.full((N,), r)]`): N index vectors, one row."""
    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, x.shape[0] - 1)
        row = x[jnp.full((x.shape[0],), r)][0]
        return acc.at[r].set(jnp.dot(row, row))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(x.shape[0], x.dtype))


def norms_fixed_shifted_write(x: jax.Array) -> jax.Array:
    """x written into a zero buffer at `N - r`, then its fixed row N read: row r of x."""
    n = x.shape[0]

    def one(i: jax.Array, acc: jax.Array) -> jax.Array:
        r = jnp.minimum(i, n - 1)
        buf = jax.lax.dynamic_update_slice(jnp.zeros((2 * n, x.shape[1]), x.dtype), x,
                                           (n - r, 0))
        return acc.at[r].set(jnp.dot(buf[n], buf[n]))
    return jax.lax.fori_loop(0, N_MAX, one, jnp.zeros(n, x.dtype))


@pytest.mark.parametrize(("fn", "op"), [
    (norms_fixed_wide_window, "dynamic_slice"),
    (norms_fixed_repeated_index, "gather"),
    (norms_fixed_shifted_write, "dynamic_update_slice"),
    (norms_fixed_fori_over_rows, "dynamic_slice"),
    (norms_fixed_scan_over_padded_rows, "dynamic_slice"),
    (norms_fixed_take_of_transposed, "gather"),
    (norms_fixed_write_into_a_copy, "dynamic_update_slice"),
    (norms_fixed_carried_row, "dynamic_slice"),
    (norms_fixed_scatter_into_a_copy, "scatter"),
    (norms_fixed_after_a_reduction, "dynamic_slice"),
])
def test_a_fixed_count_loop_indexing_the_dim_fails(fn: Callable[..., Any], op: str) -> None:
    outcome = check_no_loop_over_dim(programs(fn), dims=("N",))
    assert not outcome.passed, outcome.message
    assert f"a loop of {N_MAX} steps" in outcome.message and f"(a {op})" in outcome.message
    assert "for D=4, N=3 a loop" in outcome.message  # a size >= 2 is shown first
    assert "one slice along N per step (1 of " in outcome.message
    assert outcome.region is not None
    assert f"stablehlo.{op}" in {o.name for o in outcome.region.ops}


@pytest.mark.parametrize("fn", [norms_map_over_features, norms_fori_take_constant_rows,
                                norms_vmap_of_a_feature_loop, norms_fixed_one_hot,
                                norms_fori_features_from_flat, norms_map_over_reshaped_stack])
def test_loops_indexing_other_axes_pass(fn: Callable[..., Any]) -> None:
    """Loops over the features, constant index arrays, and (the stated limit) a one-hot pick."""
    outcome = check_no_loop_over_dim(programs(fn), dims=("N",))
    assert outcome.passed, outcome.message
    assert "no loop indexes N at its counter" in outcome.message


def test_the_dim_axis_needs_two_sizes() -> None:
    """With N at one size only, an axis of that size could be any dimension's: none is
    read as N's, and the loop over the features (D = N = 4) is not taken for one over N."""
    from jaxjudge.analysis.dimindex import dim_axes

    one = programs(norms_fori_over_features, [(4, 4), (4, 2)])
    types = [[f"tensor<{n}x{d}xf32>"] for n, d in [(4, 4), (4, 2)]]
    assert dim_axes(one, types, ("N", "D")) == {("a0", "D"): {1}}
    types = [[f"tensor<{n}x{d}xf32>"] for n, d in SHAPES]
    assert dim_axes(programs(norms_vmap), types, ("N", "D")) == {("a0", "N"): {0},
                                                                 ("a0", "D"): {1}}


def test_reading_what_a_loop_indexes_spends_the_budget() -> None:
    """The tags and the loops' changing values are propagated against the graph's Budget: a
    budget too small for them stops the analysis instead of running it unbounded."""
    from jaxjudge.analysis.dataflow import Budget, TooComplex, build_graph
    from jaxjudge.analysis.dimindex import dim_axes, visits
    from jaxjudge.analysis.folding import fold_constants
    from jaxjudge.analysis.stablehlo import parse_module

    ps = programs(norms_fixed_fori_over_rows)
    graphs = [build_graph(parse_module(p.text)) for p in ps]
    axes = dim_axes(ps, [g.main_arg_types for g in graphs], ("N",))
    g, p = graphs[1], ps[1]
    values = fold_constants(g)
    g.budget = Budget()
    found = visits(g, values, [N_MAX], p.args, axes, ("N",), p.text, p.dims)
    assert {(v.dim, v.count, v.taken, v.size) for v in found} == {("N", N_MAX, 1, 3)}  # x[r]
    spent = Budget().left - g.budget.left
    g.budget = Budget(spent // 2)
    with pytest.raises(TooComplex):
        visits(g, values, [N_MAX], p.args, axes, ("N",), p.text, p.dims)


def test_options_are_typed_and_need_static_shapes() -> None:
    assert RULES["no_loop_over_dim"].static_shapes
    assert validate("no_loop_over_dim", "program", {"dims": ["N", "M"]}).dims == ("N", "M")
    for bad in ({"dims": []}, {"dims": ["N M"]}, {"dim": "N"}):
        with pytest.raises(RuleConfigError):
            validate("no_loop_over_dim", "program", bad)


def test_a_package_naming_an_unknown_dim_does_not_load(tmp_path: Any) -> None:
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent / "problems" / "pairwise-distances-nested-vmap"
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    toml = dest / "problem.toml"
    toml.write_text(toml.read_text().replace('dims = ["N", "M"]', 'dims = ["N", "K"]'))
    with pytest.raises(ProblemError, match="K"):
        load_problem(dest)
