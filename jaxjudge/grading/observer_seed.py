"""The seed of the observer's kicks: a secret of this installation, never of the code.

Stage B's trajectory runs kick what a loop carries along a direction drawn from a seed and the
value's size (stages/evaluator_loops.py's `kick`), and compare how the steps after it answer
with the reference's answer to the same kick. A seed in the source would let a submission be
written against the one direction it will ever see (a carried value that moves the answer only
along it); a seed kept in the parent's private state directory (statefile: mode 0600, in a
folder nobody else can write, never shown to a sandbox) is one a submitter cannot read. The
reference's answers are kept per seed (reference_work.state_key), so a new seed only costs one
reference grade.

Several grader processes share the state directory: the first one to need the seed writes it
under the file's lock, and every other one reads that one. Where the folder cannot be written,
the process draws its own seed (still secret; its reference figures then live in memory only).
"""

from __future__ import annotations

import functools
import secrets

from jaxjudge.isolation import statefile

SEED_BITS = 62  # an int the job's JSON and numpy's seeding take as is
_FILE = "observer-seed.json"


def _valid(data: object) -> int | None:
    seed = data.get("seed") if isinstance(data, dict) else None
    if type(seed) is int and 0 < seed < 1 << SEED_BITS:
        return seed
    return None


@functools.cache
def observer_seed() -> int:
    """This installation's kick seed (created on first use, then read back)."""
    path = statefile.state_dir() / _FILE
    seed = _valid(statefile.read(path))
    if seed is not None:
        return seed
    drawn = secrets.randbits(SEED_BITS) | 1

    def keep(current: object) -> dict[str, int] | None:
        return None if _valid(current) is not None else {"seed": drawn}

    statefile.update(path, keep)
    return _valid(statefile.read(path)) or drawn


__all__ = ["observer_seed"]
