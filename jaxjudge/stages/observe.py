"""Stage B's observer (TRUSTED code, untrusted data): what the program does when it runs.

The program-level rules prove requirements from the program text; a requirement about what the
program *does* (a loop that does its work at every step, reading one slice of an input per
step) can be walked around by a copy or a gate the text analysis cannot follow. So stage B also
runs the verified program on one test's inputs here, on an evaluator of our own that sees every
step of every loop, in many variants at once:

- variant 0 is the test's inputs;
- a "group" variant changes one slice of the named inputs (rows `g*size .. (g+1)*size` along
  their axis): where its values differ from variant 0 is where that slice reached;
- an "inject" variant s changes, at step s of every outermost loop only, the values the loop
  passes along unchanged from outside (the inputs a scan or fori_loop reads): whether the
  loop's state at the end of step s differs says whether step s's work on them was kept.

A value differs when its numbers differ, so a copy by gather, permutation, convolution or a
round trip through complex numbers carries the change, and a gate made of data zeros, a
`min(|x|, 0)`, or a product with zero carries none: this is dependence as executed, not as
written. Each outermost loop's record (per step, per group) goes back to the parent, which
decides (jaxjudge.analysis.observed). Any op we do not evaluate, a run past its own budget (a
multiple of the reference's work on the same run, given by the parent) or past the loop runs
the observer records ends the observation with a reason, and its requirement fails closed:
no run is skipped, and none draws on a budget another run could drain.

Run by path from execute.py (runpy): stdlib and numpy only, plus jaxlib's MLIR bindings that
stage B already loaded, passed in.
"""

import functools
import hashlib
import importlib.util
import math
import os
from typing import Any

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str):
    """A sibling file as a module, through the import machinery (its compiled bytecode)."""
    spec = importlib.util.spec_from_file_location(f"jaxjudge_{name}",
                                                  os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_ev = vars(_load("evaluator"))
Evaluator = _ev["Evaluator"]
Unobservable = _ev["Unobservable"]
OverBudget = _ev["OverBudget"]
RecordsFull = _ev["RecordsFull"]
MAX_VARIANTS = _ev["MAX_VARIANTS"]
MAX_WORK = _ev["MAX_WORK"]
_changed = _ev["_changed"]
_moved = _ev["_moved"]
_load("evaluator_regions").install(Evaluator, Unobservable)
_load("evaluator_loops").install(Evaluator, _ev)
_load("evaluator_follow").install(Evaluator, _ev)
_kn = vars(_load("observe_knockouts"))
Knockouts = _kn["Knockouts"]
KNOCK_LOOPS, KNOCK_PARTS, KNOCK_ROWS = _kn["KNOCK_LOOPS"], _kn["KNOCK_PARTS"], _kn["KNOCK_ROWS"]
Owners = _load("observe_owners").Owners
trajectory = _load("observe_trajectory").trajectory


def observe(text: str, inputs: list[np.ndarray], groups: list[dict[str, int]],
            inject_steps: int, ir, hlo, mlir_context,
            watched: list[int] | None = None, own: bool = False,
            max_work: int | None = None,
            knockouts: bool = False, meter: dict | None = None) -> dict[str, Any]:
    """Run `text`'s main on `inputs` (main's arguments, in order) and its variants.

    groups: [{"arg": main argument index, "axis": a, "size": rows per group, "count": n}]; all
    entries' group g are changed together (k and v's block g). inject_steps: how many steps of
    each loop get an inject variant, which changes at that step only the values the loop
    passes along that move with the watched inputs (main argument indices; default: the
    grouped ones). own: also count, per group, the ops whose result moved with that group
    only (code written once per index: a Python loop unrolled into the program). max_work:
    a smaller budget for this run; the result's "work" is the work it took.
    knockouts: also the rows that say which loop results the outputs need (Knockouts)."""
    count = max((g["count"] for g in groups), default=0)
    count = min(count, 64)
    inject_steps = min(inject_steps, 64)
    whole = 1 + count
    V = _variants(count, inject_steps, knockouts)
    if V > MAX_VARIANTS:
        raise Unobservable("too many variants")
    rng = np.random.default_rng(1205)
    args = [np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs]
    for g in range(count):
        for spec in groups:
            arr = args[spec["arg"]]
            lo, hi = g * spec["size"], (g + 1) * spec["size"]
            axis = spec["axis"] + 1
            index = [1 + g] + [slice(None)] * (arr.ndim - 1)
            index[axis] = slice(lo, hi)
            part = arr[tuple(index)]
            arr[tuple(index)] = _changed(part, rng)
    for i in (watched if watched is not None else sorted({g["arg"] for g in groups})):
        args[i][whole] = _changed(args[i][whole], rng)
    inject = {(level, s): 2 + count + level * inject_steps + s  # outermost 0, nested 1
              for level in range(2) for s in range(inject_steps)}
    knock = None
    if _knock_rows(count, knockouts):  # rows that start as the whole variant
        knock = Knockouts(V - _knock_rows(count, knockouts), count)
        for i in range(len(args)):
            args[i][knock.base:] = args[i][whole]
    with mlir_context:
        module = ir.Module.parse(text)
        ev = Evaluator(module, ir, hlo, V, inject, count, whole,
                       functools.partial(LoopRecord, knock=knock))
        if max_work is not None:
            ev.max_work = max_work
        if meter is not None:  # the caller reads the work done, however the run ends
            meter.setdefault("runs", []).append(ev)
        owners = Owners(ev) if own and count else None
        ev.owner = owners
        outs = ev.run(args)
    return {**_summary(ev, outs, count, groups, inputs),
            "private": owners.private() if owners is not None else [],
            "private_looped": owners.private(looped=True) if owners is not None else [],
            "chunks": owners.chunks() if owners is not None else 0,
            "work": ev.work}


def _variants(count: int, inject_steps: int, knockouts: bool) -> int:
    """The rows a run evaluates: variant 0, the group variants, the whole one, the inject
    variants of outermost and nested loops, the knockout rows."""
    return 2 + count + 2 * inject_steps + _knock_rows(count, knockouts)


def _knock_rows(count: int, knockouts: bool) -> int:
    """The knockout rows a run evaluates: none without groups to slice."""
    return KNOCK_LOOPS * KNOCK_ROWS if knockouts and count else 0




def _variant(x: np.ndarray, v: int) -> np.ndarray:
    """Variant v of a value; one the variants never reached (a constant output, such as the
    zero gradient of a parameter the program does not read) keeps a single copy."""
    return x[v] if len(x) > v else x[0]


def _moved_count(values: list[np.ndarray], v: int) -> int:
    return int(sum(int(_moved(_variant(x, v), x[0]).sum()) for x in values))


def _moved_size(values: list[np.ndarray], v: int, base: int = 0) -> float:
    """How far variant v moved the values: the largest change of an element, relative to the
    largest magnitude in its value (1 for a non-float value that changed or a NaN that
    appeared); 0 when nothing moved. A step whose reads reach the outputs only through a tiny
    nudge moves them by about the nudge. base: the variant compared with (0)."""
    size = 0.0
    for x in values:
        a, b = _variant(x, v), _variant(x, base)
        moved = _moved(a, b)
        if not moved.any():
            continue
        if a.dtype.kind not in "fc":
            return 1.0
        with np.errstate(all="ignore"):
            diff = np.abs(_wide(a) - _wide(b))
            scale = float(np.nanmax(np.abs(_wide(b)))) if b.size else 0.0
        if not np.isfinite(diff[moved]).all() or not np.isfinite(scale) or scale == 0.0:
            return 1.0
        size = max(size, min(1.0, float(diff[moved].max()) / scale))
    return size


def _size3(values: list[np.ndarray], v: int, base: int = 0) -> float:
    """`_moved_size` to 3 significant digits: what the summary reports (the parent's
    thresholds are far coarser, and short numbers keep the summary small)."""
    return float(f"{_moved_size(values, v, base=base):.3g}")


MAX_SLOTS = 24  # a loop's carried values recorded one by one (the rest together, as the last)


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


ROUNDING = 1e-4  # of the values' size: a difference of updates below it is rounding


def _updates_differ(old: np.ndarray, new: np.ndarray, g: int) -> np.ndarray:
    """Per group variant and element: did this step update the element differently from
    variant 0, beyond the rounding of adding the same update to a different value (acc_g + u -
    acc_g is not u in float32)? Integers and booleans compare exactly. Shape (g, elements)."""
    if new.dtype.kind not in "fc":
        upd = new.astype(np.int64) - old.astype(np.int64)
        return (upd[1:] != upd[0:1]).reshape(g, -1)
    o, n = _wide(old), _wide(new)
    upd = n - o
    gap = np.abs(upd[1:] - upd[0:1])
    size = np.maximum(np.maximum(np.abs(o[1:]), np.abs(o[0:1])),
                      np.maximum(np.abs(n[1:]), np.abs(n[0:1])))
    with np.errstate(invalid="ignore"):
        differ = (gap > ROUNDING * size) | (np.isnan(upd[1:]) != np.isnan(upd[0:1]))
    return differ.reshape(g, -1)


class _ElementSteps:
    """Per group and element of one carried value: at how many steps the group alone (not
    every group at once: a sum of all inputs added at every step) updated the element
    differently, and the first. A group all of whose own elements move at one and the same
    step is taken up at that step, whatever else the value carries."""

    def __init__(self, g: int, elements: int) -> None:
        self.count = np.zeros((g, elements), dtype=np.int32)
        self.first = np.full((g, elements), -1, dtype=np.int32)

    def add(self, s: int, differ: np.ndarray) -> None:
        own = differ & ~differ.all(axis=0)
        self.count += own
        self.first[(self.first < 0) & own] = s

    def single(self) -> list[int | None]:
        """Per group: the step at which every element it moved alone moved, once (None: none,
        or at several steps)."""
        out: list[int | None] = []
        for count, first in zip(self.count, self.first, strict=True):
            moved = count > 0
            steps = np.unique(first[moved])
            out.append(int(steps[0]) if moved.any() and (count[moved] == 1).all()
                       and len(steps) == 1 else None)
        return out


class LoopRecord:
    """What one loop run did, per carried value ("slot") of its state (not the ones it passes
    along): for each group, the steps whose update of the slot differs from variant 0's (a
    step that only passes the value along, even one that moved before the loop, updates
    nothing); per step, whether the inject variant's change reached the slot; and whether
    the slot moves with the watched inputs at the end (it carries their work)."""

    def __init__(self, ev: Evaluator, index: int, carry: list[np.ndarray],
                 passing: list[int], knock: Knockouts | None = None) -> None:
        self.ev, self.index, self.depth = ev, int(index), int(ev.depth)
        self.knock = knock
        self.knock_row: int | None = None  # its part 0's knockout row, if it has them
        self.steps = 0
        self.work: list[int] = []
        self.state = [i for i in range(len(carry)) if i not in passing]
        self.slot = {i: min(k, MAX_SLOTS - 1) for k, i in enumerate(self.state)}
        n = min(len(self.state), MAX_SLOTS)
        g = ev.groups
        self.first: list[list[int | None]] = [[None] * g for _ in range(n)]
        self.touches = [[0] * g for _ in range(n)]
        # Per group, over all the values it carries: the step its change entered the update
        # again after a step without it (a loop that folds each index in beside a sum of all
        # of them at step 0), or first at a step not every group's did and then left it while
        # another's was in (each index folded in over two steps). A loop over another
        # dimension masked by data (keys past each example's length) takes each group up
        # for good once its mask opens: neither.
        self.enters: list[int | None] = [None] * g
        self._left = np.zeros(g, dtype=bool)
        self._again = np.zeros(g, dtype=bool)  # entered after a step without it
        self._ever = np.zeros(g, dtype=bool)
        self._before = np.zeros(g, dtype=bool)  # the step before's
        self._gap = np.zeros(g, dtype=bool)  # a step without it since it first entered
        self.elements: dict[int, _ElementSteps] = {}
        self.kept: list[list[bool | None]] = [[] for _ in range(n)]
        self.injects: list[int | None] = []  # per injected step: its clean variant, if any
        self.live = [False] * n
        self.entry = [_moved_count(carry, 1 + k) for k in range(g)]
        self.entry_max = [max((int(_moved(c[1 + k], c[0]).sum()) for c in carry), default=0)
                          for k in range(g)]
        self.exit: list[int] = []
        self.exit_parts: list[list[int]] = []  # per knockout part, per group
        self.slot_part: list[int | None] = [None] * n  # per slot: its knockout part

    def step(self, s: int, old: list[np.ndarray], new: list[np.ndarray], clean: int | None,
             injected: bool) -> None:
        self.steps = s + 1
        g = self.ev.groups
        touched = np.zeros((len(self.first), g), dtype=bool)
        kept = [False] * len(self.first)
        for i in self.state:
            k = self.slot[i]
            if g:
                differ = _updates_differ(old[i][: 1 + g], new[i][: 1 + g], g)
                touched[k] |= differ.any(axis=1)
                if i not in self.elements:
                    self.elements[i] = _ElementSteps(g, differ.shape[1])
                self.elements[i].add(s, differ)
            if clean is not None:
                kept[k] = kept[k] or bool(_moved(new[i][clean], new[i][0]).any())
        for k in range(len(self.first)):
            for grp in np.flatnonzero(touched[k]):
                self.touches[k][grp] += 1
                if self.first[k][grp] is None:
                    self.first[k][grp] = s
            if injected:
                self.kept[k].append(kept[k] if clean is not None else None)
        if g:
            self._entered(s, touched.any(axis=0))
        if injected:
            self.injects.append(clean)

    def _entered(self, s: int, now: np.ndarray) -> None:
        """Record where groups entered the update (`enters`); `now`: per group, whether its
        change moved this step's update of any carried value."""
        waiting = np.array([e is not None for e in self.enters]) & ~self._again
        if now.any():
            self._left |= waiting & ~now
        if s and 0 < now.sum() < len(now):
            for grp in np.flatnonzero(now & ~self._before):
                if self.enters[grp] is None:
                    self.enters[grp] = s
                    self._again[grp] = self._ever[grp]
        self._gap |= self._ever & ~now
        self._ever |= now
        self._before = now

    def for_good(self) -> list[bool]:
        """Per group: first in the update after step 0, and in it at every step since, as a
        loop over another dimension masked by data takes it up (not a visit)."""
        first = [min((f[grp] for f in self.first if f[grp] is not None), default=None)
                 for grp in range(self.ev.groups)]
        return [bool(f) and not gap for f, gap in zip(first, self._gap, strict=True)]

    def finish(self, carry: list[np.ndarray]) -> list[np.ndarray]:
        """Record what the run's results carry; return them, with this op's knockout rows
        set back (Knockouts)."""
        g = self.ev.groups
        per_value = {i: [_moved_count([carry[i]], 1 + k) for k in range(g)] for i in self.state}
        self.exit = [sum(moved[k] for moved in per_value.values()) for k in range(g)]
        part = (self.knock.parts_of(self.index, {i: sum(m) for i, m in per_value.items()})
                if self.knock is not None else
                {i: min(self.slot[i], KNOCK_PARTS - 1) for i in self.state})
        parts = min(len(self.state), KNOCK_PARTS)
        for i in self.state:  # a slot that stands for several values: the most needed part
            k = self.slot[i]
            if self.slot_part[k] is None or part[i] < self.slot_part[k]:
                self.slot_part[k] = part[i]
        self.exit_parts = [[sum(per_value[i][k] for i in self.state if part.get(i) == p)
                            for k in range(g)] for p in range(parts)]
        whole = self.ev.whole
        for i in self.state:
            if whole is not None and carry[i].dtype.kind in "fc" and _moved(
                    carry[i][whole], carry[i][0]).any():
                self.live[self.slot[i]] = True
        if self.knock is not None and whole is not None:
            self.knock_row = self.knock.first_row(self.index, self.steps)
        if self.knock_row is None:
            return carry
        carry = list(carry)
        keep = self.knock_row + KNOCK_PARTS
        for i in self.state:
            c = np.array(carry[i])
            c[self.knock_row + part[i]] = c[0]
            for p in range(min(parts, KNOCK_PARTS - 1)):
                if p != part[i]:
                    c[keep + p] = c[0]
            carry[i] = c
        return carry

    def alone(self, outs: list[np.ndarray]) -> list[float | None]:
        """Per single part (not the rest): how far the outputs are from the whole variant's
        with only that part's change kept (0: it alone carries the loop's share of them)."""
        if self.knock_row is None:
            return []
        keep = self.knock_row + KNOCK_PARTS
        return [_size3(outs, keep + p, base=self.ev.whole)
                for p in range(min(len(self.exit_parts), KNOCK_PARTS - 1))]

    def needed(self, outs: list[np.ndarray]) -> list[float | None]:
        """Per knockout part: how far setting it back moved the outputs from the whole
        variant's (3 significant digits; None: this run has no knockout rows)."""
        if self.knock_row is None:
            return [None] * len(self.exit_parts)
        return [_size3(outs, self.knock_row + p, base=self.ev.whole)
                for p in range(len(self.exit_parts))]

    def _single(self, k: int) -> list[int | None]:
        """Per group, over the values slot k stands for: the earliest step at which one of
        them had every element the group moved alone updated at that step only."""
        out: list[int | None] = [None] * self.ev.groups
        for i, rec in self.elements.items():
            if self.slot[i] != k:
                continue
            for grp, s in enumerate(rec.single()):
                if s is not None and (out[grp] is None or s < out[grp]):
                    out[grp] = s
        return out

    def reached(self, outs: list[np.ndarray]) -> list[bool | None]:
        """Per injected step of an outermost loop: did changing what it read move any of the
        program's outputs (a change kept in a value the program then drops reaches none)?
        None where unknown; nested loops share their variants across runs: none."""
        if self.depth:
            return []
        return [None if v is None else _moved_count(outs, v) > 0 for v in self.injects]

    def summary(self, outs: list[np.ndarray]) -> dict[str, Any]:
        return {"index": self.index, "depth": self.depth, "steps": self.steps,
                "reached": self.reached(outs),
                "entry": self.entry, "entry_max": self.entry_max, "exit": self.exit,
                "exit_parts": self.exit_parts, "needed": self.needed(outs),
                "alone": self.alone(outs),
                "work": [int(w) for w in self.work],
                "enters": [e if again or left else None for e, again, left in zip(
                    self.enters, self._again, self._left, strict=True)],
                "for_good": self.for_good(),
                "slots": [{"first": f, "touches": t, "kept": k, "live": lv,
                           "single": self._single(n), "part": pt}
                          for n, (f, t, k, lv, pt) in enumerate(zip(
                              self.first, self.touches, self.kept, self.live, self.slot_part,
                              strict=True))]}


def _summary(ev: Evaluator, outs, count: int, groups, inputs):
    group_elements = 0
    for spec in groups:
        shape = np.shape(inputs[spec["arg"]])
        group_elements += spec["size"] * math.prod(d for i, d in enumerate(shape)
                                                   if i != spec["axis"])
    return {
        "status": "ok",
        "group_elements": int(group_elements),
        "groups": count,
        "outputs": [_moved_count(outs, 1 + g) for g in range(count)],
        "loops": [rec.summary(outs) for rec in ev.loops],
    }


MAX_TAPS = 32
# Elements of each tapped op changed one at a time (every one of a small activation: the remat
# problem's B x H is at most 20), within ONE_VARIANTS for all the ops together.
ONE_ELEMENTS = 24
ONE_VARIANTS = 96


def observe_activations(text: str, inputs: list[np.ndarray], op_name: str, ir, hlo,
                        mlir_context, max_work: int | None = None,
                        meter: dict | None = None) -> dict[str, Any]:
    """Change the result of each `op_name` op (every run of it) in a variant of its own, and
    say which outputs move, and how far (relative to each output's size): an activation
    recomputed for the backward pass moves the gradients and not the loss; the forward one
    moves both, and a decoy moves neither."""
    with mlir_context:
        module = ir.Module.parse(text)
        found: list[Any] = []

        def walk(op) -> None:
            if op.name == op_name:
                found.append(op)
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        walk(inner.operation)

        walk(module.operation)
        if len(found) > MAX_TAPS:
            raise Unobservable(f"more than {MAX_TAPS} {op_name} ops")
        n = len(found)
        k = max(1, min(ONE_ELEMENTS, ONE_VARIANTS // max(n, 1)))  # one-element variants per op
        V = 1 + n + n * k
        ev = Evaluator(module, ir, hlo, V, {})
        if max_work is not None:
            ev.max_work = max_work
        if meter is not None:
            meter.setdefault("runs", []).append(ev)
        # the elements changed alone, from one the program text picks (past ONE_ELEMENTS, a
        # factor recomputed from all but a few would go unseen only if they are those)
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        ev.taps = {op: (1 + i, range(1 + n + i * k, 1 + n + (i + 1) * k), seed)
                   for i, op in enumerate(found)}
        args = [np.repeat(np.asarray(x)[None], V, axis=0) for x in inputs]
        outs = ev.run(args)
    moved = [[int(_moved(_variant(o, 1 + i), o[0]).sum()) for o in outs] for i in range(n)]
    sizes = [[_size3([o], 1 + i) for o in outs] for i in range(n)]
    # per op, per output: the largest share of its elements that changing one element of the
    # op's first run alone moved (W2's gradient h^T g moves in one row when one h element does)
    def widest(o: np.ndarray, i: int) -> float:
        most = max(int(_moved(_variant(o, w), o[0]).sum())
                   for w in range(1 + n + i * k, 1 + n + (i + 1) * k))
        return float(f"{most / max(o[0].size, 1):.3g}")

    spread = [[widest(o, i) for o in outs] for i in range(n)]
    return {"status": "ok", "activations": moved, "activation_sizes": sizes,
            "activation_spread": spread, "work": ev.work}


def _charged(meter: dict) -> int:
    """What an entry's evaluator runs took together (`meter["runs"]`: each one, appended as
    it starts, so a run that ended in an exception is counted too)."""
    return sum(ev.work for ev in meter.get("runs", ()))


def _budget(entry: dict) -> int:
    """The run's own budget: what the parent gave it (a multiple of what the problem's
    reference took on the same run, jaxjudge.grading.reference_work), never above TOTAL_WORK,
    which bounds the trusted side's time; MAX_WORK when none came. No constant per run: an
    honest program that spells the step in many small ops (a loop over channels inside the
    loop over time) may need more than any fixed figure on a large test."""
    given = entry.get("max_work")
    if isinstance(given, int) and not isinstance(given, bool) and given > 0:
        return min(given, TOTAL_WORK)
    return MAX_WORK


MAX_ENTRIES = 64  # runs per grade (the parent fails any entry left without a result)
# All of a grade's runs together (~15 s of CPU at the evaluator's costliest, many small ops),
# so the trusted side stays bounded in time whatever the per-run budgets add up to. The
# costliest honest sample takes ~480 M with nothing skipped (ema's
# accepted_three_precompute_loops_then_scan: four loops of T steps, each a trajectory candidate
# on every test), blockwise attention's accepted_map_queries_scan 259 M. A run that
# meets it fails closed like one over its own budget (status over_budget, `work` below its
# budget says which): draining it gains a junk loop nothing, since nothing is skipped.
TOTAL_WORK = 12 * MAX_WORK


def observe_all(job: dict, specs: dict, programs: dict, texts: dict, exported: dict, leaves_of,
                ir, context, value_tree) -> dict:
    """Run each of stage B's `observe` entries (execute.py calls this with its verified
    programs and `value_tree`, which builds a test's inputs): what the program does, step by
    step, on one test's inputs and their variants (`leaves_of`: a value tree's leaves, in the
    programs' flattening order). An entry that cannot be observed says why;
    an error here is ours and is reported, never fatal to the grade."""
    from jaxlib.mlir.dialects import stablehlo as hlo

    tests = {t["name"]: t for t in job["tests"]}
    out: dict[str, dict] = {}
    picks: dict[str, dict] = {}
    known: dict = {}  # what one trajectory run found for the next of the same program
    spent = 0
    for entry in job["observe"][:MAX_ENTRIES]:
        picked = _pick(entry, texts)
        if picked is not None:
            entry = {**entry, **picked}
            picks[str(entry["id"])] = picked
        oid, pid = str(entry["id"]), entry["program"]
        # this run's own budget, within what the grade's runs have left together
        allowed = min(_budget(entry), TOTAL_WORK - spent)
        test = tests.get(entry["test"])
        if pid not in texts or test is None:
            out[oid] = {"status": "unobservable", "reason": "no such program or test"}
            continue
        meter: dict[str, Any] = {}
        if allowed <= 0:
            out[oid] = {"status": "over_budget", "reason": "the grade's total is spent",
                        "work": 0}
            continue
        try:
            leaves = leaves_of(
                value_tree(test["inputs"], specs[test["signature"]], np))
            kept = sorted(int(i) for i in exported[pid].module_kept_var_idx)
            if entry.get("kind") == "activation":
                # the verified text itself, symbolic or not: specialising it would also merge
                # duplicate ops (CSE), a recomputed activation among them
                out[oid] = observe_activations(
                    texts[pid], [leaves[i] for i in kept], f"stablehlo.{entry['op']}", ir, hlo,
                    context, max_work=allowed, meter=meter)
                spent += _charged(meter)
                continue
            if entry.get("kind") == "trajectory":  # the loop stopped after each step
                out[oid] = trajectory(texts[pid], [leaves[i] for i in kept],
                                      int(entry["count"]), _ev, ir, hlo, context, allowed, meter,
                                      entry.get("at"), known, entry.get("kick_at"),
                                      tuple(entry.get("kick_signs") or (1, -1)),
                                      int(entry.get("kick_seed") or 0),
                                      _restart(entry.get("restart"), programs[pid]))
                spent += _charged(meter)
                continue
            names = programs[pid]["args"]
            index = {name: i for i, name in enumerate(names)}
            groups = []
            for g in entry["groups"]:
                if g["path"] not in index:
                    if entry.get("dim"):
                        # a run asking whether a loop walks `dim` one index at a time: no loop
                        # walks an input the program never reads (jax dropped it from the
                        # verified program), so that input's indices have nothing to show
                        continue
                    raise Unobservable(f"the program does not read {g['path']}")
                groups.append({"arg": index[g["path"]], "axis": int(g["axis"]),
                               "size": int(g["size"]), "count": int(entry["count"])})
            if entry.get("dim") and not groups:
                out[oid] = {"status": "ok", "work": 0}  # reads none of them: nothing to walk
                continue
            watched = ([index[path] for path in entry["watch"] if path in index]
                       if entry.get("watch") else list(range(len(kept))))
            out[oid] = observe(texts[pid], [leaves[i] for i in kept], groups,
                               int(entry["inject"]), ir, hlo, context, watched,
                               bool(entry.get("own")), allowed,
                               knockouts=bool(entry.get("sliced")), meter=meter)
        except Unobservable as exc:
            out[oid] = {"status": "unobservable", "reason": str(exc)[:500]}
        except RecordsFull as exc:  # its requirement fails closed, saying so
            out[oid] = {"status": "over_records", "reason": str(exc)[:500]}
        except OverBudget as exc:  # its requirement fails, with the reference's figure
            out[oid] = {"status": "over_budget", "reason": str(exc)[:500], "work": allowed}
        except Exception as exc:  # our evaluator's bug: logged by the parent; the requirement
            # fails as unobserved (no input may make the grader fail instead)
            out[oid] = {"status": "error", "reason": f"{type(exc).__name__}: {exc}"[:500]}
        # what the run did, however it ended (an activation run counted above)
        spent += _charged(meter)
    for oid, picked in picks.items():  # every path above, `continue` included
        if oid in out:
            out[oid].update(picked_program=picked["program"], picked_test=picked["test"])
    return out


def _restart(asked, program: dict) -> tuple[int, int, bool] | None:
    """A trajectory entry's restart (input and output names) as positions among the
    program's kept inputs and its outputs, and whether the input's scale is free; an input
    the program does not read, or a missing output, cannot be restarted from (Unobservable:
    its requirement fails closed)."""
    if not isinstance(asked, dict):
        return None
    args, outs = list(program.get("args") or ()), list(program.get("outs") or ())
    if asked.get("input") not in args or asked.get("output") not in outs:
        raise Unobservable(f"the program cannot be started from its output "
                           f"{asked.get('output')!r} as its input {asked.get('input')!r} "
                           f"(it does not read that input, or has no such output)")
    return (args.index(asked["input"]), outs.index(asked["output"]),
            bool(asked.get("any_scale")))


def _pick(entry: dict, texts: dict) -> dict | None:
    """For an entry that offers `candidates` (program, test): the one a hash of the verified
    program texts (no source locations) and the entry's salt picks. The same programs get the
    same pick however the submission's file is named or laid out; a learner cannot choose it
    without changing the program itself."""
    candidates = entry.get("candidates")
    if not candidates:
        return None
    h = hashlib.sha256(str(entry.get("salt", "")).encode())
    for pid in sorted({c["program"] for c in candidates}):
        h.update(pid.encode() + b"\0" + texts.get(pid, "").encode("utf-8", "replace"))
    return dict(candidates[int.from_bytes(h.digest()[:8], "big") % len(candidates)])
