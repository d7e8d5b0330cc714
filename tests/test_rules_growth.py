"""independent_of_dim on real exported programs: what grows is named from the programs; the
judge's probe shapes are compared, and the tests' own shapes only where three of them (or two
far apart) share the other dimensions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from test_rules_structure import f32, program

from jaxjudge.analysis.dimrange import DimRange
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.rules import RULES
from jaxjudge.rules.growth import check_independent_of_dim, probe_dims, probe_sizes

# -- probe shapes ------------------------------------------------------------------------------

def span(low: int, high: int, step: int = 1) -> DimRange:
    return DimRange(range=(low, high), multiple_of=step)


@pytest.mark.parametrize(("low", "high", "step", "sizes"), [
    (1, 8, 1, (1, 2, 3, 4, 5, 6)), (16, 32, 1, (16, 17, 18, 19, 20, 21)),
    (1, 6, 1, (1, 2, 3, 4, 5, 6)), (1, 4, 1, (1, 2, 3, 4)), (1, 3, 1, (1, 2, 3)),
    (0, 2, 1, (0, 1, 2)), (1, 2, 1, ()), (5, 5, 1, ()), (8, 64, 1, (8, 9, 10, 11, 12, 13)),
    # a step: its multiples only
    (16, 32, 4, (16, 20, 24, 28, 32)), (1, 48, 4, (4, 8, 12, 16, 20, 24)),
    (17, 31, 4, (20, 24, 28)), (1, 16, 3, (3, 6, 9, 12, 15)), (1, 9, 2, (2, 4, 6, 8)),
    (16, 19, 4, ()),
])
def test_probe_sizes_hold_three_of_each_parity_from_the_smallest(
        low: int, high: int, step: int, sizes: tuple[int, ...]) -> None:
    """The smallest allowed sizes from 1 until three of each parity are there, each allowed."""
    found = probe_sizes(span(low, high, step))
    assert found == sizes
    assert all(low <= v <= high and v % step == 0 for v in found)


def test_probe_dims_fix_every_other_dimension() -> None:
    found = probe_dims({"B": span(1, 8), "D": span(1, 5), "H": span(1, 2)}, "B", ["B", "D", "H"])
    assert found == [{"B": b, "D": 3, "H": 2} for b in range(1, 7)]
    stepped = probe_dims({"T": span(16, 32, 4), "d": span(1, 4), "K": span(1, 9, 4)}, "d",
                         ["K", "T", "d"])
    assert stepped == [{"T": 16, "K": 4, "d": d} for d in (1, 2, 3, 4)]
    with pytest.raises(ValueError, match="range"):
        probe_dims({"B": span(1, 8)}, "B", ["B", "D"])
    with pytest.raises(ValueError, match="two allowed sizes of B"):
        probe_dims({"B": span(1, 2)}, "B", ["B"])
    with pytest.raises(ValueError, match="16 <= T <= 19, T a multiple of 4"):
        probe_dims({"T": span(16, 19, 4)}, "T", ["T"])
    assert RULES["independent_of_dim"].probe == "dim"


# -- what grows --------------------------------------------------------------------------------

def row_norm(r: jax.Array) -> jax.Array:
    return r / jnp.maximum(1.0, jnp.linalg.norm(r))


def vectorized_with_special_case(x: jax.Array) -> jax.Array:
    if x.shape[0] == 1:  # a batch of one needs no mean: a different (smaller) program
        return row_norm(x[0])
    return jax.vmap(row_norm)(x).mean(0)


def python_loop(x: jax.Array) -> jax.Array:
    return jnp.mean(jnp.stack([row_norm(x[i]) for i in range(x.shape[0])]), axis=0)


def lax_loop(unroll: int | bool) -> Callable[[jax.Array], jax.Array]:
    def solve(x: jax.Array) -> jax.Array:
        total = jax.lax.fori_loop(0, x.shape[0], lambda i, c: c + row_norm(x[i]),
                                  jnp.zeros(x.shape[1:], x.dtype), unroll=unroll)
        return total / x.shape[0]
    return solve


def scan_unrolled(x: jax.Array) -> jax.Array:
    total, _ = jax.lax.scan(lambda c, r: (c + row_norm(r), None),
                            jnp.zeros(x.shape[1:], x.dtype), x, unroll=4)
    return total / x.shape[0]


def loop_of_loops(x: jax.Array) -> jax.Array:
    """A rolled lax loop per row (over the row's entries), started from a Python loop."""
    rows = [jax.lax.fori_loop(0, x.shape[1], lambda j, c, r=x[i]: c + r[j] ** 2, 0.0)
            for i in range(x.shape[0])]
    return jnp.stack(rows)


jitted_norm = jax.jit(row_norm)


def loop_of_calls(x: jax.Array) -> jax.Array:
    return jnp.mean(jnp.stack([jitted_norm(x[i]) for i in range(x.shape[0])]), axis=0)


def loop_in_a_body(x: jax.Array) -> jax.Array:
    """A rolled loop over the columns whose body walks the rows in Python."""
    def body(j: jax.Array, c: jax.Array) -> jax.Array:
        return c + sum(x[i, j] for i in range(x.shape[0]))
    return jax.lax.fori_loop(0, x.shape[1], body, jnp.float32(0))


def probes(fn: Callable[..., Any], sizes: tuple[int, ...] = (3, 5, 7), d: int = 3,
           probe: bool = True) -> list[ProgramInfo]:
    out = []
    for b in sizes:
        p = program(fn, {"B": b, "D": d}, f32(b, d))
        out.append(ProgramInfo(p.signature, p.text, p.args, p.outs, p.dims, probe=probe))
    return out


def test_a_special_case_at_a_tested_size_is_not_a_loop() -> None:
    """B = 1 and B = 4 are the tests' shapes and differ; the probes (3, 5 and 7) do not."""
    tests = probes(vectorized_with_special_case, (1, 4), probe=False)
    outcome = check_independent_of_dim(
        tests + probes(vectorized_with_special_case), dim="B")
    assert outcome.passed, outcome.message
    assert "does not grow with B" in outcome.message and "for B=3, 5 and 7 (D=3)" in outcome.message


def test_the_tests_shapes_alone_are_never_compared() -> None:
    outcome = check_independent_of_dim(probes(python_loop, (1, 4), probe=False), dim="B")
    assert not outcome.passed and "probe sizes" in outcome.message


def shape_keyed(x: jax.Array) -> jax.Array:
    """Vectorized at the probes' width D = 3, a Python loop over the rows at any other."""
    return vectorized_with_special_case(x) if x.shape[1] == 3 else python_loop(x)


def test_a_loop_at_widths_the_probes_never_have_grows_in_the_tests_programs() -> None:
    """Three tests at D = 4 (B = 1, 4, 8): per-row growth, though the probes are clean."""
    tests = probes(shape_keyed, (1, 4, 8), d=4, probe=False)
    outcome = check_independent_of_dim(tests + probes(shape_keyed), dim="B")
    assert not outcome.passed, outcome.message
    assert "for B=1, 4 and 8 (D=4)" in outcome.message
    assert "tests' own programs" in outcome.message and "for B=3, 5 and 7 (D=3)" in outcome.message


@pytest.mark.parametrize(("sizes", "caught"), [((3, 20), True), ((3, 12), False), ((1, 20), False)])
def test_two_test_sizes_are_compared_only_far_apart(sizes: tuple[int, int], caught: bool) -> None:
    """Two tests that share D: 17 rows apart they tell per-row code from a special case; 9
    apart, or from a size of 1 (special-cased), they are not compared."""
    tests = probes(shape_keyed, sizes, d=4, probe=False)
    outcome = check_independent_of_dim(tests + probes(shape_keyed), dim="B")
    assert outcome.passed is not caught, outcome.message


def test_a_special_case_at_other_widths_is_not_growth() -> None:
    """Honest but unusual: a special case of B = 1 and of D = 4, at tests B = 1, 2, 30."""
    def special(x: jax.Array) -> jax.Array:
        if x.shape[1] == 4:
            x = x * 1.0 + 0.0
        return vectorized_with_special_case(x)
    tests = probes(special, (1, 2, 30), d=4, probe=False)
    outcome = check_independent_of_dim(tests + probes(special), dim="B")
    assert outcome.passed, outcome.message


def test_a_python_loop_repeats_operations() -> None:
    outcome = check_independent_of_dim(probes(python_loop), dim="B")
    assert not outcome.passed
    assert "grows with B" in outcome.message and "for B=3, 5 and 7 (D=3)" in outcome.message
    assert "Operations are repeated for each element of B" in outcome.message
    assert "lax loop" not in outcome.message
    # The report shows the ops that multiplied, in the largest probe's program.
    assert outcome.region is not None and outcome.region.ops
    assert outcome.region.note.startswith("B=3: 43 ops; B=5: 67 ops; B=7: 91 ops once inlined")


@pytest.mark.parametrize("unroll", [True, 7])
def test_a_fully_unrolled_lax_loop_is_named(unroll: int | bool) -> None:
    outcome = check_independent_of_dim(probes(lax_loop(unroll)), dim="B")
    assert not outcome.passed
    assert "A lax loop (jax.lax.scan or fori_loop) is unrolled over B" in outcome.message
    assert "3 and 7 times" in outcome.message and "unrolled completely" in outcome.message
    assert "Python" not in outcome.message


def test_a_partly_unrolled_lax_loop_is_named() -> None:
    """unroll=4: B = 3 is 3 copies, B = 5 a loop of 4 copies plus 1 left over, B = 7 plus 3."""
    outcome = check_independent_of_dim(probes(scan_unrolled), dim="B")
    assert not outcome.passed
    assert "is unrolled over B" in outcome.message
    assert "unroll=4 copies the body 4 times into each loop step" in outcome.message


@pytest.mark.parametrize("unroll", [1, 2, 3])
def test_a_rolled_or_slightly_unrolled_lax_loop_does_not_grow(unroll: int) -> None:
    """unroll=3 copies the body 3, 5 and 4 times at B = 3, 5 and 7: bounded, not per element."""
    outcome = check_independent_of_dim(probes(lax_loop(unroll)), dim="B")
    assert outcome.passed, outcome.message


def test_a_loop_started_per_element_is_named() -> None:
    outcome = check_independent_of_dim(probes(loop_of_loops), dim="B")
    assert not outcome.passed
    assert "It holds 3 and 7 while loops for B=3 and B=7" in outcome.message


def test_a_function_called_per_element_is_named() -> None:
    outcome = check_independent_of_dim(probes(loop_of_calls), dim="B")
    assert not outcome.passed
    assert "Operations are repeated for each element of B" in outcome.message
    assert "row_norm is called 3 and 7 times" in outcome.message


def batches_of_four(x: jax.Array) -> jax.Array:
    """No loop at B = 3 (one remainder batch), one from B = 5 on: grows once, not per row."""
    return jax.lax.map(row_norm, x, batch_size=4).mean(0)


def test_a_structure_that_changes_once_is_not_growth() -> None:
    outcome = check_independent_of_dim(probes(batches_of_four), dim="B")
    assert outcome.passed, outcome.message
    # Beside a Python loop over the rows, it does not hide the loop's growth.
    outcome = check_independent_of_dim(
        probes(lambda x: batches_of_four(x) + python_loop(x)), dim="B")
    assert not outcome.passed and "Operations are repeated" in outcome.message


def test_a_growing_loop_body_is_named() -> None:
    outcome = check_independent_of_dim(probes(loop_in_a_body), dim="B")
    assert not outcome.passed
    assert "The body of a lax loop grows" in outcome.message


def test_a_symbolic_export_is_independent_by_construction() -> None:
    b, d = export.symbolic_shape("B, D")
    poly = program(jax.vmap(row_norm), {},
                   jax.ShapeDtypeStruct((b, d), np.float32), symbolic=("B", "D"))
    assert check_independent_of_dim([poly], dim="B").passed


def test_recursion_and_unknown_callees_fail_cleanly() -> None:
    text = ('"builtin.module"() ({ "func.func"() <{function_type = () -> (), sym_name = "main"}> '
            '({ "func.call"() <{callee = @main}> : () -> () "func.return"() : () -> () }) : () '
            '-> () }) : () -> ()')
    progs = [ProgramInfo("s", text, [], [], {"B": b}, probe=True) for b in (3, 5, 7)]
    outcome = check_independent_of_dim(progs, dim="B")
    assert not outcome.passed and "could not be analyzed" in outcome.message


# -- loops taken only at some sizes (issue #30: shapes the probes never see) ------------------

ALL_B = probe_sizes(span(1, 8))


def scan_unrolled_twice(x: jax.Array) -> jax.Array:
    total, _ = jax.lax.scan(lambda c, r: (c + row_norm(r), None),
                            jnp.zeros(x.shape[1:], x.dtype), x, unroll=2)
    return total / x.shape[0]  # what the judge probes for B = [1, 8]: 1 to 8


def rows_looped_when(taken: Callable[[int], bool]) -> Callable[[jax.Array], jax.Array]:
    def solve(x: jax.Array) -> jax.Array:
        if taken(x.shape[0]):
            return python_loop(x)
        return jax.vmap(row_norm)(x).mean(0)
    return solve


def first_rows_looped(x: jax.Array) -> jax.Array:
    """The first 3 rows by a Python loop, the rest vectorized."""
    k = min(x.shape[0], 3)
    head = [row_norm(x[i]) for i in range(k)]
    tail = jax.vmap(row_norm)(x[k:]).sum(0) if x.shape[0] > k else 0.0
    return (sum(head) + tail) / x.shape[0]


@pytest.mark.parametrize("taken", [
    lambda b: b % 2 == 1, lambda b: b % 2 == 0, lambda b: b >= 4, lambda b: b in (1, 2, 4),
])
def test_a_loop_taken_only_at_some_sizes_grows_per_element(taken: Callable[[int], bool]) -> None:
    outcome = check_independent_of_dim(probes(rows_looped_when(taken), ALL_B), dim="B")
    assert not outcome.passed
    assert "Operations are repeated for each element of B" in outcome.message
    assert "Not every probe size grows (B=1: " in outcome.message


def test_a_lax_loop_unrolled_by_four_grows_at_the_small_sizes() -> None:
    outcome = check_independent_of_dim(probes(lax_loop(4), ALL_B), dim="B")
    assert not outcome.passed and "is unrolled over B" in outcome.message


def test_a_loop_over_the_first_rows_grows_per_element() -> None:
    outcome = check_independent_of_dim(probes(first_rows_looped, ALL_B), dim="B")
    assert not outcome.passed and "for B=1, 2 and 3" in outcome.message


def even_padded(x: jax.Array) -> jax.Array:
    """A branch on parity with no loop: an odd batch gets a zero row (its norm is 0)."""
    if x.shape[0] % 2:
        x = jnp.concatenate([x, jnp.zeros_like(x[:1])])
        return jax.vmap(row_norm)(x).sum(0) / (x.shape[0] - 1)
    return jax.vmap(row_norm)(x).mean(0)


@pytest.mark.parametrize("solve", [vectorized_with_special_case, even_padded, batches_of_four,
                                   lax_loop(1), lax_loop(3), scan_unrolled_twice])
def test_special_cases_without_a_loop_pass_at_every_probe_size(
        solve: Callable[[jax.Array], jax.Array]) -> None:
    outcome = check_independent_of_dim(probes(solve, ALL_B), dim="B")
    assert outcome.passed, outcome.message
