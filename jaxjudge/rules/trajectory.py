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

import math
from dataclasses import dataclass

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
        ahead = sum(1 for e in range(len(start))
                    if not _differs(want[e], start[e])
                    and not _close(start[e], final[e], rtol, atol)
                    and not _close(own_start[e], final[e], rtol, atol)
                    and _close(got[e], final[e], rtol, atol))
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
          test: str, unfinished: bool = False) -> str | None:
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
    for loop in shaped:
        fails = [_offset_failure(loop, ref, c, rtol, atol) for c in OFFSETS]
        if any(f is None for f in fails):
            return None
        latest = max((f for f in fails if f is not None), key=lambda f: f[0])
        best = latest if best is None or latest[0] > best[0] else best
    if unfinished:
        return (f"When your program ran on test {test!r}, the grader could not follow every "
                f"loop of {ref.steps} steps (it follows up to {MAX_FOLLOWED} of them, the last "
                f"first, within a multiple of the reference's work), and none of those it "
                f"followed does the reference's steps: do the work in one loop, without extra "
                f"loops of the same length around it")
    if best is None:
        return (f"When your program ran on test {test!r}, its outputs could not be compared "
                f"with the reference's step by step")
    return (f"When your program ran on test {test!r} with its {ref.steps}-step loop stopped "
            f"early, the outputs were not the reference's at the same step: {best[1]}. Do one "
            f"step of the computation per step of the loop")
