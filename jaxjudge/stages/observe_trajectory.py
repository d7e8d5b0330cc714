"""Stage B's observer, trajectories: a loop's answer after each of its steps (issue 41).

A loop requirement is about what the loop computes step by step: sigma after k power
iterations, attention over the first k key blocks, the averages of the first k rows. The
representation-free way to read that is to let the program answer it: stop the loop after k
steps and run the program's own code after the loop on whatever the loop carries then. Row k of
one evaluator run leaves the loop after k steps (every run of that while op, nested or not),
row 0 after none, the last row runs it to the end; the parent compares each row's outputs with
the reference's, stopped the same way (jaxjudge.rules.trajectory).

Which loop: every while op each of whose runs on the plain run took exactly the requirement's
trip count (up to MAX_CANDIDATES of them, the last in the program first), each in its own run;
when the budget runs out after one, the rest are left (`trajectory_unfinished`). Work done at
step 0, later steps that idle, tables or closed forms after the loop all give another answer
after k steps than k iterations; a Gram matrix built at step 0, a skipped no-op update or a
pipelined fold give the same one.

Run by path (observe.py loads it): stdlib and numpy only.
"""

from typing import Any

import numpy as np

MAX_CANDIDATES = 6
# A row's outputs, flattened: more is not compared (the requirement fails closed, saying so).
MAX_ROW_ELEMENTS = 4096
MAX_ROWS = 49  # a loop of at most 48 steps: rows for 0 .. 48 steps
# All candidates' rows of one run together: the result file stays small (a grade has at most
# 16 such runs), and the trusted side's parse bounded.
MAX_RUN_ELEMENTS = 120_000


class _Runs:
    """The loop recorder for the plain run: per while op, the steps of each of its runs."""

    def __init__(self) -> None:
        self.steps: dict[int, list[int]] = {}

    def __call__(self, ev, index: int, carry, passing) -> "_Run":
        return _Run(self, int(index))


class _Run:
    """One loop run, as the evaluator's recorder interface wants it (observe.LoopRecord's)."""

    def __init__(self, runs: _Runs, index: int) -> None:
        self.runs, self.index = runs, index
        self.steps = 0
        self.work: list[int] = []
        self.skips: list[int | None] = []

    def step(self, s: int, old, new, clean, injected) -> None:
        self.steps = s + 1

    def finish(self, carry):
        self.runs.steps.setdefault(self.index, []).append(self.steps)
        return carry


def _row(outs: list[np.ndarray], v: int) -> list[float | None]:
    """Variant v's outputs flattened in order (real, then imaginary parts of complex ones);
    NaN is None, an infinity the largest float of its sign."""
    parts = []
    for o in outs:
        x = np.asarray(o[v] if len(o) > v else o[0])
        if x.dtype.kind == "c":
            parts += [x.real.ravel(), x.imag.ravel()]
        else:
            parts.append(x.astype(np.float64).ravel())
    flat = np.concatenate(parts) if parts else np.zeros(0)
    if flat.size > MAX_ROW_ELEMENTS:
        raise ValueError("outputs too large")
    flat = np.nan_to_num(flat, nan=np.nan, posinf=1e300, neginf=-1e300)
    return [None if np.isnan(f) else float(f) for f in flat.tolist()]


def trajectory(text: str, inputs: list[np.ndarray], want: int, names: dict[str, Any],
               ir, hlo, mlir_context, max_work: int, meter: dict) -> dict[str, Any]:
    """The outputs of `text`'s main on `inputs` with each candidate loop (every run of it took
    `want` steps) stopped after 0, 1, ..., want steps. `names`: evaluator.py's namespace.

    Returns {"status": "ok", "work", "trajectory": [{"index", "steps", "rows", "sizes"}],
    "trajectory_unfinished"}; rows[k] are the outputs after k steps, `sizes` each output's
    share of a row. The runs share `max_work` (the meter's evaluator holds the last one, for
    the caller's count)."""
    Evaluator, Unobservable = names["Evaluator"], names["Unobservable"]
    if not 1 <= want < MAX_ROWS:
        raise Unobservable(f"a loop of {want} steps (the grader follows 1 to {MAX_ROWS - 1})")
    spent = 0
    with mlir_context:
        module = ir.Module.parse(text)
        runs = _Runs()
        ev = Evaluator(module, ir, hlo, 1, {}, recorder=runs)
        ev.max_work = max_work
        meter["ev"] = ev
        ev.run([np.asarray(x)[None] for x in inputs])
        spent = ev.work
        # the last loops first: a program's main loop usually comes after what it precomputes,
        # and a run that spends the budget before the others still gives what it measured
        every = [i for i, steps in sorted(runs.steps.items(), reverse=True)
                 if steps and all(s == want for s in steps)]
        candidates = every[:MAX_CANDIDATES]
        loops = []
        total = 0
        # loops past MAX_CANDIDATES are not followed: like a spent budget, they count only if
        # none followed passes (the parent fails closed then, and says why)
        unfinished = len(every) > MAX_CANDIDATES
        V = want + 1  # row k: after k steps; row `want`: the whole run
        for index in candidates:
            ev = Evaluator(module, ir, hlo, V, {})
            ev.max_work = max_work - spent
            ev.stops = {index: np.arange(V)}
            ev.work = 0
            meter["ev"] = ev
            try:
                outs = ev.run([np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs])
            except names["OverBudget"]:
                if not loops:
                    raise
                # the loops not yet followed count only if none followed passes (the parent)
                spent += ev.work
                unfinished = True
                break
            spent += ev.work
            try:
                rows = [_row(outs, k) for k in range(V)]
            except ValueError:
                raise Unobservable(f"outputs of more than {MAX_ROW_ELEMENTS} elements") from None
            total += sum(len(r) for r in rows)
            if total > MAX_RUN_ELEMENTS:
                raise Unobservable(f"more than {MAX_RUN_ELEMENTS:,} output elements over the "
                                   f"steps of its loops")
            sizes = [int(np.asarray(o[0]).size) * (2 if o.dtype.kind == "c" else 1)
                     for o in outs]
            loops.append({"index": index, "steps": want, "rows": rows, "sizes": sizes})
    ev.work = spent  # the caller counts what all the runs took
    return {"status": "ok", "work": spent, "trajectory": loops,
            "trajectory_unfinished": unfinished}
