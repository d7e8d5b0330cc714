"""no_loop_over_dim and independent_of_dim from what stage B saw: a loop that takes the
indices along a dimension up one (or a few) at a time, and code JAX traced once per index.
The runs are stage B's (jaxjudge.stages.observe), schema-checked by the parent."""

from __future__ import annotations

from jaxjudge.analysis.observed import Observation, Slot, unseen

# Indices taken up at different steps before a loop counts as visiting them one at a time.
# Two are not told from an online softmax over 3 keys with 2 heads, whose running maximum of
# each head moves at one step only, a different one for each (batched attention's hidden-29).
MIN_VISITS = 3


def visited(observations: tuple[Observation, ...], dim: str) -> str | None:
    """None unless an observed loop took the indices along `dim` up one per step: in some value
    it carries, several indices each changed the update of exactly one step, a different one
    for each (one example, row or head at a time, however the program picked them)."""
    for obs in observations:
        if obs.dim != dim:
            continue
        if (why := unseen(obs)) is not None:
            return why
        for run in obs.loops:
            if run.steps < 2:
                continue
            # an index folded in over two steps (half at each), or beside a sum of every index
            # added at step 0 and taken off at the end: where it entered again (the whole run)
            entered = {g: s for g, s in enumerate(run.enters) if s is not None}
            taken_up = {g for g, good in enumerate(run.for_good) if good}
            for own in [*map(_once, run.slots), {}]:  # {}: the re-entries alone (no slot too)
                once = {g: s for g, s in {**entered, **own}.items() if g not in taken_up}
                steps = sorted(set(once.values()))
                if len(steps) < MIN_VISITS:
                    continue
                what = f" of {obs.watched}" if obs.watched else ""
                first_at = {s: g for g, s in sorted(once.items(), reverse=True)}
                shown = ", ".join(f"{dim} index {g} at step {s + 1}" for s, g in
                                  sorted(first_at.items())[:4])
                return (f"When your program ran on test {obs.test!r}, a loop of {run.steps} "
                        f"steps took the indices along {dim}{what} up one at a time, at "
                        f"{len(steps)} different steps ({shown}): it visits {dim} one slice "
                        f"at a time, however the slice is picked (a gather, a permutation, a "
                        f"one-hot product, a padded copy)")
        if (why := _per_index(obs, dim, unrolled=False)) is not None:
            return why
    return None


def _once(slot: Slot) -> dict[int, int]:
    """Per index: the one step at which it changed this value's update, or at which every
    element it alone moves was updated (beside others every index moves: a smeared sum)."""
    once = {g: s for g, (s, n) in enumerate(zip(slot.first, slot.touches, strict=True))
            if s is not None and n == 1}
    once.update((g, s) for g, s in enumerate(slot.single) if s is not None and g not in once)
    return once


def written_per_index(observations: tuple[Observation, ...], dim: str) -> str | None:
    """None unless an observed run shows arithmetic written once per index along `dim` (code
    JAX traced once per index: its ops each move with one index alone). A rolled loop over
    `dim` runs the same ops for every index, so it is not seen here."""
    for obs in observations:
        if obs.dim != dim:
            continue
        if (why := unseen(obs)) is not None:
            return why
        if (why := _per_index(obs, dim)) is not None:
            return why
    return None


# A scan over the indices with unroll=3 writes its body three times, and the steps the trip
# count leaves over (fewer than three) once each: at a size that makes one trip or none, each
# copy is run with one index alone, as code written per index is.
MAX_UNROLL = 3


def _unrolled_scan(obs: Observation) -> bool:
    """Whether the indices with ops of their own are what scans over all of them with unroll
    <= MAX_UNROLL write: per loop, up to MAX_UNROLL in its body and fewer left over outside
    it, at the start or the end (a reversed scan's); the copies cover every index with what
    is left over, or fewer than all copies show (the data left an op unmoved at some trips:
    a clipping scale of 1); or every index, up to MAX_UNROLL, and no loop at all (unroll as
    large as the trip count). A Python loop over the first three of more indices is not that,
    nor three copies in a loop of one trip beside two more in the middle of the indices."""
    every = len(obs.private)
    looped = {g for g, n in enumerate(obs.private_looped) if n}
    outside = {g for g, n in enumerate(obs.private) if n} - looped
    if not looped:
        return len(outside) == every <= MAX_UNROLL
    loops = max(1, len({run.index for run in obs.loops if run.depth == 0}))
    left = sorted(outside)
    remainder = not left or left == list(range(len(left))) or left == list(
        range(every - len(left), every))
    # up to MAX_UNROLL copies and fewer left over per loop, wherever the left-over steps' ops
    # land (JAX may run them before the loop and carry their results through it)
    most = (2 * MAX_UNROLL - 1) * loops
    return (len(looped | outside) <= most and len(outside) < MAX_UNROLL * loops
            and remainder
            and (len(looped | outside) == every or len(looped) < MAX_UNROLL * loops))


def _per_index(obs: Observation, dim: str, unrolled: bool = True) -> str | None:
    """Code written once per index (or per few); with `unrolled`, not what a scan unrolled
    up to MAX_UNROLL times writes (a requirement that allows a rolled loop over `dim`)."""
    own = [(g, n) for g, n in enumerate(obs.private) if n]
    if obs.chunks >= 3:
        return (f"When your program ran on test {obs.test!r}, its arithmetic was written "
                f"once per group of indices along {dim}: {obs.chunks} separate groups of "
                f"two or more indices each had ops that moved with that group alone, where "
                f"one batched op would move with every index: code run once per group while "
                f"JAX traced (a Python loop over the batch a few at a time)")
    if len(own) < 3 or (unrolled and _unrolled_scan(obs)):
        return None
    shown = ", ".join(f"{n} with index {g}" for g, n in own[:4])
    return (f"When your program ran on test {obs.test!r}, its arithmetic was written "
            f"once per index along {dim}: of the ops whose results moved when one "
            f"index's values changed, {sum(n for _, n in own)} moved with one index "
            f"alone ({shown}{', ...' if len(own) > 4 else ''}), where one batched op "
            f"would move with every index: code run once per index while JAX traced "
            f"(a Python loop, a list comprehension, a loop taken only at some sizes)")
