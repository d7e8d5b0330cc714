"""Stage B's observer (jaxjudge/stages/observe.py on evaluator.py): the numbers it computes and
what it records of each loop.

The evaluator must give XLA's numbers on every op family the problems' programs use (or say
it cannot: never a wrong number, since the loop requirements are decided from it), and its
records must tell an honest loop from the cheats the text analysis misses: a gate mixed with a
data zero, all the work at one step, several shares taken up at once, a copy it cannot follow.
The stage files run by path, so they are loaded here with runpy as stage B loads them.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo

from jaxjudge.grading.stage_common import STAGES_DIR

OBS = runpy.run_path(str(STAGES_DIR / "observe.py"), run_name="jaxjudge_test_observe")
Unobservable = OBS["Unobservable"]
OBS_REGIONS_POINT_COST = runpy.run_path(str(STAGES_DIR / "evaluator_regions.py"))["POINT_COST"]


def _program(fn: Callable, *args) -> tuple[str, list[np.ndarray], list]:
    """fn exported as stage B sees it: generic-form text, main's inputs, XLA's outputs."""
    exp = export.export(jax.jit(fn))(*args)
    with mlir.make_ir_context():
        text = ir.Module.parse(exp.mlir_module()).operation.get_asm(
            print_generic_op_form=True, enable_debug_info=False)
    leaves = jax.tree_util.tree_leaves(args)
    kept = sorted(exp.module_kept_var_idx)
    return text, [np.asarray(leaves[i]) for i in kept], jax.tree_util.tree_leaves(exp.call(*args))


def _evaluate(fn: Callable, *args) -> tuple[list[np.ndarray], list]:
    text, ins, want = _program(fn, *args)
    ctx = mlir.make_ir_context()
    with ctx:
        ev = OBS["Evaluator"](ir.Module.parse(text), ir, hlo, 1, {})
        got = ev.run([x[None] for x in ins])
    return [g[0] for g in got], want


def _observe(fn: Callable, *args, groups=(), inject: int = 0, watched=None) -> dict:
    text, ins, _ = _program(fn, *args)
    return OBS["observe"](text, ins, list(groups), inject, ir, hlo, mlir.make_ir_context(),
                          watched)


RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 3)).astype(np.float32)
M = RNG.standard_normal((4, 5)).astype(np.float32)


def _ema_scan(x, alpha):
    def step(prev, row):
        cur = alpha * row + (1 - alpha) * prev
        return cur, cur

    return jax.lax.scan(step, x[0], x)[1]


CASES: dict[str, tuple[Callable, tuple]] = {
    "scan": (_ema_scan, (X, np.float32(0.3))),
    "dot_general batched": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
                            (RNG.standard_normal((2, 3, 4)).astype(np.float32),
                             RNG.standard_normal((2, 4, 5)).astype(np.float32))),
    "gather by index array": (lambda x, i: x[i], (X, np.array([5, 0, 2, 2], np.int32))),
    "gather 2-d points": (lambda x, i, j: x[i, j], (X, np.array([1, 5], np.int32),
                                                    np.array([2, 0], np.int32))),
    "scatter add": (lambda x, i: x.at[i].add(1.5), (X, np.array([0, 0, 3], np.int32))),
    "scatter set out of bounds": (lambda x, i: x.at[i].set(-1.0, mode="drop"),
                                  (X, np.array([1, 9], np.int32))),
    "segment_sum": (lambda x: jax.ops.segment_sum(x, jnp.array([0, 1, 0, 1, 2, 2]), 3), (X,)),
    "conv 1-d": (lambda x, w: jax.lax.conv_general_dilated(x[None], w, (1,), [(1, 1)]),
                 (RNG.standard_normal((2, 7)).astype(np.float32),
                  RNG.standard_normal((3, 2, 3)).astype(np.float32))),
    "conv 2-d strided dilated": (
        lambda x, w: jax.lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2)),
        (RNG.standard_normal((1, 2, 6, 5)).astype(np.float32),
         RNG.standard_normal((3, 2, 2, 2)).astype(np.float32))),
    "fft round trip": (lambda x: jnp.real(jnp.fft.ifft(jnp.fft.fft(x))), (X,)),
    "rfft": (lambda x: jnp.abs(jnp.fft.rfft(x)), (X,)),
    "sort and argsort": (lambda x: (jnp.sort(x, axis=0), jnp.argsort(-x[:, 0])), (X,)),
    "pad with interior and negative edges": (
        lambda x: jax.lax.pad(x, np.float32(7), [(1, -1, 1), (-1, 2, 0)]), (X,)),
    "cond on data": (lambda x: jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x), (X,)),
    "switch": (lambda x, i: jax.lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x),
               (X, np.int32(2))),
    "while with a data condition": (
        lambda x: jax.lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] + jnp.abs(c[1]).sum(),
                                                                       c[1] * 0.5), (0.0, x)),
        (X,)),
    "integer division and remainder": (
        lambda a, b: (a // b, a % b, jnp.right_shift(a, 1)),
        (np.array([7, -7, 9, 0], np.int32), np.array([2, 2, -4, 3], np.int32))),
    "cumsum and cumprod": (lambda x: (jnp.cumsum(x, axis=0), jnp.cumprod(x, axis=1),
                                      jax.lax.cummax(x, axis=0)), (X,)),
    "max pool with padding and strides": (
        lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (2, 2), (2, 1),
                                        [(1, 0), (0, 1)]), (M,)),
    "reductions": (lambda x: (x.max(0), x.min(1), x.prod(), jnp.any(x > 1.0)), (M,)),
    "complex numbers": (lambda x: jnp.real((x + 1j) * jnp.exp(1j * x)), (X,)),
    "bitcast round trip": (
        lambda x: jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(x, jnp.int32) ^ 1,
                                               jnp.float32), (X,)),
    "transpose, reverse, slices, concat": (
        lambda x: jnp.concatenate([x.T[::-1], x[1:4:2].T], axis=1), (X,)),
    "softmax and logsumexp": (lambda x: (jax.nn.softmax(x), jax.nn.logsumexp(x, axis=0)), (M,)),
    "grad of a tanh mlp": (lambda w, x: jax.grad(lambda w: jnp.tanh(x @ w).sum())(w),
                           (RNG.standard_normal((3, 4)).astype(np.float32), X)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_evaluator_gives_xlas_numbers(name: str) -> None:
    fn, args = CASES[name]
    got, want = _evaluate(fn, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape, name
        assert g.dtype == w.dtype, name
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-5,
                                       atol=2e-6, err_msg=name)


def test_an_op_it_does_not_know_is_unobservable_not_a_guess() -> None:
    with pytest.raises(Unobservable, match="custom call"):
        _evaluate(lambda m: jax.lax.linalg.cholesky(m @ m.T + 5 * jnp.eye(4)), M[:, :4])


def test_a_run_past_its_budget_is_over_budget_whatever_the_load() -> None:
    def spin(x):
        return jax.lax.fori_loop(0, 200_000, lambda i, c: c + 1.0, x)

    with pytest.raises(OBS["OverBudget"], match="element operations"):
        _evaluate(spin, X)  # counted work, not seconds: the same on a loaded machine


ROWS = [{"arg": 0, "axis": 0, "size": 1, "count": 6}]


def _loop(result: dict, steps: int) -> dict:
    """The one run of `steps` steps, with each group's first step and each step's kept flag
    taken over the values it carries (as jaxjudge.analysis.observed reads them)."""
    runs = [r for r in result["loops"] if r["steps"] == steps]
    assert len(runs) == 1, result["loops"]
    run = dict(runs[0])
    slots = run["slots"]
    groups = len(run["entry"])
    firsts = [[sl["first"][g] for sl in slots if sl["first"][g] is not None]
              for g in range(groups)]
    run["first"] = [min(f) if f else None for f in firsts]
    live = [sl for sl in slots if sl["live"]]
    run["kept"] = [any(sl["kept"][i] for sl in live) if live and live[0]["kept"] else None
                   for i in range(len(live[0]["kept"]) if live else 0)]
    return run


def test_an_honest_scan_takes_one_row_per_step_and_keeps_every_step() -> None:
    got = _observe(_ema_scan, X, np.float32(0.3), groups=ROWS, inject=6)
    run = _loop(got, 6)
    assert run["first"] == [0, 1, 2, 3, 4, 5]
    assert run["kept"] == [True] * 6
    assert got["outputs"] == [18, 15, 12, 9, 6, 3]  # row t moves rows t.. of the average
    assert run["exit"][0] >= got["outputs"][0]
    (loop,) = [r for r in got["loops"] if r["steps"] == 6]
    assert loop["reached"] == [True] * 6  # each step's row reaches what the program returns


def test_a_step_kept_only_in_a_dropped_tag_reaches_no_output() -> None:
    """Each step adds its row to a tag beside the state (so every step 'keeps' a change of
    what it reads), but the average is computed at the last step only: the tag is dropped,
    so no step before the last moves an output."""
    def cheat(x, alpha):
        n = x.shape[0]
        zero = jnp.minimum(jnp.abs(x).sum(), 0.0).astype(jnp.int32)

        def body(t, c):
            out, tag = c
            last = (t + zero) == n - 1
            full = _ema_scan(x, alpha)
            return jnp.where(last, full, out), tag + x[t]

        out, _ = jax.lax.fori_loop(0, n, body, (jnp.zeros_like(x), jnp.zeros(x.shape[1])))
        return out

    got = _observe(cheat, X, np.float32(0.3), groups=ROWS, inject=6)
    (loop,) = [r for r in got["loops"] if r["steps"] == 6 and r["depth"] == 0]
    assert loop["reached"][1:5] == [False] * 4 and loop["reached"][5] is True


def _weights(x, alpha):
    t = x.shape[0]
    i, j = jnp.arange(t)[:, None], jnp.arange(t)[None, :]
    keep = 1.0 - alpha
    return jnp.where(j <= i, jnp.where(j == 0, keep ** i, alpha * keep ** (i - j)), 0.0)


def test_a_data_zero_gate_shows_idle_steps() -> None:
    def cheat(x, alpha):
        zero = jnp.minimum(jnp.abs(x).sum(), 0.0)
        w = _weights(x, alpha)

        def body(t, buf):
            g = (t == 0).astype(x.dtype) + zero
            return g * (w @ x) + (1.0 - g) * buf

        return jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x))

    got = _observe(cheat, X, np.float32(0.3), groups=ROWS, inject=6)
    run = _loop(got, 6)
    assert run["kept"] == [True] + [False] * 5  # the gate's own zero is not changed
    assert run["first"] == [0] * 6  # every row at step 1
    assert run["work"][0] > 0 and len(set(run["work"])) == 1  # w @ x runs at every step,
    # thrown away at 2..6


def test_a_step_whose_reads_no_variant_can_change_is_unknown_not_idle() -> None:
    """An EMA written in place into a buffer that starts as x: the loop passes nothing along
    that moves with x, so an inject variant changes nothing a step reads. That says nothing
    about the step (kept and reached unknown), where it used to read as idle and unreached."""
    def in_place(x, alpha):
        def body(t, out):
            prev = out[jnp.maximum(t - 1, 0)]
            return out.at[t].set(jnp.where(t == 0, out[t], alpha * out[t] + (1 - alpha) * prev))

        return jax.lax.fori_loop(0, x.shape[0], body, x)

    got = _observe(in_place, X, np.float32(0.3), groups=ROWS, inject=6)
    run = _loop(got, 6)
    assert run["reached"] == [None] * 6
    assert all(sl["kept"] == [None] * 6 for sl in run["slots"])


def test_stage_b_picks_a_candidate_by_the_program_text_alone() -> None:
    """The second run's test: the same program text and salt give the same pick (however the
    file was named or laid out: the verified text has no locations); another text or salt
    may give another; the pick is always one of the candidates."""
    pick = OBS["_pick"]
    cands = [{"program": "a", "test": f"hidden-{i:02d}"} for i in range(12)]
    entry = {"candidates": cands, "salt": "loop"}
    one = pick(entry, {"a": "module { A }"})
    assert one in cands and one == pick(entry, {"a": "module { A }"})
    picks = {pick(entry, {"a": f"module {{ {i} }}"})["test"] for i in range(20)}
    picks |= {pick({**entry, "salt": f"s{i}"}, {"a": "module { A }"})["test"] for i in range(20)}
    assert len(picks) > 3
    assert pick({"salt": "x"}, {}) is None


def test_a_copy_by_gather_is_followed_and_mixing_after_the_loop_shows() -> None:
    def cheat(x, alpha):
        xc = x[jnp.argsort(-jnp.arange(x.shape[0]))[::-1]]

        def body(buf, t):
            return buf.at[t].set(xc[t]), None

        rebuilt, _ = jax.lax.scan(body, jnp.zeros_like(x), jnp.arange(x.shape[0]))
        return _weights(x, alpha) @ rebuilt

    got = _observe(cheat, X, np.float32(0.3), groups=ROWS, inject=6)
    run = _loop(got, 6)
    assert run["first"] == [0, 1, 2, 3, 4, 5]  # the copy carries every row's change
    assert run["exit"] == [3] * 6  # the loop holds one row per group...
    assert got["outputs"][0] == 18  # ...the outputs mix them after it


def test_knockouts_say_which_loop_results_the_outputs_need() -> None:
    def cheat(x, alpha):
        def body(t, c):
            buf, junk = c  # a copy of row t, and every row added to every row
            return buf.at[t].set(x[t]), junk + x[t][None, :]

        buf, junk = jax.lax.fori_loop(0, x.shape[0], body, (jnp.zeros_like(x), jnp.zeros_like(x)))
        return _weights(x, alpha) @ buf + 1e-30 * junk

    def honest(x, alpha):
        def step(m, row):
            m = alpha * row + (1 - alpha) * m
            return m, m

        return jax.lax.scan(step, x[0], x)[1]

    got = OBS["observe"](*_program(cheat, X, np.float32(0.3))[:2], ROWS, 6, ir, hlo,
                         mlir.make_ir_context(), knockouts=True)
    run = _loop(got, 6)
    parts = dict(zip((part[0] for part in run["exit_parts"]), run["needed"], strict=True))
    assert parts[3] > 0.1  # buf: one row per group, and the outputs need it
    assert parts[18] == 0.0  # junk: every row in all 18 of its values, needed by nothing
    got = OBS["observe"](*_program(honest, X, np.float32(0.3))[:2], ROWS, 6, ir, hlo,
                         mlir.make_ir_context(), knockouts=True)
    run = _loop(got, 6)
    assert max(n for n in run["needed"] if n is not None) > 0.1
    assert got["outputs"][0] <= sum(part[0] for part, n in zip(
        run["exit_parts"], run["needed"], strict=True) if n is None or n >= 1e-3)
    plain = _observe(honest, X, np.float32(0.3), groups=ROWS, inject=6)
    assert plain["outputs"] == got["outputs"]  # the knockout rows change no other variant


def test_a_copy_kept_alone_gives_the_outputs_what_two_cancelling_fillers_hide() -> None:
    def cheat(x, alpha):
        def body(t, c):
            j1, buf, j2 = c  # j2 == -j1 exactly: their sum is 0
            return j1 + x[t][None, :], buf.at[t].set(x[t]), j2 - x[t][None, :]

        zeros = jnp.zeros_like(x)
        j1, buf, j2 = jax.lax.fori_loop(0, x.shape[0], body, (zeros, zeros, zeros))
        return _weights(x, alpha) @ buf + (j1 + j2)

    got = OBS["observe"](*_program(cheat, X, np.float32(0.3))[:2], ROWS, 6, ir, hlo,
                         mlir.make_ir_context(), knockouts=True)
    run = _loop(got, 6)
    by_exit = {part[0]: (n, a) for part, n, a in zip(run["exit_parts"], run["needed"],
                                                      run["alone"] + [None], strict=False)}
    assert by_exit[18][0] > 0.1  # each filler, set back alone, moves the outputs
    assert by_exit[3] == (by_exit[3][0], 0.0)  # the copy kept alone: the outputs unchanged


def test_a_one_hot_pick_visits_the_rows_one_step_at_a_time() -> None:
    def cheat(x):
        n = x.shape[0]

        def row(i, out):
            pick = (jnp.arange(n) == jnp.minimum(i, n - 1)).astype(x.dtype)
            return jnp.where((pick > 0)[:, None], jnp.sin(pick @ x)[None], out)

        return jax.lax.fori_loop(0, 16, row, jnp.zeros_like(x))

    got = _observe(cheat, X, groups=ROWS)
    assert _loop(got, 16)["first"] == [0, 1, 2, 3, 4, 5]


def test_a_sum_of_every_row_added_at_each_step_does_not_hide_the_visits() -> None:
    """A tag element adding every row's sum at every step moves the carried value with every
    row at every step; the elements one row moves at one step only still show the visit."""
    def cheat(x):
        n = x.shape[0]
        tag = x.sum()

        def row(i, out):
            r = jnp.minimum(i, n - 1)
            out = jax.lax.dynamic_update_index_in_dim(out, jnp.sin(x[r]), r, 0)
            return out.at[n].add(tag * (i + 1).astype(x.dtype))

        return jax.lax.fori_loop(0, 16, row, jnp.zeros((n + 1, x.shape[1]), x.dtype))[:n]

    got = _observe(cheat, X, groups=ROWS)
    run = _loop(got, 16)
    assert run["first"] == [0] * 6  # the tag moves with every row from the first step
    singles = [sl["single"] for r in got["loops"] if r["steps"] == 16 for sl in r["slots"]]
    assert [0, 1, 2, 3, 4, 5] in singles, singles


def test_a_loop_over_another_axis_takes_every_row_at_its_first_step() -> None:
    def honest(x):  # a loop over the features, all rows at every step
        return jax.lax.fori_loop(0, x.shape[1], lambda k, acc: acc + x[:, k] ** 2,
                                 jnp.zeros(x.shape[0], x.dtype))

    got = _observe(honest, X, groups=ROWS)
    assert _loop(got, 3)["first"] == [0] * 6
    # each row's element moves at every step: no element is one row's at one step only
    assert all(sl["single"] == [None] * 6 for r in got["loops"] for sl in r["slots"])


def test_a_row_folded_in_over_two_steps_enters_the_update_again() -> None:
    """Each row added half at its own step and half at the next, beside a sum of every row at
    step 0: every row moves the update at step 0, and enters it again at its own step, which
    a loop over the features (every row at every step) never shows."""
    def halves(x):
        def one(t):
            return jnp.where(jnp.arange(x.shape[0]) == t, 1.0, 0.0)[:, None] * x

        def step(t, acc):
            decoy = jnp.where(t == 0, 1e-2, 0.0) * jnp.sum(x, axis=0)
            return acc + 0.5 * one(t) + 0.5 * one(t - 1) + decoy

        return jax.lax.fori_loop(0, x.shape[0] + 1, step, jnp.zeros_like(x))

    run = next(r for r in _observe(halves, X, groups=ROWS)["loops"] if r["steps"] == 7)
    # row 0 is in at steps 0 and 1, row 1 at 0, 1 and 2 without a gap; the others come back
    assert run["enters"] == [None, None, 2, 3, 4, 5], run
    assert run["for_good"] == [False] * 6

    def masked(x):  # a loop over the features taking row r up from step r on (a mask)
        return jax.lax.fori_loop(
            0, x.shape[0], lambda t, acc: acc + jnp.where(jnp.arange(x.shape[0]) <= t,
                                                          1.0, 0.0)[:, None] * x,
            jnp.zeros_like(x))

    got = next(r for r in _observe(masked, X, groups=ROWS)["loops"] if r["steps"] == 6)
    assert got["enters"] == [None] * 6 and got["for_good"] == [False] + [True] * 5, got

    def honest(x):  # a loop over the features, all rows at every step
        return jax.lax.fori_loop(0, x.shape[1], lambda k, acc: acc + x[:, k] ** 2,
                                 jnp.zeros(x.shape[0], x.dtype))

    got = next(r for r in _observe(honest, X, groups=ROWS)["loops"] if r["steps"] == 3)
    assert got["enters"] == [None] * 6 and got["for_good"] == [False] * 6


def _own(fn: Callable, *args) -> list[int]:
    text, ins, _ = _program(fn, *args)
    return OBS["observe"](text, ins, list(ROWS), 0, ir, hlo, mlir.make_ir_context(), None,
                          True)["private"]


def _owned(fn: Callable, *args) -> dict:
    text, ins, _ = _program(fn, *args)
    return OBS["observe"](text, ins, list(ROWS), 0, ir, hlo, mlir.make_ir_context(), None,
                          True)


def test_a_scan_unrolled_in_one_trip_owns_its_copies_inside_the_loop() -> None:
    def scan3(x):  # 6 rows, unroll=4: one trip of four copies, two rows left over outside
        return jax.lax.scan(lambda c, r: (c, jnp.tanh(r @ M[:3]) * 2.0), 0.0, x,
                            unroll=4)[1]

    got = _owned(scan3, X)
    looped = [g for g, n in enumerate(got["private_looped"]) if n]
    outside = [g for g, n in enumerate(got["private"]) if n and g not in looped]
    assert len(looped) == 4 and len(outside) == 2, got
    assert got["chunks"] == 0


def test_code_written_once_per_pair_of_rows_is_counted_by_pairs() -> None:
    def pairs(x):  # a Python loop over the rows two at a time, batched within each pair
        return jnp.concatenate([jnp.tanh(x[i:i + 2] @ M[:3]) * 2.0
                                for i in range(0, x.shape[0], 2)])

    got = _owned(pairs, X)
    assert got["chunks"] == 3 and not any(got["private"]), got

    def anchored(x):  # each row batched with row 0: pairs that overlap are not counted
        return jnp.concatenate([jnp.tanh(x[jnp.array([0, i])] @ M[:3]) * 2.0
                                for i in range(1, x.shape[0])])

    assert _owned(anchored, X)["chunks"] == 1
    assert _owned(lambda x: jnp.tanh(x @ M[:3]) * 2.0, X)["chunks"] == 0


def test_code_written_once_per_row_moves_with_its_row_alone() -> None:
    def unrolled(x):  # a Python loop: one copy of the arithmetic per row
        return jnp.stack([jnp.tanh(x[i] @ M[:3]) * 2.0 for i in range(x.shape[0])])

    def leaky(x):  # each copy made to move a little with every row: still its own row's
        s = 1e-6 * jnp.sum(x)
        return jnp.stack([jnp.tanh((x[i] + s) @ M[:3]) * 2.0 for i in range(x.shape[0])])

    def batched(x):
        return jnp.tanh(x @ M[:3]) * 2.0

    def halves(x):  # two vmapped halves: each op moves with three rows, not one
        return jnp.concatenate([batched(x[:3]), batched(x[3:])])

    def unrolled_sine(x):  # per-row code of ops no list would name (sine, abs, select)
        return jnp.stack([jax.lax.select(jnp.sin(x[i]) > 0, jnp.abs(x[i]), x[i])
                          for i in range(x.shape[0])])

    assert all(n > 0 for n in _own(unrolled, X))
    assert all(n > 0 for n in _own(leaky, X))
    assert all(n > 0 for n in _own(unrolled_sine, X))
    assert _own(batched, X) == [0] * 6
    assert _own(halves, X) == [0] * 6


def test_nested_loops_get_their_own_inject_variants() -> None:
    def cheat(w, u):  # all eight iterations at step 0 by a nested loop
        zero = (jnp.abs(w).sum() * 0.0).astype(jnp.int32)

        def one(_, u):
            return w @ (w.T @ u) / 10.0

        return jax.lax.fori_loop(
            0, 8, lambda i, u: jax.lax.fori_loop(0, jnp.where(i == 0, 8, 0) + zero, one, u), u)

    got = _observe(cheat, M, RNG.standard_normal(4).astype(np.float32), inject=8,
                   watched=[0])
    outer = next(r for r in got["loops"] if r["depth"] == 0)
    assert [sl["kept"] for sl in outer["slots"] if sl["live"]] == [[True] + [False] * 7]


def _mlp_grads(remat: bool):
    def block(w, x):
        return jnp.tanh(x @ w) @ w.T

    inner = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable) if remat else block

    def solve(w, x):
        loss, g = jax.value_and_grad(lambda w: jnp.mean(inner(w, x) ** 2))(w)
        return {"loss": loss, "g": g}

    return solve


def test_a_recomputed_tanh_moves_the_gradients_and_not_the_loss_symbolic_shapes_too() -> None:
    b = export.symbolic_shape("B")[0]
    w = jax.ShapeDtypeStruct((3, 4), np.float32)
    x = jax.ShapeDtypeStruct((b, 3), np.float32)
    args = [RNG.standard_normal((3, 4)).astype(np.float32), X]
    for remat, want in ((True, [[12, 1], [12, 0]]), (False, [[12, 1]])):
        exp = export.export(jax.jit(_mlp_grads(remat)))(w, x)
        with mlir.make_ir_context():
            text = ir.Module.parse(exp.mlir_module()).operation.get_asm(
                print_generic_op_form=True, enable_debug_info=False)
        got = OBS["observe_activations"](text, args, "stablehlo.tanh", ir, hlo,
                                         mlir.make_ir_context())
        assert got["activations"] == want, remat  # outputs: g (12 values), then loss


def test_one_element_of_the_recomputed_tanh_moves_one_row_of_w2s_gradient() -> None:
    """W2's gradient is h^T g: changing the recomputed h's first element alone moves its first
    row only (of H = 4 rows), and W1's gradient in its first column; the forward tanh's first
    element moves g, so every row of W2's gradient."""
    h_size = 4
    w1 = RNG.standard_normal((3, h_size)).astype(np.float32)
    w2 = RNG.standard_normal((h_size, 2)).astype(np.float32)

    def block(w1, w2, x):
        return jnp.tanh(x @ w1) @ w2

    inner = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)
    fn = jax.value_and_grad(lambda w1, w2, x: jnp.mean(inner(w1, w2, x) ** 2), argnums=(0, 1))
    text, ins, _ = _program(fn, w1, w2, X)
    got = OBS["observe_activations"](text, ins, "stablehlo.tanh", ir, hlo,
                                     mlir.make_ir_context())
    # outputs: the loss, W1's gradient, W2's
    (fwd,) = [k for k, moved in enumerate(got["activations"]) if moved[0]]
    (again,) = [k for k, moved in enumerate(got["activations"]) if not moved[0] and moved[2]]
    assert got["activation_spread"][again][1:] == [1 / h_size, 1 / h_size], got
    assert got["activation_spread"][fwd][2] == 1.0, got

    def by_unit(w1, w2, x):  # one hidden unit per scan step: the tanh op runs H times
        cols = jax.lax.map(lambda c: jnp.tanh(x @ c), w1.T)
        return cols.T @ w2

    inner = jax.checkpoint(by_unit, policy=jax.checkpoint_policies.dots_saveable)
    fn = jax.value_and_grad(lambda w1, w2, x: jnp.mean(inner(w1, w2, x) ** 2), argnums=(0, 1))
    text, ins, _ = _program(fn, w1, w2, X)
    got = OBS["observe_activations"](text, ins, "stablehlo.tanh", ir, hlo,
                                     mlir.make_ir_context())
    (again,) = [k for k, moved in enumerate(got["activations"]) if not moved[0] and moved[2]]
    # one element of the op's first run (one unit), not one element per run (every unit)
    assert got["activation_spread"][again][2] == 1 / h_size, got


def test_symbolic_programs_with_loops_and_slices_run_as_verified() -> None:
    def solve(x):  # a lax.map over rows of a symbolic batch, jacrev inside
        return jax.lax.map(lambda r: jax.jacrev(lambda v: jnp.tanh(v) * v[::-1])(r)[1:], x)

    b = export.symbolic_shape("B")[0]
    exp = export.export(jax.jit(solve))(jax.ShapeDtypeStruct((b, 3), np.float32))
    with mlir.make_ir_context():
        text = ir.Module.parse(exp.mlir_module()).operation.get_asm(
            print_generic_op_form=True, enable_debug_info=False)
    ctx = mlir.make_ir_context()
    with ctx:
        ev = OBS["Evaluator"](ir.Module.parse(text), ir, hlo, 1, {})
        got = ev.run([X[None]])
    np.testing.assert_allclose(got[0][0], np.asarray(exp.call(X)), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fn", [
    lambda x: jnp.argmax(jnp.abs(x), axis=1),  # a value and its index reduced together
    lambda x: jnp.argmin(x, axis=0),
    lambda x: x[jnp.argmax(jnp.abs(x[:, 0]))] / jnp.abs(x).max(),
    lambda x: jax.lax.reduce((x, x * 2), (0.0, 0.0),
                             lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (1,)),
])
def test_a_reduction_of_several_values_runs_element_by_element(fn: Callable) -> None:
    """jnp.argmax and its kin reduce a value and its index together: their body runs as a
    scalar program, folding the elements in one at a time, and gives jax's answer."""
    x = np.random.default_rng(4).standard_normal((5, 7)).astype(np.float32)
    got, want = _evaluate(fn, x)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-6)


@pytest.mark.parametrize(("exponent", "mantissa"), [(8, 1), (5, 10), (8, 7), (4, 3), (2, 0)])
def test_reduce_precision_rounds_bit_for_bit_as_xla(exponent: int, mantissa: int) -> None:
    """A program may branch on it (`reduce_precision(1.1) == 1.1` is false under XLA): taken
    as the identity, the observer watched a branch the tests never run (a red-team cheat)."""
    rng = np.random.default_rng(0)
    scale = (10.0 ** rng.integers(-40, 39, 200)).astype(np.float32)
    x = np.concatenate([rng.standard_normal(200).astype(np.float32) * scale, np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.1, 3e38, 1e-45], np.float32)])
    got, want = _evaluate(lambda x: jax.lax.reduce_precision(
        x, exponent_bits=exponent, mantissa_bits=mantissa), x.astype(np.float32))
    g, w = got[0], np.asarray(want[0])
    assert ((g.view(np.uint32) == w.view(np.uint32)) | (np.isnan(g) & np.isnan(w))).all()


def test_a_scatter_pays_for_each_index_and_a_run_can_be_given_less() -> None:
    """Each index of a scatter is a Python iteration, counted as POINT_COST element operations
    (counted as one element, a scatter-add over every pair of 48 rows took 6.4 s of a grade's
    observing); an extra run given a smaller budget stops there, deterministically."""
    x = RNG.standard_normal((48, 3)).astype(np.float32)

    def pairs(x):
        t = jnp.arange(48)
        ids = (t[:, None] * 0 + t[None, :]).reshape(-1)
        return jax.ops.segment_sum(jnp.repeat(x, 48, axis=0), ids, num_segments=48)

    text, ins, _ = _program(pairs, x)
    got = OBS["observe"](text, ins, [], 0, ir, hlo, mlir.make_ir_context(), None)
    points = 48 * 48
    assert got["work"] >= points * OBS_REGIONS_POINT_COST
    with pytest.raises(OBS["OverBudget"], match="element operations"):
        OBS["observe"](text, ins, [], 0, ir, hlo, mlir.make_ir_context(), None,
                       max_work=got["work"] // 2)


def test_an_output_no_variant_reaches_is_read_as_unmoved() -> None:
    """A constant output (the zero gradient of a parameter the program does not read) keeps
    one copy in the evaluator, not one per variant: it moved with none of them, where reading
    variant 1 of it was an IndexError that failed the requirement (wrong_forgets_b2.py)."""
    def fn(x):
        return jnp.tanh(x).sum(), jnp.zeros(3, jnp.float32)

    text, ins, _ = _program(fn, X)
    got = OBS["observe_activations"](text, ins, "stablehlo.tanh", ir, hlo,
                                     mlir.make_ir_context())
    assert got["status"] == "ok"
    (loss_moved, zeros_moved), = got["activations"]
    assert loss_moved > 0 and zeros_moved == 0


def test_each_run_has_its_own_budget_and_none_is_skipped() -> None:
    """Each observe entry runs on the budget the parent gave it (a multiple of the
    reference's work on that run), capped only by TOTAL_WORK: a run over it reports over_budget, and
    what it spent is no matter to the next run (no shared pool a junk loop can drain)."""
    def fn(x):
        return jax.lax.scan(lambda c, row: (c + row, c), jnp.zeros(3), x)[1]

    x = RNG.standard_normal((4, 3)).astype(np.float32)
    exp = export.export(jax.jit(fn))(x)
    text, _, _ = _program(fn, x)
    job = {"tests": [{"name": "t", "signature": "s", "inputs": [x]}], "observe": [
        {"id": f"r{i}", "program": "p", "test": "t", "count": 4, "inject": 4, "watch": ["x"],
         "groups": [{"path": "x", "axis": 0, "size": 1}], **budget}
        for i, budget in enumerate([{"max_work": 1_000}, {}, {"max_work": 10**15}])]}
    got = OBS["observe_all"](job, {"s": None}, {"p": {"args": ["x"]}}, {"p": text},
                             {"p": exp}, lambda tree: [np.asarray(v) for v in tree], ir,
                             mlir.make_ir_context(), lambda inputs, spec, np: inputs)
    assert got["r0"]["status"] == "over_budget" and got["r0"]["work"] == 1_000
    assert got["r1"]["status"] == got["r2"]["status"] == "ok"
    assert 0 < got["r1"]["work"] == got["r2"]["work"] <= OBS["MAX_WORK"]
    # all runs together stay under TOTAL_WORK: past it, a run fails closed (never skipped)
    job["observe"] = job["observe"][1:] * 3
    for i, entry in enumerate(job["observe"]):
        job["observe"][i] = {**entry, "id": f"r{i}"}
    total, OBS["observe_all"].__globals__["TOTAL_WORK"] = (
        OBS["TOTAL_WORK"], int(got["r1"]["work"] * 2.5))
    try:
        got = OBS["observe_all"](job, {"s": None}, {"p": {"args": ["x"]}}, {"p": text},
                                 {"p": exp}, lambda tree: [np.asarray(v) for v in tree], ir,
                                 mlir.make_ir_context(), lambda inputs, spec, np: inputs)
    finally:
        OBS["observe_all"].__globals__["TOTAL_WORK"] = total
    assert [got[f"r{i}"]["status"] for i in range(6)] == ["ok"] * 2 + ["over_budget"] * 4
    assert got["r2"]["work"] < OBS["MAX_WORK"] and got["r3"]["work"] == 0
    assert OBS["_budget"]({"max_work": 10**15}) == OBS["TOTAL_WORK"]
    assert OBS["_budget"]({"max_work": 2 * OBS["MAX_WORK"]}) == 2 * OBS["MAX_WORK"]
    assert OBS["_budget"]({"max_work": True}) == OBS["_budget"]({}) == OBS["MAX_WORK"]
    assert OBS["_budget"]({"max_work": -5}) == OBS["MAX_WORK"]


def test_loop_runs_past_the_records_end_the_run() -> None:
    """The observer records MAX_RECORDS loop runs; one more ends the run (RecordsFull), so a
    program cannot fill the records with dead loops and hide the loop that matters after
    them."""
    def junk_loops(n: int) -> Callable:
        def fn(x):
            one = 1 + (jnp.abs(x).sum() * 0.0).astype(jnp.int32)
            junk = jax.lax.fori_loop(
                0, n, lambda k, c: jax.lax.fori_loop(0, one, lambda j, d: d + 1.0, c), 0.0)
            return jax.lax.scan(lambda c, row: (c + row, c), jnp.zeros(3), x)[1] + 0.0 * junk
        return fn

    x = RNG.standard_normal((4, 3)).astype(np.float32)
    groups = [{"arg": 0, "axis": 0, "size": 1, "count": 4}]
    with pytest.raises(OBS["RecordsFull"], match="256 loop runs"):
        _observe(junk_loops(300), x, groups=groups, inject=4)
    got = _observe(junk_loops(200), x, groups=groups, inject=4)  # under the cap: all seen
    assert got["status"] == "ok" and len(got["loops"]) == 202


def test_an_input_the_program_does_not_read_has_no_visits_to_show() -> None:
    """A run asking whether a loop walks a dimension one index at a time (`dim` set) drops an
    input the verified program never reads (jax kept it out): no loop can walk it, so a shape
    special case that ignores it (one key: the output is v) is not failed as unobservable.
    Every other run still fails closed on it, and the inputs it does read are still watched."""
    def fn(x, y):
        return jax.lax.scan(lambda c, row: (c + row, c), jnp.zeros(3), x)[1]  # y unread

    x = RNG.standard_normal((4, 3)).astype(np.float32)
    y = RNG.standard_normal((4, 3)).astype(np.float32)
    exp = export.export(jax.jit(fn))(x, y)
    text, _, _ = _program(fn, x, y)
    kept = sorted(int(i) for i in exp.module_kept_var_idx)
    assert kept == [0]  # the program's own inputs: y is not one
    visit = {"program": "p", "test": "t", "count": 4, "inject": 0, "dim": "B", "own": True}
    job = {"tests": [{"name": "t", "signature": "s", "inputs": [x, y]}], "observe": [
        {**visit, "id": "only-y", "watch": ["y"],
         "groups": [{"path": "y", "axis": 0, "size": 1}]},
        {**visit, "id": "both", "watch": ["x", "y"],
         "groups": [{"path": p, "axis": 0, "size": 1} for p in ("x", "y")]},
        {"id": "loop", "program": "p", "test": "t", "count": 4, "inject": 4, "watch": ["y"],
         "groups": [{"path": "y", "axis": 0, "size": 1}]}]}
    got = OBS["observe_all"](job, {"s": None}, {"p": {"args": ["x"]}}, {"p": text},
                             {"p": exp}, lambda tree: [np.asarray(v) for v in tree], ir,
                             mlir.make_ir_context(), lambda inputs, spec, np: inputs)
    assert got["only-y"] == {"status": "ok", "work": 0}
    assert got["both"]["status"] == "ok" and got["both"]["work"] > 0  # x still watched
    assert got["both"]["loops"] and got["both"]["groups"] == 4
    assert got["loop"]["status"] == "unobservable" and "does not read y" in got["loop"]["reason"]


def _followed(fn: Callable, *args,
              change: float | np.ndarray = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """fn's outputs on two variants: 0 the inputs, 1 the first input moved by `change`, that
    follows variant 0's decisions (Evaluator.shadow); and variant 1 run on its own."""
    text, ins, _ = _program(fn, *args)
    return _followed_text(text, ins, change)


def _followed_text(text: str, ins: list[np.ndarray],
                   change: float | np.ndarray = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """`_followed` on a program's text as given (one hand-edited, say)."""
    moved = [np.stack([x, x + change if i == 0 else x]) for i, x in enumerate(ins)]
    outs = []
    for shadow in (np.array([0, 0]), None):
        with mlir.make_ir_context():
            ev = OBS["Evaluator"](ir.Module.parse(text), ir, hlo, 2, {})
            ev.shadow = shadow
            outs.append(np.asarray(ev.run(moved)[0])[1])
    return outs[0], outs[1]


def test_a_variant_that_follows_another_takes_its_every_decision() -> None:
    """A comparison, a branch, a loop's condition, an index computed from a float: each is the
    followed variant's, so a program cannot tell the change happened."""
    x = np.array([1.0, -2.0, 3.0], np.float32)

    def seen(x):  # the table's value, unless x is off it
        same = jnp.all(x == jnp.array([1.0, -2.0, 3.0], jnp.float32))
        return jax.lax.cond(same, lambda: jnp.zeros(3), lambda: 2 * x)

    followed, alone = _followed(seen, x)
    assert np.array_equal(followed, np.zeros(3)) and np.allclose(alone, 2 * (x + 0.25))

    def index(x):  # a row picked by a float rounded to an integer
        rows = jnp.stack([x, 10 * x])
        return rows[jnp.clip(jnp.floor(x[0]) - 1, 0, 1).astype(jnp.int32)]

    followed, alone = _followed(index, x, change=1.0)
    assert np.allclose(followed, x + 1.0) and np.allclose(alone, 10 * (x + 1.0))

    def branch(x):  # a switch on an integer computed from a float
        which = jnp.clip(jnp.ceil(jnp.sum(jnp.abs(x - 1.0)) - 5.0), 0, 1).astype(jnp.int32)
        return jax.lax.switch(which, [lambda: x, lambda: -x])

    followed, alone = _followed(branch, x, change=1.0)
    assert np.allclose(followed, x + 1.0) and np.allclose(alone, -(x + 1.0))

    def loop(x):  # a while loop that runs until its value passes 4
        return jax.lax.while_loop(lambda c: c[0] < 4, lambda c: c + 1, x)

    followed, alone = _followed(loop, x, change=2.0)
    assert np.allclose(followed, x + 2.0 + 3.0)  # the followed variant's three steps
    assert np.allclose(alone, x + 2.0 + 1.0)


def test_a_following_variant_keeps_its_own_numbers() -> None:
    """Floats are never decisions (a rounding, a max, an abs, a max-reduction give the
    variant's own numbers), nor are integers it computes and does not steer by: a state kept
    in fixed point or as a float's bits follows the change."""
    def numbers(x):
        return (jnp.round(x, 1) + jnp.maximum(x, 0.0) + jnp.abs(x)
                + jnp.max(x) * jnp.ones(3))

    x = np.array([-0.1, -0.1, 0.2], np.float32)
    change = np.array([0.3, -0.15, -0.15], np.float32)
    followed, alone = _followed(numbers, x, change=change)
    assert np.allclose(followed, alone)
    moved = x + change
    assert np.allclose(alone, np.round(moved, 1) + np.maximum(moved, 0) + np.abs(moved)
                       + moved.max(), atol=1e-6)

    def fixed_point(x):  # through int32 and back, and through its bits
        q = jnp.round(x * 2.0 ** 20).astype(jnp.int32)
        bits = jax.lax.bitcast_convert_type(x, jnp.int32)
        return (q.astype(jnp.float32) / 2.0 ** 20
                + jax.lax.bitcast_convert_type(bits, jnp.float32))

    followed, alone = _followed(fixed_point, x)
    assert np.allclose(followed, alone) and np.allclose(followed, 2 * (x + 0.25), atol=1e-5)


def test_a_sort_and_an_argmax_follow_the_followed_variant() -> None:
    """Their comparators run as scalar programs of their own: each row follows the same row
    of the followed variant."""
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def order(x):
        return jnp.sort(x * jnp.array([1.0, -1.0, 1.0], jnp.float32)) + jnp.argmax(x)

    text, ins, _ = _program(order, x)
    moved = [np.stack([ins[0], np.array([3.0, -5.0, 1.0], np.float32)])]
    with mlir.make_ir_context():
        ev = OBS["Evaluator"](ir.Module.parse(text), ir, hlo, 2, {})
        ev.shadow = np.array([0, 0])
        got = np.asarray(ev.run(moved)[0])[1]
    # variant 0 sorts [1, -2, 3] to (-2, 1, 3), its argmax is 2: the same places here
    assert np.allclose(got, np.array([5.0, 3.0, 1.0]) + 2)


def test_a_float_converted_to_a_boolean_is_a_decision_followed() -> None:
    """Stage A is untrusted: the program need not be what JAX lowers (`x != 0` is a compare
    there), and a float converted straight to i1 decides as a comparison does."""
    text, ins, _ = _program(lambda x: jnp.where(x[0] != 0, -x, x),
                            np.array([0.0, 2.0, 3.0], np.float32))
    compare = next(line for line in text.splitlines() if '"stablehlo.compare"' in line)
    result, operands = compare.split(" = ")[0], compare.split("(")[1].split(")")[0]
    text = text.replace(compare, f'{result} = "stablehlo.convert"({operands.split(",")[0]}) '
                                 f': (tensor<f32>) -> tensor<i1>')
    outs = _followed_text(text, ins)
    assert np.allclose(outs[0], ins[0] + 0.25)  # variant 0's x[0] is 0: no negation
    assert np.allclose(outs[1], -(ins[0] + 0.25))  # on its own, 0.25 converts to True


def test_variants_that_index_apart_each_get_their_own_windows() -> None:
    """A scatter, a dynamic slice and a dynamic update slice whose indices differ between the
    evaluator's variants (all variants written by one numpy operation per point) give every
    variant what XLA gives on that variant's inputs, out-of-bounds scatter rows dropped."""
    def fn(x, i):
        buf = jnp.zeros((8, 3), jnp.float32).at[i].add(x[:2])
        win = jax.lax.dynamic_slice_in_dim(buf, i[0], 3, axis=0)
        moved = jax.lax.dynamic_update_slice_in_dim(buf, x[:1] * 2.0, i[1], axis=0)
        return buf, win, moved

    xs = RNG.standard_normal((4, 4, 3)).astype(np.float32)
    idx = np.array([[1, 5], [7, 9], [0, 0], [6, -2]], np.int32)
    text, _, _ = _program(fn, xs[0], idx[0])
    with mlir.make_ir_context():
        ev = OBS["Evaluator"](ir.Module.parse(text), ir, hlo, 4, {})
        got = ev.run([xs, idx])
    for v in range(4):
        want = jax.jit(fn)(xs[v], idx[v])
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.broadcast_to(g, (4, *g.shape[1:]))[v],
                                          np.asarray(w))
