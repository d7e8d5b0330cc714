"""Stage B's observer, trajectories: a loop's answer after each of its steps (issue 41).

A loop requirement is about what the loop computes step by step: sigma after k power
iterations, attention over the first k key blocks, the averages of the first k rows. The
representation-free way to read that is to let the program answer it: stop the loop after k
steps and run the program's own code after the loop on whatever the loop carries then. Row k of
one evaluator run leaves the loop after k steps (every run of that while op, nested or not),
row 0 after none, the last row runs it to the end; the parent compares each row's outputs with
the reference's, stopped the same way (jaxjudge.analysis.trajectory).

Which loop: every while op each of whose runs on the plain run took exactly the requirement's
trip count (up to MAX_CANDIDATES of them, the last in the program first), each with variants
of its own, all stopped in one evaluator run (more loops than that: `trajectory_unfinished`).
Work done at step 0, later steps that idle, tables or closed forms after the loop all give
another answer after k steps than k iterations; a Gram matrix built at step 0, a skipped no-op
update or a pipelined fold give the same one.

A kick run (`_kick_run`) holds, beside its kicked variants, the unkicked twins they follow
(`Evaluator.shadow`): a kicked variant takes every decision of its twin, so the program cannot
see the kick and answer it with work the real run skips.

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


# Every carried value is kicked: more variants than this fail the requirement closed (a
# carried value left out could be the one a cheat reads its answers from).
MAX_KICK_VARIANTS = 768


class _LoopRun:
    """One run of a loop, as the evaluator's recorder interface wants it (observe.LoopRecord's:
    `work` per step, `skips`, `step` after each step, `finish` at the end); a trajectory
    run's recorders only override what they read."""

    def __init__(self) -> None:
        self.work: list[int] = []
        self.skips: list[int | None] = []

    def step(self, s: int, old, new, clean, injected) -> None:
        pass

    def finish(self, carry):
        return carry


class _Capture:
    """The stop run's recorder: what each candidate's first run carries after the kick
    steps, read from the variant that runs it to its end (`full`: op index -> variant)."""

    def __init__(self, full: dict[int, int], steps: set[int]) -> None:
        self.full, self.steps = full, steps
        self.states: dict[int, dict[int, dict[int, np.ndarray]]] = {}

    def __call__(self, ev, index: int, carry, passing) -> "_Captured":
        index = int(index)
        first = index in self.full and index not in self.states
        if first:
            self.states[index] = {}
        return _Captured(self, index if first else None, carry, set(passing))


class _Captured(_LoopRun):
    """A candidate's first run: keeps what it carries after each kick step."""

    def __init__(self, capture: _Capture, index: int | None, carry, passing: set[int]) -> None:
        super().__init__()
        self.capture, self.index, self.passing = capture, index, passing
        self._keep(0, carry)

    def _keep(self, k: int, carry) -> None:
        if self.index is None or k not in self.capture.steps:
            return
        v = self.capture.full[self.index]
        kept = {}
        for slot, x in enumerate(carry):
            value = _floating(np.asarray(x[v] if len(x) > v else x[0]))
            if (slot in self.passing or value.dtype.kind not in "fc" or not 0 < value.size
                    <= MAX_ROW_ELEMENTS // 2 or not np.isfinite(value).all()
                    or not value.any()):
                continue  # an input passed along, a counter, too large, or nothing to kick
            kept[slot] = np.array(value)
        self.capture.states[self.index][k] = kept

    def step(self, s: int, old, new, clean, injected) -> None:
        self._keep(s + 1, new)


def _floating(value: np.ndarray) -> np.ndarray:
    """A carried value as the floating numbers it holds: itself, or the float reading of a
    32- or 64-bit integer value whose every nonzero element reads as a normal finite float (a
    float's bits carried as integers are kicked as that float; a counter's small integers
    read as subnormals, and stay integers)."""
    if value.dtype.kind not in "iu" or value.dtype.itemsize not in (4, 8):
        return value
    f = np.dtype(np.float32 if value.dtype.itemsize == 4 else np.float64)
    seen = np.ascontiguousarray(value).view(f)
    with np.errstate(all="ignore"):
        nonzero = seen[seen != 0]
        if nonzero.size and np.isfinite(nonzero).all() and (
                np.abs(nonzero) >= np.finfo(f).tiny).all():
            return seen
    return value


def _kick_run(module, ir, hlo, names, inputs, loops, capture: _Capture,
              signs: tuple[int, ...], max_work: int, meter: dict, seed: int,
              restart: tuple[int, int, bool] | None = None) -> int:
    """One run with a variant per (loop, step, carried value, sign): the loop's first run has
    that value kicked after that step. Fills each loop's `states` and `kicks`; returns the
    work it took. restart (input, output positions): also read the kicked state out as that
    output at once (the loop stopped right after the kick) and start the program from it
    (`_restart_run`), which fills `restarts`."""
    plan = []  # (loop, k, slot, sign)
    total = 0
    for loop in loops:
        for k, kept in sorted(capture.states.get(loop["index"], {}).items()):
            for slot, value in kept.items():
                flat = (np.concatenate([value.real.ravel(), value.imag.ravel()])
                        if value.dtype.kind == "c" else value.ravel())
                loop["states"].append({"step": k, "slot": slot,
                                       "values": [float(f) for f in flat.tolist()]})
                total += flat.size
                plan += [(loop, k, slot, sign) for sign in signs]
    if not plan:
        return 0
    if len(plan) > MAX_KICK_VARIANTS:
        raise names["Unobservable"](f"more than {MAX_KICK_VARIANTS} values carried by its "
                                    f"loops to change one at a time")
    P = len(plan)
    # variants P + 2i + r: plan[i]'s kick, the loop left r steps after it (what the program's
    # own code reads the kicked state as, at once or one step on: a loop that carries a copy
    # of u to hand out, beside its state w^T u, reads the change out one step on)
    kicked = 3 * P if restart else P
    # then the unkicked twins each kicked variant follows (Evaluator.shadow): the plain run,
    # and the plain run stopped where each readout leaves its loop
    twins: dict[tuple[int, int] | None, int] = {None: kicked}
    follows = [kicked] * kicked
    if restart:
        for v, (loop, k, _, _) in enumerate(plan):
            for r in READ_AFTER:
                key = (loop["index"], min(k + r, loop["steps"]))
                follows[P + 2 * v + r] = twins.setdefault(key, kicked + len(twins))
    V = kicked + len(twins)
    ev = names["Evaluator"](module, ir, hlo, V, {})
    ev.max_work = max_work
    ev.kick_seed = seed
    ev.shadow = np.array(follows + list(range(kicked, V)))
    for v, (loop, k, slot, sign) in enumerate(plan):
        at = ev.kicks.setdefault(loop["index"], {}).setdefault(k, [])
        at.append((v, slot, sign))
        if restart:
            at += [(P + 2 * v + r, slot, sign) for r in READ_AFTER]
    if restart:
        for loop in loops:
            left = np.full(V, MAX_ROWS + 1)
            for v, (owner, k, _, _) in enumerate(plan):
                if owner is loop:
                    for r in READ_AFTER:
                        left[P + 2 * v + r] = min(k + r, loop["steps"])
            for key, twin in twins.items():
                if key is not None and key[0] == loop["index"]:
                    left[twin] = key[1]
            ev.stops[loop["index"]] = left
    meter.setdefault("runs", []).append(ev)
    outs = ev.run([np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs])
    for v, (loop, k, slot, sign) in enumerate(plan):
        row = _row(outs, v)
        total += len(row)
        if total > MAX_RUN_ELEMENTS:
            raise names["Unobservable"](f"more than {MAX_RUN_ELEMENTS:,} output elements over "
                                        f"the changes to what its loops carry")
        loop["kicks"].append({"step": k, "slot": slot, "sign": sign, "row": row})
    spent = ev.work
    if restart:
        read = {(v, r): np.asarray(outs[restart[1]][P + 2 * v + r])
                for v in range(P) for r in READ_AFTER}
        for v, (loop, k, slot, sign) in enumerate(plan):
            for r in READ_AFTER:
                if k + r > loop["steps"]:
                    continue
                row = _row(outs, P + 2 * v + r)
                total += len(row)
                if total > MAX_RUN_ELEMENTS:
                    raise names["Unobservable"](f"more than {MAX_RUN_ELEMENTS:,} output "
                                                f"elements over the changes to what its loops "
                                                f"carry")
                loop["readouts"].append({"step": k, "slot": slot, "sign": sign, "read": r,
                                         "row": row})
        scale = _restart_scale(seed, np.asarray(inputs[restart[0]])) if restart[2] else None
        spent += _restart_run(module, ir, hlo, names, inputs, plan, read, restart[0],
                              max_work - spent, meter, total, scale)
    return spent


READ_AFTER = (0, 1)  # the kicked state read out at once, or one step on
RESTART_OFFSETS = (0, -1, 1)  # a pipelined loop reads its state out one step early or late


def _restart_scale(seed: int, start: np.ndarray) -> float | None:
    """The norm a scale-free restart input is brought to: the test input's, times a factor in
    [1/2, 2] drawn from the installation's secret seed (a restart input is then no unit
    vector a program could tell from a test's input by its norm). None: the input is zero."""
    norm = float(np.linalg.norm(np.asarray(start, dtype=np.float64)))
    if not np.isfinite(norm) or norm == 0:
        return None
    return norm * float(2.0 ** np.random.default_rng([int(seed), 7]).uniform(-1.0, 1.0))


def _restart_run(module, ir, hlo, names, inputs, plan, read: dict, arg: int, max_work: int,
                 meter: dict, total: int, scale: float | None = None) -> int:
    """The program started from each kicked state as its own code reads it out (`read`:
    (plan index, steps after the kick) -> that output, put in input `arg`), with the loop
    stopped after the steps the kicked run had left (n - k - r, one more or one fewer): a
    loop whose steps compute from what it carries goes on from the changed state as it
    starts from it; a table, a counter or a junk value it carries instead does not. A
    readout of zeros or of non-finite values starts nothing (nothing written yet where the
    program reads it: it vouches for nothing). `scale`: a readout is brought to that norm
    first (a scale-free input). Fills each loop's `restarts`; returns the work it took."""
    Unobservable = names["Unobservable"]
    start = np.asarray(inputs[arg])
    if any(x.shape != start.shape for x in read.values()):
        raise Unobservable("the output it is restarted from is not the shape of its input")
    runs = [(i, r, o) for (i, r), x in sorted(read.items())
            if np.isfinite(x).all() and x.any() and plan[i][1] + r <= plan[i][0]["steps"]
            for o in RESTART_OFFSETS]
    if not runs:
        return 0
    V = len(runs)
    given = [np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs]
    starts = [np.asarray(read[i, r]) for i, r, _ in runs]
    if scale is not None:
        starts = [x * (scale / float(np.linalg.norm(x.astype(np.complex128)))) for x in starts]
    given[arg] = np.stack(starts).astype(start.dtype)
    ev = names["Evaluator"](module, ir, hlo, V, {})
    ev.max_work = max_work
    loops = {id(loop): loop for loop, _, _, _ in plan}
    for loop in loops.values():
        left = np.full(V, MAX_ROWS + 1)
        n = loop["steps"]
        for v, (i, r, o) in enumerate(runs):
            owner, k, _, _ = plan[i]
            if owner is loop:
                left[v] = min(max(n - k - r + o, 0), n)
        ev.stops[loop["index"]] = left
    meter.setdefault("runs", []).append(ev)
    outs = ev.run(given)
    for v, (i, r, o) in enumerate(runs):
        loop, k, slot, sign = plan[i]
        row = _row(outs, v)
        total += len(row)
        if total > MAX_RUN_ELEMENTS:
            raise Unobservable(f"more than {MAX_RUN_ELEMENTS:,} output elements over the "
                               f"restarts from what its loops carry")
        loop["restarts"].append({"step": k, "slot": slot, "sign": sign, "read": r,
                                 "offset": o, "row": row})
    return ev.work


class _Runs:
    """The loop recorder for the plain run: per while op, the steps of each of its runs."""

    def __init__(self) -> None:
        self.steps: dict[int, list[int]] = {}

    def __call__(self, ev, index: int, carry, passing) -> "_Run":
        return _Run(self, int(index))


class _Run(_LoopRun):
    """One loop run of the plain run: counts its steps."""

    def __init__(self, runs: _Runs, index: int) -> None:
        super().__init__()
        self.runs, self.index = runs, index
        self.steps = 0

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
               ir, hlo, mlir_context, max_work: int, meter: dict,
               at: list[int] | None = None, known: dict | None = None,
               kick_at: list[int] | None = None,
               kick_signs: tuple[int, ...] = (1, -1), kick_seed: int = 0,
               restart: tuple[int, int, bool] | None = None) -> dict[str, Any]:
    """The outputs of `text`'s main on `inputs` with each candidate loop (every run of it took
    `want` steps) stopped after 0, 1, ..., want steps (or after each count in `at`: 0 and
    `want` always among them). `names`: evaluator.py's namespace.

    Returns {"status": "ok", "work", "trajectory": [{"index", "steps", "rows", "sizes", "at"}],
    "trajectory_unfinished"}; rows[i] are the outputs after at[i] steps, `sizes` each output's
    share of a row. The runs share `max_work` (each is added to `meter["runs"]`, for the
    caller's count). known: the candidates found by an earlier run of the same `text`
    and trip count (the grade's runs share it): a run stopped after a few steps takes them
    rather than running the program once more to find them (a loop that runs other steps on
    this test's data is then stopped where it does not answer the reference's: it fails).

    kick_at: also, per candidate, the values its first run carries after each of these steps
    (`states`: {"step", "slot", "values"}) and the outputs with one of them kicked there
    (`kicks`: {"step", "slot", "sign", "row"}; evaluator_loops.kick, both ways or as
    kick_signs says; drawn from kick_seed): how the steps after k answer a change of what the
    loop carries. restart (input, output positions among `inputs` and the outputs): also the
    program's outputs with the loop left at once or one step after each kick (`readouts`:
    {"step", "slot", "sign", "read", "row"}) and the program started from each kicked state
    as that output reads it (`restarts`: {"step", "slot", "sign", "read", "offset", "row"},
    stopped after n - k - read + offset steps)."""
    Evaluator, Unobservable = names["Evaluator"], names["Unobservable"]
    if not 1 <= want < MAX_ROWS:
        raise Unobservable(f"a loop of {want} steps (the grader follows 1 to {MAX_ROWS - 1})")
    stops = sorted({0, want, *(int(k) for k in at or range(want + 1) if 0 <= int(k) <= want)})
    spent = 0
    known = {} if known is None else known
    with mlir_context:
        module = known.get(("module", text))
        if module is None:
            module = known[("module", text)] = ir.Module.parse(text)
        every = known.get(("loops", text, want)) if at is not None else None
        if every is None:
            runs = _Runs()
            ev = Evaluator(module, ir, hlo, 1, {}, recorder=runs)
            ev.max_work = max_work
            meter.setdefault("runs", []).append(ev)
            ev.run([np.asarray(x)[None] for x in inputs])
            spent = ev.work
            # the last loops first: a program's main loop usually comes after what it
            # precomputes
            every = [i for i, steps in sorted(runs.steps.items(), reverse=True)
                     if steps and all(s == want for s in steps)]
            known[("loops", text, want)] = every
        candidates = every[:MAX_CANDIDATES]
        # loops past those are not followed: they count only if none followed passes (the
        # parent fails closed then, and says why)
        unfinished = len(every) > MAX_CANDIDATES
        # One run for all candidates: variant c * S + i leaves candidate c after stops[i] steps
        # and runs the others to their end. A program's ops are run once for all of them (the
        # evaluator's cost per op, not per element, is most of a small program's work).
        S = len(stops)
        V = S * len(candidates)
        loops = []
        capture = _Capture({index: c * S + S - 1 for c, index in enumerate(candidates)},
                           set(kick_at or ()))
        if candidates:
            ev = Evaluator(module, ir, hlo, V, {}, recorder=capture if kick_at else None)
            ev.max_work = max_work - spent
            never = np.full(V, MAX_ROWS + 1)
            for c, index in enumerate(candidates):
                left = never.copy()
                left[c * S:(c + 1) * S] = stops
                ev.stops[index] = left
            meter.setdefault("runs", []).append(ev)
            outs = ev.run([np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs])
            spent += ev.work
            sizes = [int(np.asarray(o[0]).size) * (2 if o.dtype.kind == "c" else 1)
                     for o in outs]
            total = 0
            for c, index in enumerate(candidates):
                try:
                    rows = [_row(outs, c * S + i) for i in range(S)]
                except ValueError:
                    raise Unobservable(f"outputs of more than {MAX_ROW_ELEMENTS} "
                                       f"elements") from None
                total += sum(len(r) for r in rows)
                if total > MAX_RUN_ELEMENTS:
                    raise Unobservable(f"more than {MAX_RUN_ELEMENTS:,} output elements over "
                                       f"the steps of its loops")
                loops.append({"index": index, "steps": want, "rows": rows, "sizes": sizes,
                              "at": stops, "states": [], "kicks": [], "readouts": [],
                              "restarts": []})
        if kick_at and loops:
            spent += _kick_run(module, ir, hlo, names, inputs, loops, capture, kick_signs,
                               max_work - spent, meter, kick_seed, restart)
    return {"status": "ok", "work": spent, "trajectory": loops,
            "trajectory_unfinished": unfinished}
