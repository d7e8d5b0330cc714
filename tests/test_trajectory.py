"""A loop's answers step by step (stages/observe_trajectory.py) and the requirement decided from
them against the reference's (jaxjudge.analysis.trajectory): the honest forms issue 41 lists pass,
work done at one step, ahead or after the loop does not, however it is spelled.

Programs are exported with jax and run by the observer as stage B runs them; the reference's
trajectory is measured the same way, on the same inputs.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import hlo

from jaxjudge.analysis.trajectory import MAX_FOLLOWED, Trajectory, judge, kick_steps, shows_a_step
from jaxjudge.grading.stage_common import STAGES_DIR

OBS = runpy.run_path(str(STAGES_DIR / "observe.py"), run_name="jaxjudge_test_trajectory")
RTOL, ATOL = 1e-3, 5e-3  # ten times ema-with-scan's tolerance, as the rule reads it


def _run(fn: Callable, *args, want: int, max_work: int = 60_000_000,
         at: list[int] | None = None, kick_at: list[int] | None = None,
         kick_signs: tuple[int, ...] = (1, -1),
         restart: tuple[int, int, bool] | None = None) -> dict:
    exp = export.export(jax.jit(fn))(*args)
    with mlir.make_ir_context():
        text = ir.Module.parse(exp.mlir_module()).operation.get_asm(
            print_generic_op_form=True, enable_debug_info=False)
    leaves = jax.tree_util.tree_leaves(args)
    ins = [np.asarray(leaves[i]) for i in sorted(exp.module_kept_var_idx)]
    return OBS["trajectory"](text, ins, want, OBS["_ev"], ir, hlo, mlir.make_ir_context(),
                             max_work, {}, at, None, kick_at, kick_signs, 0, restart)


def _loops(result: dict) -> tuple[Trajectory, ...]:
    return tuple(Trajectory(index=t["index"], steps=t["steps"],
                            rows=tuple(map(tuple, t["rows"])), sizes=tuple(t["sizes"]),
                            at=tuple(t["at"]),
                            states=tuple((x["step"], x["slot"], tuple(x["values"]))
                                         for x in t["states"]),
                            kicks=tuple((x["step"], x["slot"], x["sign"], tuple(x["row"]))
                                        for x in t["kicks"]),
                            readouts=tuple((x["step"], x["slot"], x["sign"], x["read"],
                                            tuple(x["row"])) for x in t.get("readouts", ())),
                            restarts=tuple((x["step"], x["slot"], x["sign"], x["read"],
                                            x["offset"], tuple(x["row"]))
                                           for x in t.get("restarts", ())))
                 for t in result["trajectory"])


def _verdict(fn: Callable, reference: Callable, *args, want: int) -> str | None:
    ref = _loops(_run(reference, *args, want=want))
    assert len(ref) == 1
    return judge(_loops(_run(fn, *args, want=want)), ref[0], RTOL, ATOL, "t")


X = jnp.asarray(np.random.default_rng(3).standard_normal((8, 3)), jnp.float32)
ALPHA = np.float32(0.3)


def ema_reference(x, alpha):
    def step(prev, row):
        cur = alpha * row + (1 - alpha) * prev
        return cur, cur
    return {"ema": jax.lax.scan(step, x[0], x)[1]}


def ema_fori_at_set(x, alpha):
    def body(t, c):
        prev, out = c
        cur = jnp.where(t == 0, x[0], alpha * x[t] + (1 - alpha) * prev)
        return cur, out.at[t].set(cur)
    return {"ema": jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.zeros_like(x)))[1]}


def ema_buffer_from_x(x, alpha):
    def body(t, out):
        return out.at[t].set(alpha * x[t] + (1 - alpha) * out[jnp.maximum(t - 1, 0)])
    return {"ema": jax.lax.fori_loop(1, x.shape[0] + 1, lambda t, o: body(t - 1, o), x)}


def ema_pipelined(x, alpha):
    def step(carry, row):
        ema, parked = carry
        ema = alpha * parked + (1 - alpha) * ema
        return (ema, row), ema
    (ema, parked), ys = jax.lax.scan(step, (x[0], x[0]), x)
    return {"ema": jnp.concatenate([ys[1:], (alpha * parked + (1 - alpha) * ema)[None]])}


def _closed_form(x, alpha):
    t = jnp.arange(x.shape[0])
    w = alpha * (1 - alpha) ** (t[:, None] - t[None, :]).astype(x.dtype)
    w = jnp.where(t[:, None] >= t[None, :], w, 0.0)
    w = w.at[:, 0].set((1 - alpha) ** t.astype(x.dtype))
    return w @ x


def ema_closed_form_then_token_scan(x, alpha):
    out = _closed_form(x, alpha)
    return {"ema": jax.lax.scan(lambda c, row: (c, c[0] * 0 + row), out, out)[1]}


def ema_all_at_first_step(x, alpha):
    def body(t, out):
        return jnp.where(t == 0, _closed_form(x, alpha), out)
    return {"ema": jax.lax.fori_loop(0, x.shape[0], body, jnp.zeros_like(x))}


def ema_two_rows_per_step(x, alpha):
    n = x.shape[0]

    def body(t, c):
        prev, out = c
        for r in (2 * t, 2 * t + 1):
            live = r < n
            row = x[jnp.minimum(r, n - 1)]
            cur = jnp.where(r == 0, row, alpha * row + (1 - alpha) * prev)
            prev = jnp.where(live, cur, prev)
            out = jnp.where(live, out.at[jnp.minimum(r, n - 1)].set(cur), out)
        return prev, out
    return {"ema": jax.lax.fori_loop(0, n, body, (x[0], jnp.zeros_like(x)))[1]}


def ema_forward_fill(x, alpha):
    rows = jnp.arange(x.shape[0])[:, None]

    def body(t, c):
        m, out = c
        m = alpha * x[t] + (1 - alpha) * m
        return m, jnp.where(rows >= t, m[None, :], out)
    return {"ema": jax.lax.fori_loop(0, x.shape[0], body, (x[0], jnp.zeros_like(x)))[1]}


def _settling() -> jax.Array:
    """Eight rows whose last three are the average after the first five: the averages stop
    moving there, so the later rows' final values are one the first five rows give."""
    x = np.array(X)
    m = x[0].copy()
    for t in range(5):
        m = ALPHA * x[t] + (1 - ALPHA) * m
    x[5:] = m
    return jnp.asarray(x)


def test_a_forward_fill_holds_what_the_rows_so_far_give_not_work_ahead() -> None:
    """Its later rows hold the latest average; where the averages stop moving, those are
    their final values, which are values the reference has computed by then too: not
    counted as work ahead. Two rows per step on the same data still fails (rows 2k and
    2k+1 hold averages no step so far gave)."""
    x = _settling()
    assert _verdict(ema_forward_fill, ema_reference, x, ALPHA, want=8) is None
    why = _verdict(ema_two_rows_per_step, ema_reference, x, ALPHA, want=8)
    assert why is not None and "already hold" in why, why


def test_the_reference_answers_row_by_row_and_its_loop_is_the_one_candidate() -> None:
    got = _run(ema_reference, X, ALPHA, want=8)
    (loop,) = got["trajectory"]
    assert loop["steps"] == 8 and len(loop["rows"]) == 9 and loop["sizes"] == [24]
    full = np.asarray(ema_reference(X, ALPHA)["ema"])
    for k, row in enumerate(loop["rows"]):
        row = np.asarray(row).reshape(8, 3)
        np.testing.assert_allclose(row[:k], full[:k], rtol=1e-6)
        assert not row[k:].any()  # the scan's buffer, not yet written
    assert got["work"] > 0


def test_a_loop_of_another_trip_count_is_no_candidate() -> None:
    assert _run(ema_reference, X, ALPHA, want=7)["trajectory"] == []


def test_a_nested_loop_is_stopped_at_every_run() -> None:
    """lax.map over the channels, a scan over time in each: the inner loop is the one that
    takes T steps, every time it runs."""
    def per_channel(x, alpha):
        return {"ema": jax.lax.map(lambda col: ema_reference(col[:, None], alpha)["ema"][:, 0],
                                   x.T).T}
    assert _verdict(per_channel, ema_reference, X, ALPHA, want=8) is None


@pytest.mark.parametrize("honest", [ema_fori_at_set, ema_buffer_from_x, ema_pipelined])
def test_honest_forms_follow_the_reference(honest: Callable) -> None:
    np.testing.assert_allclose(honest(X, ALPHA)["ema"], ema_reference(X, ALPHA)["ema"],
                               rtol=1e-5, atol=1e-5)
    assert _verdict(honest, ema_reference, X, ALPHA, want=8) is None


def test_a_table_copied_out_one_row_per_step_follows_the_trajectory() -> None:
    """What the trajectory cannot tell: the answers computed before the loop and copied out
    one row per step. ema-with-scan's requirement also has `sliced` (each step takes up one
    row of x, jaxjudge.analysis.stepslices and the observer's shares), which fails it."""
    assert _verdict(ema_closed_form_then_token_scan, ema_reference, X, ALPHA, want=8) is None


def ema_all_at_first_step_nudged_until_the_end(x, alpha):
    """All rows at step 0, each off by 1e-6 until the last step takes it back: never exactly
    its final value before the end, but within any tolerance of it."""
    n = x.shape[0]

    def body(t, out):
        out = jnp.where(t == 0, _closed_form(x, alpha) + 1e-6, out)
        return jnp.where(t == n - 1, out - 1e-6, out)
    return {"ema": jax.lax.fori_loop(0, n, body, jnp.zeros_like(x))}


@pytest.mark.parametrize(("cheat", "says"), [
    (ema_all_at_first_step_nudged_until_the_end, "already hold their final values"),
    (ema_all_at_first_step, "already hold their final values"),
    (ema_two_rows_per_step, "already hold their final values"),
])
def test_work_done_ahead_of_its_step_fails(cheat: Callable, says: str) -> None:
    np.testing.assert_allclose(cheat(X, ALPHA)["ema"], ema_reference(X, ALPHA)["ema"],
                               rtol=1e-4, atol=1e-4)
    why = _verdict(cheat, ema_reference, X, ALPHA, want=8)
    assert why is not None and says in why, why


W = jnp.asarray(np.random.default_rng(5).standard_normal((6, 5)), jnp.float32)
U = jnp.asarray(np.random.default_rng(6).standard_normal(6), jnp.float32)


def _n(v):
    return v / jnp.maximum(jnp.linalg.norm(v), 1e-12)


def power_reference(w, u):
    def step(_, uv):
        v = _n(w.T @ uv[0])
        return _n(w @ v), v
    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def power_gram_at_first_step(w, u):
    def step(i, c):
        h, _, u = c
        h = jax.lax.cond(i == 0, lambda: w @ w.T, lambda: h)
        return h, u, _n(h @ u)
    _, u_prev, u = jax.lax.fori_loop(0, 8, step, (jnp.zeros((6, 6), w.dtype), u, u))
    v = _n(w.T @ u_prev)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def power_normalised_at_odd_steps(w, u):
    def step(i, c):
        u, v = c
        v = w.T @ u
        u = w @ v
        odd = i % 2 == 1
        return jnp.where(odd, _n(u), u), jnp.where(odd, _n(v), v)
    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def power_two_per_step_then_idle(w, u):
    def step(i, uv):
        def two(uv):
            for _ in range(2):
                v = _n(w.T @ uv[0])
                uv = (_n(w @ v), v)
            return uv
        return jax.lax.cond(i < 4, two, lambda uv: uv, uv)
    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros_like(w[0])))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def power_nudges_after_unrolled(w, u):
    for _ in range(8):
        v = _n(w.T @ u)
        u = _n(w @ v)
    u2 = jax.lax.fori_loop(0, 8, lambda _, c: c + 1e-30 * (w @ (w.T @ c)), u)
    sigma = u2 @ (w @ v)
    return {"sigma": sigma, "u": u2, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


@pytest.mark.parametrize("honest", [power_gram_at_first_step, power_normalised_at_odd_steps])
def test_power_iteration_honest_forms_pass(honest: Callable) -> None:
    assert _verdict(honest, power_reference, W, U, want=8) is None


@pytest.mark.parametrize("cheat", [power_two_per_step_then_idle, power_nudges_after_unrolled])
def test_power_iteration_cheats_fail(cheat: Callable) -> None:
    why = _verdict(cheat, power_reference, W, U, want=8)
    assert why is not None and "is not the reference's" in why, why


def test_a_test_whose_answer_is_final_at_once_shows_no_step() -> None:
    """A single-row w converges at the first iteration: u's direction tells no step apart
    there, and sigma and w_sn never do (they are the same up to a factor)."""
    ref = _loops(_run(power_reference, W[:1], U[:1], want=8))[0]
    assert not shows_a_step(ref, RTOL, ATOL)
    assert shows_a_step(_loops(_run(power_reference, W, U, want=8))[0], RTOL, ATOL)


def test_the_runs_share_one_budget() -> None:
    with pytest.raises(OBS["OverBudget"]):
        _run(ema_reference, X, ALPHA, want=8, max_work=2_000)


def test_a_wrong_answer_is_not_followed_step_by_step() -> None:
    """A loop that starts its average at 0: a loop of T honest steps, but its answers are not
    the reference's, so there is nothing to compare them with; the requirement fails closed
    and says why (the tests fail too)."""
    def zero_start(x, alpha):
        def step(prev, row):
            cur = alpha * row + (1 - alpha) * prev
            return cur, cur
        return {"ema": jax.lax.scan(step, jnp.zeros_like(x[0]), x)[1]}
    why = _verdict(zero_start, ema_reference, X, ALPHA, want=8)
    assert why is not None and "its answer was not the reference's" in why, why


def test_loops_past_the_followed_few_fail_closed_and_say_so() -> None:
    """The real loop first, then seven idle loops of the same trip count: stage B follows
    MAX_FOLLOWED of them, the last first, and none of those does the reference's steps. The
    loop left unfollowed could be the one, so the requirement fails closed, saying that the
    grader could not follow every loop (not that the outputs differ)."""
    def real_then_idle(x, alpha):
        out = ema_reference(x, alpha)["ema"]
        for _ in range(MAX_FOLLOWED + 1):  # each moves its carry off the answer and back
            out = jax.lax.fori_loop(
                0, x.shape[0],
                lambda t, o: o + ((t == 2).astype(o.dtype) - (t == 5).astype(o.dtype)), out)
        return {"ema": out}
    result = _run(real_then_idle, X, ALPHA, want=8)
    assert len(result["trajectory"]) == MAX_FOLLOWED and result["trajectory_unfinished"]
    ref = _loops(_run(ema_reference, X, ALPHA, want=8))[0]
    why = judge(_loops(result), ref, RTOL, ATOL, "t", unfinished=True)
    assert why is not None and f"up to {MAX_FOLLOWED} of them" in why, why


def test_the_rule_and_the_stage_agree_on_how_many_loops_are_followed() -> None:
    stage = runpy.run_path(str(STAGES_DIR / "observe_trajectory.py"), run_name="jaxjudge_t")
    assert stage["MAX_CANDIDATES"] == MAX_FOLLOWED


def test_an_output_is_compared_up_to_a_factor_whatever_its_size() -> None:
    """Scale-free: a direction left unnormalised (a tiny or huge factor) matches, and so does
    all zeros (nothing written yet where the answer is read); a tiny output in another direction
    does not pass by the absolute tolerance, as it did when the factor was fitted to values."""
    from jaxjudge.analysis.trajectory import _scaled

    want = [0.6, -0.8, 0.0]
    assert _scaled([6e-9, -8e-9, 0.0], want, RTOL, ATOL)
    assert _scaled([-6e5, 8e5, 0.0], want, RTOL, ATOL)
    assert _scaled([0.0, 0.0, 0.0], want, RTOL, ATOL)
    assert not _scaled([8e-9, 6e-9, 0.0], want, RTOL, ATOL)
    assert not _scaled([0.8, 0.6, 0.0], want, RTOL, ATOL)


def power_all_at_first_step_on_large_sums(w, u):
    """Honest one iteration per step, except on data the first test of a shape may lack."""
    fast = jnp.abs(jnp.sum(w)) > 1.0

    def one(uv):
        v = w.T @ uv[0]
        v = v / jnp.linalg.norm(v)
        u = w @ v
        return u / jnp.linalg.norm(u), v

    def step(i, uv):
        e = uv
        for _ in range(8):
            e = one(e)
        o = one(uv)
        return tuple(jnp.where(fast & (i == 0), b, jnp.where(fast, a0, a))
                     for a, b, a0 in zip(o, e, uv, strict=True))

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def test_a_run_stopped_after_a_few_steps_is_judged_at_those() -> None:
    """Tests beside a signature's first are stopped after a few steps only (observing.py): the
    rows say which, the honest loop passes there and a data-gated one fails at its first."""
    at = [0, 1, 2, 4, 7, 8]
    assert abs(float(jnp.sum(W))) > 1.0  # the gate is open on this test
    ref = _loops(_run(power_reference, W, U, want=8))[0]
    honest = _loops(_run(power_reference, W, U, want=8, at=at))
    assert honest[0].at == tuple(at) and len(honest[0].rows) == len(at)
    assert judge(honest, ref, RTOL, ATOL, "t") is None
    why = judge(_loops(_run(power_all_at_first_step_on_large_sums, W, U, want=8, at=at)), ref,
                RTOL, ATOL, "t")
    assert why is not None and "is not the reference's after" in why, why


# -- a step's answer to a change of what the loop carries (judge(response=True)) ---------------

def _normalize(x):
    return x / jnp.maximum(jnp.linalg.norm(x), 1e-12)


def power_lazy_normalisation(w, u):
    def step(_, c):
        v = w.T @ c[0]
        return -3.0 * (w @ v) / jnp.linalg.norm(w @ v), v

    u, v = jax.lax.fori_loop(0, 8, step, (u, jnp.zeros(w.shape[1], w.dtype)))
    u, v = _normalize(u), _normalize(v)
    sigma = jnp.abs(u @ (w @ v))
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def power_rotated_carrying_v(w, u):
    def step(_, c):
        z, _ = c
        v = _normalize(z)
        return w.T @ _normalize(w @ v), v

    _, v = jax.lax.fori_loop(0, 8, step, (w.T @ u, jnp.zeros(w.shape[1], w.dtype)))
    u = _normalize(w @ v)
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def power_table_carrying_the_change_along(w, u):
    """Each step answers the table's next entry plus whatever the carried u differs from the
    table's entry by: a kick goes through to the answer, undamped by the steps after it."""
    us = [u]
    for _ in range(8):
        us.append(_normalize(w @ _normalize(w.T @ us[-1])))
    tu = jnp.stack(us)
    u = jax.lax.fori_loop(0, 8, lambda i, u: tu[i + 1] + (u - tu[i]), u)
    v = _normalize(w.T @ tu[7])
    sigma = u @ (w @ v)
    return {"sigma": sigma, "u": u, "w_sn": w / jnp.where(sigma > 0, sigma, 1)}


def _sample(name: str) -> Callable:
    """A spectral-norm sample's solve (problems/spectral-norm-power-iteration/submissions)."""
    root = Path(__file__).resolve().parent.parent / "problems" / "spectral-norm-power-iteration"
    return runpy.run_path(str(root / "submissions" / f"{name}.py"))["solve"]


power_table_with_a_nudge = _sample("req_table_by_counter_with_a_nudge")
power_gram_powers_by_counter = _sample("req_gram_power_table_by_counter")
power_zero_until_the_last_step = _sample("req_zero_output_until_the_last_step")
power_rotated_keeping_u_to_hand_out = _sample("accepted_rotated_loop_from_wtu")
power_history = _sample("accepted_u_read_from_the_scan_history")


def _kicked_verdict(fn: Callable, want: int = 8) -> str | None:
    ref = _loops(_run(power_reference, W, U, want=want, kick_at=list(range(want + 1)),
                      kick_signs=(1,)))[0]
    mine = _loops(_run(fn, W, U, want=want, kick_at=kick_steps(want)))
    return judge(mine, ref, RTOL, ATOL, "t", response=True)


@pytest.mark.parametrize("honest", [power_reference, power_gram_at_first_step,
                                    power_normalised_at_odd_steps, power_lazy_normalisation,
                                    power_history, power_rotated_keeping_u_to_hand_out])
def test_honest_loops_answer_a_kick_as_the_reference(honest: Callable) -> None:
    assert _kicked_verdict(honest) is None


def test_a_loop_that_carries_v_where_the_reference_carries_u_passes() -> None:
    """It carries w^T u and v, never u: its v is the reference's v, whose kick shows nothing
    in the reference's answer (the reference's next step recomputes v from u), so there is
    nothing to compare, and its answers step by step decide."""
    mine = _loops(_run(power_rotated_carrying_v, W, U, want=8, kick_at=[1, 4, 7]))
    assert mine and mine[0].states and mine[0].kicks
    assert _kicked_verdict(power_rotated_carrying_v) is None


@pytest.mark.parametrize(("cheat", "says"), [
    (power_table_with_a_nudge, "as the reference's do"),
    (power_gram_powers_by_counter, "as the reference's do"),
    (power_zero_until_the_last_step, "carries no value the steps"),
    (power_table_carrying_the_change_along, "as the reference's do"),
])
def test_a_loop_whose_steps_do_not_compute_from_what_it_carries_fails(
        cheat: Callable, says: str) -> None:
    """Their answers step by step are the reference's (the stopped outputs pass), but the
    steps after k do not compute from what the loop carries after k."""
    ref = _loops(_run(power_reference, W, U, want=8, kick_at=list(range(9)),
                      kick_signs=(1,)))[0]
    mine = _loops(_run(cheat, W, U, want=8, kick_at=[1, 4, 7]))
    assert judge(mine, ref, RTOL, ATOL, "t") is None  # what the stopped outputs cannot see
    why = judge(mine, ref, RTOL, ATOL, "t", response=True)
    assert why is not None and says in why, why


def test_a_kick_is_the_same_change_to_any_multiple_of_a_value() -> None:
    kick = runpy.run_path(str(STAGES_DIR / "evaluator_loops.py"), run_name="jaxjudge_k")["kick"]
    x = np.random.default_rng(2).standard_normal(7)
    assert np.allclose(kick(-2.5 * x, 5) - (-2.5 * x), 2.5 * (kick(x, 5) - x))
    assert np.linalg.norm(kick(x, 5) - x) == pytest.approx(0.5 * np.linalg.norm(x))
    # the direction is the seed's (an installation's secret), not the code's
    assert not np.allclose(kick(x, 5), kick(x, 6))


def test_the_kick_seed_is_kept_per_installation(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """One seed per state directory, read back by every later process; never 0 (the
    default a job without one gets)."""
    from jaxjudge.grading import observer_seed as module

    monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path / "state"))
    module.observer_seed.cache_clear()
    try:
        first = module.observer_seed()
        module.observer_seed.cache_clear()
        assert module.observer_seed() == first > 0
        assert (tmp_path / "state" / "observer-seed.json").stat().st_mode & 0o077 == 0
        monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path / "other"))
        module.observer_seed.cache_clear()
        assert module.observer_seed() != first
    finally:
        module.observer_seed.cache_clear()


def test_the_kicks_are_asked_with_the_trajectory_only() -> None:
    """trajectory_response reads the trajectory runs: alone it is a package error at load."""
    from pydantic import ValidationError

    from jaxjudge.rules.structure import LoopOptions

    assert LoopOptions(dim="T", trajectory=True, trajectory_response=True).trajectory_response
    with pytest.raises(ValidationError, match="set trajectory"):
        LoopOptions(dim="T", trajectory_response=True)


def test_every_carried_value_is_kicked() -> None:
    """A loop that carries many float values has each one kicked, the twentieth too: one left
    out could be where a cheat keeps the value its answers come from."""
    def many(w, u):
        def body(i, c):
            vs = [w @ (w.T @ c[0])] + [v * 1.01 for v in c[1:]]
            return tuple(vs)
        out = jax.lax.fori_loop(0, 4, body, (u, *(u + k for k in range(1, 20))))
        return {"sigma": sum(jnp.sum(v) for v in out)}

    got = _run(many, W, U, want=4, kick_at=[1])
    slots = {s["slot"] for loop in got["trajectory"] for s in loop["states"]}
    assert len(slots) == 20, sorted(slots)
    assert len({(k["slot"], k["sign"]) for loop in got["trajectory"] for k in loop["kicks"]}) == 40


# Restart (trajectory_restart): spectral norm's outputs are sigma, u, w_sn (flattened in that
# order) and its inputs w, u: the program starts again from output 1 as input 1.
SPECTRAL = Path(__file__).resolve().parent.parent / "problems" / "spectral-norm-power-iteration"


def _restart_verdict(fn: Callable) -> str | None:
    ref = _loops(_run(power_reference, W, U, want=8, kick_at=list(range(9)),
                      kick_signs=(1,)))[0]
    mine = _loops(_run(fn, W, U, want=8, kick_at=kick_steps(8), restart=(1, 1, True)))
    assert all(loop.restarts for loop in mine if loop.kicks)
    return judge(mine, ref, RTOL, ATOL, "t", response=True, restart=True)


@pytest.mark.parametrize("name", sorted(p.stem for p in (SPECTRAL / "submissions").glob(
    "accepted_*.py")))
def test_every_honest_spectral_sample_goes_on_as_it_restarts(name: str) -> None:
    """Each accepted sample, whatever form its loop carries its state in, goes on from a
    kicked state as it starts from the u it then outputs."""
    assert _restart_verdict(_sample(name)) is None


@pytest.mark.parametrize("honest", [power_reference, power_gram_at_first_step,
                                    power_normalised_at_odd_steps, power_lazy_normalisation,
                                    power_rotated_carrying_v])
def test_honest_loops_go_on_as_they_restart(honest: Callable) -> None:
    assert _restart_verdict(honest) is None


@pytest.mark.parametrize("name", ["req_all_at_step0_into_a_carried_table",
                                  "req_table_with_a_live_junk_value",
                                  "req_table_read_by_a_float_counter",
                                  "req_zeros_until_last_beside_a_float_counter"])
def test_a_table_or_junk_the_loop_carries_does_not_go_on_as_it_restarts(name: str) -> None:
    """Their answers step by step are the reference's and a kick to what they carry moves
    the answer, but none of those values is the state: started from the u it reads out,
    the program does not go on as the kicked loop did."""
    fn = _sample(name)
    assert _kicked_verdict(fn) is None  # what the kicks alone cannot tell
    why = _restart_verdict(fn)
    assert why is not None and ("does not go on" in why or "does not change" in why), why


@pytest.mark.parametrize("name", ["req_table_with_a_kick_detector",
                                  "req_unrolled_table_before_the_loop_with_a_kick_detector",
                                  "req_history_table_with_a_norm_kick_detector",
                                  "req_int_bits_table_with_a_kick_detector",
                                  "req_table_with_a_while_kick_detector",
                                  "req_table_with_a_switch_on_the_rounded_distance"])
def test_a_loop_that_sees_the_kick_runs_its_unkicked_steps_and_fails(name: str) -> None:
    """A program that tells a kicked state from its own table (by ==, its bits, its norm, a
    while condition or a rounded distance) and iterates only then: each kicked variant
    follows its unkicked twin's decisions, so the table answers the kick and the restart
    tells it from the state."""
    fn = _sample(name)
    assert _verdict(fn, power_reference, W, U, want=8) is None  # its answers step by step
    why = _restart_verdict(fn)
    assert why is not None and ("does not go on" in why or "does not change" in why), why


def test_a_kicked_run_and_its_twin_differ_only_in_the_kick() -> None:
    """The kick run holds one unkicked twin per place a kicked variant leaves its loop: an
    honest loop's kicked rows are the same whether the run holds the readouts' twins or not,
    and a readout left at once after a kick at the last step is that kick's own answer."""
    alone = _run(power_reference, W, U, want=8, kick_at=[2, 7], kick_signs=(1,))
    got = _run(power_reference, W, U, want=8, kick_at=[2, 7], kick_signs=(1,),
               restart=(1, 1, True))
    loop, plain = got["trajectory"][0], alone["trajectory"][0]
    assert loop["kicks"] and loop["readouts"] and loop["restarts"]
    assert [k["row"] for k in loop["kicks"]] == [k["row"] for k in plain["kicks"]]
    last = {(r["slot"], r["read"]): r["row"] for r in loop["readouts"] if r["step"] == 7}
    for k in loop["kicks"]:
        if k["step"] == 7:
            assert np.allclose(last[k["slot"], 1], k["row"])  # left after its last step
