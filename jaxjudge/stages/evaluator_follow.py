"""Stage B's evaluator, variants that follow another's decisions (`Evaluator.shadow`).

A kicked variant (observe_trajectory.py) runs beside an unkicked twin and takes every decision
of it: every boolean result (a comparison, a loop's condition, a select's or a cond's
predicate, a flag), and every integer where it steers the program (a branch index; the start
indices of a dynamic slice, an update, a gather or a scatter; a size). It then runs the twin's
program path on its own numbers, so no test in the program can tell that a kick happened: what
the kick shows is how the steps the real run executes respond to it, not what a program that
saw it chose to do instead. Numbers are the variant's own, integers it computes and carries
too (a fixed-point or bit-packed state follows the kick), and so are floats that a program
could use as a gate (tanh of a huge multiple, a rounding): a float is never a decision here,
so those stay the open class of a float gate (docs/architecture.md).

Installed onto evaluator.Evaluator by `install` (run by path, never imported), like
evaluator_loops.py; `Evaluator.ops` calls `_control` on an op's operands and `_shadowed` on
its results when `shadow` is set.
"""

from __future__ import annotations

import numpy as np

# op name -> the operands from which it reads integers that steer it (the rest are values)
_STEERING = {
    "stablehlo.case": slice(0, 1),
    "stablehlo.dynamic_slice": slice(1, None),
    "stablehlo.real_dynamic_slice": slice(1, None),
    "stablehlo.dynamic_update_slice": slice(2, None),
    "stablehlo.gather": slice(1, 2),
    "stablehlo.dynamic_gather": slice(1, None),
    "stablehlo.scatter": slice(1, 2),
    "stablehlo.dynamic_reshape": slice(1, None),
    "stablehlo.dynamic_broadcast_in_dim": slice(1, None),
    "stablehlo.dynamic_iota": slice(0, None),
    "stablehlo.dynamic_pad": slice(2, None),
}
_MOVES_BOOLS: frozenset[str] = frozenset()  # set by install() from evaluator.py's _MOVES


def install(evaluator_cls, names: dict) -> None:
    """Attach the following methods; `names` is evaluator.py's namespace. Ops whose boolean
    results are decided elsewhere need no following of their own: moves of values (not a
    conversion, which decides `x != 0`), a select, and the ops whose results their regions'
    ops computed."""
    global _MOVES_BOOLS
    _MOVES_BOOLS = (names["_MOVES"] - {"stablehlo.convert"}) | frozenset(
        {f"stablehlo.{n}" for n in ("select", "while", "case", "if")} | {"func.call"})
    for name in ("_shadowed", "_control", "sub_shadow"):
        setattr(evaluator_cls, name, globals()[name])


def _follow(self, x: np.ndarray) -> np.ndarray:
    if x.ndim == 0 or x.shape[0] != self.V:
        return x
    return x[self.shadow]


def _shadowed(self, x: np.ndarray, name: str) -> np.ndarray:
    """A result with each variant's booleans taken from the variant it follows."""
    if x.dtype != np.bool_ or name in _MOVES_BOOLS:
        return x
    return _follow(self, x)


def _control(self, name: str, ins: list[np.ndarray]) -> list[np.ndarray]:
    """An op's operands with the integers that steer it taken from the followed variant."""
    where = _STEERING.get(name)
    if where is None:
        return ins
    out = list(ins)
    for i in range(len(ins))[where]:
        if out[i].dtype.kind in "iub":
            out[i] = _follow(self, out[i])
    return out


def sub_shadow(self, rows: int) -> np.ndarray | None:
    """`shadow` for a scalar program run on `rows` variant-major rows (a folded reduction, a
    sort's comparator): a row follows the same row of the followed variant."""
    if self.shadow is None:
        return None
    per = rows // self.V
    r = np.arange(rows)
    return self.shadow[r // per] * per + r % per
