"""Stage B's evaluator, variants that follow another's decisions (`Evaluator.shadow`).

A kicked variant (observe_trajectory.py) runs beside an unkicked twin and takes every decision
of it: every integer or boolean result (a comparison, a branch index, a loop condition, a
gather index, a float rounded to an integer), every step function (floor, sign) and the choice
of every max, min, abs, clamp, max-reduction, sort and argmax. It then runs the twin's program
path on its own numbers, so no test in the program can tell that a kick happened: what the kick
shows is how the steps the real run executes respond to it (a derivative along that path, at a
finite size), not what a program that saw it chose to do instead.

Installed onto evaluator.Evaluator by `install` (run by path, never imported), like
evaluator_loops.py; `op`, `op_clamp` and evaluator_regions' reductions call these when
`shadow` is set.
"""

from __future__ import annotations

import numpy as np

# Float ops whose result is a step function of their input (derivative zero): a variant that
# follows another's decisions takes that one's result of them.
_STEPS = frozenset({"floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign"})
_CARRIES_DECIDED: frozenset[str] = frozenset()  # set by install() from evaluator.py's _MOVES


def install(evaluator_cls, names: dict) -> None:
    """Attach the following methods; `names` is evaluator.py's namespace. Ops whose integer
    results are decided elsewhere: moves of values (not a float's conversion to an integer,
    which rounds), a float's bits, a select, and the ops whose results their regions' ops
    computed."""
    global _CARRIES_DECIDED
    _CARRIES_DECIDED = (names["_MOVES"] - {"stablehlo.convert"}) | frozenset(
        {f"stablehlo.{n}" for n in ("bitcast_convert", "select", "while", "case", "if")}
        | {"func.call"})
    for name in ("_shadowed", "_followed", "_choose", "sub_shadow", "_followed_extreme"):
        setattr(evaluator_cls, name, globals()[name])


def _shadowed(self, x: np.ndarray, name: str) -> np.ndarray:
    """x with each variant's decisions taken from the variant it follows (`shadow`). An op
    that only moves integers (a float's bits, a slice, a select by a decided predicate, a
    loop's or branch's results) decides nothing itself: what computed them did, and followed
    then."""
    short = name.partition(".")[2]
    if (x.dtype.kind in "fc" and short not in _STEPS) or name in _CARRIES_DECIDED:
        return x
    if x.ndim == 0 or x.shape[0] != self.V:
        return x
    return x[self.shadow]


def _followed(self, mask: np.ndarray) -> np.ndarray:
    """A boolean choice per element, each variant's taken from the one it follows."""
    if self.shadow is None:
        return mask
    mask = np.broadcast_to(mask, (self.V, *mask.shape[1:]))
    return mask[self.shadow]


def _choose(self, a: np.ndarray, b: np.ndarray, larger: bool) -> np.ndarray:
    """max(a, b) (or min) whose choice is the followed variant's (NaN wins, as XLA's)."""
    with np.errstate(all="ignore"):
        pick = (a >= b) if larger else (a <= b)
        pick = pick | np.isnan(a)
    return np.where(self._followed(pick), a, b)


def sub_shadow(self, rows: int) -> np.ndarray | None:
    """`shadow` for a scalar program run on `rows` variant-major rows (a folded reduction, a
    sort's comparator): a row follows the same row of the followed variant."""
    if self.shadow is None:
        return None
    per = rows // self.V
    r = np.arange(rows)
    return self.shadow[r // per] * per + r % per


def _followed_extreme(self, x: np.ndarray, dims: tuple[int, ...], larger: bool) -> np.ndarray:
    """A max (or min) reduction whose every variant takes the element at the place its
    followed variant's extreme is: the choice is that variant's."""
    moved = np.moveaxis(x, dims, tuple(range(x.ndim - len(dims), x.ndim)))
    flat = moved.reshape(*moved.shape[:x.ndim - len(dims)], -1)
    base = flat[self.shadow]
    at = (np.argmax if larger else np.argmin)(base, axis=-1)
    return np.take_along_axis(flat, at[..., None], axis=-1)[..., 0]
