"""Stage B's per-index ops (TRUSTED code, untrusted data): code JAX traced once per index.

Loaded by path from observe.py: stdlib and numpy only.
"""

from typing import Any

import numpy as np

OWNED_SHARE = 1e-3  # of a result's size: less movement than this is not the index's own


class Owners:
    """Which group variants moved each computing op's result (any op but those that only move
    values, evaluator._MOVES; any run of it) by more than OWNED_SHARE of its size: code
    written once per index has ops that move with their own index only, and a copy made to
    depend a little on every index (plus 1e-6 of a sum) still computes with its own index
    only. A batched op moves with every index."""

    def __init__(self, ev: Any) -> None:
        self.ev = ev
        self.moved: dict[Any, np.ndarray] = {}
        self.looped: set[Any] = set()  # ops run inside a loop's body

    def __call__(self, op, x: np.ndarray) -> None:
        seen = self.moved.get(op)
        if seen is not None and seen.all():
            return  # moved with every group already: a loop body's op, run once per step
        g = self.ev.groups
        self.ev._spend(x.size)
        if self.ev.depth:
            self.looped.add(op)
        new, base = x[1: 1 + g], x[0:1]
        if x.dtype.kind not in "fc":
            big = new != base
        else:
            with np.errstate(invalid="ignore", over="ignore"):
                big = np.abs(new - base) > OWNED_SHARE * np.maximum(np.abs(new), np.abs(base))
                big |= np.isnan(new) != np.isnan(base)
        moved = big.reshape(g, -1).any(axis=1)
        self.moved[op] = moved if seen is None else seen | moved

    def chunks(self) -> int:
        """How many disjoint sets of two indices or more (up to half of them) have ops of
        their own outside loops: code written once per pair of examples (a Python loop over
        the batch two at a time, vmapped within each pair) moves with its pair only. Sets
        that share an index are not counted: an honest logsumexp has ops that move with one
        coordinate and the one at the maximum, a pair for each coordinate."""
        g = self.ev.groups
        sets: dict[bytes, int] = {}
        for op, moved in self.moved.items():
            if op not in self.looped and 2 <= int(moved.sum()) <= g // 2:
                key = np.packbits(moved).tobytes()
                sets[key] = sets.get(key, 0) + 1
        taken = np.zeros(g, dtype=bool)
        count = 0
        for key in sorted(sets, key=lambda k: -sets[k]):  # the sets most ops move with first
            mask = np.unpackbits(np.frombuffer(key, dtype=np.uint8))[:g].astype(bool)
            if not (mask & taken).any():
                taken |= mask
                count += 1
        return count

    def private(self, looped: bool = False) -> list[int]:
        """Per group: the ops whose result moved with that group only (with `looped`, those
        of them run inside a loop's body: a scan with unroll=3 writes its body three times
        in one, each copy run with one index when the loop makes a single trip)."""
        out = [0] * self.ev.groups
        for op, moved in self.moved.items():
            if int(moved.sum()) == 1 and (not looped or op in self.looped):
                out[int(np.argmax(moved))] += 1
        return out
