"""Stage B's knockout rows (TRUSTED code, untrusted data): which of a loop's results the
program's outputs need.

Loaded by path from observe.py: stdlib only.
"""


KNOCK_LOOPS = 3  # row sets: one each for the first two while ops to run the trip count, and
# one the later ones share (setting a part back in all of them at once)
KNOCK_PARTS = 4  # per op: the three carried values that moved most, one by one, the rest together
# per op: a row per part set back, and a row per single part (not the rest) kept alone
KNOCK_ROWS = 2 * KNOCK_PARTS - 1


class Knockouts:
    """Rows that say which of a loop's results the outputs need. Row (j, p) starts as the
    whole variant; at the end of every run of the j-th while op to run the trip count, its
    carried part p is set back to variant 0's value. Where the outputs then differ from the
    whole variant's is what that part carried to them: a value the loop fills with every
    input (a sum of all rows added to every row) to look as if it carried their work, and
    that reaches the outputs only times 1e-30, is needed by none of them. Parts are fixed at
    an op's first run, by how many values moved with the groups: such a filler moves most, so
    it is a part of its own, however many idle values come before it. Row (j, keep p) sets
    back every part but p: when the outputs are then the whole variant's, part p alone
    carries what the loop gives them (two fillers that cancel exactly, each needed when set
    back alone, are set back together there)."""

    def __init__(self, base: int, count: int) -> None:
        self.base, self.count = base, count
        self.ops: dict[int, int] = {}  # while op index -> j
        self.parts: dict[int, dict[int, int]] = {}  # while op index -> carried index -> part

    def first_row(self, index: int, steps: int) -> int | None:
        """The op's row for part 0 (None: the run is not of the trip count)."""
        if steps != self.count:
            return None
        if index not in self.ops:
            self.ops[index] = min(len(self.ops), KNOCK_LOOPS - 1)
        return self.base + self.ops[index] * KNOCK_ROWS

    def parts_of(self, index: int, moved: dict[int, int]) -> dict[int, int]:
        """The op's parts: per carried index (`moved`: how many of its values moved with the
        groups), the three that moved most alone, in that order, the others as the last."""
        if index not in self.parts:
            ranked = sorted(moved, key=lambda i: (-moved[i], i))
            self.parts[index] = {i: min(r, KNOCK_PARTS - 1) for r, i in enumerate(ranked)}
        return self.parts[index]
