"""A loop does the reference's steps, one per step: its answer after k steps is the reference's
answer after k steps (issue 41).

Stage B ran the program with the loop stopped after each step (stages/observe_trajectory.py):
whatever the loop carries then, the program's own code after the loop turns it into outputs.
The problem's reference was run the same way on the same test (jaxjudge.grading.reference_work).
With R[j] the reference's outputs after j of its n steps, F = R[n] its answer, and L[k] the
learner's after k of its n steps, the loop does the reference's steps when, for one offset c in
(0, -1, 1) (a software-pipelined loop finishes each step's work one step late, a loop whose
first step was done before it one step early), at every step k (1 .. n-1, j = k + c in 0 .. n):

- **what the reference's first j steps wrote is the learner's too**: where R[j] differs from
  R[0] (the elements those steps changed: every element of sigma or of an attention output,
  the first j rows of a running average), L[k] equals R[j] within the problem's tolerance
  (times `slack`, for the rounding of another order of operations);
- **nothing is done ahead**: of the elements the reference's first j steps leave alone (and
  whose answer differs from where it starts), no more than one reference step writes already
  hold their answer F in L[k], within the tolerance, when they did not in L[0] (a table filled
  at step 0, two rows per step; one step's worth is a pipelined fold's last row, or a value
  that happens to lie near its answer). Within the tolerance, not exactly: a table nudged by
  an epsilon that the last step takes back is still ahead.

Each output is compared up to one factor (sign and scale are the learner's: a direction
normalised at other steps), and only where the reference's tells a step apart: sigma and a
matrix divided by it are the same up to a factor at every step, u's direction is not.

Measured this way a Gram matrix built at step 0, a cond that skips a no-op update, a pipelined
fold, a buffer that starts as a copy of x all pass: they give the reference's answer at every
step. Work done at one step, idle steps, a closed form after the loop, nudges and checksums
give another answer after k steps. A test on which the reference's answer is already final
after its first step shows nothing; the requirement needs one test that shows a step.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from jaxjudge.analysis.words import listed

OFFSETS = (0, -1, 1)
# How many loops of the trip count stage B follows (stages/observe_trajectory.py's
# MAX_CANDIDATES; a sandboxed stage imports nothing of ours, tests/test_trajectory.py checks).
MAX_FOLLOWED = 6


@dataclass(frozen=True)
class Trajectory:
    """One loop's outputs after 0, 1, ..., steps steps (flattened; NaN as None)."""

    index: int  # the while op's place in the program text
    steps: int
    rows: tuple[tuple[float | None, ...], ...]
    sizes: tuple[int, ...] = ()  # each output's elements in a row, in order
    at: tuple[int, ...] = ()  # the steps after which each row left the loop (empty: every one)
    # (k, slot, values): what the loop's first run carries after k steps, slot by slot
    states: tuple[tuple[int, int, tuple[float | None, ...]], ...] = ()
    # (k, slot, sign, row): the outputs with that value kicked after k steps (stage B's
    # evaluator_loops.kick, the same change to a value and to any multiple of it)
    kicks: tuple[tuple[int, int, int, tuple[float | None, ...]], ...] = ()
    # (k, slot, sign, read, row): the outputs with that value kicked after k steps and the
    # loop left `read` steps later (what the program reads the kicked state out as)
    readouts: tuple[tuple[int, int, int, int, tuple[float | None, ...]], ...] = ()
    # (k, slot, sign, read, offset, row): the program started from that kicked state as its
    # own output reads it `read` steps after the kick, the loop stopped after n - k - read +
    # offset steps (trajectory_restart)
    restarts: tuple[tuple[int, int, int, int, int, tuple[float | None, ...]], ...] = ()

    def after(self, k: int) -> tuple[float | None, ...] | None:
        """The outputs with the loop stopped after k steps (None: not taken)."""
        if not self.at:
            return self.rows[k] if 0 <= k < len(self.rows) else None
        return self.rows[self.at.index(k)] if k in self.at else None

    def stops(self) -> tuple[int, ...]:
        return self.at or tuple(range(len(self.rows)))


def _close(a: float | None, b: float | None, rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= atol + rtol * abs(b) or (math.isinf(a) and a == b)


def _differs(a: float | None, b: float | None) -> bool:
    return (a is None) != (b is None) or (a is not None and b is not None and a != b)


def _spans(sizes: tuple[int, ...], length: int) -> list[range]:
    """Each output's elements in a row (one span for the whole row without sizes)."""
    if not sizes or sum(sizes) != length:
        return [range(length)]
    out, at = [], 0
    for n in sizes:
        out.append(range(at, at + n))
        at += n
    return out


def _scaled(got: list[float | None], want: list[float | None], rtol: float,
            atol: float) -> bool:
    """Whether `got` is `want` times one factor (sign and scale are the learner's to choose:
    a direction normalised at other steps), within the tolerance of the scaled values."""
    pairs = [(g, w) for g, w in zip(got, want, strict=True) if g is not None and w is not None]
    if any((g is None) != (w is None) for g, w in zip(got, want, strict=True)):
        return False
    ww = sum(w * w for _, w in pairs)
    gg = sum(g * g for g, _ in pairs)
    if not (math.isfinite(ww) and math.isfinite(gg)) or ww == 0:
        return all(_close(g, w, rtol, atol) for g, w in pairs)
    if gg == 0:
        # all zeros: nothing written yet where the program reads its answer (a scan's history
        # read at us[-1] holds zeros until the last step), so this output tells no step apart
        return True
    # `got` brought to `want`'s length (and sign), then read in `want`'s units: scale-free,
    # so neither a tiny factor (u left unnormalised) nor a tiny output passes by the atol
    s = math.copysign(math.sqrt(ww / gg), sum(g * w for g, w in pairs))
    return all(_close(s * g, w, rtol, atol) for g, w in pairs)


def _informative(ref: Trajectory, j: int, span: range, rtol: float, atol: float) -> bool:
    """Whether output `span` of the reference after j steps tells a step apart: what its first
    j steps wrote is not its answer up to a factor, or some of it is still to be written."""
    start, now, final = ref.rows[0], ref.rows[j], ref.rows[-1]
    written = [e for e in span if _differs(now[e], start[e])]
    if any(e not in written and not _close(start[e], final[e], rtol, atol) for e in span):
        return True
    return bool(written) and not _scaled([now[e] for e in written],
                                         [final[e] for e in written], rtol, atol)


def shows_a_step(ref: Trajectory, rtol: float, atol: float) -> bool:
    """Whether some step before the last tells a step apart (`_informative`)."""
    spans = _spans(ref.sizes, len(ref.rows[0]))
    return any(_informative(ref, j, span, rtol, atol)
               for j in range(1, ref.steps) for span in spans)


def _offset_failure(mine: Trajectory, ref: Trajectory, c: int, rtol: float,
                    atol: float) -> tuple[int, str] | None:
    """The first step at which `mine` is not `ref` moved by c steps, and how (None: it is)."""
    n = ref.steps
    start, final = ref.rows[0], ref.rows[-1]
    own_start = mine.after(0)
    if own_start is None:
        return 0, "its outputs before the loop's first step were not taken"
    spans = _spans(ref.sizes, len(start))
    # the most elements one of the reference's steps writes: a learner's step may finish that
    # many ahead of the reference's (a pipelined fold's last row, written after the loop)
    one_step = max(sum(_differs(a, b) for a, b in zip(ref.rows[i], ref.rows[i - 1], strict=True))
                   for i in range(1, n + 1))
    for k in mine.stops():
        j = k + c
        got = mine.after(k)
        if not (0 < k < n and 0 <= j <= n) or got is None:
            continue
        want = ref.rows[j]
        known = _known(want, start, spans)
        ahead = sum(1 for o, span in enumerate(spans) for e in span
                    if not _differs(want[e], start[e])
                    and not _close(start[e], final[e], rtol, atol)
                    and not _close(own_start[e], final[e], rtol, atol)
                    and _close(got[e], final[e], rtol, atol)
                    and not _among(got[e], known[o], rtol, atol))
        if ahead > one_step:
            return k, (f"after {k} of its {n} steps, {ahead} of your outputs' elements already "
                       f"hold their final values, which the reference computes at later steps")
        for o, span in enumerate(spans):
            written = [e for e in span if _differs(want[e], start[e])]
            if not _informative(ref, j, span, rtol, atol):
                continue
            if not _scaled([got[e] for e in written], [want[e] for e in written], rtol, atol):
                which = f"output {o + 1} of {len(spans)}" if len(spans) > 1 else "your output"
                return k, (f"after {k} of its {n} steps, {which} is not the reference's after "
                           f"{j} steps")
    return None


def _known(row: tuple[float | None, ...], start: tuple[float | None, ...],
           spans: list[range]) -> list[list[float]]:
    """Per output, the values the reference's loop has written in it by this step, sorted."""
    return [sorted(v for e in span if _differs(v := row[e], start[e])
                   and v is not None and math.isfinite(v)) for span in spans]


def _among(x: float | None, values: list[float], rtol: float, atol: float) -> bool:
    """Whether x is one of `values` (sorted), within the tolerance: an element that already
    holds its final value but also one the reference had computed by then (a forward fill
    that writes the latest average into the rows not seen yet, which later rows happen to
    end near) is explained by the steps done so far, not work done ahead."""
    if x is None or not math.isfinite(x) or not values:
        return False
    at = bisect.bisect_left(values, x)
    return any(_close(x, values[i], rtol, atol) for i in (at - 1, at) if 0 <= i < len(values))


def kick_steps(n: int) -> list[int]:
    """The steps after which a learner's loop is kicked (and its carried values read): the
    first, the middle and the last but one. A step after k that does not compute from what
    the loop carries shows in the answer to a kick at k, so three cover every step."""
    return sorted({1, n // 2, n - 1} & set(range(1, n)))


def _nonzero(values: tuple[float | None, ...]) -> bool:
    return any(v for v in values)


def _moves(row: tuple[float | None, ...], final: tuple[float | None, ...], spans: list[range],
           rtol: float, atol: float) -> bool:
    """Whether a kicked run's outputs are not the answer (some output, up to a factor)."""
    return any(not _scaled([row[e] for e in span], [final[e] for e in span], rtol, atol)
               for span in spans)


def _response_failure(mine: Trajectory, ref: Trajectory, c: int, rtol: float,
                      atol: float, restart: bool = False) -> tuple[int, str] | None:
    """The first step after which `mine`'s loop does not carry what the reference's computes
    from, or a change to it does not move the answer as the same change to the reference's
    (c steps later); None: neither.

    After k steps, where the reference has not converged on the test and a kick to what its
    loop carries shows in its answer:
    - the loop must carry some nonzero floating value (zeros until the last step fail);
    - where it carries one of the reference's values whose kick shows (up to a factor: scale
      and sign are the learner's), kicking it (one way or the other) must move the answer as
      the reference's kick moves the reference's, output by output up to a factor; or, if no
      such pair does, another value the loop carries must be live (its kick moves the answer):
      the state lives there (a rotated loop keeps u only to hand it out and computes from
      w^T u). A table looked up by the counter, u nudged in by 1e-30 or only gating fail.
    - a loop that carries none of those values carries its state in another form (v only,
      where the reference's v is recomputed from u): its answers step by step decide, and
      with `restart` (the problem names an output that is the state, and the input it starts
      from) so does `_restart_failure`, in any form."""
    n = ref.steps
    spans = _spans(ref.sizes, len(ref.rows[0]))
    final, own_final = ref.rows[-1], mine.rows[-1]
    ref_states: dict[int, list[tuple[int, tuple[float | None, ...]]]] = {}
    for k, slot, values in ref.states:
        if _nonzero(values):
            ref_states.setdefault(k, []).append((slot, values))
    ref_kicks = {(k, slot): row for k, slot, sign, row in ref.kicks if sign == 1}
    my_states: dict[int, list[tuple[int, tuple[float | None, ...]]]] = {
        k: [] for k in kick_steps(n)}
    for k, slot, values in mine.states:
        my_states.setdefault(k, []).append((slot, values))
    my_kicks = {(k, slot, sign): row for k, slot, sign, row in mine.kicks
                if len(row) == len(final)}
    # per kick, per readout (the steps after it it was read at): the restarts from it, but
    # for a readout the loop's own unchanged steps give too (the kick moved the loop along
    # its steps, a counter, not off them: going on from it as it starts proves nothing)
    my_restarts: dict[tuple[int, int, int, int], list[tuple[float | None, ...]]] = {}
    telling = spans
    if restart:
        own_rows = [row for row in mine.rows if len(row) == len(final)]
        along = {(k, slot, sign, read) for k, slot, sign, read, row in mine.readouts
                 if len(row) != len(final) or any(not _moves(row, own, spans, rtol, atol)
                                                   for own in own_rows)}
        for k, slot, sign, read, _, row in mine.restarts:
            if len(row) == len(final) and (k, slot, sign, read) not in along:
                my_restarts.setdefault((k, slot, sign, read), []).append(row)
        # the outputs whose reference answers tell a step apart: where a restart's zeros
        # vouch for nothing
        telling = [span for span in spans if any(
            _informative(ref, i, span, rtol, atol) for i in range(1, n))] or spans

    def agrees(k: int, s: int, want: tuple[float | None, ...]) -> bool:
        return any((row := my_kicks.get((k, s, sign))) is not None
                   and not _moves(row, want, spans, rtol, atol) for sign in (1, -1))

    def live(k: int, s: int) -> bool:
        return not agrees(k, s, own_final)

    # the steps judged (where the reference's kick shows), and whether at any of them some
    # value the loop carries was live: with `restart`, a loop none of whose carried values
    # moves the answer at any of those steps computes nothing the answer comes from
    judged: list[int] = []
    any_live = False
    for k in sorted(my_states):
        j = k + c
        if not (0 < k < n and 0 <= j <= n) or not _moves(ref.rows[j], final, spans, rtol, atol):
            # the reference's answer is final after j steps on this test: its loop has nothing
            # left to do, and a loop that stops updating once converged (a flag, a cond that
            # skips a no-op update) keeps a kick where the reference's steps shrink it; what
            # one loop carries then is many others' too, up to a factor
            continue
        shown = [(r, rv) for r, rv in ref_states.get(j, [])
                 if (j, r) in ref_kicks and _moves(ref_kicks[j, r], final, spans, rtol, atol)]
        if not shown:
            continue  # what the reference's loop carries then does not show in its answer
        carried = [(s, mv) for s, mv in my_states[k] if _nonzero(mv)]
        if not carried:
            return k, (f"after {k} of its {n} steps, your loop carries no value the steps "
                       f"after it could compute from, where the reference's carries its "
                       f"state")
        pairs = [(s, r) for s, mv in carried for r, rv in shown
                 if len(mv) == len(rv) and _scaled(list(mv), list(rv), rtol, atol)]
        answers = any(agrees(k, s, ref_kicks[j, r]) for s, r in pairs)
        judged.append(k)
        any_live = any_live or answers or any(
            (row := my_kicks.get((k, s, sign))) is not None
            and _moves(row, own_final, spans, rtol, atol)
            for s, _ in carried for sign in (1, -1))
        if pairs and not answers and not any(
                live(k, s) for s, _ in carried if s not in {p for p, _ in pairs}):
            return k, (f"changing what your loop carries after {k} of its {n} steps does not "
                       f"change your answer as the same change to the reference's after {j} "
                       f"steps changes its answer: the steps after it do not compute from "
                       f"what the loop carries as the reference's do")
        if restart and not answers:
            # the state is a value the reference's is and that answers a change as the
            # reference's does, or one the program goes on from as it starts from it
            why = _restart_failure(k, n, [s for s, _ in carried], my_kicks, my_restarts,
                                   own_final, spans, telling, rtol, atol)
            if why is not None:
                return k, why
    if restart and judged and not any_live:
        k = judged[0]
        return k, (f"changing any value your loop carries, after {listed(judged)} of its {n} "
                   f"steps, does not change your answer, where the same change to the "
                   f"reference's changes its answer: the answer does not come from what the "
                   f"loop carries (a table or a counter read after it, a value the grader "
                   f"cannot change, such as a float's integer bits)")
    return None


def _fills(got: tuple[float | None, ...], want: tuple[float | None, ...],
           spans: list[range]) -> bool:
    """Whether `got` holds something in every output (of `spans`: those in which the
    reference's answers tell a step apart) where `want` does: an output of zeros "tells no
    step apart" when the trajectory is compared, but as a restart's answer it vouches for
    nothing (a program that answers zeros when started afresh)."""
    return all(any(got[e] for e in span) for span in spans if any(want[e] for e in span))


def _restart_failure(k: int, n: int, carried: list[int],
                     kicks: dict[tuple[int, int, int], tuple[float | None, ...]],
                     restarts: dict[tuple[int, int, int, int], list[tuple[float | None, ...]]],
                     final: tuple[float | None, ...], spans: list[range],
                     telling: list[range], rtol: float, atol: float) -> str | None:
    """Why, after k steps, no live value the loop carries is its state (None: one is).

    A live value (changing it moves the answer) is the loop's state when the loop goes on
    from the changed value as the program does when started from it: stage B read the kicked
    state out through the program's own output (the loop left at once or one step after the
    kick) and ran the program from that output as its input for the steps the kicked run
    had left (one more or one fewer, for a pipelined loop); some of those answers must be
    the kicked run's, each output up to a factor, for every way (sign) the kick moved the
    answer. A readout that is one of the loop's own unchanged answers (at another step)
    does not count: the change moved a counter along the steps, not the state off them.
    No reference value is needed and no form is assumed: a loop carrying u, v, w^T u or an
    unnormalised vector goes on as it starts; a table built ahead and read by a counter, a
    junk value beside the state, zeros until the last step start afresh from what they read
    out and do not."""
    def moved(s: int, sign: int) -> bool:
        row = kicks.get((k, s, sign))
        return row is not None and _moves(row, final, spans, rtol, atol)

    def goes_on(s: int, sign: int) -> bool:
        row = kicks[k, s, sign]
        return any(_fills(again, row, telling)
                   and not _moves(again, row, spans, rtol, atol)
                   for read in (0, 1) for again in restarts.get((k, s, sign, read), ()))

    if n - k < 2:
        # a kick one step before the end leaves a loop that reads its state out one step on
        # (v carried, u computed after the loop) no restart of a whole step to go on with
        return None
    live = [s for s in carried if moved(s, 1) or moved(s, -1)]
    if not live:
        # how far a kick shows depends on its direction's share in the modes the steps after
        # it keep, and a value in another form (v for u, a complex u) is kicked along another
        # direction than the reference's: an honest loop's kick may fade below the tolerance
        # at one step where the reference's did not. Nothing to judge at this step, rather
        # than a rejection by chance (the caller fails a loop live at none of them).
        return None
    if any(all(goes_on(s, sign) for sign in (1, -1) if moved(s, sign)) for s in live):
        return None
    return (f"after {k} of its {n} steps, your loop with what it carries changed does not go "
            f"on as your program does when started from the output it then gives: the steps "
            f"after it compute from something other than what the loop carries (a table "
            f"built ahead, a counter, a value beside the state)")


def _shaped(mine: tuple[Trajectory, ...], ref: Trajectory) -> list[Trajectory]:
    """The loops whose rows can be compared with the reference's (as many, as long)."""
    size = len(ref.rows[0])
    return [loop for loop in mine
            if loop.steps == ref.steps and all(len(r) == size for r in loop.rows)]


def answered(mine: tuple[Trajectory, ...], ref: Trajectory, rtol: float, atol: float) -> bool:
    """Whether some loop's run to its end gives the reference's answer (each output up to a
    factor): only then can its steps be compared with the reference's. On a test where the
    answer is wrong, the tests fail; the requirement reads the other tests."""
    spans = _spans(ref.sizes, len(ref.rows[0]))
    return any(all(_scaled([loop.rows[-1][e] for e in span], [ref.rows[-1][e] for e in span],
                           rtol, atol) for span in spans) for loop in _shaped(mine, ref))


def judge(mine: tuple[Trajectory, ...], ref: Trajectory | None, rtol: float, atol: float,
          test: str, unfinished: bool = False, response: bool = False,
          restart: bool = False) -> str | None:
    """Why no loop of the program follows the reference's trajectory on this test (None: one
    does). unfinished: the observer's budget ran out before it followed every loop that could
    be the one; none of those it followed passing, the requirement fails closed."""
    if ref is None:
        return (f"The grader could not follow the reference's loop step by step on test "
                f"{test!r}, so it cannot confirm the requirement (a problem package error)")
    if not mine:
        return (f"When your program ran on test {test!r}, no loop ran exactly {ref.steps} "
                f"steps every time it ran, so its work is not done step by step")
    best: tuple[int, str] | None = None
    shaped = _shaped(mine, ref)
    if shaped and not answered(mine, ref, rtol, atol):
        return (f"When your program ran on test {test!r}, its answer was not the reference's, "
                f"so the grader could not follow its loop step by step against the reference's "
                f"steps: correct the answers first")
    stopped = (f"When your program ran on test {test!r} with its {ref.steps}-step loop stopped "
               f"early, the outputs were not the reference's at the same step: ")
    kicked = (f"When your program ran on test {test!r} with what its {ref.steps}-step loop "
              f"carries changed between steps, ")
    best_key = (-1, -1)
    for loop in shaped:
        fails: list[tuple[int, int, str] | None] = []
        for c in OFFSETS:
            f = _offset_failure(loop, ref, c, rtol, atol)
            if f is None and response:
                r = _response_failure(loop, ref, c, rtol, atol, restart)
                fails.append(None if r is None else (1, r[0], kicked + r[1]))
            else:
                fails.append(None if f is None else (0, f[0], stopped + f[1]))
        if any(f is None for f in fails):
            return None
        # the most telling: one whose stopped outputs were the reference's, then the latest
        latest = max((f for f in fails if f is not None), key=lambda f: (f[0], f[1]))
        if (latest[0], latest[1]) > best_key:
            best_key, best = (latest[0], latest[1]), (latest[1], latest[2])
    if unfinished:
        return (f"When your program ran on test {test!r}, the grader could not follow every "
                f"loop of {ref.steps} steps (it follows up to {MAX_FOLLOWED} of them, the last "
                f"first, within a multiple of the reference's work), and none of those it "
                f"followed does the reference's steps: do the work in one loop, without extra "
                f"loops of the same length around it")
    if best is None:
        return (f"When your program ran on test {test!r}, its outputs could not be compared "
                f"with the reference's step by step")
    return f"{best[1]}. Do one step of the computation per step of the loop"
