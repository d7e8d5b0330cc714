"""What the program was seen doing when stage B ran it (jaxjudge/stages/observe.py), and the
loop requirements decided from it.

The text analyses (jaxjudge.analysis.loops, stepslices, stepgates) prove a loop's work from the
program's dataflow; a copy made by a gather, a permutation or complex numbers, or a gate that
mixes the counter with a data zero, can walk around a pattern. Stage B's observer ran the
program on one test's inputs in variants: one with a slice ("group") of the sliced inputs
changed, one with the inputs a loop passes along changed at one step only. Where the numbers
moved is dependence as executed, whatever spelled it. A `loop_over_dim` requirement holds only
if the text analysis and, when the run could be observed, the run agree:

- the run could be observed at all: an op the evaluator does not run, or more work than the
  budget, fails the requirement (a submission must not be able to switch the evidence off);
- every step's work is kept: changing what step s reads changes the loop's state at the end
  of step s, for every step but the first (which may only set the starting value);
- each step takes up one share of the sliced inputs: in no carried value is step s the first
  whose update differs with several groups (one step may take up two: the starting value
  and the first step's; a value only passed along, even one that moved before the loop, is
  updated by no step);
- nothing mixes the sliced inputs outside the loop: each value entering the loop moves with a
  group at most as much as two copies of it, and the outputs move with a group no more than
  the loop's results do (plus a share read directly).

Stage B is trusted code; its observation is schema-checked and bounded
(jaxjudge.grading.stage_results) before it becomes this data.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from jaxjudge.analysis.trajectory import Trajectory

# One value entering a loop may hold a group twice (x and x[0] stacked, a padded copy); a
# mixture of many groups is work done before the loop.
ENTRY_COPIES = 2
# The outputs may read a group directly beside the loop (x[0] joined to the loop's rows).
DIRECT_COPIES = 2
# A loop result the outputs need: setting it back at the end (observe.Knockouts) moves them by
# this much of their size or more. An honest result moves them wholly; a value kept only to
# look as if it carried every input's work, and added to the outputs times a tiny weight,
# moves them by that weight (a weight this large would put them outside the tolerance).
NEEDED = 1e-3
# A part alone gives the outputs what the loop does when, with every other part set back,
# they are this close to the whole variant's (rounding of a sum taken in another order).
ALONE = 1e-6
# On a second test, how many steps after its own a share may first show (_one_share_per_step).
LATE = 2


@dataclass(frozen=True)
class Slot:
    """One value a loop run carries and updates (not one it only passes along)."""

    first: tuple[int | None, ...]  # per group: the first step whose update of it differed
    touches: tuple[int, ...]  # per group: how many steps' updates of it differed
    kept: tuple[bool | None, ...]  # per step: did changing what the step read change it
    # (None: unknown, the variant had already moved)
    live: bool  # it moves with the watched inputs at the end: it carries their work
    # per group: the step at which every element it alone moved was updated, once (a value
    # that also carries a sum of every input, moving with all of them at every step)
    single: tuple[int | None, ...] = ()
    part: int | None = None  # its knockout part (LoopRun.needed), if it has one


@dataclass(frozen=True)
class LoopRun:
    """One run of one `stablehlo.while` (every run of a nested loop is its own)."""

    index: int  # the while op's place in the program text (Op.index)
    depth: int  # loops around it
    steps: int
    entry: tuple[int, ...]  # per group: elements of the loop's inputs that moved
    entry_max: tuple[int, ...]  # per group: the most elements that moved in one input
    exit: tuple[int, ...]  # per group: elements of the loop's state that moved at the end
    work: tuple[int, ...]  # per step: multiply-adds, reduced elements and elementwise
    # products and sums executed
    slots: tuple[Slot, ...] = ()
    # per injected step: did changing what it read move the program's outputs (None: unknown)
    reached: tuple[bool | None, ...] = ()
    # `exit` per knockout part: the first carried values one by one, the rest together
    exit_parts: tuple[tuple[int, ...], ...] = ()
    # per knockout part: how far setting it back to the unchanged inputs' value at the end
    # moved the outputs, relative to their size (None: unknown)
    needed: tuple[float | None, ...] = ()
    # per single part: how far the outputs were from the whole variant's with only it kept
    alone: tuple[float | None, ...] = ()
    # per group: the step its change entered the update again after a step without it, or
    # entered (at a step not every group's did) and then left while another's was in
    enters: tuple[int | None, ...] = ()
    # per group: in the update from a step after the first to the end, as a loop over another
    # dimension masked by data takes it up (its single steps are not visits)
    for_good: tuple[bool, ...] = ()

    def exits(self, groups: int) -> list[int]:
        """Per group: the elements of the loop's results that moved with it, in the parts the
        outputs need (setting one back moves them by NEEDED of their size or more; a part
        not measured counts)."""
        if not self.exit_parts:
            return [self.exit[g] if g < len(self.exit) else 0 for g in range(groups)]
        p = self.enough()
        if p is not None:
            part = self.exit_parts[p] if p >= 0 else ()
            return [part[g] if g < len(part) else 0 for g in range(groups)]
        return [sum(part[g] for p, part in enumerate(self.exit_parts)
                    if g < len(part) and self.part_needed(p)) for g in range(groups)]

    def part_needed(self, p: int, unmeasured: bool = True) -> bool:
        """Did setting knockout part p back move the outputs by NEEDED of their size or more?
        A part this run did not measure counts as `unmeasured` says."""
        if p >= len(self.needed) or self.needed[p] is None:
            return unmeasured
        return self.needed[p] >= NEEDED

    def enough(self) -> int | None:
        """The part that alone gives the outputs what the loop gives them (with every other
        part set back they are the whole variant's), the largest if several: all they take
        from the loop. Two fillers that cancel exactly are each needed when set back alone,
        and kept out together here. When only parts the outputs do not need are enough, they
        take nothing from the loop (a softmax shifted by stacked maxima): -1. None: no part
        is enough alone (the outputs need several: acc / l)."""
        enough = [p for p, a in enumerate(self.alone) if a is not None and a <= ALONE
                  and p < len(self.exit_parts)]
        if not enough:
            return None
        used = [p for p in enough if self.part_needed(p, unmeasured=False)]
        return max(used, key=lambda p: sum(self.exit_parts[p]), default=-1)

    def needs(self, slot: Slot) -> bool:
        """Do the outputs need this carried value (its knockout part moved them by NEEDED of
        their size or more, or was not measured)? A compensated sum's rounding residue, which
        the loop drops at its end, is needed by none of them."""
        return slot.part is None or self.part_needed(slot.part)

    def kept(self, s: int, every: bool = False) -> bool | None:
        """Did a value that carries the inputs' work (with `every`: each of them) keep step
        s's change (None: unknown)."""
        known = [sl.kept[s] for sl in self.slots if sl.live and s < len(sl.kept)
                 and (not every or True in sl.kept)]  # with every: values that ever worked
        if every:
            if any(k is False for k in known):
                return False
            return True if any(k is True for k in known) else None
        if any(k is True for k in known):
            return True
        return False if any(k is False for k in known) else None


@dataclass(frozen=True)
class Observation:
    """One observed run of one program, for one loop requirement's trip count and groups."""

    count: int  # the trip count the variants were made for
    sliced: tuple[str, ...]  # the input paths one group of which each group variant changed
    dim: str = ""  # no_loop_over_dim: the dimension one index of which each group changed
    watched: str = ""  # no_loop_over_dim: the input whose indices the groups changed
    test: str = ""  # the test whose inputs ran
    # or "unobservable" (an op it does not evaluate), "over_budget" (past its own budget, a
    # multiple of the reference's work on the same run), "over_records" (more loop runs than
    # the observer records), "error" (ours): each fails its requirement
    status: str = "ok"
    reason: str = ""
    groups: int = 0
    group_elements: int = 0
    outputs: tuple[int, ...] = ()  # per group: output elements that moved
    loops: tuple[LoopRun, ...] = field(default_factory=tuple)
    kind: str = "loop"  # or "activation": each op of the activation changed in a variant
    activations: tuple[tuple[int, ...], ...] = ()  # per activation op: per output, moved
    # per activation op: per output, how far it moved (relative to its size)
    activation_sizes: tuple[tuple[float, ...], ...] = ()
    # per activation op: per output, the largest share of its elements one of its elements
    # moved, changed alone at the op's first run
    activation_spread: tuple[tuple[float, ...], ...] = ()
    # no_loop_over_dim: per index, the computing ops whose result moved with it alone, and
    # of them the ones run inside a loop's body
    private: tuple[int, ...] = ()
    private_looped: tuple[int, ...] = ()
    chunks: int = 0  # disjoint sets of 2+ indices (up to half) with ops of their own
    # The requirement's first run (the most steps); the others, one per program the tests run,
    # may be on a test whose data moves nothing (u = 0 in a power iteration): a run in which no
    # step kept anything says nothing there.
    primary: bool = True
    # a second test of its signature (observing._second_tests): read only for what holds on
    # any data (work per step, shares per step, undo sizes), not for what steps keep
    second: bool = False
    # kind "trajectory": the program's loops stopped step by step, the reference's the same
    # way on the same test (None: it has none), and the problem's (rtol, atol)
    trajectory: tuple[Trajectory, ...] = ()
    reference: Trajectory | None = None
    tolerance: tuple[float, float] = (0.0, 0.0)
    unfinished: bool = False  # its budget ran out before every candidate loop was followed
    # its loops were kicked between steps: how they answer a change of what they carry counts
    response: bool = False
    # and started again from each kicked state as the program's own output reads it
    restart: bool = False


def _ranges(steps: list[int]) -> str:
    """[1, 2, 3, 5] -> "2–4 and 6" (1-based, as a learner counts steps)."""
    parts: list[str] = []
    i = 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        a, b = steps[i] + 1, steps[j] + 1
        parts.append(f"{a}" if a == b else f"{a}–{b}")
        i = j + 1
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _steps(steps: list[int]) -> str:
    """"step 8" or "steps 2–4 and 6" (1-based)."""
    return f"step{'s' if len(steps) > 1 else ''} {_ranges(steps)}"


def _work_note(runs: list[LoopRun], idle: list[int]) -> str:
    """What the idle and the working steps executed (multiply-adds and reduced elements)."""
    run = runs[0]
    busy = [s for s in range(run.steps) if s not in idle]
    if not run.work or not busy:
        return ""
    idle_work = sorted({run.work[s] for s in idle if s < len(run.work)})
    busy_work = sorted({run.work[s] for s in busy if s < len(run.work)})
    if not busy_work or not idle_work:
        return ""
    plural = "s" if len(idle) > 1 else ""
    if idle_work == [0]:
        return (f" (step{plural} {_ranges(idle)} executed 0 arithmetic operations; step"
                f"{'s' if len(busy) > 1 else ''} {_ranges(busy)} executed "
                f"{'/'.join(map(str, busy_work[:3]))})")
    return (f" (step{plural} {_ranges(idle)} executed {'/'.join(map(str, idle_work[:3]))} "
            f"arithmetic operations each, and none of it reaches what the loop carries)")


def _every_step(runs: list[LoopRun], count: int, every: bool,
                primary: bool = True) -> str | None:
    """The steps (but the first) whose work no run kept (read on the primary run only), then
    work crowded into one step (`_crowded_work`, on every run); with `every`, that some value
    carrying the inputs' work, and keeping it at some step, did not keep (a fixed-count
    iteration updates each such value from the inputs at every step: one that keeps changing
    beside one that stopped is a decoy; a matrix carried along unchanged never worked)."""
    if not primary:
        return _crowded_work(runs, count)
    known: dict[int, bool] = {}
    for run in runs:
        if not any(sl.live for sl in run.slots):  # nothing it carries moves with the inputs
            for s in range(min(count, run.steps)):
                known[s] = False
            continue
        for s in range(min(count, run.steps)):
            kept = run.kept(s, every)
            if kept is not None:
                known[s] = known.get(s, True) and kept
    idle = sorted(s for s in range(1, count) if known.get(s) is False)
    if not idle:
        return _unreached(runs, count) or _crowded_work(runs, count)
    return (f"{_steps(idle)} of its {count} change{'s' if len(idle) == 1 else ''} nothing the "
            f"loop carries when the inputs they read change: their work is thrown away (a "
            f"jnp.where, a zero factor or a flag keeps the value from the step before)"
            f"{_work_note(runs, idle)}")


def _unreached(runs: list[LoopRun], count: int) -> str | None:
    """The steps (but the first and the last) whose reads' change moved none of the program's
    outputs: what they kept went into a value the program drops (a tag beside the state), the
    work is done at other steps. A last update dropped is an off-by-one (recording the value
    before the step): a wrong answer, not work moved elsewhere."""
    for run in runs:
        lost = [s for s in range(1, min(count - 1, len(run.reached)))
                if run.reached[s] is False]
        if lost:
            return (f"{_steps(lost)} of its {count} change{'s' if len(lost) == 1 else ''} nothing "
                    f"your program returns when the inputs they read change: what they "
                    f"compute is dropped (kept "
                    f"only in a value the program does not return){_work_note(runs, lost)}")
    return None


def _step_work(run: LoopRun, count: int) -> tuple[list[int], int] | None:
    """The arithmetic each of the first `count` steps executed, and the median step's; None
    when fewer than three steps ran (no middle to measure against)."""
    work = list(run.work[:count])
    if len(work) < 3:
        return None
    return work, sorted(work)[len(work) // 2]


# One step may execute this many times the median step's arithmetic (a first or last step
# that also starts or finishes the work); more is several steps' work done at one.
CROWDED = 3


def _crowded_work(runs: list[LoopRun], count: int) -> str | None:
    """On a run that is not the requirement's first (a test whose data may keep nothing, such
    as a power iteration that has converged or starts from 0, so what steps keep is not read):
    no step executes more than CROWDED times the median step's arithmetic. Gates of any kind
    leave the executed work where it is: all of it at one step, under a branch, shows."""
    for run in runs:
        measured = _step_work(run, count)
        if measured is None or not any(measured[0]):
            continue
        work, median = measured
        top = max(range(len(work)), key=lambda s: work[s])
        if work[top] > CROWDED * median:
            return (f"step {top + 1} of its {count} executed {work[top]} arithmetic "
                    f"operations where the median step executed {median}: several steps' "
                    f"work is done at one step")
    return None


def _idle_steps(runs: list[LoopRun], count: int) -> str | None:
    """A loop that takes one share of the sliced inputs per step does one share's arithmetic
    at every step but the first: a step executing under half the median step's is idle while
    others do its share (two rows per step after idle ones, however the steps' shares are
    tagged). A ragged last share cannot pass for an idle step: sliced inputs are observed only
    at sizes the trip count divides (grading/observing._groups), where every share is whole."""
    for run in runs:
        measured = _step_work(run, count)
        if measured is None:
            continue
        work, median = measured
        idle = [s for s in range(1, len(work)) if 2 * work[s] < median]
        if median > 0 and idle:
            low = sorted({work[s] for s in idle})
            return (f"step{'s' if len(idle) > 1 else ''} {_ranges(idle)} of its {count} "
                    f"executed {'/'.join(map(str, low[:3]))} arithmetic operations where the "
                    f"median step executed {median}: each step must do one share's work")
    return None


def _fits_late(firsts: list[int], late: int) -> bool:
    """Can each share be given a step of its own at most `late` steps before the one it was
    first seen at (one step may hold two: the starting value and the first step's)? Earliest
    deadline first is optimal for such equal windows."""
    used: set[int] = set()
    bonus = True
    for s in sorted(firsts):
        free = next((t for t in range(max(s - late, 0), s + 1) if t not in used), None)
        if free is not None:
            used.add(free)
        elif bonus:
            bonus = False
        else:
            return False
    return True


def _one_share_per_step(runs: list[LoopRun], obs: Observation, names: str) -> str | None:
    """In every carried value, each group is first taken up at a step of its own (one step
    may take up two: the starting value and the first step's). Only values the outputs need
    are read: a compensated sum's rounding residue, dropped at the loop's end, can come out
    the same for several shares' steps in a row. On a second test (data no sample vouches
    for), a share may be first seen up to LATE steps after its own, no step taking up more
    than two: a block whose scores underflow moves nothing when it is folded and shows only
    when a later rescaling lifts it (blockwise attention with its first block folded before
    the loop reads [1, 1, 2, 3, 4, 7, None, 7] on a large-score test). Not on first tests:
    a loop that folds rows with a delay, three at every third step, fits that window. On a
    second test, the runs of a loop nested in another (a scan over key blocks per query) are
    read together, each share at the earliest step any run took it up: one query whose
    scores underflow shows its blocks only when the last rescaling lifts them."""
    if obs.second and len(runs) > 1:
        runs = [_earliest(runs)]
    for run in runs:
        for slot in filter(run.needs, run.slots):
            per_step: dict[int, list[int]] = defaultdict(list)
            for g, s in enumerate(slot.first[: obs.groups]):
                if s is not None:
                    per_step[s].append(g)
            crowded = {s: gs for s, gs in per_step.items() if len(gs) > 1}
            if obs.second and crowded and max(map(len, crowded.values())) <= 2 and _fits_late(
                    [s for s, gs in per_step.items() for _ in gs], LATE):
                continue
            if len(crowded) > 1 or any(len(gs) > 2 for gs in crowded.values()):
                s, gs = max(crowded.items(), key=lambda kv: len(kv[1]))
                return (f"step {s + 1} takes up {len(gs)} of the {obs.groups} shares of "
                        f"{names} at once (a value the loop carries is first updated with "
                        f"shares {_ranges(gs)} at that step): each step must read one step's "
                        f"share")
    return None


def _earliest(runs: list[LoopRun]) -> LoopRun:
    """The runs of one loop op as one: per carried value and share, the earliest step any
    run first took the share up at."""
    def first(k: int, g: int) -> int | None:
        seen = [r.slots[k].first[g] for r in runs
                if k < len(r.slots) and g < len(r.slots[k].first)]
        return min((s for s in seen if s is not None), default=None)

    base = runs[0]
    slots = tuple(replace(sl, first=tuple(first(k, g) for g in range(len(sl.first))))
                  for k, sl in enumerate(base.slots))
    return replace(base, slots=slots)


def _nothing_mixed_outside(runs: list[LoopRun], obs: Observation, names: str) -> str | None:
    """Before the loop, a group enters only as copies; after it, the outputs move with a group
    no more than the loop's results do. The groups the loop takes up first (at its earliest
    step, whichever end it starts from) may enter worked on: that is the first step's work
    begun early (the running maximum started at the first block's maximum, as blockwise
    attention's hint 3 offers; the last block's, for a loop run backwards), not several
    steps' work."""
    per_group = obs.group_elements
    if per_group <= 0:
        return None
    for run in runs:
        taken = [min((sl.first[g] for sl in run.slots if g < len(sl.first)
                      and sl.first[g] is not None), default=None)
                 for g in range(obs.groups)]
        known = [(g, s) for g, s in enumerate(taken) if s is not None]
        earliest = min((s for _, s in known), default=None)
        # the end the loop starts from, for a share no step was seen to take up (a block whose
        # scores underflow on this test's data): the first share, or the last one backwards
        edge = obs.groups - 1 if len(known) > 1 and known[0][1] > known[-1][1] else 0
        for g, moved in enumerate(run.entry_max[: obs.groups]):
            if g == edge or (earliest is not None and taken[g] == earliest):
                continue
            if moved > ENTRY_COPIES * per_group:
                return (f"before the loop starts, {moved} values of one array it receives "
                        f"move with share {g + 1} of {names} (a copy has {per_group}): they "
                        f"are computed from several steps' shares before the loop")
    exits = [sum(counts) for counts in zip(*(run.exits(obs.groups) for run in runs),
                                            strict=True)]
    # a direct copy is of one input's share (v's block into the output), not of k's and v's
    per_input = per_group // max(len(obs.sliced), 1)
    for g, moved in enumerate(obs.outputs[: obs.groups]):
        if moved > exits[g] + DIRECT_COPIES * per_input:
            every = sum(run.exit[g] for run in runs if g < len(run.exit))
            alone = any(run.enough() is not None for run in runs)
            unneeded = ("" if every <= exits[g] else
                        f" (of the {every} that do, the outputs need only {exits[g]}: " +
                        ("with every other value the loop carries set back at its end, they "
                         "are unchanged)" if alone else
                         f"setting the others back at the loop's end moves them by less than "
                         f"{NEEDED:g} of their size)"))
            return (f"after the loop, {moved} of your output values move with share {g + 1} of "
                    f"{names}, but only {exits[g]} of the loop's results do{unneeded}: the "
                    f"outputs are computed from the inputs outside the loop")
    return None


def judge_loop(obs: Observation, *, every_step: bool, sliced: bool,
               names: str) -> str | None:
    """None when some loop of the observed run that ran `obs.count` steps does what the
    requirement says; else why not (the first loop's reason), with what was measured."""
    every: dict[int, list[LoopRun]] = defaultdict(list)
    for run in obs.loops:
        every[run.index].append(run)
    # a loop whose every run took the trip count (a loop run once for 8 steps and then for 0
    # is not a loop of 8 steps)
    by_op = {i: runs for i, runs in every.items() if all(r.steps == obs.count for r in runs)}
    if not by_op:
        ran = sorted({run.steps for run in obs.loops})
        return (f"no loop ran {obs.count} steps when your program ran on test {obs.test!r}"
                + (f" (loops ran {', '.join(map(str, ran[:6]))} steps)" if ran else ""))
    reasons: list[str] = []
    for runs in by_op.values():
        why = (_every_step(runs, obs.count, every=not obs.groups,
                           primary=obs.primary or (sliced and bool(obs.groups)
                                                   and not obs.second))
               if every_step else None)
        if why is None and sliced and obs.groups:
            why = (_one_share_per_step(runs, obs, names) or _idle_steps(runs, obs.count)
                   or _nothing_mixed_outside(runs, obs, names))
        if why is None:
            return None
        reasons.append(why)
    return f"When your program ran on test {obs.test!r}, {reasons[0]}"


def matching(observations: tuple[Observation, ...], count: int,
             sliced: tuple[str, ...]) -> list[Observation]:
    """The observations made for this trip count and these sliced inputs (a program's first
    run, then the one on a second test of its signature)."""
    return [obs for obs in observations
            if obs.kind == "loop" and not obs.dim and obs.count == count
            and obs.sliced == sliced]


def unseen(obs: Observation) -> str | None:
    """Why a run that should have been observed was not, as a failure (None: it was). Every
    run fails closed: one over its budget (a multiple of the reference's work on the same
    run, the reason says how much) or past the loop runs the grader records is not skipped."""
    if obs.status == "ok":
        return None
    if obs.status == "over_budget":
        return (f"When your program ran on test {obs.test!r}, {obs.reason}, so the grader "
                f"stopped watching it before it could confirm the requirement: do the work "
                f"the statement asks, without extra loops around it")
    if obs.status == "over_records":
        return (f"When your program ran on test {obs.test!r}, it ran {obs.reason}, so what "
                f"ran after them could not be watched and the requirement is not confirmed: "
                f"run the loops the statement asks, not loops beside them")
    return (f"The grader could not run your program step by step on test {obs.test!r} "
            f"({obs.reason or 'an internal error'}), so it cannot confirm the requirement: use "
            f"the jax.numpy and jax.lax operations the statement needs")
